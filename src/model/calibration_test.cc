// Calibration profiles: parse, errors with line and field, round trip.
#include "ttft/calibration.h"

#include <gtest/gtest.h>

#include <string>

namespace ttft {
namespace {

TEST(CalibrationProfile, ParsesAndRoundTrips) {
  auto p = ParseCalibrationProfile(
      "ttft_calibration_profile: 1\ncost:\n  kv_mbu: 0.9\n  front_end_s: 0.014\nfit:\n  data: "
      "[x]\n",
      "p.yaml");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_DOUBLE_EQ(p->cost.kv_mbu, 0.9);
  EXPECT_DOUBLE_EQ(p->cost.front_end_s, 0.014);
  EXPECT_DOUBLE_EQ(p->cost.decode_mbu, CostParams{}.decode_mbu);  // not set: the default
  EXPECT_EQ(p->set, (std::vector<std::string>{"kv_mbu", "front_end_s"}));
  auto q = ParseCalibrationProfile(CalibrationProfileYaml(p->cost, true, "data: [x]\n"), "q.yaml");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  for (const auto& f : CostParamFields()) EXPECT_DOUBLE_EQ(q->cost.*(f.field), p->cost.*(f.field));
  EXPECT_EQ(q->set.size(), CostParamFields().size());
  EXPECT_EQ(q->async_scheduling, std::optional<bool>(true));
  EXPECT_FALSE(p->async_scheduling.has_value());
}

TEST(CalibrationProfile, ErrorsNameLineAndField) {
  auto msg = [](const std::string& y) {
    auto p = ParseCalibrationProfile(y, "p.yaml");
    return p.ok() ? std::string("ok") : p.status().message();
  };
  EXPECT_NE(
      msg("ttft_calibration_profile: 1\ncost:\n  kv_mbu: 1.5\n").find("p.yaml:3: cost.kv_mbu"),
      std::string::npos);
  EXPECT_NE(
      msg("ttft_calibration_profile: 1\ncost:\n  bogus: 1\n").find("p.yaml:3: cost.bogus: unknown"),
      std::string::npos);
  EXPECT_NE(msg("ttft_calibration_profile: 1\ncost:\n  front_end_s: .nan\n").find("p.yaml:3"),
            std::string::npos);
  EXPECT_NE(msg("cost: {}\n").find("ttft_calibration_profile: missing"), std::string::npos);
  EXPECT_NE(msg("ttft_calibration_profile: 2\n").find("p.yaml:1: ttft_calibration_profile"),
            std::string::npos);
  EXPECT_NE(msg("ttft_calibration_profile: 1\ncost: [1, 2\n").find("p.yaml:"), std::string::npos);
  EXPECT_NE(msg("- a\n- b\n").find("expected a map"), std::string::npos);
  EXPECT_NE(msg("ttft_calibration_profile: 1\nengine:\n  async_scheduling: maybe\n")
                .find("p.yaml:3: engine.async_scheduling"),
            std::string::npos);
  EXPECT_NE(msg("ttft_calibration_profile: 1\nextra: 1\n").find("p.yaml:2: extra: unknown key"),
            std::string::npos);
  // yaml-cpp stops deep nesting with the message "bad file": say what it is.
  EXPECT_EQ(msg("ttft_calibration_profile: 1\ncost: " + std::string(1000, '[') +
                std::string(1000, ']') + "\n"),
            "p.yaml:2: nested deeper than 500 levels");
}

}  // namespace
}  // namespace ttft
