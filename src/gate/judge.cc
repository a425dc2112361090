// The canary judge (ttft/gate.h): per criterion an interval and a label, then the
// verdict. Kayenta's NetflixACAJudge is the anchor (MannWhitneyClassifier.scala): a
// label needs statistical significance AND an effect of at least the threshold.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ttft/gate.h"

namespace ttft {
namespace {

constexpr std::string_view kMetricNames[kNumGateMetrics] = {
    "ttft_p99", "queue_p99", "prefix_cache_hit_rate",  "error_rate",
    "ttft_p50", "itl_p99",   "preemptions_per_request"};

// Inverse of the standard normal CDF (Acklam's rational approximation, relative
// error < 1.2e-9; P. J. Acklam, "An algorithm for computing the inverse normal
// cumulative distribution function", 2003).
double NormalQuantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  if (p <= 0) return -INFINITY;
  if (p >= 1) return INFINITY;
  const double lo = 0.02425;
  if (p < lo) {
    double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - lo) return -NormalQuantile(1 - p);
  double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double UpperTail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

double QuantileOf(GateMetric m) { return m == GateMetric::kTtftP50 ? 0.5 : 0.99; }

bool Increases(GateDirection d) { return d != GateDirection::kDecrease; }
bool Decreases(GateDirection d) { return d != GateDirection::kIncrease; }

const std::vector<double>& SpanValues(const GateArm& arm, GateMetric m) {
  switch (m) {
    case GateMetric::kQueueP99: return arm.queue_s;
    case GateMetric::kItlP99: return arm.itl_s;
    default: return arm.ttft_s;
  }
}

const GateHistogram& HistOf(const GateArm& arm, GateMetric m) {
  switch (m) {
    case GateMetric::kQueueP99: return arm.queue_hist;
    case GateMetric::kItlP99: return arm.itl_hist;
    default: return arm.ttft_hist;
  }
}

// Labels an effect with an interval: High when the whole interval lies above `null`
// and the estimate reaches `high_at`; Low mirrored. Kayenta's rule with the
// interval's position as the significance test and the threshold as its effect size.
void LabelByInterval(CriterionResult& r, double null, double high_at, double low_at,
                     const std::string& what, double confidence) {
  const GateDirection d = r.criterion.direction;
  if (Increases(d) && r.effect >= high_at && r.effect_lower > null) {
    r.label = GateLabel::kHigh;
    r.rule = fmt::format(
        "{} {:.4g} >= threshold {:.4g} and its {:g}% interval [{:.4g}, {:.4g}] "
        "lies above {:g}",
        what, r.effect, high_at, 100 * confidence, r.effect_lower, r.effect_upper, null);
  } else if (Decreases(d) && r.effect <= low_at && r.effect_upper < null) {
    r.label = GateLabel::kLow;
    r.rule = fmt::format(
        "{} {:.4g} <= threshold {:.4g} and its {:g}% interval [{:.4g}, {:.4g}] "
        "lies below {:g}",
        what, r.effect, low_at, 100 * confidence, r.effect_lower, r.effect_upper, null);
  } else {
    r.label = GateLabel::kPass;
    const bool significant = r.effect_lower > null || r.effect_upper < null;
    r.rule = fmt::format(
        "{} {:.4g}, interval [{:.4g}, {:.4g}]: {}", what, r.effect, r.effect_lower, r.effect_upper,
        significant ? "significant but within the threshold" : "not significantly different");
  }
  r.harmful = r.label == GateLabel::kHigh || r.label == GateLabel::kLow;
}

bool NoData(CriterionResult& r, int64_t nb, int64_t nc, const std::string& what) {
  r.baseline_n = nb;
  r.canary_n = nc;
  if (nb >= r.criterion.min_samples && nc >= r.criterion.min_samples) return false;
  r.label = GateLabel::kNoData;
  r.rule = fmt::format("{}: baseline {} and canary {} samples, fewer than the minimum {}", what, nb,
                       nc, r.criterion.min_samples);
  return true;
}

// Two-proportion z statistic of k1/n1 against k2/n2 (pooled variance), positive
// when the first is larger.
double TwoProportionZ(double k1, double n1, double k2, double n2) {
  if (n1 <= 0 || n2 <= 0) return NAN;
  double p = (k1 + k2) / (n1 + n2);
  double se = std::sqrt(p * (1 - p) * (1 / n1 + 1 / n2));
  if (se <= 0) return 0;
  return (k1 / n1 - k2 / n2) / se;
}

// Observations of `h` above `bound` (a bucket bound of h, else the next one up).
double CountAbove(const GateHistogram& h, double bound) {
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    if (h.upper_bounds[i] >= bound * (1 - 1e-12)) return h.count - h.cumulative_counts[i];
  }
  return 0;
}

std::vector<Bucket> BucketsOf(const GateHistogram& h) {
  std::vector<Bucket> out;
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    out.push_back({h.upper_bounds[i], h.cumulative_counts[i]});
  }
  out.push_back({INFINITY, h.count});
  return out;
}

