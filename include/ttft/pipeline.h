// -----------------------------------------------------------------------------
// File: ttft/pipeline.h
// -----------------------------------------------------------------------------
//
// End-to-end runs: a scenario simulated into a `ttft simulate` output folder, and a
// scenario simulated and diagnosed in one call. `ttft simulate`, `ttft drill`, the
// incident suite test and the benchmarks all run scenarios through here, so they
// share one window policy, one folder layout and one path from spans to a report.
//
// The folder layout (read back by LoadInput, ttft/dataset.h):
//   spans.jsonl           one span per line (docs/spans.md); written as
//                         spans.jsonl.partial and renamed only when the run completes
//   metrics/t<time>.prom  one exposition snapshot per scrape, fixed-width times
//   summary.json          counts, the events applied, the change time and the
//                         symptom table of the analysis windows
//
// Example:
//
//   TTFT_ASSIGN_OR_RETURN(ttft::Scenario sc, ttft::BuiltinScenario("seed-drill"));
//   ttft::RunOptions options;
//   options.diagnose = true;
//   TTFT_ASSIGN_OR_RETURN(ttft::ScenarioRun run, ttft::RunScenario(sc, options));
//   std::cout << ttft::RenderText(*run.diagnosis, /*colour=*/false);
//
// Thread safety: RunScenario is re-entrant; a ScenarioRun is a value.

#ifndef TTFT_PIPELINE_H_
#define TTFT_PIPELINE_H_

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ttft/core.h"
#include "ttft/dataset.h"
#include "ttft/diagnose.h"
#include "ttft/fleet.h"
#include "ttft/scenario.h"
#include "ttft/window_stats.h"

namespace ttft {

// The analysis windows of a scenario: WindowsAround(change, window) over [warmup,
// duration), the change being analysis.change_at_s or else the first event's time and
// the window analysis.window_s or else the whole run. Without a change inside the run
// change_at_s is NaN, the baseline is empty and the incident covers [warmup, duration).
AnalysisWindows ScenarioWindows(const Scenario& scenario);

// The change annotations of a run's applied events.
std::vector<Annotation> AnnotationsOf(const SimulationResult& result);

struct RunOptions {
  // Write the folder here (created; old scrapes removed); empty: write nothing.
  std::string out_dir;
  // Keep the analysis windows' spans and scrapes and diagnose them (needs a change).
  bool diagnose = false;
  // Called now and then with simulated time and the fraction done.
  std::function<void(double sim_s, double fraction)> progress;
};

// clang-tidy 14 reports the implicit special members of a struct as throwing
// (llvm/llvm-project#54668, #54956); every member moves nothrow.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct ScenarioRun {
  SimulationResult result;
  AnalysisWindows windows;
  // The statistics of each window (NaN figures when a window is empty); with a
  // diagnosis, the report's own (one computation).
  WindowStats baseline, incident;
  // summary.json's content.
  nlohmann::json summary;
  // With RunOptions::diagnose: the spans of the windows, every scrape, and the report.
  std::unique_ptr<SpanTable> spans;
  std::vector<MetricSnapshot> snapshots;
  std::optional<DiagnosisReport> diagnosis;
};

// Simulates `scenario`, writes the folder when asked, and diagnoses it when asked.
// Memory is bounded by the analysis windows, not the run's length. Errors: the
// simulator's, a failed write (IoError naming the file), and with `diagnose` a
// scenario without a change (InvalidArgument) or the diagnosis' own.
Result<ScenarioRun> RunScenario(const Scenario& scenario, const RunOptions& options);

// A window's symptom table as summary.json holds it (unknown figures as null).
nlohmann::json SymptomsJson(const WindowStats& window);

// The seed drill's symptom signature (issue 2, section 6): each check, whether it
// passed, and what was observed.
struct SignatureCheck {
  std::string what;
  bool pass = false;
  std::string observed;
};
std::vector<SignatureCheck> SeedSignature(const WindowStats& baseline, const WindowStats& incident);

// A drill: a scenario with a change, simulated and diagnosed, with the seed's
// signature and the cost model's check of the seed's arithmetic.
// clang-tidy 14 reports the implicit special members of a struct as throwing
// (llvm/llvm-project#54668, #54956); every member moves nothrow.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct Drill {
  std::string scenario, description, variant;
  uint64_t seed = 0;
  double duration_s = 0;
  int64_t replicas = 0;
  std::string model, gpu, dtype;
  int tp = 0;
  // The first replica's cost model: 1,000 uncached tokens after a 5,000-token cached
  // prefix, and 6,000 uncached tokens (the seed quotes ~0.07 s and ~0.42 s).
  double prefill_1000_after_5000_cached_s = 0;
  double prefill_6000_uncached_s = 0;
  std::vector<SignatureCheck> signature;
  ScenarioRun run;  // run.diagnosis is set
};

// RunScenario with a diagnosis, plus the drill's checks. `variant` is only reported.
// Errors: RunScenario's (a scenario without a change is InvalidArgument).
Result<Drill> RunDrill(const Scenario& scenario, const std::string& variant,
                       const RunOptions& options);

}  // namespace ttft

#endif  // TTFT_PIPELINE_H_
