// `ttft diagnose --prometheus URL` against a real Prometheus server (Debian's
// /usr/bin/prometheus): the metrics-only path of issue 4, end to end through the binary.
//
// The server's data is backfilled, not scraped live: promtool (from the same package)
// turns an OpenMetrics file of four vLLM replicas scraped every 15 s for an hour into a
// TSDB block, and Prometheus serves it over its HTTP API. That gives a realistic hour at
// the production scrape interval in a few seconds of test time. Half an hour in, the
// prefix-cache hit rate collapses (80% -> 5%) and the queue grows: the diagnosis must
// read `regression` from the histogram buckets, rank prefix_cache_collapse first, and
// say which checks metrics alone cannot run. Everything listens on 127.0.0.1 only; the
// server is killed in teardown (and by PR_SET_PDEATHSIG should this process die first).
// Waits are bounded; without prometheus or promtool the tests skip with the reason.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
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
using Clock = std::chrono::steady_clock;
using ttft::testing::FreeLoopbackPort;
using ttft::testing::IsExecutable;
using ttft::testing::kPrometheus;
using ttft::testing::kPromtool;

constexpr int kReplicas = 4;
constexpr int kScrapeS = 15;
constexpr int kHourS = 3600;
constexpr int kPerScrape = 30;  // requests per replica per scrape interval (2 rps)

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A cumulative histogram as a vLLM replica exposes it.
struct Hist {
  std::vector<double> bounds;
  std::vector<double> counts;  // cumulative per bound
  double count = 0, sum = 0;
  explicit Hist(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size(), 0) {}
  void Observe(double v) {
    for (size_t i = 0; i < bounds.size(); ++i) {
      if (v <= bounds[i]) counts[i] += 1;
    }
    count += 1;
    sum += v;
  }
};

// vLLM v1's buckets (vllm/v1/metrics/loggers.py).
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08,
                                          0.1,   0.25,  0.5,  0.75, 1.0,  2.5,  5.0,
                                          7.5,   10.0,  20.0, 40.0, 80.0, 160.0};
const std::vector<double> kLatencyBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,  2.0,   2.5,
                                             5.0,  10.0, 15.0, 20.0, 30.0, 40.0,  50.0,
                                             60.0, 120., 240., 480., 960., 1920., 7680.};
const std::vector<double> kTokenBuckets = {1,   2,   5,    10,   20,   50,   100,
                                           200, 500, 1000, 2000, 5000, 10000};

// One replica's cumulative state at one scrape.
struct ReplicaState {
  Hist ttft{kTtftBuckets}, queue{kLatencyBuckets}, prefill{kLatencyBuckets}, prompt{kTokenBuckets};
  double hits = 0, queries = 0, preemptions = 0, kv_usage = 0;
};

// OpenMetrics text of `states[k][r]` (scrape k at `t0 + k * kScrapeS`, replica r), for
// promtool: family by family, each series in time order, timestamps in seconds.
std::string OpenMetrics(const std::vector<std::vector<ReplicaState>>& states, int64_t t0) {
  std::string o;
  auto labels = [](int r) {
    return fmt::format("instance=\"vllm-{}:8000\",job=\"vllm\",model_name=\"llama-3.3-70b\"", r);
  };
  auto hist = [&](const char* name, auto get) {
    o += fmt::format("# TYPE {} histogram\n", name);
    for (int r = 0; r < kReplicas; ++r) {
      const Hist& h0 = get(states[0][static_cast<size_t>(r)]);
      for (size_t b = 0; b <= h0.bounds.size(); ++b) {
        const std::string le = b < h0.bounds.size() ? fmt::format("{}", h0.bounds[b]) : "+Inf";
        for (size_t k = 0; k < states.size(); ++k) {
          const Hist& h = get(states[k][static_cast<size_t>(r)]);
          o += fmt::format("{}_bucket{{{},le=\"{}\"}} {} {}\n", name, labels(r), le,
                           b < h.bounds.size() ? h.counts[b] : h.count,
                           t0 + static_cast<int64_t>(k) * kScrapeS);
        }
      }
      for (size_t k = 0; k < states.size(); ++k) {
        o += fmt::format("{}_count{{{}}} {} {}\n", name, labels(r),
                         get(states[k][static_cast<size_t>(r)]).count,
                         t0 + static_cast<int64_t>(k) * kScrapeS);
      }
      for (size_t k = 0; k < states.size(); ++k) {
        o += fmt::format("{}_sum{{{}}} {} {}\n", name, labels(r),
                         get(states[k][static_cast<size_t>(r)]).sum,
                         t0 + static_cast<int64_t>(k) * kScrapeS);
      }
    }
  };
  hist("vllm:time_to_first_token_seconds",
       [](const ReplicaState& s) -> const Hist& { return s.ttft; });
  hist("vllm:request_queue_time_seconds",
       [](const ReplicaState& s) -> const Hist& { return s.queue; });
  hist("vllm:request_prefill_time_seconds",
       [](const ReplicaState& s) -> const Hist& { return s.prefill; });
  hist("vllm:request_prompt_tokens", [](const ReplicaState& s) -> const Hist& { return s.prompt; });
  auto scalar = [&](const char* family, const char* type, const char* sample, auto get) {
    o += fmt::format("# TYPE {} {}\n", family, type);
    for (int r = 0; r < kReplicas; ++r) {
      for (size_t k = 0; k < states.size(); ++k) {
        o += fmt::format("{}{{{}}} {} {}\n", sample, labels(r),
                         get(states[k][static_cast<size_t>(r)]),
                         t0 + static_cast<int64_t>(k) * kScrapeS);
      }
    }
  };
  scalar("vllm:prefix_cache_hits", "counter", "vllm:prefix_cache_hits_total",
         [](const ReplicaState& s) { return s.hits; });
  scalar("vllm:prefix_cache_queries", "counter", "vllm:prefix_cache_queries_total",
         [](const ReplicaState& s) { return s.queries; });
  scalar("vllm:num_preemptions", "counter", "vllm:num_preemptions_total",
         [](const ReplicaState& s) { return s.preemptions; });
  scalar("vllm:kv_cache_usage_perc", "gauge", "vllm:kv_cache_usage_perc",
         [](const ReplicaState& s) { return s.kv_usage; });
  o += "# EOF\n";
  return o;
}

