// The canary judge (ttft/gate.h): per criterion an interval and a label, then the
// verdict. Kayenta's NetflixACAJudge is the anchor (MannWhitneyClassifier.scala): a
// label needs statistical significance AND an effect of at least the threshold.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ttft/format.h"
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
// The index of QuantileOf(m) in TermQuantiles::kQs.
size_t QuantileIndex(GateMetric m) { return m == GateMetric::kTtftP50 ? 0 : 2; }

bool Increases(GateDirection d) { return d != GateDirection::kDecrease; }
bool Decreases(GateDirection d) { return d != GateDirection::kIncrease; }

const std::vector<double>& SpanValues(const GateArm& arm, GateMetric m) {
  switch (m) {
    case GateMetric::kQueueP99: return arm.queue_s;
    case GateMetric::kItlP99: return arm.itl_s;
    default: return arm.ttft_s;
  }
}

// The arm's figures of the quantity a quantile metric compares.
const TermQuantiles& TermOf(const GateArm& arm, GateMetric m) {
  switch (m) {
    case GateMetric::kQueueP99: return arm.stats.queue_s;
    case GateMetric::kItlP99: return arm.stats.itl_s;
    default: return arm.stats.ttft_s;
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

void JudgeQuantile(const GateConfig& config, const GateArm& b, const GateArm& c,
                   CriterionResult& r) {
  const GateMetric m = r.criterion.metric;
  const double q = QuantileOf(m);
  const double t = r.criterion.threshold;
  const std::string what = fmt::format("{} ratio", ToString(m));
  const TermQuantiles& tb = TermOf(b, m);
  const TermQuantiles& tc = TermOf(c, m);
  if (b.from_metrics || c.from_metrics) {
    const GateHistogram& hb = HistOf(b, m);
    const GateHistogram& hc = HistOf(c, m);
    if (NoData(r, tb.count, tc.count, what)) return;
    // The quantiles and the buckets they lie in, as WindowStats has them.
    const BucketQuantile& qb = tb.buckets[QuantileIndex(m)];
    const BucketQuantile& qc = tc.buckets[QuantileIndex(m)];
    // A quantile in the first bucket or above the last finite bound is a bound, not the
    // figure interpolated there; the ratio is then the interval the buckets allow, and
    // the thresholds judge its conservative end.
    auto bound_of = [](const BucketQuantile& x) {
      return x.in_first_bucket ? "<=" : x.in_inf_bucket ? ">=" : "";
    };
    r.baseline_bound = bound_of(qb);
    r.canary_bound = bound_of(qc);
    r.baseline = qb.in_first_bucket ? qb.upper_bound : qb.value;
    r.canary = qc.in_first_bucket ? qc.upper_bound : qc.value;
    r.effect = qc.value / qb.value;
    const RatioBounds rb = QuantileRatio(tb, tc, QuantileIndex(m));
    const bool bounded = rb.lo < rb.hi;
    if (bounded) {
      r.effect_lower = rb.lo;
      r.effect_upper = rb.hi;
    }
    const double effect_lo = bounded ? rb.lo : r.effect, effect_hi = bounded ? rb.hi : r.effect;
    r.method = fmt::format(
        "histogram buckets: one-sided two-proportion z test ({:g}% confidence) on the share "
        "of observations above the other arm's p{:g} bucket bound{}",
        100 * config.confidence, 100 * q,
        bounded ? "; a quantile in the first bucket or above the last finite bound is a bound, "
                  "and the interval is the ratio the buckets allow"
                : "");
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
    } else if (Increases(d) && effect_lo >= t && UpperTail(zc) < alpha1) {
      r.label = GateLabel::kHigh;
      r.rule = fmt::format(
          "{} {}{:.4g} >= threshold {:g} and the canary's share above {:g} s is "
          "significantly larger (z = {:.2f}, {})",
          what, bounded ? "at least " : "", effect_lo, t, qb.upper_bound, zc,
          numfmt::PClause(UpperTail(zc)));
    } else if (Decreases(d) && effect_hi <= 1 / t && std::isfinite(qc.upper_bound) &&
               UpperTail(zb) < alpha1) {
      r.label = GateLabel::kLow;
      r.rule = fmt::format(
          "{} {}{:.4g} <= {:.4g} and the baseline's share above {:g} s is "
          "significantly larger (z = {:.2f})",
          what, bounded ? "at most " : "", effect_hi, 1 / t, qc.upper_bound, zb);
    } else {
      r.label = GateLabel::kPass;
      r.rule = fmt::format(
          "{} {} (threshold {:g}); share test z = {:.2f}, {}", what,
          bounded
              ? fmt::format("in [{:.4g}, {:.4g}] (the buckets resolve it no further)", rb.lo, rb.hi)
              : fmt::format("{:.4g}", r.effect),
          t, zc, numfmt::PClause(UpperTail(zc)));
    }
    r.harmful = r.label == GateLabel::kHigh || r.label == GateLabel::kLow;
    return;
  }
  const std::vector<double>& vb = SpanValues(b, m);
  const std::vector<double>& vc = SpanValues(c, m);
  if (NoData(r, tb.count, tc.count, what)) return;
  // The quantiles (type 7) and their ratio from WindowStats; the interval by
  // resampling the values behind them.
  r.baseline = tb.at(QuantileIndex(m));
  r.canary = tc.at(QuantileIndex(m));
  r.effect = r.baseline != 0 ? r.canary / r.baseline : kMissing;
  BootstrapOptions bo;
  bo.resamples = config.bootstrap_resamples;
  bo.level = config.confidence;
  ConfidenceInterval ci = BootstrapQuantileRatioCI(vc, vb, q, bo);
  r.effect_lower = ci.lower;
  r.effect_upper = ci.upper;
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
  const WindowStats& wb = b.stats;
  const WindowStats& wc = c.stats;
  if (b.from_metrics || c.from_metrics) {
    const double nb = wb.prefix_cache_query_tokens, nc = wc.prefix_cache_query_tokens;
    if (std::isnan(nb) || std::isnan(nc)) {
      r.label = GateLabel::kNoData;
      r.rule = "no prefix-cache counters (hits and queries) in an arm's series";
      return;
    }
    if (NoData(r, static_cast<int64_t>(nb), static_cast<int64_t>(nc), what + " (tokens)")) {
      return;
    }
    const double pb = wb.prefix_cache_hit_rate, pc = wc.prefix_cache_hit_rate;
    double se = std::sqrt(pb * (1 - pb) / nb + pc * (1 - pc) / nc);
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
    // The ratio estimator R = sum(cached) / sum(prompt) is WindowStats' hit rate; its
    // delta-method variance from the requests' residuals cached - R prompt (Cochran,
    // Sampling Techniques, 3rd ed., 6.3).
    auto variance = [](const std::vector<double>& cached, const std::vector<double>& prompt,
                       const WindowStats& w) {
      const double n = static_cast<double>(cached.size());
      const double rr = w.prefix_cache_hit_rate;
      double ss = 0;
      for (size_t i = 0; i < cached.size(); ++i) {
        double e = cached[i] - rr * prompt[i];
        ss += e * e;
      }
      const double mean_p = w.prefix_cache_query_tokens / n;
      return ss / std::max(1.0, n - 1) / (n * mean_p * mean_p);
    };
    r.baseline = wb.prefix_cache_hit_rate;
    r.canary = wc.prefix_cache_hit_rate;
    r.effect = r.canary - r.baseline;
    double se = std::sqrt(variance(cb, b.prompt_tokens, wb) + variance(cc, c.prompt_tokens, wc));
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
  const WindowStats& wb = b.stats;
  const WindowStats& wc = c.stats;
  if (NoData(r, wb.error_rate_requests, wc.error_rate_requests, what)) return;
  const double z = NormalQuantile((1 + config.confidence) / 2);
  const double nb = static_cast<double>(wb.error_rate_requests);
  const double nc = static_cast<double>(wc.error_rate_requests);
  r.baseline = wb.error_rate;
  r.canary = wc.error_rate;
  r.effect = r.canary - r.baseline;
  // Wald interval with the Agresti-Caffo adjustment (add one success and one failure
  // to each arm; Agresti & Caffo, Am. Stat. 54 (2000)) so that zero errors still give
  // a non-degenerate interval.
  const double ab = (static_cast<double>(wb.errors) + 1) / (nb + 2);
  const double ac = (static_cast<double>(wc.errors) + 1) / (nc + 2);
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
  const WindowStats& wb = b.stats;
  const WindowStats& wc = c.stats;
  if (b.from_metrics || c.from_metrics) {
    // WindowStats: the preemption counter's increase over the requests (TTFT count);
    // NaN without the counter.
    auto no_counter = [](const WindowStats& w) {
      return std::isnan(w.preemptions_per_request) && w.requests > 0;
    };
    if (no_counter(wb) || no_counter(wc)) {
      r.label = GateLabel::kNoData;
      r.rule = "no preemption counter in an arm's series";
      return;
    }
    if (NoData(r, wb.requests, wc.requests, what)) return;
    const double nb = static_cast<double>(wb.requests), nc = static_cast<double>(wc.requests);
    r.baseline = wb.preemptions_per_request;
    r.canary = wc.preemptions_per_request;
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
    // The means are WindowStats' preemptions per request (over the same requests);
    // the variance of each mean from the values.
    auto variance = [](const std::vector<double>& v, double mean) {
      const double n = static_cast<double>(v.size());
      double ss = 0;
      for (double x : v) ss += (x - mean) * (x - mean);
      return ss / std::max(1.0, n - 1) / n;
    };
    r.baseline = wb.preemptions_per_request;
    r.canary = wc.preemptions_per_request;
    r.effect = r.canary - r.baseline;
    double se = std::sqrt(variance(vb, r.baseline) + variance(vc, r.canary));
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
