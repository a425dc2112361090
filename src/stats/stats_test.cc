// Tests for ttft/stats.h.
#include "ttft/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace ttft {
namespace {

std::vector<double> Pareto(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = 0.02 / std::pow(1 - u(rng), 1 / 1.2);  // heavy tail, alpha 1.2
  return v;
}

double LowerOrderStatistic(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::floor(q * static_cast<double>(v.size() - 1)))];
}

TEST(Quantile, Type7MatchesNumpy) {
  std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(Quantile(v, 0.5), 2.5);
  std::vector<double> w = {10, 0, 5};
  EXPECT_DOUBLE_EQ(Quantile(w, 0.99), 9.9);
  std::vector<double> empty;
  EXPECT_TRUE(std::isnan(Quantile(empty, 0.5)));
}

// SelectOrderStats against a full sort, over the shapes that stress a sample bracket:
// heavy ties, sorted and reversed input, one repeated value, and every kind of rank.
template <typename T>
void ExpectOrderStatsLikeSort(std::vector<T> v, const char* what) {
  std::vector<T> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = v.size();
  std::vector<size_t> ks = {0,     1,    n / 3, n / 2, n * 9 / 10, n * 99 / 100, n * 999 / 1000,
                            n - 2, n - 1};
  // The last rank of a run of ties: rank k + 1 then holds the next value up, which a
  // sample bracket ending at this value does not contain.
  for (size_t k = 0; k + 1 < n && ks.size() < 40; ++k) {
    if (sorted[k] != sorted[k + 1]) ks.push_back(k);
  }
  for (size_t k : ks) {
    std::vector<T> work = v;
    const OrderStats<T> os = SelectOrderStats(std::span<T>(work), k);
    EXPECT_EQ(os.first, sorted[k]) << what << " n=" << n << " k=" << k;
    EXPECT_EQ(os.second, sorted[std::min(k + 1, n - 1)]) << what << " n=" << n << " k=" << k;
    std::sort(work.begin(), work.end());
    EXPECT_EQ(work, sorted) << what << ": the values themselves must survive";
  }
}

TEST(SelectOrderStats, EqualsSortOnEveryShape) {
  std::mt19937_64 rng(42);
  for (size_t n : {size_t{10}, size_t{4095}, size_t{4096}, size_t{50000}, size_t{300001}}) {
    std::vector<double> lognormal(n);
    std::lognormal_distribution<double> ln(0.0, 1.5);
    for (double& x : lognormal) x = ln(rng);
    ExpectOrderStatsLikeSort(lognormal, "lognormal");
    std::vector<double> ascending = lognormal;
    std::sort(ascending.begin(), ascending.end());
    ExpectOrderStatsLikeSort(ascending, "ascending");
    ExpectOrderStatsLikeSort(std::vector<double>(ascending.rbegin(), ascending.rend()),
                             "descending");
    std::vector<float> floats(n);
    for (size_t i = 0; i < n; ++i) floats[i] = static_cast<float>(lognormal[i]);
    ExpectOrderStatsLikeSort(floats, "float");
    std::vector<int32_t> ties(n);  // a handful of distinct values, heavily tied
    for (int32_t& x : ties) x = static_cast<int32_t>(rng() % 7) * 1000 - 3000;
    ExpectOrderStatsLikeSort(ties, "ties");
    ExpectOrderStatsLikeSort(std::vector<int32_t>(n, 5), "constant");
    std::vector<int32_t> extremes(n);  // the type's own limits inside the data
    for (size_t i = 0; i < n; ++i) {
      extremes[i] = i % 3 == 0   ? std::numeric_limits<int32_t>::max()
                    : i % 3 == 1 ? std::numeric_limits<int32_t>::lowest()
                                 : static_cast<int32_t>(rng() % 100);
    }
    ExpectOrderStatsLikeSort(extremes, "extremes");
    std::vector<double> infinite = lognormal;  // infinities at both ends
    for (size_t i = 0; i < n; i += 5) infinite[i] = (i / 5) % 2 ? HUGE_VAL : -HUGE_VAL;
    ExpectOrderStatsLikeSort(infinite, "infinite");
  }
}

