// `ttft rules` end to end: the real binary writes the rule files and the dashboard, and
// real tools judge them.
//
//   * promtool check rules (and vmalert -dryRun): both files, both engines.
//   * promtool test rules, both engines: synthetic series (written here) on which each
//     alert must fire, and healthy series on which none may.
//   * a real Prometheus (Debian's /usr/bin/prometheus) backfilled with the metrics of a
//     simulated incident (`ttft simulate incidents/prefix-cache-collapse`): every
//     dashboard query and every recording rule returns data.
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
using ttft::testing::RunResult;
using ttft::testing::RunTtft;
using ttft::testing::TailFile;
using ttft::testing::UrlEncode;

constexpr const char* kVictoriaMetrics = "/usr/bin/victoria-metrics";
constexpr const char* kVmalert = "/usr/bin/vmalert";
constexpr const char* kSelector = R"(job="vllm")";

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path FreshDir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / fmt::format("ttft_rules_{}_{}", name, ::getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

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
  const json d = json::parse(Slurp(file));
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
    const fs::path dir = FreshDir(std::string("check_") + engine);
    ASSERT_TRUE(Generate(dir, fmt::format("--engine {} --selector '{}'", engine, kSelector)));
    for (const char* f : {"ttft-recording.rules.yml", "ttft-alerts.rules.yml"}) {
      const int rc = Sh(fmt::format("{} check rules {}", kPromtool, (dir / f).string()),
                        dir / "check.log", 60);
      EXPECT_EQ(rc, 0) << engine << " " << f << ":\n" << Slurp(dir / "check.log");
      EXPECT_THAT(Slurp(dir / "check.log"), ::testing::HasSubstr("SUCCESS"));
      // vmalert parses the same files (its PromQL dialect, MetricsQL, and templates).
      if (IsExecutable(kVmalert)) {
        const int vrc = Sh(fmt::format("{} -dryRun -rule={} -datasource.url=http://127.0.0.1:1 "
                                       "-loggerLevel=ERROR",
                                       kVmalert, (dir / f).string()),
                           dir / "vmalert.log", 60);
        EXPECT_EQ(vrc, 0) << engine << " " << f << ":\n" << Slurp(dir / "vmalert.log");
      }
    }
    // What SGLang lacks is left out, and the files say so.
    const std::string rec = Slurp(dir / "ttft-recording.rules.yml");
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

class RulesPromtoolUnit : public RulesPromtool,
                          public ::testing::WithParamInterface<EngineNames> {};

INSTANTIATE_TEST_SUITE_P(Engines, RulesPromtoolUnit, ::testing::ValuesIn(kEngines),
                         [](const auto& info) { return std::string(info.param.engine); });

TEST_P(RulesPromtoolUnit, TestRulesEachAlertFiresAndHealthySeriesStayQuiet) {
  const EngineNames& e = GetParam();
  const fs::path dir = FreshDir(std::string("unit_") + e.engine);
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
  EXPECT_EQ(rc, 0) << Slurp(dir / "test.log") << "\n--- test file "
                   << (dir / "ttft-rules.test.yml");
  EXPECT_THAT(Slurp(dir / "test.log"), ::testing::HasSubstr("SUCCESS"));
  if (rc == 0) fs::remove_all(dir);
}

// -----------------------------------------------------------------------------
// A real Prometheus with a simulated incident's metrics
// -----------------------------------------------------------------------------

// The simulator's scrapes (metrics/tSSSSSSSSS.mmm.prom, one per scrape) as one
// OpenMetrics file for promtool, series by series in time order, with the target
// labels Prometheus would add (job="vllm", instance="<replica>:8000"), starting at `t0_s`.
// Returns the number of samples written.
size_t ScrapesToOpenMetrics(const fs::path& metrics_dir, int64_t t0_s, const fs::path& out) {
  std::map<std::string, std::vector<std::pair<double, std::string>>> series;
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
      const size_t brace = line.find('{');
      if (sp == std::string::npos || brace == std::string::npos) continue;
      std::smatch rm;
      const std::string id = line.substr(0, sp);
      std::string instance = "unknown";
      if (std::regex_search(id, rm, replica_re)) instance = rm[1].str() + ":8000";
      const std::string key =
          id.substr(0, id.size() - 1) + fmt::format(",job=\"vllm\",instance=\"{}\"}}", instance);
      series[key].emplace_back(t, line.substr(sp + 1));
    }
  }
  std::ofstream o(out);
  size_t n = 0;
  for (auto& [key, samples] : series) {
    std::sort(samples.begin(), samples.end());
    for (const auto& [t, v] : samples) {
      o << key << ' ' << v << ' ' << fmt::format("{:.3f}", static_cast<double>(t0_s) + t) << '\n';
      ++n;
    }
  }
  o << "# EOF\n";
  return n;
}

