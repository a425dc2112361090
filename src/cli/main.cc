// The `ttft` command-line program: parses the command line, runs one sub-command,
// and maps its Status to an exit code (ttft::ExitCodeFor) and a one-line message.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>

#include "cli/commands.h"
#include "ttft/core.h"
#include "ttft/format.h"

namespace ttft::cli {
bool StderrIsTty() { return isatty(STDERR_FILENO) == 1; }
bool StdoutIsTty() { return isatty(STDOUT_FILENO) == 1; }
Status ExitViolation() { return Status(StatusCode::kDataError, "\x01violations"); }
bool IsExitViolation(const Status& st) {
  return st.code() == StatusCode::kDataError && st.message() == "\x01violations";
}
}  // namespace ttft::cli

namespace {

// The exit codes of every command (ttft::ExitCodeFor; sysexits.h for 65-74).
constexpr const char* kExitCodes =
    "Exit codes:\n"
    "  0   success\n"
    "  2   bad usage or input: an unknown command or flag, an invalid value, a missing\n"
    "      file, a file with nothing usable in it (bad records are skipped and counted)\n"
    "  65  a malformed record that may not be skipped: under --strict, or in a scenario's\n"
    "      trace file (EX_DATAERR)\n"
    "  69  a service (Prometheus) unavailable (EX_UNAVAILABLE)\n"
    "  70  internal error (EX_SOFTWARE)\n"
    "  74  a read or write failed (EX_IOERR)\n";

// Examples of each command, shown under its --help with the exit codes.
std::string Footer(const std::string& name) {
  static const std::map<std::string, std::string> kExamples = {
      {"drill",
       "  ttft drill                          the seed incident: symptoms, cause, fix\n"
       "  ttft drill --variant no-deploy      the same symptoms with no deploy to blame\n"
       "  ttft drill --format json --out run  JSON, and the run's spans and metrics in run/\n"},
      {"simulate",
       "  ttft simulate scenarios/incidents/load-surge.yaml --out sim\n"
       "  ttft simulate seed-drill --out sim --seed 7 --duration 600\n"},
      {"cost",
       "  ttft cost                                      llama-3.3-70b fp8 on 2 H100s\n"
       "  ttft cost --model llama-3.1-8b --dtype bf16 --tp 1 --format json\n"},
      {"stats",
       "  ttft stats sim/spans.jsonl --by tenant\n"
       "  ttft stats sim/spans.jsonl --by replica --format csv > replicas.csv\n"
       "  ttft stats sim/metrics/*.prom --by replica\n"
       "  ttft stats --prometheus http://localhost:9090 --from 1790960000 --to 1790963600\n"},
      {"diagnose",
       "  ttft diagnose sim                                   a simulate/drill folder\n"
       "  ttft diagnose spans.jsonl --change-at 2026-10-02T17:00:00Z --format markdown\n"
       "  ttft diagnose --baseline before.jsonl --incident after.jsonl --format html > r.html\n"
       "  ttft diagnose metrics/*.prom --change-at 300\n"},
      {"validate",
       "  ttft validate ../shared/data/vllm-h100/calibration.csv --format json\n"
       "  ttft validate ../shared/data/vllm-h100/calibration-7b.csv --calibration 7b.yaml\n"},
      {"calibrate",
       "  ttft calibrate ../shared/data/vllm-h100/calibration-7b.csv --out 7b.yaml\n"
       "  ttft calibrate run1.json run2.json --gpu h100-sxm --tp 2 --out mine.yaml\n"},
      {"gate",
       "  ttft gate --baseline base.jsonl --canary canary.jsonl\n"
       "  ttft gate spans.jsonl --baseline-selector deploy=v1 --canary-selector deploy=v2 "
       "--format markdown\n"
       "  ttft gate --prometheus http://localhost:9090 --baseline-selector replica=a "
       "--canary-selector replica=b --every 60s --for 30m\n"},
      {"tokenize",
       "  ttft tokenize --tokenizer tokenizer.json --count < prompt.txt\n"
       "  echo 'Hello world' | ttft tokenize --tokenizer tokenizer.json\n"},
      {"rules",
       "  ttft rules --out monitoring\n"
       "  ttft rules --engine sglang --selector 'job=\"sglang\"' --slo-ttft-s 0.5 --out "
       "monitoring\n"},
      {"lint",
       "  ttft lint template.jinja --vars vars.yaml\n"
       "  ttft lint --corpus prompts.jsonl --template template.jinja --min-hit-rate 0.5\n"
       "  ttft lint template.jinja --vars vars.yaml --format sarif --output lint.sarif\n"
       "  ttft lint examples/seed/app-v1.jinja --diff examples/seed/app-v2.jinja --vars "
       "examples/seed/vars.yaml --scenario seed-drill --scenario-template app\n"},
  };
  std::string out = "\nExamples:\n";
  const auto it = kExamples.find(name);
  if (it != kExamples.end()) out += it->second;
  out += "\n";
  if (name == "gate") {
    out +=
        "Exit codes:\n"
        "  0   Pass\n"
        "  1   Fail: a critical criterion got worse\n"
        "  3   Inconclusive: too few samples to tell\n"
        "  2, 65, 69, 70, 74   an error, as for every command (ttft --help)\n";
  } else if (name == "lint") {
    std::string codes = kExitCodes;
    out += codes.insert(codes.find("  2 "), "  1   the lint found violations\n");
  } else {
    out += kExitCodes;
  }
  return out;
}

// A message that already names the command ("stats: ...") is printed after
// "ttft stats: " without repeating it.
std::string WithoutPrefix(const std::string& message, const std::string& command) {
  std::string m = message;
  for (const std::string& p : {"ttft " + command + ": ", command + ": "}) {
    while (m.rfind(p, 0) == 0) m.erase(0, p.size());
  }
  return m;
}

// The line main() prints for a failed command. Messages quote file names, flags and
// data: their control characters are shown as escapes (ttft/format.h), so that none
// recolours or retitles the terminal.
void PrintError(const std::string& command, const ttft::Status& st) {
  std::fprintf(stderr, "ttft %s: %s\n", command.c_str(),
               ttft::escape::Terminal(WithoutPrefix(st.message(), command)).c_str());
}

// CLI11's message for a parse error (it quotes the argument it rejects), with the
// error's own text terminal-escaped and CLI11's wording otherwise kept.
std::string FailureMessage(const CLI::App* app, const CLI::Error& e) {
  std::string out = CLI::FailureMessage::simple(app, e);
  const std::string what = e.what();
  if (out.rfind(what, 0) == 0) out = ttft::escape::Terminal(what) + out.substr(what.size());
  return out;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "ttft: find out why an LLM-serving fleet's tail time-to-first-token regressed, prove it\n"
      "with numbers, and keep it from regressing again.",
      "ttft"};
  app.set_version_flag("--version", std::string("ttft ") + TTFT_VERSION);
  app.require_subcommand(1);
  app.failure_message(FailureMessage);

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
  add("calibrate", "Fit the cost model to your own vLLM runs; write a calibration profile",
      ttft::cli::RegisterCalibrate);
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

  {
    std::string codes = kExitCodes;
    codes.insert(codes.find("  2 "),
                 "  1   ttft lint: violations found; ttft gate: Fail (3: Inconclusive)\n");
    app.footer("\nRun `ttft COMMAND --help` for a command's flags and examples.\n\n" + codes);
  }
  for (CLI::App* sub : app.get_subcommands({})) sub->footer(Footer(sub->get_name()));

  // CLI11 reads an unknown first word as a stray positional and says only that a
  // command is required: name the unknown command instead.
  std::string names;
  bool known = false;
  for (CLI::App* sub : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
    known = known || (argc > 1 && sub->get_name() == argv[1]);
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::fprintf(stderr, "ttft: unknown command '%s' (commands: %s); run ttft --help\n",
                 ttft::escape::Terminal(argv[1]).c_str(), names.c_str());
    return 2;
  }
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
        PrintError(sub->get_name(), rc.status());
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
        PrintError(sub->get_name(), st);
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
    std::fprintf(stderr, "ttft: internal error: %s\n", ttft::escape::Terminal(e.what()).c_str());
  } catch (...) {
    std::fprintf(stderr, "ttft: internal error: unknown exception\n");
  }
  return 70;
}
