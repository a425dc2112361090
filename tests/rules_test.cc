// `ttft rules` end to end: the real binary writes the rule files and the dashboard, and
// real tools judge them.
//
//   * promtool check rules (and vmalert -dryRun): both files, both engines.
//   * promtool test rules, both engines: synthetic series (written here) on which each
//     alert must fire, and healthy series on which none may.
//   * a real Prometheus (Debian's /usr/bin/prometheus) backfilled with the metrics of a
//     simulated incident (`ttft simulate incidents/prefix-cache-collapse`), and
//     VictoriaMetrics with the same series imported: every dashboard query and every
//     recording rule returns data on both, and `ttft diagnose --prometheus` reaches the
//     same diagnosis from either.
//   * VictoriaMetrics and vmalert (Debian's victoria-metrics package): series imported
//     with timestamps, the alert file replayed over them; the hit-rate-drop and
//     burn-rate alerts fire for the degraded model and for it only.
//
// Everything listens on and connects to 127.0.0.1 only; every wait is bounded (coreutils
// `timeout`, polling deadlines); servers are stopped in teardown and by
// PR_SET_PDEATHSIG should this process die first. A test whose binaries are absent skips
// and says which package to install.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "run_ttft.h"
#include "telemetry/prometheus_process_testing.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using ttft::testing::FreeLoopbackPort;
using ttft::testing::HttpGet;
using ttft::testing::IsExecutable;
using ttft::testing::kPrometheus;
using ttft::testing::kPromtool;
using ttft::testing::ReadFile;
using ttft::testing::RunResult;
using ttft::testing::RunTtft;
using ttft::testing::TailFile;
using ttft::testing::TempDir;
using ttft::testing::UrlEncode;

constexpr const char* kVictoriaMetrics = "/usr/bin/victoria-metrics";
constexpr const char* kVmalert = "/usr/bin/vmalert";
constexpr const char* kSelector = R"(job="vllm")";

// `cmd` through the shell under coreutils `timeout`, output to `log`; the exit code.
int Sh(const std::string& cmd, const fs::path& log, int timeout_s) {
  const std::string full = fmt::format("timeout {} {} > {} 2>&1", timeout_s, cmd, log.string());
  const int st = std::system(full.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// `ttft rules --out dir FLAGS`, or a failure with its standard error.
::testing::AssertionResult Generate(const fs::path& dir, const std::string& flags) {
  RunResult r = RunTtft(fmt::format("rules --out {} {}", dir.string(), flags), 60);
  if (r.exit_code != 0) {
    return ::testing::AssertionFailure()
           << "ttft rules " << flags << ": exit " << r.exit_code << ": " << r.err;
  }
  for (const char* f :
       {"ttft-recording.rules.yml", "ttft-alerts.rules.yml", "ttft-dashboard.json"}) {
    if (!fs::exists(dir / f)) return ::testing::AssertionFailure() << "no " << f;
  }
  return ::testing::AssertionSuccess();
}

// Every `expr` of a rule file, by record or alert name.
std::map<std::string, std::string> RuleExprs(const fs::path& file) {
  std::map<std::string, std::string> out;
  const YAML::Node root = YAML::LoadFile(file.string());
  for (const auto& g : root["groups"]) {
    for (const auto& r : g["rules"]) {
      const std::string name =
          r["record"] ? r["record"].as<std::string>() : r["alert"].as<std::string>();
      out[name] = r["expr"].as<std::string>();
    }
  }
  return out;
}

// Every panel target's expression of the dashboard, with its panel title.
std::vector<std::pair<std::string, std::string>> DashboardExprs(const fs::path& file) {
  std::vector<std::pair<std::string, std::string>> out;
  const json d = json::parse(ReadFile(file));
  for (const auto& p : d["panels"]) {
    if (!p.contains("targets")) continue;
    for (const auto& t : p["targets"]) out.emplace_back(p["title"], t["expr"]);
  }
  return out;
}

// Grafana's variables as "all": what the dashboard shows by default.
std::string ExpandGrafana(std::string e) {
  e = std::regex_replace(e, std::regex(R"(\$__rate_interval)"), "1m");
  e = std::regex_replace(e, std::regex(R"(\$model_name|\$replica)"), ".*");
  return e;
}

// -----------------------------------------------------------------------------
// promtool
// -----------------------------------------------------------------------------

class RulesPromtool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsExecutable(kPromtool)) {
      GTEST_SKIP() << kPromtool << " is absent: install Debian's prometheus package "
                   << "(scripts/install-deps.sh) to check the generated rules";
    }
  }
};

TEST_F(RulesPromtool, CheckRulesAcceptsBothFilesForBothEngines) {
  for (const char* engine : {"vllm", "sglang"}) {
    const fs::path dir = TempDir(std::string("rules_check_") + engine);
    ASSERT_TRUE(Generate(dir, fmt::format("--engine {} --selector '{}'", engine, kSelector)));
    for (const char* f : {"ttft-recording.rules.yml", "ttft-alerts.rules.yml"}) {
      const int rc = Sh(fmt::format("{} check rules {}", kPromtool, (dir / f).string()),
                        dir / "check.log", 60);
      EXPECT_EQ(rc, 0) << engine << " " << f << ":\n" << ReadFile(dir / "check.log");
      EXPECT_THAT(ReadFile(dir / "check.log"), ::testing::HasSubstr("SUCCESS"));
      // vmalert parses the same files (its PromQL dialect, MetricsQL, and templates).
      if (IsExecutable(kVmalert)) {
        const int vrc = Sh(fmt::format("{} -dryRun -rule={} -datasource.url=http://127.0.0.1:1 "
                                       "-loggerLevel=ERROR",
                                       kVmalert, (dir / f).string()),
                           dir / "vmalert.log", 60);
        EXPECT_EQ(vrc, 0) << engine << " " << f << ":\n" << ReadFile(dir / "vmalert.log");
      }
    }
    // What SGLang lacks is left out, and the files say so.
    const std::string rec = ReadFile(dir / "ttft-recording.rules.yml");
    if (std::string(engine) == "sglang") {
      EXPECT_THAT(rec, ::testing::Not(::testing::HasSubstr("prefill_time_seconds")));
      EXPECT_THAT(rec, ::testing::HasSubstr("# LEFT OUT: prefill time"));
      EXPECT_THAT(rec, ::testing::HasSubstr("sglang:time_to_first_token_seconds_bucket"));
      EXPECT_THAT(rec, ::testing::Not(::testing::HasSubstr("vllm:")));
    } else {
      EXPECT_THAT(rec, ::testing::HasSubstr("vllm:request_prefill_time_seconds_bucket"));
      EXPECT_THAT(rec, ::testing::Not(::testing::HasSubstr("sglang:")));
    }
    fs::remove_all(dir);
  }
}

