// Counterfactual replay and Shapley shares of a p99 increase (ttft/attribution.h,
// docs/attribution.md).
#include "ttft/attribution.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "attribution/replay.h"
#include "ttft/format.h"
#include "ttft/model.h"
#include "ttft/parallel.h"

namespace ttft {

std::string_view ToString(ReplayFactor f) {
  switch (f) {
    case ReplayFactor::kCache: return "cache";
    case ReplayFactor::kArrivals: return "arrivals";
    case ReplayFactor::kSpeed: return "speed";
    case ReplayFactor::kReplicas: return "replicas";
    case ReplayFactor::kPrompts: return "prompts";
    case ReplayFactor::kOutputs: return "outputs";
    case ReplayFactor::kSettings: return "settings";
    case ReplayFactor::kFleetSpeed: return "fleet";
  }
  return "?";
}

std::string_view HypothesisOf(ReplayFactor f) {
  switch (f) {
    case ReplayFactor::kCache: return "prefix_cache_collapse";
    case ReplayFactor::kArrivals: return "load_surge";
    case ReplayFactor::kSpeed: return "bad_replica";
    case ReplayFactor::kReplicas: return "region_capacity";
    case ReplayFactor::kPrompts: return "longer_prompts";
    case ReplayFactor::kOutputs: return "decode_heavy";
    case ReplayFactor::kSettings: return "scheduler_config";
    case ReplayFactor::kFleetSpeed: return "compute_slowdown";
  }
  return "?";
}

namespace {

using attr::FleetState;
using attr::ReplayFleet;
using attr::ReplayRequest;
using numfmt::Pct;
using numfmt::Secs;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A label value as the reports name it (`"" (empty)` for the empty value).
std::string LabelOr(std::string_view v) { return v.empty() ? "\"\" (empty)" : std::string(v); }

// A uniform draw in [0, 1) from (seed, request, stream): common random numbers, so
// every coalition of one seed restores a request the same way.
double Uniform(uint64_t seed, uint64_t i, uint64_t stream) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL ^ (i + 1) * 0xbf58476d1ce4e5b9ULL ^
               stream * 0x94d049bb133111ebULL;
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

// Interns strings to dense indices.
struct Dict {
  std::unordered_map<std::string, int32_t> index;
  std::vector<std::string> names;
  int32_t Of(std::string_view s) {
    auto [it, inserted] = index.try_emplace(std::string(s), static_cast<int32_t>(names.size()));
    if (inserted) names.emplace_back(s);
    return it->second;
  }
};

// One window's requests in arrival order, with what the restorations read.
struct Win {
  std::vector<ReplayRequest> reqs;
  std::vector<int32_t> tenant, replica;
  std::vector<double> prefill_per_token_s;  // NaN: too few uncached tokens to tell
  std::vector<double> itl_mean_s;           // NaN: fewer than 2 output tokens, or unknown
  std::vector<double> observed_ttft_s;      // ok requests
  double from_s = 0, to_s = 0;
  double duration() const { return std::max(to_s - from_s, 1e-9); }
};

struct TenantStats {
  int64_t n = 0;
  double prompt = 0, cached = 0, output = 0;  // sums
  double rate(const Win& w) const { return static_cast<double>(n) / w.duration(); }
  double hit() const { return prompt > 0 ? cached / prompt : kNaN; }
};

std::vector<TenantStats> TenantsOf(const Win& w, size_t num_tenants) {
  std::vector<TenantStats> t(num_tenants);
  for (size_t i = 0; i < w.reqs.size(); ++i) {
    TenantStats& s = t[static_cast<size_t>(w.tenant[i])];
    ++s.n;
    s.prompt += w.reqs[i].prompt_tokens;
    s.cached += w.reqs[i].cached_tokens;
    s.output += w.reqs[i].output_tokens;
  }
  return t;
}

// 95% distribution-free CI of the p-quantile from binomial order statistics
// (normal approximation to the rank interval).
void QuantileCi(std::vector<double> v, double p, double& est, double& lo, double& hi) {
  est = lo = hi = kNaN;
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  const double half = 1.96 * std::sqrt(n * p * (1 - p));
  auto at = [&](double r) {
    const auto k = static_cast<size_t>(std::clamp(r, 0.0, n - 1));
    return v[k];
  };
  std::vector<double> copy = v;
  est = attr::QuantileOf(copy, p);
  lo = at(std::floor(n * p - half) - 1);
  hi = at(std::ceil(n * p + half) - 1);
}

// Student's t, two-sided 95%, for df = 1..9 (then 1.96 + a small correction).
double T95(int df) {
  static constexpr std::array<double, 9> kT = {12.706, 4.303, 3.182, 2.776, 2.571,
                                               2.447,  2.365, 2.306, 2.262};
  if (df < 1) return kNaN;
  if (df <= 9) return kT[static_cast<size_t>(df - 1)];
  return 1.96 + 2.4 / df;
}

struct MeanCi {
  double mean = kNaN, lo = kNaN, hi = kNaN;
};
MeanCi MeanInterval(const std::vector<double>& x) {
  MeanCi m;
  if (x.empty()) return m;
  const double n = static_cast<double>(x.size());
  m.mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
  if (x.size() < 2) {
    m.lo = m.hi = m.mean;
    return m;
  }
  double ss = 0;
  for (double v : x) ss += (v - m.mean) * (v - m.mean);
  const double half = T95(static_cast<int>(x.size()) - 1) * std::sqrt(ss / (n - 1) / n);
  m.lo = m.mean - half;
  m.hi = m.mean + half;
  return m;
}

// What a coalition of restored factors does to the incident's requests.
struct Restorer {
  const Win* a = nullptr;                                 // baseline
  const Win* b = nullptr;                                 // incident
  std::vector<std::vector<uint32_t>> baseline_of_tenant;  // request indices in `a`
  std::vector<double> keep;                               // per tenant, arrivals restored
  std::vector<bool> cache_t, prompt_t, output_t;          // tenants whose factor moved
  FleetState incident_state, restored_state;              // replicas and speeds
  double fleet_factor = 1;  // every replica's step slowdown in the incident (kFleetSpeed)
  int block_size = 16;

