// Tests for the Prometheus HTTP API client (ttft/prometheus.h): error handling against
// small httplib servers, and the whole path against a real Prometheus server
// (/usr/bin/prometheus, Debian's package) scraping an exporter inside this test, with
// ttft's histogram quantiles checked against Prometheus's own histogram_quantile.
// Everything listens on 127.0.0.1 only; the Prometheus child is killed in teardown
// (and by PR_SET_PDEATHSIG should this process die first).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "telemetry/prometheus_process_testing.h"
#include "ttft/metrics.h"
#include "ttft/prometheus.h"
#include "ttft/window_stats.h"

namespace ttft {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

using ttft::testing::FreeLoopbackPort;
using ttft::testing::kPrometheus;

// An httplib server on 127.0.0.1 and an ephemeral port, run on its own thread.
class LoopbackServer {
 public:
  ~LoopbackServer() { Stop(); }
  httplib::Server& server() { return server_; }
  // Binds and starts serving; returns the port (-1 on failure).
  int Start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) return -1;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 200 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return port_;
  }
  void Stop() {
    if (thread_.joinable()) {
      server_.stop();
      thread_.join();
    }
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
};

PromClientOptions FastOptions() {
  PromClientOptions o;
  o.timeout_s = 0.5;
  o.max_attempts = 3;
  o.initial_backoff_s = 0.05;
  return o;
}

// One instant query against `url` with FastOptions but `timeout_s` and `attempts`:
// its result and the seconds it took.
std::pair<Result<std::vector<PromSeries>>, double> TimedQuery(const std::string& url,
                                                              double timeout_s, int attempts) {
  PromClientOptions o = FastOptions();
  o.timeout_s = timeout_s;
  o.max_attempts = attempts;
  auto client = PromClient::Create(url, o);
  if (!client.ok()) return {client.status(), 0.0};
  const auto t0 = Clock::now();
  auto r = client->Query("up", 1700000000);
  return {std::move(r), Since(t0)};
}

// ---------------------------------------------------------------------------
// Error handling (no Prometheus needed)
// ---------------------------------------------------------------------------

