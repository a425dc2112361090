// Integration test: `ttft stats --prometheus URL` (the real binary) against a real
// Prometheus server (Debian's /usr/bin/prometheus). The data is backfilled with
// `promtool tsdb create-blocks-from openmetrics` before the server starts, so the
// samples and their timestamps are known exactly and nothing waits for scrapes.
// The server listens on 127.0.0.1 only, every wait is bounded, and the child is
// killed in teardown (and by PR_SET_PDEATHSIG should this process die first).
// Skips when prometheus or promtool is absent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// integration_test has only include/ on its include path: reach src/ from here.
#include "run_ttft.h"
#include "telemetry/prometheus_process_testing.h"

namespace {

using ttft::testing::RunResult;
using ttft::testing::RunTtft;

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using ttft::testing::FreeLoopbackPort;
using ttft::testing::HttpGet;
using ttft::testing::IsExecutable;
using ttft::testing::kPrometheus;
using ttft::testing::kPromtool;
using ttft::testing::UrlEncode;
constexpr const char* kTtft = "vllm:time_to_first_token_seconds";

// The backfilled data: two engines scraped every kStepS seconds, scrapes 0..kLast.
// Every scrape adds kPerScrape observations per engine: engine "0" is fast, engine
// "1" slow; engine "1" restarts just before scrape kReset (its counters start over).
constexpr int kStepS = 10;
constexpr int kLast = 8;
constexpr int kReset = 6;
constexpr int kPerScrape = 100;
const std::vector<double> kBounds = {0.1, 0.25, 0.5, 1.0};
// Observations per scrape at or below each bound (cumulative), +Inf = kPerScrape.
const std::vector<double> kFastPerScrape = {60, 90, 100, 100};
const std::vector<double> kSlowPerScrape = {0, 10, 50, 90};

// Cumulative state of one engine at scrape k (after its restart, if any).
struct EngineState {
  std::vector<double> buckets;  // cumulative per kBounds
  double count = 0, sum = 0, hits = 0, queries = 0;
};
EngineState StateAt(int engine, int k) {
  const int first = engine == 1 && k >= kReset ? kReset : 0;  // scrapes since (re)start
  const double n = k - first + 1;
  EngineState s;
  const auto& per = engine == 0 ? kFastPerScrape : kSlowPerScrape;
  for (double c : per) s.buckets.push_back(c * n);
  s.count = kPerScrape * n;
  s.sum = (engine == 0 ? 12.5 : 55.0) * n;
  s.queries = 1000 * n;
  s.hits = (engine == 0 ? 600 : 200) * n;
  return s;
}

// The shortest text that reads back as `v`.
std::string Num(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// OpenMetrics text for promtool: families contiguous, samples in time order.
std::string OpenMetrics(double t0) {
  std::string out;
  auto labels = [](int e) { return "job=\"ttft_it\",model_name=\"m\",engine=\"" + Num(e) + "\""; };
  out += std::string("# TYPE ") + kTtft + " histogram\n";
  for (int k = 0; k <= kLast; ++k) {
    const std::string ts = Num(t0 + k * kStepS);
    for (int e = 0; e < 2; ++e) {
      const EngineState s = StateAt(e, k);
      for (size_t i = 0; i < kBounds.size(); ++i) {
        out += std::string(kTtft) + "_bucket{" + labels(e) + ",le=\"" + Num(kBounds[i]) + "\"} " +
               Num(s.buckets[i]) + " " + ts + "\n";
      }
      out += std::string(kTtft) + "_bucket{" + labels(e) + ",le=\"+Inf\"} " + Num(s.count) + " " +
             ts + "\n";
      out += std::string(kTtft) + "_count{" + labels(e) + "} " + Num(s.count) + " " + ts + "\n";
      out += std::string(kTtft) + "_sum{" + labels(e) + "} " + Num(s.sum) + " " + ts + "\n";
    }
  }
  for (const char* name : {"vllm:prefix_cache_hits", "vllm:prefix_cache_queries"}) {
    out += std::string("# TYPE ") + name + " counter\n";
    for (int k = 0; k <= kLast; ++k) {
      for (int e = 0; e < 2; ++e) {
        const EngineState s = StateAt(e, k);
        out += std::string(name) + "_total{" + labels(e) + "} " +
               Num(std::string(name).ends_with("hits") ? s.hits : s.queries) + " " +
               Num(t0 + k * kStepS) + "\n";
      }
    }
  }
  out += "# EOF\n";
  return out;
}

class StatsPrometheusCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!IsExecutable(kPrometheus) || !IsExecutable(kPromtool)) return;
    // Whole seconds an hour ago: inside the default retention, clear of the head block.
    t0_ = static_cast<double>(std::time(nullptr) / 60 * 60 - 3600);
    dir_ = fs::temp_directory_path() / ("ttft_prom_it_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    std::ofstream(dir_ / "data.om") << OpenMetrics(t0_);
    std::ofstream(dir_ / "prometheus.yml") << "global:\n  scrape_interval: 15s\n";
    const std::string backfill = std::string("timeout 60 ") + kPromtool +
                                 " tsdb create-blocks-from openmetrics " +
                                 (dir_ / "data.om").string() + " " + (dir_ / "data").string() +
                                 " > " + (dir_ / "promtool.log").string() + " 2>&1";
    if (std::system(backfill.c_str()) != 0) {
      setup_error_ = "promtool backfill failed:\n" + ttft::testing::TailFile(dir_ / "promtool.log");
      return;
    }
    // Ready and serving the backfilled blocks, within 30 s.
    const std::string probe =
        "/api/v1/query?query=" + UrlEncode(std::string("count(") + kTtft + "_count)") +
        "&time=" + Num(T(kLast));
    const auto ready = [probe](int port) {
      if (HttpGet(port, "/-/ready").status != 200) return false;
      const auto r = HttpGet(port, probe);
      return r.status == 200 && r.body.find("\"2\"") != std::string::npos;
    };
    if (!prom_.Start(dir_ / "prometheus.yml", dir_ / "data", dir_ / "prometheus.log", ready, 30)) {
      setup_error_ = prom_.error();
    }
  }

