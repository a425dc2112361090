// Integration tests: drive the real `ttft` binary as a user would.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include "run_ttft.h"

namespace {

using ttft::testing::ReadFile;
using ttft::testing::RunResult;
using ttft::testing::RunTtft;
using ttft::testing::TempDir;

namespace fs = std::filesystem;

std::string WriteFile(const fs::path& dir, const std::string& name, const std::string& text) {
  fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

TEST(Cli, VersionAndHelpOnEverySubcommand) {
  RunResult v = RunTtft("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_THAT(v.out, ::testing::HasSubstr("ttft "));
  for (const char* sub : {"drill", "simulate", "cost", "stats"}) {
    RunResult h = RunTtft(std::string(sub) + " --help");
    EXPECT_EQ(h.exit_code, 0) << sub;
    EXPECT_THAT(h.out, ::testing::HasSubstr("Usage")) << sub;
  }
  EXPECT_EQ(RunTtft("no-such-command").exit_code, 2);
}

// The seed's signature, checked from the drill's JSON (not from its own verdicts).
TEST(Drill, ReproducesTheSeedSignature) {
  RunResult r = RunTtft("drill --format json --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto& b = j["baseline"];
  const auto& i = j["incident"];
  for (const char* key :
       {"requests", "ttft_p50_s", "ttft_p99_s", "queue_p99_s", "prefill_p99_s", "itl_p50_s",
        "error_rate", "replicas", "prefix_cache_hit_rate", "prompt_tokens_p99", "preemptions"}) {
    EXPECT_TRUE(b.contains(key) && i.contains(key)) << key;
  }
  const double b99 = b["ttft_p99_s"], i99 = i["ttft_p99_s"];
  EXPECT_GE(b99, 0.7);
  EXPECT_LE(b99, 1.1);
  EXPECT_GE(i99 / b99, 4.0);
  EXPECT_LE(i["ttft_p50_s"].get<double>() / b["ttft_p50_s"].get<double>(), 1.6);
  EXPECT_GE(b["prefix_cache_hit_rate"].get<double>(), 0.75);
  EXPECT_LE(i["prefix_cache_hit_rate"].get<double>(), 0.05);
  EXPECT_GE(i["queue_p99_s"].get<double>() / b["queue_p99_s"].get<double>(), 5.0);
  EXPECT_EQ(b["error_rate"], i["error_rate"]);
  EXPECT_EQ(b["replicas"], i["replicas"]);
  // The cost check rides along: both seed numbers within 15%.
  EXPECT_NEAR(j["cost"]["prefill_1000_after_5000_cached_s"].get<double>(), 0.07, 0.07 * 0.15);
  EXPECT_NEAR(j["cost"]["prefill_6000_uncached_s"].get<double>(), 0.42, 0.42 * 0.15);
}

TEST(Drill, TextOutputHasTheSymptomTable) {
  RunResult r = RunTtft("drill --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"p50 TTFT", "p99 TTFT", "p99 queue time", "p99 prefill time",
                        "inter-token latency", "error rate", "replicas", "prefix-cache hit rate",
                        "p99 prompt tokens", "preemptions", "deploy_template"}) {
    EXPECT_THAT(r.out, ::testing::HasSubstr(s));
  }
  EXPECT_THAT(r.out, ::testing::Not(::testing::HasSubstr("\033[")));  // no colour off a TTY
}

// The drill's JSON carries the diagnosis: the seed's deploy ranks prefix_cache_collapse first.
TEST(Drill, JsonCarriesRankedHypotheses) {
  RunResult r = RunTtft("drill --format json --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "--quiet: nothing on standard error";
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "regression");
  ASSERT_TRUE(j["hypotheses"].is_array());
  ASSERT_GE(j["hypotheses"].size(), 2u);
  EXPECT_EQ(j["hypotheses"][0]["id"], "prefix_cache_collapse");
  EXPECT_GT(j["hypotheses"][0]["confidence"].get<double>(),
            j["hypotheses"][1]["confidence"].get<double>());
  EXPECT_EQ(j["diagnosis"]["actions"][0]["kind"], "mitigate");
}

// Evidence lines of hypothesis `id` in a drill's JSON, joined.
std::string EvidenceOf(const nlohmann::json& j, const std::string& id) {
  std::string out;
  for (const auto& h : j["hypotheses"]) {
    if (h["id"] != id) continue;
    for (const auto& e : h["evidence"]) out += e.get<std::string>() + "\n";
  }
  return out;
}

// Follow-up 1: the same symptom with no deploy; a new tenant with unique per-user
// preambles. The split is per-tenant prompt p99 and hit rate.
TEST(Drill, NoDeployVariantRanksTrafficMix) {
  RunResult r = RunTtft("drill --variant no-deploy --format json --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["variant"], "no-deploy");
  EXPECT_EQ(j["verdict"], "regression");
  EXPECT_TRUE(j["events"].empty()) << "no deploy in this variant";
  ASSERT_FALSE(j["hypotheses"].empty());
  EXPECT_EQ(j["hypotheses"][0]["id"], "traffic_mix");
  const std::string ev = EvidenceOf(j, "traffic_mix");
  EXPECT_THAT(ev, ::testing::HasSubstr("tenant newco"));
  EXPECT_THAT(ev, ::testing::HasSubstr("per-tenant prompt p99 and hit rate"));
  // The mitigation sheds the tenant; there is nothing to roll back.
  const auto& act = j["diagnosis"]["actions"][0];
  EXPECT_EQ(act["kind"], "mitigate");
  EXPECT_THAT(act["text"].get<std::string>(), ::testing::HasSubstr("rate-limit tenant newco"));
  RunResult t = RunTtft("drill --variant no-deploy --quiet");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_THAT(t.out, ::testing::HasSubstr("1. traffic_mix"));
}

// Follow-up 2: one region's pool shrank after a drain. The split is replica counts and
// per-replica hit rate by region.
TEST(Drill, OneRegionVariantRanksRegionCapacity) {
  RunResult r = RunTtft("drill --variant one-region --format json --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["variant"], "one-region");
  EXPECT_EQ(j["verdict"], "regression");
  ASSERT_FALSE(j["hypotheses"].empty());
  EXPECT_EQ(j["hypotheses"][0]["id"], "region_capacity");
  const std::string ev = EvidenceOf(j, "region_capacity");
  EXPECT_THAT(ev, ::testing::HasSubstr("region eu-west: replicas 3 -> 1"));
  EXPECT_THAT(ev, ::testing::HasSubstr("per-replica hit rate in eu-west"));
  EXPECT_THAT(ev, ::testing::HasSubstr("eu-rag-0"));
  const auto& act = j["diagnosis"]["actions"][0];
  EXPECT_EQ(act["kind"], "mitigate");
  EXPECT_THAT(act["text"].get<std::string>(), ::testing::HasSubstr("Undrain"));
  int mitigations = 0;
  for (const auto& a : j["diagnosis"]["actions"]) mitigations += a["kind"] == "mitigate";
  EXPECT_EQ(mitigations, 1) << "the drain of eu-rag-0,eu-rag-1 is one action";
  // A variant is a scenario: both together are refused.
  RunResult both = RunTtft("drill --variant one-region --scenario seed-drill.yaml --quiet");
  EXPECT_EQ(both.exit_code, 2);
}

// Progress goes to standard error only on a terminal: never into a pipe or file.
TEST(Drill, NoProgressOffATerminal) {
  RunResult r = RunTtft("drill --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("simulating"), std::string::npos) << r.err;
}

TEST(Simulate, WritesSpansMetricsAndSummaryByteForByte) {
  fs::path a = TempDir("sim_a"), b = TempDir("sim_b");
  RunResult ra = RunTtft("simulate seed-drill --duration 300 --quiet --out " + a.string());
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  RunResult rb = RunTtft("simulate seed-drill --duration 300 --quiet --out " + b.string());
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ(ReadFile(a / "spans.jsonl"), ReadFile(b / "spans.jsonl"));
  EXPECT_EQ(ReadFile(a / "summary.json"), ReadFile(b / "summary.json"));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(a / "metrics")) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 20u);  // every 15 s over 300 s, plus the final one
  EXPECT_EQ(names.front(), "t000000015.000.prom");
  for (const auto& n : names) EXPECT_EQ(ReadFile(a / "metrics" / n), ReadFile(b / "metrics" / n));
  auto summary = nlohmann::json::parse(ReadFile(a / "summary.json"));
  EXPECT_GT(summary["requests"].get<int64_t>(), 1000);
  EXPECT_TRUE(summary["events"].is_array());
  // Every span line is JSON with the documented keys.
  std::ifstream spans(a / "spans.jsonl");
  std::string line;
  int64_t lines = 0;
  while (std::getline(spans, line)) {
    auto s = nlohmann::json::parse(line);
    for (const char* k :
         {"request_id",    "arrival_s",     "queue_s",     "prefill_s", "ttft_s",
          "decode_s",      "e2e_s",         "itl_mean_s",  "itl_max_s", "prompt_tokens",
          "cached_tokens", "output_tokens", "preemptions", "status",    "replica",
          "region",        "tenant",        "model",       "template",  "deploy"}) {
      ASSERT_TRUE(s.contains(k)) << k;
    }
    ++lines;
  }
  EXPECT_EQ(lines, summary["requests"].get<int64_t>());
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST(Simulate, SummaryEventsAreInTheSpansTimeBase) {
  fs::path d = TempDir("sim_events");
  RunResult r = RunTtft("simulate seed-drill --quiet --out " + d.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto summary = nlohmann::json::parse(ReadFile(d / "summary.json"));
  ASSERT_GE(summary["events"].size(), 1u);
  EXPECT_EQ(summary["events"][0]["kind"], "deploy_template");
  EXPECT_DOUBLE_EQ(summary["events"][0]["at_s"].get<double>(), 1800.0);
  fs::remove_all(d);
}

// Bad input: a one-line error naming file, line and field; exit 2; no summary.
struct BadCase {
  const char* name;
  const char* yaml;
  const char* expect;  // substring of the message
};

constexpr const char* kGood = R"(name: t
duration_s: 60
defaults: {model: llama-3.1-8b, gpu: h100-sxm, dtype: bf16, tp: 1, max_model_len: 8192}
replicas: [{name: r, count: 1}]
templates:
  - name: app
    versions:
      - version: v1
        segments: [{name: sys, kind: static, tokens: 100}]
tenants: [{name: a, template: app, version: v1, rate_rps: 2}]
)";

TEST(BadInput, OneLineErrorsWithFileLineFieldAndExit2) {
  fs::path d = TempDir("bad");
  const std::string good = WriteFile(d, "good.yaml", kGood);
  ASSERT_EQ(RunTtft("simulate " + good + " --quiet --out " + (d / "good_out").string()).exit_code,
            0);
  std::string base = kGood;
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {replace("llama-3.1-8b", "gpt-17"), ":3: defaults.model"},
      {replace("gpu: h100-sxm", "gpu: tpu-v9"), ":3: defaults.gpu"},
      {replace("tp: 1", "tp: 3"), "does not divide"},
      {replace("rate_rps: 2", "rate_rps: -1"), ":10: tenants[0].rate_rps"},
      {replace("rate_rps: 2", "rate_rps: 0"), "tenants[0].rate_rps"},
      {replace("max_model_len: 8192", "max_model_len: 9000000"), "max_model_len"},
      {replace("duration_s: 60", "duration_s: [60"), "bad.yaml:"},
  };
  int i = 0;
  for (const auto& [yaml, expect] : cases) {
    const std::string path = WriteFile(d, "bad.yaml", yaml);
    const fs::path out = d / ("out" + std::to_string(i++));
    RunResult r = RunTtft("simulate " + path + " --quiet --out " + out.string());
    EXPECT_EQ(r.exit_code, 2) << expect << "\n" << r.err;
    EXPECT_THAT(r.err, ::testing::HasSubstr(expect));
    EXPECT_THAT(r.err, ::testing::HasSubstr("bad.yaml"));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(out / "summary.json"));
  }
  // A missing trace file is named.
  const std::string trace_yaml =
      std::string(kGood) + "traces: [{format: mooncake, path: nope.jsonl, tenant: mc}]\n";
  RunResult r = RunTtft("simulate " + WriteFile(d, "bad.yaml", trace_yaml) + " --quiet --out " +
                        (d / "t").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, ::testing::HasSubstr("nope.jsonl"));
  // A missing scenario file.
  EXPECT_EQ(RunTtft("simulate /no/such.yaml --out " + (d / "x").string()).exit_code, 2);
  fs::remove_all(d);
}

// Integer flags refuse, naming the flag and the range, what CLI11 alone would bend:
// a value past the type's range (saturated), "-1" for an unsigned seed (wrapped to
// 2^64 - 1), hex and octal spellings, and a float. Each exits 2 before any work.
TEST(BadInput, IntegerFlagsRefuseWhatCli11WouldSaturateWrapOrReadAsHex) {
  const fs::path d = TempDir("int_flags");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"simulate seed-drill --out OUT --seed 99999999999999999999",
       "--seed: must be an integer in 0..9223372036854775807, got 99999999999999999999"},
      {"drill --out OUT --seed 010",
       "--seed: must be an integer in 0..9223372036854775807, got 010"},
      {"validate x.csv --seed -1", "--seed: must be an integer in 0..18446744073709551615, got -1"},
      {"calibrate x.csv --out OUT --seed 18446744073709551616", "--seed: must be an integer"},
      {"validate x.csv --seeds 0x5", "--seeds: must be an integer in 1..1000, got 0x5"},
      {"diagnose x --min-requests 99999999999999999999", "--min-requests: must be an integer"},
      {"lint --first-tokens 1e3 x", "--first-tokens: must be an integer"},
      {"cost --batch 2000000", "--batch: must be an integer in 1..1048576, got 2000000"},
      {"cost --tp 0x2", "--tp: must be an integer"},
      {"cost --tp +-2", "--tp: must be an integer"},
  };
  for (const auto& [args, says] : cases) {
    std::string cmd = args;
    if (const size_t at = cmd.find("OUT"); at != std::string::npos) {
      cmd.replace(at, 3, (d / "out").string());
    }
    RunResult r = RunTtft(cmd, 30);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_THAT(r.err, ::testing::HasSubstr(says)) << args;
    EXPECT_FALSE(fs::exists(d / "out")) << args;
  }
  // What they take: decimal, with an optional '+'; the maximum itself.
  RunResult plus = RunTtft("cost --tp +4 --format json", 30);
  EXPECT_EQ(plus.exit_code, 0) << plus.err;
  EXPECT_THAT(plus.out, ::testing::HasSubstr("\"tp\": 4"));
  RunResult max = RunTtft("cost --batch 1048576 --format json", 30);
  EXPECT_EQ(max.exit_code, 0) << max.err;
  fs::remove_all(d);
}

// `ttft diagnose` on bad input: clear one-line errors (exit 2), or an honest
// insufficient_data verdict with the counts. One simulated run feeds every case.
class DiagnoseErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(TempDir("diag_err"));
    RunResult r = RunTtft("simulate seed-drill --quiet --out " + dir_->string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string Spans() { return (*dir_ / "spans.jsonl").string(); }
  // The spans with `arrival_s` shifted by `offset_s` and every `model` set to `model`.
  static std::string Rewritten(const std::string& name, double offset_s, const std::string& model) {
    std::ifstream in(*dir_ / "spans.jsonl");
    std::ofstream out(*dir_ / name);
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line);
      j["arrival_s"] = j["arrival_s"].get<double>() + offset_s;
      if (!model.empty()) j["model"] = model;
      out << j.dump() << "\n";
    }
    return (*dir_ / name).string();
  }
  static fs::path* dir_;
};
fs::path* DiagnoseErrors::dir_ = nullptr;

