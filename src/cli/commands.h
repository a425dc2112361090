// Sub-commands of the `ttft` program. Each registers its flags on a CLI11 sub-app
// and returns the function that runs it. A command returns a Status; only main()
// turns it into an exit code and a one-line message on standard error.
#ifndef TTFT_CLI_COMMANDS_H_
#define TTFT_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

#include <functional>

#include "ttft/core.h"

namespace ttft::cli {

using Runner = std::function<Status()>;

Runner RegisterSimulate(CLI::App& app);
Runner RegisterDrill(CLI::App& app);
Runner RegisterCost(CLI::App& app);
Runner RegisterStats(CLI::App& app);
Runner RegisterDiagnose(CLI::App& app);
Runner RegisterValidate(CLI::App& app);
Runner RegisterTokenize(CLI::App& app);

// True when standard error is a terminal (progress and colour go there only then).
bool StderrIsTty();
bool StdoutIsTty();

}  // namespace ttft::cli

#endif  // TTFT_CLI_COMMANDS_H_
