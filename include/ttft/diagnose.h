// -----------------------------------------------------------------------------
// File: ttft/diagnose.h
// -----------------------------------------------------------------------------
//
// The diagnosis of a TTFT regression: see the banner of the section below. The
// statistics it reads (WindowStats) are the one statistics model of
// ttft/window_stats.h.

#ifndef TTFT_DIAGNOSE_H_
#define TTFT_DIAGNOSE_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ttft/attribution.h"
#include "ttft/core.h"
#include "ttft/dataset.h"
#include "ttft/metrics.h"
#include "ttft/model.h"
#include "ttft/spans.h"
#include "ttft/stats.h"
#include "ttft/window_stats.h"

namespace ttft {

// =============================================================================
// The diagnosis of a regression (docs/diagnosis.md)
// =============================================================================
//
// Diagnose() reads a baseline and an incident window of spans (and optionally
// metric snapshots) and builds ONE DiagnosisReport, in the seed's order: mitigate
// now, symptoms, decomposition, ranked hypotheses, where it lives, why the
// magnitude fits, fix and prevention. Every renderer (ttft/report.h) reads that
// model, so text, Markdown, JSON and HTML never disagree.
//
// Example:
//
//   ttft::SpanTable spans = ...;                       // ttft::ReadSpans(...)
//   ttft::DiagnosisInput in;
//   in.baseline = {&spans, 300, 1200};
//   in.incident = {&spans, 1200, 2100};
//   in.change_at_s = 1200;
//   auto report = ttft::Diagnose(in);
//   if (!report.ok()) return report.status();
//   std::cout << ttft::RenderText(*report, /*colour=*/false);
//
// Thread safety: Diagnose is re-entrant; the report is a value.

// A window of one span table: rows with arrival_s in [from_s, to_s).
struct SpanWindow {
  const SpanTable* table = nullptr;  // null: no spans for this window
  double from_s = 0;
  double to_s = 0;
};

// Options of the diagnosis. Thresholds are documented in docs/diagnosis.md.
struct DiagnoseOptions {
  // The cost model: empty fields come from the spans' `model` label, then the
  // defaults (llama-3.3-70b, h100-sxm, fp8, tp 2). A non-empty model or gpu must be a
  // preset (FindModel, FindGpu in ttft/model.h), else Diagnose fails; a spans' label
  // that is no preset is priced as the default, with a fidelity note naming it.
  std::string model;
  std::string gpu;
  std::string dtype;
  int tp = 0;
  // The cost model's parameters for the magnitude check (a calibration profile's,
  // ttft/calibration.h; default: the calibrated defaults).
  CostParams cost;
  // Where `cost` came from (a calibration profile's path), named with the cost model
  // in the explanation; empty: the fleet's defaults, not named.
  std::string cost_source;
  // Fewer ok requests than this in either window: verdict insufficient_data.
  int64_t min_ok_requests = 100;
  // Verdict: the lower bound of the 95% bootstrap CI of the p99 TTFT ratio must
  // exceed this, AND one of the two tests must reject at `alpha_per_test`.
  double min_p99_ratio_lower = 1.2;
  double alpha_per_test = 0.005;  // Bonferroni for two tests: family-wise 0.01
  int bootstrap_resamples = 400;
  // Larger windows are subsampled (uniformly, fixed seed) for the bootstrap and the
  // Mann-Whitney test: the interval gets wider, never narrower (conservative).
  int64_t max_test_samples = 50000;
  // Time-series buckets for the report's charts.
  int time_buckets = 40;
  // Compute the baseline and incident windows on two threads when they hold 200,000
  // spans or more between them (the report is the same either way).
  bool parallel = true;
  // The counterfactual replay of a regression (ttft/attribution.h): run when the
  // verdict is a regression and both windows have spans. Its model, gpu, dtype and tp
  // are taken from the fields above when they are empty there.
  bool attribute = true;
  AttributionOptions attribution;
};

struct DiagnosisInput {
  SpanWindow baseline;
  SpanWindow incident;
  double change_at_s = kMissing;  // NaN when baseline and incident are separate inputs
  // Metric snapshots ordered in time (scrapes), in the spans' time base; each window
  // uses the snapshots inside it (WindowDelta). Optional.
  std::vector<MetricSnapshot> baseline_snapshots;
  std::vector<MetricSnapshot> incident_snapshots;
  std::vector<Annotation> annotations;
  std::vector<std::string> sources;  // input names, cited in the report
  // How the windows were read from the inputs, where that is not plain (the report's
  // fidelity notes start with these).
  std::vector<std::string> notes;
  DiagnoseOptions options;
};

// TTFT = front_end + queue + prefill, per request. Quantiles of each term before
// and after, and among the slowest 1% of each window (ttft >= its p99) the mean of
// each term; `share_*` is the term's part of the increase of that tail mean, so the
// shares sum to ~1 (docs/diagnosis.md).
struct Decomposition {
  TermQuantiles before_ttft, before_front_end, before_queue, before_prefill;
  TermQuantiles after_ttft, after_front_end, after_queue, after_prefill;
  double tail_before_ttft = kMissing, tail_before_front_end = kMissing,
         tail_before_queue = kMissing, tail_before_prefill = kMissing;
  double tail_after_ttft = kMissing, tail_after_front_end = kMissing, tail_after_queue = kMissing,
         tail_after_prefill = kMissing;
  double share_front_end = kMissing, share_queue = kMissing, share_prefill = kMissing;
  std::string dominant;  // "queue", "prefill", "front_end" or "" (no increase)
};

// One value of a label (tenant acme) in both windows.
struct GroupRow {
  std::string value;
  std::string parent;  // replica rows: the replica's region
  // Every count, rate and mean, and of the quantiles only ttft_s.p99, itl_max_p99_s,
  // prompt_tokens.p99 and prefill_s_per_1k_uncached: the others (TTFT p50/p90, queue,
  // prefill and front-end terms, ITL p50, prompt p50, output p99) are NaN when the
  // split has several values: no rule reads them, and a diagnosis of 10 M spans spent
  // a fifth of its time on them.
  WindowStats before, after;
  double share_before = 0, share_after = 0;  // of the window's requests
  // Contribution to the tail increase: the group's excess incident requests above
  // the baseline p99 TTFT over what its baseline rate of such requests predicts, as
  // a fraction of the total positive excess (docs/diagnosis.md).
  double tail_excess = 0;
  double contribution = 0;
};

struct GroupSplit {
  std::string dimension;       // tenant, replica, region, template, model, deploy
  std::vector<GroupRow> rows;  // sorted by contribution, largest first
};

// One line of a hypothesis' evidence: the figure it reads (before and after) and the
// sentence that states what the numbers say. A line quoting several figures names the
// one its sentence is about; a line without a figure has an empty `metric`.
struct EvidenceLine {
  std::string metric;  // the figure in the JSON report's names, e.g. "prompt_tokens_p99"
  double before = kMissing, after = kMissing;
  std::string unit;      // "s", "tokens", "fraction", "rps", "count", "ratio" or ""
  std::string sentence;  // what every renderer prints
};

// A label value that appears in one window only (template app@v2 in the incident).
struct LabelChange {
  enum class Kind : uint8_t { kNew, kGone };
  std::string dimension;  // template, deploy, tenant or model
  std::string value;
  Kind kind = Kind::kNew;
  double share = 0;  // of the requests of the window it is in
};
// "template app@v2: new in the incident (40% of requests)" or
// "tenant acme: gone in the incident (was 12%)".
std::string ToString(const LabelChange& change);

// A label value as every report names it: the value, or `"" (empty)` for the empty
// value (requests without the label), never a blank ("tenant : gone in the incident").
std::string LabelValueText(std::string_view value);

// The group of a split that holds most of the tail increase, with the figures the
// report quotes about it.
struct Contribution {
  std::string dimension, value;
  double hit_rate_before = kMissing, hit_rate_after = kMissing;
  double ttft_p99_before_s = kMissing, ttft_p99_after_s = kMissing;
  double share_of_requests = 0;  // in the incident
  double share_of_increase = 0;  // GroupRow::contribution
};

// One ranked cause.
struct Hypothesis {
  std::string id;         // e.g. "prefix_cache_collapse" (stable; the JSON's `id`)
  std::string title;      // a short human title
  double confidence = 0;  // 0..1
  bool runnable = true;   // false: the input lacks what the rule reads
  std::string not_run_reason;
  std::vector<EvidenceLine> evidence;
  std::string splitting_metric;  // the one metric that confirms or rejects it
  std::string next_check;
  std::string fix;
  std::string prevention;
  std::string owners;
  // When no change near the onset can be undone: the split (e.g. "tenant") whose top
  // group's load is shed as the mitigation; "" when this cause has no such mitigation.
  std::string shed_load_of;
};

// Why the magnitude fits: the cost model applied to the observed requests, per
// replica, and a queueing estimate of the wait.
struct Magnitude {
  bool available = false;
  std::string cost_model;                      // "llama-3.3-70b fp8 tp2 h100-sxm"
  double prefill_compute_before_s = kMissing;  // mean per request, cost model
  double prefill_compute_after_s = kMissing;
  double utilisation_before = kMissing;  // of the busiest replica (prefill + decode share)
  double utilisation_after = kMissing;
  std::string busiest_replica_before, busiest_replica_after;
  // Kingman (1961) G/G/1 mean wait: rho/(1-rho) * (ca^2 + cs^2)/2 * E[S]; infinite
  // at rho >= 1. Pollaczek-Khinchine (M/G/1): lambda E[S^2] / (2 (1 - rho)).
  double kingman_wait_before_s = kMissing, kingman_wait_after_s = kMissing;
  double pk_wait_before_s = kMissing, pk_wait_after_s = kMissing;
  double observed_queue_mean_before_s = kMissing, observed_queue_mean_after_s = kMissing;
  std::string verdict;   // "explained", "partly explained", "not explained"
  std::string sentence;  // the paragraph, with numbers
};

// One point of the time series charted in the HTML report.
struct TimePoint {
  double t_s = 0;
  int64_t requests = 0;
  double ttft_p99_s = kMissing;
  double hit_rate = kMissing;
};

struct GroupSeries {
  std::string dimension;  // replica or tenant
  std::string value;
  std::vector<TimePoint> points;
};

// What an action acts on.
enum class ActionSubject : uint8_t {
  kNone,
  kChange,       // an annotation: key = its kind, value = its target
  kLabelChange,  // a LabelChange: key = its dimension, value = its value
  kGroup,        // a group of a split: key = the dimension, value = the group
  kHypothesis,   // key = the hypothesis id
};

struct Action {
  std::string kind;  // "mitigate", "fix", "prevent", "investigate"
  std::string text;
  std::string owner;  // "app team", "serving team", "" when not clear
  ActionSubject subject = ActionSubject::kNone;
  std::string subject_key, subject_value;
};

enum class Verdict : uint8_t { kRegression, kNoRegression, kInsufficientData };
std::string_view ToString(Verdict v);  // "regression", "no_regression", "insufficient_data"

struct DiagnosisReport {
  Verdict verdict = Verdict::kInsufficientData;
  std::string verdict_reason;  // one sentence with the numbers behind the verdict
  std::vector<std::string> sources;
  double change_at_s = kMissing;
  // Significance: bootstrap 95% CI of p99(incident)/p99(baseline) TTFT, the
  // Mann-Whitney U test (whole distribution) and a two-proportion z-test of the
  // share of requests above the pooled p99 (the tail).
  ConfidenceInterval p99_ratio;
  double p50_ratio = kMissing;
  double mann_whitney_p = kMissing;
  double hodges_lehmann_shift_s = kMissing;
  double tail_test_p = kMissing;
  int64_t test_samples_baseline = 0, test_samples_incident = 0;
  WindowStats baseline, incident;
  Decomposition decomposition;
  // Ranked, most likely first. Empty when !hypotheses_assessed.
  std::vector<Hypothesis> hypotheses;
  // False when the verdict is insufficient_data: no cause (and no group's share of the
  // increase) is assessed from too few requests.
  bool hypotheses_assessed = true;
  std::vector<GroupSplit> groups;
  std::vector<Contribution> contributions;  // splits whose top group holds >= 30%
  Magnitude magnitude;
  // Each cause's share of the p99 increase by counterfactual replay; `run` false with
  // the reason when it could not run (metrics only, no regression, a missing field).
  Attribution attribution;
  std::vector<Annotation> annotations;
  std::vector<Annotation> suspect_changes;  // changes near the onset, closest first
  std::vector<LabelChange> label_changes;   // label values in one window only
  std::vector<Action> actions;              // mitigate first, then fix, prevent
  std::vector<std::string> fidelity_notes;  // checks that could not run, and why
  // Charts.
  double onset_s = kMissing;  // first bucket after the change with p99 above 1.5x baseline
  std::vector<TimePoint> timeline;
  std::vector<GroupSeries> group_series;
  // TTFT CDFs: (seconds, cumulative fraction), log-spaced in probability.
  std::vector<std::pair<double, double>> cdf_before, cdf_after;
};

// The evidence a hypothesis rule reads. Everything is computed once by Diagnose.
struct Evidence {
  const WindowStats& before;
  const WindowStats& after;
  const Decomposition& decomposition;
  const std::vector<GroupSplit>& groups;
  const std::vector<LabelChange>& label_changes;
  bool has_spans = true;
  bool has_metrics = false;
  // The split for `dimension`, or nullptr.
  const GroupSplit* Split(std::string_view dimension) const;
};

// A cause: one small object per file (src/diagnose/rule_*.cc) and one line in the
// registry (src/diagnose/rules.cc). Evaluate fills id, confidence, evidence, the
// splitting metric, the next check, fix, prevention and owners.
class HypothesisRule {
 public:
  virtual ~HypothesisRule() = default;
  virtual std::string_view id() const = 0;
  virtual Hypothesis Evaluate(const Evidence& evidence) const = 0;
};

// Every registered rule, in registry order.
std::vector<std::unique_ptr<HypothesisRule>> DefaultRules();

// The input of a diagnosis of `data` over `windows`: one span table (when the data has
// spans), the snapshots covering each window, the data's annotations and sources.
// REQUIRES: `data` outlives the result (it points into data.spans).
DiagnosisInput DiagnosisInputOf(const Dataset& data, const AnalysisWindows& windows);

// The input of a diagnosis of two separate inputs: each window is its input's whole
// time range. One scrape each (`curl /metrics` before and after) is read by the
// process start both carry (process_start_time_seconds, prometheus_client's process
// collector): the baseline is its process's totals since it started; the incident is
// the difference between the scrapes when they share that start, else (a restart
// between them, as a deploy does) its own process's totals. A window of totals has no
// request rate (its process's start includes loading the model), and a note says how
// each window was read. InvalidArgument when one input holds spans and the other only
// metrics, and for one scrape each without process_start_time_seconds, with the
// incident's scrape not after the baseline's, or with a process start after its
// scrape (another time base: name the file t<Unix seconds>.prom).
// REQUIRES: both outlive the result.
Result<DiagnosisInput> DiagnosisInputOf(const Dataset& baseline, const Dataset& incident);

// Builds the report. Errors (InvalidArgument): a window without a table or
// snapshots, overlapping windows on the same table, an empty window range,
// different `model` labels in the two windows, an options.model or options.gpu
// (--model/--gpu) that is not a preset (the message lists the presets).
Result<DiagnosisReport> Diagnose(const DiagnosisInput& input);

}  // namespace ttft

#endif  // TTFT_DIAGNOSE_H_
