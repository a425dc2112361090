// The replay engine of the attribution (ttft/attribution.h): a window's requests
// driven through ttft::Replica on a fixed fleet, and the p99 TTFT they get.
// Private to src/attribution.
#ifndef TTFT_ATTRIBUTION_REPLAY_H_
#define TTFT_ATTRIBUTION_REPLAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "ttft/engine.h"
#include "ttft/fleet.h"

namespace ttft::attr {

// One request as the replay sees it. Token counts are >= 0; cached < prompt.
struct ReplayRequest {
  double arrival_s = 0;
  double front_end_s = 0;  // added to the arrival before the engine sees it
  int32_t prompt_tokens = 1;
  int32_t cached_tokens = 0;
  int32_t output_tokens = 1;
  int32_t chain = 0;   // shared-prefix chain: one per (tenant, template)
  int32_t region = 0;  // index into ReplayFleet::regions
  int32_t route = 0;   // index into ReplayFleet::route_sets
};

struct ReplayFleet {
  std::vector<std::string> regions;
  std::vector<std::string> names;       // replicas
  std::vector<int32_t> replica_region;  // per replica, into regions
  std::vector<EngineConfig> engines;    // per replica, as in the incident; one block_size
  // Per replica, the baseline's settings where they differ (the `settings` factor);
  // empty when they do not. Same KV capacity and block size as `engines`.
  std::vector<EngineConfig> baseline_engines;
  // The replicas a request may go to (those that served its tenant: a region or a
  // pool, which spans do not label).
  std::vector<std::vector<int32_t>> route_sets;
};

// Which replicas serve and how slow each is (1 = the cost model's speed).
struct FleetState {
  std::vector<bool> active;
  std::vector<double> slowdown;
  bool baseline_settings = false;  // run ReplayFleet::baseline_engines (when not empty)
};

// The replica whose planned step ends first, as a linear scan for the first strict
// minimum finds it (the lowest index among equal ends), in O(log n) per change: a
// tournament tree over the replicas' step ends. A NaN end counts as no step (the scan
// never picks it). The replay's event loop asks it once per event, and on a fleet of
// hundreds of replicas the scan was most of the loop's own time.
class NextStep {
 public:
  // Every replica without a planned step (+infinity).
  explicit NextStep(size_t n);
  // REQUIRES: i < n.
  void Set(size_t i, double end_s);
  double end_s(size_t i) const { return ends_[leaves_ + i]; }
  // The first replica with the smallest finite end, or n when none has a step.
  size_t First() const;

 private:
  size_t n_, leaves_;             // leaves_: n rounded up to a power of two (>= 1)
  std::vector<double> ends_;      // leaves at [leaves_, 2 leaves_), +inf when none
  std::vector<uint32_t> winner_;  // per node, the leaf index of its subtree's minimum
};

// The p99 TTFT (seconds, from arrival to first token) of `requests` replayed on the
// active replicas of `fleet`. Each replica's prefix cache is first warmed with every
// chain its region's requests use, at its longest cached length, so a chain's blocks
// are cached as they were in the observed window; a request's first cached_tokens /
// block_size blocks lie on its chain, the rest are its own. A request goes to the
// active replicas of its route set (else of its region, else all active ones) by
// `router`, as ttft::Simulate routes. Requests unfinished 600 s after the last
// arrival count as infinitely slow; requests the engine rejects (longer than
// max_model_len) are left out, as unserved. REQUIRES: requests sorted by arrival_s +
// front_end_s; at least one active replica; every engine validated.
// `prefill_per_token_s`, when not null, receives per replica the median prefill time
// (first scheduled to first token) per uncached token of its requests with at least
// 64 uncached tokens (NaN for fewer than 20 such requests): what the attribution
// compares with the spans' to calibrate a slow replica's factor. `itl_median_s`, when
// not null, receives the median over the served requests with >= 2 output tokens of
// their mean inter-token latency (NaN for none): what it compares to calibrate a
// fleet-wide slowdown.
double ReplayP99(const std::vector<ReplayRequest>& requests, const ReplayFleet& fleet,
                 const FleetState& state, RouterSpec::Kind router,
                 std::vector<double>* prefill_per_token_s = nullptr,
                 double* itl_median_s = nullptr);

// p-quantile of `v` as ttft::Quantile (reorders `v`); NaN when empty.
double QuantileOf(std::vector<double>& v, double p);

}  // namespace ttft::attr

#endif  // TTFT_ATTRIBUTION_REPLAY_H_
