// `ttft gate --baseline INPUT... --canary INPUT... [--config gate.yaml]
//  [--format text|json|junit|github|markdown] [--from T --to T]`
// `ttft gate INPUT... --baseline-selector deploy=v1 --canary-selector deploy=v2`
// `ttft gate --prometheus URL --from T [--to T] --baseline-selector L=V --canary-selector L=V`
// Repeated looks: `--every 60s --for 30m` (re-reads the inputs or the server at each
// look) or `--state FILE [--final]` (one look per run).
//
// The canary gate (docs/gate.md; ttft/gate.h). Exit 0 Pass, 1 Fail, 3 Inconclusive,
// 2 usage error. A Prometheus that cannot be reached or answers garbage, and a
// missing series, are Inconclusive with the reason, never Pass.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "ttft/gate.h"

namespace ttft::cli {
namespace {

using Match = std::vector<std::pair<std::string, std::string>>;

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

// "90", "90s", "5m", "1h" -> seconds.
Result<double> ParseDuration(const std::string& text, std::string_view flag) {
  double scale = 1;
  std::string num = text;
  if (!num.empty() && (num.back() == 's' || num.back() == 'm' || num.back() == 'h')) {
    scale = num.back() == 'm' ? 60 : num.back() == 'h' ? 3600 : 1;
    num.pop_back();
  }
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (num.empty() || end != num.c_str() + num.size() || !(v > 0) || !std::isfinite(v)) {
    return Status::Invalid(
        fmt::format("{} '{}': expected a positive duration like 60s, 5m, 1h", flag, text));
  }
  return v * scale;
}

double NowS() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// An Inconclusive result for data that could not be obtained.
GateResult Inconclusive(std::string reason) {
  GateResult r;
  r.verdict = GateVerdict::kInconclusive;
  r.reason = std::move(reason);
  return r;
}

struct Arms {
  GateArm baseline, canary;
  std::optional<GateArm> canary_increase;  // metrics under repeated looks
  std::optional<std::string> unavailable;  // why the data could not be had
};

Result<GateArm> ArmOf(const Dataset& data, const Match& match, double from_s, double to_s) {
  if (data.has_spans) {
    std::vector<uint32_t> rows;
    if (match.empty()) {
      for (uint32_t r = 0; r < data.spans.size(); ++r) rows.push_back(r);
    } else {
      TTFT_ASSIGN_OR_RETURN(rows, SelectRows(data.spans, match));
    }
    std::vector<uint32_t> kept;
    for (uint32_t r : rows) {
      double a = data.spans.arrival_s()[r];
      if (a >= from_s && a < to_s) kept.push_back(r);
    }
    return ArmFromSpans(data.spans, kept);
  }
  std::vector<MetricSnapshot> snaps = data.snapshots;
  if (std::isfinite(from_s) || std::isfinite(to_s)) {
    snaps = SnapshotsCovering(data.snapshots, std::isfinite(from_s) ? from_s : -1e300,
                              std::isfinite(to_s) ? to_s : 1e300);
  }
  return ArmFromMetrics(snaps, match);
}

// The baseline arm from `bdata` and the canary arm from `cdata` (the same dataset when
// one input is split by selectors). A selection matching nothing makes the arms
// unavailable (an Inconclusive verdict), not an error.
Result<Arms> ArmsOf(const Dataset& bdata, const Dataset& cdata, const Match& bsel,
                    const Match& csel, double from_s, double to_s, double increase_from_s) {
  Arms arms;
  Result<GateArm> b = ArmOf(bdata, bsel, from_s, to_s);
  Result<GateArm> c = ArmOf(cdata, csel, from_s, to_s);
  if (b.status().code() == StatusCode::kNotFound || c.status().code() == StatusCode::kNotFound) {
    arms.unavailable =
        !b.ok() ? "baseline: " + b.status().message() : "canary: " + c.status().message();
    return arms;
  }
  TTFT_RETURN_IF_ERROR(b.status());
  TTFT_RETURN_IF_ERROR(c.status());
  arms.baseline = std::move(*b);
  arms.canary = std::move(*c);
  if (!cdata.has_spans && std::isfinite(increase_from_s)) {
    Result<GateArm> inc = ArmOf(cdata, csel, increase_from_s, to_s);
    if (inc.ok()) arms.canary_increase = std::move(*inc);
  }
  return arms;
}

Result<Arms> LoadArms(const GateFlags& f, const LoadOptions& load, const Match& bsel,
                      const Match& csel, double from_s, double to_s, double increase_from_s) {
  Arms arms;
  if (!f.prometheus.empty()) {
    Dataset data;
    PromClientOptions client;
    client.timeout_s = f.timeout_s;
    Status st = LoadPrometheus(f.prometheus, "", from_s, to_s, f.step_s, client, data);
    if (!st.ok()) {
      arms.unavailable = "Prometheus " + f.prometheus + ": " + st.message();
      return arms;
    }
    FinishLoading(data);
    Result<GateArm> b = ArmFromMetrics(data.snapshots, bsel);
    Result<GateArm> c = ArmFromMetrics(data.snapshots, csel);
    if (!b.ok() || !c.ok()) {
      arms.unavailable = "baseline: " + (b.ok() ? std::string("ok") : b.status().message()) +
                         "; canary: " + (c.ok() ? std::string("ok") : c.status().message());
      return arms;
    }
    arms.baseline = std::move(*b);
    arms.canary = std::move(*c);
    if (std::isfinite(increase_from_s)) {
      Result<GateArm> inc =
          ArmFromMetrics(SnapshotsCovering(data.snapshots, increase_from_s, to_s), csel);
      if (inc.ok()) arms.canary_increase = std::move(*inc);
    }
    return arms;
  }
  if (!f.inputs.empty()) {
    Dataset data;
    TTFT_RETURN_IF_ERROR(LoadDataset(f.inputs, load, data));
    PrintReadSummary(data.report);
    if (!data.has_spans && data.snapshots.size() < 2) {
      return Status::Invalid("the inputs hold neither spans nor two or more scrapes");
    }
    return ArmsOf(data, data, bsel, csel, from_s, to_s, increase_from_s);
  }
  Dataset bdata, cdata;
  TTFT_RETURN_IF_ERROR(LoadDataset(f.baseline, load, bdata));
  TTFT_RETURN_IF_ERROR(LoadDataset(f.canary, load, cdata));
  PrintReadSummary(bdata.report);
  PrintReadSummary(cdata.report);
  if (bdata.has_spans != cdata.has_spans) {
    return Status::Invalid(
        "--baseline and --canary must both be spans or both be metrics (their statistics are "
        "not comparable)");
  }
  return ArmsOf(bdata, cdata, bsel, csel, from_s, to_s, increase_from_s);
}

Result<SequentialGate> ReadState(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return SequentialGate{};  // the first look
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Invalid(fmt::format("{}: not JSON", path));
  return SequentialGate::FromJson(j, path);
}

Status WriteState(const std::string& path, const SequentialGate& state) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << state.ToJson().dump(2) << "\n";
    if (!out) return Status::IoError(fmt::format("{}: cannot write the gate state", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IoError(fmt::format("{}: cannot replace the gate state", path));
  }
  return Status::Ok();
}

Result<int> Run(const GateFlags& f) {
  // Usage checks first: every one is exit 2.
  const bool two_sets = !f.baseline.empty() || !f.canary.empty();
  if (two_sets && (f.baseline.empty() || f.canary.empty())) {
    return Status::Invalid("give both --baseline and --canary inputs");
  }
  if (two_sets && (!f.inputs.empty() || !f.prometheus.empty())) {
    return Status::Invalid("--baseline/--canary replace the positional inputs and --prometheus");
  }
  if (!two_sets && (f.baseline_selector.empty() || f.canary_selector.empty())) {
    return Status::Invalid(
        "give --baseline INPUT... --canary INPUT..., or inputs (or --prometheus) with "
        "--baseline-selector and --canary-selector");
  }
  if (!two_sets && f.inputs.empty() && f.prometheus.empty()) {
    return Status::Invalid("no inputs: give files or --prometheus URL");
  }
  if (!f.inputs.empty() && !f.prometheus.empty()) {
    return Status::Invalid("give either input files or --prometheus, not both");
  }
  if (!f.prometheus.empty() && f.prometheus.rfind("http://", 0) != 0) {
    return Status::Invalid(fmt::format("--prometheus {}: expected http://HOST:PORT", f.prometheus));
  }
  if (!(f.timeout_s > 0 && f.timeout_s <= 300)) {
    return Status::Invalid("--timeout: expected seconds in (0, 300]");
  }
  if (!(f.step_s > 0)) return Status::Invalid("--step: expected seconds > 0");
  Match bsel, csel;
  if (!f.baseline_selector.empty()) {
    TTFT_ASSIGN_OR_RETURN(bsel, ParseSelector(f.baseline_selector, "--baseline-selector"));
  }
  if (!f.canary_selector.empty()) {
    TTFT_ASSIGN_OR_RETURN(csel, ParseSelector(f.canary_selector, "--canary-selector"));
  }
  if (!two_sets && bsel == csel) {
    return Status::Invalid("--baseline-selector and --canary-selector select the same data");
  }
  GateConfig config = DefaultGateConfig();
  if (!f.config.empty()) {
    TTFT_ASSIGN_OR_RETURN(config, LoadGateConfig(f.config));
  }
  TTFT_ASSIGN_OR_RETURN(LoadOptions load, ToLoadOptions(f.reader));
  load.require_snapshot_times = false;
  double from_s = -INFINITY, to_s = INFINITY;
  if (!f.from.empty()) {
    TTFT_ASSIGN_OR_RETURN(from_s, ParseTime(f.from));
  }
  if (!f.to.empty()) {
    TTFT_ASSIGN_OR_RETURN(to_s, ParseTime(f.to));
  }
  const bool repeated = !f.every.empty() || !f.for_duration.empty();
  if (repeated && (f.every.empty() || f.for_duration.empty())) {
    return Status::Invalid("--every and --for go together");
  }
  if (repeated && !f.state.empty()) {
    return Status::Invalid("--every/--for loop in one process; --state is for one look per run");
  }
  if (f.final_look && f.state.empty()) return Status::Invalid("--final needs --state");
  if (!f.prometheus.empty()) {
    if (!std::isfinite(from_s)) return Status::Invalid("--prometheus needs --from");
    if (!std::isfinite(to_s) && !repeated && f.state.empty()) {
      return Status::Invalid("--prometheus needs --to (or --every/--for, which look up to now)");
    }
  }
  const std::string format = f.format;
  if (format != "text" && format != "json" && format != "junit" && format != "github" &&
      format != "markdown") {
    return Status::Invalid(
        fmt::format("--format {}: expected text, json, junit, github or markdown", format));
  }

  auto check_models = [](const Arms& arms) -> Status {
    if (!arms.baseline.model.empty() && !arms.canary.model.empty() &&
        arms.baseline.model != arms.canary.model) {
      return Status::Invalid(fmt::format(
          "the baseline serves model '{}' and the canary '{}': a canary must serve the same "
          "model as its baseline",
          arms.baseline.model, arms.canary.model));
    }
    return Status::Ok();
  };
  auto emit = [&](const GateResult& r) -> Result<int> {
    TTFT_ASSIGN_OR_RETURN(std::string text, RenderGate(r, format));
    TTFT_RETURN_IF_ERROR(WriteOutput(text, ""));
    return GateExitCode(r.verdict);
  };
  const bool live = !f.prometheus.empty();
  auto window_end = [&]() { return live && !std::isfinite(to_s) ? NowS() : to_s; };

  if (!repeated && f.state.empty()) {
    TTFT_ASSIGN_OR_RETURN(Arms arms, LoadArms(f, load, bsel, csel, from_s, window_end(), NAN));
    if (arms.unavailable) return emit(Inconclusive(*arms.unavailable));
    TTFT_RETURN_IF_ERROR(check_models(arms));
    return emit(JudgeGate(config, arms.baseline, arms.canary));
  }
  if (!f.state.empty()) {
    TTFT_ASSIGN_OR_RETURN(SequentialGate state, ReadState(f.state));
    const double end = window_end();
    const double inc_from = state.looks > 0 ? state.last_canary_arrival_s : from_s;
    TTFT_ASSIGN_OR_RETURN(Arms arms, LoadArms(f, load, bsel, csel, from_s, end, inc_from));
    if (arms.unavailable) return emit(Inconclusive(*arms.unavailable));
    TTFT_RETURN_IF_ERROR(check_models(arms));
    const bool metrics = arms.canary.from_metrics;
    GateResult r = LookSequential(config, arms.baseline, arms.canary,
                                  arms.canary_increase ? &*arms.canary_increase : nullptr,
                                  f.final_look, state);
    if (metrics && !arms.canary_increase && state.looks > 1) {
      return Status::Invalid("metrics under --state need a time range for each look (--to)");
    }
    if (metrics) state.last_canary_arrival_s = end;
    TTFT_RETURN_IF_ERROR(WriteState(f.state, state));
    return emit(r);
  }
  // --every/--for: bounded by --for (plus one look's duration).
  TTFT_ASSIGN_OR_RETURN(double every_s, ParseDuration(f.every, "--every"));
  TTFT_ASSIGN_OR_RETURN(double for_s, ParseDuration(f.for_duration, "--for"));
  if (every_s > for_s) return Status::Invalid("--every is longer than --for");
  SequentialGate state;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(for_s);
  double inc_from = from_s;
  GateResult r = Inconclusive("no look was made");
  for (int look = 0;; ++look) {
    const auto next = start + std::chrono::duration<double>(every_s * (look + 1));
    const bool final_look = next > deadline;
    const double end = window_end();
    TTFT_ASSIGN_OR_RETURN(Arms arms, LoadArms(f, load, bsel, csel, from_s, end, inc_from));
    if (arms.unavailable) {
      // One failed look is not a verdict: note it and look again (bounded by --for).
      r = Inconclusive(*arms.unavailable);
      std::fprintf(stderr, "ttft gate: look %d: %s\n", look + 1, r.reason.c_str());
    } else {
      TTFT_RETURN_IF_ERROR(check_models(arms));
      r = LookSequential(config, arms.baseline, arms.canary,
                         arms.canary_increase ? &*arms.canary_increase : nullptr, final_look,
                         state);
      if (arms.canary.from_metrics) state.last_canary_arrival_s = end;
      inc_from = end;
      std::fprintf(stderr, "ttft gate: look %d: %s (%s)\n", look + 1,
                   std::string(ToString(r.verdict)).c_str(), r.reason.c_str());
      if (r.verdict == GateVerdict::kFail) break;
    }
    if (final_look) break;
    std::this_thread::sleep_until(next);
  }
  return emit(r);
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