TEST_F(DiagnoseErrors, TooFewRequestsGiveInsufficientDataWithTheCounts) {
  RunResult r = RunTtft("diagnose " + Spans() +
                        " --baseline-window 0:5 --incident-window 5:10 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "insufficient_data");
  const std::string why = j["verdict_reason"];
  const int64_t nb = j["baseline"]["ok"], ni = j["incident"]["ok"];
  EXPECT_LT(nb, 100);
  EXPECT_THAT(why, ::testing::HasSubstr(std::to_string(nb) + " ok requests in the baseline"));
  EXPECT_THAT(why, ::testing::HasSubstr(std::to_string(ni) + " in the incident"));
  for (const auto& a : j["actions"]) EXPECT_NE(a["kind"], "mitigate") << "no confident answer";
  // --min-requests moves the bar: the same windows pass it at 10.
  RunResult low = RunTtft("diagnose " + Spans() +
                          " --baseline-window 0:5 --incident-window 5:10 --min-requests 10 "
                          "--format json");
  ASSERT_EQ(low.exit_code, 0) << low.err;
  EXPECT_NE(nlohmann::json::parse(low.out)["verdict"], "insufficient_data");
}

// --calibration prices the magnitude check with the profile's parameters and names it
// beside the cost model (half the prefill MFU: more compute per request).
TEST_F(DiagnoseErrors, CalibrationProfilePricesTheMagnitudeCheckAndIsNamed) {
  const fs::path prof = *dir_ / "half_mfu.yaml";
  std::ofstream(prof) << "ttft_calibration_profile: 1\ncost:\n  prefill_mfu: 0.31\n";
  const std::string cmd =
      "diagnose " + Spans() + " --change-at 1800 --no-attribution --format json";
  RunResult base = RunTtft(cmd);
  RunResult cal = RunTtft(cmd + " --calibration " + prof.string());
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  const auto b = nlohmann::json::parse(base.out)["explanation"];
  const auto c = nlohmann::json::parse(cal.out)["explanation"];
  EXPECT_EQ(b["cost_model"], "llama-3.3-70b fp8 tp2 h100-sxm");
  EXPECT_EQ(c["cost_model"], "llama-3.3-70b fp8 tp2 h100-sxm, calibration " + prof.string());
  EXPECT_GT(c["prefill_compute_before_s"].get<double>(),
            1.3 * b["prefill_compute_before_s"].get<double>());
}

// Malformed lines are skipped, counted and reported with file:line on standard
// error; the diagnosis still runs on the rest.
TEST_F(DiagnoseErrors, SkippedRecordsAreSummarisedNotLost) {
  std::ifstream in(*dir_ / "spans.jsonl");
  const fs::path bad = *dir_ / "with_bad_lines.jsonl";
  std::ofstream out(bad);
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    out << line << "\n";
    if (++n == 3) out << "{\"request_id\": \"broken\", \"ttft_s\": \n";  // line 4
  }
  out << "not json at all\n";
  out.close();
  RunResult r = RunTtft("diagnose " + bad.string() +
                        " --baseline-window 0:5 --incident-window 5:10 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, ::testing::HasSubstr("2 records skipped"));
  EXPECT_THAT(r.err, ::testing::HasSubstr(bad.string() + ":4"));
  EXPECT_FALSE(nlohmann::json::parse(r.out)["verdict"].get<std::string>().empty());
}

// An events file with fields of the wrong JSON type is read, not a crash.
TEST_F(DiagnoseErrors, EventsWithWrongTypesDoNotCrash) {
  const fs::path ev = *dir_ / "odd_events.json";
  std::ofstream(ev) << R"([{"at_s": 3, "kind": 3, "target": ["r"], "note": {"a": 1}}])";
  RunResult r = RunTtft("diagnose " + Spans() + " --events " + ev.string() +
                        " --baseline-window 0:5 --incident-window 5:10 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(nlohmann::json::parse(r.out)["verdict"].get<std::string>().empty());
}

TEST_F(DiagnoseErrors, OverlappingWindowsAreRefused) {
  RunResult r =
      RunTtft("diagnose " + Spans() + " --baseline-window 0:1000 --incident-window 900:2000");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, ::testing::HasSubstr("overlap"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(DiagnoseErrors, ChangeTimeOutsideTheDataIsRefused) {
  RunResult r = RunTtft("diagnose " + Spans() + " --change-at 99999");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, ::testing::HasSubstr("outside the data"));
  EXPECT_THAT(r.err, ::testing::HasSubstr("time base"));
  // An RFC 3339 time against spans in seconds of the run: the same message.
  RunResult rfc = RunTtft("diagnose " + Spans() + " --change-at 2025-06-01T12:00:00Z");
  EXPECT_EQ(rfc.exit_code, 2);
  EXPECT_THAT(rfc.err, ::testing::HasSubstr("outside the data"));
  // An absurd time in four significant digits, not 300.
  RunResult huge = RunTtft("diagnose " + Spans() + " --change-at 1e300");
  EXPECT_EQ(huge.exit_code, 2);
  EXPECT_THAT(huge.err, ::testing::HasSubstr("--change-at 1e+300 is outside the data"));
  EXPECT_LT(huge.err.size(), 300u) << huge.err;
  // --window's message says what its default 0 means.
  RunResult neg = RunTtft("diagnose " + Spans() + " --change-at 1800 --window=-1");
  EXPECT_EQ(neg.exit_code, 2);
  EXPECT_THAT(neg.err, ::testing::HasSubstr("--window must be a finite number >= 0 (0: as long"));
}

TEST_F(DiagnoseErrors, ExplicitWindowsThatAreEmptyOrMissTheDataAreRefused) {
  RunResult reversed =
      RunTtft("diagnose " + Spans() + " --baseline-window 900:0 --incident-window 900:1800");
  EXPECT_EQ(reversed.exit_code, 2);
  EXPECT_EQ(reversed.err,
            "ttft diagnose: --baseline-window \"900:0\": FROM (t=900 s) must be before TO "
            "(t=0 s)\n");
  RunResult unix_time = RunTtft("diagnose " + Spans() +
                                " --baseline-window 0:900 --incident-window "
                                "2025-06-01T12:00:00Z:2025-06-01T12:30:00Z");
  EXPECT_EQ(unix_time.exit_code, 2);
  EXPECT_THAT(unix_time.err,
              ::testing::HasSubstr("--incident-window [2025-06-01T12:00:00Z, 12:30:00Z) is "
                                   "outside the data, whose arrivals run from t="));
  EXPECT_EQ(std::count(unix_time.err.begin(), unix_time.err.end(), '\n'), 1) << unix_time.err;
  RunResult tp = RunTtft("diagnose " + Spans() + " --change-at 1800 --tp=-2 --no-attribution");
  EXPECT_EQ(tp.exit_code, 2);
  EXPECT_THAT(tp.err, ::testing::HasSubstr("--tp): must be >= 1"));
}

TEST_F(DiagnoseErrors, DifferentModelsAreNotComparable) {
  const std::string other = Rewritten("other_model.jsonl", 0, "llama-3.1-8b");
  RunResult r = RunTtft("diagnose --baseline " + Spans() + " --incident " + other);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, ::testing::HasSubstr("different models"));
  EXPECT_THAT(r.err, ::testing::HasSubstr("llama-3.1-8b"));
  // The same model on both sides is fine.
  EXPECT_EQ(RunTtft("diagnose --baseline " + Spans() + " --incident " + Spans() + " --format json")
                .exit_code,
            0);
}

// 1700000000 is 2023-11-14T22:13:20Z; the seed's deploy at t=1800 s is 22:43:20Z.
TEST_F(DiagnoseErrors, ChangeAtTakesRfc3339Times) {
  const std::string unix_spans = Rewritten("unix.jsonl", 1700000000.0, "");
  for (const char* t : {"2023-11-14T22:43:20Z", "2023-11-15T00:43:20+02:00",
                        "2023-11-14T20:43:20.000-02:00", "1700001800"}) {
    RunResult r =
        RunTtft("diagnose " + unix_spans + " --change-at " + t + " --window 1500 --format json");
    ASSERT_EQ(r.exit_code, 0) << t << ": " << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_DOUBLE_EQ(j["change_at_s"].get<double>(), 1700001800.0) << t;
    EXPECT_EQ(j["hypotheses"][0]["id"], "prefix_cache_collapse") << t;
  }
  for (const char* bad : {"2023-13-01T00:00:00Z", "2023-02-30T00:00:00Z", "2023-11-14T24:00:00Z",
                          "2023-11-14 22:43", "yesterday", "2023-11-14T22:43:20+25:00"}) {
    RunResult r = RunTtft("diagnose " + unix_spans + " --change-at '" + bad + "'");
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, ::testing::HasSubstr("RFC 3339")) << bad << ": " << r.err;
  }
}

// Metrics only: reduced fidelity, and the report lists the checks it could not run.
TEST_F(DiagnoseErrors, MetricsOnlyListsTheChecksNotRun) {
  std::string proms;
  for (const auto& e : fs::directory_iterator(*dir_ / "metrics")) proms += " " + e.path().string();
  RunResult r = RunTtft("diagnose" + proms + " --change-at 1800 --window 900 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["baseline"]["from_metrics"].get<bool>());
  std::vector<std::string> not_run;
  for (const auto& h : j["hypotheses"]) {
    if (!h["runnable"].get<bool>()) not_run.push_back(h["id"]);
  }
  // The series carry replica labels: bad_replica runs on them (issue 14); no series
  // carries a tenant, so traffic_mix cannot (nor region_capacity: one region here).
  EXPECT_THAT(not_run, ::testing::Not(::testing::Contains("bad_replica")));
  EXPECT_THAT(not_run, ::testing::Contains("traffic_mix"));
  EXPECT_THAT(not_run, ::testing::Not(::testing::Contains("prefix_cache_collapse")));
  std::string notes;
  for (const auto& n : j["fidelity_notes"]) notes += n.get<std::string>() + "\n";
  EXPECT_THAT(notes, ::testing::HasSubstr("metrics only"));
  EXPECT_THAT(notes, ::testing::HasSubstr("traffic_mix: not checked"));
  RunResult text = RunTtft("diagnose" + proms + " --change-at 1800 --window 900");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, ::testing::HasSubstr("Checks not run"));
  // One scrape per window is too little.
  RunResult one = RunTtft("diagnose " + (*dir_ / "metrics" / "t000001800.000.prom").string() +
                          " --change-at 1800 --window 900");
  EXPECT_EQ(one.exit_code, 2) << one.out;
  EXPECT_THAT(one.err, ::testing::HasSubstr("snapshots"));
  // Given as the baseline and the incident, they are read by the process start the
  // simulated scrapes carry, as a real vLLM's: totals, then the increase.
  RunResult two = RunTtft("diagnose --baseline " +
                          (*dir_ / "metrics" / "t000000900.000.prom").string() + " --incident " +
                          (*dir_ / "metrics" / "t000001800.000.prom").string() + " --format json");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const auto tj = nlohmann::json::parse(two.out);
  EXPECT_EQ(tj["baseline"]["from_s"], 0);
  EXPECT_EQ(tj["incident"]["from_s"], 900);
  std::string two_notes;
  for (const auto& n : tj["fidelity_notes"]) two_notes += n.get<std::string>() + "\n";
  EXPECT_THAT(two_notes, ::testing::HasSubstr("(900 s later; the same process start)"));
}

TEST(Cost, PrintsTheSeedNumbers) {
  RunResult r = RunTtft("cost --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"], "llama-3.3-70b");
  EXPECT_EQ(j["tp"], 2);
  EXPECT_NEAR(j["prefill_1000_after_5000_cached_s"].get<double>(), 0.07, 0.07 * 0.15);
  RunResult bad = RunTtft("cost --tp 3");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, ::testing::HasSubstr("tp"));
  // The calibration profile's range (it printed "MFU 0.00" and a 1e297 s prefill).
  RunResult tiny = RunTtft("cost --prefill-mfu 1e-300");
  EXPECT_EQ(tiny.exit_code, 2);
  EXPECT_EQ(tiny.err, "ttft cost: --prefill-mfu: cost.prefill_mfu: 1e-300 is outside 0.001..1\n");
}

