// -----------------------------------------------------------------------------
// File: ttft/attribution.h
// -----------------------------------------------------------------------------
//
// Counterfactual replay (issue 13; docs/attribution.md): how much of a p99 TTFT
// increase each cause explains.
//
// The incident window's own requests (arrival time, prompt, cached and output
// tokens, tenant, template, replica, region) are replayed through the engine
// (ttft::Replica, the simulator's) on a fleet inferred from the spans, once as
// observed and once per coalition of candidate factors restored to their baseline
// value:
//
//   cache     per-tenant prefix-cache hit rate (each request's cached fraction drawn
//             from a baseline request of its tenant)
//   arrivals  arrival rate per tenant (the incident's arrivals thinned to the
//             baseline rate, seeded)
//   speed     per-replica speed (a replica's prefill time per uncached token against
//             its peers', incident over baseline)
//   replicas  replicas per region (the baseline's replica set)
//   prompts   prompt lengths (drawn from a baseline request of the same tenant)
//   outputs   output lengths (likewise)
//   settings  engine settings (max_num_batched_tokens, max_num_seqs, chunked prefill,
//             max_model_len, ...): the baseline's, where the caller knows both
//             windows' settings (a scenario: `ttft drill`, the pipeline)
//   fleet     every replica's speed alike (a fleet-wide slowdown: the fleet's median
//             inter-token latency against what the replay's own load gives)
//
// From spans alone scheduler settings are not replayed: spans carry only the `deploy`
// label, not the settings behind it; a deploy change is then named as a cause the
// replay cannot assess.
//
// A factor is a candidate only when it changed materially between the windows.
// v(S) = p99(replay as observed) - p99(replay with S restored); each factor's share is
// its Shapley value of v over the candidates divided by v(all) (exact for k <= 4,
// else permutation sampling), averaged over seeds, with a t interval over seeds.
// The interaction is v(all) - sum_i v({i}), as a fraction of v(all).
//
// Thread safety: Attribute is re-entrant.

#ifndef TTFT_ATTRIBUTION_H_
#define TTFT_ATTRIBUTION_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ttft/core.h"
#include "ttft/engine.h"
#include "ttft/fleet.h"
#include "ttft/spans.h"
#include "ttft/window_stats.h"

