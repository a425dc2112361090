// The bad-input corpus (issue 14): hostile and broken inputs, written here, through
// every reading command of the real binary. The contract checked for each: the
// process ends within its time bound, by exit code (never a signal or a timeout), with
// the expected code; an error names the file; JSON written to standard output parses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_ttft.h"
#include "telemetry/prometheus_process_testing.h"

namespace {

using ::testing::HasSubstr;
using ttft::testing::RunResult;
using ttft::testing::RunTtft;
namespace fs = std::filesystem;

class BadInputCorpus : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ttft_badcorpus_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }

  // Runs `args`, bounded by `limit_s`; checks the exit code, that stderr names
  // `names` (when not empty) and that a JSON stdout parses.
  void Expect(const std::string& args, int code, const std::string& names, int limit_s = 30) {
    SCOPED_TRACE(args);
    RunResult r = RunTtft(args, limit_s);
    ASSERT_NE(r.exit_code, -1) << "killed by a signal: " << r.err;
    ASSERT_NE(r.exit_code, 124) << "did not end within " << limit_s << " s";
    EXPECT_EQ(r.exit_code, code) << r.err;
    if (!names.empty()) {
      EXPECT_THAT(r.err, HasSubstr(names));
    }
    if (args.find("--format json") != std::string::npos && !r.out.empty()) {
      EXPECT_FALSE(nlohmann::json::parse(r.out, nullptr, false).is_discarded()) << r.out;
    }
  }

  fs::path dir_;
};

constexpr const char* kScenario = R"(name: t
duration_s: 60
scrape_interval_s: 15
replicas:
  - {name: r, count: 1}
defaults: {model: llama-3.1-8b, gpu: h100-sxm, tp: 1}
templates:
  - name: a
    versions:
      - version: v1
        segments:
          - {name: s, kind: static, tokens: 100}
          - {name: q, kind: per_request, tokens: 50}
tenants:
  - {name: x, template: a, version: v1, rate_rps: 2}
)";