// An hour of four replicas; at t0 + 1800 s the prefix cache stops hitting: uncached
// prompt tokens go up ~4x, prefill and queue time with them; prompts stay the same.
std::vector<std::vector<ReplicaState>> Simulate(int64_t change_offset_s) {
  std::mt19937_64 rng(4);
  std::vector<std::vector<ReplicaState>> states;
  std::vector<ReplicaState> cur(kReplicas);
  for (int k = 0; k <= kHourS / kScrapeS; ++k) {
    if (k > 0) {
      const bool incident = k * kScrapeS > change_offset_s;
      for (ReplicaState& s : cur) {
        std::lognormal_distribution<double> prompt(std::log(5000), 0.3);
        std::lognormal_distribution<double> queue(std::log(incident ? 0.6 : 0.05), 0.9);
        std::lognormal_distribution<double> per_token(std::log(8e-5), 0.1);
        for (int i = 0; i < kPerScrape; ++i) {
          const double p = prompt(rng);
          const double hit_rate = incident ? 0.05 : 0.8;
          const double cached = std::floor(p * hit_rate / 16) * 16;
          const double prefill = (p - cached) * per_token(rng);
          const double q = queue(rng);
          s.prompt.Observe(p);
          s.queue.Observe(q);
          s.prefill.Observe(prefill);
          s.ttft.Observe(0.003 + q + prefill);
          s.hits += cached;
          s.queries += p;
        }
        s.kv_usage = incident ? 0.62 : 0.55;
      }
    }
    states.push_back(cur);
  }
  return states;
}

class DiagnosePrometheus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!IsExecutable(kPrometheus) || !IsExecutable(kPromtool)) return;
    dir_ = fs::temp_directory_path() / fmt::format("ttft_diagprom_{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    // Three hours ago, on a whole minute: inside the default retention, and older than
    // the server's head block, so the backfilled block is served as written.
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    start_s_ = (now - 3 * kHourS) / 60 * 60;
    change_s_ = start_s_ + kHourS / 2;
    std::ofstream(dir_ / "in.om") << OpenMetrics(Simulate(kHourS / 2), start_s_);
    const std::string cmd = fmt::format(
        "timeout 120 {} tsdb create-blocks-from openmetrics {} {} > {} 2>&1", kPromtool,
        (dir_ / "in.om").string(), (dir_ / "data").string(), (dir_ / "promtool.log").string());
    if (std::system(cmd.c_str()) != 0) {
      setup_error_ = "promtool could not backfill the block:\n" +
                     ttft::testing::TailFile(dir_ / "promtool.log");
      return;
    }
    std::ofstream(dir_ / "prometheus.yml") << "global:\n  scrape_interval: 15s\n";
    // Ready, and the backfilled series queryable (the block is loaded at start-up).
    const std::string probe =
        fmt::format("/api/v1/query?query={}&time={}",
                    ttft::testing::UrlEncode("count(vllm:prefix_cache_queries_total)"), change_s_);
    const auto ready = [probe](int port) {
      const auto r = ttft::testing::HttpGet(port, probe);
      return r.status == 200 && r.body.find(fmt::format("\"{}\"", kReplicas)) != std::string::npos;
    };
    if (!prom_.Start(dir_ / "prometheus.yml", dir_ / "data", dir_ / "prometheus.log", ready, 60)) {
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
                      "to test `ttft diagnose --prometheus` against a real server";
    }
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  }

  static std::string url() { return prom_.url(); }

  static inline fs::path dir_;
  static inline ttft::testing::PrometheusProcess prom_;
  static inline int64_t start_s_ = 0, change_s_ = 0;
  static inline std::string setup_error_;
};

