// -----------------------------------------------------------------------------
// File: ttft/stats.h
// -----------------------------------------------------------------------------
//
// Tail statistics: exact quantiles by selection, a mergeable relative-error quantile
// sketch (DDSketch), quantiles from classic Prometheus histogram buckets with PromQL
// semantics, bootstrap confidence intervals, the Mann-Whitney U test with the
// Hodges-Lehmann shift, and the prefix-cache hit rate.
//
// Quantile definition: the "linear" (type 7) estimator of Hyndman & Fan (1996), the
// default of numpy.quantile and pandas, so figures agree with what an operator
// gets from a notebook: h = (n - 1) q, interpolate between order statistics
// floor(h) and ceil(h).
//
// Example:
//
//   std::vector<double> ttft = ...;
//   double p99 = ttft::Quantile(ttft, 0.99);   // may reorder `ttft`, O(n)
//
// Thread safety: pure functions.

#ifndef TTFT_STATS_H_
#define TTFT_STATS_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "ttft/core.h"

namespace ttft {

// Quantile q in [0, 1] of `values` by selection (SelectOrderStats): O(n), may reorder
// the input. NaN values must have been removed. Returns NaN for an empty input.
double Quantile(std::span<double> values, double q);

// Several quantiles at once; `qs` need not be sorted. Reorders the input.
std::vector<double> Quantiles(std::span<double> values, std::span<const double> qs);

// Quantile for float and int32_t columns too, without a double copy: their order
// statistics converted to double are those of the copy, and the interpolation is
// Quantile's, so the result is bit-identical to Quantile on the copy. May reorder the
// input. REQUIRES: no NaN values. NaN for an empty input.
template <typename T>
double ColumnQuantile(std::span<T> values, double q);
extern template double ColumnQuantile(std::span<float>, double);
extern template double ColumnQuantile(std::span<double>, double);
extern template double ColumnQuantile(std::span<int32_t>, double);

// The order statistics k and k + 1 (0-based: the k-th smallest value of `values` and
// the next one up), exactly; `second` equals `first` when k is the last index. This is
// the selection under Quantile, for float, double and int32_t columns alike. May
// reorder the input. REQUIRES: k < values.size(); no NaN values.
//
// Large inputs use Floyd and Rivest's sampling idea (CACM 18(3), 1975, "Algorithm 489:
// SELECT"): order statistics of a random sample bracket rank k, one read-only pass
// counts the values below the bracket and copies those inside it, and std::nth_element
// runs on that copy (a few percent of the input). When the bracket misses rank k or k + 1 (it
// spans four standard deviations of the sample rank either side, so about once in
// 30,000 calls) or holds too many values (heavy ties), it falls back to
// std::nth_element on the whole input.
template <typename T>
struct OrderStats {
  T first;
  T second;
};
template <typename T>
OrderStats<T> SelectOrderStats(std::span<T> values, size_t k);
extern template OrderStats<float> SelectOrderStats(std::span<float>, size_t);
extern template OrderStats<double> SelectOrderStats(std::span<double>, size_t);
extern template OrderStats<int32_t> SelectOrderStats(std::span<int32_t>, size_t);

// -----------------------------------------------------------------------------
// DDSketch: a mergeable quantile sketch with relative error on the value
// -----------------------------------------------------------------------------
//
// Masson, Rim, Lee, "DDSketch: A Fast and Fully-Mergeable Quantile Sketch with
// Relative-Error Guarantees", PVLDB 12(12), 2019. Logarithmic mapping: with
// gamma = (1 + alpha) / (1 - alpha), a value x > min_value goes to bucket
// i = ceil(log_gamma(x)), which covers (gamma^(i-1), gamma^i]; the bucket's
// representative value is 2 gamma^i / (gamma + 1).
//
// GUARANTEE: for q in [0, 1], Quantile(q) returns x~ with |x~ - x| <= alpha * x,
// where x is the order statistic of rank floor(q (n - 1)) (0-based) of the values
// added, provided x > min_value and its bucket has not been collapsed. Buckets are
// collapsed only when more than max_buckets are in use, and then the LOWEST buckets
// are merged first (the paper's bounded store), so high quantiles keep the bound.
// Values <= min_value (including 0) are counted exactly as 0; negative and NaN
// values are rejected by Add (counted in rejected()).
//
// MERGE PRECONDITION: two sketches merge only if they have the same alpha and
// min_value (hence the same mapping); Merge returns InvalidArgument otherwise.
// Merging is exact and order-independent: bucket counts add, so merging per-replica
// sketches gives the same sketch as adding every value to one.
//
// Memory: one 8-byte counter per bucket between the lowest and highest in use. At
// alpha = 0.5%, 1 ms .. 100 s spans 1,150 buckets (9 KB).
//
// Thread safety: a sketch is a value; use one per thread and merge.
class DDSketch {
 public:
  static constexpr double kDefaultAlpha = 0.005;
  static constexpr double kDefaultMinValue = 1e-9;
  static constexpr int kDefaultMaxBuckets = 4096;