namespace ttft {

// The factors the replay can restore, in this order everywhere.
enum class ReplayFactor : uint8_t {
  kCache,
  kArrivals,
  kSpeed,
  kReplicas,
  kPrompts,
  kOutputs,
  kSettings,
  kFleetSpeed
};
inline constexpr int kNumReplayFactors = 8;
std::string_view ToString(ReplayFactor f);  // "cache", "arrivals", ...
// The diagnosis' hypothesis a factor stands for ("prefix_cache_collapse", "load_surge",
// "bad_replica", "region_capacity", "longer_prompts", "decode_heavy",
// "scheduler_config", "compute_slowdown"). A FactorShare may name another where the change says
// more (traffic_mix for a new tenant; kv_pressure when only max_model_len changed).
std::string_view HypothesisOf(ReplayFactor f);

struct AttributionOptions {
  // The engine of every replica: hardware from model/gpu/dtype/tp (presets, as the
  // diagnosis' --model/--gpu/--dtype/--tp; empty: the spans' model label, then
  // llama-3.3-70b h100-sxm fp8 tp2), vLLM's default scheduler settings, and
  // max_model_len raised to fit the longest request seen.
  std::string model, gpu, dtype;
  int tp = 0;
  // The cost model's parameters: a calibration profile (`ttft calibrate`) where given,
  // else the defaults of ttft/model.h.
  std::optional<CostParams> cost;
  // The profile's engine.async_scheduling, where it states one: the assumed engine's
  // scheduling (known_engines keep their scenario's).
  std::optional<bool> async_scheduling;
  // The replicas as the scenario defines them, by name (spans from `ttft simulate`):
  // their engines replace the assumed one. Replicas not listed get the assumed engine.
  std::map<std::string, EngineConfig> known_engines;
  // The settings in effect in the incident window where a config deploy changed them,
  // by replica name (a scenario's deploy_config events); known_engines are then the
  // baseline's, and the `settings` factor restores them. Empty: the settings did not
  // change, or are not known (spans alone).
  std::map<std::string, EngineConfig> incident_engines;
  RouterSpec::Kind router = RouterSpec::Kind::kLeastOutstanding;
  int seeds = 3;      // replays per coalition with random restoration
  uint64_t seed = 1;  // of the first; the others seed + 1, ...
  // Above this many requests in a window, the replay uses the contiguous slice of
  // each window around its middle that holds this many (a time slice keeps the load
  // of the window; thinning requests would not).
  int64_t max_requests = 20000;
  // A factor is a candidate when it moved at least this much (docs/attribution.md).
  double min_rate_ratio = 1.08;      // a tenant's arrival rate
  double min_hit_rate_drop = 0.05;   // a tenant's token hit rate (absolute)
  double min_slowdown = 1.25;        // a replica's speed against its peers
  double min_fleet_slowdown = 1.25;  // the fleet's ITL beyond what the replayed load gives
  double min_length_ratio = 1.12;    // mean prompt or output length of a tenant
  int max_exact_factors = 4;         // above: permutation sampling
  // Estimated CPU seconds the replays may take: above it the seeds are cut (to one
  // at least), and the report says so. A replay costs about 2.7 ms per replica (its
  // KV block pool) plus 2 us per request (docs/performance.md, "Attribution").
  double budget_s = 3.0;
  int permutations = 6;  // per seed, when sampling (3 antithetic pairs)
  // Threads the independent replays of the Shapley pass run on (0: the cores, at most
  // two). REQUIRES: >= 0. The result does not depend on it.
  int threads = 0;
};

// One candidate factor and its share of the p99 increase.
struct FactorShare {
  ReplayFactor factor = ReplayFactor::kCache;
  std::string hypothesis;             // HypothesisOf(factor)
  std::string cause;                  // "the prefix-cache collapse", "the traffic surge", ...
  std::string change;                 // what moved, with numbers: "acme hit rate 85% -> 12%"
  double share = 0;                   // Shapley value / v(all), mean over seeds
  double share_lo = 0, share_hi = 0;  // 95% t interval over seeds
  double alone_p99_s = kMissing;      // p99 with only this factor restored (mean)
  double single_share = 0;            // v({i}) / v(all)
};

struct Attribution {
  bool run = false;
  std::string not_run_reason;            // why not, naming the missing field
  std::vector<std::string> assumptions;  // the inferred fleet, engine, slice
  std::vector<std::string> not_factors;  // changes the replay cannot assess, and why
  std::vector<FactorShare> factors;      // candidates, largest share first
  std::string method;                    // "exact Shapley over 2 factors, 3 seeds"
  int seeds = 0;
  int64_t replays = 0;
  int64_t requests_baseline = 0, requests_incident = 0;   // replayed per window
  double slice_from_s = kMissing, slice_to_s = kMissing;  // the incident slice replayed
  // Observed p99 of each window's replayed slice, with a 95% distribution-free CI
  // (binomial order statistics).
  double observed_before_p99_s = kMissing, observed_before_lo_s = kMissing,
         observed_before_hi_s = kMissing;
  double observed_after_p99_s = kMissing, observed_after_lo_s = kMissing,
         observed_after_hi_s = kMissing;
  // The model checks. As observed (nothing restored) against the incident's p99;
  // every candidate restored (mean, min and max over seeds) against the baseline's.
  double replay_none_p99_s = kMissing;
  double replay_all_p99_s = kMissing, replay_all_min_s = kMissing, replay_all_max_s = kMissing;
  bool incident_check_ok = false;  // replay_none inside the incident's CI (widened by 10%)
  bool baseline_check_ok = false;  // replay_all inside the baseline's CI widened by the seeds'
                                   // spread
  // v(all) - sum_i v({i}), over v(all): the part of the increase no single factor
  // explains alone. Shapley shares include it, split among the factors.
  double interaction = 0, interaction_lo = 0, interaction_hi = 0;
  // The part of the observed increase the replay leaves out: 1 - v(all) / (observed
  // after - observed before), when the replay reproduces less than was observed.
  double unexplained = 0;
};

// A window's requests for the replay: rows of `table`, with the window's bounds.
struct ReplayWindow {
  const SpanTable* table = nullptr;
  std::span<const uint32_t> rows;
  double from_s = 0, to_s = 0;
};

// The attribution of the increase from `before` to `after`. Never an error: when it
// cannot run, `run` is false and `not_run_reason` says why (a missing field names the
// field: "cached_tokens missing on 100% of the incident's requests").
Attribution Attribute(const ReplayWindow& before, const ReplayWindow& after,
                      const AttributionOptions& options);

// The sentence every renderer prints: "Two causes: the prefix-cache collapse
// explains 63% (55-71%) of the p99 increase, the traffic surge 37% (30-44%); their
// interaction is 8% of the increase (shared out in those shares)."; or why not run.
std::string Headline(const Attribution& a);

}  // namespace ttft

#endif  // TTFT_ATTRIBUTION_H_
