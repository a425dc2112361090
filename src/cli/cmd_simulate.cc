// `ttft simulate SCENARIO --out DIR`: run a scenario through the library's
// RunScenario (ttft/pipeline.h), which writes spans.jsonl, metrics/*.prom (one
// exposition snapshot per scrape) and summary.json; print a summary.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "cli/commands.h"
#include "ttft/pipeline.h"
#include "ttft/report.h"
#include "ttft/scenario.h"

namespace ttft::cli {

// A path that exists is a scenario file; otherwise a built-in scenario's name.
Result<Scenario> LoadScenarioArg(const std::string& arg) {
  if (std::filesystem::exists(arg)) return LoadScenario(arg);
  auto builtin = BuiltinScenario(arg);
  if (builtin.ok()) return builtin;
  return Status::NotFound(
      fmt::format("{}: no such file, and no built-in scenario of that name", arg));
}

Runner RegisterSimulate(CLI::App& app) {
  struct Opts {
    std::string scenario, out, format = "text", calibration;
    int64_t seed = -1;
    double duration_s = 0;
    bool quiet = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("scenario", o->scenario, "Scenario YAML file (or a built-in scenario's name)")
      ->required();
  app.add_option("--out", o->out, "Output folder (spans.jsonl, metrics/, summary.json)")
      ->required();
  app.add_option("--seed", o->seed, "Override the scenario's seed")
      ->check(Integer(0, std::numeric_limits<int64_t>::max()));
  app.add_option("--duration", o->duration_s, "Override the scenario's duration_s")
      ->check(Positive());
  app.add_option("--format", o->format, "Summary on standard output: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_flag("--quiet", o->quiet, "No progress on standard error");
  app.add_option("--calibration", o->calibration,
                 "Calibration profile (ttft calibrate): its cost parameters replace the "
                 "scenario's on every replica");
  return [o]() -> Status {
    TTFT_ASSIGN_OR_RETURN(Scenario sc, LoadScenarioArg(o->scenario));
    if (!o->calibration.empty()) {
      TTFT_ASSIGN_OR_RETURN(CalibrationProfile prof, ReadCalibrationProfile(o->calibration));
      ApplyCalibration(sc, prof);
    }
    if (o->seed >= 0) sc.workload.seed = static_cast<uint64_t>(o->seed);
    if (o->duration_s != 0) {  // given: NaN and inf are the scenario check's errors
      sc.duration_s = o->duration_s;
      sc.workload.duration_s = o->duration_s;
    }
    TTFT_RETURN_IF_ERROR(ValidateScenario(sc).WithContext(o->scenario + " with the overrides"));
    RunOptions options;
    options.out_dir = o->out;
    options.progress = ProgressPrinter(sc.name, o->quiet);
    auto run = RunScenario(sc, options);
    EndProgress();
    if (!run.ok()) return run.status();
    const std::string path = (std::filesystem::path(o->out) / "summary.json").string();
    if (o->format == "json") return WriteOutput(run->summary.dump(2) + "\n", "");
    const SimulationResult& r = run->result;
    std::string text =
        fmt::format("{}: {} requests ({} ok, {} errors), {} engine steps, {} scrapes{}\n", sc.name,
                    r.requests, r.finished_ok, r.errors, r.steps, r.snapshots,
                    r.truncated ? " (TRUNCATED at the drain limit)" : "");
    for (const AppliedEvent& e : r.events) {
      text += fmt::format("  t={:.1f} s  {} {} {}\n", e.at_s, ToString(e.kind), e.target, e.detail);
    }
    if (std::isfinite(run->windows.change_at_s)) {
      text += RenderSymptomTable(run->baseline, run->incident,
                                 StdoutIsTty() && std::getenv("NO_COLOR") == nullptr);
    } else {
      text += RenderSymptomColumn(run->incident);
    }
    text += fmt::format("wrote {}/spans.jsonl, {}/metrics/ ({} files), {}\n", o->out, o->out,
                        r.snapshots, path);
    return WriteOutput(text, "");
  };
}

}  // namespace ttft::cli
