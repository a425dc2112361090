// Tests of the what-if (ttft/whatif.h): the interval over seeds, the mapping of a
// template's lint into scenario segments, the steady-state runs and the errors.
#include "ttft/whatif.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ttft/scenario.h"

namespace ttft {
namespace {

TEST(Summarize, MeanRangeAndStudentTInterval) {
  OverSeeds o = Summarize({1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(o.mean, 3);
  EXPECT_DOUBLE_EQ(o.min, 1);
  EXPECT_DOUBLE_EQ(o.max, 5);
  // sd = sqrt(2.5); t_{0.975,4} = 2.776: half-width 2.776 * 1.5811 / sqrt(5) = 1.9630.
  EXPECT_NEAR(o.ci_low, 3 - 1.9630, 1e-3);
  EXPECT_NEAR(o.ci_high, 3 + 1.9630, 1e-3);
  OverSeeds one = Summarize({7});
  EXPECT_EQ(one.ci_low, 7);
  EXPECT_EQ(one.ci_high, 7);
}

// One pool, one tenant whose template is a 2,000-token static prompt, a timestamp and a
// question, at a load where the cache matters.
constexpr const char* kScenario = R"(
name: whatif-small
seed: 3
duration_s: 240
scrape_interval_s: 15
defaults:
  model: llama-3.1-8b
  gpu: h100-sxm
  tp: 1
  block_size: 16
  enable_prefix_caching: true
replicas:
  - {name: r, count: 1}
templates:
  - name: app
    versions:
      - version: v1
        segments:
          - {name: system_prompt, kind: static, tokens: 2000}
          - {name: timestamp, kind: per_request, tokens: 12}
          - {name: question, kind: per_request, tokens: {dist: lognormal, mean: 200, cv: 0.5, min: 10, max: 2000}}
  - name: other
    versions:
      - version: v1
        segments:
          - {name: p, kind: static, tokens: 100}
          - {name: q, kind: per_request, tokens: 50}
tenants:
  - {name: a, template: app, version: v1, rate_rps: 5, output_tokens: 50, users: 100}
  - {name: b, template: other, version: v1, rate_rps: 1, output_tokens: 20, users: 100}
events:
  - {at_s: 120, kind: deploy_template, template: other, version: v1}
analysis: {warmup_s: 30}
)";

TemplateLintReport Lint(const char* path, int64_t prompt, int64_t prefix) {
  TemplateLintReport r;
  r.template_path = path;
  r.prompt_tokens = prompt;
  r.cacheable_prefix_tokens = prefix;
  r.first_non_static_byte = prefix < prompt ? 100 : -1;
  r.offender = "request_time";
  r.offender_class = "per_request";
  r.offender_pos = {3, 7};
  return r;
}

Scenario Small() {
  auto sc = ParseScenario(kScenario, "small.yaml", ".");
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  return *sc;
}

// The timestamp moved ahead of a 2,010-token static prefix (6 static tokens left), over
// `seeds` seeds of Small().
Result<WhatIfReport> PredictTimestampFirst(int seeds) {
  WhatIfOptions o;
  o.template_name = "app";
  o.seeds = seeds;
  o.threads = 1;
  return PredictTemplateChange(Lint("old.jinja", 2030, 2010), Lint("new.jinja", 2030, 6), Small(),
                               o);
}

TEST(PredictTemplateChange, TimestampFirstCollapsesTheHitRateAndRaisesTtft) {
  auto r = PredictTimestampFirst(2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->tenants, std::vector<std::string>{"a"});
  ASSERT_EQ(r->kept.size(), 1u);
  EXPECT_EQ(r->kept[0].rfind("question", 0), 0u) << r->kept[0];
  EXPECT_EQ(r->replaced.size(), 2u);
  EXPECT_EQ(r->seeds, (std::vector<uint64_t>{3, 4}));
  // Steady state: the event is dropped, the window is [warmup, duration).
  EXPECT_EQ(r->window_from_s, 30);
  EXPECT_EQ(r->window_to_s, 240);
  EXPECT_EQ(r->old_arm.static_tokens, 2010);
  EXPECT_EQ(r->old_arm.per_request_tokens, 20);
  EXPECT_EQ(r->new_arm.static_tokens, 6);
  // The old prompt is ~2,230 tokens of which 2,000 hit after the first request; the
  // new one hits nothing.
  EXPECT_GT(r->old_arm.tenant_hit_rate.mean, 0.8);
  EXPECT_LT(r->new_arm.tenant_hit_rate.mean, 0.01);
  EXPECT_GT(r->p99_ratio.min, 1.0);
  EXPECT_LT(r->tenant_hit_rate_change.max, -0.8);
  ASSERT_EQ(r->findings.size(), 2u);
  EXPECT_EQ(r->findings[0].rule_id, "TTFT-W001");
  EXPECT_EQ(r->findings[0].pos.line, 3);
  EXPECT_EQ(r->findings[1].rule_id, "TTFT-W002");
  EXPECT_NE(r->findings[0].message.find(" over 2 seeds)"), std::string::npos)
      << r->findings[0].message;
  EXPECT_TRUE(r->violation());
  // Every format renders.
  for (const char* f : {"text", "json", "sarif", "github"}) {
    auto out = FormatWhatIfReport(*r, f);
    ASSERT_TRUE(out.ok()) << f;
    EXPECT_NE(out->find("TTFT-W001"), std::string::npos) << f;
  }
}

// One seed has no spread: the finding says so rather than "x12.89-x12.89 over 1 seeds".
TEST(PredictTemplateChange, OneSeedsFindingNamesNoRange) {
  auto r = PredictTimestampFirst(1);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->findings.empty());
  const std::string& m = r->findings[0].message;
  EXPECT_EQ(r->findings[0].rule_id, "TTFT-W001");
  EXPECT_NE(m.find(", on 1 seed) on scenario"), std::string::npos) << m;
  EXPECT_EQ(m.find("seeds"), std::string::npos) << m;
}

TEST(PredictTemplateChange, TheSameVersionPredictsNoChange) {
  WhatIfOptions o;
  o.template_name = "app";
  o.seeds = 3;
  auto r =
      PredictTemplateChange(Lint("a.jinja", 2030, 2010), Lint("a.jinja", 2030, 2010), Small(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The same segments and seeds: the same runs, paired ratio exactly 1.
  for (double v : r->p99_ratio.values) EXPECT_EQ(v, 1.0);
  EXPECT_EQ(r->tenant_hit_rate_change.max, 0.0);
  EXPECT_TRUE(r->findings.empty());
  EXPECT_FALSE(r->violation());
}

TEST(PredictTemplateChange, KeepSegmentsOverridesTheDefault) {
  WhatIfOptions o;
  o.template_name = "app";
  o.seeds = 1;
  o.keep_segments_set = true;
  o.keep_segments = {"timestamp", "question"};
  auto r = PredictTemplateChange(Lint("a", 100, 90), Lint("b", 100, 90), Small(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->kept.size(), 2u);
  EXPECT_EQ(r->replaced.size(), 1u);
}

TEST(PredictTemplateChange, ErrorsNameTheScenarioAndTheField) {
  WhatIfOptions o;
  o.template_name = "nope";
  auto r = PredictTemplateChange(Lint("a", 100, 90), Lint("b", 100, 90), Small(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no template \"nope\" (the scenario has: app, other)"),
            std::string::npos)
      << r.status().message();
  o.template_name = "app";
  o.tenant = "b";
  r = PredictTemplateChange(Lint("a", 100, 90), Lint("b", 100, 90), Small(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no tenant \"b\" using template \"app\""), std::string::npos)
      << r.status().message();
  o.tenant.clear();
  o.keep_segments_set = true;
  o.keep_segments = {"questoin"};
  r = PredictTemplateChange(Lint("a", 100, 90), Lint("b", 100, 90), Small(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no segment \"questoin\" to keep"), std::string::npos)
      << r.status().message();
  o.keep_segments.clear();
  o.seeds = 0;
  EXPECT_FALSE(PredictTemplateChange(Lint("a", 100, 90), Lint("b", 100, 90), Small(), o).ok());
}

TEST(DiffCorpora, ADropBeyondTheThresholdIsAViolation) {
  CorpusReport a, b;
  a.corpus_path = "old.jsonl";
  b.corpus_path = "new.jsonl";
  a.prediction.prompt_tokens = b.prediction.prompt_tokens = 1000;
  a.prediction.hit_tokens = 800;
  b.prediction.hit_tokens = 760;
  EXPECT_FALSE(DiffCorpora(a, b, 0.05).violation());
  b.prediction.hit_tokens = 100;
  CorpusDiffReport d = DiffCorpora(a, b, 0.05);
  ASSERT_TRUE(d.violation());
  EXPECT_EQ(d.findings[0].rule_id, "TTFT-W002");
  auto text = FormatCorpusDiffReport(d, "text");
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("80.00% -> 10.00%"), std::string::npos) << *text;
  EXPECT_NE(text->find("TTFT is predicted for template diffs only"), std::string::npos);
  EXPECT_FALSE(DiffCorpora(a, b, -1).violation());
}

}  // namespace
}  // namespace ttft
