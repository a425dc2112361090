// Repeated looks (ttft/gate.h): a mixture SPRT per tail indicator, with a state that
// survives between invocations as JSON.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "ttft/gate.h"

namespace ttft {
namespace {

// One-sided upper Wilson score bound of k successes in n at normal quantile z
// (Wilson, JASA 22 (1927)).
double WilsonUpper(double k, double n, double z) {
  if (n <= 0) return 1;
  double p = k / n, z2 = z * z;
  double center = (p + z2 / (2 * n)) / (1 + z2 / n);
  double half = z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n);
  return std::min(1.0, center + half);
}

// The one-sided 99.5% normal quantile for p0's Wilson bound.
constexpr double kP0Z = 2.5758293035489004;

// The number of mixture terms for p0: one per ratio r with p0 r < 1 (a probability).
size_t MixtureSize(double p0) {
  size_t n = 0;
  for (double r : SequentialStream::kRatios) n += p0 * r < 1 ? 1 : 0;
  return n;
}

// The most one observation moves a mixture component's log: max over the ratios r
// of |log r| (an exceedance) and |log((1 - p0 r) / (1 - p0))| (none).
double MaxLogStep(double p0) {
  double m = 0;
  for (double r : SequentialStream::kRatios) {
    if (p0 * r >= 1) continue;
    m = std::max({m, std::fabs(std::log(r)), std::fabs(std::log((1 - p0 * r) / (1 - p0)))});
  }
  return m;
}

// Bounds on a state file's counts: n and k exact in a double, looks far from INT_MAX.
constexpr int64_t kMaxN = int64_t{1} << 53;
constexpr int kMaxLooks = 1 << 30;

// A count of a state file: a JSON integer >= 0, else nullopt. nlohmann's get<int64_t>
// casts a float with static_cast: undefined beyond int64's range (2.9e28, found by
// gate_config_fuzz), truncating below it (1.5 read as 1). The looks write integers.
std::optional<int64_t> WholeCount(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
  return std::nullopt;
}

SequentialStream MakeStream(std::string name, double bound, double k, double n) {
  SequentialStream s;
  s.name = std::move(name);
  s.bound = bound;
  s.p0 = std::clamp(WilsonUpper(k, n, kP0Z), 1e-6, 0.5);
  s.log_components.assign(MixtureSize(s.p0), 0.0);
  return s;
}

int64_t CountAboveSorted(const std::vector<double>& v, double bound) {
  int64_t k = 0;
  for (double x : v) k += x > bound;
  return k;
}

// Canary observations of `values` (parallel to `arrivals`) after `after_s`.
void NewSince(const std::vector<double>& values, const std::vector<double>& arrivals,
              double after_s, double bound, int64_t& n, int64_t& k) {
  n = k = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (arrivals[i] <= after_s) continue;
    ++n;
    k += values[i] > bound;
  }
}

double HistCountAbove(const GateHistogram& h, double bound) {
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    if (h.upper_bounds[i] >= bound * (1 - 1e-12)) return h.count - h.cumulative_counts[i];
  }
  return 0;
}

// The upper bound of the bucket WindowStats puts the p99 in (NaN when in +Inf).
double P99BucketBound(const TermQuantiles& t) {
  static_assert(TermQuantiles::kQs[2] == 0.99);
  const BucketQuantile& q = t.buckets[2];
  return q.in_inf_bucket ? NAN : q.upper_bound;
}

}  // namespace

double SequentialStream::LogThreshold(double alpha, size_t streams) {
  return std::log(static_cast<double>(std::max<size_t>(1, streams)) / alpha);
}

void SequentialStream::Add(int64_t n_new, int64_t k_new) {
  n += n_new;
  k += k_new;
  size_t j = 0;
  for (double r : kRatios) {
    const double theta = p0 * r;
    if (theta >= 1) continue;
    if (j >= log_components.size()) break;
    log_components[j] += static_cast<double>(k_new) * std::log(theta / p0) +
                         static_cast<double>(n_new - k_new) * std::log((1 - theta) / (1 - p0));
    ++j;
  }
  // log of the mean of exp(log_components), stably.
  double mx = -INFINITY;
  for (double l : log_components) mx = std::max(mx, l);
  double sum = 0;
  for (double l : log_components) sum += std::exp(l - mx);
  log_lr =
      log_components.empty() ? 0 : mx + std::log(sum / static_cast<double>(log_components.size()));
}

nlohmann::json SequentialGate::ToJson() const {
  nlohmann::json j;
  j["alpha"] = alpha;
  j["looks"] = looks;
  j["last_canary_arrival_s"] =
      std::isfinite(last_canary_arrival_s) ? nlohmann::json(last_canary_arrival_s) : nullptr;
  j["log_threshold"] = SequentialStream::LogThreshold(alpha, streams.size());
  j["streams"] = nlohmann::json::array();
  for (const SequentialStream& s : streams) {
    j["streams"].push_back({{"name", s.name},
                            {"bound", std::isfinite(s.bound) ? nlohmann::json(s.bound) : nullptr},
                            {"p0", s.p0},
                            {"n", s.n},
                            {"k", s.k},
                            {"log_components", s.log_components},
                            {"log_lr", s.log_lr},
                            {"rejected", s.rejected}});
  }
  return j;
}

