// SplitMix64, the stats module's own generator (internal header).
#ifndef TTFT_STATS_SPLITMIX64_H_
#define TTFT_STATS_SPLITMIX64_H_

#include <cstddef>
#include <cstdint>

namespace ttft::stats_internal {

// SplitMix64 (Steele, Lea, Flood, OOPSLA 2014): a small, fast, fully specified
// generator, so intervals and samples are reproducible across standard libraries.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n): Lemire's multiply-shift (bias below 2^-64 * n).
  size_t Below(size_t n) {
    __extension__ using U128 = unsigned __int128;
    return static_cast<size_t>((static_cast<U128>(Next()) * n) >> 64);
  }

 private:
  uint64_t state_;
};

}  // namespace ttft::stats_internal

#endif  // TTFT_STATS_SPLITMIX64_H_
