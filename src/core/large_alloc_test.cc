// LargeAllocator: small and large blocks, growth, and elements kept across it.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>

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

TEST(LargeVector, AllocatorsCompareEqual) {
  LargeAllocator<int> a;
  LargeAllocator<double> b(a);
  EXPECT_TRUE(a == b);
  internal::FreeLarge(nullptr, 1 << 22);  // a null block is a no-op
}

}  // namespace
}  // namespace ttft
