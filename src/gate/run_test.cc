// Unit tests of running the gate (ttft/gate.h, src/gate/run.cc): loading the arms from
// files (one set split by selectors, two sets, metrics), the usage checks of a source,
// durations, the state file, and the repeated-look loop on a fake clock and loader.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ttft/gate.h"

namespace ttft {
namespace {

using testing::HasSubstr;
namespace fs = std::filesystem;

// A folder of its own per test (ctest runs tests side by side).
class GateRunFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("ttft_gate_run_{}_{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  // Span JSONL of n requests per deploy at 1 s apart; the canary's TTFT x `slow`.
  std::string Spans(int n, double slow, const std::string& canary_model = "m") {
    std::mt19937_64 rng(3);
    std::lognormal_distribution<double> ln(std::log(0.2), 0.5);
    std::string text;
    for (int i = 0; i < n; ++i) {
      for (const char* deploy : {"v1", "v2"}) {
        const bool canary = deploy[1] == '2';
        const double ttft = ln(rng) * (canary ? slow : 1);
        text += fmt::format(
            R"({{"request_id":"{}-{}","arrival_s":{},"ttft_s":{},"queue_s":{},"prompt_tokens":1000,)"
            R"("cached_tokens":800,"output_tokens":10,"status":"ok","deploy":"{}","model":"{}"}})"
            "\n",
            deploy, i, i, ttft, ttft / 10, deploy, canary ? canary_model : "m");
      }
    }
    return Write("spans.jsonl", text);
  }
  fs::path dir_;
};

TEST_F(GateRunFiles, OneInputSplitBySelectors) {
  GateSource source;
  source.inputs = {Spans(300, 2.0)};
  source.baseline_selector = "deploy=v1";
  source.canary_selector = "deploy=v2";
  int reports = 0;
  source.on_read = [&reports](const ReadReport&) { ++reports; };
  ASSERT_TRUE(CheckGateSource(source).ok());
  auto arms = LoadGateArms(source, -INFINITY, INFINITY, NAN);
  ASSERT_TRUE(arms.ok()) << arms.status().message();
  EXPECT_FALSE(arms->unavailable);
  EXPECT_EQ(reports, 1);
  EXPECT_EQ(arms->baseline.stats.requests, 300);
  EXPECT_EQ(arms->canary.stats.requests, 300);
  EXPECT_EQ(arms->canary.model, "m");
  EXPECT_EQ(JudgeGate(DefaultGateConfig(), arms->baseline, arms->canary).verdict,
            GateVerdict::kFail);
  // The window [100, 200) by arrival.
  auto window = LoadGateArms(source, 100, 200, NAN);
  ASSERT_TRUE(window.ok());
  EXPECT_EQ(window->baseline.stats.requests, 100);
  // Spans selecting nothing: an empty arm, which the judge finds Inconclusive.
  source.canary_selector = "deploy=v9";
  auto none = LoadGateArms(source, -INFINITY, INFINITY, NAN);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(none->canary.stats.requests, 0);
  EXPECT_EQ(JudgeGate(DefaultGateConfig(), none->baseline, none->canary).verdict,
            GateVerdict::kInconclusive);
  // A selector naming no span label is an error.
  source.canary_selector = "pod=x";
  EXPECT_THAT(LoadGateArms(source, -INFINITY, INFINITY, NAN).status().message(),
              HasSubstr("selector label 'pod'"));
}

TEST_F(GateRunFiles, DifferentModelsAreAnError) {
  GateSource source;
  source.inputs = {Spans(50, 1.0, "other")};
  source.baseline_selector = "deploy=v1";
  source.canary_selector = "deploy=v2";
  auto arms = LoadGateArms(source, -INFINITY, INFINITY, NAN);
  ASSERT_FALSE(arms.ok());
  EXPECT_EQ(arms.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(arms.status().message(), HasSubstr("a canary must serve the same model"));
}

TEST_F(GateRunFiles, TwoInputSetsAndMetrics) {
  // Two scrapes of one histogram per replica, the canary's slower.
  auto scrape = [&](int k) {
    std::string text = "# TYPE vllm:time_to_first_token_seconds histogram\n";
    for (const char* r : {"a", "b"}) {
      const double n = 1000.0 * k, slow = r[0] == 'b' ? 0.5 : 0.0;
      const std::string l = fmt::format("replica=\"{}\",model_name=\"m\"", r);
      text += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"0.5\"}} {}\n", l,
                          n * (0.99 - slow));
      text += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"2.0\"}} {}\n", l, n);
      text += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"+Inf\"}} {}\n", l, n);
      text += fmt::format("vllm:time_to_first_token_seconds_sum{{{}}} {}\n", l, n * 0.3);
      text += fmt::format("vllm:time_to_first_token_seconds_count{{{}}} {}\n", l, n);
    }
    return Write(fmt::format("t{}.prom", 60 * k), text);
  };
  GateSource source;
  source.inputs = {scrape(0), scrape(1)};
  source.baseline_selector = "replica=a";
  source.canary_selector = "replica=b";
  auto arms = LoadGateArms(source, -INFINITY, INFINITY, 0);
  ASSERT_TRUE(arms.ok()) << arms.status().message();
  EXPECT_FALSE(arms->unavailable);
  EXPECT_TRUE(arms->canary.from_metrics);
  EXPECT_EQ(arms->canary.stats.ttft_s.count, 1000);
  ASSERT_TRUE(arms->canary_increase.has_value());  // increase_from_s was given
  EXPECT_EQ(arms->canary_increase->stats.ttft_s.count, 1000);
  // A series selection matching nothing is unavailable data (Inconclusive), not an error.
  source.canary_selector = "replica=z";
  auto none = LoadGateArms(source, -INFINITY, INFINITY, NAN);
  ASSERT_TRUE(none.ok()) << none.status().message();
  ASSERT_TRUE(none->unavailable.has_value());
  EXPECT_EQ(*none->unavailable, "canary: no TTFT histogram series matching replica=z");
  // Spans against metrics: an error.
  GateSource mixed;
  mixed.baseline = {Spans(10, 1.0)};
  mixed.canary = source.inputs;
  ASSERT_TRUE(CheckGateSource(mixed).ok());
  EXPECT_THAT(LoadGateArms(mixed, -INFINITY, INFINITY, NAN).status().message(),
              HasSubstr("both be spans or both be metrics"));
}

