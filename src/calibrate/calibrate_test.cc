// ttft calibrate: the bench-result reader and the fit.
#include "ttft/calibrate.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ttft {
namespace {

// The keys vllm/benchmarks/serve.py writes (a short run of a 7B on one H100).
constexpr char kBench[] = R"({
  "date": "20260301-120000", "endpoint_type": "vllm", "backend": "vllm", "label": null,
  "model_id": "meta-llama/Llama-2-7b-hf", "tokenizer_id": "meta-llama/Llama-2-7b-hf",
  "num_prompts": 60, "request_rate": 2.0, "burstiness": 1.0, "max_concurrency": null,
  "duration": 31.2, "completed": 60, "failed": 0, "total_input_tokens": 30000,
  "total_output_tokens": 3840, "request_throughput": 1.92, "output_throughput": 123.0,
  "mean_ttft_ms": 30.5, "median_ttft_ms": 29.8, "std_ttft_ms": 3.1, "p99_ttft_ms": 41.0,
  "mean_tpot_ms": 7.1, "median_tpot_ms": 7.0, "p99_tpot_ms": 8.0,
  "mean_itl_ms": 7.1, "median_itl_ms": 7.0, "p99_itl_ms": 9.0
})";

// Replaces each row's measurement by its simulation under `truth` (the mean of
// `repeats` seeds): measurements whose true parameters are known.
Status MeasureBySimulation(std::vector<MeasurementRow>& rows, const CostParams& truth,
                           int repeats) {
  ValidateOptions vo;
  vo.cost = truth;
  vo.repeats = repeats;
  auto sim = RunValidation(rows, vo);
  if (!sim.ok()) return sim.status();
  for (size_t i = 0; i < rows.size(); ++i) rows[i].measured = sim->rows[i].simulated;
  return Status::Ok();
}

TEST(BenchServeJson, FieldsAndAssumptionsNamed) {
  BenchAssumptions a;
  a.gpu = "h100-sxm";
  auto r = ParseBenchServeJson(kBench, "dir/run1.json", a);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->skip_reason.empty()) << r->skip_reason;
  EXPECT_EQ(r->experiment, "run1.json");
  EXPECT_EQ(r->model_hf_id, "meta-llama/Llama-2-7b-hf");
  EXPECT_DOUBLE_EQ(r->rate_rps, 2.0);
  EXPECT_DOUBLE_EQ(r->duration_s, 30.0);
  EXPECT_EQ(r->workload.question_len, 500);
  EXPECT_EQ(r->workload.output_len, 64);
  EXPECT_EQ(r->workload.num_groups, 60);
  EXPECT_DOUBLE_EQ(r->measured.ttft_mean_ms, 30.5);
  EXPECT_DOUBLE_EQ(r->measured.decode_ms_per_token, 7.1);
  // No mean_e2el_ms: TTFT + TPOT x (output - 1), said so.
  EXPECT_NEAR(r->measured.e2e_mean_ms, 30.5 + 7.1 * 63, 1e-9);
  EXPECT_TRUE(std::isnan(r->measured.ttft_p90_ms));
  std::string all;
  for (const auto& d : r->defaults_used) all += d + "\n";
  EXPECT_NE(all.find("max_num_seqs=1024"), std::string::npos) << all;
  EXPECT_NE(all.find("tp=1"), std::string::npos) << all;
  EXPECT_NE(all.find("e2e_mean"), std::string::npos) << all;
}

TEST(BenchServeJson, ErrorsNameTheField) {
  BenchAssumptions a;
  auto r = ParseBenchServeJson(kBench, "run.json", a);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("run.json: gpu:"), std::string::npos) << r.status().message();
  a.gpu = "h100-sxm";
  std::string inf = kBench;
  inf.replace(inf.find("\"request_rate\": 2.0"), 19, "\"request_rate\": \"inf\"");
  r = ParseBenchServeJson(inf, "run.json", a);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("request_rate"), std::string::npos) << r.status().message();
  std::string no_ttft = kBench;
  no_ttft.replace(no_ttft.find("\"mean_ttft_ms\""), 14, "\"mean_ttft_xx\"");
  r = ParseBenchServeJson(no_ttft, "run.json", a);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("run.json: mean_ttft_ms: missing"), std::string::npos)
      << r.status().message();
  r = ParseBenchServeJson("{\n\"a\": 1,\n oops}", "run.json", a);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("run.json:3: not JSON"), std::string::npos)
      << r.status().message();
  // A number beyond a double is an error, not an exception (found by calibrate_fuzz).
  r = ParseBenchServeJson("8e500", "run.json", a);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("run.json: not a usable"), std::string::npos)
      << r.status().message();
}