  static void TearDownTestSuite() {
    prom_.Stop();
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  void SetUp() override {
    if (!IsExecutable(kPrometheus) || !IsExecutable(kPromtool)) {
      GTEST_SKIP() << kPrometheus << " or " << kPromtool
                   << " is absent: install Debian's prometheus package (scripts/install-deps.sh) "
                      "to test `ttft stats --prometheus` against a real server";
    }
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  }

  static std::string Url() { return prom_.url(); }
  static double T(int k) { return t0_ + k * kStepS; }

  // Prometheus's own histogram_quantile over the increase between two sample times.
  static double PromQuantile(double q, double t1, double t2, const std::string& matchers) {
    const std::string sel = std::string(kTtft) + "_bucket{" + matchers + "}";
    const std::string expr = "histogram_quantile(" + Num(q) + ", sum by (le) (" + sel + " @ " +
                             Num(t2) + " - " + sel + " @ " + Num(t1) + "))";
    auto [code, body] =
        HttpGet(prom_.port(), "/api/v1/query?query=" + UrlEncode(expr) + "&time=" + Num(t2));
    EXPECT_EQ(code, 200) << expr << ": " << body;
    const json j = json::parse(body, nullptr, false);
    if (j.is_discarded() || j["data"]["result"].size() != 1) {
      ADD_FAILURE() << expr << ": " << body;
      return std::nan("");
    }
    return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
  }

  // `ttft stats --prometheus` for [T(a), T(b)] as JSON.
  static json Stats(int a, int b, const std::string& extra = "") {
    RunResult r = RunTtft("stats --prometheus " + Url() + " --from " + Num(T(a)) + " --to " +
                          Num(T(b)) + " --selector '{job=\"ttft_it\"}' --format json " + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j.is_discarded() ? json::object() : j;
  }

  static inline fs::path dir_;
  static inline ttft::testing::PrometheusProcess prom_;
  static inline double t0_ = 0;
  static inline std::string setup_error_;
};

TEST_F(StatsPrometheusCli, WindowMatchesPrometheusHistogramQuantileAndExactCounts) {
  const int a = 1, b = 4;
  const json j = Stats(a, b);
  ASSERT_EQ(j["groups"].size(), 1u) << j.dump();
  const json& g = j["groups"][0];
  SCOPED_TRACE(j.dump());
  EXPECT_EQ(g["key"], json::object());
  EXPECT_EQ(g["count"], 2 * (b - a) * kPerScrape);
  EXPECT_EQ(j["skipped"], 0);
  // hits / queries over both engines: (600 + 200) / 2000.
  EXPECT_DOUBLE_EQ(g["prefix_cache_hit_rate"].get<double>(), 0.4);
  EXPECT_NEAR(g["rate_rps"].get<double>(), 2.0 * (b - a) * kPerScrape / ((b - a) * kStepS), 1e-9);
  const json& ttft = g["ttft_s"];
  ASSERT_TRUE(ttft.is_object()) << g.dump();
  EXPECT_NEAR(ttft["mean"].get<double>(), (12.5 + 55.0) / (2 * kPerScrape), 1e-12);
  const std::pair<const char*, double> qs[] = {
      {"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p999", 0.999}};
  for (const auto& [key, q] : qs) {
    SCOPED_TRACE(key);
    const double prom = PromQuantile(q, T(a), T(b), "job=\"ttft_it\"");
    EXPECT_NEAR(ttft[key].get<double>(), prom, 1e-9 * std::max(1.0, prom));
    // The bucket the quantile falls in; an upper bound of +Inf is written as null.
    const json& bounds = ttft["bucket_bounds"][key];
    ASSERT_TRUE(bounds[0].is_number());
    EXPECT_LE(bounds[0].get<double>(), ttft[key].get<double>());
    if (q < 0.95) {
      ASSERT_TRUE(bounds[1].is_number());
      EXPECT_GE(bounds[1].get<double>(), ttft[key].get<double>());
    } else {
      EXPECT_TRUE(bounds[1].is_null());  // in the +Inf bucket
    }
  }
  // Hand check: 600 observations, 180 <= 0.1, 300 <= 0.25, 450 <= 0.5, 570 <= 1:
  // p50 (rank 300) = 0.25, p90 (rank 540) = 0.5 + 0.5 * (540 - 450) / (570 - 450).
  EXPECT_NEAR(ttft["p50"].get<double>(), 0.25, 1e-12);
  EXPECT_NEAR(ttft["p90"].get<double>(), 0.875, 1e-12);
  // Quantiles above the highest finite bucket are that bound, and the output says so.
  EXPECT_EQ(ttft["p99"].get<double>(), 1.0);
  EXPECT_THAT(ttft["note"].get<std::string>(), ::testing::HasSubstr("highest finite bucket"));
}

TEST_F(StatsPrometheusCli, ByLabelSeparatesEnginesAndAResetIsCountedExactly) {
  const json j = Stats(1, 4, "--by engine");
  ASSERT_EQ(j["groups"].size(), 2u) << j.dump();
  for (const json& g : j["groups"]) {
    const std::string engine = g["key"]["engine"].get<std::string>();
    SCOPED_TRACE(engine);
    EXPECT_EQ(g["count"], 3 * kPerScrape);
    EXPECT_DOUBLE_EQ(g["prefix_cache_hit_rate"].get<double>(), engine == "0" ? 0.6 : 0.2);
    const double prom = PromQuantile(0.99, T(1), T(4), "job=\"ttft_it\",engine=\"" + engine + "\"");
    EXPECT_NEAR(g["ttft_s"]["p99"].get<double>(), prom, 1e-9);
  }
  // Engine 1 restarts before scrape kReset. With a step no longer than the scrape
  // interval every sample is seen, so the window holds exactly the observations made
  // (a plain difference of the edges would be negative for engine 1).
  const json r = Stats(kReset - 2, kLast, "--by engine --step 5");
  ASSERT_EQ(r["groups"].size(), 2u) << r.dump();
  for (const json& g : r["groups"]) {
    SCOPED_TRACE(g.dump());
    EXPECT_EQ(g["count"], (kLast - (kReset - 2)) * kPerScrape);
  }
}

TEST_F(StatsPrometheusCli, MissingSeriesAndServerDownAreClearErrors) {
  RunResult none = RunTtft("stats --prometheus " + Url() + " --from " + Num(T(1)) + " --to " +
                           Num(T(4)) + " --selector '{job=\"no_such_job\"}'");
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_THAT(none.err, ::testing::HasSubstr("no_such_job"));
  // A port nobody listens on: Unavailable (exit 69) after bounded retries.
  const int down = FreeLoopbackPort();
  ASSERT_GT(down, 0);
  RunResult r = RunTtft("stats --prometheus http://127.0.0.1:" + std::to_string(down) + " --from " +
                        Num(T(1)) + " --to " + Num(T(4)) + " --timeout 1");
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_THAT(r.err, ::testing::HasSubstr("cannot connect"));
  EXPECT_THAT(r.err, ::testing::HasSubstr("127.0.0.1:" + std::to_string(down)));
  EXPECT_LT(r.seconds, 20);
}

}  // namespace

// `ttft gate` against the same live server (docs/gate.md): the slow engine as the
// canary of the fast one fails on the histogram test and the hit rate; a selector
// that matches no series is Inconclusive (exit 3), never Pass.
TEST_F(StatsPrometheusCli, GateComparesSeriesSelectedByLabel) {
  const std::string window =
      "gate --prometheus " + Url() + " --from " + Num(T(1)) + " --to " + Num(T(4)) + " ";
  RunResult fail = RunTtft(window + "--baseline-selector engine=0 --canary-selector engine=1 " +
                           "--format json");
  EXPECT_EQ(fail.exit_code, 1) << fail.out << fail.err;
  const json j = json::parse(fail.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << fail.out;
  EXPECT_EQ(j["verdict"], "Fail");
  for (const auto& c : j["criteria"]) {
    if (c["metric"] == "ttft_p99") {
      EXPECT_EQ(c["label"], "High") << c.dump();
      EXPECT_THAT(c["method"].get<std::string>(), ::testing::HasSubstr("two-proportion"));
      EXPECT_EQ(c["canary_n"], 300);  // 3 scrape intervals of 100 observations
    }
    if (c["metric"] == "prefix_cache_hit_rate") {
      EXPECT_EQ(c["label"], "Low") << c.dump();
      EXPECT_NEAR(c["effect"].get<double>(), 0.2 - 0.6, 1e-9);
    }
  }
  RunResult missing = RunTtft(window + "--baseline-selector engine=0 --canary-selector engine=7");
  EXPECT_EQ(missing.exit_code, 3) << missing.out << missing.err;
  EXPECT_THAT(missing.out, ::testing::HasSubstr("engine=7"));
}