TEST(Quantile, LargeInputsEqualTheSortedDefinition) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> ln(-1.0, 1.2);
  std::vector<double> v(200000);
  for (double& x : v) x = ln(rng);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (double q : {0.0, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    const double h = (static_cast<double>(v.size()) - 1) * q;
    const auto lo = static_cast<size_t>(std::floor(h));
    const double want = lo + 1 < v.size() ? sorted[lo] + (h - static_cast<double>(lo)) *
                                                             (sorted[lo + 1] - sorted[lo])
                                          : sorted[lo];
    std::vector<double> work = v;
    EXPECT_EQ(Quantile(work, q), want) << "q=" << q;
  }
}

TEST(DDSketch, RelativeErrorOnHeavyTail) {
  const auto values = Pareto(200000, 7);
  DDSketch sketch;
  sketch.AddAll(values);
  ASSERT_EQ(sketch.count(), 200000);
  for (double q : {0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999}) {
    const double exact = LowerOrderStatistic(values, q);
    const double est = sketch.Quantile(q);
    EXPECT_LE(std::fabs(est - exact), 0.005 * exact * (1 + 1e-9)) << "q=" << q;
  }
  EXPECT_EQ(sketch.Quantile(0), *std::min_element(values.begin(), values.end()));
  EXPECT_EQ(sketch.Quantile(1), *std::max_element(values.begin(), values.end()));
}

TEST(DDSketch, MergeEqualsSingleSketch) {
  const auto values = Pareto(50000, 11);
  DDSketch whole;
  whole.AddAll(values);
  std::vector<DDSketch> parts(7);
  for (size_t i = 0; i < values.size(); ++i) parts[i % 7].Add(values[i]);
  DDSketch merged;
  for (const auto& p : parts) ASSERT_TRUE(merged.Merge(p).ok());
  EXPECT_EQ(merged.count(), whole.count());
  for (double q : {0.5, 0.9, 0.99, 0.999}) EXPECT_EQ(merged.Quantile(q), whole.Quantile(q));
}

TEST(DDSketch, MergeRejectsDifferentAlpha) {
  DDSketch a(0.005), b(0.01);
  b.Add(1.0);
  EXPECT_FALSE(a.Merge(b).ok());
}

TEST(DDSketch, ZeroNegativeAndNaN) {
  DDSketch s;
  s.Add(0);
  s.Add(-1);
  s.Add(std::nan(""));
  s.Add(2);
  EXPECT_EQ(s.count(), 2);
  EXPECT_EQ(s.rejected(), 2);
  EXPECT_EQ(s.Quantile(0.25), 0.0);
  EXPECT_TRUE(std::isnan(DDSketch().Quantile(0.5)));
}

TEST(DDSketch, CollapsesLowestBucketsKeepingHighQuantiles) {
  DDSketch s(0.005, 1e-9, 64);
  std::vector<double> v;
  for (int i = 0; i < 10000; ++i) v.push_back(1e-6 * std::pow(1.005, i % 3000));
  s.AddAll(v);
  EXPECT_TRUE(s.collapsed());
  EXPECT_LE(s.buckets_in_use(), 64u);
  const double exact = LowerOrderStatistic(v, 0.99);
  EXPECT_LE(std::fabs(s.Quantile(0.99) - exact), 0.005 * exact * (1 + 1e-9));
}

TEST(HistogramQuantile, InterpolatesLikePromQL) {
  // 10 observations: 2 in (0, 0.1], 6 in (0.1, 0.5], 2 in (0.5, +Inf).
  std::vector<Bucket> b = {{0.1, 2}, {0.5, 8}, {1.0, 10}, {INFINITY, 10}};
  auto r = HistogramQuantile(0.5, b);
  // rank 5: bucket (0.1, 0.5], 3 of its 6 => 0.1 + 0.4 * 3/6 = 0.3
  EXPECT_DOUBLE_EQ(r.value, 0.3);
  EXPECT_EQ(r.lower_bound, 0.1);
  EXPECT_EQ(r.upper_bound, 0.5);
  EXPECT_FALSE(r.in_first_bucket);
  auto first = HistogramQuantile(0.1, b);
  EXPECT_TRUE(first.in_first_bucket);
  EXPECT_DOUBLE_EQ(first.value, 0.05);
}

TEST(HistogramQuantile, InfBucketReturnsHighestFiniteBound) {
  std::vector<Bucket> b = {{0.3, 0}, {0.5, 1}, {INFINITY, 10}};
  auto r = HistogramQuantile(0.99, b);
  EXPECT_TRUE(r.in_inf_bucket);
  EXPECT_EQ(r.value, 0.5);
}

