// `ttft stats`: placeholder until the telemetry readers land (issue 3).
#include "cli/commands.h"

namespace ttft::cli {
Runner RegisterStats(CLI::App& app) {
  return [] { return Status::Invalid("stats is not implemented yet"); };
  (void)app;
}
}  // namespace ttft::cli
