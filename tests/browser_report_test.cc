// The HTML report in a real browser: `ttft diagnose --format html` of the drill, its
// variants, a regression whose labels carry markup and an insufficient-data case,
// loaded in Debian's Chromium through the npm package puppeteer-core
// (tests/browser/check_report.mjs states the checks). Skipped, saying why, where node,
// npm, the package (npm ci from the registry) or Chromium are absent. Screenshots and
// PDFs are left in BUILD/browser-report/ for a person to look at.
//
// `ttft drill` prints text or JSON only, so each drill's report is its output folder
// (--out) diagnosed as a user would: `ttft diagnose DIR --format html` and `--format
// json` of the same spans.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "run_ttft.h"
#include "tokenizer/llama3_js_testing.h"

namespace ttft {
namespace {

namespace fs = std::filesystem;
using testing::DirLock;
using testing::ExecutableDir;
using testing::FindOnPath;
using testing::ReadFile;
using testing::RunShell;
using testing::RunTtft;
using testing::ShellQuote;

// The label the markup case gives one tenant: it must be shown as text.
constexpr const char* kMarkupTenant = "<img src=x onerror=alert(1)>";
constexpr const char* kMarkupDetail = "<script>alert(2)</script> rolled out";
// A replica whose name cannot wrap at a space: it must not widen the page.
constexpr const char* kLongReplica =
    "replica-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz";
// Seconds since 1970 (2026-10-01): the chart axes must show clock times.
constexpr double kT0 = 1790812800;

// Spans of `per_window` requests in each of [kT0, kT0 + 300) and [kT0 + 300, kT0 + 600):
// tenant acme steady; the markup tenant loses its prefix-cache hits after the change.
// A third of the requests run on kLongReplica.
void WriteSpans(const fs::path& path, int per_window) {
  std::ofstream f(path);
  for (int w = 0; w < 2; ++w) {
    for (int i = 0; i < per_window; ++i) {
      const bool markup = i % 2 == 0;
      const double arrival = kT0 + 300.0 * w + 300.0 * (i + 0.5) / per_window;
      const int prompt = 3000 + (i * 37) % 800;
      const int cached = (w == 1 && markup) ? 0 : prompt - 300;
      const double prefill = 0.00004 * (prompt - cached) + 0.01;
      const double queue = (w == 1 && markup) ? 0.05 + 0.3 * ((i * 13) % 10) / 10.0 : 0.01;
      const double front = 0.02;
      const double ttft = front + queue + prefill;
      nlohmann::json j = {{"request_id", "r" + std::to_string(w * per_window + i)},
                          {"arrival_s", arrival},
                          {"queue_s", queue},
                          {"prefill_s", prefill},
                          {"front_end_s", front},
                          {"ttft_s", ttft},
                          {"decode_s", 1.0},
                          {"e2e_s", ttft + 1.0},
                          {"itl_mean_s", 0.02},
                          {"itl_max_s", 0.03},
                          {"prompt_tokens", prompt},
                          {"cached_tokens", cached},
                          {"output_tokens", 50},
                          {"preemptions", 0},
                          {"status", "ok"},
                          {"replica", i % 3 == 0 ? kLongReplica : "r-2"},
                          {"region", "eu"},
                          {"tenant", markup ? kMarkupTenant : "acme"},
                          {"model", "llama-3.3-70b"},
                          {"template", w == 1 ? "app@v2" : "app@v1"},
                          {"deploy", w == 1 ? "v2" : "v1"}};
      f << j.dump() << "\n";
    }
  }
}

struct Case {
  std::string name;
  std::string diagnose_args;  // the inputs and options of `ttft diagnose`
  std::vector<std::string> visible_text;
};

TEST(BrowserReport, ReportsReadWellInChromium) {
  const std::string chromium =
      std::getenv("TTFT_CHROMIUM") != nullptr ? std::getenv("TTFT_CHROMIUM") : "/usr/bin/chromium";
  if (!fs::exists(chromium)) {
    GTEST_SKIP() << chromium << " not found (apt-get install chromium): HTML not checked";
  }
  const std::string node = FindOnPath("node"), npm = FindOnPath("npm");
  if (node.empty() || npm.empty()) {
    GTEST_SKIP() << "node or npm not on PATH (apt-get install nodejs npm): HTML not checked";
  }
  // puppeteer-core, pinned by tests/browser/package-lock.json, into the build folder.
  const fs::path src = fs::path(TTFT_SOURCE_DIR) / "tests" / "browser";
  const fs::path pkg = fs::path(ExecutableDir()) / "browser-node";
  {
    DirLock lock(pkg.string());
    const std::string lock_json = ReadFile(src / "package-lock.json");
    if (!fs::exists(pkg / "node_modules" / "puppeteer-core" / "package.json") ||
        ReadFile(pkg / "package-lock.json") != lock_json) {
      fs::copy_file(src / "package.json", pkg / "package.json",
                    fs::copy_options::overwrite_existing);
      fs::copy_file(src / "package-lock.json", pkg / "package-lock.json",
                    fs::copy_options::overwrite_existing);
      const std::string log = (pkg / "npm-ci.log").string();
      const int rc =
          RunShell("cd " + ShellQuote(pkg.string()) + " && timeout 300 " + ShellQuote(npm) +
                   " ci --no-audit --no-fund > " + ShellQuote(log) + " 2>&1");
      if (rc != 0) {
        GTEST_SKIP() << "npm ci of puppeteer-core failed (exit " << rc
                     << "; registry unreachable?), see " << log << ": HTML not checked";
      }
    }
    fs::copy_file(src / "check_report.mjs", pkg / "check_report.mjs",
                  fs::copy_options::overwrite_existing);
  }

  const fs::path out = fs::path(ExecutableDir()) / "browser-report";
  fs::remove_all(out);
  fs::create_directories(out);
  WriteSpans(out / "markup-spans.jsonl", 1500);
  WriteSpans(out / "small-spans.jsonl", 30);
  {
    std::ofstream ev(out / "markup-events.jsonl");
    ev << nlohmann::json({{"at_s", kT0 + 298},
                          {"kind", "deploy_template"},
                          {"target", kMarkupTenant},
                          {"detail", kMarkupDetail}})
              .dump()
       << "\n";
  }
  std::vector<Case> cases;
  for (const char* variant : {"seed", "no-deploy", "one-region"}) {
    const fs::path dir = out / (std::string("drill-") + variant);
    const auto r = RunTtft(std::string("drill --quiet --variant ") + variant + " --out " +
                           ShellQuote(dir.string()) + " --format json > /dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    cases.push_back({std::string("drill-") + variant, ShellQuote(dir.string()), {}});
  }
  const std::string change = " --change-at " + std::to_string(static_cast<int64_t>(kT0 + 300));
  cases.push_back({"markup",
                   ShellQuote((out / "markup-spans.jsonl").string()) + change + " --events " +
                       ShellQuote((out / "markup-events.jsonl").string()),
                   {kMarkupTenant, kMarkupDetail, kLongReplica}});
  cases.push_back({"insufficient", ShellQuote((out / "small-spans.jsonl").string()) + change, {}});
  // Metrics only, one scrape before and one after a restart: the baseline's p99 and the
  // incident's p50 lie in the first bucket and show as bounds ("<=100 ms"), the replicas
  // as n/a.
  for (const auto& [name, start_s, fast, slow] :
       {std::tuple{"t1000.prom", 400, 2000, 10}, std::tuple{"t1600.prom", 1100, 2500, 300}}) {
    std::ofstream f(out / name);
    f << "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds " << start_s
      << "\n# TYPE vllm:time_to_first_token_seconds histogram\n";
    for (const auto& [le, n] :
         {std::pair{"0.1", fast}, {"1.0", fast}, {"10.0", fast + slow}, {"+Inf", fast + slow}}) {
      f << "vllm:time_to_first_token_seconds_bucket{le=\"" << le << "\",model_name=\"m\"} " << n
        << "\n";
    }
    f << "vllm:time_to_first_token_seconds_count{model_name=\"m\"} " << fast + slow << "\n"
      << "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} " << 0.05 * fast + 5 * slow
      << "\n";
  }
  cases.push_back({"scrapes",
                   "--baseline " + ShellQuote((out / "t1000.prom").string()) + " --incident " +
                       ShellQuote((out / "t1600.prom").string()),
                   {}});

  nlohmann::json manifest = {{"chromium", chromium}, {"out", out.string()}};
  manifest["cases"] = nlohmann::json::array();
  for (const Case& c : cases) {
    const fs::path html = out / (c.name + ".html"), json = out / (c.name + ".json");
    for (const auto& [format, file] : {std::pair{"html", html}, std::pair{"json", json}}) {
      const auto r = RunTtft("diagnose " + c.diagnose_args + " --format " + format + " --out " +
                             ShellQuote(file.string()));
      ASSERT_EQ(r.exit_code, 0) << c.name << " " << format << ": " << r.err;
    }
    manifest["cases"].push_back({{"name", c.name},
                                 {"html", html.string()},
                                 {"json", json.string()},
                                 {"visible_text", c.visible_text},
                                 {"forbid", {"img", "script", "iframe", "object", "embed"}}});
  }
  const std::string insufficient = ReadFile(out / "insufficient.json");
  EXPECT_NE(insufficient.find("\"insufficient_data\""), std::string::npos) << insufficient;
  const std::string markup = ReadFile(out / "markup.json");
  EXPECT_NE(markup.find("\"regression\""), std::string::npos) << "the markup case's verdict";
  std::ofstream(out / "manifest.json") << manifest.dump(2);

  const std::string log = (out / "check.log").string();
  const int rc = RunShell(
      "timeout 600 " + ShellQuote(node) + " " + ShellQuote((pkg / "check_report.mjs").string()) +
      " " + ShellQuote((out / "manifest.json").string()) + " > " + ShellQuote(log) + " 2>&1");
  EXPECT_EQ(rc, 0) << ReadFile(log);
  for (const Case& c : cases) {
    for (const char* w : {"1280", "390"}) {
      EXPECT_TRUE(fs::exists(out / (c.name + "-" + w + ".png"))) << c.name << " " << w;
    }
  }
}

}  // namespace
}  // namespace ttft