void JudgeQuantile(const GateConfig& config, const GateArm& b, const GateArm& c,
                   CriterionResult& r) {
  const GateMetric m = r.criterion.metric;
  const double q = QuantileOf(m);
  const double t = r.criterion.threshold;
  const std::string what = fmt::format("{} ratio", ToString(m));
  if (b.from_metrics || c.from_metrics) {
    const GateHistogram& hb = HistOf(b, m);
    const GateHistogram& hc = HistOf(c, m);
    if (NoData(r, static_cast<int64_t>(hb.count), static_cast<int64_t>(hc.count), what)) return;
    BucketQuantile qb = HistogramQuantile(q, BucketsOf(hb));
    BucketQuantile qc = HistogramQuantile(q, BucketsOf(hc));
    r.baseline = qb.value;
    r.canary = qc.value;
    r.effect = qc.value / qb.value;
    r.method = fmt::format(
        "histogram buckets: one-sided two-proportion z test ({:g}% confidence) on the share "
        "of observations above the other arm's p{:g} bucket bound",
        100 * config.confidence, 100 * q);
    const double alpha1 = (1 - config.confidence) / 2;
    // Canary heavier above the baseline's bound?
    double zc = TwoProportionZ(CountAbove(hc, qb.upper_bound), hc.count,
                               CountAbove(hb, qb.upper_bound), hb.count);
    double zb = TwoProportionZ(CountAbove(hb, qc.upper_bound), hb.count,
                               CountAbove(hc, qc.upper_bound), hc.count);
    const GateDirection d = r.criterion.direction;
    if (!std::isfinite(qb.upper_bound) || qb.in_inf_bucket) {
      r.label = GateLabel::kNoData;
      r.rule = "the baseline's quantile falls in the +Inf bucket: no bound to test against";
    } else if (Increases(d) && r.effect >= t && UpperTail(zc) < alpha1) {
      r.label = GateLabel::kHigh;
      r.rule = fmt::format(
          "{} {:.4g} >= threshold {:g} and the canary's share above {:g} s is "
          "significantly larger (z = {:.2f}, p = {:.2g})",
          what, r.effect, t, qb.upper_bound, zc, UpperTail(zc));
    } else if (Decreases(d) && r.effect <= 1 / t && std::isfinite(qc.upper_bound) &&
               UpperTail(zb) < alpha1) {
      r.label = GateLabel::kLow;
      r.rule = fmt::format(
          "{} {:.4g} <= {:.4g} and the baseline's share above {:g} s is "
          "significantly larger (z = {:.2f})",
          what, r.effect, 1 / t, qc.upper_bound, zb);
    } else {
      r.label = GateLabel::kPass;
      r.rule = fmt::format("{} {:.4g} (threshold {:g}); share test z = {:.2f}, p = {:.2g}", what,
                           r.effect, t, zc, UpperTail(zc));
    }
    r.harmful = r.label == GateLabel::kHigh || r.label == GateLabel::kLow;
    return;
  }
  const std::vector<double>& vb = SpanValues(b, m);
  const std::vector<double>& vc = SpanValues(c, m);
  if (NoData(r, static_cast<int64_t>(vb.size()), static_cast<int64_t>(vc.size()), what)) return;
  BootstrapOptions bo;
  bo.resamples = config.bootstrap_resamples;
  bo.level = config.confidence;
  ConfidenceInterval ci = BootstrapQuantileRatioCI(vc, vb, q, bo);
  r.effect = ci.estimate;
  r.effect_lower = ci.lower;
  r.effect_upper = ci.upper;
  // The quantiles themselves (type 7), for the report.
  auto quantile = [q](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    double h = (v.size() - 1) * q;
    size_t lo = static_cast<size_t>(std::floor(h));
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (h - lo) * (v[hi] - v[lo]);
  };
  r.baseline = quantile(vb);
  r.canary = quantile(vc);
  MannWhitneyResult mw = MannWhitney(vc, vb, config.confidence);
  r.mw_p = mw.p_value;
  r.hl_shift = mw.shift;
  r.hl_lower = mw.shift_lower;
  r.hl_upper = mw.shift_upper;
  r.method = fmt::format(
      "percentile bootstrap ({} resamples, {:g}%) of the p{:g} ratio; "
      "Mann-Whitney U with the Hodges-Lehmann shift",
      config.bootstrap_resamples, 100 * config.confidence, 100 * q);
  LabelByInterval(r, 1.0, t, 1 / t, what, config.confidence);
}

