// Labels and event fields that carry markup or control characters stay text in every
// text format (ttft/report.h): Markdown (checked by hand and, where node and npm are
// present, by rendering it with markdown-it as GitHub-flavoured Markdown), terminal
// text, and the CSV of `ttft stats`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "report/markdown_it_testing.h"
#include "report/report_testing.h"
#include "ttft/diagnose.h"
#include "ttft/report.h"

namespace ttft {
namespace {

// Every way into markup: a new line and a heading, raw HTML, a javascript: link, an
// image, an autolink, a code span, table pipes, a terminal's colour and window title.
const std::string kHostileTenant =
    "acme\n# Owned\n<script>alert(1)</script>[x](javascript:alert(1))`pwn`|cell|"
    "\x1b]0;pwned\x07\x1b[31m";
const std::string kHostileTemplate = "app@v2\r\n![i](javascript:alert(2))<javascript:alert(3)>";
const std::string kHostileTarget = "<img src=x onerror=alert(4)>\n---\n> quote";
const std::string kHostileDetail = "1. list\n| a | b |\n|---|---|\n\x1b[2J";

DiagnosisReport MakeHostileReport(SpanTable& t) {
  FillTwoWindows(t, [](Span& s, const SyntheticRow& row) {
    if (row.marked) s.tenant = kHostileTenant;
    s.replica = row.i % 2 ? "r-0|x" : "r-1\n## replica";
    if (row.after && row.marked) {
      s.template_version = kHostileTemplate;
      s.cached_tokens = 0;
      s.queue_s += 1.0 + (row.i % 7) * 0.2;
    }
  });
  DiagnosisInput in = TwoWindowInput(t);
  in.annotations.push_back({200, "deploy_template", kHostileTarget, kHostileDetail});
  in.sources = {"spans\n# file.jsonl"};
  auto r = Diagnose(in);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *r;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The table separators of a Markdown table line: '|' not escaped by a backslash.
int Pipes(const std::string& line) {
  int n = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\') {
      ++i;
    } else if (line[i] == '|') {
      ++n;
    }
  }
  return n;
}

// An occurrence of `needle` not preceded by a backslash.
bool HasUnescaped(const std::string& s, const std::string& needle) {
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) {
    if (at == 0 || s[at - 1] != '\\') return true;
  }
  return false;
}

const std::set<std::string> kHeadings = {"# TTFT regression diagnosis",
                                         "## 1. Mitigate now",
                                         "## 2. Symptoms",
                                         "## 3. Decomposition",
                                         "## 4. Ranked hypotheses",
                                         "## 5. Where it lives",
                                         "## 6. Why the magnitude fits",
                                         "## 7. Fix and prevention",
                                         "## Timeline of changes",
                                         "## Checks not run and limits",
                                         "## Attribution by counterfactual replay"};

