// -----------------------------------------------------------------------------
// File: diagnose/stages.h (private to the diagnose module)
// -----------------------------------------------------------------------------
//
// The stages of Diagnose() (ttft/diagnose.h, docs/diagnosis.md), in the order it runs
// them, each in its own file and testable alone (stages_test.cc):
//
//   validation.cc     ValidateInput, ComputeWindows, CheckSameModel
//   significance.cc   SampleTtft, AssessSignificance (bootstrap CI, Mann-Whitney,
//                     tail test, verdict)
//   decomposition.cc  TailOf, DecomposeTail
//   groups.cc         SplitGroups (splits, contributions to the tail, label changes)
//   ranking.cc        EvaluateRules (evaluate and rank the hypothesis rules)
//   magnitude.cc      EstimateMagnitude (cost model and queueing)
//   actions.cc        SuspectChanges, PlanActions
//   charts.cc         BuildCharts (timeline, onset, small multiples, CDFs)
//
// Stages read what earlier stages produced and never the other way round; none
// keeps state between calls.

#ifndef TTFT_DIAGNOSE_STAGES_H_
#define TTFT_DIAGNOSE_STAGES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ttft/core.h"
#include "ttft/diagnose.h"

namespace ttft::diag {

// ---------------------------------------------------------------------------
// Validation (validation.cc)
// ---------------------------------------------------------------------------

// What the input holds.
struct InputShape {
  bool has_spans = false;    // both windows have a span table
  bool has_metrics = false;  // both windows have >= 2 metric snapshots
};

// Errors (InvalidArgument): an empty window range, overlapping windows on the same
// table, neither spans nor >= 2 snapshots per window, an options.model or options.gpu
// that is not a cost-model preset (the message lists the presets), an options.dtype
// that is not one, a negative options.tp, an options.min_ok_requests below 1.
Result<InputShape> ValidateInput(const DiagnosisInput& in);

// The buffers every pass over a window reuses, and whether the two windows are
// computed on two threads (one arena each) or in turn (one arena serves both).
class Workspace {
 public:
  // REQUIRES: ValidateInput(in) succeeded with `shape`.
  Workspace(const DiagnosisInput& in, const InputShape& shape);
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  bool parallel() const { return parallel_; }
  WindowStatsArena& baseline() { return a_; }
  WindowStatsArena& incident() { return parallel_ ? b_ : a_; }

