// Wiring between a simulation and its outputs for the `simulate` and `drill`
// commands: spans.jsonl, one exposition file per scrape under metrics/, a
// SymptomCollector for the summary, and summary.json.
#ifndef TTFT_CLI_SIM_OUTPUT_H_
#define TTFT_CLI_SIM_OUTPUT_H_

#include <nlohmann/json.hpp>

#include <string>

#include "ttft/diagnose.h"
#include "ttft/fleet.h"
#include "ttft/metrics.h"
#include "ttft/spans.h"

namespace ttft::cli {

// A sink that always collects symptoms and, when `out_dir` is set, writes files.
class OutputSink : public SimulationSink {
 public:
  // Creates out_dir (and out_dir/metrics) when non-empty.
  Status Open(const std::string& out_dir);
  // Keeps symptom records only for spans arriving inside `windows` (their before
  // and after windows), so memory is bounded by the windows, not the run length.
  void KeepOnly(double before_from, double before_to, double after_from, double after_to);
  Status OnSpan(const Span& span) override;
  Status OnSnapshot(const MetricSnapshot& snapshot) override;
  Status Close();
  const SymptomCollector& symptoms() const { return symptoms_; }

 private:
  std::string out_dir_;
  bool filter_ = false;
  double keep_[4] = {0, 0, 0, 0};
  SpanJsonlWriter spans_;
  SymptomCollector symptoms_;
};

// The before/after windows of a scenario's analysis section: [change - window,
// change) and [change, change + window), clipped to [warmup, duration). Without a
// change (no analysis and no events) `has_change` is false and `after` covers the
// whole run.
struct Windows {
  bool has_change = false;
  double change_at_s = 0;
  double before_from = 0, before_to = 0, after_from = 0, after_to = 0;
};
Windows AnalysisWindows(const Scenario& sc);

nlohmann::json SymptomsJson(const WindowSymptoms& w);
// summary.json: counts, the symptom table, the applied events in the spans' time base.
nlohmann::json SummaryJson(const Scenario& sc, const SimulationResult& r, const Windows& win,
                           const SymptomCollector& symptoms);
// The symptom table, before and after, with ratios; plain text (colour on a TTY).
std::string SymptomTableText(const WindowSymptoms& before, const WindowSymptoms& after,
                             bool colour);

// One window's symptoms as a two-column table (a run with no change to compare).
std::string SymptomColumnText(const WindowSymptoms& w);

// Runs a scenario with progress on standard error (when it is a terminal and not
// quiet) and returns its result.
Result<SimulationResult> RunWithProgress(const Scenario& sc, SimulationSink& sink, bool quiet);

// The snapshots covering [from, to]: those inside, plus the last one before `from`
// (the counters' starting point) unless one lies exactly at `from`. REQUIRES: `all`
// sorted by time.
std::vector<MetricSnapshot> SnapshotsCovering(const std::vector<MetricSnapshot>& all, double from,
                                              double to);

}  // namespace ttft::cli

#endif  // TTFT_CLI_SIM_OUTPUT_H_