TEST(PromClient, ServerDownIsUnavailableAfterBoundedRetriesWithBackoff) {
  const int port = FreeLoopbackPort();
  ASSERT_GT(port, 0);
  const std::string url = fmt::format("http://127.0.0.1:{}", port);
  auto client = PromClient::Create(url, FastOptions());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const auto t0 = Clock::now();
  auto r = client->Query("up", 1700000000);
  const double dt = Since(t0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find(url), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("after 3 attempts"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("cannot connect"), std::string::npos)
      << r.status().ToString();
  // Back-off between the 3 attempts: 0.05 + 0.1 s; refused connects are immediate.
  EXPECT_GE(dt, 0.15);
  EXPECT_LT(dt, 5.0);
}

TEST(PromClient, ReadTimeoutIsRetriedThenUnavailable) {
  LoopbackServer slow;
  std::atomic<int> hits{0};
  slow.server().Get("/api/v1/query", [&](const httplib::Request&, httplib::Response& res) {
    ++hits;
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    res.set_content(R"({"status":"success","data":{"resultType":"vector","result":[]}})",
                    "application/json");
  });
  ASSERT_GT(slow.Start(), 0);
  const auto [r, dt] = TimedQuery(slow.url(), 0.2, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("after 2 attempts"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("response within 0.2 s"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(hits.load(), 2);
  // Two 0.2 s timeouts and a 0.05 s back-off, far below the handler's 1.5 s.
  EXPECT_LT(dt, 1.4);
  slow.Stop();
}

// A server that answers at once but sends its body a byte at a time, each byte well
// within the read timeout: the attempt as a whole is bounded by timeout_s.
TEST(PromClient, SlowDripBodyIsBoundedByTheTimeoutPerAttempt) {
  LoopbackServer drip;
  std::atomic<bool> stop{false};
  drip.server().Get("/api/v1/query", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [&](size_t, httplib::DataSink& sink) {
      if (stop.load()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return sink.write(" ", 1);
    });
  });
  ASSERT_GT(drip.Start(), 0);
  const auto [r, dt] = TimedQuery(drip.url(), 0.4, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("no complete response within 0.4 s"), std::string::npos)
      << r.status().ToString();
  // Two 0.4 s attempts and a 0.05 s back-off; without the bound it would never end.
  EXPECT_LT(dt, 3.0);
  stop = true;
  drip.Stop();
}

// An endless body: an error naming the limit once max_response_bytes arrived, not an
// out-of-memory, and not retried.
TEST(PromClient, EndlessBodyStopsAtTheResponseLimit) {
  LoopbackServer endless;
  std::atomic<int> hits{0};
  std::atomic<bool> stop{false};
  endless.server().Get("/api/v1/query", [&](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.set_chunked_content_provider("application/json", [&](size_t, httplib::DataSink& sink) {
      static const std::string chunk(64 << 10, '[');
      return !stop.load() && sink.write(chunk.data(), chunk.size());
    });
  });
  ASSERT_GT(endless.Start(), 0);
  PromClientOptions o = FastOptions();
  o.timeout_s = 20;
  o.max_response_bytes = size_t{4} << 20;
  auto client = PromClient::Create(endless.url(), o);
  ASSERT_TRUE(client.ok());
  const auto t0 = Clock::now();
  auto r = client->Query("up", 1700000000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("larger than 4 MiB"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(hits.load(), 1);
  EXPECT_LT(Since(t0), 10.0);
  stop = true;
  endless.Stop();
}

TEST(PromClient, RetriesServerErrorsButNotRejectedQueries) {
  LoopbackServer srv;
  std::atomic<int> hits{0};
  std::atomic<int> fail_first{2};
  srv.server().Get("/api/v1/query", [&](const httplib::Request& req, httplib::Response& res) {
    ++hits;
    if (req.get_param_value("query") == "bad(") {
      res.status = 400;
      res.set_content(
          R"({"status":"error","errorType":"bad_data","error":"1:5: parse error: unclosed"})",
          "application/json");
      return;
    }
    if (fail_first-- > 0) {
      res.status = fail_first == 1 ? 503 : 429;
      return;
    }
    res.set_content(R"({"status":"success","data":{"resultType":"vector","result":[)"
                    R"({"metric":{"__name__":"up","job":"x"},"value":[1700000000.5,"1"]}]}})",
                    "application/json");
  });
  ASSERT_GT(srv.Start(), 0);
  auto client = PromClient::Create(srv.url(), FastOptions());
  ASSERT_TRUE(client.ok());
  // 503, then 429, then success: three attempts.
  auto ok = client->Query("up", 1700000000.5);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(hits.load(), 3);
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].points[0], std::make_pair(1700000000.5, 1.0));
  // A rejected query carries Prometheus's message and is tried once.
  hits = 0;
  auto bad = client->Query("bad(", 1700000000);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("parse error: unclosed"), std::string::npos);
  EXPECT_EQ(hits.load(), 1);
}

TEST(PromClient, RejectsBadUrlsAndWindows) {
  EXPECT_FALSE(PromClient::Create("127.0.0.1:9090").ok());
  EXPECT_FALSE(PromClient::Create("https://127.0.0.1:9090").ok());
  // Options that cannot bound a request (NaN reached an integer duration_cast).
  for (double t : {0.0, -1.0, std::nan(""), 1e300}) {
    PromClientOptions o = FastOptions();
    o.timeout_s = t;
    EXPECT_EQ(PromClient::Create("http://127.0.0.1:1", o).status().code(),
              StatusCode::kInvalidArgument)
        << t;
  }
  PromClientOptions no_attempt = FastOptions();
  no_attempt.max_attempts = 0;
  EXPECT_FALSE(PromClient::Create("http://127.0.0.1:1", no_attempt).ok());
  auto client = PromClient::Create("http://127.0.0.1:1", FastOptions());
  ASSERT_TRUE(client.ok());
  auto r = FetchPromWindow(*client, "", 100, 100);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  r = FetchPromWindow(*client, "", 0, 86400 * 30, 1);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("11,000"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Against a real Prometheus server
// ---------------------------------------------------------------------------

constexpr int kObsPerScrape = 200;
constexpr int kPhaseBFrom = 5;  // scrapes 1-4 fast (baseline), 5-9 slow (incident)
constexpr int kResetAt = 10;    // the "replica" restarts before serving scrape 10
constexpr int kLastScrape = 12;
// vLLM v1's TTFT buckets (vllm/v1/metrics/loggers.py), read from the data by ttft.
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0};
const std::vector<double> kQueueBuckets = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0};

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

// The cumulative state of a vLLM-like replica, as exposed at one scrape.
struct ExporterState {
  Hist ttft{kTtftBuckets};
  Hist queue{kQueueBuckets};
  double hits = 0, queries = 0;
};

// Renders vLLM v1 exposition text, labels deliberately in no fixed order.
std::string Render(const ExporterState& s, int scrape) {
  std::string out;
  auto hist = [&](const char* name, const Hist& h) {
    out += fmt::format("# HELP {} test histogram\n# TYPE {} histogram\n", name, name);
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      out += fmt::format("{}_bucket{{model_name=\"m\",le=\"{}\",engine=\"0\"}} {}\n", name,
                         FormatPromFloat(h.bounds[i]), h.counts[i]);
    }
    out +=
        fmt::format("{}_bucket{{engine=\"0\",le=\"+Inf\",model_name=\"m\"}} {}\n", name, h.count);
    out += fmt::format("{}_count{{engine=\"0\",model_name=\"m\"}} {}\n", name, h.count);
    out += fmt::format("{}_sum{{engine=\"0\",model_name=\"m\"}} {}\n", name, h.sum);
  };
  hist("vllm:time_to_first_token_seconds", s.ttft);
  hist("vllm:request_queue_time_seconds", s.queue);
  out += "# TYPE vllm:prefix_cache_hits_total counter\n";
  out += fmt::format("vllm:prefix_cache_hits_total{{model_name=\"m\",engine=\"0\"}} {}\n", s.hits);
  out += "# TYPE vllm:prefix_cache_queries_total counter\n";
  out += fmt::format("vllm:prefix_cache_queries_total{{engine=\"0\",model_name=\"m\"}} {}\n",
                     s.queries);
  out += fmt::format("# TYPE ttft_test_scrape gauge\nttft_test_scrape {}\n", scrape);
  return out;
}

// Serves /metrics; every scrape adds kObsPerScrape observations first, so counters
// grow between scrapes. Keeps the state exposed at every scrape (index = scrape no.).
class FakeVllm {
 public:
  FakeVllm() {
    states_.emplace_back();  // scrape 0: nothing yet
    server_.server().Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      const int k = static_cast<int>(states_.size());
      ExporterState s = k == kResetAt ? ExporterState{} : states_.back();
      // Baseline: TTFT ~ lognormal(median 50 ms); incident: median 400 ms.
      std::lognormal_distribution<double> fast(std::log(0.05), 0.6), slow(std::log(0.4), 0.7);
      std::lognormal_distribution<double> queue(std::log(0.2), 1.0);
      for (int i = 0; i < kObsPerScrape; ++i) {
        s.ttft.Observe(k < kPhaseBFrom ? fast(rng_) : slow(rng_));
        s.queue.Observe(queue(rng_));
        s.queries += 1000;
        s.hits += k < kPhaseBFrom ? 600 : 200;
      }
      states_.push_back(s);
      res.set_content(Render(s, k), "text/plain; version=0.0.4");
    });
  }
  int Start() { return server_.Start(); }
  void Stop() { server_.Stop(); }
  int scrapes() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(states_.size()) - 1;
  }
  ExporterState state(int k) {
    std::lock_guard<std::mutex> lock(mu_);
    return states_.at(static_cast<size_t>(k));
  }

 private:
  LoopbackServer server_;
  std::mutex mu_;
  std::vector<ExporterState> states_;
  std::mt19937_64 rng_{20240601};
};

