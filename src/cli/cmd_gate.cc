// `ttft gate --baseline INPUT... --canary INPUT... [--config gate.yaml]
//  [--format text|json|junit|github|markdown] [--from T --to T]`
// `ttft gate INPUT... --baseline-selector deploy=v1 --canary-selector deploy=v2`
// `ttft gate --prometheus URL --from T [--to T] --baseline-selector L=V --canary-selector L=V`
// Repeated looks: `--every 60s --for 30m` (re-reads the inputs or the server at each
// look) or `--state FILE [--final]` (one look per run).
//
// The canary gate (docs/gate.md; ttft/gate.h): flags to a GateSource and
// GateRunOptions, RunGate, the rendering. Exit 0 Pass, 1 Fail, 3 Inconclusive, 2 usage
// error. A Prometheus that cannot be reached or answers garbage, and a missing series,
// are Inconclusive with the reason, never Pass.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "cli/commands.h"
#include "ttft/format.h"
#include "ttft/gate.h"

namespace ttft::cli {
namespace {

struct GateFlags {
  std::vector<std::string> inputs, baseline, canary;
  std::string baseline_selector, canary_selector;
  std::string prometheus;
  std::string from, to;
  double step_s = 15;
  double timeout_s = 5;
  std::string config;
  std::string format = "text";
  std::string every, for_duration;
  std::string state;
  bool final_look = false;
  ReaderFlags reader;
};

Result<int> Run(const GateFlags& f) {
  // Usage checks first: every one is exit 2.
  GateSource source;
  source.inputs = f.inputs;
  source.baseline = f.baseline;
  source.canary = f.canary;
  source.prometheus_url = f.prometheus;
  source.step_s = f.step_s;
  source.client.timeout_s = f.timeout_s;
  source.baseline_selector = f.baseline_selector;
  source.canary_selector = f.canary_selector;
  source.on_read = PrintReadSummary;
  TTFT_RETURN_IF_ERROR(CheckGateSource(source));
  GateRunOptions run;
  if (!f.config.empty()) {
    TTFT_ASSIGN_OR_RETURN(run.config, LoadGateConfig(f.config));
  } else {
    run.config = DefaultGateConfig();
  }
  TTFT_ASSIGN_OR_RETURN(source.load, ToLoadOptions(f.reader));
  source.load.require_snapshot_times = false;
  if (!f.from.empty()) {
    TTFT_ASSIGN_OR_RETURN(run.from_s, ParseTime(f.from));
  }
  if (!f.to.empty()) {
    TTFT_ASSIGN_OR_RETURN(run.to_s, ParseTime(f.to));
  }
  const bool repeated = !f.every.empty() || !f.for_duration.empty();
  if (repeated && (f.every.empty() || f.for_duration.empty())) {
    return Status::Invalid("--every and --for go together");
  }
  if (repeated && !f.state.empty()) {
    return Status::Invalid("--every/--for loop in one process; --state is for one look per run");
  }
  if (f.final_look && f.state.empty()) return Status::Invalid("--final needs --state");
  run.live = !f.prometheus.empty();
  if (run.live) {
    if (!std::isfinite(run.from_s)) return Status::Invalid("--prometheus needs --from");
    if (!std::isfinite(run.to_s) && !repeated && f.state.empty()) {
      return Status::Invalid("--prometheus needs --to (or --every/--for, which look up to now)");
    }
  }
  const std::string format = f.format;
  if (format != "text" && format != "json" && format != "junit" && format != "github" &&
      format != "markdown") {
    return Status::Invalid(
        fmt::format("--format {}: expected text, json, junit, github or markdown", format));
  }
  if (repeated) {
    TTFT_ASSIGN_OR_RETURN(run.every_s, ParseGateDuration(f.every, "--every"));
    TTFT_ASSIGN_OR_RETURN(run.for_s, ParseGateDuration(f.for_duration, "--for"));
    if (run.every_s > run.for_s) return Status::Invalid("--every is longer than --for");
  }
  run.state_path = f.state;
  run.final_look = f.final_look;

  auto load = [&source](double from_s, double to_s, double increase_from_s) {
    return LoadGateArms(source, from_s, to_s, increase_from_s);
  };
  auto on_look = [](const std::string& line) {
    // A look's line quotes labels and reasons from the data: escaped for the terminal.
    std::fprintf(stderr, "ttft gate: %s\n", escape::Terminal(line).c_str());
  };
  TTFT_ASSIGN_OR_RETURN(GateResult r, RunGate(run, load, SystemGateClock(), on_look));
  TTFT_ASSIGN_OR_RETURN(std::string text, RenderGate(r, format));
  TTFT_RETURN_IF_ERROR(WriteOutput(text, ""));
  if (r.verdict == GateVerdict::kInconclusive && format != "text") {
    // The text report says why; the machine formats hold it in a field a person at a
    // terminal does not see (a Prometheus that is down gave exit 3 and nothing else).
    std::fprintf(stderr, "ttft gate: inconclusive: %s\n", escape::Terminal(r.reason).c_str());
  }
  return GateExitCode(r.verdict);
}

}  // namespace

VerdictRunner RegisterGate(CLI::App& app) {
  auto flags = std::make_shared<GateFlags>();
  CLI::App* cmd = &app;
  cmd->add_option("inputs", flags->inputs,
                  "one input set (spans, scrapes, simulate folders) split by the selectors");
  cmd->add_option("--baseline", flags->baseline, "the baseline's inputs")->expected(1, -1);
  cmd->add_option("--canary", flags->canary, "the canary's inputs")->expected(1, -1);
  cmd->add_option("--baseline-selector", flags->baseline_selector,
                  "label=value[,label=value]: the baseline's spans (tenant, replica, region, "
                  "template, model, deploy) or series");
  cmd->add_option("--canary-selector", flags->canary_selector, "the same for the canary");
  cmd->add_option("--prometheus", flags->prometheus, "a live Prometheus server (http://HOST:PORT)");
  cmd->add_option("--from", flags->from, "window start (seconds or RFC 3339)");
  cmd->add_option("--to", flags->to,
                  "window end (default: the data's end; now for --prometheus "
                  "with --every or --state)");
  cmd->add_option("--step", flags->step_s, "with --prometheus: longest query_range step (s)")
      ->capture_default_str();
  cmd->add_option("--timeout", flags->timeout_s,
                  "with --prometheus: seconds per attempt (3 attempts with back-off)")
      ->capture_default_str();
  cmd->add_option("--config", flags->config, "gate criteria (YAML, docs/gate.md)");
  cmd->add_option("--format", flags->format, "text, json, junit, github or markdown")
      ->capture_default_str();
  cmd->add_option("--every", flags->every, "look again every DURATION (e.g. 60s), with --for");
  cmd->add_option("--for", flags->for_duration, "stop looking after DURATION (e.g. 30m)");
  cmd->add_option("--state", flags->state,
                  "sequential state file: one look per run, always-valid over any number of runs");
  cmd->add_flag("--final", flags->final_look,
                "with --state: the rollout's last look (Pass possible)");
  AddReaderFlags(*cmd, flags->reader);
  return [flags] { return Run(*flags); };
}

}  // namespace ttft::cli
