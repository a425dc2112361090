// Exact quantiles by selection (ttft/stats.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ttft/stats.h"

namespace ttft {

double Quantile(std::span<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  const double h = (static_cast<double>(v.size()) - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
  const double a = v[lo];
  if (lo + 1 >= v.size() || h == static_cast<double>(lo)) return a;
  // The next order statistic is the minimum of the upper part.
  const double b = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end());
  return a + (h - static_cast<double>(lo)) * (b - a);
}

std::vector<double> Quantiles(std::span<double> v, std::span<const double> qs) {
  std::vector<double> out;
  out.reserve(qs.size());
  for (double q : qs) out.push_back(Quantile(v, q));
  return out;
}

}  // namespace ttft