// A promtool `exp_alerts` entry: the alert's labels (from the rule) plus the series'
// labels, and its annotations with {{ $labels.X }} expanded as Prometheus would.
struct AlertDef {
  std::map<std::string, std::string> labels, annotations;
};

std::map<std::string, AlertDef> AlertDefs(const fs::path& file) {
  std::map<std::string, AlertDef> out;
  const YAML::Node root = YAML::LoadFile(file.string());
  for (const auto& g : root["groups"]) {
    for (const auto& r : g["rules"]) {
      AlertDef d;
      for (const auto& kv : r["labels"])
        d.labels[kv.first.as<std::string>()] = kv.second.as<std::string>();
      for (const auto& kv : r["annotations"]) {
        d.annotations[kv.first.as<std::string>()] = kv.second.as<std::string>();
      }
      out[r["alert"].as<std::string>()] = d;
    }
  }
  return out;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

std::string ExpAlert(const AlertDef& def, const std::map<std::string, std::string>& series) {
  std::map<std::string, std::string> labels = def.labels;
  labels.insert(series.begin(), series.end());
  std::string o = "          - exp_labels:\n";
  for (const auto& [k, v] : labels) o += fmt::format("              {}: {}\n", k, Quote(v));
  o += "            exp_annotations:\n";
  for (auto [k, v] : def.annotations) {
    for (const auto& [lk, lv] : series) {
      v = std::regex_replace(v, std::regex("\\{\\{ \\$labels\\." + lk + " \\}\\}"), lv);
    }
    o += fmt::format("              {}: {}\n", k, Quote(v));
  }
  return o;
}

// One alert_rule_test: `alert` at `eval_time` fires exactly for `firing` (series labels).
std::string AlertTest(const std::map<std::string, AlertDef>& defs, const std::string& alert,
                      const std::string& eval_time,
                      const std::vector<std::map<std::string, std::string>>& firing) {
  std::string o = fmt::format("      - eval_time: {}\n        alertname: {}\n", eval_time, alert);
  if (firing.empty()) return o + "        exp_alerts: []\n";
  o += "        exp_alerts:\n";
  for (const auto& s : firing) o += ExpAlert(defs.at(alert), s);
  return o;
}

std::string Series(const std::string& s, const std::string& values) {
  return fmt::format("      - series: {}\n        values: {}\n", Quote(s), Quote(values));
}

// The series names `ttft rules --engine E` reads, for the synthetic input.
struct EngineNames {
  const char* engine;
  std::string ttft, hits, queries, queue;
};
const EngineNames kEngines[] = {
    {"vllm", "vllm:time_to_first_token_seconds", "vllm:prefix_cache_hits_total",
     "vllm:prefix_cache_queries_total", "vllm:request_queue_time_seconds_bucket"},
    {"sglang", "sglang:time_to_first_token_seconds", "sglang:cached_tokens_total",
     "sglang:prompt_tokens_total", "sglang:queue_time_seconds_bucket"},
};

// gtest prints the parameter in test names (and ctest's): the engine, not its bytes.
void PrintTo(const EngineNames& e, std::ostream* os) { *os << e.engine; }

class RulesPromtoolUnit : public RulesPromtool,
                          public ::testing::WithParamInterface<EngineNames> {};

INSTANTIATE_TEST_SUITE_P(Engines, RulesPromtoolUnit, ::testing::ValuesIn(kEngines),
                         [](const auto& info) { return std::string(info.param.engine); });

TEST_P(RulesPromtoolUnit, TestRulesEachAlertFiresAndHealthySeriesStayQuiet) {
  const EngineNames& e = GetParam();
  const fs::path dir = TempDir(std::string("rules_unit_") + e.engine);
  ASSERT_TRUE(Generate(dir, fmt::format("--engine {} --selector '{}'", e.engine, kSelector)));
  const auto defs = AlertDefs(dir / "ttft-alerts.rules.yml");
  ASSERT_EQ(defs.size(), 5u);
  const std::string& ttft = e.ttft;
  const std::string &hits = e.hits, &queries = e.queries;
  const std::string& queue = e.queue;
  auto m = [](const std::string& model) {
    return std::map<std::string, std::string>{{"model_name", model}};
  };
  std::string t =
      "rule_files:\n  - ttft-alerts.rules.yml\n  - ttft-recording.rules.yml\n"
      "evaluation_interval: 1m\ntests:\n";

  // 1. Burn rate, 8 hours at 1000 requests a minute. "bad": half over 1 s (both windows
  // pairs); "slow": 8% over (above 6 x 1%, below 14.4 x 1%: the slow alert only);
  // "go": bad, with Go's le="1"; "good": 0.1%; job "other": bad but not selected.
  t += "  - interval: 1m\n    input_series:\n";
  for (const auto& [model, good, le, job] :
       std::vector<std::tuple<std::string, int, std::string, std::string>>{
           {"bad", 500, "1.0", "vllm"},
           {"slow", 920, "1.0", "vllm"},
           {"go", 500, "1", "vllm"},
           {"good", 999, "1.0", "vllm"},
           {"bad", 500, "1.0", "other"}}) {
    t += Series(
        fmt::format("{}_bucket{{job=\"{}\",model_name=\"{}\",le=\"{}\"}}", ttft, job, model, le),
        fmt::format("0+{}x480", good));
    t += Series(fmt::format("{}_count{{job=\"{}\",model_name=\"{}\"}}", ttft, job, model),
                "0+1000x480");
  }
  t += "    alert_rule_test:\n";
  t += AlertTest(defs, "TTFTErrorBudgetBurnFast", "7h", {m("bad"), m("go")});
  t += AlertTest(defs, "TTFTErrorBudgetBurnSlow", "7h", {m("bad"), m("go"), m("slow")});

  // 2. Hit rate against the hour before: "drop" goes from 80% to 5% at minute 120,
  // "steady" stays at 80%, "half" at 50% (and its recorded ratio is exactly 0.5).
  t += "  - interval: 1m\n    input_series:\n";
  t +=
      Series(fmt::format("{}{{job=\"vllm\",model_name=\"drop\"}}", hits), "0+800x120 96050+50x119");
  t += Series(fmt::format("{}{{job=\"vllm\",model_name=\"steady\"}}", hits), "0+800x240");
  t += Series(fmt::format("{}{{job=\"vllm\",model_name=\"half\"}}", hits), "0+500x240");
  for (const char* model : {"drop", "steady", "half"}) {
    t += Series(fmt::format("{}{{job=\"vllm\",model_name=\"{}\"}}", queries, model), "0+1000x240");
  }
  t += "    alert_rule_test:\n";
  // Pending from about minute 123; `for: 10m` holds it back at 125.
  t += AlertTest(defs, "PrefixCacheHitRateDropVsHourBefore", "125m", {});
  t += AlertTest(defs, "PrefixCacheHitRateDropVsHourBefore", "150m", {m("drop")});
  t += AlertTest(defs, "PrefixCacheHitRateDropVsHourBefore", "110m", {});
  t += "    promql_expr_test:\n"
       "      - expr: model:prefix_cache_hit_ratio:rate5m{model_name=\"half\"}\n"
       "        eval_time: 60m\n"
       "        exp_samples:\n"
       "          - labels: 'model:prefix_cache_hit_ratio:rate5m{model_name=\"half\"}'\n"
       "            value: 0.5\n";

  // 3. Hit rate against a day ago: "drop" falls from 80% to 5% at minute 1500 (25 h);
  // "low" has been at 30% all along (low, but no drop).
  t += "  - interval: 1m\n    input_series:\n";
  t += Series(fmt::format("{}{{job=\"vllm\",model_name=\"drop\"}}", hits),
              "0+800x1500 1200050+50x59");
  t += Series(fmt::format("{}{{job=\"vllm\",model_name=\"low\"}}", hits), "0+300x1560");
  for (const char* model : {"drop", "low"}) {
    t += Series(fmt::format("{}{{job=\"vllm\",model_name=\"{}\"}}", queries, model), "0+1000x1560");
  }
  t += "    alert_rule_test:\n";
  t += AlertTest(defs, "PrefixCacheHitRateDropVsDayAgo", "1490m", {});
  t += AlertTest(defs, "PrefixCacheHitRateDropVsDayAgo", "1555m", {m("drop")});

  // 4. Queue p99 per replica: a:8000 queues 1-2.5 s, b:8000 under 0.3 s.
  t += "  - interval: 1m\n    input_series:\n";
  for (const auto& [inst, slow] :
       std::vector<std::pair<std::string, bool>>{{"a:8000", true}, {"b:8000", false}}) {
    for (const char* le : {"0.3", "0.5", "1.0", "2.5", "+Inf"}) {
      const bool counted = !slow || std::string(le) == "2.5" || std::string(le) == "+Inf";
      t += Series(fmt::format("{}{{job=\"vllm\",model_name=\"m\",instance=\"{}\",le=\"{}\"}}",
                              queue, inst, le),
                  counted ? "0+100x60" : "0x60");
    }
  }
  t += "    alert_rule_test:\n";
  t += AlertTest(defs, "QueueTimeP99High", "30m", {{{"model_name", "m"}, {"instance", "a:8000"}}});

  // 5. A healthy fleet for 8 hours: no alert fires.
  t += "  - interval: 1m\n    input_series:\n";
  t += Series(fmt::format("{}_bucket{{job=\"vllm\",model_name=\"ok\",le=\"1.0\"}}", ttft),
              "0+999x480");
  t += Series(fmt::format("{}_count{{job=\"vllm\",model_name=\"ok\"}}", ttft), "0+1000x480");
  t += Series(fmt::format("{}{{job=\"vllm\",model_name=\"ok\"}}", hits), "0+800x480");
  t += Series(fmt::format("{}{{job=\"vllm\",model_name=\"ok\"}}", queries), "0+1000x480");
  for (const char* le : {"0.3", "0.5", "1.0", "2.5", "+Inf"}) {
    t += Series(fmt::format("{}{{job=\"vllm\",model_name=\"ok\",instance=\"a:8000\",le=\"{}\"}}",
                            queue, le),
                "0+100x480");
  }
  t += "    alert_rule_test:\n";
  for (const auto& [name, def] : defs) t += AlertTest(defs, name, "7h", {});

  std::ofstream(dir / "ttft-rules.test.yml") << t;
  const int rc =
      Sh(fmt::format("{} test rules {}", kPromtool, (dir / "ttft-rules.test.yml").string()),
         dir / "test.log", 120);
  EXPECT_EQ(rc, 0) << ReadFile(dir / "test.log") << "\n--- test file "
                   << (dir / "ttft-rules.test.yml");
  EXPECT_THAT(ReadFile(dir / "test.log"), ::testing::HasSubstr("SUCCESS"));
  if (rc == 0) fs::remove_all(dir);
}

// -----------------------------------------------------------------------------
// Servers: VictoriaMetrics as a child process (Prometheus: PrometheusProcess)
// -----------------------------------------------------------------------------

// A server child process on 127.0.0.1 for the length of a test: argv[0] is the binary,
// output appended to `log`. Killed by SIGTERM then SIGKILL in Stop (and by
// PR_SET_PDEATHSIG if this process dies first).
class Child {
 public:
  ~Child() { Stop(); }
  bool Start(const std::vector<std::string>& args, const fs::path& log) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const std::string log_path = log.string();
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(126);
      const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    return true;
  }
  bool Exited() {
    int st = 0;
    if (pid_ > 0 && ::waitpid(pid_, &st, WNOHANG) == pid_) pid_ = -1;
    return pid_ <= 0;
  }
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int st = 0;
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

std::string Rfc3339(int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A single-node VictoriaMetrics on a free 127.0.0.1 port, data in `dir`/vmdata, ready
// within 20 s per attempt (three attempts: a port may be taken meanwhile). "" or why not.
std::string StartVictoriaMetrics(const fs::path& dir, Child& vm, int& port) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    port = FreeLoopbackPort();
    if (port <= 0) continue;
    // -search.latencyOffset: the newest 30 s are hidden by default; the data is old here
    // but ALERTS written by vmalert are not.
    if (!vm.Start({kVictoriaMetrics, "-storageDataPath=" + (dir / "vmdata").string(),
                   fmt::format("-httpListenAddr=127.0.0.1:{}", port), "-search.latencyOffset=1s",
                   "-loggerLevel=WARN"},
                  dir / "vm.log")) {
      return "fork failed";
    }
    for (const auto deadline = Clock::now() + std::chrono::seconds(20);
         Clock::now() < deadline && !vm.Exited();) {
      if (HttpGet(port, "/health").status == 200) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    vm.Stop();
  }
  return "victoria-metrics did not become ready:\n" + TailFile(dir / "vm.log");
}

// POSTs exposition lines with millisecond timestamps to /api/v1/import/prometheus, flushes,
// and waits (up to 20 s) until `probe` (a PromQL query at `at_s`) answers `want`. "" or why not.
std::string ImportIntoVictoriaMetrics(int port, const std::string& body, const std::string& probe,
                                      int64_t at_s, const std::string& want) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(5);
  cli.set_read_timeout(30);
  cli.set_write_timeout(30);
  const auto imp = cli.Post("/api/v1/import/prometheus", body, "text/plain");
  if (!imp) return "import: no answer";
  if (imp->status != 204) return fmt::format("import: HTTP {}: {}", imp->status, imp->body);
  if (HttpGet(port, "/internal/force_flush").status != 200) return "force_flush failed";
  const std::string q = fmt::format("/api/v1/query?query={}&time={}", UrlEncode(probe), at_s);
  std::string last;
  for (const auto deadline = Clock::now() + std::chrono::seconds(20); Clock::now() < deadline;) {
    last = HttpGet(port, q).body;
    if (last.find("\"" + want + "\"") != std::string::npos) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return fmt::format("the import is not searchable: {} -> {}", probe, last);
}

// -----------------------------------------------------------------------------
// A simulated incident in Prometheus and in VictoriaMetrics
// -----------------------------------------------------------------------------

// The simulator's scrapes (metrics/tSSSSSSSSS.mmm.prom, one per scrape) as series, with
// the target labels Prometheus would add (job="vllm", instance="<replica>:8000"):
// series text -> (time in the run, value) in time order.
using SeriesMap = std::map<std::string, std::vector<std::pair<double, std::string>>>;
SeriesMap ReadScrapes(const fs::path& metrics_dir) {
  SeriesMap series;
  const std::regex file_re(R"(t(\d+\.\d+)\.prom)");
  const std::regex replica_re(R"|(replica="([^"]*)")|");
  for (const auto& e : fs::directory_iterator(metrics_dir)) {
    std::smatch fm;
    const std::string fname = e.path().filename().string();
    if (!std::regex_match(fname, fm, file_re)) continue;
    const double t = std::stod(fm[1]);
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const size_t sp = line.rfind(' ');
      if (sp == std::string::npos || line.find('{') == std::string::npos) continue;
      std::smatch rm;
      const std::string id = line.substr(0, sp);
      std::string instance = "unknown";
      if (std::regex_search(id, rm, replica_re)) instance = rm[1].str() + ":8000";
      const std::string key =
          id.substr(0, id.size() - 1) + fmt::format(",job=\"vllm\",instance=\"{}\"}}", instance);
      series[key].emplace_back(t, line.substr(sp + 1));
    }
  }
  for (auto& [key, samples] : series) std::sort(samples.begin(), samples.end());
  return series;
}

// The simulated prefix-cache collapse (`ttft simulate incidents/prefix-cache-collapse`:
// 600 s, 6 replicas, scraped every 15 s, the deploy at 300 s), three hours ago, in a real
// Prometheus (backfilled with promtool) and in VictoriaMetrics (imported with
// timestamps), and the rules generated for it. Each backend is optional: its tests skip
// when its binaries are absent.
class RulesSimulatedIncident : public ::testing::Test {
 protected:
  static constexpr int kReplicas = 6;
  static constexpr int64_t kDeployS = 300, kEndS = 600;

  static void SetUpTestSuite() {
    dir_ = TempDir("rules_incident");
    RunResult sim = RunTtft(fmt::format("simulate incidents/prefix-cache-collapse --quiet --out {}",
                                        (dir_ / "sim").string()),
                            120);
    if (sim.exit_code != 0) {
      setup_error_ = "ttft simulate: " + sim.err;
      return;
    }
    if (!Generate(dir_ / "rules", fmt::format("--selector '{}'", kSelector))) {
      setup_error_ = "ttft rules failed";
      return;
    }
    // Three hours ago on a whole minute: inside retention, older than the head block.
    const int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
    t0_ = (now_s - 3 * 3600) / 60 * 60;
    const SeriesMap series = ReadScrapes(dir_ / "sim" / "metrics");
    if (series.size() < 1000) {
      setup_error_ = fmt::format("only {} series in the simulated scrapes", series.size());
      return;
    }
    const std::string probe = "count(vllm:prefix_cache_queries_total)";
    const std::string want = std::to_string(kReplicas);
    if (IsExecutable(kPrometheus) && IsExecutable(kPromtool)) {
      std::ofstream om(dir_ / "in.om");
      for (const auto& [key, samples] : series) {
        for (const auto& [t, v] : samples) {
          om << key << ' ' << v << ' ' << fmt::format("{:.3f}", static_cast<double>(t0_) + t)
             << '\n';
        }
      }
      om << "# EOF\n";
      om.close();
      if (Sh(fmt::format("{} tsdb create-blocks-from openmetrics {} {}", kPromtool,
                         (dir_ / "in.om").string(), (dir_ / "pdata").string()),
             dir_ / "promtool.log", 120) != 0) {
        prom_error_ = "promtool could not backfill:\n" + TailFile(dir_ / "promtool.log");
      } else {
        std::ofstream(dir_ / "prometheus.yml") << "global:\n  scrape_interval: 15s\n";
        const std::string q =
            fmt::format("/api/v1/query?query={}&time={}", UrlEncode(probe), t0_ + kEndS);
        const auto ready = [q, want](int port) {
          const auto r = HttpGet(port, q);
          return r.status == 200 && r.body.find("\"" + want + "\"") != std::string::npos;
        };
        if (!prom_.Start(dir_ / "prometheus.yml", dir_ / "pdata", dir_ / "prometheus.log", ready,
                         60)) {
          prom_error_ = prom_.error();
        }
      }
    }
    if (IsExecutable(kVictoriaMetrics)) {
      vm_error_ = StartVictoriaMetrics(dir_, vm_, vm_port_);
      if (vm_error_.empty()) {
        std::string body;
        for (const auto& [key, samples] : series) {
          for (const auto& [t, v] : samples) {
            body += fmt::format(
                "{} {} {}\n", key, v,
                static_cast<int64_t>(std::llround((static_cast<double>(t0_) + t) * 1000)));
          }
        }
        vm_error_ = ImportIntoVictoriaMetrics(vm_port_, body, probe, t0_ + kEndS, want);
      }
    }
  }

  static void TearDownTestSuite() {
    prom_.Stop();
    vm_.Stop();
    std::error_code ec;
    if (!dir_.empty() && !::testing::UnitTest::GetInstance()->Failed()) fs::remove_all(dir_, ec);
  }

  // Every dashboard panel's query and every recording rule at the end of the run on the
  // server at `port`: each returns at least one finite value; the per-replica rules see
  // every replica; the hit rate falls across the deploy.
  static void ExpectEveryQueryReturnsData(int port, const std::string& server) {
    const int64_t end_s = t0_ + kEndS;
    std::vector<std::pair<std::string, std::string>> queries =
        DashboardExprs(dir_ / "rules" / "ttft-dashboard.json");
    ASSERT_GE(queries.size(), 10u);
    const auto recording = RuleExprs(dir_ / "rules" / "ttft-recording.rules.yml");
    for (const auto& [name, expr] : recording) queries.emplace_back("recording rule " + name, expr);
    auto query = [&](const std::string& expr, int64_t at) {
      const auto r =
          HttpGet(port, fmt::format("/api/v1/query?query={}&time={}", UrlEncode(expr), at), 10);
      json j = json::parse(r.body, nullptr, false);
      EXPECT_EQ(r.status, 200) << server << ": " << expr << "\n" << r.body;
      return j.is_discarded() ? json() : j["data"]["result"];
    };
    std::set<std::string> metrics_seen;
    for (const auto& [what, raw] : queries) {
      const std::string expr = ExpandGrafana(raw);
      const json result = query(expr, end_s);
      int finite = 0;
      for (const auto& s : result)
        finite += std::isfinite(std::stod(s["value"][1].get<std::string>()));
      EXPECT_GT(finite, 0) << server << ": " << what << " returned no data: " << expr << "\n"
                           << result.dump();
      std::smatch mm;
      if (std::regex_search(raw, mm, std::regex(R"((vllm:[a-z_]+))"))) metrics_seen.insert(mm[1]);
    }
    EXPECT_THAT(
        metrics_seen,
        ::testing::IsSupersetOf(
            {"vllm:time_to_first_token_seconds_bucket", "vllm:request_queue_time_seconds_bucket",
             "vllm:request_prefill_time_seconds_bucket", "vllm:prefix_cache_hits_total",
             "vllm:num_preemptions_total", "vllm:kv_cache_usage_perc"}));
    EXPECT_EQ(query(recording.at("model_replica:ttft_seconds:p99_rate5m"), end_s).size(),
              static_cast<size_t>(kReplicas))
        << server;
    auto hit_rate = [&](int64_t at) {
      const json r = query(recording.at("model:prefix_cache_hit_ratio:rate5m"), at);
      return r.empty() ? -1.0 : std::stod(r[0]["value"][1].get<std::string>());
    };
    EXPECT_GT(hit_rate(t0_ + kDeployS - 5), 0.5) << server;
    EXPECT_LT(hit_rate(end_s), 0.2) << server;
    // The deploy annotation (a replica restart by default) is a valid query, and quiet
    // here: the template deploy restarts no process, so every replica's
    // process_start_time_seconds, which the simulator exports, stays where it was.
    const json dash = json::parse(ReadFile(dir_ / "rules" / "ttft-dashboard.json"));
    const std::string anno = dash["annotations"]["list"][0]["expr"];
    const auto a =
        HttpGet(port, fmt::format("/api/v1/query?query={}&time={}", UrlEncode(anno), end_s), 10);
    EXPECT_EQ(a.status, 200) << server << ": " << anno;
    EXPECT_EQ(query(anno, t0_ + kDeployS + 60).size(), 0u) << server << ": " << anno;
    EXPECT_EQ(query("count(process_start_time_seconds)", end_s).size(), 1u) << server;
  }

  static bool HasPrometheus() { return IsExecutable(kPrometheus) && IsExecutable(kPromtool); }
  static bool HasVictoriaMetrics() { return IsExecutable(kVictoriaMetrics); }
  static constexpr const char* kNoPrometheus =
      "/usr/bin/prometheus or /usr/bin/promtool is absent: install Debian's prometheus package "
      "(scripts/install-deps.sh)";
  static constexpr const char* kNoVictoriaMetrics =
      "/usr/bin/victoria-metrics is absent: install Debian's victoria-metrics package "
      "(scripts/install-deps.sh)";

  static inline fs::path dir_;
  static inline int64_t t0_ = 0;
  static inline std::string setup_error_, prom_error_, vm_error_;
  static inline ttft::testing::PrometheusProcess prom_;
  static inline Child vm_;
  static inline int vm_port_ = -1;
};

TEST_F(RulesSimulatedIncident, PrometheusReturnsDataForEveryDashboardQueryAndRecordingRule) {
  if (!HasPrometheus()) GTEST_SKIP() << kNoPrometheus;
  ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  ASSERT_TRUE(prom_error_.empty()) << prom_error_;
  ExpectEveryQueryReturnsData(prom_.port(), "prometheus");
}

TEST_F(RulesSimulatedIncident, VictoriaMetricsReturnsDataForEveryDashboardQueryAndRecordingRule) {
  if (!HasVictoriaMetrics()) GTEST_SKIP() << kNoVictoriaMetrics;
  ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  ASSERT_TRUE(vm_error_.empty()) << vm_error_;
  ExpectEveryQueryReturnsData(vm_port_, "victoria-metrics");
}

// `ttft diagnose --prometheus` reads VictoriaMetrics through the same Prometheus API and
// reaches the same diagnosis, with the same numbers, as from Prometheus.
TEST_F(RulesSimulatedIncident, DiagnoseReadsTheSameIncidentFromVictoriaMetricsAsFromPrometheus) {
  if (!HasPrometheus()) GTEST_SKIP() << kNoPrometheus;
  if (!HasVictoriaMetrics()) GTEST_SKIP() << kNoVictoriaMetrics;
  ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  ASSERT_TRUE(prom_error_.empty()) << prom_error_;
  ASSERT_TRUE(vm_error_.empty()) << vm_error_;
  auto diagnose = [&](const std::string& url) {
    RunResult r = RunTtft(fmt::format("diagnose --prometheus {} --change-at {} --window 240 "
                                      "--selector '{}' --format json",
                                      url, t0_ + kDeployS, kSelector),
                          120);
    EXPECT_EQ(r.exit_code, 0) << url << ": " << r.err;
    return json::parse(r.out, nullptr, false);
  };
  const json p = diagnose(prom_.url());
  const json v = diagnose(fmt::format("http://127.0.0.1:{}", vm_port_));
  ASSERT_FALSE(p.is_discarded());
  ASSERT_FALSE(v.is_discarded());
  EXPECT_EQ(v["verdict"], "regression") << v["verdict_reason"];
  EXPECT_EQ(v["verdict"], p["verdict"]);
  ASSERT_FALSE(v["hypotheses"].empty());
  for (size_t i = 0; i < std::min<size_t>(3, p["hypotheses"].size()); ++i) {
    EXPECT_EQ(v["hypotheses"][i]["id"], p["hypotheses"][i]["id"]) << i;
  }
  for (const char* w : {"baseline", "incident"}) {
    EXPECT_TRUE(v[w]["from_metrics"].get<bool>()) << w;
    EXPECT_EQ(v[w]["ok"], p[w]["ok"]) << w;
    EXPECT_GT(v[w]["ok"].get<double>(), 1000) << w;
    for (const char* q : {"p50", "p90", "p99"}) {
      EXPECT_NEAR(v[w]["ttft_s"][q].get<double>(), p[w]["ttft_s"][q].get<double>(), 1e-9)
          << w << " " << q;
    }
    EXPECT_NEAR(v[w]["prefix_cache_hit_rate"].get<double>(),
                p[w]["prefix_cache_hit_rate"].get<double>(), 1e-9)
        << w;
    EXPECT_NEAR(v[w]["kv_usage"].get<double>(), p[w]["kv_usage"].get<double>(), 1e-9) << w;
  }
  EXPECT_GT(v["baseline"]["prefix_cache_hit_rate"].get<double>(), 0.5);
  EXPECT_LT(v["incident"]["prefix_cache_hit_rate"].get<double>(), 0.1);
}

// `ttft gate --prometheus` reads VictoriaMetrics through the same Prometheus API and
// judges the same arms the same way as from Prometheus: one region of the incident
// window as the baseline, the other as the canary.
TEST_F(RulesSimulatedIncident, GateJudgesTheSameArmsFromVictoriaMetricsAsFromPrometheus) {
  if (!HasPrometheus()) GTEST_SKIP() << kNoPrometheus;
  if (!HasVictoriaMetrics()) GTEST_SKIP() << kNoVictoriaMetrics;
  ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  ASSERT_TRUE(prom_error_.empty()) << prom_error_;
  ASSERT_TRUE(vm_error_.empty()) << vm_error_;
  auto gate = [&](const std::string& url) {
    RunResult r = RunTtft(fmt::format("gate --prometheus {} --from {} --to {} "
                                      "--baseline-selector region=us-east "
                                      "--canary-selector region=eu-west --format json",
                                      url, t0_ + kDeployS, t0_ + kEndS),
                          120);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 3) << url << ": " << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << url << ": " << r.out << r.err;
    if (!j.is_discarded()) {
      EXPECT_EQ(j["exit_code"], r.exit_code) << url;
    }
    return j;
  };
  const json p = gate(prom_.url());
  const json v = gate(fmt::format("http://127.0.0.1:{}", vm_port_));
  ASSERT_FALSE(p.is_discarded());
  ASSERT_FALSE(v.is_discarded());
  EXPECT_EQ(v["verdict"], p["verdict"]) << v["reason"] << " / " << p["reason"];
  ASSERT_EQ(v["criteria"].size(), p["criteria"].size());
  ASSERT_FALSE(v["criteria"].empty());
  int with_data = 0;
  for (size_t i = 0; i < v["criteria"].size(); ++i) {
    const json& a = v["criteria"][i];
    const json& b = p["criteria"][i];
    EXPECT_EQ(a["metric"], b["metric"]) << i;
    EXPECT_EQ(a["label"], b["label"]) << a["metric"];
    EXPECT_EQ(a["baseline_n"], b["baseline_n"]) << a["metric"];
    EXPECT_EQ(a["canary_n"], b["canary_n"]) << a["metric"];
    for (const char* k : {"baseline", "canary"}) {
      if (b[k].is_number()) {
        ASSERT_TRUE(a[k].is_number()) << a["metric"] << " " << k;
        EXPECT_NEAR(a[k].get<double>(), b[k].get<double>(),
                    1e-9 * std::max(1.0, std::fabs(b[k].get<double>())))
            << a["metric"] << " " << k;
      } else {
        EXPECT_FALSE(a[k].is_number()) << a["metric"] << " " << k;
      }
    }
    with_data += b["baseline_n"].get<int64_t>() > 0 ? 1 : 0;
  }
  EXPECT_GT(with_data, 0) << "no criterion had data: the arms were not read";
}

// -----------------------------------------------------------------------------
// vmalert
// -----------------------------------------------------------------------------

TEST(RulesVictoriaMetrics, VmalertReplayFiresTheHitRateAndBurnRateAlertsForTheBadModelOnly) {
  if (!IsExecutable(kVictoriaMetrics) || !IsExecutable(kVmalert)) {
    GTEST_SKIP() << kVictoriaMetrics << " or " << kVmalert
                 << " is absent: install Debian's victoria-metrics package "
                    "(scripts/install-deps.sh) to evaluate the alerts with vmalert";
  }
  const fs::path dir = TempDir("rules_vm");
  ASSERT_TRUE(Generate(dir / "rules", fmt::format("--selector '{}'", kSelector)));

  // Three hours at one sample a minute, ending a few minutes ago. Model "bad": the hit
  // rate falls from 80% to 5% and half the requests take over 1 s from minute 120;
  // model "good" stays at 80% and 0.1%.
  const int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  const int64_t end = (now_s - 300) / 60 * 60, start = end - 180 * 60, change = start + 120 * 60;
  std::string body;
  for (const bool bad : {true, false}) {
    double hits = 0, queries = 0, fast = 0, count = 0;
    const std::string l = fmt::format("job=\"vllm\",model_name=\"{}\"", bad ? "bad" : "good");
    for (int k = 0; k <= 180; ++k) {
      const bool after = bad && k > 120;
      if (k > 0) {
        queries += 1000;
        hits += after ? 50 : 800;
        count += 1000;
        fast += after ? 500 : 999;
      }
      const int64_t ms = (start + 60 * k) * 1000;
      body += fmt::format("vllm:prefix_cache_hits_total{{{}}} {} {}\n", l, hits, ms);
      body += fmt::format("vllm:prefix_cache_queries_total{{{}}} {} {}\n", l, queries, ms);
      body += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"1.0\"}} {} {}\n", l,
                          fast, ms);
      body += fmt::format("vllm:time_to_first_token_seconds_count{{{}}} {} {}\n", l, count, ms);
    }
  }

  Child vm;
  int port = -1;
  const std::string vm_error = StartVictoriaMetrics(dir, vm, port);
  ASSERT_TRUE(vm_error.empty()) << vm_error;
  const std::string imported =
      ImportIntoVictoriaMetrics(port, body, "count(vllm:prefix_cache_queries_total)", end, "2");
  ASSERT_TRUE(imported.empty()) << imported;

  // vmalert replays the alert file from 10 minutes before the change to the end, one
  // evaluation a minute, and writes ALERTS back to VictoriaMetrics.
  const std::string url = fmt::format("http://127.0.0.1:{}", port);
  const int rc = Sh(fmt::format("{} -rule={} -datasource.url={} -remoteWrite.url={} "
                                "-replay.timeFrom={} -replay.timeTo={} -replay.disableProgressBar "
                                "-datasource.queryStep=1m -evaluationInterval=1m "
                                "-replay.rulesDelay=0s -httpListenAddr=127.0.0.1:{} "
                                "-loggerLevel=WARN",
                                kVmalert, (dir / "rules" / "ttft-alerts.rules.yml").string(), url,
                                url, Rfc3339(change - 600), Rfc3339(end), FreeLoopbackPort()),
                    dir / "vmalert.log", 60);
  ASSERT_EQ(rc, 0) << TailFile(dir / "vmalert.log");
  ASSERT_EQ(HttpGet(port, "/internal/force_flush").status, 200);

  // Which alerts fired, for which model.
  std::set<std::pair<std::string, std::string>> fired;
  const std::string q = fmt::format("/api/v1/series?match[]={}&start={}&end={}",
                                    UrlEncode("ALERTS{alertstate=\"firing\"}"), start, now_s + 60);
  for (const auto deadline = Clock::now() + std::chrono::seconds(20); Clock::now() < deadline;) {
    const auto r = HttpGet(port, q, 5);
    const json j = json::parse(r.body, nullptr, false);
    if (!j.is_discarded() && j.contains("data")) {
      for (const auto& s : j["data"]) {
        fired.insert({s.value("alertname", ""), s.value("model_name", "")});
      }
    }
    if (fired.size() >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  using P = std::pair<std::string, std::string>;
  EXPECT_THAT(fired, ::testing::UnorderedElementsAre(P{"PrefixCacheHitRateDropVsHourBefore", "bad"},
                                                     P{"TTFTErrorBudgetBurnFast", "bad"},
                                                     P{"TTFTErrorBudgetBurnSlow", "bad"}))
      << TailFile(dir / "vmalert.log");
  vm.Stop();
  fs::remove_all(dir);
}

// ttft's selector check against Prometheus' own parser, both ways: a selector ttft
// accepts yields rule files promtool accepts, and one ttft refuses (an escape PromQL
// refuses, a regex Go's regexp does not compile) makes promtool refuse a rule of its own.
TEST_F(RulesPromtool, SelectorCheckAgreesWithPromtool) {
  const fs::path dir = TempDir("rules_selector_parity");
  const std::vector<std::pair<std::string, bool>> cases = {
      {R"x(ns=~"prod-(a|b)")x", true},
      {R"(ns=~"prod-(a|b")", false},
      {R"(a=~"x\\.y")", true},
      {R"(a=~"x\.y")", false},
      {R"(a=~`x\.y`)", true},
      {R"(a='it\'s')", true},
      {R"(a="it\'s")", false},
      {R"(a="\u00e9\x41\101")", true},
      {R"(a="\uD800")", false},
      {R"(a="\400")", false},
      {R"(a=~"(?i)vllm|sglang")", true},
      {R"x(a=~"(?=x)")x", false},
      {R"(a=~"x{1000}")", true},
      {R"(a=~"x{1001}")", false},
      {R"(a=~"x)|(?:y")", false},
      {R"(a=~"\\pL+")", true},
      {R"(a=~"\\p{Greek}")", true},
      {R"(a=~"\\p{Nope}")", false},
      {R"(a=~"[[:alpha:]]")", true},
      {R"(a=~"[z-a]")", false},
      {R"(a=~"\\1")", false},
      {R"(a=~"\\Qa.b\\E")", true},
      // A trailing comma and blanks, which the generated expressions must not repeat.
      {R"(a="x",)", true},
      {"  ", true},
      {R"( a = "x" , b!~"y" , )", true},
      {R"(a="\a\b\f\n\r\t\v\\")", true},
      {R"(a="\e")", false},
  };
  for (const auto& [sel, ttft_accepts] : cases) {
    { std::ofstream(dir / "sel") << sel; }
    const fs::path out = dir / "out";
    fs::remove_all(out);
    // The selector reaches ttft through a file: no shell quoting to get wrong.
    RunResult r = RunTtft(fmt::format("rules --out {} --selector \"$(cat {})\"", out.string(),
                                      (dir / "sel").string()),
                          30);
    EXPECT_EQ(r.exit_code, ttft_accepts ? 0 : 2) << sel << ": " << r.err;
    if (ttft_accepts) {
      if (r.exit_code != 0) continue;
      for (const char* f : {"ttft-recording.rules.yml", "ttft-alerts.rules.yml"}) {
        const int rc = Sh(fmt::format("{} check rules {}", kPromtool, (out / f).string()),
                          dir / "check.log", 60);
        EXPECT_EQ(rc, 0) << sel << " " << f << ":\n" << ReadFile(dir / "check.log");
      }
    } else {
      EXPECT_THAT(r.err, ::testing::HasSubstr("--selector")) << sel;
      EXPECT_FALSE(fs::exists(out)) << sel << " wrote files";
      {
        std::ofstream(dir / "own.rules.yml")
            << "groups:\n- name: parity\n  rules:\n  - record: parity:up\n    expr: "
            << Quote("up{" + sel + "}") << "\n";
      }
      const int rc =
          Sh(fmt::format("{} check rules {}", kPromtool, (dir / "own.rules.yml").string()),
             dir / "check.log", 60);
      EXPECT_NE(rc, 0) << sel << ": promtool accepts what ttft refuses:\n"
                       << ReadFile(dir / "check.log");
    }
  }
  fs::remove_all(dir);
}

// -----------------------------------------------------------------------------
// Bad input
// -----------------------------------------------------------------------------

TEST(RulesCli, BadFlagsExitTwoNamingTheFlagAndWriteNothing) {
  const fs::path dir = TempDir("rules_bad");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--slo-objective 1", "--slo-objective"},
      {"--slo-objective 0", "--slo-objective"},
      {"--slo-objective 0.9", "could never fire"},
      {"--slo-ttft-s 0", "--slo-ttft-s"},
      {"--slo-ttft-s -1", "--slo-ttft-s"},
      {"--slo-ttft-s nan", "--slo-ttft-s"},
      {"--slo-ttft-s inf", "--slo-ttft-s"},
      {"--slo-ttft-s 2", "not a bucket bound"},
      {"--queue-p99-s 0", "--queue-p99-s"},
      {"--hit-rate-drop 1.5", "--hit-rate-drop"},
      {"--engine tgi", "--engine"},
      {"--selector 'job=vllm'", "--selector"},
      {"--selector 'job=\"vllm\"} or vector(1)'", "--selector"},
      {"--replica-label 'in stance'", "--replica-label"},
  };
  for (const auto& [flags, says] : cases) {
    RunResult r = RunTtft(fmt::format("rules --out {} {}", (dir / "out").string(), flags), 30);
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
    EXPECT_THAT(r.err, ::testing::HasSubstr(says)) << flags;
    EXPECT_FALSE(fs::exists(dir / "out")) << flags << " wrote files";
  }
  RunResult no_out = RunTtft("rules", 30);
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_THAT(no_out.err, ::testing::HasSubstr("--out"));
  fs::remove_all(dir);
}

}  // namespace
