// Unit tests of the rule and dashboard generators (ttft/rules.h). The real tools
// (promtool, Prometheus, vmalert) judge the output in tests/rules_test.cc.
#include "ttft/rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace ttft {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

RulesOptions Vllm() {
  RulesOptions o;
  o.selector = R"(job="vllm")";
  return o;
}

RulesOptions Sglang() {
  RulesOptions o = Vllm();
  o.engine = RulesEngine::kSglang;
  return o;
}

std::map<std::string, std::string> ByName(const std::vector<PromRuleGroup>& groups) {
  std::map<std::string, std::string> m;
  for (const auto& g : groups) {
    for (const auto& r : g.rules) m[r.record.empty() ? r.alert : r.record] = r.expr;
  }
  return m;
}

TEST(RulesOptionsTest, DefaultsAreValidForBothEngines) {
  EXPECT_TRUE(ValidateRulesOptions(RulesOptions{}).ok());
  EXPECT_TRUE(ValidateRulesOptions(Vllm()).ok());
  EXPECT_TRUE(ValidateRulesOptions(Sglang()).ok());
}

TEST(RulesOptionsTest, BadValuesAreInvalidNamingTheFlag) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    void (*mutate)(RulesOptions&, double);
    double v;
    const char* says;
  };
  const Case cases[] = {
      {[](RulesOptions& o, double v) { o.slo_objective = v; }, 1.0, "--slo-objective"},
      {[](RulesOptions& o, double v) { o.slo_objective = v; }, 0.0, "--slo-objective"},
      {[](RulesOptions& o, double v) { o.slo_objective = v; }, nan, "--slo-objective"},
      {[](RulesOptions& o, double v) { o.slo_objective = v; }, 0.9, "could never fire"},
      {[](RulesOptions& o, double v) { o.slo_ttft_s = v; }, 0, "--slo-ttft-s"},
      {[](RulesOptions& o, double v) { o.slo_ttft_s = v; }, nan, "--slo-ttft-s"},
      {[](RulesOptions& o, double v) { o.slo_ttft_s = v; }, inf, "--slo-ttft-s"},
      {[](RulesOptions& o, double v) { o.slo_ttft_s = v; }, 2, "not a bucket bound"},
      {[](RulesOptions& o, double v) { o.queue_p99_s = v; }, -1, "--queue-p99-s"},
      {[](RulesOptions& o, double v) { o.hit_rate_drop = v; }, 1, "--hit-rate-drop"},
      {[](RulesOptions& o, double v) { o.hit_rate_drop = v; }, 0, "--hit-rate-drop"},
  };
  for (const Case& c : cases) {
    RulesOptions o = Vllm();
    c.mutate(o, c.v);
    const Status st = ValidateRulesOptions(o);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.says << " " << c.v;
    EXPECT_THAT(st.message(), HasSubstr(c.says));
    // The generators refuse the same options.
    EXPECT_FALSE(RecordingRules(o).ok());
    EXPECT_FALSE(AlertingRules(o).ok());
    EXPECT_FALSE(DashboardJson(o).ok());
  }
  // 2 s is a bound of newer SGLang buckets, not of vLLM's.
  RulesOptions s = Sglang();
  s.slo_ttft_s = 2;
  EXPECT_TRUE(ValidateRulesOptions(s).ok());
  RulesOptions v = Vllm();
  v.slo_ttft_s = 2.5;
  EXPECT_TRUE(ValidateRulesOptions(v).ok());
}