TEST(RulesPrometheus, EveryDashboardQueryAndRecordingRuleReturnsDataOnASimulatedIncident) {
  if (!IsExecutable(kPrometheus) || !IsExecutable(kPromtool)) {
    GTEST_SKIP() << kPrometheus << " or " << kPromtool
                 << " is absent: install Debian's prometheus package (scripts/install-deps.sh)";
  }
  const fs::path dir = FreshDir("prom");
  RunResult sim = RunTtft(fmt::format("simulate incidents/prefix-cache-collapse --quiet --out {}",
                                      (dir / "sim").string()),
                          120);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  // Three hours ago on a whole minute: inside retention, older than the head block.
  const int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  const int64_t t0 = (now_s - 3 * 3600) / 60 * 60;
  const size_t samples = ScrapesToOpenMetrics(dir / "sim" / "metrics", t0, dir / "in.om");
  ASSERT_GT(samples, 10000u);
  ASSERT_EQ(Sh(fmt::format("{} tsdb create-blocks-from openmetrics {} {}", kPromtool,
                           (dir / "in.om").string(), (dir / "data").string()),
               dir / "promtool.log", 120),
            0)
      << TailFile(dir / "promtool.log");
  std::ofstream(dir / "prometheus.yml") << "global:\n  scrape_interval: 15s\n";
  const int64_t end_s = t0 + 600;  // the scenario's last scrape
  const std::string probe = fmt::format("/api/v1/query?query={}&time={}",
                                        UrlEncode("count(vllm:prefix_cache_queries_total)"), end_s);
  const auto ready = [probe](int port) {
    const auto r = HttpGet(port, probe);
    return r.status == 200 && r.body.find("\"6\"") != std::string::npos;  // six replicas
  };
  ttft::testing::PrometheusProcess prom;
  ASSERT_TRUE(prom.Start(dir / "prometheus.yml", dir / "data", dir / "prometheus.log", ready, 60))
      << prom.error();

  ASSERT_TRUE(Generate(dir / "rules", fmt::format("--selector '{}'", kSelector)));
  std::vector<std::pair<std::string, std::string>> queries =
      DashboardExprs(dir / "rules" / "ttft-dashboard.json");
  ASSERT_GE(queries.size(), 10u);
  for (const auto& [name, expr] : RuleExprs(dir / "rules" / "ttft-recording.rules.yml")) {
    queries.emplace_back("recording rule " + name, expr);
  }
  std::set<std::string> metrics_seen;
  for (const auto& [what, raw] : queries) {
    const std::string expr = ExpandGrafana(raw);
    const auto r = HttpGet(
        prom.port(), fmt::format("/api/v1/query?query={}&time={}", UrlEncode(expr), end_s), 10);
    ASSERT_EQ(r.status, 200) << what << ": " << expr << "\n" << r.body;
    const json j = json::parse(r.body, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.body;
    const json& result = j["data"]["result"];
    EXPECT_FALSE(result.empty()) << what << " returned no data: " << expr;
    int finite = 0;
    for (const auto& s : result) {
      const std::string v = s["value"][1];
      finite += std::isfinite(std::stod(v));
    }
    EXPECT_GT(finite, 0) << what << ": no finite value: " << expr << "\n" << r.body;
    std::smatch mm;
    if (std::regex_search(raw, mm, std::regex(R"((vllm:[a-z_]+))"))) metrics_seen.insert(mm[1]);
  }
  // The per-replica rules tell the six replicas apart.
  const std::string repl_expr = ExpandGrafana(RuleExprs(dir / "rules" / "ttft-recording.rules.yml")
                                                  .at("model_replica:ttft_seconds:p99_rate5m"));
  const auto rr = HttpGet(
      prom.port(), fmt::format("/api/v1/query?query={}&time={}", UrlEncode(repl_expr), end_s), 10);
  EXPECT_EQ(json::parse(rr.body)["data"]["result"].size(), 6u) << rr.body;
  // The incident shows: the hit rate at the end is far below the one before the deploy
  // at t=300 s.
  const std::string hit = RuleExprs(dir / "rules" / "ttft-recording.rules.yml")
                              .at("model:prefix_cache_hit_ratio:rate5m");
  auto value_at = [&](int64_t t) {
    const auto r =
        HttpGet(prom.port(), fmt::format("/api/v1/query?query={}&time={}", UrlEncode(hit), t), 10);
    const json j = json::parse(r.body, nullptr, false);
    if (j.is_discarded() || j["data"]["result"].empty()) return -1.0;
    return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
  };
  const double before = value_at(t0 + 295), after = value_at(end_s);
  EXPECT_GT(before, 0.5);
  EXPECT_LT(after, 0.2);
  EXPECT_THAT(
      metrics_seen,
      ::testing::IsSupersetOf(
          {"vllm:time_to_first_token_seconds_bucket", "vllm:request_queue_time_seconds_bucket",
           "vllm:request_prefill_time_seconds_bucket", "vllm:prefix_cache_hits_total",
           "vllm:num_preemptions_total", "vllm:kv_cache_usage_perc"}));
  // The deploy annotation is valid PromQL (the simulator exports no process metrics).
  const json dash = json::parse(Slurp(dir / "rules" / "ttft-dashboard.json"));
  const std::string anno = dash["annotations"]["list"][0]["expr"];
  const auto ar = HttpGet(
      prom.port(), fmt::format("/api/v1/query?query={}&time={}", UrlEncode(anno), end_s), 10);
  EXPECT_EQ(ar.status, 200) << anno << "\n" << ar.body;
  prom.Stop();
  fs::remove_all(dir);
}

// -----------------------------------------------------------------------------
// VictoriaMetrics and vmalert
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

TEST(RulesVictoriaMetrics, VmalertReplayFiresTheHitRateAndBurnRateAlertsForTheBadModelOnly) {
  if (!IsExecutable(kVictoriaMetrics) || !IsExecutable(kVmalert)) {
    GTEST_SKIP() << kVictoriaMetrics << " or " << kVmalert
                 << " is absent: install Debian's victoria-metrics package "
                    "(scripts/install-deps.sh) to evaluate the alerts with vmalert";
  }
  const fs::path dir = FreshDir("vm");
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
  std::unique_ptr<httplib::Client> cli;
  for (int attempt = 0; attempt < 3 && !cli; ++attempt) {
    port = FreeLoopbackPort();
    ASSERT_TRUE(vm.Start({kVictoriaMetrics, "-storageDataPath=" + (dir / "vmdata").string(),
                          fmt::format("-httpListenAddr=127.0.0.1:{}", port),
                          "-search.latencyOffset=1s", "-loggerLevel=WARN"},
                         dir / "vm.log"));
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline && !vm.Exited()) {
      if (HttpGet(port, "/health").status == 200) {
        cli = std::make_unique<httplib::Client>("127.0.0.1", port);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!cli) vm.Stop();
  }
  ASSERT_TRUE(cli) << "victoria-metrics did not become ready:\n" << TailFile(dir / "vm.log");
  cli->set_connection_timeout(5);
  cli->set_read_timeout(10);
  cli->set_write_timeout(10);
  const auto imp = cli->Post("/api/v1/import/prometheus", body, "text/plain");
  ASSERT_TRUE(imp) << "import: no answer";
  ASSERT_EQ(imp->status, 204) << imp->body;
  ASSERT_EQ(HttpGet(port, "/internal/force_flush").status, 200);
  // The import is searchable.
  const std::string count_q = fmt::format("/api/v1/query?query={}&time={}",
                                          UrlEncode("count(vllm:prefix_cache_queries_total)"), end);
  bool visible = false;
  for (const auto deadline = Clock::now() + std::chrono::seconds(20); Clock::now() < deadline;) {
    if (HttpGet(port, count_q).body.find("\"2\"") != std::string::npos) {
      visible = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(visible) << HttpGet(port, count_q).body;

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

// -----------------------------------------------------------------------------
// Bad input
// -----------------------------------------------------------------------------

TEST(RulesCli, BadFlagsExitTwoNamingTheFlagAndWriteNothing) {
  const fs::path dir = FreshDir("bad");
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
