// Exact quantiles by selection (ttft/stats.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "stats/splitmix64.h"
#include "ttft/stats.h"

namespace ttft {
namespace {

// Below this many values std::nth_element alone is as fast as sampling first.
constexpr size_t kSampleMinValues = 4096;
// The pass copies in blocks, checking for room once a block.
constexpr size_t kBlock = 1024;

template <typename T>
OrderStats<T> ByNthElement(std::span<T> v, size_t k) {
  const auto b = v.begin();
  std::nth_element(b, b + static_cast<std::ptrdiff_t>(k), v.end());
  const T first = v[k];
  if (k + 1 >= v.size()) return {first, first};
  // The next order statistic is the minimum of what lies above.
  return {first, *std::min_element(b + static_cast<std::ptrdiff_t>(k) + 1, v.end())};
}

}  // namespace

template <typename T>
OrderStats<T> SelectOrderStats(std::span<T> v, size_t k) {
  const size_t n = v.size();
  if (n < kSampleMinValues) return ByNthElement(v, k);
  // A sample of s ~ n^(2/3) values (Floyd-Rivest's order), at positions drawn from a
  // generator seeded by n: deterministic, and not fooled by periodic input.
  const size_t s = std::clamp<size_t>(
      static_cast<size_t>(std::pow(static_cast<double>(n), 2.0 / 3.0)), 256, size_t{1} << 16);
  const auto sample_buf = std::make_unique_for_overwrite<T[]>(s);
  const std::span<T> sample(sample_buf.get(), s);
  stats_internal::SplitMix64 rng(n);
  for (T& x : sample) x = v[rng.Below(n)];
  // The sample's count below the k-th value is Binomial(s, p), p ~ k / n: a bracket of
  // four standard deviations either side holds rank k but about once in 30,000 calls.
  const double p = (static_cast<double>(k) + 0.5) / static_cast<double>(n);
  const double centre = p * static_cast<double>(s);
  const double half = 4.0 * std::sqrt(static_cast<double>(s) * p * (1 - p)) + 2.0;
  const auto lo_rank = static_cast<std::ptrdiff_t>(std::floor(centre - half));
  const auto hi_rank = static_cast<std::ptrdiff_t>(std::ceil(centre + half));
  constexpr T kLowest = std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity()
                                                    : std::numeric_limits<T>::lowest();
  constexpr T kHighest = std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity()
                                                     : std::numeric_limits<T>::max();
  T lo = kLowest, hi = kHighest;
  const auto sb = sample.begin();
  if (lo_rank >= 0) {
    std::nth_element(sb, sb + lo_rank, sample.end());
    lo = sample[static_cast<size_t>(lo_rank)];
  }
  if (hi_rank < static_cast<std::ptrdiff_t>(s)) {
    const auto from = sb + std::max<std::ptrdiff_t>(lo_rank + 1, 0);
    std::nth_element(from, sb + hi_rank, sample.end());
    hi = sample[static_cast<size_t>(hi_rank)];
  }
  // One read-only pass, branch-free (a p50 bracket is crossed every other value):
  // count below lo, copy [lo, hi].
  const double share = static_cast<double>(hi_rank - lo_rank + 1) / static_cast<double>(s);
  const size_t room =
      std::min(n, static_cast<size_t>(2 * share * static_cast<double>(n)) + 4 * kBlock);
  const auto in = std::make_unique_for_overwrite<T[]>(room);
  size_t below = 0, count = 0;
  bool nan = false;
  for (size_t i = 0; i < n; i += kBlock) {
    if (count + kBlock > room) return ByNthElement(v, k);  // the bracket is too wide
    const size_t end = std::min(n, i + kBlock);
    for (size_t j = i; j < end; ++j) {
      const T x = v[j];
      below += x < lo ? 1 : 0;
      in[count] = x;
      count += !(x < lo) && !(hi < x) ? 1 : 0;
      if constexpr (std::is_floating_point_v<T>) nan |= x != x;
    }
  }
  // Ranks k and k + 1 (when the input has one) must both lie in the bracket.
  const size_t last = std::min(k + 1, n - 1);
  if (nan || k < below || last >= below + count) return ByNthElement(v, k);
  return ByNthElement(std::span<T>(in.get(), count), k - below);
}

template OrderStats<float> SelectOrderStats(std::span<float>, size_t);
template OrderStats<double> SelectOrderStats(std::span<double>, size_t);
template OrderStats<int32_t> SelectOrderStats(std::span<int32_t>, size_t);

template <typename T>
double ColumnQuantile(std::span<T> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  const double h = (static_cast<double>(v.size()) - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const OrderStats<T> os = SelectOrderStats(v, lo);
  const auto a = static_cast<double>(os.first);
  if (lo + 1 >= v.size() || h == static_cast<double>(lo)) return a;
  return a + (h - static_cast<double>(lo)) * (static_cast<double>(os.second) - a);
}

template double ColumnQuantile(std::span<float>, double);
template double ColumnQuantile(std::span<double>, double);
template double ColumnQuantile(std::span<int32_t>, double);

double Quantile(std::span<double> v, double q) { return ColumnQuantile(v, q); }

std::vector<double> Quantiles(std::span<double> v, std::span<const double> qs) {
  std::vector<double> out;
  out.reserve(qs.size());
  for (double q : qs) out.push_back(Quantile(v, q));
  return out;
}

}  // namespace ttft
