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
#include <set>
#include <sstream>
#include <string>
#include <vector>

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

const std::set<std::string> kHeadings = {
    "# TTFT regression diagnosis",  "## 1. Mitigate now",       "## 2. Symptoms",
    "## 3. Decomposition",          "## 4. Ranked hypotheses",  "## 5. Where it lives",
    "## 6. Why the magnitude fits", "## 7. Fix and prevention", "## Timeline of changes",
    "## Checks not run and limits"};

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

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::stringstream ss(path);
  for (std::string dir; std::getline(ss, dir, ':');) {
    if (dir.empty()) continue;
    std::string p = dir;
    p += '/';
    p += name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

int Shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return rc == -1 || !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc);
}

// Installs tests/js/markdown (markdown-it, pinned by its package-lock.json) into a folder
// of the build directory with `npm ci`, unless there. Returns "" or why not.
std::string InstallMarkdownIt(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string src = std::string(TTFT_SOURCE_DIR) + "/tests/js/markdown";
  if (FindOnPath("node").empty()) return "node not found on PATH";
  std::error_code ec;
  fs::create_directories(dir, ec);
  for (const char* f : {"package.json", "package-lock.json", "check.mjs"}) {
    fs::copy_file(src + "/" + f, dir + "/" + f, fs::copy_options::overwrite_existing, ec);
    if (ec) return "cannot copy " + src + "/" + f + ": " + ec.message();
  }
  if (fs::exists(dir + "/node_modules/markdown-it/package.json")) return "";
  if (FindOnPath("npm").empty()) return "npm not found on PATH";
  const std::string log = dir + "/npm-ci.log";
  const int rc = Shell("cd " + Quote(dir) + " && timeout 180 npm ci --no-audit --no-fund > " +
                       Quote(log) + " 2>&1");
  if (rc != 0)
    return "npm ci failed (exit " + std::to_string(rc) + "; registry unreachable?), see " + log;
  return "";
}

TEST(SafeOutput, MarkdownRenderedAsGfmHasNoInjectedElement) {
  // Beside the test binary, in the build directory: never committed.
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string dir = (ec ? std::string(".") : exe.parent_path().string()) + "/js-markdown";
  const std::string why = InstallMarkdownIt(dir);
  if (!why.empty()) GTEST_SKIP() << "markdown-it not available: " << why;
  SpanTable t;
  const DiagnosisReport r = MakeHostileReport(t);
  const std::string md_path = dir + "/report." + std::to_string(getpid()) + ".md";
  const std::string out_path = md_path + ".json";
  std::ofstream(md_path) << RenderMarkdown(r);
  ASSERT_EQ(
      Shell("cd " + Quote(dir) + " && node check.mjs " + Quote(md_path) + " > " + Quote(out_path)),
      0);
  nlohmann::json j;
  {
    std::ifstream f(out_path);
    j = nlohmann::json::parse(f, nullptr, false);
  }
  ASSERT_FALSE(j.is_discarded());
  ASSERT_EQ(j.size(), 1u);
  const nlohmann::json& doc = j[0];
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
  std::filesystem::remove(md_path, ec);
  std::filesystem::remove(out_path, ec);
}

}  // namespace
}  // namespace ttft