void JudgeHitRate(const GateConfig& config, const GateArm& b, const GateArm& c,
                  CriterionResult& r) {
  const std::string what = "prefix-cache hit rate change";
  const double z = NormalQuantile((1 + config.confidence) / 2);
  const double t = r.criterion.threshold;
  if (b.from_metrics || c.from_metrics) {
    if (!std::isfinite(b.query_tokens) || !std::isfinite(c.query_tokens)) {
      r.label = GateLabel::kNoData;
      r.rule = "no prefix-cache counters (hits and queries) in an arm's series";
      return;
    }
    if (NoData(r, static_cast<int64_t>(b.query_tokens), static_cast<int64_t>(c.query_tokens),
               what + " (tokens)")) {
      return;
    }
    double pb = b.hit_tokens / b.query_tokens, pc = c.hit_tokens / c.query_tokens;
    double se = std::sqrt(pb * (1 - pb) / b.query_tokens + pc * (1 - pc) / c.query_tokens);
    r.baseline = pb;
    r.canary = pc;
    r.effect = pc - pb;
    r.effect_lower = r.effect - z * se;
    r.effect_upper = r.effect + z * se;
    r.method = fmt::format(
        "counters: Wald {:g}% interval of the difference treating tokens as "
        "independent (narrower than the truth: tokens of a prompt hit "
        "together)",
        100 * config.confidence);
  } else {
    const auto& cb = b.cached_tokens;
    const auto& cc = c.cached_tokens;
    if (NoData(r, static_cast<int64_t>(cb.size()), static_cast<int64_t>(cc.size()), what)) return;
    // Ratio estimator sum(cached) / sum(prompt) and its delta-method variance
    // (Cochran, Sampling Techniques, 3rd ed., 6.3).
    auto ratio = [](const std::vector<double>& cached, const std::vector<double>& prompt,
                    double& var) {
      const double n = static_cast<double>(cached.size());
      double sc = std::accumulate(cached.begin(), cached.end(), 0.0);
      double sp = std::accumulate(prompt.begin(), prompt.end(), 0.0);
      if (sp <= 0) {
        var = kMissing;
        return kMissing;
      }
      double rr = sc / sp, ss = 0;
      for (size_t i = 0; i < cached.size(); ++i) {
        double e = cached[i] - rr * prompt[i];
        ss += e * e;
      }
      double mean_p = sp / n;
      var = ss / std::max(1.0, n - 1) / (n * mean_p * mean_p);
      return rr;
    };
    double vb = 0, vc = 0;
    r.baseline = ratio(cb, b.prompt_tokens, vb);
    r.canary = ratio(cc, c.prompt_tokens, vc);
    r.effect = r.canary - r.baseline;
    double se = std::sqrt(vb + vc);
    r.effect_lower = r.effect - z * se;
    r.effect_upper = r.effect + z * se;
    r.method = fmt::format("ratio estimator with delta-method variance, {:g}% interval",
                           100 * config.confidence);
  }
  if (!std::isfinite(r.effect)) {
    r.label = GateLabel::kNoData;
    r.rule = "no prompt tokens in an arm";
    return;
  }
  LabelByInterval(r, 0.0, t, -t, what, config.confidence);
}