Result<SequentialGate> SequentialGate::FromJson(const nlohmann::json& j, const std::string& name) {
  SequentialGate g;
  try {
    g.alpha = j.at("alpha").get<double>();
    const std::optional<int64_t> looks = WholeCount(j.at("looks"));  // int would wrap
    if (!looks || *looks > kMaxLooks) {
      return Status::Invalid(
          fmt::format("{}: impossible look count {}", name, j.at("looks").dump()));
    }
    g.looks = static_cast<int>(*looks);
    const auto& last = j.at("last_canary_arrival_s");
    g.last_canary_arrival_s = last.is_null() ? -INFINITY : last.get<double>();
    for (const auto& s : j.at("streams")) {
      SequentialStream st;
      st.name = s.at("name").get<std::string>();
      st.bound = s.at("bound").is_null() ? NAN : s.at("bound").get<double>();
      st.p0 = s.at("p0").get<double>();
      st.n = WholeCount(s.at("n")).value_or(-1);  // -1: rejected below
      st.k = WholeCount(s.at("k")).value_or(-1);
      st.log_components = s.at("log_components").get<std::vector<double>>();
      st.log_lr = s.at("log_lr").get<double>();
      st.rejected = s.at("rejected").get<bool>();
      // What the state's own looks could have written, and nothing else: a stream the
      // look does not know is fed as an error rate, components that are not one per
      // mixture ratio or not finite would decide the verdict, and n beyond 2^53 stops
      // counting (doubles).
      auto bad = [&](std::string_view what) {
        return Status::Invalid(fmt::format("{}: stream '{}': {}", name, st.name, what));
      };
      if (!(st.p0 > 0 && st.p0 < 1) || st.n < 0 || st.k < 0 || st.k > st.n || st.n > kMaxN) {
        return bad("impossible p0, n or k");
      }
      const bool latency = st.name == "ttft_p99" || st.name == "queue_p99";
      if (!latency && st.name != "error_rate") {
        return bad("not a stream of the gate (ttft_p99, queue_p99, error_rate)");
      }
      for (const SequentialStream& other : g.streams) {
        if (other.name == st.name) return bad("twice");
      }
      if (latency ? !(std::isfinite(st.bound) && st.bound >= 0) : !std::isnan(st.bound)) {
        return bad(latency ? "bound must be a number >= 0" : "bound must be null");
      }
      if (st.log_components.size() != MixtureSize(st.p0)) {
        return bad(fmt::format("{} log_components for p0 {:g}, expected {}",
                               st.log_components.size(), st.p0, MixtureSize(st.p0)));
      }
      // Each observation moves a component by at most MaxLogStep(p0): so do n of them.
      const double reach = static_cast<double>(st.n) * MaxLogStep(st.p0) * (1 + 1e-9) + 1e-9;
      bool possible = std::isfinite(st.log_lr);
      for (double l : st.log_components) possible = possible && std::fabs(l) <= reach;
      if (!possible) {
        return bad(fmt::format("log_components beyond what {} observations can give", st.n));
      }
      g.streams.push_back(std::move(st));
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Invalid(fmt::format("{}: not a gate state file: {}", name, e.what()));
  }
  if (!(g.alpha > 0 && g.alpha < 0.5)) {
    return Status::Invalid(fmt::format("{}: impossible alpha", name));
  }
  if (!(std::isfinite(g.last_canary_arrival_s) || g.last_canary_arrival_s == -INFINITY)) {
    return Status::Invalid(fmt::format("{}: last_canary_arrival_s must be a number or null", name));
  }
  return g;
}

GateResult LookSequential(const GateConfig& config, const GateArm& baseline, const GateArm& canary,
                          const GateArm* canary_increase, bool final_look, SequentialGate& state) {
  const GateArm& inc = canary_increase != nullptr ? *canary_increase : canary;
  GateResult fixed = JudgeGate(config, baseline, canary);
  state.alpha = config.sequential_alpha;
  ++state.looks;
  auto has = [&](GateMetric m) {
    for (const GateCriterion& c : config.criteria) {
      if (c.metric == m) return true;
    }
    return false;
  };
  auto min_for = [&](GateMetric m) {
    int64_t v = 0;
    for (const GateCriterion& c : config.criteria) {
      if (c.metric == m) v = std::max(v, c.min_samples);
    }
    return v;
  };
  const bool metrics = baseline.from_metrics || canary.from_metrics;
  // First look with enough baseline: fix each stream's bound and p0.
  if (state.streams.empty()) {
    // The bound of a latency stream: the baseline's p99 from WindowStats (exact for
    // spans, its bucket's upper bound for metrics); p0 from the baseline's own
    // samples above it.
    auto latency_stream = [&](GateMetric m, const char* name, const TermQuantiles& t,
                              const GateHistogram& hist, const std::vector<double>& values) {
      if (!has(m) || t.count < std::max<int64_t>(500, min_for(m))) return;
      if (metrics) {
        const double b = P99BucketBound(t);
        if (std::isfinite(b)) {
          state.streams.push_back(MakeStream(name, b, HistCountAbove(hist, b), hist.count));
        }
      } else {
        state.streams.push_back(MakeStream(name, t.p99, CountAboveSorted(values, t.p99),
                                           static_cast<double>(values.size())));
      }
    };
    latency_stream(GateMetric::kTtftP99, "ttft_p99", baseline.stats.ttft_s, baseline.ttft_hist,
                   baseline.ttft_s);
    latency_stream(GateMetric::kQueueP99, "queue_p99", baseline.stats.queue_s, baseline.queue_hist,
                   baseline.queue_s);
    const WindowStats& wb = baseline.stats;
    if (has(GateMetric::kErrorRate) && wb.error_rate_requests >= min_for(GateMetric::kErrorRate)) {
      state.streams.push_back(MakeStream("error_rate", NAN, static_cast<double>(wb.errors),
                                         static_cast<double>(wb.error_rate_requests)));
    }
  }
  // Feed the canary's new observations.
  double last = state.last_canary_arrival_s;
  for (SequentialStream& s : state.streams) {
    int64_t n = 0, k = 0;
    if (metrics) {
      if (s.name == "ttft_p99") {
        n = static_cast<int64_t>(inc.ttft_hist.count);
        k = static_cast<int64_t>(HistCountAbove(inc.ttft_hist, s.bound));
      } else if (s.name == "queue_p99") {
        n = static_cast<int64_t>(inc.queue_hist.count);
        k = static_cast<int64_t>(HistCountAbove(inc.queue_hist, s.bound));
      } else {
        n = inc.stats.error_rate_requests;
        k = inc.stats.errors;
      }
    } else if (s.name == "ttft_p99") {
      NewSince(canary.ttft_s, canary.ttft_arrival_s, last, s.bound, n, k);
    } else if (s.name == "queue_p99") {
      NewSince(canary.queue_s, canary.queue_arrival_s, last, s.bound, n, k);
    } else {
      for (double a : canary.request_arrival_s) n += a > last;
      for (double a : canary.error_arrival_s) k += a > last;
    }
    s.Add(n, k);
  }
  if (!metrics && !canary.request_arrival_s.empty()) {
    state.last_canary_arrival_s = std::max(last, canary.request_arrival_s.back());
  }
  const double log_t = SequentialStream::LogThreshold(state.alpha, state.streams.size());
  std::vector<std::string> rejected;
  for (SequentialStream& s : state.streams) {
    if (s.log_lr >= log_t) s.rejected = true;
    if (s.rejected) rejected.push_back(s.name);
  }
  GateResult out = fixed;
  out.sequential = state.ToJson();
  if (!rejected.empty()) {
    out.verdict = GateVerdict::kFail;
    std::string names;
    for (const auto& n : rejected) names += (names.empty() ? "" : ", ") + n;
    out.reason = fmt::format(
        "look {}: the sequential test rejected {} (mixture likelihood ratio >= {:.4g} = "
        "streams / alpha {:g}; always valid over any number of looks)",
        state.looks, names, std::exp(log_t), state.alpha);
    return out;
  }
  if (state.streams.empty()) {
    out.verdict = GateVerdict::kInconclusive;
    out.reason = fmt::format(
        "look {}: too little baseline data to fix the sequential test's "
        "bounds (>= 500 requests)",
        state.looks);
    return out;
  }
  if (!final_look) {
    out.verdict = GateVerdict::kInconclusive;
    out.reason =
        fmt::format("look {}: no stream has strong enough evidence yet; keep looking", state.looks);
    return out;
  }
  // The final look: Pass unless the fixed judge fails a criterion the sequential test
  // does not cover, or lacks data for a critical one.
  out.verdict = GateVerdict::kPass;
  out.reason = fmt::format("final look {}: no sequential stream rejected", state.looks);
  for (const CriterionResult& r : fixed.criteria) {
    const GateMetric m = r.criterion.metric;
    const bool covered =
        (m == GateMetric::kTtftP99 || m == GateMetric::kQueueP99 || m == GateMetric::kErrorRate);
    if (r.label == GateLabel::kNoData && r.criterion.critical) {
      out.verdict = GateVerdict::kInconclusive;
      out.reason = fmt::format("final look {}: too little data for {}", state.looks, ToString(m));
    }
    if (!covered && r.harmful && r.criterion.critical) {
      out.verdict = GateVerdict::kFail;
      out.reason = fmt::format("final look {}: {} regressed (fixed-horizon judge)", state.looks,
                               ToString(m));
      break;
    }
  }
  return out;
}

}  // namespace ttft