// --calibration prices with a profile's parameters; --batch/--context add a decode
// step of that shape.
TEST(Cost, TakesACalibrationProfileAndADecodeShape) {
  const fs::path d = TempDir("cost_cal");
  std::ofstream(d / "slow.yaml") << "ttft_calibration_profile: 1\ncost:\n  decode_mbu: 0.35\n";
  RunResult base = RunTtft("cost --format json --batch 128 --context 1800");
  RunResult slow = RunTtft("cost --format json --batch 128 --context 1800 --calibration " +
                           (d / "slow.yaml").string());
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_EQ(slow.exit_code, 0) << slow.err;
  auto b = nlohmann::json::parse(base.out), s = nlohmann::json::parse(slow.out);
  EXPECT_TRUE(b["calibration"].is_null());
  EXPECT_EQ(s["calibration"], (d / "slow.yaml").string());
  EXPECT_EQ(s["decode_step"]["batch"], 128);
  EXPECT_EQ(s["decode_step"]["context_tokens"], 1800);
  // Half the weight-stream efficiency: the batch-1 step (weights) takes about twice as long.
  EXPECT_GT(s["decode_step_batch1_ctx1000_s"].get<double>(),
            1.8 * b["decode_step_batch1_ctx1000_s"].get<double>());
  EXPECT_GT(s["decode_step"]["step_s"].get<double>(), b["decode_step"]["step_s"].get<double>());
  // The profile's prefill_mfu (here the default) is used; the prefill numbers are unchanged.
  EXPECT_EQ(s["prefill_6000_uncached_s"], b["prefill_6000_uncached_s"]);
  std::ofstream(d / "bad.yaml") << "ttft_calibration_profile: 1\ncost:\n  decode_mbu: 3\n";
  RunResult bad = RunTtft("cost --calibration " + (d / "bad.yaml").string());
  EXPECT_EQ(bad.exit_code, 2) << bad.err;  // as validate's: kInvalidArgument
  EXPECT_THAT(bad.err, ::testing::HasSubstr("bad.yaml:3: cost.decode_mbu"));
  fs::remove_all(d);
  // --list names every preset scenarios may use (docs/scenarios.md points here).
  RunResult list = RunTtft("cost --list --format json");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto l = nlohmann::json::parse(list.out);
  EXPECT_NE(std::find(l["models"].begin(), l["models"].end(), "llama-2-7b"), l["models"].end());
  EXPECT_NE(std::find(l["gpus"].begin(), l["gpus"].end(), "h100-sxm"), l["gpus"].end());
}

}  // namespace