TEST(GateSourceCheck, UsageErrors) {
  auto error = [](const GateSource& s) {
    Status st = CheckGateSource(s);
    return st.ok() ? std::string() : st.message();
  };
  GateSource s;
  EXPECT_THAT(error(s), HasSubstr("give --baseline INPUT... --canary INPUT..."));
  s.baseline = {"a"};
  EXPECT_EQ(error(s), "give both --baseline and --canary inputs");
  s.canary = {"b"};
  EXPECT_EQ(error(s), "");
  s.prometheus_url = "http://x:9090";
  EXPECT_THAT(error(s), HasSubstr("replace the positional inputs"));
  GateSource p;
  p.prometheus_url = "x:9090";
  p.baseline_selector = "deploy=a";
  p.canary_selector = "deploy=b";
  EXPECT_THAT(error(p), HasSubstr("expected http://HOST:PORT"));
  p.prometheus_url = "http://x:9090";
  p.client.timeout_s = 0;
  EXPECT_THAT(error(p), HasSubstr("--timeout"));
  p.client.timeout_s = 5;
  p.canary_selector = "deploy";
  EXPECT_THAT(error(p), HasSubstr("--canary-selector 'deploy': expected name=value"));
  p.canary_selector = "deploy=a";
  EXPECT_THAT(error(p), HasSubstr("select the same data"));
  p.inputs = {"f"};
  p.canary_selector = "deploy=b";
  EXPECT_THAT(error(p), HasSubstr("either input files or --prometheus"));
}

TEST(GateDuration, Parses) {
  EXPECT_EQ(*ParseGateDuration("90", "--every"), 90);
  EXPECT_EQ(*ParseGateDuration("90s", "--every"), 90);
  EXPECT_EQ(*ParseGateDuration("5m", "--every"), 300);
  EXPECT_EQ(*ParseGateDuration("1.5h", "--for"), 5400);
  EXPECT_EQ(*ParseGateDuration("1s", "--every"), 1);
  EXPECT_EQ(*ParseGateDuration("720h", "--for"), 30 * 86400);
  for (const char* bad :
       {"", "m", "0s", "-5m", "5d", "inf", "nan", "1e-300", "0.5s", "721h", "1e300s"}) {
    auto d = ParseGateDuration(bad, "--for");
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_THAT(d.status().message(), HasSubstr("--for '"));
  }
}

// -----------------------------------------------------------------------------
// The looks, on a fake clock and a fake loader
// -----------------------------------------------------------------------------

// Time passes only when the gate sleeps (and `look_s` per look, the loading).
class FakeClock : public GateClock {
 public:
  double UnixNowS() override { return unix_origin_s + now_s; }
  double MonotonicS() override { return now_s; }
  void SleepUntil(double t) override {
    sleeps.push_back(t);
    now_s = std::max(now_s, t);
  }
  double now_s = 0;
  double unix_origin_s = 1.7e9;
  std::vector<double> sleeps;
};