TEST(SafeOutput, MarkdownKeepsHostileLabelsAsText) {
  SpanTable t;
  const DiagnosisReport r = MakeHostileReport(t);
  const std::string md = RenderMarkdown(r);
  // The hostile labels are in the report (else the test proves nothing).
  EXPECT_NE(md.find("acme # Owned \\<script>alert(1)\\</script>[x\\](javascript:alert(1))"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("\\<img src=x onerror=alert(4)> --- > quote"), std::string::npos) << md;
  EXPECT_EQ(md.find('\x1b'), std::string::npos);
  EXPECT_EQ(md.find('\r'), std::string::npos);
  for (const char* needle : {"<script", "<img", "](javascript", "<javascript", "`pwn"}) {
    EXPECT_FALSE(HasUnescaped(md, needle)) << needle;
  }
  int table_width = 0;
  for (const std::string& line : Lines(md)) {
    if (!line.empty() && line[0] == '#') {
      EXPECT_TRUE(kHeadings.count(line)) << line;
    }
    EXPECT_NE(line.rfind('<', 0), 0u) << line;
    EXPECT_NE(line.rfind("---", 0), 0u) << line;
    EXPECT_NE(line.rfind("===", 0), 0u) << line;
    if (line.rfind('|', 0) == 0) {
      if (table_width == 0) table_width = Pipes(line);
      EXPECT_EQ(Pipes(line), table_width) << line;
    } else {
      table_width = 0;
    }
  }
}

TEST(SafeOutput, TerminalTextCarriesNoControlCharactersFromData) {
  SpanTable t;
  const DiagnosisReport r = MakeHostileReport(t);
  const std::string plain = RenderText(r, /*colour=*/false);
  for (char ch : plain) {
    const auto c = static_cast<unsigned char>(ch);
    EXPECT_TRUE(c >= 0x20 || c == '\n' || c == '\t') << static_cast<int>(c);
  }
  EXPECT_NE(plain.find("acme\\n# Owned\\n<script>"), std::string::npos) << plain;
  EXPECT_NE(plain.find("\\x1b]0;pwned\\x07"), std::string::npos) << plain;
  // In colour, the only escapes are the renderer's own SGR codes.
  std::string coloured = RenderText(r, /*colour=*/true);
  for (const char* sgr : {"\033[1m", "\033[31m", "\033[32m", "\033[0m"}) {
    for (size_t at = coloured.find(sgr); at != std::string::npos; at = coloured.find(sgr)) {
      coloured.erase(at, std::string(sgr).size());
    }
  }
  EXPECT_EQ(coloured.find('\x1b'), std::string::npos);
  EXPECT_EQ(coloured.find('\x07'), std::string::npos);
}

TEST(SafeOutput, StatsTextAndCsvQuoteHostileKeys) {
  GroupSummary g;
  g.key = {{"tenant", "=HYPERLINK(\"http://x\",\"a,b\")\n\x1b[31m"}};
  g.stats.requests = 3;
  g.stats.request_rate_rps = 0.5;
  g.stats.prefix_cache_hit_rate = static_cast<double>(0.2f);
  const std::string text = RenderStatsText({g}, 0);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_NE(text.find("tenant==HYPERLINK(\"http://x\",\"a,b\")\\n\\x1b[31m count=3"),
            std::string::npos)
      << text;
  const std::string csv = RenderStatsCsv({g});
  const std::vector<std::string> lines = Lines(csv);
  // The header, then one record of five rows: each starts with the quoted key, its
  // quotes doubled, the new line inside the quotes.
  EXPECT_NE(csv.find("\"tenant==HYPERLINK(\"\"http://x\"\",\"\"a,b\"\")\n\x1b[31m\",3,0.5,ttft_s,"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find(",0.2\n"), std::string::npos) << "the float32 hit rate as 0.2: " << csv;
  EXPECT_EQ(csv.find("0.20000000298023224"), std::string::npos);
}

// --- GitHub-flavoured Markdown rendered by markdown-it under node ------------------

TEST(SafeOutput, MarkdownRenderedAsGfmHasNoInjectedElement) {
  SpanTable t;
  const DiagnosisReport r = MakeHostileReport(t);
  std::string why;
  const std::optional<nlohmann::json> rendered =
      testing::InspectMarkdown(RenderMarkdown(r), &why, "js-markdown");
  if (!rendered) {
    ASSERT_NE(why.rfind("check.mjs", 0), 0u) << why;  // the check itself failed
    GTEST_SKIP() << "markdown-it not available: " << why;
  }
  const nlohmann::json& doc = *rendered;
  EXPECT_TRUE(doc["html"].empty()) << doc["html"].dump();
  EXPECT_TRUE(doc["links"].empty()) << doc["links"].dump();
  EXPECT_TRUE(doc["images"].empty()) << doc["images"].dump();
  for (const auto& h : doc["headings"]) {
    const std::string line =
        std::string(h["tag"] == "h1" ? "# " : "## ") + h["text"].get<std::string>();
    EXPECT_TRUE(kHeadings.count(line)) << "a heading from data: " << h.dump();
  }
  EXPECT_GE(doc["headings"].size(), 8u);
  for (const auto& c : doc["code"]) {
    EXPECT_EQ(c.get<std::string>().find("pwn"), std::string::npos) << "a code span from data";
  }
  ASSERT_EQ(doc["tables"].size(), 2u) << "the symptom and decomposition tables";
  for (const auto& table : doc["tables"]) {
    for (const auto& row : table) EXPECT_EQ(row, table[0]) << table.dump();
  }
  // The labels reach the reader as text.
  const std::string text = doc["text"];
  EXPECT_NE(text.find("<script>alert(1)</script>[x](javascript:alert(1))`pwn`|cell|"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<img src=x onerror=alert(4)> --- > quote"), std::string::npos);
  const std::string html = doc["rendered"];
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
}

}  // namespace
}  // namespace ttft