std::string Edit(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// Values that ran forever, filled the disk or exhausted memory before the limits.
TEST_F(BadInputCorpus, ScenariosBeyondTheLimitsFailFastNamingFileAndField) {
  const std::string out = (dir_ / "out").string();
  struct Case {
    std::string from, to, names;
  };
  const std::vector<Case> cases = {
      {"duration_s: 60", "duration_s: 1e308", "h.yaml: duration_s"},
      {"scrape_interval_s: 15", "scrape_interval_s: 1e-6", "h.yaml: scrape_interval_s"},
      {"tokens: 100}", "tokens: 2e9}", "segments.s.tokens"},
      {"rate_rps: 2}", "rate_rps: 1e9}", "tenants[0] (x).rate_rps"},
      {"tokens: 50}", "tokens: {dist: lognormal, mean: 1e12, cv: 1}}", "segments.q.tokens.mean"},
      {"duration_s: 60", "duration_s: nan", "h.yaml:2: duration_s"},
  };
  for (const Case& c : cases) {
    const std::string path = Write("h.yaml", Edit(kScenario, c.from, c.to));
    Expect("simulate " + path + " --quiet --out " + out, 2, c.names, 10);
    EXPECT_FALSE(fs::exists(dir_ / "out" / "summary.json"));
  }
  const std::string good = Write("good.yaml", kScenario);
  for (const char* flag : {"--duration inf", "--duration -5", "--duration nan", "--seed -1"}) {
    Expect("simulate " + good + " --quiet --out " + out + " " + flag, 2, "", 10);
  }
  Expect("cost --prefill-mfu -1", 2, "prefill_mfu", 10);
  Expect("cost --prefill-mfu nan", 2, "prefill_mfu", 10);
}

// Span inputs that hold nothing usable: every reading command exits non-zero and
// names the file; nothing is silently reported as an empty but successful run.
TEST_F(BadInputCorpus, InputsWithNothingUsableExitNonZeroNamingTheFile) {
  std::string binary;
  for (int i = 0; i < 4096; ++i) binary.push_back(static_cast<char>(i % 256));
  const std::vector<std::pair<std::string, std::string>> files = {
      {"empty.jsonl", ""},
      {"binary.jsonl", binary},
      {"truncated.jsonl", R"({"request_id": "a", "arrival_s": 1, "ttft_s": 0.)"},
      {"utf8.jsonl", "{\"request_id\": \"a\xff\xfe\", \"arrival_s\": 1, \"ttft_s\": 0.5}\n"},
      {"nan.jsonl", R"({"request_id": "a", "arrival_s": NaN, "ttft_s": 0.5})"
                    "\n"},
      {"words.jsonl", "not json\n"},  // looks like a Prometheus sample: read as one
      {"negative.jsonl", R"({"request_id": "a", "arrival_s": 1, "ttft_s": -3})"
                         "\n"},
  };
  for (const auto& [name, bytes] : files) {
    const std::string path = Write(name, bytes);
    Expect("stats " + path + " --format json", 2, name);
    Expect("diagnose " + path + " --format json", 2, name);
  }
  // A folder with nothing in it.
  fs::create_directories(dir_ / "emptydir");
  Expect("stats " + (dir_ / "emptydir").string(), 2, "emptydir");
  Expect("diagnose " + (dir_ / "emptydir").string(), 2, "emptydir");
  Expect("validate " + (dir_ / "emptydir").string(), 2,
         "emptydir: is a folder, expected a measurement table");
  // The lint over nothing passed: a folder or an empty file as the corpus or template.
  Expect("lint --corpus " + (dir_ / "emptydir").string() + " --format json", 2,
         "emptydir: is a folder, expected the corpus file");
  Expect("lint --corpus " + Write("none.jsonl", "") + " --format json", 2,
         "none.jsonl: no prompts");
  Expect("lint " + (dir_ / "emptydir").string() + " --vars " + Write("v.yaml", "{}\n") +
             " --format json",
         2, "emptydir: is a folder, expected the template file");
}

// Huge inputs and bombs are bounded by the documented limits, with the file named.
TEST_F(BadInputCorpus, HugeEventsAndScrapesStopAtTheirLimits) {
  const std::string spans =
      Write("s.jsonl", R"({"request_id": "a", "arrival_s": 1, "ttft_s": 0.5, "queue_s": 0.1})"
                       "\n");
  // An events file of one 20 MB line (the limit is 16 MiB).
  const std::string events =
      Write("ev.jsonl", "{\"at_s\": 1, \"detail\": \"" + std::string(20 << 20, 'x') + "\"}\n");
  Expect("diagnose " + spans + " --events " + events, 2, "ev.jsonl: more than 16777216 bytes");
  // Huge and non-finite numbers in a scrape: read or skipped with a count, never a crash.
  const std::string prom = Write("m.prom",
                                 "# TYPE vllm:num_requests_running gauge\n"
                                 "vllm:num_requests_running{engine=\"0\"} 1.8e308\n"
                                 "vllm:num_requests_running{engine=\"1\"} NaN\n"
                                 "vllm:num_requests_running{engine=\"2\"} -Inf\n"
                                 "# TYPE vllm:e2e_request_latency_seconds histogram\n"
                                 "vllm:e2e_request_latency_seconds_count 1.8e308\n");
  RunResult r = RunTtft("stats " + prom + " --format json", 30);
  EXPECT_NE(r.exit_code, -1) << r.err;
  EXPECT_NE(r.exit_code, 124);
  if (r.exit_code == 0) {
    EXPECT_FALSE(nlohmann::json::parse(r.out, nullptr, false).is_discarded()) << r.out;
  }
}

// A scrape of one vLLM engine: TTFT histogram and the request counter.
std::string Scrape(double count, bool help_and_type, const std::string& extra = "") {
  std::string s;
  if (help_and_type) s += "# TYPE vllm:time_to_first_token_seconds histogram\n";
  const std::string l = "{engine=\"0\",model_name=\"m\"";
  for (const char* le : {"0.1", "1.0", "+Inf"}) {
    s += "vllm:time_to_first_token_seconds_bucket" + l + ",le=\"" + le + "\"} " +
         std::to_string(count) + "\n";
  }
  s += "vllm:time_to_first_token_seconds_count" + l + "} " + std::to_string(count) + "\n";
  s += "vllm:time_to_first_token_seconds_sum" + l + "} " + std::to_string(count * 0.05) + "\n";
  return s + extra;
}

// Scrapes: the file name decides the format where the content cannot; repeats and
// invalid UTF-8 are counted and named, not kept silently.
TEST_F(BadInputCorpus, ScrapesWithoutTypeLinesRepeatsAndInvalidUtf8AreReadOrReported) {
  // No HELP or TYPE lines: read as Prometheus text because of .prom (was sniffed as
  // CSV, every line skipped).
  const std::string a = Write("t000000000.000.prom", Scrape(10, false));
  const std::string b = Write("t000000015.000.prom", Scrape(30, false));
  RunResult r = RunTtft("stats " + a + " " + b + " --format json", 30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["groups"][0]["count"], 20) << r.out;
  // A repeated bucket line: the first is kept, the repeat reported with its line.
  const std::string dup = Write(
      "dup.prom", Scrape(10, true,
                         "vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\","
                         "le=\"0.1\"} 99\n"));
  Expect("stats " + dup + " --format json", 0,
         "dup.prom:7: vllm:time_to_first_token_seconds_bucket le=0.1: duplicate series");
  // A label that is not UTF-8: the line is skipped and named; the JSON stays valid.
  const std::string bad =
      Write("utf8.prom", Scrape(10, true, "vllm:num_requests_running{replica=\"r\xff\"} 1\n"));
  Expect("stats " + bad + " --format json", 0, "utf8.prom:7: the line is not valid UTF-8");
  // An empty scrape among good ones (an exporter that was down): left out, counted and
  // named, and the count is that of the good scrapes.
  const std::string c = Write("t000000030.000.prom", "");
  const std::string d = Write("t000000045.000.prom", Scrape(50, true));
  RunResult e = RunTtft("stats " + a + " " + b + " " + c + " " + d + " --format json", 30);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_THAT(e.err, HasSubstr("t000000030.000.prom:1: no samples: the scrape is left out"));
  auto je = nlohmann::json::parse(e.out, nullptr, false);
  ASSERT_FALSE(je.is_discarded()) << e.out;
  EXPECT_EQ(je["groups"][0]["count"], 40) << e.out;
}

// --from/--to apply to scrape files as to spans (they were ignored: the whole run was
// reported for any window), and a window that holds nothing is an error, not a table of
// nothing with exit 0.
TEST_F(BadInputCorpus, AStatsWindowSelectsScrapesAndAnEmptyWindowIsAnError) {
  const std::string a = Write("t000000000.000.prom", Scrape(10, true));
  const std::string b = Write("t000000015.000.prom", Scrape(30, true));
  const std::string c = Write("t000000045.000.prom", Scrape(50, true));
  const std::string all = a + " " + b + " " + c;
  RunResult r = RunTtft("stats " + all + " --from 20 --to 50 --format json", 30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["groups"][0]["count"], 20) << r.out;  // 50 - 30: the scrapes at 15 and 45
  EXPECT_THAT(r.err, HasSubstr("the window [20,50) s is read from the scrapes at t=15 s and "
                               "t=45 s"));
  Expect("stats " + all + " --from 100", 2,
         "the window from t=100 s is not covered by two scrapes");
  Expect("stats " + all + " --from 30 --to 20", 2, "--from must be before --to");
  Expect("stats " + all + " --from nan", 2, "time \"nan\": expected seconds or an RFC 3339 time");
  const std::string untimed =
      Write("a.prom", Scrape(10, true)) + " " + Write("b.prom", Scrape(30, true));
  Expect("stats " + untimed + " --from 20", 2, "2 of the scrapes carry no time");
  const std::string spans =
      Write("s.jsonl", R"({"request_id":"a","arrival_s":1,"ttft_s":0.1,"prompt_tokens":10})"
                       "\n");
  Expect("stats " + spans + " --from 2026-10-02T17:03:38Z", 2,
         "no span arrived in the window from 2026-10-02T17:03:38Z (1 records read)");
}

// A scenario that is not UTF-8 (its names become labels in spans and metrics that
// its own readers would reject): an error with the file and line.
TEST_F(BadInputCorpus, AScenarioThatIsNotUtf8IsAnErrorWithItsLine) {
  const std::string path = Write("u.yaml", Edit(kScenario, "{name: r,", "{name: \"r\xff\","));
  Expect("simulate " + path + " --quiet --out " + (dir_ / "o").string(), 2,
         "u.yaml:5: not valid UTF-8", 10);
}

// Standard input without an end (tokenize reads it whole): stopped at its limit.
TEST_F(BadInputCorpus, EndlessStandardInputStopsAtTheTokenizeLimit) {
  Expect("tokenize --count < /dev/zero", 2, "standard input: more than 268435456 bytes", 60);
}

// Events that cannot be what was meant are kept but said: one outside the data's time
// range (another time base), one repeated; an empty events file is said.
TEST_F(BadInputCorpus, EventsOutsideTheDataRepeatedOrNoneAreSaid) {
  const std::string out = (dir_ / "sim").string();
  RunResult sim = RunTtft("simulate " + Write("s.yaml", kScenario) + " --quiet --out " + out, 60);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const std::string ev = Write("ev.jsonl",
                               "{\"at_s\": 1e308, \"kind\": \"deploy\"}\n"
                               "{\"at_s\": 30, \"kind\": \"deploy\", \"target\": \"app\"}\n"
                               "{\"at_s\": 30, \"kind\": \"deploy\", \"target\": \"app\"}\n");
  const std::string args =
      "diagnose " + out + " --change-at 30 --window 30 --min-requests 10 --no-attribution";
  RunResult r = RunTtft(args + " --events " + ev + " --format json", 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("ev.jsonl:3: the same event as "));
  EXPECT_THAT(r.err, HasSubstr("ev.jsonl: 1 of 2 events outside the data's time range"));
  Expect(args + " --events " + Write("none.jsonl", "") + " --format json", 0,
         "none.jsonl: no events in the file", 60);
}

}  // namespace