// Synthetic arms: n requests per look so far, arrivals 1 s apart from 0; the
// canary's TTFT x `slow` (a SpanTable, through ArmFromSpans).
GateArm ArmOf(uint64_t seed, int n, double slow) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> ln(std::log(0.2), 0.5);
  SpanTable t;
  std::vector<uint32_t> rows;
  for (int i = 0; i < n; ++i) {
    Span s;
    s.arrival_s = i;
    s.ttft_s = ln(rng) * slow;
    s.queue_s = s.ttft_s / 10;
    s.prompt_tokens = 1000;
    s.cached_tokens = 800;
    AddSpanToTable(s, t);
    rows.push_back(static_cast<uint32_t>(i));
  }
  return ArmFromSpans(t, rows);
}

struct FakeLoader {
  double slow = 1.0;
  int per_look = 100;
  std::vector<int> unavailable_looks;        // 1-based looks whose data cannot be had
  std::vector<std::array<double, 3>> calls;  // (from_s, to_s, increase_from_s)
  Result<GateArms> operator()(double from_s, double to_s, double increase_from_s) {
    calls.push_back({from_s, to_s, increase_from_s});
    const int look = static_cast<int>(calls.size());
    GateArms arms;
    if (std::find(unavailable_looks.begin(), unavailable_looks.end(), look) !=
        unavailable_looks.end()) {
      arms.unavailable = "Prometheus http://x: connection refused";
      return arms;
    }
    arms.baseline = ArmOf(1, 5000, 1.0);
    arms.canary = ArmOf(2, per_look * look, slow);
    return arms;
  }
};

GateRunOptions Looks(double every_s, double for_s) {
  GateRunOptions o;
  o.config = DefaultGateConfig();
  o.config.bootstrap_resamples = 100;
  o.every_s = every_s;
  o.for_s = for_s;
  return o;
}

// Looks slower than --every: the schedule's slots fall behind the clock, and the run
// still ends after the look that runs across the deadline and one final look, not after
// every slot's look (which took 4 looks, 400 s, for a 180 s --for).
TEST(GateRepeatedLooks, SlowLooksStillEndSoonAfterTheDeadline) {
  FakeClock clock;
  FakeLoader loader;
  auto slow_load = [&](double from_s, double to_s, double inc_from_s) {
    clock.now_s += 100;  // each look takes 100 s
    return loader(from_s, to_s, inc_from_s);
  };
  auto r = RunGate(Looks(60, 180), slow_load, clock, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Looks start at 0, 100 and 200 s; the one at 200 s is past the deadline: the last.
  EXPECT_EQ(loader.calls.size(), 3u);
  EXPECT_EQ(clock.now_s, 300);
  EXPECT_EQ(r->verdict, GateVerdict::kPass) << r->reason;
}

TEST(GateRepeatedLooks, AaRunsEveryLookThenPasses) {
  FakeClock clock;
  FakeLoader loader;
  std::vector<std::string> lines;
  auto r = RunGate(Looks(60, 180), std::ref(loader), clock,
                   [&lines](const std::string& l) { lines.push_back(l); });
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Looks at 0, 60, 120 and 180 s: the one at 180 is the last (the next would be past
  // --for), so 4 looks and 3 sleeps, never past the end.
  EXPECT_EQ(loader.calls.size(), 4u);
  EXPECT_EQ(clock.sleeps, (std::vector<double>{60, 120, 180}));
  EXPECT_EQ(r->verdict, GateVerdict::kPass) << r->reason;
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0], HasSubstr("look 1: Inconclusive (look 1: no stream"));
  EXPECT_THAT(lines[3], HasSubstr("look 4: Pass (final look 4"));
  // Each look reads the canary's increase since the previous one's end.
  EXPECT_TRUE(std::isinf(loader.calls[0][2]));
  EXPECT_TRUE(std::isinf(loader.calls[1][2]));  // a fixed to_s (infinite) for files
}

TEST(GateRepeatedLooks, StopsAtTheFirstFail) {
  FakeClock clock;
  FakeLoader loader;
  loader.slow = 3.0;
  auto r = RunGate(Looks(60, 3600), std::ref(loader), clock);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->verdict, GateVerdict::kFail);
  EXPECT_THAT(r->reason, HasSubstr("the sequential test rejected ttft_p99"));
  EXPECT_LT(loader.calls.size(), 60u);  // long before --for ends
  EXPECT_EQ(clock.sleeps.size() + 1, loader.calls.size());
}

