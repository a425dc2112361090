// -----------------------------------------------------------------------------
// File: ttft/stats.h
// -----------------------------------------------------------------------------
//
// Tail statistics: exact quantiles by selection.
//
// Quantile definition: the "linear" (type 7) estimator of Hyndman & Fan (1996), the
// default of numpy.quantile and pandas, so figures agree with what an operator
// gets from a notebook: h = (n - 1) q, interpolate between order statistics
// floor(h) and ceil(h).
//
// Example:
//
//   std::vector<double> ttft = ...;
//   double p99 = ttft::Quantile(ttft, 0.99);   // reorders `ttft`, O(n)
//
// Thread safety: pure functions.

#ifndef TTFT_STATS_H_
#define TTFT_STATS_H_

#include <span>
#include <vector>

namespace ttft {

// Quantile q in [0, 1] of `values` by selection (std::nth_element): O(n), reorders
// the input. NaN values must have been removed. Returns NaN for an empty input.
double Quantile(std::span<double> values, double q);

// Several quantiles at once; `qs` need not be sorted. Reorders the input.
std::vector<double> Quantiles(std::span<double> values, std::span<const double> qs);

}  // namespace ttft

#endif  // TTFT_STATS_H_