TEST(RulesOptionsTest, SelectorMustBeLabelMatchers) {
  for (const char* ok :
       {"", R"(job="vllm")", R"(job="vllm", namespace=~"prod-.*")", R"(a!="x",b!~"y",)",
        R"(a="quote \" inside")", "  ", R"(a=~"x\\.y")", R"(a=~`x\.y`)", R"(a='it\'s')",
        R"(a="\u00e9\x41\101")", R"(a=~"(?i)vllm|sglang")"}) {
    RulesOptions o = Vllm();
    o.selector = ok;
    EXPECT_TRUE(ValidateRulesOptions(o).ok()) << ok << ": " << ValidateRulesOptions(o).message();
  }
  for (const char* bad :
       {"job=vllm", R"(job="vllm"} or vector(1) or x{a="b")", R"(="x")", R"(job=="x")",
        R"(job="unterminated)", R"(a="x" b="y")", R"(1a="x")", "job\n=\"x\"", "job=\"a\x01b\"",
        // Escapes PromQL refuses, and regexes Go's regexp (RE2 syntax) does not compile.
        R"(a=~"x\.y")", R"(a="it\'s")", R"(a="\uD800")", R"(a="\400")", R"(a="\x4")", R"(a=~"(")",
        R"(a=~"x)|(?:y")", R"x(a=~"(?=x)")x", R"(a=~"x{1001}")", R"(a=~"\xff")", "a=\"\xff\""}) {
    RulesOptions o = Vllm();
    o.selector = bad;
    const Status st = ValidateRulesOptions(o);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(st.message(), HasSubstr("--selector")) << bad;
  }
  RulesOptions r = Vllm();
  r.selector = R"(job="vllm",ns=~"prod-(a|b")";
  EXPECT_THAT(ValidateRulesOptions(r).message(),
              HasSubstr("the regex of label 'ns' does not compile (missing ): prod-(a|b) at "
                        "character 16"));
  r.selector = R"(ns=~"prod\.a")";
  EXPECT_THAT(ValidateRulesOptions(r).message(),
              HasSubstr("an escape sequence PromQL does not accept ('\\.'"));
  RulesOptions a = Vllm();
  a.deploy_annotation_expr = "up\n> 0";
  EXPECT_THAT(ValidateRulesOptions(a).message(), HasSubstr("--deploy-annotation-expr"));
  for (const char* bad : {"up{", "sum(rate(x[5m])", "up{job=\"a}", "x)", "changes(x[2m)) > 0"}) {
    a.deploy_annotation_expr = bad;
    EXPECT_THAT(ValidateRulesOptions(a).message(), HasSubstr("--deploy-annotation-expr")) << bad;
  }
  for (const char* ok : {R"(changes(process_start_time_seconds{job="v(1"}[2m]) > 0)",
                         "up{a='}'} == 1", "label_replace(up, \"x\", \"$1\", \"y\", `(.*)`)"}) {
    a.deploy_annotation_expr = ok;
    EXPECT_TRUE(ValidateRulesOptions(a).ok()) << ok << ": " << ValidateRulesOptions(a).message();
  }
  RulesOptions o = Vllm();
  o.replica_label = "pod name";
  EXPECT_THAT(ValidateRulesOptions(o).message(), HasSubstr("--replica-label"));
  o.replica_label = "le";  // sum by (le, le): the quantiles would lose their buckets
  EXPECT_THAT(ValidateRulesOptions(o).message(), HasSubstr("bucket label"));
  o.replica_label = "__name__";
  EXPECT_THAT(ValidateRulesOptions(o).message(), HasSubstr("reserved"));
}

TEST(RulesEngineTest, Names) {
  EXPECT_EQ(*ParseRulesEngine("vllm"), RulesEngine::kVllm);
  EXPECT_EQ(*ParseRulesEngine("sglang"), RulesEngine::kSglang);
  EXPECT_THAT(ParseRulesEngine("tgi").status().message(), HasSubstr("vllm or sglang"));
  EXPECT_STREQ(RulesEngineName(RulesEngine::kSglang), "sglang");
}

TEST(RecordingRulesTest, VllmPerModelAndPerReplica) {
  auto groups = RecordingRules(Vllm());
  ASSERT_TRUE(groups.ok()) << groups.status().message();
  const auto m = ByName(*groups);
  for (const char* level : {"model", "model_replica"}) {
    for (const char* metric : {"ttft_seconds", "queue_time_seconds", "prefill_time_seconds"}) {
      for (const char* q : {"p50", "p99"}) {
        EXPECT_TRUE(m.count(std::string(level) + ":" + metric + ":" + q + "_rate5m"))
            << level << " " << metric << " " << q;
      }
    }
    for (const char* r :
         {":prefix_cache_hit_ratio:rate5m", ":preemptions:rate5m", ":kv_cache_usage_ratio:max"}) {
      EXPECT_TRUE(m.count(level + std::string(r))) << level << r;
    }
  }
  EXPECT_EQ(m.at("model:ttft_seconds:p99_rate5m"),
            "histogram_quantile(0.99, sum by (model_name, le) "
            "(rate(vllm:time_to_first_token_seconds_bucket{job=\"vllm\"}[5m])))");
  EXPECT_EQ(m.at("model_replica:prefix_cache_hit_ratio:rate5m"),
            "sum by (model_name, instance) (rate(vllm:prefix_cache_hits_total{job=\"vllm\"}[5m])) "
            "/ (sum by (model_name, instance) "
            "(rate(vllm:prefix_cache_queries_total{job=\"vllm\"}[5m])) > 0)");
  // Every expression carries the selector.
  for (const auto& [name, expr] : m) EXPECT_THAT(expr, HasSubstr(R"(job="vllm")")) << name;
  // The SLO bucket matches Python's "1.0" and Go's "1".
  EXPECT_THAT(m.at("model:ttft_slo_error_ratio:rate5m"), HasSubstr(R"(le=~"1|1[.]0")"));
}

TEST(RecordingRulesTest, ReplicaLabelAndEmptySelector) {
  RulesOptions o;
  o.replica_label = "pod";
  o.slo_ttft_s = 2.5;
  const auto m = ByName(*RecordingRules(o));
  EXPECT_THAT(m.at("model_replica:ttft_seconds:p99_rate5m"), HasSubstr("by (model_name, pod, le)"));
  EXPECT_EQ(m.at("model:kv_cache_usage_ratio:max"),
            "max by (model_name) (vllm:kv_cache_usage_perc)");
  EXPECT_THAT(m.at("model:ttft_slo_error_ratio:rate5m"),
              HasSubstr(R"(vllm:time_to_first_token_seconds_bucket{le=~"2[.]5"})"));
}

TEST(RecordingRulesTest, SglangNamesAndNoPrefill) {
  const auto m = ByName(*RecordingRules(Sglang()));
  for (const auto& [name, expr] : m) {
    EXPECT_THAT(name, Not(HasSubstr("prefill"))) << name;
    EXPECT_THAT(expr, Not(HasSubstr("vllm:"))) << name;
  }
  EXPECT_THAT(m.at("model:queue_time_seconds:p99_rate5m"),
              HasSubstr("sglang:queue_time_seconds_bucket"));
  EXPECT_THAT(m.at("model:prefix_cache_hit_ratio:rate5m"), HasSubstr("sglang:cached_tokens_total"));
  EXPECT_THAT(m.at("model:prefix_cache_hit_ratio:rate5m"), HasSubstr("sglang:prompt_tokens_total"));
  EXPECT_THAT(m.at("model:kv_cache_usage_ratio:max"), HasSubstr("sglang:token_usage"));
  // The file says what it leaves out.
  EXPECT_THAT(*RecordingRulesYaml(Sglang()), HasSubstr("# LEFT OUT: prefill time"));
}

TEST(AlertingRulesTest, BurnRateWindowsFromTheWorkbook) {
  auto groups = AlertingRules(Vllm());
  ASSERT_TRUE(groups.ok());
  const auto m = ByName(*groups);
  ASSERT_EQ(m.size(), 5u);
  const std::string fast = m.at("TTFTErrorBudgetBurnFast");
  EXPECT_THAT(fast, HasSubstr("[1h]"));
  EXPECT_THAT(fast, HasSubstr("[5m]"));
  EXPECT_THAT(fast, HasSubstr("> 14.4 * (1 - 0.99)"));
  EXPECT_THAT(fast, HasSubstr("\nand\n"));
  const std::string slow = m.at("TTFTErrorBudgetBurnSlow");
  EXPECT_THAT(slow, HasSubstr("[6h]"));
  EXPECT_THAT(slow, HasSubstr("[30m]"));
  EXPECT_THAT(slow, HasSubstr("> 6 * (1 - 0.99)"));
  EXPECT_THAT(m.at("PrefixCacheHitRateDropVsHourBefore"), HasSubstr("[1h] offset 1h"));
  EXPECT_THAT(m.at("PrefixCacheHitRateDropVsDayAgo"), HasSubstr("[1h] offset 1d"));
  EXPECT_THAT(m.at("QueueTimeP99High"), HasSubstr("> 1"));
  EXPECT_THAT(m.at("QueueTimeP99High"), HasSubstr("by (model_name, instance, le)"));

  RulesOptions o = Vllm();
  o.slo_objective = 0.999;
  o.slo_ttft_s = 0.5;
  o.hit_rate_drop = 0.1;
  o.queue_p99_s = 0.3;
  const auto m2 = ByName(*AlertingRules(o));
  EXPECT_THAT(m2.at("TTFTErrorBudgetBurnFast"), HasSubstr("> 14.4 * (1 - 0.999)"));
  EXPECT_THAT(m2.at("TTFTErrorBudgetBurnFast"), HasSubstr(R"(le=~"0[.]5")"));
  EXPECT_THAT(m2.at("PrefixCacheHitRateDropVsDayAgo"), HasSubstr("> 0.1"));
  EXPECT_THAT(m2.at("QueueTimeP99High"), HasSubstr("> 0.3"));
  const auto groups2 = AlertingRules(o);
  ASSERT_TRUE(groups2.ok());
  for (const auto& g : *groups2) {
    for (const auto& r : g.rules) {
      EXPECT_FALSE(r.labels.empty()) << r.alert;
      EXPECT_FALSE(r.annotations.empty()) << r.alert;
    }
  }
}

// The YAML text parses back to the same rules (quoting of PromQL's quotes, braces and
// the multi-line alert expressions survives).
TEST(RulesYamlTest, RoundTrips) {
  for (const RulesOptions& o : {Vllm(), Sglang()}) {
    for (bool alerts : {false, true}) {
      const auto text = alerts ? AlertingRulesYaml(o) : RecordingRulesYaml(o);
      ASSERT_TRUE(text.ok());
      EXPECT_THAT(*text, ::testing::StartsWith("# Prometheus "));
      const auto groups = alerts ? *AlertingRules(o) : *RecordingRules(o);
      const YAML::Node root = YAML::Load(*text);
      ASSERT_EQ(root["groups"].size(), groups.size());
      for (size_t g = 0; g < groups.size(); ++g) {
        const YAML::Node rules = root["groups"][g]["rules"];
        ASSERT_EQ(rules.size(), groups[g].rules.size());
        EXPECT_EQ(root["groups"][g]["name"].as<std::string>(), groups[g].name);
        for (size_t i = 0; i < rules.size(); ++i) {
          const PromRule& r = groups[g].rules[i];
          std::string expr = rules[i]["expr"].as<std::string>();
          if (!expr.empty() && expr.back() == '\n') expr.pop_back();  // literal block
          EXPECT_EQ(expr, r.expr);
          if (!r.for_.empty()) {
            EXPECT_EQ(rules[i]["for"].as<std::string>(), r.for_);
          }
          for (const auto& [k, v] : r.annotations) {
            EXPECT_EQ(rules[i]["annotations"][k].as<std::string>(), v);
          }
        }
      }
    }
  }
}

TEST(DashboardTest, PanelsQueriesVariablesAndAnnotations) {
  const auto text = DashboardJson(Vllm());
  ASSERT_TRUE(text.ok());
  const auto d = nlohmann::json::parse(*text);
  EXPECT_EQ(d["uid"], "ttft-vllm");
  EXPECT_EQ(d["schemaVersion"], 39);
  std::set<int> ids;
  size_t targets = 0;
  std::set<std::string> titles;
  std::vector<std::tuple<int, int, int, int>> boxes;
  for (const auto& p : d["panels"]) {
    EXPECT_TRUE(ids.insert(p["id"].get<int>()).second) << "duplicate id " << p["id"];
    const auto& g = p["gridPos"];
    EXPECT_LE(g["x"].get<int>() + g["w"].get<int>(), 24) << p["title"];
    // No two panels overlap.
    for (const auto& [px, py, pw, ph] : boxes) {
      const bool apart =
          g["x"].get<int>() >= px + pw || px >= g["x"].get<int>() + g["w"].get<int>() ||
          g["y"].get<int>() >= py + ph || py >= g["y"].get<int>() + g["h"].get<int>();
      EXPECT_TRUE(apart) << p["title"] << " overlaps another panel";
    }
    boxes.emplace_back(g["x"].get<int>(), g["y"].get<int>(), g["w"].get<int>(), g["h"].get<int>());
    titles.insert(p["title"]);
    if (p.contains("targets")) {
      for (const auto& t : p["targets"]) {
        ++targets;
        const std::string e = t["expr"];
        EXPECT_THAT(e, HasSubstr(R"(job="vllm")"));
        EXPECT_THAT(e, HasSubstr(R"(model_name=~"$model_name")"));
      }
    }
  }
  EXPECT_EQ(targets, DashboardQueries(Vllm())->size());
  for (const char* t : {"TTFT p50 / p99", "TTFT p99 per replica",
                        "Queue versus prefill time (p50 / p99)", "Prefix-cache hit rate",
                        "KV-cache usage per replica", "Preemptions per second per replica"}) {
    EXPECT_TRUE(titles.count(t)) << t;
  }
  std::set<std::string> vars;
  for (const auto& v : d["templating"]["list"]) vars.insert(v["name"]);
  EXPECT_EQ(vars, (std::set<std::string>{"DS_PROMETHEUS", "model_name", "replica"}));
  const auto& anno = d["annotations"]["list"][0];
  EXPECT_EQ(anno["expr"], R"(changes(process_start_time_seconds{job="vllm"}[2m]) > 0)");
  EXPECT_EQ(anno["target"]["expr"], anno["expr"]);

  RulesOptions o = Vllm();
  o.deploy_annotation_expr = R"(kube_deployment_status_observed_generation{deployment="vllm"})";
  const auto d2 = nlohmann::json::parse(*DashboardJson(o));
  EXPECT_EQ(d2["annotations"]["list"][0]["expr"], o.deploy_annotation_expr);
}

TEST(DashboardTest, SglangLeavesPrefillOutAndSaysSo) {
  const auto d = nlohmann::json::parse(*DashboardJson(Sglang()));
  std::string text_panel;
  for (const auto& p : d["panels"]) {
    if (p["type"] == "text") text_panel = p["options"]["content"];
    if (!p.contains("targets")) continue;
    for (const auto& t : p["targets"]) {
      EXPECT_THAT(t["expr"].get<std::string>(), Not(HasSubstr("prefill")));
      EXPECT_THAT(t["expr"].get<std::string>(), HasSubstr("sglang:"));
    }
  }
  EXPECT_THAT(text_panel, HasSubstr("LEFT OUT: prefill time"));
  EXPECT_EQ(d["uid"], "ttft-sglang");
}

}  // namespace
}  // namespace ttft
