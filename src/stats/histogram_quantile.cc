// PromQL histogram_quantile for classic buckets (ttft/stats.h). A line-by-line port of
// bucketQuantile, coalesceBuckets and ensureMonotonic in prometheus/prometheus
// promql/quantile.go (v2.42), plus the bucket bounds the result falls between.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ttft/stats.h"

namespace ttft {

BucketQuantile HistogramQuantile(double q, std::vector<Bucket> buckets) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  BucketQuantile out;
  if (std::isnan(q)) return out;
  if (q < 0) {
    out.value = -kInf;
    return out;
  }
  if (q > 1) {
    out.value = kInf;
    return out;
  }
  std::sort(buckets.begin(), buckets.end(),
            [](const Bucket& a, const Bucket& b) { return a.upper_bound < b.upper_bound; });
  if (buckets.empty() || !std::isinf(buckets.back().upper_bound) ||
      buckets.back().upper_bound < 0) {
    return out;
  }
  // coalesceBuckets: buckets with the same upper bound are summed.
  std::vector<Bucket> merged;
  for (const Bucket& b : buckets) {
    if (!merged.empty() && merged.back().upper_bound == b.upper_bound) {
      merged.back().cumulative_count += b.cumulative_count;
    } else {
      merged.push_back(b);
    }
  }
  // ensureMonotonic: a count below the running maximum is raised to it.
  double max = -kInf;
  for (Bucket& b : merged) {
    if (b.cumulative_count > max) {
      max = b.cumulative_count;
    } else if (b.cumulative_count < max) {
      b.cumulative_count = max;
    }
  }
  if (merged.size() < 2) return out;
  const double observations = merged.back().cumulative_count;
  if (observations == 0) return out;
  double rank = q * observations;
  // sort.Search over all but the +Inf bucket.
  size_t b = 0;
  while (b < merged.size() - 1 && !(merged[b].cumulative_count >= rank)) ++b;
  if (b == merged.size() - 1) {
    out.value = merged[merged.size() - 2].upper_bound;
    out.lower_bound = out.value;
    out.upper_bound = kInf;
    out.in_inf_bucket = true;
    out.in_first_bucket = merged.size() == 2;
    return out;
  }
  if (b == 0 && merged[0].upper_bound <= 0) {
    out.value = merged[0].upper_bound;
    out.lower_bound = -kInf;
    out.upper_bound = merged[0].upper_bound;
    out.in_first_bucket = true;
    return out;
  }
  double bucket_start = 0;
  const double bucket_end = merged[b].upper_bound;
  double count = merged[b].cumulative_count;
  if (b > 0) {
    bucket_start = merged[b - 1].upper_bound;
    count -= merged[b - 1].cumulative_count;
    rank -= merged[b - 1].cumulative_count;
  }
  out.value = bucket_start + (bucket_end - bucket_start) * (rank / count);
  out.lower_bound = bucket_start;
  out.upper_bound = bucket_end;
  out.in_first_bucket = b == 0;
  return out;
}

}  // namespace ttft
