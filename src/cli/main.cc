// The `ttft` command-line program: parses the command line, runs one sub-command,
// and maps its Status to an exit code (ttft::ExitCodeFor) and a one-line message.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>

#include "cli/commands.h"
#include "ttft/core.h"

namespace ttft::cli {
bool StderrIsTty() { return isatty(STDERR_FILENO) == 1; }
bool StdoutIsTty() { return isatty(STDOUT_FILENO) == 1; }
Status ExitViolation() { return Status(StatusCode::kDataError, "\x01violations"); }
bool IsExitViolation(const Status& st) {
  return st.code() == StatusCode::kDataError && st.message() == "\x01violations";
}
}  // namespace ttft::cli

namespace {

int Main(int argc, char** argv) {
  CLI::App app{
      "ttft: find out why an LLM-serving fleet's tail time-to-first-token regressed, prove it\n"
      "with numbers, and keep it from regressing again.",
      "ttft"};
  app.set_version_flag("--version", std::string("ttft ") + TTFT_VERSION);
  app.require_subcommand(1);

  std::map<CLI::App*, ttft::cli::Runner> runners;
  auto add = [&](const char* name, const char* help, auto reg) {
    CLI::App* sub = app.add_subcommand(name, help);
    runners[sub] = reg(*sub);
  };
  add("drill", "Run the seed incident drill: symptom table before and after a bad deploy",
      ttft::cli::RegisterDrill);
  add("simulate", "Simulate a serving fleet from a scenario file; write spans and metrics",
      ttft::cli::RegisterSimulate);
  add("cost", "Print the cost model's prefill and decode times for a configuration",
      ttft::cli::RegisterCost);
  add("stats", "Tail statistics of spans or metrics, per group", ttft::cli::RegisterStats);
  add("diagnose", "Decompose a TTFT regression, rank its causes with evidence, and report it",
      ttft::cli::RegisterDiagnose);
  add("validate", "Measured vs simulated TTFT/E2E/decode for a table of real vLLM runs",
      ttft::cli::RegisterValidate);
  std::map<CLI::App*, ttft::cli::VerdictRunner> verdict_runners;
  {
    CLI::App* sub = app.add_subcommand(
        "gate", "Judge a canary against its baseline (exit 0 Pass, 1 Fail, 3 Inconclusive)");
    verdict_runners[sub] = ttft::cli::RegisterGate(*sub);
  }
  add("tokenize", "Token ids (or their count) of standard input, from a tokenizer.json",
      ttft::cli::RegisterTokenize);
  add("rules", "Prometheus recording and alerting rules and a Grafana dashboard for tail TTFT",
      ttft::cli::RegisterRules);
  add("lint", "Lint a chat template or a prompt corpus for prefix-cache breakers",
      ttft::cli::RegisterLint);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  for (auto& [sub, run] : verdict_runners) {
    if (sub->parsed()) {
      ttft::Result<int> rc = run();
      if (!rc.ok()) {
        std::fprintf(stderr, "ttft %s: %s\n", sub->get_name().c_str(),
                     rc.status().message().c_str());
        return ttft::ExitCodeFor(rc.status());
      }
      return *rc;
    }
  }
  for (auto& [sub, run] : runners) {
    if (sub->parsed()) {
      ttft::Status st = run();
      if (ttft::cli::IsExitViolation(st)) return 1;
      if (!st.ok()) {
        std::fprintf(stderr, "ttft %s: %s\n", sub->get_name().c_str(), st.message().c_str());
        return ttft::ExitCodeFor(st);
      }
      return 0;
    }
  }
  return 2;
}

}  // namespace

// The library reports errors as values; an exception reaching here is a bug (or an
// allocation failure): say so on one line and exit 70 (EX_SOFTWARE), never abort.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ttft: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "ttft: internal error: unknown exception\n");
  }
  return 70;
}
