// Bootstrap confidence intervals, the Mann-Whitney U test with the Hodges-Lehmann
// shift, and the prefix-cache hit rate (ttft/stats.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "stats/splitmix64.h"
#include "ttft/stats.h"

namespace ttft {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using stats_internal::SplitMix64;

void Resample(std::span<const double> values, SplitMix64& rng, std::vector<double>& out) {
  out.resize(values.size());
  for (double& v : out) v = values[rng.Below(values.size())];
}

ConfidenceInterval IntervalOf(std::vector<double>& stats, double estimate, double level) {
  ConfidenceInterval ci;
  ci.estimate = estimate;
  ci.level = level;
  std::erase_if(stats, [](double v) { return std::isnan(v); });
  if (stats.empty()) return ci;
  ci.lower = Quantile(stats, (1 - level) / 2);
  ci.upper = Quantile(stats, (1 + level) / 2);
  return ci;
}

double QuantileOfCopy(std::span<const double> values, double q) {
  std::vector<double> copy(values.begin(), values.end());
  return Quantile(copy, q);
}

// Inverse of the standard normal CDF by bisection on erfc (precise to 1e-12).
double NormalQuantile(double p) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200 && hi - lo > 1e-13; ++i) {
    const double mid = (lo + hi) / 2;
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return (lo + hi) / 2;
}

// Number of pairs (i, j) with x[i] - y[j] <= d. x and y sorted ascending. O(n + m).
int64_t CountPairsAtMost(std::span<const double> x, std::span<const double> y, double d) {
  int64_t count = 0;
  size_t first_ge = 0;  // first y >= x[i] - d; moves right as x[i] grows
  for (double xi : x) {
    // xi - y[j] is non-increasing in j and non-decreasing in xi (rounding is monotone).
    while (first_ge < y.size() && xi - y[first_ge] > d) ++first_ge;
    count += static_cast<int64_t>(y.size() - first_ge);
  }
  return count;
}

// The k-th smallest (1-based) pairwise difference x[i] - y[j], exactly.
double KthDifference(std::span<const double> x, std::span<const double> y, int64_t k) {
  double lo = x.front() - y.back();
  double hi = x.back() - y.front();
  if (CountPairsAtMost(x, y, lo) >= k) return lo;
  // Invariant: count(lo) < k <= count(hi).
  for (int i = 0; i < 200; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    if (CountPairsAtMost(x, y, mid) >= k) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  // Snap to the largest actual difference <= hi.
  double best = -std::numeric_limits<double>::infinity();
  size_t first_ge = 0;
  for (double xi : x) {
    while (first_ge < y.size() && xi - y[first_ge] > hi) ++first_ge;
    if (first_ge < y.size()) {
      // Smallest y >= xi - hi gives the largest difference <= hi for this xi.
      const double diff = xi - y[first_ge];
      if (diff <= hi) best = std::max(best, diff);
    }
  }
  return std::isinf(best) ? hi : best;
}

}  // namespace

ConfidenceInterval BootstrapQuantileCI(std::span<const double> values, double q,
                                       const BootstrapOptions& options) {
  ConfidenceInterval ci;
  ci.level = options.level;
  if (values.empty()) return ci;
  SplitMix64 rng(options.seed);
  std::vector<double> sample;
  std::vector<double> stats;
  stats.reserve(static_cast<size_t>(std::max(options.resamples, 0)));
  for (int r = 0; r < options.resamples; ++r) {
    Resample(values, rng, sample);
    stats.push_back(Quantile(sample, q));
  }
  return IntervalOf(stats, QuantileOfCopy(values, q), options.level);
}

ConfidenceInterval BootstrapQuantileRatioCI(std::span<const double> a, std::span<const double> b,
                                            double q, const BootstrapOptions& options) {
  ConfidenceInterval ci;
  ci.level = options.level;
  if (a.empty() || b.empty()) return ci;
  SplitMix64 rng(options.seed);
  std::vector<double> sa;
  std::vector<double> sb;
  std::vector<double> stats;
  for (int r = 0; r < options.resamples; ++r) {
    Resample(a, rng, sa);
    Resample(b, rng, sb);
    const double denom = Quantile(sb, q);
    stats.push_back(denom != 0 ? Quantile(sa, q) / denom : kNaN);
  }
  const double denom = QuantileOfCopy(b, q);
  return IntervalOf(stats, denom != 0 ? QuantileOfCopy(a, q) / denom : kNaN, options.level);
}

MannWhitneyResult MannWhitney(std::span<const double> x, std::span<const double> y, double level) {
  MannWhitneyResult r;
  r.level = level;
  if (x.empty() || y.empty()) return r;
  const double n1 = static_cast<double>(x.size());
  const double n2 = static_cast<double>(y.size());
  const size_t n = x.size() + y.size();
  // Pool, sort, assign average ranks, accumulate the tie term.
  std::vector<std::pair<double, bool>> pooled;  // (value, from x)
  pooled.reserve(n);
  for (double v : x) pooled.emplace_back(v, true);
  for (double v : y) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum_x = 0;
  double tie_term = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second) rank_sum_x += avg_rank;
    }
    tie_term += t * t * t - t;
    i = j;
  }
  const double nn = static_cast<double>(n);
  r.u = rank_sum_x - n1 * (n1 + 1) / 2;
  const double mean_u = n1 * n2 / 2;
  const double var_u = n1 * n2 / 12 * ((nn + 1) - tie_term / (nn * (nn - 1)));
  if (var_u <= 0) {
    r.z = 0;
    r.p_value = 1;
  } else {
    const double diff = r.u - mean_u;
    const double correction = diff > 0 ? 0.5 : (diff < 0 ? -0.5 : 0.0);
    r.z = (diff - correction) / std::sqrt(var_u);
    r.p_value = std::min(1.0, std::erfc(std::fabs(r.z) / std::sqrt(2.0)));
  }
  // Hodges-Lehmann shift and its distribution-free interval.
  std::vector<double> xs(x.begin(), x.end());
  std::vector<double> ys(y.begin(), y.end());
  std::sort(xs.begin(), xs.end());
  std::sort(ys.begin(), ys.end());
  const int64_t pairs = static_cast<int64_t>(xs.size()) * static_cast<int64_t>(ys.size());
  if (pairs % 2 == 1) {
    r.shift = KthDifference(xs, ys, (pairs + 1) / 2);
  } else {
    r.shift = (KthDifference(xs, ys, pairs / 2) + KthDifference(xs, ys, pairs / 2 + 1)) / 2;
  }
  const double z = NormalQuantile((1 + level) / 2);
  const double c = static_cast<double>(pairs) / 2 - z * std::sqrt(n1 * n2 * (nn + 1) / 12);
  const int64_t k = std::clamp<int64_t>(static_cast<int64_t>(std::floor(c)), 1, pairs);
  r.shift_lower = KthDifference(xs, ys, k);
  r.shift_upper = KthDifference(xs, ys, std::max<int64_t>(pairs + 1 - k, k));
  return r;
}

double PrefixCacheHitRate(std::span<const int64_t> cached_tokens,
                          std::span<const int64_t> prompt_tokens) {
  double hits = 0;
  double queries = 0;
  const size_t n = std::min(cached_tokens.size(), prompt_tokens.size());
  for (size_t i = 0; i < n; ++i) {
    if (cached_tokens[i] < 0 || prompt_tokens[i] < 0) continue;
    hits += static_cast<double>(cached_tokens[i]);
    queries += static_cast<double>(prompt_tokens[i]);
  }
  return queries > 0 ? hits / queries : kNaN;
}

}  // namespace ttft
