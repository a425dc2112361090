// Integration tests of the what-if (`ttft lint OLD --diff NEW --scenario S`): on the seed
// incident's two template versions (examples/seed/) it must predict the hit-rate
// collapse and the size of the p99 jump that the drill measures, before anything is
// deployed; two identical versions predict no change; bad input is exit 2 naming the
// file; a corpus diff reports the hit-rate change.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_ttft.h"
#include "ttft/pipeline.h"
#include "ttft/scenario.h"
#include "ttft/spans.h"
#include "ttft/window_stats.h"

namespace ttft {
namespace {

namespace fs = std::filesystem;
using testing::RunTtft;

const std::string kSeed = std::string(TTFT_SOURCE_DIR) + "/examples/seed/";
const std::string kScenario = std::string(TTFT_SOURCE_DIR) + "/scenarios/seed-drill.yaml";

std::string WhatIf(const std::string& old_t, const std::string& new_t,
                   const std::string& extra = "") {
  return "lint " + old_t + " --diff " + new_t + " --vars " + kSeed + "vars.yaml --scenario " +
         kScenario + " --scenario-template app " + extra;
}

// The hit rate of one tenant's requests in a window of a diagnosed run's spans.
double TenantHitRate(const ScenarioRun& run, const TimeRange& w, const std::string& tenant) {
  std::vector<uint32_t> rows;
  const SpanTable& t = *run.spans;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.arrival_s()[i] >= w.from_s && t.arrival_s()[i] < w.to_s &&
        t.label(i, SpanLabel::kTenant) == tenant) {
      rows.push_back(static_cast<uint32_t>(i));
    }
  }
  return ComputeWindowStats(t, rows, w.from_s, w.to_s).prefix_cache_hit_rate;
}

TEST(WhatIf, SeedIncidentPredictsTheCollapseAndTheP99JumpTheDrillMeasures) {
  auto r = RunTtft(WhatIf(kSeed + "app-v1.jinja", kSeed + "app-v2.jinja", "--format json"));
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;  // a predicted regression is a violation
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["result"], "fail");
  EXPECT_EQ(j["tenants"], nlohmann::json::array({"acme-rag"}));
  ASSERT_EQ(j["seeds"].size(), 5u);
  std::set<std::string> rules;
  for (const auto& f : j["findings"]) rules.insert(f["rule"]);
  EXPECT_TRUE(rules.count("TTFT-W001") && rules.count("TTFT-W002")) << r.out;
  // The lint of the two versions: v1 keeps ~5,000 static tokens, v2 almost none.
  EXPECT_NEAR(j["old"]["cacheable_prefix_tokens"].get<double>(), 5000, 400);
  EXPECT_LT(j["new"]["cacheable_prefix_tokens"].get<double>(), 32);
  EXPECT_EQ(j["new"]["first_non_static"]["source"], "request_time");

  // What the drill measures: the same scenario, the deploy at t=1800 s, one seed.
  auto sc = LoadScenario(kScenario);
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  RunOptions options;
  auto drill = RunDrill(*sc, "seed", options);
  ASSERT_TRUE(drill.ok()) << drill.status().message();
  const WindowStats& before = drill->run.baseline;
  const WindowStats& after = drill->run.incident;
  const double drill_ratio = after.ttft_s.p99 / before.ttft_s.p99;
  const double drill_rag_before =
      TenantHitRate(drill->run, drill->run.windows.baseline, "acme-rag");
  const double drill_rag_after = TenantHitRate(drill->run, drill->run.windows.incident, "acme-rag");

  const auto& o = j["old"];
  const auto& n = j["new"];
  const double old_p99 = o["fleet"]["p99_ttft_s"]["mean"];
  const double new_p99 = n["fleet"]["p99_ttft_s"]["mean"];
  const double ratio = j["change"]["p99_ttft_ratio"]["mean"];
  const double ratio_min = j["change"]["p99_ttft_ratio"]["min"];
  const double ratio_max = j["change"]["p99_ttft_ratio"]["max"];
  std::cout << "drill: p99 " << before.ttft_s.p99 << " -> " << after.ttft_s.p99 << " s (x"
            << drill_ratio << "), acme-rag hit rate " << drill_rag_before << " -> "
            << drill_rag_after << "\nwhat-if: p99 " << old_p99 << " -> " << new_p99 << " s (x"
            << ratio << ", seeds x" << ratio_min << "-x" << ratio_max << "), acme-rag hit rate "
            << o["tenants"]["hit_rate"]["mean"] << " -> " << n["tenants"]["hit_rate"]["mean"]
            << "\n";

  // The collapse: as the drill measures it for the template's tenant.
  EXPECT_GE(o["tenants"]["hit_rate"]["mean"].get<double>(), 0.75);
  EXPECT_LE(n["tenants"]["hit_rate"]["mean"].get<double>(), 0.05);
  EXPECT_NEAR(o["tenants"]["hit_rate"]["mean"].get<double>(), drill_rag_before, 0.03);
  EXPECT_NEAR(n["tenants"]["hit_rate"]["mean"].get<double>(), drill_rag_after, 0.03);
  // The p99 jump. The drill is one seed over two 1,500 s windows of bursty (gamma cv 5)
  // traffic, and its incident window starts with the queue the deploy builds; the
  // prediction is the steady state over 5 seeds. So: the drill's own signature (>= 4x)
  // holds for the prediction in every seed, and the predicted jump is within 35% of the
  // drill's (the spread of the jump between seeds is of that order: see the min-max).
  EXPECT_GE(ratio_min, 4.0);
  EXPECT_NEAR(ratio / drill_ratio, 1.0, 0.35);
  EXPECT_NEAR(old_p99 / before.ttft_s.p99, 1.0, 0.35);
  EXPECT_NEAR(new_p99 / after.ttft_s.p99, 1.0, 0.35);
  EXPECT_LE(r.seconds, 30) << "the what-if took " << r.seconds << " s";
}

