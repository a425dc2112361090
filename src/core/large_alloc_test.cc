// LargeAllocator: small and large blocks, growth, and elements kept across it.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "ttft/core.h"

namespace ttft {
namespace {

TEST(LargeVector, HoldsValuesAcrossGrowthFromSmallToMappedBlocks) {
  LargeVector<uint32_t> v;
  for (uint32_t i = 0; i < 3'000'000; ++i) v.push_back(i * 7u);  // 12 MB: mapped blocks
  for (uint32_t i = 0; i < v.size(); i += 4099) ASSERT_EQ(v[i], i * 7u);
  v.resize(100);
  v.shrink_to_fit();  // back to operator new
  EXPECT_EQ(v[99], 99u * 7u);
  LargeVector<double> zeros(1'000'000, 0.0);  // a value given: zeroed
  EXPECT_EQ(std::accumulate(zeros.begin(), zeros.end(), 0.0), 0.0);
  LargeVector<uint8_t> sized(5'000'000);  // default-initialised, writable
  sized.back() = 9;
  EXPECT_EQ(sized.back(), 9);
}

// Freed blocks are reused (split, grown): live blocks must never overlap. Each live
// block is filled with its own tag and checked after every later step.
TEST(LargeVector, ReusedBlocksNeverOverlapLiveOnes) {
  std::mt19937_64 rng(3);
  std::vector<LargeVector<uint64_t>> live;
  auto check = [&] {
    for (size_t i = 0; i < live.size(); ++i) {
      for (size_t j = 0; j < live[i].size(); j += 997) {
        ASSERT_EQ(live[i][j], live[i].front()) << "block " << i << " was overwritten";
      }
    }
  };
  for (int step = 0; step < 60; ++step) {
    if (!live.empty() && rng() % 3 == 0) {
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(rng() % live.size()));
    } else {
      const size_t n = (size_t{1} << 18) * (1 + rng() % 12);  // 2-24 MB
      const uint64_t tag = rng();
      live.emplace_back(n, tag);
    }
    if (!live.empty() && rng() % 4 == 0) {  // grow one: a reallocation frees the old block
      LargeVector<uint64_t>& v = live[rng() % live.size()];
      v.resize(v.size() * 2, v.front());
    }
    check();
  }
}

TEST(LargeVector, AllocatorsCompareEqual) {
  LargeAllocator<int> a;
  LargeAllocator<double> b(a);
  EXPECT_TRUE(a == b);
  internal::FreeLarge(nullptr, 1 << 22);  // a null block is a no-op
}

}  // namespace
}  // namespace ttft