// Two synthetic runs simulated with known parameters are the "measurements": the fit
// moves front_end_s from a wrong start back near the truth, and says which of the
// parameters the data do not see.
TEST(Calibrate, RecoversAKnownFrontEnd) {
  BenchAssumptions a;
  a.gpu = "h100-sxm";
  auto row = ParseBenchServeJson(kBench, "a.json", a);
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  MeasurementRow r1 = *row, r2 = *row;
  r2.experiment = "b.json";
  r2.source = "b.json";
  r2.rate_rps = 4.0;
  r2.duration_s = 15;
  std::vector<MeasurementRow> rows = {r1, r2};
  CostParams truth = VllmH100Calibration();
  truth.front_end_s = 0.015;
  const Status measured = MeasureBySimulation(rows, truth, 1);
  ASSERT_TRUE(measured.ok()) << measured.ToString();
  CalibrateOptions opt;
  opt.free = {"front_end_s", "allreduce_latency_s"};  // TP1: no all-reduce to see
  opt.max_evaluations = 40;
  auto res = Calibrate(rows, opt);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_NEAR(res->cost.front_end_s, 0.015, 0.0015);
  ASSERT_EQ(res->params.size(), 2u);
  EXPECT_TRUE(res->params[0].identified);
  EXPECT_FALSE(res->params[1].identified);
  EXPECT_DOUBLE_EQ(res->cost.allreduce_latency_s, CostParams{}.allreduce_latency_s);
  EXPECT_LT(res->in_sample.ttft_mean_ms, 0.05);
  EXPECT_EQ(res->runs, 2);
  EXPECT_TRUE(std::isfinite(res->leave_one_run_out.ttft_mean_ms));
  // The profile reads back with the fitted values.
  auto prof = ParseCalibrationProfile(CalibrationResultYaml(*res), "p.yaml");
  ASSERT_TRUE(prof.ok()) << prof.status().ToString();
  EXPECT_DOUBLE_EQ(prof->cost.front_end_s, res->cost.front_end_s);
  EXPECT_NE(prof->fit_yaml.find("allreduce_latency_s"), std::string::npos);
  EXPECT_NE(CalibrationResultText(*res).find("NOT IDENTIFIED"), std::string::npos);
  // A bench result's assumptions are part of what the profile says it was fitted on.
  EXPECT_NE(prof->fit_yaml.find("a.json: assumed workload:"), std::string::npos) << prof->fit_yaml;
}