class LivePrometheus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!ttft::testing::IsExecutable(kPrometheus)) return;  // each test skips
    const auto t0 = Clock::now();
    exporter_ = new FakeVllm();
    const int exporter_port = exporter_->Start();
    if (exporter_port <= 0) {
      setup_error_ = "cannot bind the exporter on 127.0.0.1";
      return;
    }
    dir_ = fs::temp_directory_path() / fmt::format("ttft_prom_{}", ::getpid());
    fs::create_directories(dir_ / "data");
    {
      std::ofstream cfg(dir_ / "prometheus.yml");
      cfg << "global:\n  scrape_interval: 500ms\n  scrape_timeout: 400ms\n"
          << "scrape_configs:\n  - job_name: ttft_test\n    static_configs:\n"
          << "      - targets: ['127.0.0.1:" << exporter_port << "']\n";
    }
    const auto ready = [](int port) {
      return ttft::testing::HttpGet(port, "/-/ready", 1).status == 200;
    };
    if (!prom_.Start(dir_ / "prometheus.yml", dir_ / "data", dir_ / "prometheus.log", ready, 30)) {
      setup_error_ = prom_.error();
      return;
    }
    // Wait (bounded) until every scrape we need is in the TSDB.
    auto client = PromClient::Create(url(), FastOptions());
    while (Since(t0) < 60) {
      auto r = client->Query("max(ttft_test_scrape{job=\"ttft_test\"})", NowS());
      if (r.ok() && !r->empty() && r->front().points[0].second >= kLastScrape) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    exporter_->Stop();  // no more scrapes: the states we compare against are final
    ready_s_ = Since(t0);
  }

  static void TearDownTestSuite() {
    prom_.Stop();
    delete exporter_;
    exporter_ = nullptr;
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  void SetUp() override {
    if (!ttft::testing::IsExecutable(kPrometheus)) {
      GTEST_SKIP() << kPrometheus << " is absent: install Debian's prometheus package "
                   << "(scripts/install-deps.sh) to compare with a real server";
    }
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
    auto c = PromClient::Create(url(), FastOptions());
    ASSERT_TRUE(c.ok());
    client_.emplace(std::move(*c));
    // Sample timestamps of each scrape, from Prometheus itself (raw samples).
    auto raw = client_->Query("ttft_test_scrape{job=\"ttft_test\"}[10m]", NowS());
    ASSERT_TRUE(raw.ok()) << raw.status().ToString();
    ASSERT_EQ(raw->size(), 1u);
    for (const auto& [t, k] : raw->front().points) scrape_time_[static_cast<int>(k)] = t;
    for (int k = 1; k <= kLastScrape; ++k) {
      ASSERT_TRUE(scrape_time_.count(k))
          << "scrape " << k << " not in Prometheus after " << ready_s_ << " s";
    }
  }

  static std::string url() { return prom_.url(); }
  static double NowS() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  // Prometheus's own histogram_quantile over the increase between two sample times
  // (instant vectors at exactly those times: no extrapolation, as ttft's WindowDelta).
  double PromQuantile(const std::string& family, double q, double t1, double t2) {
    const std::string sel = fmt::format("{}_bucket{{job=\"ttft_test\"}}", family);
    const std::string expr = fmt::format(
        "histogram_quantile({}, sum by (le) ({} @ {:.3f} - {} @ {:.3f}))", q, sel, t2, sel, t1);
    auto r = client_->Query(expr, t2);
    EXPECT_TRUE(r.ok()) << expr << ": " << r.status().ToString();
    if (!r.ok() || r->size() != 1) return std::nan("");
    return r->front().points[0].second;
  }

  // ttft's summary of the window [t1, t2] fetched through the client.
  GroupSummary TtftWindow(double t1, double t2, double max_step_s = 15) {
    auto snaps = FetchPromWindow(*client_, "{job=\"ttft_test\"}", t1, t2, max_step_s);
    EXPECT_TRUE(snaps.ok()) << snaps.status().ToString();
    if (!snaps.ok()) return {};
    EXPECT_GE(snaps->size(), 2u);
    EXPECT_DOUBLE_EQ(snaps->front().timestamp_s, t1);
    EXPECT_DOUBLE_EQ(snaps->back().timestamp_s, t2);
    ReadReport report;
    auto window = WindowDelta(*snaps, report);
    EXPECT_TRUE(window.ok()) << window.status().ToString();
    EXPECT_EQ(report.records_skipped, 0) << report.Summary();
    auto groups = SummarizeMetrics(*window, {});
    EXPECT_TRUE(groups.ok());
    if (!groups.ok() || groups->size() != 1) return {};
    return groups->front();
  }

  static inline FakeVllm* exporter_ = nullptr;
  static inline fs::path dir_;
  static inline ttft::testing::PrometheusProcess prom_;
  static inline std::string setup_error_;
  static inline double ready_s_ = 0;
  std::optional<PromClient> client_;
  std::map<int, double> scrape_time_;
};