TEST(WhatIf, IdenticalTemplatesPredictNoChangeAndExit0) {
  auto r =
      RunTtft(WhatIf(kSeed + "app-v1.jinja", kSeed + "app-v1.jinja", "--format json --seeds 3"));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["result"], "pass");
  EXPECT_TRUE(j["findings"].empty());
  const auto& ratio = j["change"]["p99_ttft_ratio"];
  EXPECT_LE(ratio["ci95_low"].get<double>(), 1.0);
  EXPECT_GE(ratio["ci95_high"].get<double>(), 1.0);
  const auto& o = j["old"]["fleet"]["p99_ttft_s"];
  const auto& n = j["new"]["fleet"]["p99_ttft_s"];
  EXPECT_GE(o["mean"].get<double>(), n["ci95_low"].get<double>());
  EXPECT_LE(o["mean"].get<double>(), n["ci95_high"].get<double>());

  // The text report says what was mapped and how uncertain it is.
  auto t = RunTtft(WhatIf(kSeed + "app-v1.jinja", kSeed + "app-v1.jinja", "--seeds 2"));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("segments kept (request content): question"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("95% t-interval"), std::string::npos) << t.out;
}

TEST(WhatIf, SarifAndGithubPointAtTheNewVersionsFirstNonStaticContent) {
  const std::string v2 = kSeed + "app-v2.jinja";
  auto r = RunTtft(WhatIf(kSeed + "app-v1.jinja", v2, "--seeds 1 --format sarif"));
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version"], "2.1.0");
  const auto& run = j["runs"][0];
  const auto& rules = run["tool"]["driver"]["rules"];
  ASSERT_FALSE(run["results"].empty());
  for (const auto& res : run["results"]) {
    const int index = res["ruleIndex"];
    ASSERT_GE(index, 0);
    ASSERT_LT(index, static_cast<int>(rules.size()));
    EXPECT_EQ(rules[index]["id"], res["ruleId"]);
    const auto& loc = res["locations"][0]["physicalLocation"];
    EXPECT_EQ(loc["artifactLocation"]["uri"], v2);
    // "Current time: {{ request_time }}" is line 5 of app-v2.jinja.
    EXPECT_EQ(loc["region"]["startLine"], 5);
  }
  auto g = RunTtft(WhatIf(kSeed + "app-v1.jinja", v2, "--seeds 1 --format github"));
  ASSERT_EQ(g.exit_code, 1) << g.err;
  EXPECT_EQ(g.out.rfind("::error file=" + v2 + ",line=5,", 0), 0u) << g.out;
  EXPECT_NE(g.out.find("title=TTFT-W001::"), std::string::npos) << g.out;
}

