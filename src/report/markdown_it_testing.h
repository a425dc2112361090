// -----------------------------------------------------------------------------
// File: report/markdown_it_testing.h (test-only, private to the report module)
// -----------------------------------------------------------------------------
//
// Test-only: renders Markdown as GitHub-flavoured Markdown would, with markdown-it under
// node (tests/js/markdown/check.mjs, pinned by its package-lock.json), so that a test can
// look for elements injected by data. Used by src/report/safe_output_test.cc (the
// diagnosis report) and by the integration tests (the gate's Markdown), which include
// the report module's private headers for it.
//
//   std::string why;
//   std::optional<nlohmann::json> doc = InspectMarkdown(markdown, &why, "js-markdown");
//   if (!doc) GTEST_SKIP() << why;
//   EXPECT_TRUE((*doc)["links"].empty());
//
// `doc` holds what check.mjs reports: headings [{tag, text}], html (raw HTML tokens),
// links, images, code (spans and blocks), tables, text (the visible text) and rendered
// (the HTML).

#ifndef TTFT_REPORT_MARKDOWN_IT_TESTING_H_
#define TTFT_REPORT_MARKDOWN_IT_TESTING_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

namespace ttft::testing {

namespace markdown_it_internal {

inline bool OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::stringstream ss(path);
  for (std::string dir; std::getline(ss, dir, ':');) {
    if (!dir.empty() && access((dir + "/" + name).c_str(), X_OK) == 0) return true;
  }
  return false;
}

inline std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

inline int Shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return rc == -1 || !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc);
}

// Installs tests/js/markdown into `dir` with `npm ci`, unless there. "" or why not.
inline std::string Install(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string src = std::string(TTFT_SOURCE_DIR) + "/tests/js/markdown";
  if (!OnPath("node")) return "node not found on PATH";
  std::error_code ec;
  fs::create_directories(dir, ec);
  for (const char* f : {"package.json", "package-lock.json", "check.mjs"}) {
    fs::copy_file(src + "/" + f, dir + "/" + f, fs::copy_options::overwrite_existing, ec);
    if (ec) return "cannot copy " + src + "/" + f + ": " + ec.message();
  }
  if (fs::exists(dir + "/node_modules/markdown-it/package.json")) return "";
  if (!OnPath("npm")) return "npm not found on PATH";
  const std::string log = dir + "/npm-ci.log";
  const int rc = Shell("cd " + Quote(dir) + " && timeout 180 npm ci --no-audit --no-fund > " +
                       Quote(log) + " 2>&1");
  if (rc != 0) {
    return "npm ci failed (exit " + std::to_string(rc) + "; registry unreachable?), see " + log;
  }
  return "";
}

}  // namespace markdown_it_internal

// What markdown-it makes of `markdown`; nullopt with `*why` set when node, npm or the
// package are not available (a reason to skip) or the check fails (a reason to fail:
// `*why` starts with "check.mjs").
// `folder` names the install folder beside the test binary (one per test binary, so
// that two binaries run side by side do not install into one folder at once).
inline std::optional<nlohmann::json> InspectMarkdown(const std::string& markdown, std::string* why,
                                                     const std::string& folder) {
  namespace fs = std::filesystem;
  namespace mi = markdown_it_internal;
  // Beside the test binary, in the build directory: never committed.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const std::string dir = (ec ? std::string(".") : exe.parent_path().string()) + "/" + folder;
  *why = mi::Install(dir);
  if (!why->empty()) return std::nullopt;
  static int counter = 0;
  const std::string md_path =
      dir + "/in." + std::to_string(getpid()) + "." + std::to_string(counter++) + ".md";
  const std::string out_path = md_path + ".json";
  std::ofstream(md_path) << markdown;
  const int rc = mi::Shell("cd " + mi::Quote(dir) + " && node check.mjs " + mi::Quote(md_path) +
                           " > " + mi::Quote(out_path));
  nlohmann::json j;
  {
    std::ifstream f(out_path);
    j = nlohmann::json::parse(f, nullptr, false);
  }
  fs::remove(md_path, ec);
  fs::remove(out_path, ec);
  if (rc != 0 || j.is_discarded() || j.size() != 1) {
    *why = "check.mjs failed (exit " + std::to_string(rc) + ")";
    return std::nullopt;
  }
  return j[0];
}

}  // namespace ttft::testing

#endif  // TTFT_REPORT_MARKDOWN_IT_TESTING_H_
