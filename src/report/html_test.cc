// Tests of the HTML report's document structure and of report/sha256.h. The report in
// a browser (layout, console, figures against the JSON) is tests/browser_report_test.cc.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "report/sha256.h"
#include "ttft/report.h"

namespace ttft {
namespace {

std::string Hex(const std::array<uint8_t, 32>& d) {
  std::string o;
  for (uint8_t b : d) o += fmt::format("{:02x}", b);
  return o;
}

TEST(Sha256, FipsVectors) {
  // FIPS 180-4 examples (NIST CSRC "SHA256.pdf"): one block, two blocks, and empty.
  EXPECT_EQ(Hex(report::Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex(report::Sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Hex(report::Sha256("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // 55 and 56 bytes: the padding fits one block, then needs a second.
  EXPECT_EQ(Hex(report::Sha256(std::string(55, 'a'))),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(Hex(report::Sha256(std::string(56, 'a'))),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(report::Base64("abc"), "YWJj");
  EXPECT_EQ(report::Base64("ab"), "YWI=");
  EXPECT_EQ(report::Base64("a"), "YQ==");
  EXPECT_EQ(report::CspHashSource(""), "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
}

TEST(Html, PolicyNamesTheStylesheetByItsHash) {
  DiagnosisReport r;
  const std::string html = RenderHtml(r);
  const size_t open = html.find("<style>"), close = html.find("</style>");
  ASSERT_NE(open, std::string::npos);
  ASSERT_NE(close, std::string::npos);
  const std::string css = html.substr(open + 7, close - open - 7);
  EXPECT_NE(html.find("style-src '" + report::CspHashSource(css) + "'"), std::string::npos);
  EXPECT_EQ(html.find("unsafe-inline"), std::string::npos);
  EXPECT_EQ(html.find("style=\""), std::string::npos) << "a style attribute the CSP blocks";
  EXPECT_EQ(html.find("<pre"), std::string::npos) << "no plain-text dump";
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<html lang=\"en\">"), 16u);
}

TEST(Html, SectionsInTheSeedsOrder) {
  DiagnosisReport r;
  r.verdict = Verdict::kRegression;
  const std::string html = RenderHtml(r);
  size_t at = 0;
  for (const char* id :
       {"mitigate", "symptoms", "decomposition", "hypotheses", "where", "magnitude", "fix"}) {
    const size_t p = html.find(std::string("<section id=\"") + id + "\"");
    ASSERT_NE(p, std::string::npos) << id;
    EXPECT_GT(p, at) << id << " out of order";
    at = p;
  }
}

TEST(Html, EpochTimesReadAsClockTimes) {
  DiagnosisReport r;
  r.verdict = Verdict::kRegression;
  r.baseline.from_s = 1790960618;
  r.baseline.to_s = 1790961218;
  r.change_at_s = 1790961218;
  r.timeline = {{1790960700, 100, 0.5, 0.8}, {1790961500, 100, 2.0, 0.1}};
  const std::string html = RenderHtml(r);
  EXPECT_NE(html.find("2026-10-02 17:03:38 UTC"), std::string::npos);
  EXPECT_EQ(html.find("1790960618 s"), std::string::npos);
  EXPECT_EQ(html.find("1790961"), std::string::npos) << "no raw epoch in the charts";
  // The two points sit either side of the change: no line joins them.
  const size_t chart = html.find("<svg id=\"chart-timeline\"");
  const size_t end = html.find("</svg>", chart);
  EXPECT_EQ(html.substr(chart, end - chart).find("<polyline"), std::string::npos);
  EXPECT_NE(html.substr(chart, end - chart).find("<circle"), std::string::npos);
}

TEST(Html, CdfLeftAxisEndsAtOneHundredPercent) {
  DiagnosisReport r;
  r.cdf_before = {{0.1, 0.01}, {0.2, 0.5}, {0.4, 0.99}};
  r.cdf_after = {{0.2, 0.01}, {0.5, 0.5}, {1.5, 0.99}};
  const std::string html = RenderHtml(r);
  const size_t chart = html.find("<svg id=\"chart-cdf\"");
  const std::string svg = html.substr(chart, html.find("</svg>", chart) - chart);
  EXPECT_NE(svg.find(">100%<"), std::string::npos);
  EXPECT_EQ(svg.find(">105%<"), std::string::npos);
}

TEST(Html, StackLegendNamesEveryTerm) {
  DiagnosisReport r;
  r.decomposition.tail_before_front_end = 0.02;
  r.decomposition.tail_before_queue = 0.1;
  r.decomposition.tail_before_prefill = 0.3;
  r.decomposition.tail_after_front_end = 0.02;
  r.decomposition.tail_after_queue = 1.1;
  r.decomposition.tail_after_prefill = 0.9;
  const std::string html = RenderHtml(r);
  const size_t chart = html.find("<svg id=\"chart-stack\"");
  const std::string svg = html.substr(chart, html.find("</svg>", chart) - chart);
  for (const char* term : {">front end<", ">queue<", ">prefill<"}) {
    EXPECT_NE(svg.find(term), std::string::npos) << term;
  }
  EXPECT_NE(svg.find(">2.02 s<"), std::string::npos) << "the incident bar's total";
}

// Issue 13: the attribution section's chart has a bar per cause and one for the
// interaction, each labelled with its share, and its headline is the library's.
TEST(Html, AttributionChartHasABarPerCauseAndTheInteraction) {
  DiagnosisReport r;
  r.verdict = Verdict::kRegression;
  Attribution& a = r.attribution;
  a.run = true;
  a.seeds = 3;
  a.replay_none_p99_s = 2.0;
  a.replay_all_p99_s = 0.5;
  a.incident_check_ok = a.baseline_check_ok = true;
  FactorShare cache;
  cache.factor = ReplayFactor::kCache;
  cache.hypothesis = "prefix_cache_collapse";
  cache.cause = "the template change";
  cache.share = 0.63;
  cache.share_lo = 0.55;
  cache.share_hi = 0.71;
  FactorShare surge = cache;
  surge.factor = ReplayFactor::kArrivals;
  surge.hypothesis = "load_surge";
  surge.cause = "the traffic surge";
  surge.share = 0.37;
  surge.share_lo = 0.29;
  surge.share_hi = 0.45;
  a.factors = {cache, surge};
  a.interaction = 0.08;
  const std::string html = RenderHtml(r);
  const size_t at = html.find("<svg id=\"chart-shares\"");
  ASSERT_NE(at, std::string::npos);
  const std::string svg = html.substr(at, html.find("</svg>", at) - at);
  size_t bars = 0;
  for (size_t p = svg.find("<rect"); p != std::string::npos; p = svg.find("<rect", p + 1)) ++bars;
  EXPECT_EQ(bars, 3u);
  for (const char* label : {">63%<", ">37%<", ">8%<", ">the template change<", ">interaction<"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }
  EXPECT_NE(html.find(HtmlEscape(
                "Two causes: the template change explains 63% (55-71%) of the p99 increase, the "
                "traffic surge 37% (29-45%); their interaction is 8% of the increase")),
            std::string::npos);
  // Not run: the reason, no chart.
  DiagnosisReport none;
  none.verdict = Verdict::kRegression;
  none.attribution.not_run_reason = "metrics only";
  const std::string plain = RenderHtml(none);
  EXPECT_NE(plain.find("Attribution not run: metrics only."), std::string::npos);
  EXPECT_EQ(plain.find("chart-shares"), std::string::npos);
}

}  // namespace
}  // namespace ttft
