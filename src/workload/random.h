// Internal to src/workload: hand-rolled random variates and key hashing.
//
// Every transform is written out here instead of using std::*_distribution, whose
// algorithms are unspecified and differ between standard libraries; with these the
// same seed gives the same run everywhere.
#ifndef TTFT_WORKLOAD_RANDOM_H_
#define TTFT_WORKLOAD_RANDOM_H_

#include <xxhash.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string_view>

#include "ttft/workload.h"

namespace ttft::workload_internal {

// Uniform in [0, 1): the top 53 bits of one 64-bit output as a double's mantissa.
inline double Uniform01(Rng& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
// Uniform in (0, 1): safe for log().
inline double UniformOpen01(Rng& rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
}

// Standard normal by the Box-Muller transform (Box & Muller, 1958). Uses one of
// the pair and discards the other, so the draw consumes exactly two outputs.
inline double StdNormal(Rng& rng) {
  const double u1 = UniformOpen01(rng);
  const double u2 = Uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// Exponential with mean 1 (inversion).
inline double Exp1(Rng& rng) { return -std::log(UniformOpen01(rng)); }

// Gamma(shape, scale 1) by Marsaglia & Tsang, "A Simple Method for Generating
// Gamma Variables", ACM TOMS 26(3), 2000; shape < 1 by the boost
// Gamma(shape + 1) * U^(1/shape) from the same paper. REQUIRES: shape > 0.
inline double Gamma(Rng& rng, double shape) {
  if (shape < 1.0) {
    const double u = UniformOpen01(rng);
    return Gamma(rng, shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = StdNormal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = UniformOpen01(rng);
    if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

// Content keys and stream seeds: XXH3 over tagged fields.
inline uint64_t HashStr(std::string_view s, uint64_t seed) {
  return XXH3_64bits_withSeed(s.data(), s.size(), seed);
}
inline uint64_t HashU64(uint64_t v, uint64_t seed) {
  return XXH3_64bits_withSeed(&v, sizeof v, seed);
}
// A mixing step for combining fields: order-sensitive.
inline uint64_t Combine(uint64_t h, uint64_t v) { return HashU64(v, h); }
inline uint64_t Combine(uint64_t h, std::string_view s) { return HashStr(s, h); }

}  // namespace ttft::workload_internal

#endif  // TTFT_WORKLOAD_RANDOM_H_