TEST(HistogramQuantile, EdgeCases) {
  EXPECT_TRUE(std::isnan(HistogramQuantile(0.5, {{1, 1}, {2, 2}}).value));  // no +Inf
  EXPECT_TRUE(std::isnan(HistogramQuantile(0.5, {{1, 0}, {INFINITY, 0}}).value));
  EXPECT_EQ(HistogramQuantile(-1, {{1, 1}, {INFINITY, 1}}).value, -INFINITY);
  EXPECT_EQ(HistogramQuantile(2, {{1, 1}, {INFINITY, 1}}).value, INFINITY);
  // Non-monotonic counts are fixed up, unsorted input is sorted.
  auto r = HistogramQuantile(0.5, {{INFINITY, 4}, {2, 3}, {1, 4}});
  EXPECT_DOUBLE_EQ(r.value, 0.5);
}

TEST(Bootstrap, DeterministicAndCoversTruth) {
  const auto v = Pareto(5000, 3);
  auto a = BootstrapQuantileCI(v, 0.99);
  auto b = BootstrapQuantileCI(v, 0.99);
  EXPECT_EQ(a.lower, b.lower);
  EXPECT_EQ(a.upper, b.upper);
  EXPECT_LT(a.lower, a.estimate);
  EXPECT_GT(a.upper, a.estimate);
  // True p99 of this Pareto: 0.02 * 100^(1/1.2).
  const double truth = 0.02 * std::pow(100.0, 1 / 1.2);
  EXPECT_LT(a.lower, truth);
  EXPECT_GT(a.upper, truth);
}

TEST(Bootstrap, RatioOfP99s) {
  auto base = Pareto(4000, 5);
  auto slow = Pareto(4000, 6);
  for (double& x : slow) x *= 2;
  auto ci = BootstrapQuantileRatioCI(slow, base, 0.99);
  EXPECT_GT(ci.lower, 1.0);
  EXPECT_LT(ci.lower, 2.0);
  EXPECT_GT(ci.upper, 2.0);
}

TEST(MannWhitney, MatchesRWilcoxTest) {
  // R: wilcox.test(c(1.83,0.50,1.62,2.48,1.68,1.88,1.55,3.06,1.30),
  //                c(0.878,0.647,0.598,2.05,1.06,1.29,1.06,3.14,1.29), exact=FALSE)
  //   W = 58, p-value = 0.1329 (with continuity correction; ties present)
  std::vector<double> x = {1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30};
  std::vector<double> y = {0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29};
  auto r = MannWhitney(x, y);
  EXPECT_DOUBLE_EQ(r.u, 58);
  EXPECT_NEAR(r.p_value, 0.1329, 5e-4);
  // Hodges-Lehmann: median of the 81 pairwise differences.
  std::vector<double> d;
  for (double a : x)
    for (double b : y) d.push_back(a - b);
  std::sort(d.begin(), d.end());
  EXPECT_DOUBLE_EQ(r.shift, d[40]);
  EXPECT_LE(r.shift_lower, r.shift);
  EXPECT_GE(r.shift_upper, r.shift);
}

TEST(MannWhitney, DetectsShiftAndEvenPairCount) {
  std::vector<double> x, y;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> n(0, 1);
  for (int i = 0; i < 300; ++i) x.push_back(n(rng) + 1.0);
  for (int i = 0; i < 200; ++i) y.push_back(n(rng));
  auto r = MannWhitney(x, y);
  EXPECT_LT(r.p_value, 1e-10);
  EXPECT_NEAR(r.shift, 1.0, 0.2);
  EXPECT_LT(r.shift_lower, 1.0);
  EXPECT_GT(r.shift_upper, 1.0);
  auto tied = MannWhitney(std::vector<double>{1, 1}, std::vector<double>{1, 1});
  EXPECT_EQ(tied.p_value, 1.0);
  EXPECT_EQ(tied.shift, 0.0);
}

TEST(PrefixCacheHitRate, TokensNotRequests) {
  std::vector<int64_t> cached = {0, 256, -1, 512};
  std::vector<int64_t> prompt = {512, 512, 100, 1024};
  EXPECT_DOUBLE_EQ(PrefixCacheHitRate(cached, prompt), 768.0 / 2048.0);
  EXPECT_TRUE(std::isnan(PrefixCacheHitRateFromCounters(0, 0)));
  EXPECT_DOUBLE_EQ(PrefixCacheHitRateFromCounters(5, 20), 0.25);
}

}  // namespace
}  // namespace ttft