// `curl /metrics` before and after a deploy: one scrape each. The deploy restarted the
// server (its process_start_time_seconds is after the first scrape), so the incident
// is the new process's totals, the restart is the change to roll back, and the notes
// say how each window was read. A scrape without a process start cannot be read so.
TEST(DiagnoseScrapes, OneScrapeBeforeAndOneAfterARestart) {
  const fs::path dir = TempDir("one_scrape_each");
  auto scrape = [&](const std::string& name, double start_s, int fast, int slow) {
    std::string t = fmt::format(
        "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {:.1f}\n"
        "# TYPE vllm:time_to_first_token_seconds histogram\n",
        start_s);
    for (const auto& [le, n] :
         {std::pair{"0.1", fast}, {"1.0", fast}, {"10.0", fast + slow}, {"+Inf", fast + slow}}) {
      t += fmt::format("vllm:time_to_first_token_seconds_bucket{{le=\"{}\",model_name=\"m\"}} {}\n",
                       le, n);
    }
    t +=
        fmt::format("vllm:time_to_first_token_seconds_count{{model_name=\"m\"}} {}\n", fast + slow);
    t += fmt::format("vllm:time_to_first_token_seconds_sum{{model_name=\"m\"}} {}\n",
                     0.05 * fast + 5 * slow);
    return WriteFile(dir, name, t);
  };
  const std::string before = scrape("t1000.prom", 400, 2000, 10);
  const std::string after = scrape("t1600.prom", 1100, 2500, 300);
  RunResult r = RunTtft("diagnose --baseline " + before + " --incident " + after);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("Verdict: regression"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("Roll back the deploy that restarted the server of " +
                                          after + " (t=1100 s"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("the baseline is " + before +
                                          "'s totals since its process started (600 s before"));
  RunResult j =
      RunTtft("diagnose --baseline " + before + " --incident " + after + " --format json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["baseline"]["requests"], 2010);
  EXPECT_EQ(doc["incident"]["requests"], 2800);  // not 2800 - 2010: a restart, not a delta
  EXPECT_TRUE(doc["baseline"]["request_rate_rps"].is_null());
  EXPECT_TRUE(doc["baseline"]["replicas"].is_null());  // no series names a replica
  // Without the process start: an error naming the file, exit 2.
  std::string bare = ReadFile(after);
  bare.erase(0, bare.find("# TYPE vllm:"));
  const std::string no_start = WriteFile(dir, "t1700.prom", bare);
  RunResult e = RunTtft("diagnose --baseline " + before + " --incident " + no_start);
  EXPECT_EQ(e.exit_code, 2) << e.out;
  EXPECT_THAT(e.err, ::testing::HasSubstr(no_start + ": one scrape in each window, and this one "
                                                     "has no (finite) process_start_time_seconds"));
}