  // REQUIRES: 0 < alpha < 1, min_value > 0, max_buckets >= 16.
  explicit DDSketch(double alpha = kDefaultAlpha, double min_value = kDefaultMinValue,
                    int max_buckets = kDefaultMaxBuckets);

  // Adds one value (seconds, tokens: any non-negative quantity).
  void Add(double value) {
    if (value > min_value_) {
      AddToBucket(BucketIndex(value), 1);
    } else if (value >= 0) {
      ++zero_count_;
    } else {
      ++rejected_;  // negative or NaN
      return;
    }
    ++count_;
    sum_ += value;
    if (value < min_) min_ = value;
    if (value > max_) max_ = value;
  }
  // Adds every value of `values`.
  void AddAll(std::span<const double> values);

  // Adds `other`'s counts. InvalidArgument if alpha or min_value differ.
  Status Merge(const DDSketch& other);

  // See GUARANTEE above. NaN when empty; q is clamped to [0, 1]. Quantile(0) and
  // Quantile(1) return the exact minimum and maximum.
  double Quantile(double q) const;

  int64_t count() const { return count_; }
  int64_t rejected() const { return rejected_; }
  double sum() const { return sum_; }
  double min() const { return min_; }
  double max() const { return max_; }
  double alpha() const { return alpha_; }
  // Number of buckets spanned by the store (its memory is 8 bytes each).
  size_t buckets_in_use() const { return counts_.size(); }
  // True if buckets were collapsed (the guarantee then holds only above them).
  bool collapsed() const { return collapsed_; }

  int BucketIndex(double value) const {
    return static_cast<int>(std::ceil(std::log(value) * inv_log_gamma_));
  }

 private:
  void AddToBucket(int index, uint64_t n) {
    const int64_t pos = static_cast<int64_t>(index) - offset_;
    if (pos >= 0 && pos < static_cast<int64_t>(counts_.size())) [[likely]] {
      counts_[static_cast<size_t>(pos)] += n;
    } else {
      Grow(index, n);
    }
  }
  void Grow(int index, uint64_t n);