TEST(GateRepeatedLooks, AnUnavailableLookIsNotAVerdict) {
  FakeClock clock;
  FakeLoader loader;
  loader.unavailable_looks = {1, 2};
  std::vector<std::string> lines;
  auto r = RunGate(Looks(30, 60), std::ref(loader), clock,
                   [&lines](const std::string& l) { lines.push_back(l); });
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "look 1: Prometheus http://x: connection refused");
  EXPECT_THAT(lines[2], HasSubstr("look 3: "));
  // The last look had data: a sequential verdict.
  EXPECT_NE(r->reason.find("final look"), std::string::npos) << r->reason;
  // When every look fails, the verdict is Inconclusive with the reason.
  FakeClock clock2;
  FakeLoader down;
  down.unavailable_looks = {1, 2, 3};
  auto d = RunGate(Looks(30, 60), std::ref(down), clock2);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict, GateVerdict::kInconclusive);
  EXPECT_THAT(d->reason, HasSubstr("connection refused"));
}

TEST(GateRun, AWindowThatIsNoneIsAnErrorBeforeAnyLoad) {
  for (const auto& [from_s, to_s] :
       std::vector<std::pair<double, double>>{{100, 50}, {100, 100}, {std::nan(""), 50}}) {
    for (double every_s : {0.0, 60.0}) {
      FakeClock clock;
      FakeLoader loader;
      GateRunOptions o = Looks(every_s, every_s * 3);
      o.from_s = from_s;
      o.to_s = to_s;
      auto r = RunGate(o, std::ref(loader), clock);
      ASSERT_FALSE(r.ok()) << from_s << " " << to_s;  // was Inconclusive: "too few samples"
      EXPECT_THAT(r.status().message(), HasSubstr("not a window (--from must be before --to)"));
      EXPECT_TRUE(loader.calls.empty());
    }
  }
}

TEST(GateRepeatedLooks, LiveWindowsEndNow) {
  FakeClock clock;
  FakeLoader loader;
  GateRunOptions o = Looks(60, 120);
  o.live = true;
  o.from_s = clock.unix_origin_s - 600;
  auto r = RunGate(o, std::ref(loader), clock);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(loader.calls.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(loader.calls[i][0], o.from_s);
    EXPECT_EQ(loader.calls[i][1], clock.unix_origin_s + 60.0 * static_cast<double>(i));
  }
  // Metrics' increase from the previous look's end.
  EXPECT_EQ(loader.calls[1][2], clock.unix_origin_s);
  EXPECT_EQ(loader.calls[2][2], clock.unix_origin_s + 60);
}

TEST_F(GateRunFiles, OneLookPerRunWithAStateFile) {
  const std::string state = (dir_ / "state.json").string();
  FakeClock clock;
  FakeLoader loader;
  GateRunOptions o = Looks(0, 0);
  o.state_path = state;
  auto first = RunGate(o, std::ref(loader), clock);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->verdict, GateVerdict::kInconclusive);
  auto saved = ReadGateState(state);
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(saved->looks, 1);
  EXPECT_EQ(saved->last_canary_arrival_s, 99);  // the canary's last arrival so far
  o.final_look = true;
  auto last = RunGate(o, std::ref(loader), clock);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->verdict, GateVerdict::kPass) << last->reason;
  EXPECT_EQ(ReadGateState(state)->looks, 2);
  EXPECT_TRUE(clock.sleeps.empty());
  // A state file that is not one is an error naming it.
  std::ofstream(state) << "{\"alpha\": 0.01}";
  auto bad = RunGate(o, std::ref(loader), clock);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr(state + ": not a gate state file"));
  // A missing file is the first look.
  EXPECT_EQ(ReadGateState((dir_ / "none.json").string())->looks, 0);
  EXPECT_FALSE(WriteGateState((dir_ / "no" / "such" / "dir.json").string(), *saved).ok());
}

TEST(GateOneLook, JudgesOnceOrIsInconclusive) {
  FakeClock clock;
  FakeLoader loader;
  loader.per_look = 500;
  GateRunOptions o = Looks(0, 0);
  auto r = RunGate(o, std::ref(loader), clock);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->verdict, GateVerdict::kPass) << r->reason;
  ASSERT_EQ(loader.calls.size(), 1u);
  EXPECT_TRUE(std::isnan(loader.calls[0][2]));
  FakeLoader down;
  down.unavailable_looks = {1};
  auto d = RunGate(o, std::ref(down), clock);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict, GateVerdict::kInconclusive);
  EXPECT_EQ(d->reason, "Prometheus http://x: connection refused");
  // The loader's errors are the run's.
  auto failing = [](double, double, double) -> Result<GateArms> {
    return Status::Invalid("spans.jsonl:3: bad");
  };
  EXPECT_EQ(RunGate(o, failing, clock).status().message(), "spans.jsonl:3: bad");
}

}  // namespace
}  // namespace ttft
