// ttft validate: the measurement reader, the run driver and the comparison.
#include "ttft/validate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ttft {
namespace {

// The calibration file's columns that the reader needs, in a different order, for a
// small model at a low rate (fast to simulate).
constexpr char kHeader[] =
    "stage,experiment,notes,model_hf_id,tp,dtype,gpu,max_model_len,max_num_batched_tokens,"
    "max_num_seqs,prefix_caching,chunked_prefill,gpu_mem_util,num_groups,prompts_per_group,"
    "system_prompt_len,question_len,output_len,rate_rps,duration_s,ttft_mean_ms,ttft_p50_ms,"
    "ttft_p90_ms,ttft_p99_ms,e2e_mean_ms,e2e_p99_ms,decode_ms_per_token,n_failed\n";

std::string Row(int stage, double rate, double duration, const std::string& exp = "tiny") {
  return std::to_string(stage) + "," + exp +
         ",\"a note, with a comma\",meta-llama/Llama-2-7b-hf,1,float16,H100-SXM-80GB-HBM3,4096,"
         "2048,128,true,true,0.9,10,10,100,447,64," +
         std::to_string(rate) + "," + std::to_string(duration) + ",50,50,55,60,1000,1100,8,0\n";
}

TEST(ReadMeasurements, ColumnsByNameAndQuotedFields) {
  auto rows = ParseMeasurements(std::string(kHeader) + Row(0, 2, 30) + Row(1, 4, 30), "t.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  const MeasurementRow& r = (*rows)[1];
  EXPECT_EQ(r.experiment, "tiny");
  EXPECT_EQ(r.stage, 1);
  EXPECT_EQ(r.model_hf_id, "meta-llama/Llama-2-7b-hf");
  EXPECT_EQ(r.workload.question_len, 447);
  EXPECT_EQ(r.workload.output_len, 64);
  EXPECT_DOUBLE_EQ(r.rate_rps, 4);
  EXPECT_DOUBLE_EQ(r.measured.decode_ms_per_token, 8);
  EXPECT_TRUE(std::isnan(r.measured.out_tok_s));  // optional column absent
  EXPECT_EQ(r.source, "t.csv:3");
}

// The table's out_tok_s counts re-tokenised text; it is compared in generated tokens.
TEST(ReadMeasurements, OutputThroughputIsRescaledToGeneratedTokens) {
  std::string header = kHeader;
  header.replace(header.size() - 1, 1, ",out_tok_s,output_tokens_mean\n");
  std::string row = Row(0, 2, 30);
  row.replace(row.size() - 1, 1, ",100,50\n");  // 64 generated, re-tokenised as 50
  auto rows = ParseMeasurements(header + row, "t.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_DOUBLE_EQ((*rows)[0].measured.out_tok_s, 100.0 * 64 / 50);
  std::string zero = Row(0, 2, 30);
  zero.replace(zero.size() - 1, 1, ",100,0\n");
  rows = ParseMeasurements(header + zero, "t.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ((*rows)[0].skip_reason, "t.csv:2: output_tokens_mean: must be > 0");
}

// Rows that would be used wrongly are skipped with their reason, the rest of the table
// goes on: a repeated stage (a table pasted twice), a row cut short (a truncated file's
// last line would take vLLM's defaults for its missing settings), a cell not UTF-8.
TEST(ReadMeasurements, RepeatedCutAndNonUtf8RowsAreSkippedWithTheirReason) {
  const std::string cut = Row(2, 2, 30).substr(0, 40);
  std::string utf8 = Row(3, 2, 30);
  utf8.replace(utf8.find("a note"), 6, "a n\xffte");
  auto r = ParseMeasurements(
      std::string(kHeader) + Row(0, 2, 30) + Row(1, 2, 30) + Row(0, 2, 30) + utf8 + cut, "t.csv");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_TRUE((*r)[0].skip_reason.empty()) << (*r)[0].skip_reason;
  EXPECT_TRUE((*r)[1].skip_reason.empty()) << (*r)[1].skip_reason;
  EXPECT_EQ((*r)[2].skip_reason, "t.csv:4: experiment tiny stage 0 repeats the row at t.csv:2");
  EXPECT_EQ((*r)[3].skip_reason, "t.csv:5: notes: not valid UTF-8");
  EXPECT_NE((*r)[4].skip_reason.find("t.csv:6: 4 cells, the header has 28 (a row cut short?)"),
            std::string::npos)
      << (*r)[4].skip_reason;
  // Across files (calibrate's several tables), the later file's repeat is the one left out.
  std::vector<MeasurementRow> both =
      *ParseMeasurements(std::string(kHeader) + Row(0, 2, 30), "a.csv");
  auto b = ParseMeasurements(std::string(kHeader) + Row(0, 2, 30), "b.csv");
  both.push_back((*b)[0]);
  MarkRepeatedStages(both);
  EXPECT_TRUE(both[0].skip_reason.empty());
  EXPECT_EQ(both[1].skip_reason, "b.csv:2: experiment tiny stage 0 repeats the row at a.csv:2");
}

TEST(ReadMeasurements, ErrorsNameFileLineAndColumn) {
  std::string bad = std::string(kHeader) + Row(0, 2, 30);
  bad.replace(bad.find(",true,true,"), 11, ",true,maybe,");
  auto r = ParseMeasurements(bad, "t.csv");
  // A bad cell skips its row (with the reason), not the table.
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_NE((*r)[0].skip_reason.find("t.csv:2: chunked_prefill"), std::string::npos)
      << (*r)[0].skip_reason;
  std::string no_col = kHeader;
  no_col.replace(no_col.find("rate_rps"), 8, "rate_rpz");
  r = ParseMeasurements(no_col + Row(0, 2, 30), "t.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.csv:1: rate_rps: required column"), std::string::npos)
      << r.status().message();
  r = ParseMeasurements(std::string(kHeader) + "0,tiny,\"unterminated\n", "t.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.csv:3: unterminated quoted field"), std::string::npos)
      << r.status().message();
  // A negative measurement skips its row: the error percentages divide by it.
  std::string negative = std::string(kHeader) + Row(0, 2, 30);
  negative.replace(negative.find(",50,50,55,"), 10, ",50,50,-55,");
  r = ParseMeasurements(negative, "t.csv");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE((*r)[0].skip_reason.find("t.csv:2: ttft_p90_ms: -55 is negative"), std::string::npos)
      << (*r)[0].skip_reason;
  // RFC 4180: a closing quote is followed by a comma or the end of the record.
  std::string glued = std::string(kHeader) + Row(0, 2, 30);
  glued.replace(glued.find("\"a note"), 7, "\"a\"note");
  r = ParseMeasurements(glued, "t.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.csv:2: text after the closing quote"), std::string::npos)
      << r.status().message();
}

TEST(ReadMeasurements, CrlfBlankLinesAndQuotedNewlines) {
  std::string text = std::string(kHeader) + "\n" + Row(0, 2, 30) + Row(1, 4, 30);
  text.replace(text.rfind("\"a note"), 7, "\"a\nnote");  // the second row spans two lines
  std::string crlf;
  for (char c : text) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  for (const std::string& t : {text, crlf}) {
    auto rows = ParseMeasurements(t, "t.csv");
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    ASSERT_EQ(rows->size(), 2u);
    EXPECT_EQ((*rows)[0].source, "t.csv:3");
    EXPECT_EQ((*rows)[1].source, "t.csv:4");
    EXPECT_EQ((*rows)[1].experiment, "tiny");
    EXPECT_DOUBLE_EQ((*rows)[1].measured.decode_ms_per_token, 8);
  }
}

// The engine columns blanked (as published tables often leave them): vLLM's defaults,
// named per row; a row that still cannot be simulated is skipped, the rest go on.
TEST(ReadMeasurements, EmptyEngineSettingsTakeVllmDefaults) {
  std::string row = Row(0, 2, 30);
  // model_hf_id,tp,dtype,gpu,max_model_len,max_num_batched_tokens,max_num_seqs,
  // prefix_caching,chunked_prefill,gpu_mem_util
  row.replace(row.find(",1,float16,H100-SXM-80GB-HBM3,4096,2048,128,true,true,0.9,"), 58,
              ",,,H100-SXM-80GB-HBM3,,,,,,,");
  std::string unknown = Row(0, 2, 30, "other");
  unknown.replace(unknown.find("meta-llama/Llama-2-7b-hf"), 24, "acme/unknown-model");
  std::string bad = Row(0, 2, 30, "bad");
  bad.replace(bad.find(",64,2.0"), 4, ",x,");
  auto rows = ParseMeasurements(std::string(kHeader) + row + unknown + bad, "t.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 3u);
  const MeasurementRow& r = (*rows)[0];
  EXPECT_TRUE(r.skip_reason.empty()) << r.skip_reason;
  EXPECT_EQ(r.tp, 1);
  EXPECT_EQ(r.max_model_len, 4096);  // Llama-2's max_position_embeddings
  EXPECT_EQ(r.max_num_batched_tokens, 8192);
  EXPECT_EQ(r.max_num_seqs, 1024);
  EXPECT_TRUE(r.prefix_caching);
  EXPECT_TRUE(r.chunked_prefill);
  EXPECT_DOUBLE_EQ(r.gpu_mem_util, 0.9);
  ASSERT_EQ(r.defaults_used.size(), 9u);  // kv_block_size: column absent
  std::string all;
  for (const auto& d : r.defaults_used) all += d + "\n";
  EXPECT_NE(all.find("max_num_seqs=1024 (vLLM default"), std::string::npos) << all;
  EXPECT_NE(all.find("max_model_len=4096"), std::string::npos) << all;
  EXPECT_NE((*rows)[1].skip_reason.find("t.csv:3: model_hf_id"), std::string::npos)
      << (*rows)[1].skip_reason;
  EXPECT_NE((*rows)[2].skip_reason.find("t.csv:4: output_len"), std::string::npos)
      << (*rows)[2].skip_reason;

  ValidateOptions opt;
  opt.repeats = 1;
  auto rep = RunValidation(*rows, opt);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  ASSERT_EQ(rep->rows.size(), 1u);
  ASSERT_EQ(rep->skipped.size(), 2u);
  EXPECT_EQ(rep->skipped[0].source, "t.csv:3");
  EXPECT_GT(rep->rows[0].simulated.ttft_mean_ms, 0);
  const std::string text = ValidationText(*rep);
  EXPECT_NE(text.find("engine setting left empty: max_num_seqs=1024"), std::string::npos) << text;
  EXPECT_NE(text.find("other stage 0: SKIPPED"), std::string::npos) << text;
  const auto j = ValidationJson(*rep);
  EXPECT_EQ(j["skipped"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["engine_defaults_used"].size(), 9u);
}

// A small GPU (below 70 GiB, or an A100) gets vLLM's small defaults.
TEST(ApplyVllmDefaults, SmallDefaultsOnAnA100) {
  MeasurementRow m;
  m.source = "t.csv:2";
  m.model_hf_id = "meta-llama/Llama-2-7b-hf";
  m.gpu = "a100-80gb";
  ApplyVllmDefaults(m, {"max_num_batched_tokens", "max_num_seqs", "max_model_len"});
  EXPECT_TRUE(m.skip_reason.empty()) << m.skip_reason;
  EXPECT_EQ(m.max_num_batched_tokens, 2048);
  EXPECT_EQ(m.max_num_seqs, 256);
  // Without chunked prefill the budget must hold a whole max_model_len prompt.
  MeasurementRow n = m;
  n.defaults_used.clear();
  n.chunked_prefill = false;
  n.max_num_seqs = 4;
  ApplyVllmDefaults(n, {"max_num_batched_tokens"});
  EXPECT_EQ(n.max_num_batched_tokens, 4096);
}

TEST(SimulateRun, StagesRunBackToBackAndReuseThePrompts) {
  auto rows = ParseMeasurements(std::string(kHeader) + Row(1, 4, 60) + Row(0, 2, 60), "t.csv");
  ASSERT_TRUE(rows.ok());
  ValidateOptions opt;
  auto res = SimulateRun(*rows, opt);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(res->size(), 2u);
  EXPECT_EQ((*res)[0].stage, 0);  // sorted by stage
  EXPECT_EQ((*res)[0].sim_requests, 120);
  EXPECT_EQ((*res)[1].sim_requests, 240);
  // 100 prompts re-sent cyclically: after the first 100 every full block is cached.
  // Stage 0 sends each prompt 1.2 times on average, stage 1 2.4 times, all warm.
  EXPECT_GT((*res)[0].sim_prefix_hit_rate, 0.05);
  EXPECT_GT((*res)[1].sim_prefix_hit_rate, 0.9);
  EXPECT_LT((*res)[1].simulated.ttft_mean_ms, (*res)[0].simulated.ttft_p99_ms);
  for (const auto& r : *res) {
    EXPECT_FALSE(r.simulated_overloaded);
    EXPECT_EQ(r.sim_failed, 0);
    // Decode interval: a 7B model's weights stream in a few ms per step on an H100.
    EXPECT_GT(r.simulated.decode_ms_per_token, 3);
    EXPECT_LT(r.simulated.decode_ms_per_token, 12);
    EXPECT_GT(r.simulated.ttft_mean_ms, opt.cost.front_end_s * 1e3);
    EXPECT_NEAR(r.simulated.out_tok_s, r.rate_rps * 64, r.rate_rps * 64 * 0.15);
  }
}

TEST(SimulateRun, AProfilesAsyncSchedulingFillsOnlyRowsThatLeaveItEmpty) {
  auto unstated = ParseMeasurements(std::string(kHeader) + Row(0, 2, 60), "t.csv");
  std::string header = kHeader;
  header.insert(header.size() - 1, ",async_scheduling");
  std::string row = Row(0, 2, 60);
  row.insert(row.size() - 1, ",true");
  auto stated = ParseMeasurements(header + row, "s.csv");
  ASSERT_TRUE(unstated.ok() && stated.ok());
  EXPECT_FALSE((*unstated)[0].async_scheduling_stated);
  EXPECT_TRUE((*stated)[0].async_scheduling_stated);
  auto ttft_ms = [](const std::vector<MeasurementRow>& rows, std::optional<bool> async) {
    ValidateOptions opt;
    opt.repeats = 1;
    opt.async_scheduling = async;
    auto res = SimulateRun(rows, opt);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    return res.ok() ? (*res)[0].simulated.ttft_mean_ms : -1.0;
  };
  const double by_default = ttft_ms(*unstated, std::nullopt);  // v0.15.1's: on
  EXPECT_DOUBLE_EQ(ttft_ms(*unstated, true), by_default);
  // Off, a request arriving during a step joins the next one instead of the one after:
  // about one 7B decode step (~6 ms) sooner.
  const double profile_off = ttft_ms(*unstated, false);
  EXPECT_LT(profile_off, by_default - 2.0);
  // A cell that states it wins over the profile.
  EXPECT_DOUBLE_EQ(ttft_ms(*stated, false), by_default);
}

TEST(RunValidation, SeedRangeBracketsTheMeanAndCountsTheMeasurementsInside) {
  auto rows = ParseMeasurements(std::string(kHeader) + Row(0, 4, 60), "t.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ValidateOptions opt;
  opt.repeats = 3;
  auto rep = RunValidation(*rows, opt);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  ASSERT_EQ(rep->rows.size(), 1u);
  const StageResult& r = rep->rows[0];
  auto seed_ttft_p99 = [&](uint64_t seed) {
    ValidateOptions one = opt;
    one.repeats = 1;
    one.seed = seed;
    auto res = SimulateRun(*rows, one);
    EXPECT_TRUE(res.ok());
    return res.ok() ? (*res)[0].simulated.ttft_p99_ms : -1.0;
  };
  const double p99[] = {seed_ttft_p99(1), seed_ttft_p99(2), seed_ttft_p99(3)};
  EXPECT_DOUBLE_EQ(r.sim_seed_min.ttft_p99_ms, *std::min_element(p99, p99 + 3));
  EXPECT_DOUBLE_EQ(r.sim_seed_max.ttft_p99_ms, *std::max_element(p99, p99 + 3));
  EXPECT_NEAR(r.simulated.ttft_p99_ms, (p99[0] + p99[1] + p99[2]) / 3, 1e-9);
  EXPECT_LT(r.sim_seed_min.ttft_p99_ms, r.sim_seed_max.ttft_p99_ms);  // seeds differ
  // The row's measured TTFT mean is 50 ms and its E2E mean 1,000 ms: the count is what
  // the range says, per metric.
  const bool ttft_in = r.sim_seed_min.ttft_mean_ms <= 50 && 50 <= r.sim_seed_max.ttft_mean_ms;
  EXPECT_EQ(rep->in_seed_range.ttft_mean_ms, ttft_in ? 1 : 0);
  EXPECT_EQ(rep->mape_count.ttft_mean_ms, 1);
  const std::string text = ValidationText(*rep);
  EXPECT_NE(text.find("seed min"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("in range   {:>10}", fmt::format("{}/1", ttft_in ? 1 : 0))),
            std::string::npos)
      << text;
  EXPECT_EQ(ValidationJson(*rep)["rows"][0]["simulated_seed_max"]["ttft_p99"].get<double>(),
            r.sim_seed_max.ttft_p99_ms);
  // One seed: no range lines (min = max = the value).
  opt.repeats = 1;
  auto single = RunValidation(*rows, opt);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(ValidationText(*single).find("seed min"), std::string::npos);
  EXPECT_DOUBLE_EQ(single->rows[0].sim_seed_min.ttft_p99_ms, p99[0]);
}

TEST(SimulateRun, OverloadIsFlaggedNotAveragedAway) {
  // 40 req/s of 1,000-token outputs on a 7B replica capped at 16 sequences: the queue
  // grows through the run.
  std::string row = Row(0, 40, 60, "over");
  row.replace(row.find(",128,"), 5, ",16,");
  row.replace(row.find(",64,"), 4, ",1000,");
  auto rows = ParseMeasurements(std::string(kHeader) + row, "t.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ValidateOptions opt;
  opt.client_timeout_s = 60;
  auto rep = RunValidation(*rows, opt);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  const StageResult& r = rep->rows[0];
  EXPECT_TRUE(r.simulated_overloaded);
  EXPECT_FALSE(r.measured_overloaded);  // the made-up measurement says 50 ms
  // Requests the client gave up on are aborted at the 60 s timeout, so TTFT saturates
  // there while the queue keeps growing.
  EXPECT_GT(r.sim_waiting_last_third, 3 * r.sim_waiting_first_third);
  EXPECT_GT(r.sim_ttft_last_third_s, 0.9 * opt.client_timeout_s);
  EXPECT_LE(r.sim_ttft_last_third_s, opt.client_timeout_s);
  // The stage ends when the last send has timed out (60 s of sends + 60 s), not when a
  // 16-sequence engine would have worked through every request (~15 minutes).
  const double span_s =
      static_cast<double>(r.sim_requests - r.sim_failed) * 1000 / r.simulated.out_tok_s;
  EXPECT_LT(span_s, 60 + opt.client_timeout_s + 2);
  EXPECT_GT(r.sim_failed, 0);
  // A stable measured row counts in the MAPE, with its (huge) error.
  EXPECT_EQ(rep->mape_rows, 1);
  EXPECT_GT(rep->mape.ttft_mean_ms, 10);
  const auto j = ValidationJson(*rep);
  EXPECT_TRUE(j["rows"][0]["overloaded"].get<bool>());
  EXPECT_TRUE(j["mape"].contains("decode_ms_per_token"));
}

// The calibration data (../shared/data/vllm-h100): the targets hold in sample,
// and the overloaded reasoning run is flagged on both sides.
TEST(Calibration, TargetsOnTheCalibrationData) {
  const std::filesystem::path csv =
      std::filesystem::path(TTFT_SHARED_DATA_DIR) / "vllm-h100" / "calibration.csv";
  if (!std::filesystem::exists(csv)) {
    GTEST_SKIP() << "calibration data not found at " << csv.string();
  }
  auto rows = ReadMeasurements(csv.string());
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  auto rep = RunValidation(*rows, ValidateOptions{});
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  ASSERT_EQ(rep->rows.size(), 6u);
  EXPECT_EQ(rep->mape_rows, 5);
  for (const auto& r : rep->rows) {
    const bool reasoning = r.experiment.find("reasoning") != std::string::npos;
    EXPECT_EQ(r.measured_overloaded, reasoning) << r.experiment;
    EXPECT_EQ(r.simulated_overloaded, reasoning) << r.experiment;
  }
  EXPECT_LE(rep->mape.ttft_mean_ms, 0.15);
  EXPECT_LE(rep->mape.decode_ms_per_token, 0.07);
  EXPECT_LE(rep->mape.e2e_mean_ms, 0.08);
}

}  // namespace
}  // namespace ttft
