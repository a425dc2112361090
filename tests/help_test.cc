// Integration tests: every command's --help shows examples and exit codes, an unknown
// command is named, and an error names its command once and shows the control
// characters of what it quotes as escapes (issue 15).
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
  EXPECT_THAT(top.out, HasSubstr("  65  bad input data"));
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
