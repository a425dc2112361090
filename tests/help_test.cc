// Integration tests: every command's --help shows examples and exit codes, an unknown
// command is named, and an error names its command once (issue 15).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "run_ttft.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ttft::testing::RunResult;
using ttft::testing::RunTtft;

TEST(Help, EveryCommandHasExamplesAndExitCodes) {
  for (const char* sub : {"drill", "simulate", "cost", "stats", "diagnose", "validate", "gate",
                          "tokenize", "rules", "lint"}) {
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

}  // namespace