// A --selector for Prometheus is checked before any connection (ttft/promql.h): the
// address below has no server, so reaching it would exit 69 after retries; a typo or
// a value that closes the braces to add a query of its own exits 2 at once, naming
// the flag and the character. One that passes goes on to the (absent) server.
TEST_F(BadInputCorpus, APrometheusSelectorIsCheckedBeforeAnyConnection) {
  const int port = ttft::testing::FreeLoopbackPort();
  ASSERT_GT(port, 0);
  const std::string down =
      "--prometheus http://127.0.0.1:" + std::to_string(port) + " --timeout 1 ";
  const std::string gate = "gate " + down +
                           "--from 1000 --to 2000 --baseline-selector a=b "
                           "--canary-selector a=c ";
  const std::string stats_window = "stats " + down + "--from 1000 --to 2000 ";
  const std::string diagnose_window = "diagnose " + down + "--change-at 1500 --window 300 ";
  const std::string stats = stats_window + "--selector ";
  const std::string diagnose = diagnose_window + "--selector ";
  for (const std::string& cmd : {stats, diagnose}) {
    Expect(cmd + R"('model_name="x')", 2,
           "--selector 'model_name=\"x': an unterminated value at character 14", 10);
    Expect(cmd + R"('a="b"} or up{c="d"')", 2, "expected ',' between matchers at character 6", 10);
    Expect(cmd + R"('a=~"("')", 2, "the regex of label 'a' does not compile", 10);
    Expect(cmd + R"('{"service.name"="vllm",}')", 69, "cannot connect");
  }
  // So is --step, in every command that queries Prometheus; gate says so as bad usage,
  // not as Inconclusive. A step longer than the window is one grid interval: 1e300 (like
  // inf, it used to reach an integer conversion and end in SIGFPE) goes on to the server.
  for (const std::string& cmd : {stats_window, diagnose_window, gate}) {
    for (const char* step : {"inf", "nan", "0.0001"}) {
      Expect(cmd + "--step " + step, 2, std::string("--step ") + step, 10);
    }
    if (cmd != gate) Expect(cmd + "--step 1e300", 69, "cannot connect");
  }
  RunResult g = RunTtft(gate + "--step 1e300", 10);
  EXPECT_EQ(g.exit_code, 3) << g.err;  // Inconclusive: the gate's verdict on a down server
  EXPECT_THAT(g.out, HasSubstr("cannot connect"));
  Expect("stats " + down + "--from 1e300 --to 2e300", 2,
         "times must be within +-1e15 s of the Unix epoch", 10);
}

// The Prometheus flags are checked when files are read instead: a bad --step or
// --timeout is an error, not ignored, and a --selector (which filters a live server's
// series, never a file's) says it needs --prometheus rather than filtering nothing.
TEST_F(BadInputCorpus, PrometheusFlagsGivenWithFilesAreCheckedNotIgnored) {
  const std::string out = (dir_ / "sim").string();
  RunResult sim = RunTtft("simulate " + Write("s.yaml", kScenario) + " --quiet --out " + out, 60);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const std::string stats = "stats " + out + " ";
  const std::string diagnose =
      "diagnose " + out + " --change-at 30 --window 30 --min-requests 10 --no-attribution ";
  for (const std::string& cmd : {stats, diagnose}) {
    Expect(cmd + "--step inf", 2, "--step inf", 10);
    Expect(cmd + "--timeout 0", 2, "--timeout 0", 10);
    Expect(cmd + R"(--selector 'model_name="x"')", 2, "--selector filters a live Prometheus's", 60);
    Expect(cmd + "--step 30 --timeout 2", 0, "", 60);  // good values, unused, are fine
  }
}
