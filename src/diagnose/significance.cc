// Diagnose() stage: significance of the change and the verdict (diagnose/stages.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "diagnose/stages.h"
#include "ttft/format.h"
#include "ttft/stats.h"

namespace ttft::diag {

using numfmt::Ratio;
using numfmt::Secs;
using numfmt::X;

std::vector<double> TtftSample(const SpanTable& t, std::span<const uint32_t> rows, int64_t max_n) {
  const auto ttft = t.ttft_s();
  const auto status = t.status();
  auto usable = [&](uint32_t r) { return status[r] == RequestStatus::kOk && !std::isnan(ttft[r]); };
  const auto m = static_cast<size_t>(std::count_if(rows.begin(), rows.end(), usable));
  std::vector<double> out;
  if (max_n <= 0 || m <= static_cast<size_t>(max_n)) {
    out.reserve(m);
    for (uint32_t r : rows) {
      if (usable(r)) out.push_back(ttft[r]);
    }
    return out;
  }
  // m > max_n: the step exceeds 1, so the picked indices strictly increase.
  const double step = static_cast<double>(m) / static_cast<double>(max_n);
  out.reserve(static_cast<size_t>(max_n));
  size_t k = 0;  // index among the usable values
  auto next = [&] { return static_cast<size_t>(static_cast<double>(out.size()) * step); };
  size_t want = next();
  for (uint32_t r : rows) {
    if (!usable(r)) continue;
    if (k++ != want) continue;
    out.push_back(ttft[r]);
    if (out.size() == static_cast<size_t>(max_n)) break;
    want = next();
  }
  return out;
}

double TailTestP(std::span<const double> a, std::span<const double> b) {
  if (a.empty() || b.empty()) return kMissing;
  std::vector<double> pooled(a.begin(), a.end());
  pooled.insert(pooled.end(), b.begin(), b.end());
  const double thr = Quantile(pooled, 0.99);
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double xa =
      static_cast<double>(std::count_if(a.begin(), a.end(), [&](double v) { return v > thr; }));
  const double xb =
      static_cast<double>(std::count_if(b.begin(), b.end(), [&](double v) { return v > thr; }));
  const double p = (xa + xb) / (na + nb);
  const double se = std::sqrt(p * (1 - p) * (1 / na + 1 / nb));
  if (se <= 0) return 1;
  const double z = (xb / nb - xa / na) / se;
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

Significance AssessSignificance(const WindowStats& baseline, const WindowStats& incident,
                                std::span<const double> sa, std::span<const double> sb,
                                bool per_request, const DiagnoseOptions& opt) {
  Significance s;
  s.enough = baseline.ok >= opt.min_ok_requests && incident.ok >= opt.min_ok_requests;
  s.p50_ratio = Ratio(baseline.ttft_s.p50, incident.ttft_s.p50);
  if (per_request && s.enough) {
    BootstrapOptions bo;
    bo.resamples = opt.bootstrap_resamples;
    s.p99_ratio = BootstrapQuantileRatioCI(sb, sa, 0.99, bo);
    const MannWhitneyResult mw = MannWhitney(sb, sa);
    s.mann_whitney_p = mw.p_value;
    s.hodges_lehmann_shift_s = mw.shift;
    s.tail_test_p = TailTestP(sa, sb);
  } else {
    s.p99_ratio.estimate = Ratio(baseline.ttft_s.p99, incident.ttft_s.p99);
  }
  if (!s.enough) {
    s.verdict = Verdict::kInsufficientData;
    s.verdict_reason = fmt::format(
        "insufficient data: {} ok requests in the baseline and {} in the incident; a p99 needs "
        "at least {} in each",
        baseline.ok, incident.ok, opt.min_ok_requests);
  } else if (per_request) {
    const bool material = s.p99_ratio.lower > opt.min_p99_ratio_lower;
    const bool mw_sig = s.mann_whitney_p < opt.alpha_per_test && s.hodges_lehmann_shift_s > 0;
    const bool tail_sig = s.tail_test_p < opt.alpha_per_test;
    s.verdict = material && (mw_sig || tail_sig) ? Verdict::kRegression : Verdict::kNoRegression;
    s.verdict_reason = fmt::format(
        "p99 TTFT {} -> {} ({}, 95% bootstrap CI [{}, {}]; material if the lower bound "
        "> {:.2f}); Mann-Whitney {}, tail test {} (significant below {:.3g})",
        Secs(baseline.ttft_s.p99), Secs(incident.ttft_s.p99), X(s.p99_ratio.estimate),
        numfmt::Fixed(s.p99_ratio.lower, 2), numfmt::Fixed(s.p99_ratio.upper, 2),
        opt.min_p99_ratio_lower, numfmt::PClause(s.mann_whitney_p), numfmt::PClause(s.tail_test_p),
        opt.alpha_per_test);
    if (s.verdict == Verdict::kNoRegression && s.p99_ratio.upper < 1) {
      s.verdict_reason += "; the tail improved";
    }
  } else {
    // Metrics only: no resampling; a material ratio of bucket quantiles and enough counts.
    // A p99 the buckets resolve only as a bound (in the first bucket, or above the last
    // finite one) gives the ratio as an interval: material only if its lower end is.
    const RatioBounds r = QuantileRatio(baseline.ttft_s, incident.ttft_s, 2);
    s.verdict = std::isfinite(r.lo) && r.lo > opt.min_p99_ratio_lower * 1.25
                    ? Verdict::kRegression
                    : Verdict::kNoRegression;
    s.verdict_reason = fmt::format(
        "p99 TTFT from histogram buckets {} -> {} ({}); without per-request values the verdict "
        "needs a ratio above {:.2f}",
        QuantileText(baseline.ttft_s, 2), QuantileText(incident.ttft_s, 2),
        QuantileRatioText(baseline.ttft_s, incident.ttft_s, 2), opt.min_p99_ratio_lower * 1.25);
  }
  return s;
}

}  // namespace ttft::diag