  std::vector<ReplayRequest> Requests(uint32_t mask, uint64_t seed) const {
    auto on = [&](ReplayFactor f) { return (mask >> static_cast<int>(f)) & 1U; };
    const bool cache = on(ReplayFactor::kCache), arrivals = on(ReplayFactor::kArrivals),
               prompts = on(ReplayFactor::kPrompts), outputs = on(ReplayFactor::kOutputs);
    std::vector<ReplayRequest> out;
    out.reserve(b->reqs.size());
    for (size_t i = 0; i < b->reqs.size(); ++i) {
      const auto t = static_cast<size_t>(b->tenant[i]);
      if (arrivals && keep[t] < 1 && Uniform(seed, i, 1) >= keep[t]) continue;
      ReplayRequest q = b->reqs[i];
      if (cache || prompts || outputs) {
        const std::vector<uint32_t>& pool =
            baseline_of_tenant[t].empty() ? baseline_of_tenant.back() : baseline_of_tenant[t];
        if (!pool.empty()) {
          const size_t k =
              std::min(pool.size() - 1,
                       static_cast<size_t>(Uniform(seed, i, 2) * static_cast<double>(pool.size())));
          const ReplayRequest& j = a->reqs[pool[k]];
          if (prompts && prompt_t[t]) q.prompt_tokens = j.prompt_tokens;
          if (cache && cache_t[t]) q.cached_tokens = j.cached_tokens;
          if (outputs && output_t[t]) q.output_tokens = j.output_tokens;
          const int32_t max_cached = (q.prompt_tokens - 1) / block_size * block_size;
          q.cached_tokens =
              std::clamp(q.cached_tokens / block_size * block_size, 0, std::max(max_cached, 0));
        }
      }
      out.push_back(q);
    }
    return out;
  }
};

// Whether tenant `t`'s arrival rate rose beyond the noise of its own arrivals: its
// counts in 20 equal buckets of each window, Welch's t of the bucket rates >= 3 (the
// buckets carry the burstiness a Poisson test would ignore). A tenant new in the
// incident rose when it has 20 requests or more.
bool RateRose(const Win& a, const Win& b, int32_t t) {
  constexpr int kBuckets = 20;
  auto rates = [&](const Win& w, double& mean, double& var, int64_t& n) {
    std::array<double, kBuckets> c{};
    n = 0;
    for (size_t i = 0; i < w.reqs.size(); ++i) {
      if (w.tenant[i] != t) continue;
      ++n;
      const double f = (w.reqs[i].arrival_s - w.from_s) / w.duration();
      c[static_cast<size_t>(std::clamp(static_cast<int>(f * kBuckets), 0, kBuckets - 1))] += 1;
    }
    const double width = w.duration() / kBuckets;
    mean = 0;
    for (double& x : c) mean += (x /= width) / kBuckets;
    var = 0;
    for (double x : c) var += (x - mean) * (x - mean) / (kBuckets - 1);
  };
  double ma, va, mb, vb;
  int64_t na, nb;
  rates(a, ma, va, na);
  rates(b, mb, vb, nb);
  if (na == 0) return nb >= 20;
  const double se = std::sqrt(va / kBuckets + vb / kBuckets);
  return se > 0 ? (mb - ma) / se >= 3 : mb > ma;
}

// Orders `rows` by `enq(row)`, ties in their given order (a stable sort), and keeps the
// middle `max_n` of them when there are more (all when max_n <= 0). A window of millions
// of rows selects its slice in linear time (nth_element on (time, position) keys, which
// order exactly as the stable sort does) and sorts only the slice.
template <typename Enq>
void OrderBySchedule(std::vector<uint32_t>& rows, const Enq& enq, int64_t max_n) {
  struct Key {
    double enq_s;
    uint32_t pos;
    bool operator<(const Key& o) const {
      return enq_s < o.enq_s || (enq_s == o.enq_s && pos < o.pos);
    }
  };
  std::vector<Key> keys(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) keys[i] = {enq(rows[i]), static_cast<uint32_t>(i)};
  auto first = keys.begin(), last = keys.end();
  if (max_n > 0 && static_cast<int64_t>(keys.size()) > max_n) {
    const auto start = static_cast<std::ptrdiff_t>((keys.size() - static_cast<size_t>(max_n)) / 2);
    first = keys.begin() + start;
    last = first + static_cast<std::ptrdiff_t>(max_n);
    std::nth_element(keys.begin(), first, keys.end());
    std::nth_element(first, last - 1, keys.end());
  }
  std::sort(first, last);
  std::vector<uint32_t> out;
  out.reserve(static_cast<size_t>(last - first));
  for (auto it = first; it != last; ++it) out.push_back(rows[it->pos]);
  rows = std::move(out);
}

// The engine settings a config deploy may change (the scenario's deploy_config keys),
// as "name before -> after" for each that differs; `scheduler` is set when one of them
// is a scheduler setting rather than a length limit (max_model_len).
std::vector<std::string> SettingsChanges(const EngineConfig& a, const EngineConfig& b,
                                         bool& scheduler) {
  std::vector<std::string> out;
  auto num = [&](std::string_view name, int64_t x, int64_t y, bool sched) {
    if (x == y) return;
    out.push_back(fmt::format("{} {} -> {}", name, x, y));
    scheduler = scheduler || sched;
  };
  auto flag = [&](std::string_view name, bool x, bool y) {
    if (x == y) return;
    out.push_back(fmt::format("{} {} -> {}", name, x ? "on" : "off", y ? "on" : "off"));
    scheduler = true;
  };
  num("max_num_batched_tokens", a.max_num_batched_tokens, b.max_num_batched_tokens, true);
  num("max_num_seqs", a.max_num_seqs, b.max_num_seqs, true);
  num("long_prefill_token_threshold", a.long_prefill_token_threshold,
      b.long_prefill_token_threshold, true);
  num("max_model_len", a.max_model_len, b.max_model_len, false);
  flag("chunked prefill", a.enable_chunked_prefill, b.enable_chunked_prefill);
  flag("prefix caching", a.enable_prefix_caching, b.enable_prefix_caching);
  flag("async scheduling", a.async_scheduling, b.async_scheduling);
  return out;
}

std::string NumberWord(size_t n) {
  static constexpr std::array<const char*, 7> kW = {"No",   "One",  "Two", "Three",
                                                    "Four", "Five", "Six"};
  return n < kW.size() ? kW[n] : std::to_string(n);
}

}  // namespace

Attribution Attribute(const ReplayWindow& before, const ReplayWindow& after,
                      const AttributionOptions& opt) {
  Attribution out;
  if (before.table == nullptr || after.table == nullptr) {
    out.not_run_reason = "no spans: the replay needs each request's arrival time and token counts";
    return out;
  }
  // Fields the replay needs, checked per window before anything else.
  for (const ReplayWindow* w : {&before, &after}) {
    const char* which = w == &before ? "baseline" : "incident";
    const SpanTable& t = *w->table;
    int64_t no_arrival = 0, no_prompt = 0, no_cached = 0, no_output = 0;
    for (uint32_t r : w->rows) {
      no_arrival += !std::isfinite(t.arrival_s()[r]);
      no_prompt += t.prompt_tokens()[r] < 0;
      no_cached += t.cached_tokens()[r] < 0;
      no_output += t.output_tokens()[r] < 0;
    }
    const double n = static_cast<double>(std::max<size_t>(w->rows.size(), 1));
    for (auto [field, missing] : {std::pair{"arrival_s", no_arrival},
                                  {"prompt_tokens", no_prompt},
                                  {"cached_tokens", no_cached},
                                  {"output_tokens", no_output}}) {
      if (missing > 0 && static_cast<double>(missing) / n > 0.01) {
        out.not_run_reason = fmt::format(
            "{} missing on {} of the {}'s requests ({} of {}): the replay needs it per request",
            field, Pct(static_cast<double>(missing) / n), which, missing, w->rows.size());
        return out;
      }
    }
    if (w->rows.size() < 100) {
      out.not_run_reason =
          fmt::format("{} requests in the {}: too few to replay a p99", w->rows.size(), which);
      return out;
    }
  }

  // The fleet comes from the replica labels: without any there is none to replay on.
  {
    bool labelled = false;
    for (const ReplayWindow* w : {&before, &after}) {
      for (uint32_t r : w->rows) {
        if (!w->table->label(r, SpanLabel::kReplica).empty()) {
          labelled = true;
          break;
        }
      }
    }
    if (!labelled) {
      out.not_run_reason =
          "replica label missing on every request: the fleet the replay runs on cannot be "
          "inferred";
      return out;
    }
  }

  // The engine every replica is assumed to run.
  std::string model = opt.model;
  std::map<std::string, int64_t> model_labels;
  for (uint32_t r : after.rows)
    ++model_labels[std::string(after.table->label(r, SpanLabel::kModel))];
  if (model.empty() && !model_labels.empty()) {
    const auto top =
        std::max_element(model_labels.begin(), model_labels.end(),
                         [](const auto& x, const auto& y) { return x.second < y.second; });
    if (!top->first.empty() && FindModel(top->first).ok()) {
      model = top->first;
    } else if (!top->first.empty()) {
      out.assumptions.push_back(fmt::format(
          "the spans' model label \"{}\" is no cost-model preset: priced as llama-3.3-70b "
          "(give --model)",
          top->first));
    }
  }
  if (model.empty()) model = "llama-3.3-70b";
  const std::string gpu = opt.gpu.empty() ? "h100-sxm" : opt.gpu;
  auto dtype = ParseDtype(opt.dtype.empty() ? "fp8" : opt.dtype);
  const int tp = opt.tp > 0 ? opt.tp : 2;
  if (!dtype.ok()) {
    out.not_run_reason = "the engine: " + dtype.status().message();
    return out;
  }
  auto hw = MakeHardwareConfig(model, gpu, *dtype, tp);
  if (!hw.ok()) {
    out.not_run_reason = "the engine: " + hw.status().message();
    return out;
  }

  // The requests of both windows, interned.
  Dict tenants, chains, regions, replicas;
  std::vector<int32_t> replica_region_of;
  int64_t longest = 0;
  auto load = [&](const ReplayWindow& w, Win& out_w) {
    const SpanTable& t = *w.table;
    std::vector<uint32_t> order;
    order.reserve(w.rows.size());
    for (uint32_t r : w.rows) {
      if (std::isfinite(t.arrival_s()[r]) && t.prompt_tokens()[r] >= 0 &&
          t.cached_tokens()[r] >= 0 && t.output_tokens()[r] >= 0)
        order.push_back(r);
    }
    auto enq = [&](uint32_t r) {
      const double fe = t.front_end_s()[r];
      return t.arrival_s()[r] + (std::isfinite(fe) ? fe : 0.0);
    };
    OrderBySchedule(order, enq, opt.max_requests);
    out_w.from_s = w.from_s;
    out_w.to_s = w.to_s;
    if (static_cast<int64_t>(order.size()) < static_cast<int64_t>(w.rows.size()) &&
        !order.empty() && opt.max_requests > 0 &&
        static_cast<int64_t>(order.size()) == opt.max_requests) {
      out_w.from_s = t.arrival_s()[order.front()];
      out_w.to_s = t.arrival_s()[order.back()];
    }
    for (uint32_t r : order) {
      ReplayRequest q;
      q.arrival_s = t.arrival_s()[r];
      const double fe = t.front_end_s()[r];
      q.front_end_s = std::isfinite(fe) ? fe : 0.0;
      q.prompt_tokens = std::max<int32_t>(t.prompt_tokens()[r], 1);
      q.cached_tokens = std::min(t.cached_tokens()[r], q.prompt_tokens - 1);
      q.output_tokens = std::max<int32_t>(t.output_tokens()[r], 1);
      longest = std::max<int64_t>(longest, q.prompt_tokens + q.output_tokens);
      const std::string_view tenant = t.label(r, SpanLabel::kTenant);
      q.chain = chains.Of(fmt::format("{}\x1f{}", tenant, t.label(r, SpanLabel::kTemplate)));
      q.region = regions.Of(t.label(r, SpanLabel::kRegion));
      const int32_t rep = replicas.Of(t.label(r, SpanLabel::kReplica));
      if (static_cast<size_t>(rep) >= replica_region_of.size())
        replica_region_of.push_back(q.region);
      out_w.reqs.push_back(q);
      out_w.tenant.push_back(tenants.Of(tenant));
      out_w.replica.push_back(rep);
      const int64_t uncached = static_cast<int64_t>(t.prompt_tokens()[r]) - t.cached_tokens()[r];
      const double pf = t.prefill_s()[r];
      out_w.prefill_per_token_s.push_back(uncached >= 64 && std::isfinite(pf) && pf > 0
                                              ? pf / static_cast<double>(uncached)
                                              : kNaN);
      const double itl = t.itl_mean_s()[r];
      out_w.itl_mean_s.push_back(std::isfinite(itl) && itl > 0 ? itl : kNaN);
      if (t.status()[r] == RequestStatus::kOk && std::isfinite(t.ttft_s()[r]))
        out_w.observed_ttft_s.push_back(t.ttft_s()[r]);
    }
  };
  Win a, b;
  std::vector<std::vector<int32_t>> route_sets;
  load(before, a);
  load(after, b);
  if (a.observed_ttft_s.size() < 100 || b.observed_ttft_s.size() < 100) {
    out.not_run_reason = "fewer than 100 ok requests with every field the replay needs in a window";
    return out;
  }
  out.requests_baseline = static_cast<int64_t>(a.reqs.size());
  out.requests_incident = static_cast<int64_t>(b.reqs.size());
  if (b.from_s != after.from_s || b.to_s != after.to_s) {
    out.slice_from_s = b.from_s;
    out.slice_to_s = b.to_s;
    out.assumptions.push_back(fmt::format(
        "windows above {} requests are replayed on their middle {} requests (a contiguous time "
        "slice keeps the window's load; the incident slice is [{:.0f}, {:.0f}) s)",
        opt.max_requests, opt.max_requests, b.from_s, b.to_s));
  }
  QuantileCi(a.observed_ttft_s, 0.99, out.observed_before_p99_s, out.observed_before_lo_s,
             out.observed_before_hi_s);
  QuantileCi(b.observed_ttft_s, 0.99, out.observed_after_p99_s, out.observed_after_lo_s,
             out.observed_after_hi_s);

  // Route sets: the replicas that served a tenant (at least 0.5% of its requests, or
  // 3) in either window; a request goes to its tenant's set.
  {
    const size_t ntn = tenants.names.size(), nrp = replicas.names.size();
    std::vector<std::vector<int64_t>> served(ntn, std::vector<int64_t>(nrp, 0));
    std::vector<int64_t> total(ntn, 0);
    for (const Win* w : {&a, &b}) {
      for (size_t i = 0; i < w->reqs.size(); ++i) {
        ++served[static_cast<size_t>(w->tenant[i])][static_cast<size_t>(w->replica[i])];
        ++total[static_cast<size_t>(w->tenant[i])];
      }
    }
    for (size_t t = 0; t < ntn; ++t) {
      std::vector<int32_t> set;
      for (size_t r = 0; r < nrp; ++r) {
        const int64_t c = served[t][r];
        if (c >= 3 || (c > 0 && static_cast<double>(c) >= 0.005 * static_cast<double>(total[t])))
          set.push_back(static_cast<int32_t>(r));
      }
      route_sets.push_back(std::move(set));
    }
    for (Win* w : {&a, &b}) {
      for (size_t i = 0; i < w->reqs.size(); ++i) w->reqs[i].route = w->tenant[i];
    }
  }

  // The fleet: every replica seen in either window, in its region.
  ReplayFleet fleet;
  fleet.regions = regions.names;
  fleet.names = replicas.names;
  fleet.replica_region = replica_region_of;
  fleet.route_sets = route_sets;
  EngineConfig engine;
  engine.hardware = *hw;
  engine.cost = opt.cost.value_or(CostParams{});
  engine.async_scheduling = opt.async_scheduling.value_or(engine.async_scheduling);
  engine.max_model_len = std::max<int64_t>(engine.max_model_len, (longest + 1023) / 1024 * 1024);
  engine.max_num_batched_tokens = std::max(engine.max_num_batched_tokens, int64_t{8192});
  if (!engine.Validate().ok() || !engine.KvCapacityBlocks().ok()) {
    engine.max_model_len = 8192;  // the longest request is rejected, as it would be
  }
  int known = 0;
  // The settings factor: replicas whose settings a config deploy changed between the
  // windows (known only from a scenario). `fleet.engines` run as observed (the
  // incident's); the baseline's are kept where any replica differs.
  std::vector<EngineConfig> baseline_engines;
  std::map<std::string, int> settings_changes;  // "max_num_seqs 256 -> 64" -> replicas
  bool settings_scheduler = false;
  for (const std::string& name : fleet.names) {
    auto it = opt.known_engines.find(name);
    if (it != opt.known_engines.end()) {
      EngineConfig e = it->second;
      if (opt.cost) e.cost = *opt.cost;
      baseline_engines.push_back(e);
      auto inc = opt.incident_engines.find(name);
      if (inc != opt.incident_engines.end()) {
        EngineConfig ei = inc->second;
        if (opt.cost) ei.cost = *opt.cost;
        for (std::string& c : SettingsChanges(e, ei, settings_scheduler)) ++settings_changes[c];
        e = std::move(ei);
      }
      fleet.engines.push_back(e);
      ++known;
    } else {
      fleet.engines.push_back(engine);
      baseline_engines.push_back(engine);
    }
  }
  const int bs = fleet.engines.front().block_size;
  for (size_t i = 0; i < fleet.engines.size(); ++i) {
    const EngineConfig& e = fleet.engines[i];
    const EngineConfig& eb = baseline_engines[i];
    if (e.block_size != bs || !e.Validate().ok() || !e.KvCapacityBlocks().ok() ||
        eb.block_size != bs || !eb.Validate().ok() || !eb.KvCapacityBlocks().ok() ||
        *eb.KvCapacityBlocks() != *e.KvCapacityBlocks()) {
      out.not_run_reason =
          "the replicas' engines differ in block size or KV capacity, or do not validate";
      return out;
    }
  }
  if (!settings_changes.empty()) fleet.baseline_engines = std::move(baseline_engines);
  std::map<std::string, int> per_region;
  for (size_t i = 0; i < fleet.names.size(); ++i)
    ++per_region[fleet.regions[static_cast<size_t>(fleet.replica_region[i])]];
  std::string regions_text;
  for (const auto& [r, c] : per_region)
    regions_text += fmt::format("{}{} in {}", regions_text.empty() ? "" : ", ", c, LabelOr(r));
  const char* replica_word = fleet.names.size() == 1 ? "replica" : "replicas";
  if (known == static_cast<int>(fleet.names.size())) {
    out.assumptions.push_back(
        fmt::format("fleet: the scenario's {} {} ({}) with {} engine settings", fleet.names.size(),
                    replica_word, regions_text, fleet.names.size() == 1 ? "its" : "their"));
  } else {
    out.assumptions.push_back(fmt::format(
        "fleet: {} {} from the spans' replica and region labels ({}), each {} {} tp{} on {} "
        "with vLLM's default scheduler (max_num_batched_tokens {}, max_num_seqs {}, chunked "
        "prefill, prefix caching{}), cost model {}",
        fleet.names.size(), replica_word, regions_text, hw->model.name, ToString(hw->weight_dtype),
        hw->tp, hw->gpu.name, engine.max_num_batched_tokens, engine.max_num_seqs,
        engine.async_scheduling ? ", async scheduling" : "",
        opt.cost ? "from the calibration profile" : "defaults"));
  }
  out.assumptions.push_back(fmt::format(
      "routing: {} among the replicas that served the request's tenant (its region or pool); each "
      "replica's prefix cache starts warm with the shared prefixes of the tenants it serves",
      ToString(opt.router)));

  // Candidate factors.
  const size_t nt = tenants.names.size();
  const std::vector<TenantStats> ta = TenantsOf(a, nt), tb = TenantsOf(b, nt);
  Restorer rs;
  rs.a = &a;
  rs.b = &b;
  rs.block_size = bs;
  rs.baseline_of_tenant.assign(nt + 1, {});
  for (size_t i = 0; i < a.reqs.size(); ++i) {
    rs.baseline_of_tenant[static_cast<size_t>(a.tenant[i])].push_back(static_cast<uint32_t>(i));
    rs.baseline_of_tenant[nt].push_back(static_cast<uint32_t>(i));
  }
  rs.keep.assign(nt, 1.0);
  rs.cache_t.assign(nt, false);
  rs.prompt_t.assign(nt, false);
  rs.output_t.assign(nt, false);
  std::array<bool, kNumReplayFactors> cand{};
  std::array<std::string, kNumReplayFactors> change;
  const double nb = static_cast<double>(b.reqs.size());
  std::string new_tenant;
  for (size_t t = 0; t < nt; ++t) {
    if (static_cast<double>(tb[t].n) < 0.02 * nb) continue;  // too small to matter
    const double rate_x = tb[t].rate(b) / std::max(ta[t].rate(a), 1e-12);
    if (rate_x >= opt.min_rate_ratio && RateRose(a, b, static_cast<int32_t>(t))) {
      cand[static_cast<int>(ReplayFactor::kArrivals)] = true;
      rs.keep[t] = ta[t].n > 0 ? ta[t].rate(a) / tb[t].rate(b) : 0.0;
      if (ta[t].n == 0 && new_tenant.empty()) new_tenant = tenants.names[t];
      change[1] += fmt::format("{}tenant {} {} -> {} rps", change[1].empty() ? "" : ", ",
                               LabelOr(tenants.names[t]), numfmt::Fixed(ta[t].rate(a), 2),
                               numfmt::Fixed(tb[t].rate(b), 2));
    }
    if (ta[t].n < 20) continue;
    const double ca = ta[t].cached / static_cast<double>(ta[t].n),
                 cb = tb[t].cached / static_cast<double>(tb[t].n);
    if (ta[t].hit() - tb[t].hit() >= opt.min_hit_rate_drop && cb <= 0.9 * ca) {
      cand[static_cast<int>(ReplayFactor::kCache)] = true;
      rs.cache_t[t] = true;
      change[0] += fmt::format("{}tenant {} hit rate {} -> {}", change[0].empty() ? "" : ", ",
                               LabelOr(tenants.names[t]), Pct(ta[t].hit()), Pct(tb[t].hit()));
    }
    const double pa = ta[t].prompt / static_cast<double>(ta[t].n),
                 pb = tb[t].prompt / static_cast<double>(tb[t].n);
    if (pb >= opt.min_length_ratio * pa) {
      cand[static_cast<int>(ReplayFactor::kPrompts)] = true;
      rs.prompt_t[t] = true;
      change[4] +=
          fmt::format("{}tenant {} mean prompt {} -> {} tokens", change[4].empty() ? "" : ", ",
                      LabelOr(tenants.names[t]), numfmt::Num(pa), numfmt::Num(pb));
    }
    const double oa = ta[t].output / static_cast<double>(ta[t].n),
                 ob = tb[t].output / static_cast<double>(tb[t].n);
    if (ob >= opt.min_length_ratio * oa) {
      cand[static_cast<int>(ReplayFactor::kOutputs)] = true;
      rs.output_t[t] = true;
      change[5] +=
          fmt::format("{}tenant {} mean output {} -> {} tokens", change[5].empty() ? "" : ", ",
                      LabelOr(tenants.names[t]), numfmt::Num(oa), numfmt::Num(ob));
    }
  }

  // Replicas serving in each window: at least 10% of a replica's mean share.
  const size_t nr = fleet.names.size();
  auto serving = [&](const Win& w) {
    std::vector<int64_t> c(nr, 0);
    for (int32_t r : w.replica) ++c[static_cast<size_t>(r)];
    int64_t seen = 0;
    for (int64_t x : c) seen += x > 0;
    std::vector<bool> s(nr, false);
    for (size_t i = 0; i < nr; ++i)
      s[i] = static_cast<double>(c[i]) >= 0.1 * static_cast<double>(w.reqs.size()) /
                                              static_cast<double>(std::max<int64_t>(seen, 1));
    return s;
  };
  const std::vector<bool> serve_a = serving(a), serve_b = serving(b);
  // Speed: a replica's median prefill time per uncached token over the median of the
  // replicas' medians, incident over baseline.
  auto relative_speed = [&](const Win& w) {
    std::vector<std::vector<double>> per(nr);
    for (size_t i = 0; i < w.reqs.size(); ++i)
      if (std::isfinite(w.prefill_per_token_s[i]))
        per[static_cast<size_t>(w.replica[i])].push_back(w.prefill_per_token_s[i]);
    std::vector<double> med(nr, kNaN), meds;
    for (size_t i = 0; i < nr; ++i) {
      if (per[i].size() < 20) continue;
      med[i] = attr::QuantileOf(per[i], 0.5);
      meds.push_back(med[i]);
    }
    const double fleet_med = attr::QuantileOf(meds, 0.5);
    for (double& m : med) m /= fleet_med;
    return med;
  };
  const std::vector<double> sa = relative_speed(a), sb = relative_speed(b);
  rs.incident_state.active = serve_b;
  rs.incident_state.slowdown.assign(nr, 1.0);
  rs.restored_state.active = serve_b;
  rs.restored_state.slowdown.assign(nr, 1.0);
  for (size_t i = 0; i < nr; ++i) {
    if (!serve_b[i] || !std::isfinite(sb[i])) continue;
    const double s = sb[i] / (std::isfinite(sa[i]) ? sa[i] : 1.0);
    if (s >= opt.min_slowdown) {
      cand[static_cast<int>(ReplayFactor::kSpeed)] = true;
      rs.incident_state.slowdown[i] = s;
    }
  }
  if (cand[static_cast<int>(ReplayFactor::kSpeed)]) {
    // Prefill time per token overstates a step slowdown (a slow replica's prefills also
    // wait behind its slower decode steps): one replay at the measured factors gives the
    // replay's own ratio for each slow replica, and the factor is scaled so the replay's
    // ratio moves toward the measured one: one damped fixed-point step (half a step in
    // log space: a replica the replay saturates overstates its own ratio), clamped to
    // [1, 2x].
    std::vector<double> replay_pt;
    attr::ReplayP99(b.reqs, fleet, rs.incident_state, opt.router, &replay_pt);
    ++out.replays;
    std::vector<double> meds;
    for (size_t i = 0; i < nr; ++i)
      if (rs.incident_state.active[i] && std::isfinite(replay_pt[i])) meds.push_back(replay_pt[i]);
    std::vector<double> copy = meds;
    const double fleet_med = attr::QuantileOf(copy, 0.5);
    for (size_t i = 0; i < nr; ++i) {
      double& f = rs.incident_state.slowdown[i];
      if (f == 1.0) continue;
      const double measured = f;
      const double replayed = replay_pt[i] / fleet_med;
      if (std::isfinite(replayed) && replayed > 0)
        f = std::clamp(f * std::sqrt(measured / replayed), 1.0, 2 * measured);
      change[2] += fmt::format(
          "{}replica {} {} slower than its peers (prefill time per uncached token {}; the step "
          "slowdown that replays it)",
          change[2].empty() ? "" : ", ", LabelOr(fleet.names[i]), numfmt::X(f),
          numfmt::X(measured));
    }
  }
  // Fleet speed: every replica slower alike (compute_slowdown). Peers cannot show it,
  // so the fleet's median inter-token latency is compared across the windows against
  // what the replay's own load gives: each window replayed as observed at the model's
  // speed reproduces what bigger batches and heavier steps do to it; the rest is the
  // fleet's. That ratio overstates a step slowdown on a busy fleet (slower steps queue
  // more requests into bigger batches), so the factor is the one whose replay gives the
  // observed ratio: bisection in log space between 1 and the ratio (the replayed ratio
  // rises with the factor), five replays at most.
  {
    auto median_itl = [](const Win& w) {
      std::vector<double> v;
      for (double x : w.itl_mean_s)
        if (std::isfinite(x)) v.push_back(x);
      return v.size() >= 20 ? attr::QuantileOf(v, 0.5) : kNaN;
    };
    const double oa = median_itl(a), ob = median_itl(b);
    const double observed_x = ob / oa;
    if (std::isfinite(observed_x) && observed_x >= opt.min_fleet_slowdown) {
      FleetState base_state;
      base_state.active = serve_a;
      base_state.slowdown.assign(nr, 1.0);
      base_state.baseline_settings = true;
      double ra = kNaN, rb = kNaN;
      attr::ReplayP99(a.reqs, fleet, base_state, opt.router, nullptr, &ra);
      attr::ReplayP99(b.reqs, fleet, rs.incident_state, opt.router, nullptr, &rb);
      out.replays += 2;
      const double replayed_x = rb / ra;
      double g = observed_x / replayed_x;
      if (std::isfinite(g) && g >= opt.min_fleet_slowdown) {
        auto replayed_ratio = [&](double factor) {
          FleetState slowed = rs.incident_state;
          for (double& s : slowed.slowdown) s *= factor;
          double r = kNaN;
          attr::ReplayP99(b.reqs, fleet, slowed, opt.router, nullptr, &r);
          ++out.replays;
          return r / ra;
        };
        double lo = 1, hi = g;
        if (replayed_ratio(hi) > observed_x) {
          for (int step = 0; step < 4; ++step) {
            const double mid = std::sqrt(lo * hi);
            (replayed_ratio(mid) > observed_x ? hi : lo) = mid;
          }
          g = std::sqrt(lo * hi);
        }
      }
      if (std::isfinite(g) && g >= opt.min_fleet_slowdown) {
        cand[static_cast<int>(ReplayFactor::kFleetSpeed)] = true;
        rs.fleet_factor = g;
        change[static_cast<size_t>(ReplayFactor::kFleetSpeed)] = fmt::format(
            "every replica {} slower (median inter-token latency {} -> {}, {}, of which the "
            "replayed load gives {}; the step slowdown that replays the rest)",
            numfmt::X(g), numfmt::Secs(oa), numfmt::Secs(ob), numfmt::X(observed_x),
            numfmt::X(replayed_x));
      }
    }
  }
  std::vector<int> ra(fleet.regions.size(), 0), rb(fleet.regions.size(), 0);
  for (size_t i = 0; i < nr; ++i) {
    ra[static_cast<size_t>(fleet.replica_region[i])] += serve_a[i];
    rb[static_cast<size_t>(fleet.replica_region[i])] += serve_b[i];
  }
  for (size_t g = 0; g < fleet.regions.size(); ++g) {
    if (rb[g] < ra[g]) {
      cand[static_cast<int>(ReplayFactor::kReplicas)] = true;
      change[3] += fmt::format("{}region {} {} -> {} replicas", change[3].empty() ? "" : ", ",
                               LabelOr(fleet.regions[g]), ra[g], rb[g]);
    }
  }
  if (cand[static_cast<int>(ReplayFactor::kReplicas)]) rs.restored_state.active = serve_a;
  if (!settings_changes.empty()) {
    cand[static_cast<int>(ReplayFactor::kSettings)] = true;
    std::string& text = change[static_cast<size_t>(ReplayFactor::kSettings)];
    for (const auto& [c, count] : settings_changes)
      text += fmt::format("{}{} on {} {}", text.empty() ? "" : ", ", c, count,
                          count == 1 ? "replica" : "replicas");
  } else {
    std::map<std::string, int64_t> da, db;
    for (uint32_t r : before.rows) ++da[std::string(before.table->label(r, SpanLabel::kDeploy))];
    for (uint32_t r : after.rows) ++db[std::string(after.table->label(r, SpanLabel::kDeploy))];
    for (const auto& [d, c] : db) {
      if (!da.count(d) && static_cast<double>(c) >= 0.01 * nb) {
        out.not_factors.push_back(fmt::format(
            "deploy {}: new in the incident; the spans carry its label, not its scheduler "
            "settings, "
            "so the replay keeps the baseline's engine (its effect is in the unexplained part)",
            LabelOr(d)));
      }
    }
  }

  std::vector<ReplayFactor> factors;
  for (int f = 0; f < kNumReplayFactors; ++f)
    if (cand[static_cast<size_t>(f)]) factors.push_back(static_cast<ReplayFactor>(f));
  const int k = static_cast<int>(factors.size());
  if (k == 0) {
    out.not_run_reason =
        "no factor the replay can restore moved materially between the windows (tenant rates, hit "
        "rates, prompt and output lengths, replica and fleet speeds, replica counts, engine "
        "settings where known)";
    return out;
  }

  // v(S) per seed. A coalition's mask is over `factors` (bit i = factors[i]).
  auto factor_mask = [&](uint32_t m) {
    uint32_t r = 0;
    for (int i = 0; i < k; ++i)
      if ((m >> i) & 1U) r |= 1U << static_cast<int>(factors[static_cast<size_t>(i)]);
    return r;
  };
  auto random_mask = [&](uint32_t fm) {
    constexpr uint32_t kRandom = (1U << static_cast<int>(ReplayFactor::kCache)) |
                                 (1U << static_cast<int>(ReplayFactor::kArrivals)) |
                                 (1U << static_cast<int>(ReplayFactor::kPrompts)) |
                                 (1U << static_cast<int>(ReplayFactor::kOutputs));
    return (fm & kRandom) != 0;
  };
  auto replay_p99 = [&](uint32_t m, uint64_t seed) {
    const uint32_t fm = factor_mask(m);
    FleetState st = rs.incident_state;
    if ((fm >> static_cast<int>(ReplayFactor::kSpeed)) & 1U)
      st.slowdown = rs.restored_state.slowdown;
    if (((fm >> static_cast<int>(ReplayFactor::kFleetSpeed)) & 1U) == 0)
      for (double& s : st.slowdown) s *= rs.fleet_factor;
    if ((fm >> static_cast<int>(ReplayFactor::kReplicas)) & 1U)
      st.active = rs.restored_state.active;
    st.baseline_settings = ((fm >> static_cast<int>(ReplayFactor::kSettings)) & 1U) != 0;
    return attr::ReplayP99(rs.Requests(fm, seed), fleet, st, opt.router);
  };
  // The Shapley pass below runs twice: first collecting the (coalition, seed) pairs it
  // needs, which do not depend on the replayed values, then on their p99s, replayed
  // beforehand on up to two threads (each replay is independent and deterministic, so
  // the result does not depend on the thread count). A coalition without random
  // restorations is replayed once for every seed.
  bool collecting = true;
  std::map<std::pair<uint32_t, uint64_t>, double> replayed;
  auto key_of = [&](uint32_t m, uint64_t seed) {
    return std::make_pair(m, random_mask(factor_mask(m)) ? seed : opt.seed);
  };
  auto replay = [&](uint32_t m, uint64_t seed, std::map<uint32_t, double>& memo) {
    (void)memo;
    const auto key = key_of(m, seed);
    if (collecting) {
      replayed.emplace(key, kNaN);
      return 0.0;
    }
    return replayed.at(key);
  };
  auto replay_collected = [&] {
    std::vector<std::pair<const std::pair<uint32_t, uint64_t>, double>*> todo;
    todo.reserve(replayed.size());
    for (auto& kv : replayed) todo.push_back(&kv);
    const int threads =
        opt.threads > 0
            ? opt.threads
            : static_cast<int>(std::min(std::max(1u, std::thread::hardware_concurrency()), 2u));
    ParallelFor(todo.size(), threads, [&](size_t i) {
      todo[i]->second = replay_p99(todo[i]->first.first, todo[i]->first.second);
    });
    out.replays += static_cast<int64_t>(todo.size());
    collecting = false;
  };
  int seeds = std::max(opt.seeds, 1);
  {
    const double per_replay = 2.7e-3 * static_cast<double>(nr) +
                              2e-6 * static_cast<double>(a.reqs.size() + b.reqs.size());
    const double coalitions =
        k <= opt.max_exact_factors ? std::pow(2.0, k) : 2.0 * k * std::max(opt.permutations, 2);
    const int wanted = seeds;
    while (seeds > 1 && per_replay * (1 + (coalitions - 1) * seeds) > opt.budget_s) --seeds;
    if (seeds < wanted) {
      out.assumptions.push_back(fmt::format(
          "seeds cut from {} to {} to stay within the time budget of {:.0f} s ({} replicas, about "
          "{:.2f} s per replay): the intervals are over fewer seeds",
          wanted, seeds, opt.budget_s, nr, per_replay));
    }
  }
  const uint32_t all = (1U << k) - 1;
  const bool exact = k <= opt.max_exact_factors;
  std::vector<std::vector<double>> share(static_cast<size_t>(k)), single(static_cast<size_t>(k)),
      alone(static_cast<size_t>(k));
  std::vector<double> inter, all_p99;
  double none_p99 = kNaN;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      replay_collected();
      for (auto& v : share) v.clear();
      for (auto& v : single) v.clear();
      for (auto& v : alone) v.clear();
      inter.clear();
      all_p99.clear();
    }
    for (int s = 0; s < seeds; ++s) {
      const uint64_t seed = opt.seed + static_cast<uint64_t>(s);
      std::map<uint32_t, double> memo;
      none_p99 = replay(0, seed, memo);
      const double p_all = replay(all, seed, memo);
      const double v_all = none_p99 - p_all;
      all_p99.push_back(p_all);
      std::vector<double> phi(static_cast<size_t>(k), 0.0);
      if (exact) {
        std::vector<double> fact(static_cast<size_t>(k) + 1, 1.0);
        for (int i = 1; i <= k; ++i)
          fact[static_cast<size_t>(i)] = fact[static_cast<size_t>(i - 1)] * i;
        for (int i = 0; i < k; ++i) {
          for (uint32_t m = 0; m <= all; ++m) {
            if ((m >> i) & 1U) continue;
            const int size = std::popcount(m);
            const double w = fact[static_cast<size_t>(size)] *
                             fact[static_cast<size_t>(k - size - 1)] / fact[static_cast<size_t>(k)];
            phi[static_cast<size_t>(i)] +=
                w * (replay(m, seed, memo) - replay(m | (1U << i), seed, memo));
          }
        }
      } else {
        // Permutation sampling (Castro, Gomez and Tejada 2009): the mean marginal
        // contribution over random orders, antithetic pairs (an order and its reverse).
        const int perms = std::max(opt.permutations / 2 * 2, 2);
        std::vector<int> order(static_cast<size_t>(k));
        for (int p = 0; p < perms; p += 2) {
          std::iota(order.begin(), order.end(), 0);
          for (int i = k - 1; i > 0; --i) {
            const int j = static_cast<int>(
                Uniform(seed, static_cast<uint64_t>(p) * 64 + static_cast<uint64_t>(i), 9) *
                (i + 1));
            std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(std::min(j, i))]);
          }
          for (int rev = 0; rev < 2; ++rev) {
            uint32_t m = 0;
            for (int x = 0; x < k; ++x) {
              const int i = order[static_cast<size_t>(rev ? k - 1 - x : x)];
              const uint32_t m2 = m | (1U << i);
              phi[static_cast<size_t>(i)] +=
                  (replay(m, seed, memo) - replay(m2, seed, memo)) / perms;
              m = m2;
            }
          }
        }
      }
      double sum_single = 0;
      for (int i = 0; i < k; ++i) {
        const double p_alone = replay(1U << i, seed, memo);
        const double v_i = none_p99 - p_alone;
        sum_single += v_i;
        if (v_all > 0) {
          share[static_cast<size_t>(i)].push_back(phi[static_cast<size_t>(i)] / v_all);
          single[static_cast<size_t>(i)].push_back(v_i / v_all);
        }
        alone[static_cast<size_t>(i)].push_back(p_alone);
      }
      if (v_all > 0) inter.push_back((v_all - sum_single) / v_all);
    }
  }
  out.run = true;
  out.seeds = seeds;
  out.method = exact
                   ? fmt::format("exact Shapley values over {} factor{} ({} coalitions), {} seed{}",
                                 k, k == 1 ? "" : "s", 1U << k, seeds, seeds == 1 ? "" : "s")
                   : fmt::format(
                         "Shapley values by permutation sampling ({} orders per seed, "
                         "antithetic) over {} factors, {} seeds",
                         std::max(opt.permutations / 2 * 2, 2), k, seeds);
  out.replay_none_p99_s = none_p99;
  const MeanCi pall = MeanInterval(all_p99);
  out.replay_all_p99_s = pall.mean;
  out.replay_all_min_s = *std::min_element(all_p99.begin(), all_p99.end());
  out.replay_all_max_s = *std::max_element(all_p99.begin(), all_p99.end());
  out.incident_check_ok =
      none_p99 >= out.observed_after_lo_s / 1.1 && none_p99 <= out.observed_after_hi_s * 1.1;
  const double spread = (out.replay_all_max_s - out.replay_all_min_s) / 2;
  out.baseline_check_ok = pall.mean >= out.observed_before_lo_s / 1.1 - spread &&
                          pall.mean <= out.observed_before_hi_s * 1.1 + spread;
  const MeanCi ic = MeanInterval(inter);
  out.interaction = std::isfinite(ic.mean) ? ic.mean : 0;
  out.interaction_lo = std::isfinite(ic.lo) ? ic.lo : 0;
  out.interaction_hi = std::isfinite(ic.hi) ? ic.hi : 0;
  const double observed_increase = out.observed_after_p99_s - out.observed_before_p99_s;
  const double v_all_mean = none_p99 - pall.mean;
  if (observed_increase > 0 && v_all_mean < observed_increase)
    out.unexplained = 1 - std::max(v_all_mean, 0.0) / observed_increase;
  for (int i = 0; i < k; ++i) {
    FactorShare fs;
    fs.factor = factors[static_cast<size_t>(i)];
    fs.hypothesis = std::string(HypothesisOf(fs.factor));
    fs.change = change[static_cast<size_t>(fs.factor)];
    switch (fs.factor) {
      case ReplayFactor::kCache: {
        bool new_template = false;
        std::map<std::string, int> ta_labels;
        for (uint32_t r : before.rows)
          ta_labels[std::string(before.table->label(r, SpanLabel::kTemplate))] = 1;
        for (uint32_t r : after.rows)
          if (!ta_labels.count(std::string(after.table->label(r, SpanLabel::kTemplate))))
            new_template = true;
        fs.cause = new_template ? "the template change (prefix-cache collapse)"
                                : "the prefix-cache collapse";
        break;
      }
      case ReplayFactor::kArrivals:
        fs.cause = new_tenant.empty() ? "the traffic surge" : "the new traffic";
        if (!new_tenant.empty()) fs.hypothesis = "traffic_mix";
        break;
      case ReplayFactor::kSpeed: fs.cause = "the slow replica"; break;
      case ReplayFactor::kReplicas: fs.cause = "the lost replicas"; break;
      case ReplayFactor::kPrompts: fs.cause = "the longer prompts"; break;
      case ReplayFactor::kOutputs: fs.cause = "the longer outputs"; break;
      case ReplayFactor::kSettings:
        // A raised max_model_len alone admits longer contexts into the same KV cache.
        fs.cause =
            settings_scheduler ? "the scheduler-settings change" : "the max_model_len change";
        if (!settings_scheduler) fs.hypothesis = "kv_pressure";
        break;
      case ReplayFactor::kFleetSpeed: fs.cause = "the fleet-wide slowdown"; break;
    }
    const MeanCi sh = MeanInterval(share[static_cast<size_t>(i)]);
    fs.share = std::isfinite(sh.mean) ? sh.mean : 0;
    fs.share_lo = std::isfinite(sh.lo) ? sh.lo : 0;
    fs.share_hi = std::isfinite(sh.hi) ? sh.hi : 0;
    const MeanCi si = MeanInterval(single[static_cast<size_t>(i)]);
    fs.single_share = std::isfinite(si.mean) ? si.mean : 0;
    fs.alone_p99_s = MeanInterval(alone[static_cast<size_t>(i)]).mean;
    out.factors.push_back(std::move(fs));
  }
  std::stable_sort(out.factors.begin(), out.factors.end(),
                   [](const FactorShare& x, const FactorShare& y) { return x.share > y.share; });
  return out;
}