// Two parameters the data see only as a sum: every prompt of a bench result has the
// mean input length (500 tokens), so front_end_s and 500 x front_end_s_per_prompt_token
// are one number. Each alone moves the objective (a one-at-a-time probe would call both
// identified); held off, the other makes up for it. The profile says so: one keeps its
// sourced value, naming the other, which is then identified and fitted to the sum.
TEST(Calibrate, ParametersTheDataSeeOnlyTogetherAreNamed) {
  BenchAssumptions a;
  a.gpu = "h100-sxm";
  auto row = ParseBenchServeJson(kBench, "a.json", a);
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  MeasurementRow r2 = *row;
  r2.experiment = r2.source = "b.json";
  r2.rate_rps = 4.0;
  std::vector<MeasurementRow> rows = {*row, r2};
  CostParams truth = VllmH100Calibration();
  truth.front_end_s = 0.015;
  const Status measured = MeasureBySimulation(rows, truth, 1);
  ASSERT_TRUE(measured.ok()) << measured.ToString();
  CalibrateOptions opt;
  opt.free = {"front_end_s", "front_end_s_per_prompt_token"};
  // Each can make up for the other's 25 % either way: 4 ms + 500 x 16 us = 12 ms.
  opt.start.front_end_s = 0.004;
  opt.start.front_end_s_per_prompt_token = 16e-6;
  opt.max_evaluations = 60;
  opt.leave_one_run_out = false;
  auto res = Calibrate(rows, opt);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  const std::string text = CalibrationResultText(*res);
  ASSERT_EQ(res->params.size(), 2u);
  EXPECT_NE(res->params[0].identified, res->params[1].identified) << text;
  const FittedParam& kept = res->params[0].identified ? res->params[1] : res->params[0];
  const FittedParam& fitted = res->params[0].identified ? res->params[0] : res->params[1];
  EXPECT_EQ(kept.traded_with, fitted.name) << text;
  EXPECT_DOUBLE_EQ(kept.value, kept.sourced);
  EXPECT_LT(kept.sensitivity, 0.005) << text;
  EXPECT_GE(fitted.sensitivity, 0.005) << text;
  EXPECT_NE(text.find(kept.name + ": not identified by these data (held 25 % off"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(fitted.name + " makes up for it"), std::string::npos) << text;
  EXPECT_NE(text.find(fitted.name + ": identified once " + kept.name + " is kept"),
            std::string::npos)
      << text;
  // The sum, the one number the data hold, is recovered.
  EXPECT_NEAR(res->cost.front_end_s + 500 * res->cost.front_end_s_per_prompt_token, 0.015, 0.0015)
      << text;
}

// gqa_kv_mbu = 0 ties GQA's KV efficiency to kv_mbu. Freed on MHA runs it is not
// identified and stays tied; freed on a GQA run it starts at kv_mbu's value and moves
// to what the run says (here a 70B TP4 stage simulated with GQA reads at 0.75).
TEST(Calibrate, GqaEfficiencyStaysTiedUntilGqaRunsIdentifyIt) {
  BenchAssumptions a;
  a.gpu = "h100-sxm";
  auto row = ParseBenchServeJson(kBench, "a.json", a);  // Llama-2-7B: MHA
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  std::vector<MeasurementRow> mha = {*row};
  Status measured = MeasureBySimulation(mha, VllmH100Calibration(), 1);
  ASSERT_TRUE(measured.ok()) << measured.ToString();
  CalibrateOptions opt;
  opt.free = {"gqa_kv_mbu"};
  opt.max_evaluations = 4;
  opt.leave_one_run_out = false;
  auto tied = Calibrate(mha, opt);
  ASSERT_TRUE(tied.ok()) << tied.status().ToString();
  ASSERT_EQ(tied->params.size(), 1u);
  EXPECT_FALSE(tied->params[0].identified);
  EXPECT_EQ(tied->cost.gqa_kv_mbu, 0);
  EXPECT_NE(CalibrationResultText(*tied).find("tied to kv_mbu"), std::string::npos)
      << CalibrationResultText(*tied);
  EXPECT_NE(CalibrationResultYaml(*tied).find("gqa_kv_mbu: 0  # 0: tied to kv_mbu"),
            std::string::npos);

  const std::string csv = std::string(TTFT_SHARED_DATA_DIR) + "/vllm-h100/calibration.csv";
  auto table = ReadMeasurements(csv);
  if (!table.ok()) GTEST_SKIP() << "calibration data not found at " << csv;
  std::vector<MeasurementRow> gqa;
  for (const auto& r : *table) {
    if (r.rate_rps == 20) gqa.push_back(r);  // general, 20 req/s: 128-sequence bursts
  }
  ASSERT_EQ(gqa.size(), 1u);
  CostParams truth = VllmH100Calibration();
  truth.gqa_kv_mbu = 0.75;
  measured = MeasureBySimulation(gqa, truth, 1);
  ASSERT_TRUE(measured.ok()) << measured.ToString();
  opt.max_evaluations = 24;
  auto fit = Calibrate(gqa, opt);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_TRUE(fit->params[0].identified);
  EXPECT_NEAR(fit->cost.gqa_kv_mbu, 0.75, 0.04) << CalibrationResultText(*fit);
  EXPECT_EQ(fit->cost.kv_mbu, VllmH100Calibration().kv_mbu);  // MHA's is untouched
}

// --seeds: each evaluation is the mean of `seeds` seeds, as `ttft validate --seeds` reports.
// Measurements that are a 3-seed mean of the truth are fitted exactly by a 3-seed
// evaluation at the truth, and not by a 1-seed one (one realisation of the arrivals).
TEST(Calibrate, SeedsAverageEachEvaluation) {
  BenchAssumptions a;
  a.gpu = "h100-sxm";
  auto row = ParseBenchServeJson(kBench, "a.json", a);
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  std::vector<MeasurementRow> rows = {*row};
  const Status measured = MeasureBySimulation(rows, VllmH100Calibration(), 3);
  ASSERT_TRUE(measured.ok()) << measured.ToString();
  CalibrateOptions opt;
  opt.free = {"front_end_s"};
  opt.max_evaluations = 4;
  opt.leave_one_run_out = false;
  opt.seeds = 3;
  auto three = Calibrate(rows, opt);
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(three->seeds, 3);
  EXPECT_DOUBLE_EQ(three->in_sample.ttft_mean_ms, 0);
  EXPECT_DOUBLE_EQ(three->in_sample.e2e_mean_ms, 0);
  EXPECT_NE(CalibrationResultYaml(*three).find("3 seeds"), std::string::npos);
  EXPECT_NE(CalibrationResultText(*three).find("(3 seeds each)"), std::string::npos);
  opt.seeds = 1;
  auto one = Calibrate(rows, opt);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_GT(one->in_sample.e2e_mean_ms + one->in_sample.ttft_p90_ms, 0);
  opt.seeds = 0;
  auto none = Calibrate(rows, opt);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("seeds"), std::string::npos);
}

// A free parameter named twice would be fitted as two parameters over one field (and
// listed twice); an unknown one is named.
TEST(Calibrate, FreeParametersAreKnownAndDistinct) {
  BenchAssumptions a;
  a.gpu = "h100-sxm";
  auto row = ParseBenchServeJson(kBench, "a.json", a);
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  CalibrateOptions opt;
  opt.max_evaluations = 2;
  opt.leave_one_run_out = false;
  opt.free = {"decode_mbu", "decode_mbu"};
  EXPECT_EQ(Calibrate({*row}, opt).status().message(), "free parameter 'decode_mbu': twice");
  opt.free = {"nonsense"};
  EXPECT_EQ(Calibrate({*row}, opt).status().message(), "free parameter 'nonsense': unknown");
}

}  // namespace
}  // namespace ttft