TEST(WhatIf, BadInputIsExit2NamingTheFile) {
  const fs::path dir = fs::temp_directory_path() / ("ttft_whatif_it_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string broken = (dir / "broken.jinja").string();
  std::ofstream(broken) << "line one\n{{ request_time }\n";
  auto r = RunTtft(WhatIf(kSeed + "app-v1.jinja", broken));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(broken + ":2:"), std::string::npos) << r.err;

  auto no_tmpl = RunTtft("lint " + kSeed + "app-v1.jinja --diff " + kSeed + "app-v2.jinja --vars " +
                         kSeed + "vars.yaml --scenario " + kScenario);
  EXPECT_EQ(no_tmpl.exit_code, 2);
  EXPECT_NE(no_tmpl.err.find("--scenario-template"), std::string::npos) << no_tmpl.err;
  EXPECT_NE(no_tmpl.err.find("app, chat"), std::string::npos) << no_tmpl.err;

  auto unknown =
      RunTtft(WhatIf(kSeed + "app-v1.jinja", kSeed + "app-v2.jinja", "--keep-segments qestion"));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("seed-drill.yaml"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("no segment \"qestion\""), std::string::npos) << unknown.err;

  auto no_scenario = RunTtft("lint " + kSeed + "app-v1.jinja --diff " + kSeed +
                             "app-v2.jinja --vars " + kSeed + "vars.yaml");
  EXPECT_EQ(no_scenario.exit_code, 2);
  EXPECT_NE(no_scenario.err.find("--scenario"), std::string::npos) << no_scenario.err;

  auto stray = RunTtft("lint " + kSeed + "app-v1.jinja --vars " + kSeed + "vars.yaml --seeds 3");
  EXPECT_EQ(stray.exit_code, 2);
  EXPECT_NE(stray.err.find("--seeds is for diff mode"), std::string::npos) << stray.err;

  // A NaN threshold compared false: the gate could never fail. Each is an error now.
  for (const char* flag : {"--max-p99-increase", "--max-hit-rate-drop"}) {
    auto nan =
        RunTtft(WhatIf(kSeed + "app-v1.jinja", kSeed + "app-v2.jinja", std::string(flag) + " nan"));
    EXPECT_EQ(nan.exit_code, 2) << flag;
    EXPECT_NE(nan.err.find(flag), std::string::npos) << nan.err;
  }
  auto nan_min = RunTtft("lint --corpus " + broken + " --min-hit-rate nan");
  EXPECT_EQ(nan_min.exit_code, 2);
  EXPECT_NE(nan_min.err.find("--min-hit-rate is a fraction in [0, 1]"), std::string::npos)
      << nan_min.err;
  fs::remove_all(dir);
}

TEST(WhatIf, CorpusDiffReportsTheHitRateChange) {
  const fs::path dir = fs::temp_directory_path() / ("ttft_whatif_c_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string sys = "You are the ACME assistant.";
  for (int i = 0; i < 300; ++i) sys += " policy rule " + std::to_string(i) + ".";
  std::string a, b;
  for (int i = 0; i < 200; ++i) {
    const std::string q = " Question " + std::to_string(i * 7919) + " about my order?";
    a += nlohmann::json({{"prompt", sys + "\nTime: 12:" + std::to_string(i) + q}}).dump() + "\n";
    b += nlohmann::json({{"prompt", "Time: 12:" + std::to_string(i) + "\n" + sys + q}}).dump() +
         "\n";
  }
  std::ofstream(dir / "old.jsonl") << a;
  std::ofstream(dir / "new.jsonl") << b;
  auto r = RunTtft("lint --corpus " + (dir / "old.jsonl").string() + " --diff-corpus " +
                   (dir / "new.jsonl").string() + " --format json");
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["old"]["hit_rate"].get<double>(), 0.8);
  EXPECT_LT(j["new"]["hit_rate"].get<double>(), 0.05);
  EXPECT_EQ(j["findings"][0]["rule"], "TTFT-W002");
  // Same corpus on both sides: no change, exit 0.
  auto same = RunTtft("lint --corpus " + (dir / "old.jsonl").string() + " --diff-corpus " +
                      (dir / "old.jsonl").string());
  EXPECT_EQ(same.exit_code, 0) << same.err << same.out;
  // A scenario is for template diffs.
  auto sc = RunTtft("lint --corpus " + (dir / "old.jsonl").string() + " --diff-corpus " +
                    (dir / "new.jsonl").string() + " --scenario seed-drill");
  EXPECT_EQ(sc.exit_code, 2);
  EXPECT_NE(sc.err.find("template diffs"), std::string::npos) << sc.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ttft
