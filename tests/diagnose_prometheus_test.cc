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
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kPrometheus = "/usr/bin/prometheus";
constexpr const char* kPromtool = "/usr/bin/promtool";
constexpr int kReplicas = 4;
constexpr int kScrapeS = 15;
constexpr int kHourS = 3600;
constexpr int kPerScrape = 30;  // requests per replica per scrape interval (2 rps)

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs `ttft ARGS` under `timeout`; standard error goes to a temp file.
RunResult RunTtft(const std::string& args, int timeout_s = 120) {
  const fs::path err_path =
      fs::temp_directory_path() / ("ttft_diagprom_err_" + std::to_string(::getpid()));
  const std::string cmd = "timeout " + std::to_string(timeout_s) + " " TTFT_BINARY " " + args +
                          " 2>" + err_path.string();
  RunResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(err_path);
  std::stringstream ss;
  ss << f.rdbuf();
  r.err = ss.str();
  fs::remove(err_path);
  return r;
}

// A loopback port nobody listens on (bound, then released).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
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
    if (::access(kPrometheus, X_OK) != 0 || ::access(kPromtool, X_OK) != 0) return;
    const auto t0 = Clock::now();
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
      setup_error_ = "promtool could not backfill the block:\n" + Read(dir_ / "promtool.log");
      return;
    }
    std::ofstream(dir_ / "prometheus.yml") << "global:\n  scrape_interval: 15s\n";
    // A port picked just before start may be taken meanwhile: try a few.
    for (int attempt = 0; attempt < 3 && pid_ <= 0; ++attempt) {
      port_ = FreePort();
      if (!StartPrometheus()) continue;
      if (!WaitReady(t0)) StopPrometheus();
    }
    if (pid_ <= 0) {
      setup_error_ = "prometheus did not become ready; log:\n" + Read(dir_ / "prometheus.log");
    }
  }

  static void TearDownTestSuite() {
    StopPrometheus();
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  void SetUp() override {
    if (::access(kPrometheus, X_OK) != 0 || ::access(kPromtool, X_OK) != 0) {
      GTEST_SKIP() << kPrometheus << " or " << kPromtool
                   << " is absent: install Debian's prometheus package (scripts/install-deps.sh) "
                      "to test `ttft diagnose --prometheus` against a real server";
    }
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  }

  static std::string Read(const fs::path& p) {
    std::ifstream in(p);
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
  }
  static std::string url() { return fmt::format("http://127.0.0.1:{}", port_); }

  static bool StartPrometheus() {
    const std::string cfg = "--config.file=" + (dir_ / "prometheus.yml").string();
    const std::string data = "--storage.tsdb.path=" + (dir_ / "data").string();
    const std::string listen = fmt::format("--web.listen-address=127.0.0.1:{}", port_);
    const std::string log = (dir_ / "prometheus.log").string();
    const pid_t pid = ::fork();
    if (pid < 0) return false;
    if (pid == 0) {
      // Child: async-signal-safe calls only, then exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      const char* argv[] = {kPrometheus,    cfg.c_str(),        data.c_str(),
                            listen.c_str(), "--log.level=warn", nullptr};
      ::execv(kPrometheus, const_cast<char* const*>(argv));
      ::_exit(127);
    }
    pid_ = pid;
    return true;
  }

  // Ready, and the backfilled series queryable (the block is loaded at start-up).
  static bool WaitReady(Clock::time_point t0) {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(0, 200000);
    c.set_read_timeout(2, 0);
    const std::string q = fmt::format(
        "/api/v1/query?query=count(vllm:prefix_cache_queries_total)&time={}", change_s_);
    while (Since(t0) < 60) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;  // exited (e.g. port taken)
        return false;
      }
      auto res = c.Get(q);
      if (res && res->status == 200 &&
          res->body.find(fmt::format("\"{}\"", kReplicas)) != std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  static void StopPrometheus() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  static inline fs::path dir_;
  static inline pid_t pid_ = -1;
  static inline int port_ = -1;
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
  const std::string down = fmt::format("http://127.0.0.1:{}", FreePort());
  const auto t0 = Clock::now();
  RunResult off =
      RunTtft(fmt::format("diagnose --prometheus {} --change-at {} --window 600", down, change_s_));
  EXPECT_EQ(off.exit_code, 69) << "EX_UNAVAILABLE: " << off.err;
  EXPECT_THAT(off.err, ::testing::HasSubstr(down));
  EXPECT_LT(Since(t0), 30.0);
}

}  // namespace
