// Sub-commands of the `ttft` program. Each registers its flags on a CLI11 sub-app
// and returns the function that runs it. A command returns a Status; only main()
// turns it into an exit code and a one-line message on standard error.
#ifndef TTFT_CLI_COMMANDS_H_
#define TTFT_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <system_error>

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
// > 0, got -5"), not CLI11's numeric limits. NaN fails it.
inline CLI::Validator Positive() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(in, v) || !(v > 0)) return "must be > 0, got " + in;
        return {};
      },
      "> 0");
}

// A decimal integer in [min, max], checked on the flag's text before CLI11 converts it:
// CLI11 2.1 converts with strtoll/strtoull base 0, which saturates out-of-range values
// (--min-requests 99999999999999999999 became 2^63 - 1), wraps "-1" into an unsigned flag's
// 18446744073709551615, and reads 0x10 and 010 as hex and octal.
// Message: "--seed: must be an integer in 0..9223372036854775807, got -1".
inline CLI::Validator Integer(int64_t min, uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& in) -> std::string {
        const std::string why =
            "must be an integer in " + std::to_string(min) + ".." + std::to_string(max) + ", got ";
        const char* first = in.data();
        const char* last = in.data() + in.size();
        const bool plus = first != last && *first == '+';
        if (plus) ++first;
        // Decimal digits only: from_chars would take a leading zero as decimal, but CLI11
        // would then read "010" as octal.
        const bool negative = !plus && first != last && *first == '-';
        const char* digits = negative ? first + 1 : first;
        if (digits == last || (*digits == '0' && last - digits > 1)) return why + in;
        bool ok = false;
        if (negative) {
          int64_t v = 0;
          const auto r = std::from_chars(first, last, v);
          ok = r.ec == std::errc() && r.ptr == last && v >= min;
        } else {
          uint64_t v = 0;
          const auto r = std::from_chars(first, last, v);
          ok = r.ec == std::errc() && r.ptr == last && v <= max &&
               (min <= 0 || v >= static_cast<uint64_t>(min));
        }
        if (!ok) return why + in;
        if (plus) in.erase(0, 1);  // strtoull would take it too; the value is plain
        return {};
      },
      "INT in [" + std::to_string(min) + " - " + std::to_string(max) + "]");
}
// Integer() over the whole range of T (the library checks the flag's own range), with
// no range in --help.
template <typename T>
CLI::Validator Integer() {
  return Integer(static_cast<int64_t>(std::numeric_limits<T>::min()),
                 static_cast<uint64_t>(std::numeric_limits<T>::max()))
      .description("");
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
