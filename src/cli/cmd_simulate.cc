// `ttft simulate SCENARIO --out DIR`: run a scenario; write spans.jsonl,
// metrics/*.prom (one exposition snapshot per scrape) and summary.json.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/sim_output.h"
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
    std::string scenario, out, format = "text";
    int64_t seed = -1;
    double duration_s = 0;
    bool quiet = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("scenario", o->scenario, "Scenario YAML file (or a built-in scenario's name)")
      ->required();
  app.add_option("--out", o->out, "Output folder (spans.jsonl, metrics/, summary.json)")
      ->required();
  app.add_option("--seed", o->seed, "Override the scenario's seed");
  app.add_option("--duration", o->duration_s, "Override the scenario's duration_s");
  app.add_option("--format", o->format, "Summary on standard output: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_flag("--quiet", o->quiet, "No progress on standard error");
  return [o]() -> Status {
    TTFT_ASSIGN_OR_RETURN(Scenario sc, LoadScenarioArg(o->scenario));
    if (o->seed >= 0) sc.workload.seed = static_cast<uint64_t>(o->seed);
    if (o->duration_s > 0) {
      sc.duration_s = o->duration_s;
      sc.workload.duration_s = o->duration_s;
    }
    OutputSink sink;
    TTFT_RETURN_IF_ERROR(sink.Open(o->out));
    const Windows win = AnalysisWindows(sc);
    sink.KeepOnly(win.before_from, win.before_to, win.after_from, win.after_to);
    TTFT_ASSIGN_OR_RETURN(SimulationResult r, RunWithProgress(sc, sink, o->quiet));
    TTFT_RETURN_IF_ERROR(sink.Close());
    nlohmann::json summary = SummaryJson(sc, r, win, sink.symptoms());
    const std::string path = (std::filesystem::path(o->out) / "summary.json").string();
    std::ofstream f(path);
    f << summary.dump(2) << "\n";
    if (!f.good()) return Status::IoError(path + ": write failed");
    if (o->format == "json") {
      std::cout << summary.dump(2) << "\n";
      return Status::Ok();
    }
    std::cout << fmt::format("{}: {} requests ({} ok, {} errors), {} engine steps, {} scrapes{}\n",
                             sc.name, r.requests, r.finished_ok, r.errors, r.steps, r.snapshots,
                             r.truncated ? " (TRUNCATED at the drain limit)" : "");
    for (const AppliedEvent& e : r.events) {
      std::cout << fmt::format("  t={:.1f} s  {} {} {}\n", e.at_s, ToString(e.kind), e.target,
                               e.detail);
    }
    const SymptomCollector& c = sink.symptoms();
    if (win.has_change) {
      std::cout << SymptomTableText(c.Compute(win.before_from, win.before_to),
                                    c.Compute(win.after_from, win.after_to),
                                    StdoutIsTty() && std::getenv("NO_COLOR") == nullptr);
    } else {
      std::cout << SymptomColumnText(c.Compute(win.after_from, win.after_to));
    }
    std::cout << fmt::format("wrote {}/spans.jsonl, {}/metrics/ ({} files), {}\n", o->out, o->out,
                             r.snapshots, path);
    return Status::Ok();
  };
}

}  // namespace ttft::cli
