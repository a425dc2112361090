// The incident suite (issue 4): every scenario in scenarios/incidents/ is simulated
// over several seeds and diagnosed. The injected cause is named by the file
// (incidents/prefix-cache-collapse -> prefix_cache_collapse); controls are
// incidents/control-*. Asserts: top-ranked = injected cause in >= 95% of cases, the
// injected cause in the top two in all of them, every control -> no_regression.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "ttft/diagnose.h"
#include "ttft/pipeline.h"
#include "ttft/scenario.h"

namespace ttft {
namespace {

struct Case {
  std::string scenario;
  uint64_t seed;
  std::string expected;  // "" for a control
  DiagnosisReport report;
};

// Simulates and diagnoses one incident through the library's one call (RunScenario),
// as `ttft drill` does.
Result<DiagnosisReport> RunIncident(const std::string& name, uint64_t seed) {
  TTFT_ASSIGN_OR_RETURN(Scenario sc, BuiltinScenario(name));
  sc.workload.seed = seed;
  RunOptions options;
  options.diagnose = true;
  TTFT_ASSIGN_OR_RETURN(ScenarioRun run, RunScenario(sc, options));
  return std::move(*run.diagnosis);
}

TEST(IncidentSuite, RanksTheInjectedCauseAndClearsTheControls) {
  std::vector<std::string> names;
  for (const std::string& n : BuiltinScenarioNames()) {
    if (n.rfind("incidents/", 0) == 0) names.push_back(n);
  }
  ASSERT_GE(names.size(), 13u) << "ten causes and three controls";
  const std::vector<uint64_t> seeds = {1, 2, 3, 4, 5};
  std::vector<Case> cases;
  std::vector<std::string> ids;
  for (const auto& rule : DefaultRules()) ids.emplace_back(rule->id());
  for (const std::string& n : names) {
    std::string stem = n.substr(std::string("incidents/").size());
    std::string expected;
    if (stem.rfind("control-", 0) != 0) {
      expected = stem;
      std::replace(expected.begin(), expected.end(), '-', '_');
      ASSERT_NE(std::find(ids.begin(), ids.end(), expected), ids.end())
          << n << ": names no registered hypothesis";
    }
    for (uint64_t seed : seeds) {
      auto rep = RunIncident(n, seed);
      ASSERT_TRUE(rep.ok()) << n << " seed " << seed << ": " << rep.status().ToString();
      cases.push_back({n, seed, expected, std::move(*rep)});
    }
  }
  // Every cause has a scenario.
  for (const std::string& id : ids) {
    EXPECT_TRUE(
        std::any_of(cases.begin(), cases.end(), [&](const Case& c) { return c.expected == id; }))
        << "no incident scenario for " << id;
  }
  int incidents = 0, top1 = 0, top2 = 0;
  for (const Case& c : cases) {
    const auto& h = c.report.hypotheses;
    std::string line = c.scenario + " seed " + std::to_string(c.seed) + ": " +
                       std::string(ToString(c.report.verdict));
    for (size_t i = 0; i < 3 && i < h.size(); ++i) {
      char buf[96];
      std::snprintf(buf, sizeof(buf), " %s=%.2f", h[i].id.c_str(), h[i].confidence);
      line += buf;
    }
    char stats[160];
    std::snprintf(stats, sizeof(stats), " | p99 x%.2f preempt/req %.3f->%.3f kv %.2f->%.2f",
                  c.report.p99_ratio.estimate, c.report.baseline.preemptions_per_request,
                  c.report.incident.preemptions_per_request, c.report.baseline.kv_usage,
                  c.report.incident.kv_usage);
    line += stats;
    std::printf("  %s\n", line.c_str());
    if (c.expected.empty()) {
      EXPECT_EQ(c.report.verdict, Verdict::kNoRegression) << line << "\n"
                                                          << c.report.verdict_reason;
      continue;
    }
    ++incidents;
    EXPECT_EQ(c.report.verdict, Verdict::kRegression) << line << "\n" << c.report.verdict_reason;
    const bool first = !h.empty() && h[0].id == c.expected;
    const bool second = h.size() > 1 && h[1].id == c.expected;
    top1 += first;
    top2 += first || second;
    EXPECT_TRUE(first || second) << line << ": injected " << c.expected << " not in the top two";
  }
  std::printf("incident suite: top-1 %d/%d, top-2 %d/%d over %zu seeds\n", top1, incidents, top2,
              incidents, seeds.size());
  EXPECT_GE(top1, (incidents * 95 + 99) / 100) << "top-1 below 95%";
  EXPECT_EQ(top2, incidents);
}

}  // namespace
}  // namespace ttft