  double alpha_;
  double gamma_;
  double inv_log_gamma_;
  double min_value_;
  int max_buckets_;
  int offset_ = 0;                // bucket index of counts_[0]
  std::vector<uint64_t> counts_;  // dense, from offset_
  int64_t zero_count_ = 0;
  int64_t count_ = 0;
  int64_t rejected_ = 0;
  double sum_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
  bool collapsed_ = false;
};

// -----------------------------------------------------------------------------
// Quantiles from classic histogram buckets (PromQL histogram_quantile)
// -----------------------------------------------------------------------------

// One cumulative bucket: count of observations <= upper_bound.
struct Bucket {
  double upper_bound;
  double cumulative_count;
};

// A histogram quantile together with what limits its accuracy.
struct BucketQuantile {
  double value = std::numeric_limits<double>::quiet_NaN();
  // The bucket the quantile falls in: the true quantile lies in (lower, upper]
  // and `value` is a linear interpolation inside it. NaN when value is NaN.
  double lower_bound = std::numeric_limits<double>::quiet_NaN();
  double upper_bound = std::numeric_limits<double>::quiet_NaN();
  // The quantile falls in the first bucket (0, b0]: anything below b0 is not
  // resolved (vLLM's queue and prefill buckets start at 0.3 s, so a regression below
  // that shows only in _sum/_count).
  bool in_first_bucket = false;
  // The quantile falls in the +Inf bucket: PromQL returns the highest finite bound,
  // a lower limit of the true value.
  bool in_inf_bucket = false;
};

// PromQL histogram_quantile (prometheus/prometheus promql/quantile.go,
// bucketQuantile, v2.42): buckets sorted by upper bound; the last must be +Inf
// (else NaN); fewer than 2 buckets or zero observations give NaN; q < 0 gives -Inf,
// q > 1 gives +Inf; non-monotonic counts are made monotonic as PromQL does; the
// rank q * count is located and linearly interpolated inside its bucket, whose lower
// bound is 0 for the first bucket (or the first bound itself if that is <= 0); a rank
// in the +Inf bucket returns the highest finite bound. `buckets` need not be sorted.
BucketQuantile HistogramQuantile(double q, std::vector<Bucket> buckets);

// -----------------------------------------------------------------------------
// Bootstrap confidence intervals
// -----------------------------------------------------------------------------

struct ConfidenceInterval {
  double estimate = std::numeric_limits<double>::quiet_NaN();  // on the full sample
  double lower = std::numeric_limits<double>::quiet_NaN();
  double upper = std::numeric_limits<double>::quiet_NaN();
  double level = 0.95;
};

struct BootstrapOptions {
  int resamples = 1000;
  double level = 0.95;
  uint64_t seed = 0x7474667442ULL;  // fixed: the same input gives the same interval
};

// Percentile bootstrap (Efron & Tibshirani 1993, ch. 13) for the q-quantile (type 7)
// of `values`: resample with replacement, take the (1-level)/2 and (1+level)/2
// quantiles of the resampled statistic. Deterministic for a given seed (its own
// generator, independent of the standard library's distributions). Empty input
// gives NaNs.
ConfidenceInterval BootstrapQuantileCI(std::span<const double> values, double q,
                                       const BootstrapOptions& options = {});

// The same for the ratio quantile_q(a) / quantile_q(b), resampling a and b
// independently (two independent samples, e.g. incident vs baseline).
ConfidenceInterval BootstrapQuantileRatioCI(std::span<const double> a, std::span<const double> b,
                                            double q, const BootstrapOptions& options = {});

// -----------------------------------------------------------------------------
// Mann-Whitney U test with the Hodges-Lehmann shift estimate
// -----------------------------------------------------------------------------

struct MannWhitneyResult {
  double u = std::numeric_limits<double>::quiet_NaN();  // U of sample x
  double z = std::numeric_limits<double>::quiet_NaN();
  double p_value = std::numeric_limits<double>::quiet_NaN();  // two-sided
  // Hodges-Lehmann estimate of the shift x - y: median of all pairwise differences.
  double shift = std::numeric_limits<double>::quiet_NaN();
  double shift_lower = std::numeric_limits<double>::quiet_NaN();  // CI for the shift
  double shift_upper = std::numeric_limits<double>::quiet_NaN();
  double level = 0.95;
};

// Two-sided Wilcoxon rank-sum / Mann-Whitney U test of x against y with the normal
// approximation, the tie correction of the variance (sum of t^3 - t over tie groups)
// and a 0.5 continuity correction, as R's wilcox.test(exact = FALSE, correct = TRUE)
// and Kayenta's MannWhitney.scala do. Mann & Whitney, Ann. Math. Statist. 18 (1947).
// The shift is the Hodges-Lehmann estimator (Hodges & Lehmann, Ann. Math. Statist.
// 34 (1963)) computed exactly in O((n + m) log(range)) by counting pairs, and its
// distribution-free CI takes the order statistics k and nm - k + 1 of the pairwise
// differences with k from the normal approximation (Hollander & Wolfe 1999, 4.3;
// no tie correction in the interval). NaNs in the inputs must have been removed.
// Empty x or y gives NaNs; all values tied gives p = 1 and shift 0.
MannWhitneyResult MannWhitney(std::span<const double> x, std::span<const double> y,
                              double level = 0.95);

// -----------------------------------------------------------------------------
// Prefix-cache hit rate
// -----------------------------------------------------------------------------

// vLLM's definition, in tokens: cached prompt tokens / prompt tokens. From spans:
// sum(cached_tokens) / sum(prompt_tokens) over spans where both are known (>= 0).
// From counters: delta(prefix_cache_hits) / delta(prefix_cache_queries). Early V1
// (about 0.7-0.8) counted BLOCKS in these counters, not tokens: the ratio stays
// comparable, the absolute counts do not. NaN when the denominator is 0.
double PrefixCacheHitRate(std::span<const int64_t> cached_tokens,
                          std::span<const int64_t> prompt_tokens);
inline double PrefixCacheHitRateFromCounters(double hits_delta, double queries_delta) {
  return queries_delta > 0 ? hits_delta / queries_delta : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace ttft

#endif  // TTFT_STATS_H_