// One test per server start (ctest runs each test in its own process).
TEST_F(LivePrometheus, QueriesRangesAndClearErrors) {
  auto up = client_->Query("up{job=\"ttft_test\"}", scrape_time_[3]);
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  ASSERT_EQ(up->size(), 1u);
  EXPECT_EQ(up->front().points[0].second, 1.0);
  // Points at the sample times themselves: one per scrape, in order.
  auto range = client_->QueryRange("ttft_test_scrape", scrape_time_[2], scrape_time_[2] + 2.0, 0.5);
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  ASSERT_EQ(range->size(), 1u);
  const auto& pts = range->front().points;
  ASSERT_EQ(pts.size(), 5u);
  EXPECT_EQ(pts.front().second, 2.0);
  for (size_t i = 1; i < pts.size(); ++i) EXPECT_GE(pts[i].second, pts[i - 1].second);
  // Missing series and rejected queries are clear errors.
  auto none = FetchPromWindow(*client_, "{job=\"no_such_job\"}", scrape_time_[1], scrape_time_[4]);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no_such_job"), std::string::npos);
  auto bad = client_->Query("sum(", scrape_time_[1]);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("parse error"), std::string::npos)
      << bad.status().ToString();
}

TEST_F(LivePrometheus, WindowsMatchPrometheusHistogramQuantileAndSurviveAReset) {
  const double t1 = scrape_time_[1], t4 = scrape_time_[kPhaseBFrom - 1],
               t9 = scrape_time_[kResetAt - 1];
  const GroupSummary base = TtftWindow(t1, t4);
  const GroupSummary incident = TtftWindow(t4, t9);
  // Counts and hit rates are exactly the exporter's increments.
  const ExporterState s1 = exporter_->state(1), s4 = exporter_->state(kPhaseBFrom - 1),
                      s9 = exporter_->state(kResetAt - 1);
  EXPECT_EQ(base.stats.requests, static_cast<int64_t>(s4.ttft.count - s1.ttft.count));
  EXPECT_EQ(incident.stats.requests, static_cast<int64_t>(s9.ttft.count - s4.ttft.count));
  EXPECT_EQ(base.stats.requests, 3 * kObsPerScrape);
  EXPECT_DOUBLE_EQ(base.stats.prefix_cache_hit_rate, 0.6);
  EXPECT_DOUBLE_EQ(incident.stats.prefix_cache_hit_rate, 0.2);
  EXPECT_NEAR(base.stats.ttft_s.mean, (s4.ttft.sum - s1.ttft.sum) / (s4.ttft.count - s1.ttft.count),
              1e-9);
  // The same quantiles as Prometheus's histogram_quantile on the same data.
  for (size_t i = 0; i < TermQuantiles::kQs.size(); ++i) {
    const double q = TermQuantiles::kQs[i];
    SCOPED_TRACE(fmt::format("q={}", q));
    ASSERT_TRUE(base.stats.ttft_s.available() && incident.stats.ttft_s.available());
    const double prom_base = PromQuantile("vllm:time_to_first_token_seconds", q, t1, t4);
    const double prom_incident = PromQuantile("vllm:time_to_first_token_seconds", q, t4, t9);
    EXPECT_NEAR(base.stats.ttft_s.at(i), prom_base, 1e-9 * std::max(1.0, prom_base));
    EXPECT_NEAR(incident.stats.ttft_s.at(i), prom_incident, 1e-9 * std::max(1.0, prom_incident));
    EXPECT_GE(base.stats.ttft_s.at(i), base.stats.ttft_s.buckets[i].lower_bound);
    EXPECT_LE(base.stats.ttft_s.at(i), base.stats.ttft_s.buckets[i].upper_bound);
    const double prom_queue = PromQuantile("vllm:request_queue_time_seconds", q, t1, t4);
    EXPECT_NEAR(base.stats.queue_s.at(i), prom_queue, 1e-9 * std::max(1.0, prom_queue));
  }
  // The regression is visible: the incident's p99 is several times the baseline's.
  EXPECT_GT(incident.stats.ttft_s.at(2), 2 * base.stats.ttft_s.at(2));

  // The replica restarted before scrape kResetAt; a grid finer than the scrape
  // interval sees every sample, so the window holds exactly the observations made.
  const int a = kResetAt - 2, b = kLastScrape;
  const GroupSummary g = TtftWindow(scrape_time_[a], scrape_time_[b], 0.1);
  const double expected =
      (exporter_->state(kResetAt - 1).ttft.count - exporter_->state(a).ttft.count) +
      exporter_->state(b).ttft.count;
  EXPECT_EQ(g.stats.requests, static_cast<int64_t>(expected));
  EXPECT_EQ(g.stats.requests, (b - a) * kObsPerScrape);
}

}  // namespace
}  // namespace ttft