 private:
  bool parallel_ = false;
  WindowStatsArena a_, b_;
};

// The rows of each window (indices into its table) and the window statistics.
struct Windows {
  std::vector<uint32_t> rows_a, rows_b;  // empty without spans
  WindowStats baseline, incident;
};

// Rows and statistics from the spans (KV usage from the snapshots when there are
// some), or from the snapshots alone; appends what the input cannot give to `notes`.
// REQUIRES: ValidateInput(in) succeeded with `shape`. Errors: those of
// WindowStatsFromMetrics.
Result<Windows> ComputeWindows(const DiagnosisInput& in, const InputShape& shape, Workspace& ws,
                               std::vector<std::string>& notes);

// Metrics only: the quantiles of `term` (before `a`, after `b`) that histogram buckets
// do not resolve (in the first bucket, or above the highest finite bound) and how they
// are shown; "" when there are none.
std::string BucketNote(std::string_view term, const TermQuantiles& a, const TermQuantiles& b);

// The family names that carried the queue and prefill histograms ("" when absent).
struct MetricFamilyNames {
  std::string queue, prefill;
};
MetricFamilyNames MetricNames(std::span<const MetricSnapshot> snapshots);

// Decompositions no set of requests can give, one sentence each naming the metric that
// caused it: a queue or prefill p50 above the TTFT p99 (beyond their buckets' bounds),
// or mean queue + mean prefill above the mean TTFT (means are exact from _sum/_count).
std::vector<std::string> ImpossibleDecomposition(const WindowStats& a, const WindowStats& b,
                                                 const MetricFamilyNames& names);

// InvalidArgument when the two windows are on different tables and their rows carry
// different sets of `model` labels.
Status CheckSameModel(const DiagnosisInput& in, const InputShape& shape, const Windows& w);

// ---------------------------------------------------------------------------
// Significance (significance.cc)
// ---------------------------------------------------------------------------

// TTFT of a window's ok rows (NaN-free), systematically subsampled to at most `max_n`
// (all when max_n <= 0): of the m values in row order, those at floor(i * m / max_n).
std::vector<double> TtftSample(const SpanTable& t, std::span<const uint32_t> rows, int64_t max_n);

// Two-proportion z-test, one-sided: is the share of `b` above the pooled p99 larger
// than the share of `a`? NaN when either is empty.
double TailTestP(std::span<const double> a, std::span<const double> b);

struct Significance {
  ConfidenceInterval p99_ratio;
  double p50_ratio = kMissing;
  double mann_whitney_p = kMissing;
  double hodges_lehmann_shift_s = kMissing;
  double tail_test_p = kMissing;
  bool enough = false;  // >= opt.min_ok_requests ok requests in each window
  Verdict verdict = Verdict::kInsufficientData;
  std::string verdict_reason;
};

// The verdict. With per-request values (`sa`, `sb`: TtftSample of each window) a
// regression needs the lower bound of the bootstrap CI of the p99 ratio above
// opt.min_p99_ratio_lower and Mann-Whitney (with a positive shift) or the tail test
// significant at opt.alpha_per_test; without (`per_request` false: metrics only) a
// p99 ratio above 1.25 x opt.min_p99_ratio_lower.
Significance AssessSignificance(const WindowStats& baseline, const WindowStats& incident,
                                std::span<const double> sa, std::span<const double> sb,
                                bool per_request, const DiagnoseOptions& opt);

// ---------------------------------------------------------------------------
// Decomposition (decomposition.cc)
// ---------------------------------------------------------------------------

// The mean of each TTFT term over the ok rows with ttft >= `threshold` (NaN terms
// count as 0); all NaN when the threshold is not finite or no row reaches it.
struct TailMeans {
  double ttft = kMissing, fe = kMissing, queue = kMissing, prefill = kMissing;
};
TailMeans TailOf(const SpanTable& t, std::span<const uint32_t> rows, double threshold);

// Each term's share of the increase of the tail mean, and the dominant term. From
// metrics (either window from_metrics), by the change of the queue and prefill p99.
Decomposition DecomposeTail(const WindowStats& a, const WindowStats& b, const TailMeans& ta,
                            const TailMeans& tb);

// ---------------------------------------------------------------------------
// Groups (groups.cc)
// ---------------------------------------------------------------------------

// The groups of one split: names, each label set's group, and per window each
// group's row count and the label set of its first row. No row lists: a split of
// 10 M rows would allocate (and page-fault in) 40 MB of them.
struct GroupIndex {
  std::vector<std::string> names;
  std::vector<int> group_of_set_a, group_of_set_b;  // label set -> group, per table
  std::vector<int64_t> count_a, count_b;            // rows per group, per window
  std::vector<uint32_t> first_set_a, first_set_b;   // label set of a group's first row
};

struct Groups {
  std::vector<GroupSplit> splits;  // tenant, replica, region, template, model, deploy
  std::vector<LabelChange> label_changes;
  std::map<std::string, GroupIndex> kept;  // the replica and tenant splits, for the charts
};

// Every split of the two windows, each row's share of the requests and contribution to
// the tail increase (above the baseline p99 TTFT). REQUIRES: a span table per window;
// `w` from ComputeWindows.
Groups SplitGroups(const DiagnosisInput& in, const Windows& w, Workspace& ws);

// The same splits from metrics alone (each window's snapshots, WindowDelta): a series
// belongs to the group of its label (tenant; replica, pod or instance; region;
// template; model_name or model; deploy), quantiles from its histogram buckets and the
// requests above the baseline p99 interpolated inside their bucket. A dimension no
// TTFT series carries is left out and named in `notes`. REQUIRES: >= 2 snapshots per
// window (ValidateInput); `w` from ComputeWindows. Errors: those of
// GroupWindowStatsFromMetrics.
Result<Groups> SplitGroupsFromMetrics(const DiagnosisInput& in, const Windows& w,
                                      std::vector<std::string>& notes);

// Sets each row's contribution from its tail_excess (its positive part over the sum of
// the positive parts; 0 when none is positive) and sorts the rows by contribution,
// largest first (stable).
void RankByContribution(std::vector<GroupRow>& rows);

// The values of `split` in one window only, with >= 1% of that window's requests.
std::vector<LabelChange> LabelChangesOf(const GroupSplit& split);

// The top group of every split with two values or more whose contribution is >= 0.3.
// REQUIRES: each split's rows sorted by contribution, largest first.
std::vector<Contribution> ContributionsOf(std::span<const GroupSplit> splits);

// ---------------------------------------------------------------------------
// Rules (ranking.cc)
// ---------------------------------------------------------------------------

// Evaluates every rule on `ev`, sets each hypothesis' id from its rule, clamps the
// confidence to [0, 1] (0 when not runnable, with a note in `notes`), and ranks them
// by confidence, largest first (stable: registry order among equals).
std::vector<Hypothesis> EvaluateRules(std::span<const std::unique_ptr<HypothesisRule>> rules,
                                      const Evidence& ev, std::vector<std::string>& notes);

// A cause the counterfactual replay credits with a share of the increase is judged on
// that share, whatever else moved: its hypothesis' confidence is raised to
// min(0.8, 0.2 + share) when the replay reproduces the incident and the share's lower
// bound is at least 0.1, with an evidence line quoting the share; then re-ranked
// (stable). Never lowers a confidence. A factor standing for no ranked hypothesis is
// skipped.
void WeighByAttribution(const Attribution& attribution, std::vector<Hypothesis>& hypotheses);

// The rules quote a group's share of the tail increase ("..., 80% of the p99 increase")
// without knowing the verdict. Unless `verdict` is a regression there is no significant
// increase to share out, so this drops each such phrase (with the ", " or "; " before it)
// from every evidence sentence of `hypotheses`; a regression's are left as they are.
void WordForVerdict(Verdict verdict, std::vector<Hypothesis>& hypotheses);

// ---------------------------------------------------------------------------
// Magnitude (magnitude.cc)
// ---------------------------------------------------------------------------

// Why the magnitude fits: the cost model priced on the observed requests and a
// queueing estimate of the busiest replica's wait. The model is options.model, else
// the incident's most common `model` label; a label that is no preset is priced as
// the default llama-3.3-70b, with a note naming it as unknown. REQUIRES: a span table
// per window; rows_a and rows_b the windows' rows; options.model and options.gpu empty
// or presets (ValidateInput). Appends what it could not do to `notes`.
Magnitude EstimateMagnitude(const DiagnosisInput& in, const std::vector<uint32_t>& rows_a,
                            const std::vector<uint32_t>& rows_b, std::vector<std::string>& notes);

// ---------------------------------------------------------------------------
// Changes and actions (actions.cc)
// ---------------------------------------------------------------------------

// The annotations from the incident's start (less a slack of max(60 s, 10% of the
// incident window)) to the pivot plus that slack, closest to the pivot first. The pivot
// is the onset, else the change time, else the incident's start.
std::vector<Annotation> SuspectChanges(std::span<const Annotation> annotations, double onset_s,
                                       double change_at_s, const SpanWindow& incident);

// The actions of a report: none unless the verdict is a regression; then mitigations
// (undo each suspect change not covered by another of its kind; else shed the load of
// the top hypothesis' shed_load_of group; else roll back new templates and deploys),
// the top hypothesis' check, fix and prevention, and the canary gate. REQUIRES:
// rep.suspect_changes, hypotheses (ranked), groups and label_changes filled.
std::vector<Action> PlanActions(const DiagnosisReport& rep);

// ---------------------------------------------------------------------------
// Charts (charts.cc)
// ---------------------------------------------------------------------------

struct Charts {
  double onset_s = kMissing;  // first incident bucket with >= 20 requests and p99 > 1.5 x base
  std::vector<TimePoint> timeline;
  std::vector<GroupSeries> group_series;
  std::vector<std::pair<double, double>> cdf_before, cdf_after;
};

// The empirical CDF of `v` at 1%..98%, 99%, 99.5% and 99.9%; empty for empty `v`.
std::vector<std::pair<double, double>> Cdf(std::vector<double> v);

// REQUIRES: a span table per window; `splits` and `groups.kept` from SplitGroups;
// `sa`, `sb` the windows' TTFT samples.
Charts BuildCharts(const DiagnosisInput& in, const Windows& w, const Groups& groups,
                   std::span<const GroupSplit> splits, std::vector<double> sa,
                   std::vector<double> sb, Workspace& ws);

}  // namespace ttft::diag

#endif  // TTFT_DIAGNOSE_STAGES_H_
