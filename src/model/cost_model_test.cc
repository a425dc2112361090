#include <gtest/gtest.h>

#include "ttft/model.h"

namespace ttft {
namespace {

CostModel SeedModel() {
  auto hw = MakeHardwareConfig("llama-3.3-70b", "h100-sxm", Dtype::kFp8, 2);
  EXPECT_TRUE(hw.ok()) << hw.status().ToString();
  return CostModel(*hw, CostParams{});
}

TEST(ModelSpec, Llama33ParameterCountMatchesPublishedSize) {
  auto m = FindModel("meta-llama/Llama-3.3-70B-Instruct");
  ASSERT_TRUE(m.ok());
  // 70.55 B (simulators-and-cost-model.md 4.1, derived from config.json).
  EXPECT_NEAR(m->TotalParams() / 1e9, 70.55, 0.05);
  // 320 KiB per token in BF16.
  EXPECT_DOUBLE_EQ(m->KvElementsPerToken() * 2, 327680);
}

TEST(ModelSpec, Llama2And7bSizes) {
  EXPECT_NEAR(FindModel("llama-2-70b")->TotalParams() / 1e9, 68.977, 0.01);
  EXPECT_NEAR(FindModel("llama-2-7b")->TotalParams() / 1e9, 6.738, 0.01);
  // Mixtral: 46.7 B total, 12.9 B active.
  auto mx = *FindModel("mixtral-8x7b");
  EXPECT_NEAR(mx.TotalParams() / 1e9, 46.7, 0.1);
  double active = mx.num_layers * mx.ActiveLayerParams() + 2 * mx.EmbeddingParams();
  EXPECT_NEAR(active / 1e9, 12.9, 0.1);
}

// The seed: "Cached: prefill 1,000 x 140 GFLOP ~ 0.07 s. Uncached: 6,000 x 140 GFLOP ~ 0.42 s"
// on Llama-3.3-70B FP8 TP2 at ~2 PFLOP/s effective. Issue 2 asks for both within 15%.
TEST(CostModel, SeedPrefillTimesWithin15Percent) {
  CostModel cm = SeedModel();
  const double cached = cm.PrefillTime(1000, 5000);
  const double uncached = cm.PrefillTime(6000, 0);
  EXPECT_NEAR(cached, 0.07, 0.07 * 0.15) << cached;
  EXPECT_NEAR(uncached, 0.42, 0.42 * 0.15) << uncached;
  // Attention makes cached context cost something: more than a 1,000-token cold prefill.
  EXPECT_GT(cached, cm.PrefillTime(1000, 0));
}

TEST(CostModel, DecodeIsWeightBandwidthBound) {
  CostModel cm = SeedModel();
  // FP8 weights ~72.7 GB over 2 GPUs at 3.35 TB/s x 0.75: ~14.5 ms floor.
  const double t1 = cm.DecodeStepTime(1, 1000);
  EXPECT_GT(t1, 0.0140);
  EXPECT_LT(t1, 0.0190);
  // More sequences read more KV: monotone in batch and context.
  EXPECT_GT(cm.DecodeStepTime(64, 4000), cm.DecodeStepTime(64, 1000));
  EXPECT_GT(cm.DecodeStepTime(64, 1000), cm.DecodeStepTime(8, 1000));
}

TEST(CostModel, TensorParallelSpeedsPrefill) {
  auto tp4 = MakeHardwareConfig("llama-3.3-70b", "h100-sxm", Dtype::kBf16, 4);
  auto tp8 = MakeHardwareConfig("llama-3.3-70b", "h100-sxm", Dtype::kBf16, 8);
  ASSERT_TRUE(tp4.ok() && tp8.ok());
  CostModel a(*tp4, {}), b(*tp8, {});
  EXPECT_LT(b.PrefillTime(4000, 0), a.PrefillTime(4000, 0));
}

TEST(CostModel, SlowdownScalesStep) {
  CostModel cm = SeedModel();
  double base = cm.PrefillTime(2000, 0);
  cm.set_slowdown(2.0);
  EXPECT_DOUBLE_EQ(cm.PrefillTime(2000, 0), 2.0 * base);
}

TEST(HardwareConfig, RejectsBadTpAndDtype) {
  auto bad_tp = MakeHardwareConfig("llama-3.3-70b", "h100-sxm", Dtype::kBf16, 3);
  ASSERT_FALSE(bad_tp.ok());
  EXPECT_NE(bad_tp.status().message().find("does not divide"), std::string::npos);
  EXPECT_FALSE(MakeHardwareConfig("llama-3.3-70b", "a100", Dtype::kFp8, 4).ok());
  EXPECT_EQ(FindModel("gpt-9").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FindGpu("tpu").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(FindGpu("H100").ok());
}

}  // namespace
}  // namespace ttft
