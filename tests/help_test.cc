// Integration tests: every command's --help shows examples and exit codes (and each code
// means what the table says), an unknown command is named, and an error names its command once and
// shows the control characters of what it quotes as escapes (issue 15).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "run_ttft.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ttft::testing::RunResult;
using ttft::testing::RunTtft;
using ttft::testing::TempDir;
namespace fs = std::filesystem;

TEST(Help, EveryCommandHasExamplesAndExitCodes) {
  for (const char* sub : {"drill", "simulate", "cost", "stats", "diagnose", "validate", "calibrate",
                          "gate", "tokenize", "rules", "lint"}) {
    const RunResult h = RunTtft(std::string(sub) + " --help");
    EXPECT_EQ(h.exit_code, 0) << sub << h.err;
    EXPECT_THAT(h.out, HasSubstr("Usage: ttft " + std::string(sub))) << sub;
    EXPECT_THAT(h.out, HasSubstr("\nExamples:\n  ttft " + std::string(sub))) << sub << h.out;
    EXPECT_THAT(h.out, HasSubstr("\nExit codes:\n  0   ")) << sub << h.out;
  }
  EXPECT_THAT(RunTtft("gate --help").out, HasSubstr("  3   Inconclusive"));
  EXPECT_THAT(RunTtft("lint --help").out, HasSubstr("  1   the lint found violations"));
  const RunResult top = RunTtft("--help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.out, HasSubstr("Exit codes:"));
  EXPECT_THAT(top.out, HasSubstr("  65  a malformed record that may not be skipped"));
}

// What the exit-code table says of 2, 65 and 74, each with a command that meets it.
TEST(Help, EachExitCodeMeansWhatTheTableSays) {
  const fs::path d = TempDir("exit_codes");
  ASSERT_EQ(RunTtft("simulate seed-drill --quiet --out " + (d / "sim").string()).exit_code, 0);
  std::ifstream in(d / "sim" / "spans.jsonl");
  std::ofstream ok(d / "ok.jsonl"), bad(d / "bad.jsonl");
  std::string line;
  for (int i = 0; i < 50 && std::getline(in, line); ++i) {
    ok << line << "\n";
    bad << (i == 20 ? std::string("{\"broken") : line) << "\n";
  }
  ok.close();
  bad.close();
  std::ofstream(d / "empty.jsonl").close();
  const std::string p = d.string() + "/";
  // 2: a missing file, a file with nothing usable; a bad record alone is skipped (0).
  EXPECT_EQ(RunTtft("stats " + p + "nope.jsonl").exit_code, 2);
  EXPECT_EQ(RunTtft("stats " + p + "empty.jsonl").exit_code, 2);
  const RunResult skipped = RunTtft("stats " + p + "bad.jsonl");
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_THAT(skipped.err, HasSubstr("1 record skipped: 1 malformed json"));
  // 65: the same record under --strict, and one in a scenario's trace file.
  const RunResult strict = RunTtft("stats --strict " + p + "bad.jsonl");
  EXPECT_EQ(strict.exit_code, 65) << strict.err;
  EXPECT_THAT(strict.err, HasSubstr("bad.jsonl:21: malformed JSON"));
  std::ofstream(d / "trace.jsonl")
      << R"({"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]})"
      << "\n{\"timestamp\": \"x\"}\n";
  std::ofstream(d / "trace.yaml")
      << "name: t\nduration_s: 10\ndefaults: {model: llama-3.1-8b, gpu: h100-sxm, tp: 1}\n"
      << "replicas: [{name: r, count: 1, region: r}]\n"
      << "traces: [{format: mooncake, path: trace.jsonl, tenant: mc}]\n";
  const RunResult trace =
      RunTtft("simulate " + p + "trace.yaml --quiet --out " + (d / "trace_out").string());
  EXPECT_EQ(trace.exit_code, 65) << trace.err;
  EXPECT_THAT(trace.err, HasSubstr("trace.jsonl:2: timestamp"));
  // 74: a write that fails.
  const RunResult full = RunTtft("stats " + p + "ok.jsonl --format json > /dev/full");
  EXPECT_EQ(full.exit_code, 74) << full.err;
  EXPECT_THAT(full.err, HasSubstr("write failed"));
  fs::remove_all(d);
}

TEST(Help, AnUnknownCommandIsNamed) {
  const RunResult r = RunTtft("bogus --flag");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'bogus'"));
  EXPECT_THAT(r.err, HasSubstr("diagnose"));
  EXPECT_THAT(r.err, Not(HasSubstr("subcommand is required")));
  // No command at all still asks for one.
  EXPECT_EQ(RunTtft("").exit_code, 2);
}

TEST(Help, AnErrorNamesItsCommandOnce) {
  const RunResult r = RunTtft("stats --format x /dev/null");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ttft stats: --format x: expected text, json or csv\n");
  const RunResult d = RunTtft("diagnose /no/such/file --change-at 10");
  EXPECT_EQ(d.exit_code, 2) << d.err;
  EXPECT_EQ(d.err.rfind("ttft diagnose: ", 0), 0u) << d.err;
  EXPECT_THAT(d.err, Not(HasSubstr("diagnose: diagnose:")));
}

// A file name (or any argument) with an escape sequence reaches the terminal as
// visible text, never as the raw ESC byte: a command's error (main() prints its Status),
// an unknown command, and CLI11's parse errors.
TEST(Help, AnErrorEscapesTheControlCharactersItQuotes) {
  namespace fs = std::filesystem;
  const std::string red = "\x1b[31m";
  const fs::path dir = fs::temp_directory_path() / ("ttft_help_esc_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path bad = dir / ("spans" + red + ".jsonl");
  std::ofstream(bad) << "{\"x\":\n";  // JSON cut short: nothing usable
  for (const std::string& args :
       {"stats '" + bad.string() + "'", "diagnose '" + bad.string() + "' --change-at 10",
        "stats '" + (dir / ("missing" + red + ".jsonl")).string() + "'", "'bogus" + red + "'",
        "stats --format 'x" + red + "' /dev/null", "stats --no-such-flag" + red + " /dev/null"}) {
    SCOPED_TRACE(args);
    const RunResult r = RunTtft(args);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  }
  const RunResult r = RunTtft("stats '" + bad.string() + "'");
  EXPECT_THAT(r.err, HasSubstr("spans\\x1b[31m.jsonl")) << r.err;
  // A file read with some records skipped: the summary of what was skipped, on standard
  // error, quotes the file name too.
  const fs::path some = dir / ("some" + red + ".jsonl");
  std::ofstream(some) << R"({"request_id":"a","arrival_s":1.5,"ttft_s":0.31,"status":"ok"})"
                      << "\nnot json\n";
  const RunResult s = RunTtft("stats '" + some.string() + "'");
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_THAT(s.err, HasSubstr("1 record skipped")) << s.err;
  EXPECT_THAT(s.err, HasSubstr("some\\x1b[31m.jsonl:2: ")) << s.err;
  EXPECT_EQ(s.err.find('\x1b'), std::string::npos) << s.err;
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
