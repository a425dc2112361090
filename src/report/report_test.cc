// Renderers of the diagnosis report (ttft/report.h): escaping, the JSON schema's keys,
// and the HTML report rendered by headless Chromium with its charts present.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "report/report_testing.h"
#include "ttft/diagnose.h"
#include "ttft/report.h"

namespace ttft {
namespace {

// Two windows of synthetic spans: the incident's tenant "<acme>" loses its cache.
DiagnosisReport MakeReport(SpanTable& t) {
  FillTwoWindows(t, [](Span& s, const SyntheticRow& row) {
    if (row.marked) s.tenant = "<acme>&\"co\"";
    if (row.after && row.marked) {
      s.template_version = "app@v2";
      s.cached_tokens = 0;
      s.queue_s += 1.0 + (row.i % 7) * 0.2;
    }
  });
  DiagnosisInput in = TwoWindowInput(t);
  in.annotations.push_back({200, "deploy_template", "<script>alert(1)</script>", "app@v2"});
  auto r = Diagnose(in);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *r;
}

TEST(Report, EscapesEveryTelemetryString) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  SpanTable t;
  const DiagnosisReport r = MakeReport(t);
  const std::string html = RenderHtml(r);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<acme>"), std::string::npos);
  EXPECT_NE(html.find("&lt;acme&gt;"), std::string::npos);
  EXPECT_EQ(html.find("http://") == std::string::npos ||
                html.find("http://www.w3.org/2000/svg") != std::string::npos,
            true);
  EXPECT_EQ(html.find("https://"), std::string::npos) << "no network resources";
}

TEST(Report, JsonHasTheDocumentedKeysAndRanksTheCause) {
  SpanTable t;
  const DiagnosisReport r = MakeReport(t);
  const nlohmann::json j = ReportJson(r);
  for (const char* k : {"verdict", "baseline", "incident", "decomposition", "hypotheses", "groups",
                        "explanation", "actions"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["verdict"], "regression") << r.verdict_reason;
  EXPECT_EQ(j["hypotheses"][0]["id"], "prefix_cache_collapse");
  for (const auto& h : j["hypotheses"]) {
    for (const char* k : {"id", "confidence", "evidence", "splitting_metric", "next_check"}) {
      EXPECT_TRUE(h.contains(k)) << k;
    }
  }
  const std::string md = RenderMarkdown(r);
  EXPECT_NE(md.find("## 1. Mitigate now"), std::string::npos);
  EXPECT_EQ(RenderText(r, false).find('\033'), std::string::npos) << "no colour unless asked";
}

// Too few requests for a p99 (issue 4, "Bad input"): the verdict carries the counts
// and no format presents a ranked cause, a confidence or a group's share as an answer.
// The structured evidence, contributions, label changes and actions of a hand-built
// report, as every renderer states them.
TEST(Report, RendersTheStructuredModelInEveryFormat) {
  DiagnosisReport r;
  r.verdict = Verdict::kRegression;
  Hypothesis h;
  h.id = "prefix_cache_collapse";
  h.confidence = 0.9;
  h.evidence.push_back({"prompt_tokens_p99", 4000, 4100, "tokens", "prompt p99 4000 -> 4100"});
  r.hypotheses.push_back(h);
  r.contributions.push_back({"tenant", "acme", 0.81, 0.03, 0.42, 2.1, 0.25, 0.92});
  r.label_changes.push_back({"template", "app@v2", LabelChange::Kind::kNew, 0.25});
  r.label_changes.push_back({"deploy", "d1", LabelChange::Kind::kGone, 1.0});
  r.actions.push_back({"mitigate", "Roll back app@v2", "app team", ActionSubject::kLabelChange,
                       "template", "app@v2"});
  const std::string contribution =
      "tenant acme: hit rate 81% to 3%, p99 TTFT 420 ms to 2.10 s, 25% of the requests, 92% of "
      "the p99 increase";
  const std::string added = "template app@v2: new in the incident (25% of requests)";
  const std::string gone = "deploy d1: gone in the incident (was 100%)";
  for (const std::string& out : {RenderText(r, false), RenderMarkdown(r)}) {
    EXPECT_NE(out.find("prompt p99 4000 -> 4100"), std::string::npos) << out;
    EXPECT_NE(out.find(contribution), std::string::npos) << out;
    EXPECT_NE(out.find(added), std::string::npos) << out;
    EXPECT_NE(out.find(gone), std::string::npos) << out;
    EXPECT_NE(out.find("Roll back app@v2"), std::string::npos) << out;
  }
  const nlohmann::json j = ReportJson(r);
  EXPECT_EQ(j["hypotheses"][0]["evidence"], nlohmann::json::array({"prompt p99 4000 -> 4100"}));
  EXPECT_EQ(j["contributions"], nlohmann::json::array({contribution}));
  EXPECT_EQ(j["label_changes"], nlohmann::json::array({added, gone}));
  EXPECT_EQ(j["actions"][0]["text"], "Roll back app@v2");
}

// An empty label value (requests without the label) is named `"" (empty)` in every
// format, never as a blank ("tenant : gone in the incident").
TEST(Report, NamesAnEmptyLabelValue) {
  SpanTable t;
  FillTwoWindows(t, [](Span& s, const SyntheticRow& row) {
    if (row.marked) s.tenant = "";     // the tenant that loses its cache
    s.deploy = row.after ? "v2" : "";  // gone in the incident
    if (row.after && row.marked) {
      s.cached_tokens = 0;
      s.queue_s += 1.0 + (row.i % 7) * 0.2;
    }
  });
  DiagnosisInput in = TwoWindowInput(t);
  auto r = Diagnose(in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->verdict, Verdict::kRegression);
  const std::string gone = "deploy \"\" (empty): gone in the incident (was 100%)";
  for (const std::string& out : {RenderText(*r, false), RenderMarkdown(*r), RenderJson(*r)}) {
    const std::string expect =
        out[0] == '{' ? "deploy \\\"\\\" (empty): gone in the incident" : gone;
    EXPECT_NE(out.find(expect), std::string::npos) << out;
    EXPECT_EQ(out.find("deploy :"), std::string::npos) << out;
    EXPECT_EQ(out.find("tenant :"), std::string::npos) << out;
  }
  for (const std::string& out : {RenderText(*r, false), RenderMarkdown(*r)}) {
    EXPECT_NE(out.find("tenant \"\" (empty): hit rate"), std::string::npos) << out;
  }
  const std::string html = RenderHtml(*r);
  EXPECT_NE(html.find("deploy &quot;&quot; (empty): gone in the incident (was 100%)"),
            std::string::npos);
  EXPECT_NE(html.find("\"></span>&quot;&quot; (empty)"), std::string::npos);
  EXPECT_EQ(html.find("deploy :"), std::string::npos);
  EXPECT_EQ(html.find("tenant :"), std::string::npos);
}

TEST(Report, InsufficientDataRanksNoHypothesisInAnyFormat) {
  SpanTable t;
  MakeReport(t);  // 2,000 spans per window; the windows below hold 50 each
  DiagnosisInput in;
  in.baseline = {&t, 195, 200};
  in.incident = {&t, 200, 205};
  in.change_at_s = 200;
  auto r = Diagnose(in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->verdict, Verdict::kInsufficientData);
  EXPECT_NE(r->verdict_reason.find("50 ok requests in the baseline and 50 in the incident"),
            std::string::npos)
      << r->verdict_reason;
  EXPECT_FALSE(r->hypotheses_assessed);
  EXPECT_TRUE(r->hypotheses.empty());
  EXPECT_TRUE(r->contributions.empty());
  EXPECT_TRUE(r->actions.empty());

  const nlohmann::json j = ReportJson(*r);
  EXPECT_EQ(j["verdict"], "insufficient_data");
  EXPECT_EQ(j["hypotheses_assessed"], false);
  EXPECT_TRUE(j["hypotheses"].is_array() && j["hypotheses"].empty());
  EXPECT_TRUE(j["contributions"].empty());

  std::vector<std::string> ids;
  for (const auto& rule : DefaultRules()) ids.emplace_back(rule->id());
  const std::string text = RenderText(*r, false);
  const std::string md = RenderMarkdown(*r);
  const std::string html = RenderHtml(*r);
  for (const std::string* out : {&text, &md, &html}) {
    for (const std::string& id : ids) EXPECT_EQ(out->find(id), std::string::npos) << id;
    EXPECT_EQ(out->find("confidence"), std::string::npos);
    EXPECT_EQ(out->find("of the p99 increase"), std::string::npos);
  }
  EXPECT_NE(text.find("4. Ranked hypotheses\n  not assessable"), std::string::npos) << text;
  EXPECT_NE(md.find("Not assessable"), std::string::npos) << md;
  EXPECT_NE(html.find("not assessable"), std::string::npos);

  // The same spans with enough requests rank the cause as before.
  in.baseline = {&t, 0, 200};
  in.incident = {&t, 200, 400};
  auto full = Diagnose(in);
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(full->hypotheses_assessed);
  ASSERT_FALSE(full->hypotheses.empty());
  EXPECT_EQ(full->hypotheses.front().id, "prefix_cache_collapse");
}

// Issue 13, bad input: spans without output token counts. The replay cannot run; the
// attribution says which field is missing, in every format, and the rest of the report
// stands (the verdict, the ranked cause).
TEST(Report, AttributionNamesAMissingFieldAndTheRestStands) {
  SpanTable t;
  FillTwoWindows(t, [](Span& s, const SyntheticRow& row) {
    if (row.marked) s.tenant = "acme";
    if (row.after && row.marked) {
      s.template_version = "app@v2";
      s.cached_tokens = 0;
      s.queue_s += 1.0 + (row.i % 7) * 0.2;
    }
    s.output_tokens = -1;
  });
  auto rep = Diagnose(TwoWindowInput(t));
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_EQ(rep->verdict, Verdict::kRegression);
  ASSERT_FALSE(rep->hypotheses.empty());
  EXPECT_EQ(rep->hypotheses[0].id, "prefix_cache_collapse");
  EXPECT_FALSE(rep->attribution.run);
  EXPECT_NE(rep->attribution.not_run_reason.find("output_tokens missing on 100% of the baseline"),
            std::string::npos)
      << rep->attribution.not_run_reason;
  for (const std::string& out :
       {RenderText(*rep, false), RenderMarkdown(*rep), RenderJson(*rep), RenderHtml(*rep)}) {
    EXPECT_NE(out.find("Attribution not run: output_tokens missing"), std::string::npos) << out;
    EXPECT_NE(out.find("prefix_cache_collapse"), std::string::npos);
  }
  // With the field, the same incident is attributed to the cache, in every format.
  SpanTable u;
  FillTwoWindows(u, [](Span& s, const SyntheticRow& row) {
    if (row.marked) s.tenant = "acme";
    if (row.after && row.marked) {
      s.template_version = "app@v2";
      s.cached_tokens = 0;
      s.queue_s += 1.0 + (row.i % 7) * 0.2;
    }
  });
  auto full = Diagnose(TwoWindowInput(u));
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(full->attribution.run) << full->attribution.not_run_reason;
  const std::string html = RenderHtml(*full);
  EXPECT_NE(html.find("<section id=\"attribution\">"), std::string::npos);
}

TEST(Report, HtmlRendersInHeadlessChromium) {
  const char* chromium = "/usr/bin/chromium";
  if (!std::filesystem::exists(chromium)) {
    GTEST_SKIP() << "chromium not installed (apt-get install chromium): HTML not rendered";
  }
  SpanTable t;
  const DiagnosisReport r = MakeReport(t);
  const auto dir =
      std::filesystem::temp_directory_path() / ("ttft-report-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "profile");
  const auto page = dir / "report.html";
  std::ofstream(page) << RenderHtml(r);
  const auto dom = dir / "dom.html";
  const auto log = dir / "chromium.log";
  const std::string cmd =
      std::string("timeout 60 ") + chromium +
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync "
      "--enable-logging=stderr --v=0 --user-data-dir=" +
      (dir / "profile").string() + " --dump-dom file://" + page.string() + " > " + dom.string() +
      " 2>" + log.string();
  const int rc = std::system(cmd.c_str());
  ASSERT_EQ(rc, 0) << cmd;
  std::ifstream f(dom);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string out = ss.str();
  ASSERT_GT(out.size(), 1000u) << "chromium dumped no DOM";
  // The charts are SVG elements with their ids, as the browser parsed them.
  for (const char* id :
       {"chart-cdf", "chart-stack", "chart-timeline", "chart-replica-0", "chart-tenant-0"}) {
    EXPECT_NE(out.find(std::string("<svg id=\"") + id + "\""), std::string::npos) << id;
  }
  EXPECT_NE(out.find("id=\"chart-timeline-change\""), std::string::npos) << "change marker";
  EXPECT_NE(out.find("id=\"verdict\""), std::string::npos);
  // No scripts at all (so none can fail), and nothing on the console.
  EXPECT_EQ(out.find("<script"), std::string::npos);
  std::ifstream lf(log);
  std::stringstream ls;
  ls << lf.rdbuf();
  EXPECT_EQ(ls.str().find("CONSOLE"), std::string::npos) << ls.str();
  EXPECT_EQ(ls.str().find("Uncaught"), std::string::npos) << ls.str();
  EXPECT_EQ(out.find("This page contains the following errors"), std::string::npos);
  EXPECT_EQ(out.find("no data"), std::string::npos) << "a chart had no data";
  std::filesystem::remove_all(dir);
}

// A quantile in the +Inf bucket is bounded by +Inf, written as the exposition format
// writes that bucket's bound, not as "null" (which JSON uses for a missing number).
TEST(RenderStatsText, TheInfBucketsBoundIsWrittenPlusInf) {
  GroupSummary g;
  g.stats.requests = 4;
  TermQuantiles& q = g.stats.ttft_s;
  q.count = 4;
  q.source = TermQuantiles::Source::kBuckets;
  q.p50 = q.p90 = q.p99 = q.p999 = 30;
  q.mean = 213.7;
  for (BucketQuantile& b : q.buckets) {
    b.value = 30;
    b.lower_bound = 30;
    b.upper_bound = INFINITY;
    b.in_inf_bucket = true;
  }
  const std::string text = RenderStatsText({g}, 0);
  EXPECT_NE(text.find("p99=30 p999=30 mean=213.7  p99 in (30, +Inf]\n"), std::string::npos) << text;
  q.buckets[2].upper_bound = 60;
  EXPECT_NE(RenderStatsText({g}, 0).find("p99 in (30, 60]\n"), std::string::npos);
}

}  // namespace
}  // namespace ttft