void JudgeErrorRate(const GateConfig& config, const GateArm& b, const GateArm& c,
                    CriterionResult& r) {
  const std::string what = "error rate change";
  if (NoData(r, b.requests, c.requests, what)) return;
  const double z = NormalQuantile((1 + config.confidence) / 2);
  double nb = static_cast<double>(b.requests), nc = static_cast<double>(c.requests);
  double pb = b.errors / nb, pc = c.errors / nc;
  r.baseline = pb;
  r.canary = pc;
  r.effect = pc - pb;
  // Wald interval with the Agresti-Caffo adjustment (add one success and one failure
  // to each arm; Agresti & Caffo, Am. Stat. 54 (2000)) so that zero errors still give
  // a non-degenerate interval.
  double ab = (b.errors + 1) / (nb + 2), ac = (c.errors + 1) / (nc + 2);
  double se = std::sqrt(ab * (1 - ab) / (nb + 2) + ac * (1 - ac) / (nc + 2));
  double center = ac - ab;
  r.effect_lower = center - z * se;
  r.effect_upper = center + z * se;
  r.method = fmt::format("Agresti-Caffo {:g}% interval of the difference of proportions",
                         100 * config.confidence);
  LabelByInterval(r, 0.0, r.criterion.threshold, -r.criterion.threshold, what, config.confidence);
}

void JudgePreemptions(const GateConfig& config, const GateArm& b, const GateArm& c,
                      CriterionResult& r) {
  const std::string what = "preemptions per request change";
  const double z = NormalQuantile((1 + config.confidence) / 2);
  if (b.from_metrics || c.from_metrics) {
    if (!std::isfinite(b.preemption_count) || !std::isfinite(c.preemption_count)) {
      r.label = GateLabel::kNoData;
      r.rule = "no preemption counter in an arm's series";
      return;
    }
    if (NoData(r, static_cast<int64_t>(b.ttft_hist.count), static_cast<int64_t>(c.ttft_hist.count),
               what)) {
      return;
    }
    double nb = b.ttft_hist.count, nc = c.ttft_hist.count;
    r.baseline = b.preemption_count / nb;
    r.canary = c.preemption_count / nc;
    r.effect = r.canary - r.baseline;
    // Poisson counts: var(mean) = mean / n.
    double se = std::sqrt(r.baseline / nb + r.canary / nc);
    r.effect_lower = r.effect - z * se;
    r.effect_upper = r.effect + z * se;
    r.method = "counters: Poisson interval of the difference of rates";
  } else {
    const auto& vb = b.preemptions;
    const auto& vc = c.preemptions;
    if (NoData(r, static_cast<int64_t>(vb.size()), static_cast<int64_t>(vc.size()), what)) return;
    auto mean_var = [](const std::vector<double>& v, double& var) {
      double n = static_cast<double>(v.size());
      double m = std::accumulate(v.begin(), v.end(), 0.0) / n, ss = 0;
      for (double x : v) ss += (x - m) * (x - m);
      var = ss / std::max(1.0, n - 1) / n;
      return m;
    };
    double varb = 0, varc = 0;
    r.baseline = mean_var(vb, varb);
    r.canary = mean_var(vc, varc);
    r.effect = r.canary - r.baseline;
    double se = std::sqrt(varb + varc);
    r.effect_lower = r.effect - z * se;
    r.effect_upper = r.effect + z * se;
    r.method =
        fmt::format("Welch {:g}% interval of the difference of means", 100 * config.confidence);
  }
  LabelByInterval(r, 0.0, r.criterion.threshold, -r.criterion.threshold, what, config.confidence);
}

}  // namespace

std::string_view ToString(GateMetric m) { return kMetricNames[static_cast<int>(m)]; }

std::optional<GateMetric> ParseGateMetric(std::string_view name) {
  for (int i = 0; i < kNumGateMetrics; ++i) {
    if (kMetricNames[i] == name) return static_cast<GateMetric>(i);
  }
  return std::nullopt;
}

bool IsRatioMetric(GateMetric m) {
  return m == GateMetric::kTtftP99 || m == GateMetric::kQueueP99 || m == GateMetric::kTtftP50 ||
         m == GateMetric::kItlP99;
}