std::string Headline(const Attribution& a) {
  if (!a.run) return "Attribution not run: " + a.not_run_reason + ".";
  // A share within half a point of zero prints as 0%, never "-0%".
  auto pct = [](double v) { return Pct(std::fabs(v) < 0.005 ? 0.0 : v); };
  if (!a.incident_check_ok && a.replay_none_p99_s < a.observed_after_lo_s / 1.1) {
    return fmt::format(
        "Attribution inconclusive: replayed as observed, the incident's requests give a p99 of "
        "{} against {} observed, so the replay misses what drove it (engine settings the spans "
        "do not carry, or a cause the replay cannot restore); no share is stated.",
        Secs(a.replay_none_p99_s), Secs(a.observed_after_p99_s));
  }
  if (!(a.replay_none_p99_s - a.replay_all_p99_s > 0)) {
    return fmt::format(
        "Attribution: restoring every candidate factor does not lower the replayed p99 ({} as "
        "observed, {} restored): the factors the replay can restore do not explain the increase.",
        Secs(a.replay_none_p99_s), Secs(a.replay_all_p99_s));
  }
  std::string s =
      fmt::format("{} cause{}: ", NumberWord(a.factors.size()), a.factors.size() == 1 ? "" : "s");
  for (size_t i = 0; i < a.factors.size(); ++i) {
    const FactorShare& f = a.factors[i];
    if (i > 0) s += ", ";
    s += f.cause;
    if (i == 0) {
      const bool plural = f.factor == ReplayFactor::kPrompts ||
                          f.factor == ReplayFactor::kOutputs || f.factor == ReplayFactor::kReplicas;
      s += plural ? " explain" : " explains";
    }
    s += " " + pct(f.share);
    if (a.seeds > 1 && pct(f.share_lo) != pct(f.share_hi)) {
      s += f.share_lo >= 0.005
               ? fmt::format(" ({}-{})", numfmt::Fixed(f.share_lo * 100, 0), pct(f.share_hi))
               : fmt::format(" ({} to {})", pct(f.share_lo), pct(f.share_hi));
    }
    if (i == 0) s += " of the p99 increase";
  }
  if (a.factors.size() > 1) {
    s += fmt::format("; {} interaction is {} of the increase (shared out in those shares)",
                     a.factors.size() == 2 ? "their" : "the causes'", pct(a.interaction));
  }
  s += ".";
  return s;
}

}  // namespace ttft