TEST_F(DiagnosePrometheus, FindsTheCacheCollapseFromMetricsAlone) {
  RunResult r =
      RunTtft(fmt::format("diagnose --prometheus {} --change-at {} --window 1500 "
                          "--selector 'job=\"vllm\"' --format json",
                          url(), change_s_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["verdict"], "regression") << j["verdict_reason"];
  EXPECT_EQ(j["sources"][0], url());
  EXPECT_DOUBLE_EQ(j["change_at_s"].get<double>(), static_cast<double>(change_s_));
  // Read from histogram buckets: every scrape's 2 rps x 4 replicas x 1,500 s.
  for (const char* w : {"baseline", "incident"}) {
    EXPECT_TRUE(j[w]["from_metrics"].get<bool>()) << w;
    EXPECT_EQ(j[w]["replicas"], kReplicas) << w;
    EXPECT_NEAR(j[w]["ok"].get<double>(), 1500.0 / kScrapeS * kPerScrape * kReplicas, 1.0) << w;
  }
  EXPECT_NEAR(j["baseline"]["prefix_cache_hit_rate"].get<double>(), 0.8, 0.02);
  EXPECT_NEAR(j["incident"]["prefix_cache_hit_rate"].get<double>(), 0.05, 0.02);
  EXPECT_GT(j["incident"]["ttft_s"]["p99"].get<double>(),
            2 * j["baseline"]["ttft_s"]["p99"].get<double>());
  EXPECT_NEAR(j["incident"]["kv_usage"].get<double>(), 0.62, 0.01);
  ASSERT_FALSE(j["hypotheses"].empty());
  EXPECT_EQ(j["hypotheses"][0]["id"], "prefix_cache_collapse") << j["hypotheses"].dump(1);
  EXPECT_EQ(j["decomposition"]["dominant"], "queue");
  // Metrics alone: the report says which checks could not run.
  int not_run = 0;
  for (const auto& h : j["hypotheses"]) not_run += !h["runnable"].get<bool>();
  EXPECT_GT(not_run, 0);
  EXPECT_THAT(j["fidelity_notes"].dump(), ::testing::HasSubstr("metrics only"));

  // The text report opens with the verdict and ranks the same cause first.
  RunResult t = RunTtft(
      fmt::format("diagnose --prometheus {} --change-at {} --window 1500", url(), change_s_));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_THAT(t.out, ::testing::StartsWith("Verdict: regression"));
  EXPECT_THAT(t.out, ::testing::HasSubstr("1. prefix_cache_collapse"));
}

TEST_F(DiagnosePrometheus, QuietHourIsNoRegression) {
  // Both windows before the collapse: the same traffic, no regression.
  RunResult r =
      RunTtft(fmt::format("diagnose --prometheus {} --change-at {} --window 800 "
                          "--format json",
                          url(), start_s_ + 900));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["verdict"], "no_regression") << j["verdict_reason"];
  for (const auto& a : j["actions"]) EXPECT_NE(a["kind"], "mitigate");
}

TEST_F(DiagnosePrometheus, ClearErrors) {
  // No series match the selector: one line naming it, exit 2.
  RunResult none =
      RunTtft(fmt::format("diagnose --prometheus {} --change-at {} --window 600 "
                          "--selector 'job=\"no_such_job\"'",
                          url(), change_s_));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, ::testing::HasSubstr("no_such_job"));
  // --prometheus needs the change time and the window.
  RunResult bare = RunTtft("diagnose --prometheus " + url());
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_THAT(bare.err, ::testing::HasSubstr("--prometheus needs --change-at and --window"));
  // A server that is not there: Unavailable (exit 69) after bounded retries, naming it.
  const std::string down = fmt::format("http://127.0.0.1:{}", FreeLoopbackPort());
  const auto t0 = Clock::now();
  RunResult off =
      RunTtft(fmt::format("diagnose --prometheus {} --change-at {} --window 600", down, change_s_));
  EXPECT_EQ(off.exit_code, 69) << "EX_UNAVAILABLE: " << off.err;
  EXPECT_THAT(off.err, ::testing::HasSubstr(down));
  EXPECT_LT(Since(t0), 30.0);
}

}  // namespace