std::string_view ToString(GateDirection d) {
  switch (d) {
    case GateDirection::kIncrease: return "increase";
    case GateDirection::kDecrease: return "decrease";
    case GateDirection::kEither: return "either";
  }
  return "either";
}

std::string_view ToString(GateLabel l) {
  switch (l) {
    case GateLabel::kPass: return "Pass";
    case GateLabel::kHigh: return "High";
    case GateLabel::kLow: return "Low";
    case GateLabel::kNoData: return "NoData";
  }
  return "NoData";
}

std::string_view ToString(GateVerdict v) {
  switch (v) {
    case GateVerdict::kPass: return "Pass";
    case GateVerdict::kFail: return "Fail";
    case GateVerdict::kInconclusive: return "Inconclusive";
  }
  return "Inconclusive";
}

int GateExitCode(GateVerdict v) {
  switch (v) {
    case GateVerdict::kPass: return 0;
    case GateVerdict::kFail: return 1;
    case GateVerdict::kInconclusive: return 3;
  }
  return 3;
}

GateConfig DefaultGateConfig() {
  GateConfig c;
  c.criteria = {
      {GateMetric::kTtftP99, GateDirection::kIncrease, 1.5, 100, true},
      {GateMetric::kQueueP99, GateDirection::kIncrease, 2.0, 100, true},
      {GateMetric::kPrefixCacheHitRate, GateDirection::kDecrease, 0.10, 100, true},
      {GateMetric::kErrorRate, GateDirection::kIncrease, 0.02, 100, true},
  };
  return c;
}

GateResult JudgeGate(const GateConfig& config, const GateArm& baseline, const GateArm& canary) {
  GateResult out;
  out.confidence = config.confidence;
  if (!baseline.model.empty() && !canary.model.empty() && baseline.model != canary.model) {
    // The CLI reports this as a usage error before judging; a library caller gets
    // an Inconclusive verdict rather than a comparison of two different models.
    out.verdict = GateVerdict::kInconclusive;
    out.reason = fmt::format("baseline model '{}' and canary model '{}' differ", baseline.model,
                             canary.model);
    return out;
  }
  for (const GateCriterion& c : config.criteria) {
    CriterionResult r;
    r.criterion = c;
    switch (c.metric) {
      case GateMetric::kTtftP99:
      case GateMetric::kQueueP99:
      case GateMetric::kTtftP50:
      case GateMetric::kItlP99: JudgeQuantile(config, baseline, canary, r); break;
      case GateMetric::kPrefixCacheHitRate: JudgeHitRate(config, baseline, canary, r); break;
      case GateMetric::kErrorRate: JudgeErrorRate(config, baseline, canary, r); break;
      case GateMetric::kPreemptionsPerRequest: JudgePreemptions(config, baseline, canary, r); break;
    }
    out.criteria.push_back(std::move(r));
  }
  // The verdict: a harmful critical criterion fails the gate, as do two harmful
  // non-critical ones (Kayenta fails a critical metric alone and scores the rest);
  // a critical criterion without data makes it Inconclusive; otherwise Pass.
  int harmful_noncritical = 0;
  std::vector<std::string> failed, missing;
  for (const CriterionResult& r : out.criteria) {
    std::string name(ToString(r.criterion.metric));
    if (r.harmful && r.criterion.critical) failed.push_back(name);
    if (r.harmful && !r.criterion.critical) ++harmful_noncritical;
    if (r.label == GateLabel::kNoData && r.criterion.critical) missing.push_back(name);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!failed.empty()) {
    out.verdict = GateVerdict::kFail;
    out.reason = "critical criteria regressed: " + join(failed);
  } else if (harmful_noncritical >= 2) {
    out.verdict = GateVerdict::kFail;
    out.reason = fmt::format("{} non-critical criteria regressed", harmful_noncritical);
  } else if (!missing.empty()) {
    out.verdict = GateVerdict::kInconclusive;
    out.reason = "too little data for critical criteria: " + join(missing);
  } else if (out.criteria.empty()) {
    out.verdict = GateVerdict::kInconclusive;
    out.reason = "no criteria";
  } else {
    out.verdict = GateVerdict::kPass;
    out.reason = "no criterion regressed significantly beyond its threshold";
  }
  return out;
}

}  // namespace ttft
