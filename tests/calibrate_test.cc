// Integration test (issue 12): `ttft calibrate` on the Llama-2-7B rows alone writes a
// profile with which `ttft validate` meets the fidelity issue's in-sample targets
// (TTFT mean <= 15 %, decode <= 7 %, E2E mean <= 8 %); the profile is accepted by
// simulate's --calibration and the scenario key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_ttft.h"

namespace {

using ::testing::HasSubstr;
using ttft::testing::RunResult;
using ttft::testing::RunTtft;
using ttft::testing::TempDir;
namespace fs = std::filesystem;

TEST(Calibrate, SevenBRowsMeetTheInSampleTargets) {
  const fs::path csv = fs::path(TTFT_SHARED_DATA_DIR) / "vllm-h100" / "calibration-7b.csv";
  if (!fs::exists(csv)) GTEST_SKIP() << "calibration data not found at " << csv.string();
  const fs::path dir = TempDir("calibrate");
  const fs::path prof = dir / "7b.yaml";
  const RunResult c = RunTtft("calibrate " + csv.string() +
                              " --no-leave-one-out --max-evaluations 40 --out " + prof.string());
  ASSERT_EQ(c.exit_code, 0) << c.err << c.out;
  EXPECT_THAT(c.out, HasSubstr("in-sample MAPE over 5 rows"));
  // The overloaded reasoning run is named, not fitted.
  EXPECT_THAT(c.out, HasSubstr("measured overloaded"));
  ASSERT_TRUE(fs::exists(prof));

  const RunResult v = RunTtft("validate " + csv.string() +
                              " --seeds 2 --format json --calibration " + prof.string());
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const auto j = nlohmann::json::parse(v.out);
  EXPECT_EQ(j["mape_rows"].get<int>(), 5);
  EXPECT_LE(j["mape"]["ttft_mean"].get<double>(), 0.15) << v.out;
  EXPECT_LE(j["mape"]["decode_ms_per_token"].get<double>(), 0.07) << v.out;
  EXPECT_LE(j["mape"]["e2e_mean"].get<double>(), 0.08) << v.out;
  for (const auto& r : j["rows"]) {  // only the reasoning run is overloaded, on both sides
    EXPECT_EQ(r["simulated_overloaded"].get<bool>(), r["measured_overloaded"].get<bool>())
        << r["experiment"];
  }

  // The same profile through a scenario key, relative to the scenario's folder.
  std::ofstream(dir / "s.yaml")
      << "name: cal\nseed: 1\nduration_s: 5\n"
         "defaults: {model: llama-2-7b, gpu: h100-sxm, dtype: bf16, tp: 1, max_model_len: 4096, "
         "calibration: 7b.yaml}\n"
         "replicas: [{name: r, count: 1}]\n"
         "templates:\n  - name: chat\n    versions:\n      - version: v1\n        segments:\n"
         "          - {name: system, kind: static, tokens: 400}\n"
         "tenants:\n  - {name: chat, template: chat, version: v1, rate_rps: 2, arrival: poisson, "
         "output_tokens: {dist: lognormal, mean: 20, cv: 0.5, min: 4, max: 100}, users: 10}\n";
  const RunResult s =
      RunTtft("simulate " + (dir / "s.yaml").string() + " --quiet --out " + (dir / "sim").string());
  EXPECT_EQ(s.exit_code, 0) << s.err;
  std::ofstream(dir / "bad.yaml") << "ttft_calibration_profile: 1\ncost:\n  kv_mbu: 7\n";
  const RunResult bad =
      RunTtft("validate " + csv.string() + " --calibration " + (dir / "bad.yaml").string());
  EXPECT_EQ(bad.exit_code, 2) << bad.err;  // a malformed file: kInvalidArgument
  EXPECT_THAT(bad.err, HasSubstr("bad.yaml:3: cost.kv_mbu"));
  fs::remove_all(dir);
}

// The same table given twice (an ordinary shell glob with a copy in it) is read once,
// with a warning, not fitted twice.
TEST(Calibrate, AFileGivenTwiceIsReadOnce) {
  const fs::path csv = fs::path(TTFT_SHARED_DATA_DIR) / "vllm-h100" / "calibration-7b.csv";
  if (!fs::exists(csv)) GTEST_SKIP() << "calibration data not found at " << csv.string();
  const fs::path dir = TempDir("calibrate_twice");
  fs::copy_file(csv, dir / "copy.csv");
  const RunResult c =
      RunTtft("calibrate " + csv.string() + " " + (dir / "copy.csv").string() +
              " --no-leave-one-out --max-evaluations 2 --out " + (dir / "p.yaml").string());
  ASSERT_EQ(c.exit_code, 0) << c.err << c.out;
  EXPECT_THAT(c.err, HasSubstr("copy.csv: the same bytes as"));
  EXPECT_THAT(c.out, ::testing::Not(HasSubstr("copy.csv (")));  // not among the files fitted
  fs::remove_all(dir);
}

}  // namespace
