// Sub-commands of the `ttft` program. Each registers its flags on a CLI11 sub-app
// and returns the function that runs it. A command returns a Status; only main()
// turns it into an exit code and a one-line message on standard error.
#ifndef TTFT_CLI_COMMANDS_H_
#define TTFT_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "ttft/core.h"
#include "ttft/dataset.h"
#include "ttft/scenario.h"

namespace ttft::cli {

using Runner = std::function<Status()>;

Runner RegisterSimulate(CLI::App& app);
Runner RegisterDrill(CLI::App& app);
Runner RegisterCost(CLI::App& app);
Runner RegisterStats(CLI::App& app);
Runner RegisterDiagnose(CLI::App& app);
Runner RegisterValidate(CLI::App& app);
Runner RegisterCalibrate(CLI::App& app);
Runner RegisterTokenize(CLI::App& app);
Runner RegisterRules(CLI::App& app);
Runner RegisterLint(CLI::App& app);

// A command whose success has an exit code of its own (`gate`: 0 Pass, 1 Fail,
// 3 Inconclusive); an error Status still maps through ExitCodeFor.
using VerdictRunner = std::function<Result<int>()>;
VerdictRunner RegisterGate(CLI::App& app);

// The reader flags every command that reads telemetry takes (`stats`, `diagnose`):
// --input-format, --strict, --columns.
struct ReaderFlags {
  std::string input_format = "auto";
  bool strict = false;
  std::string columns;
};
void AddReaderFlags(CLI::App& app, ReaderFlags& flags);
Result<LoadOptions> ToLoadOptions(const ReaderFlags& flags);

// Prints the read report's summary ("N records skipped: ...; first: f:12: ...") on
// standard error when anything was skipped or doubted: never lost silently. Control
// characters (in file names and data) are shown as escapes (escape::Terminal).
void PrintReadSummary(const ReadReport& report);

// Writes `text` to the file `out`, or to standard output when `out` is empty; a failed
// write (a full disk, a closed pipe) is an IoError.
Status WriteOutput(const std::string& text, const std::string& out);

// Range checks of numeric flags whose messages state the rule ("--duration: must be
// > 0, got -5"), not CLI11's numeric limits. NaN fails both.
inline CLI::Validator Positive() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(in, v) || !(v > 0)) return "must be > 0, got " + in;
        return {};
      },
      "> 0");
}
inline CLI::Validator NonNegative() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(in, v) || !(v >= 0)) return "must be >= 0, got " + in;
        return {};
      },
      ">= 0");
}

// A scenario file, or else a built-in scenario's name (cmd_simulate.cc).
Result<Scenario> LoadScenarioArg(const std::string& arg);

// Progress of a simulation on standard error when it is a terminal and not `quiet`,
// for runs longer than a second; EndProgress erases the line.
std::function<void(double sim_s, double fraction)> ProgressPrinter(const std::string& name,
                                                                   bool quiet);
void EndProgress();

// A command that ran to completion but found violations (`ttft lint`) returns
// ExitViolation(): main() then exits 1 instead of 0, with no error message.
Status ExitViolation();
bool IsExitViolation(const Status& st);

// True when standard error is a terminal (progress and colour go there only then).
bool StderrIsTty();
bool StdoutIsTty();

}  // namespace ttft::cli

#endif  // TTFT_CLI_COMMANDS_H_
