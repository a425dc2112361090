// -----------------------------------------------------------------------------
// File: ttft/diagnose.h
// -----------------------------------------------------------------------------
//
// The diagnosis of a TTFT regression. This first part is the symptom table the
// seed drill lists before anything else: p50 versus p99 TTFT, queue and prefill
// tails, inter-token latency, errors, replicas, prefix-cache hit rate, prompt
// lengths and preemptions, for a window before and a window after a change.
//
// Definitions (docs/diagnosis.md):
//   * A span belongs to a window by its arrival time, [from_s, to_s).
//   * Latency quantiles are over requests that finished ok; the error rate over all.
//   * itl_p50_s is the median of the per-request mean inter-token latency.
//   * prefix_cache_hit_rate is vLLM's, in tokens: sum(cached) / sum(prompt).
//   * replicas counts distinct replicas that served a request in the window.
//
// Example:
//
//   ttft::SymptomCollector c;
//   for (const ttft::Span& s : spans) c.Add(s);
//   ttft::WindowSymptoms before = c.Compute(300, 900);
//
// Thread safety: a SymptomCollector is single-threaded.

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

#include "ttft/core.h"
#include "ttft/metrics.h"
#include "ttft/spans.h"
#include "ttft/stats.h"

namespace ttft {

struct WindowSymptoms {
  double from_s = 0;
  double to_s = 0;
  int64_t requests = 0;
  int64_t ok = 0;
  double request_rate_rps = 0;
  double ttft_p50_s = 0, ttft_p90_s = 0, ttft_p99_s = 0;
  double queue_p50_s = 0, queue_p99_s = 0;
  double prefill_p50_s = 0, prefill_p99_s = 0;
  double itl_p50_s = 0;
  double error_rate = 0;
  int64_t replicas = 0;
  double prefix_cache_hit_rate = 0;
  double prompt_tokens_p50 = 0, prompt_tokens_p99 = 0;
  int64_t preemptions = 0;
};

// Keeps a compact record per span (about 40 bytes) and computes windows.
class SymptomCollector {
 public:
  void Add(const Span& span);
  // Quantiles are NaN when the window holds no ok request.
  WindowSymptoms Compute(double from_s, double to_s) const;
  int64_t size() const { return static_cast<int64_t>(records_.size()); }
  double max_arrival_s() const { return max_arrival_s_; }

 private:
  struct Record {
    double arrival_s;
    float ttft_s, queue_s, prefill_s, itl_mean_s;
    int32_t prompt_tokens, cached_tokens;
    int16_t preemptions;
    uint16_t replica;
    bool ok;
  };
  std::vector<Record> records_;
  std::unordered_map<std::string, uint16_t> replica_ids_;
  double max_arrival_s_ = 0;
};

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

// A figure the input cannot give.
inline constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

// Converts a Span into a SpanRecord (views into `span`) and adds it to `table`.
void AddSpanToTable(const Span& span, SpanTable& table);

// A window of one span table: rows with arrival_s in [from_s, to_s).
struct SpanWindow {
  const SpanTable* table = nullptr;  // null: no spans for this window
  double from_s = 0;
  double to_s = 0;
};

// A timestamped change (deploy, flag flip, drain) cited by the report.
struct Annotation {
  double at_s = 0;
  std::string kind;    // e.g. "deploy_template"
  std::string target;  // e.g. "app" or "rag-0"
  std::string detail;  // free text, e.g. "app -> v2"
};

// Options of the diagnosis. Thresholds are documented in docs/diagnosis.md.
struct DiagnoseOptions {
  // The cost model: empty fields come from the spans' `model` label, then the
  // defaults (llama-3.3-70b, h100-sxm, fp8, tp 2).
  std::string model;
  std::string gpu;
  std::string dtype;
  int tp = 0;
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
  DiagnoseOptions options;
};

// p50/p90/p99 of one term.
struct TermQuantiles {
  double p50 = kMissing, p90 = kMissing, p99 = kMissing;
};

// What one window (or one group within it) looks like. Latency figures are over ok
// requests; NaN when unknown.
struct WindowStats {
  double from_s = 0, to_s = 0;
  int64_t requests = 0, ok = 0, errors = 0, rejected_too_long = 0;
  double request_rate_rps = kMissing;
  double error_rate = kMissing;
  TermQuantiles ttft_s, queue_s, prefill_s, front_end_s;
  double itl_p50_s = kMissing;              // median of per-request mean ITL
  double itl_max_p99_s = kMissing;          // p99 of per-request max ITL (stalls)
  double prefix_cache_hit_rate = kMissing;  // sum(cached) / sum(prompt)
  double cached_tokens_mean = kMissing;
  double uncached_tokens_mean = kMissing;
  double prompt_tokens_p50 = kMissing, prompt_tokens_p99 = kMissing, prompt_tokens_mean = kMissing;
  double output_tokens_mean = kMissing, output_tokens_p99 = kMissing;
  double preemptions_per_request = kMissing;
  // Median over ok requests with >= 256 uncached tokens of prefill_s per 1,000
  // uncached tokens: the compute path's speed as requests see it.
  double prefill_s_per_1k_uncached = kMissing;
  double concurrency = kMissing;  // Little's law: sum(e2e_s) / window length
  int64_t replicas = 0;
  double kv_usage = kMissing;  // from metrics (gauge, 0..1), NaN without
  bool from_metrics = false;
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
  // prompt_tokens_p99 and prefill_s_per_1k_uncached: the others (TTFT p50/p90, queue,
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

// One ranked cause.
struct Hypothesis {
  std::string id;         // e.g. "prefix_cache_collapse" (stable; the JSON's `id`)
  std::string title;      // a short human title
  double confidence = 0;  // 0..1
  bool runnable = true;   // false: the input lacks what the rule reads
  std::string not_run_reason;
  std::vector<std::string> evidence;  // lines quoting numbers
  std::string splitting_metric;       // the one metric that confirms or rejects it
  std::string next_check;
  std::string fix;
  std::string prevention;
  std::string owners;
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

struct Action {
  std::string kind;  // "mitigate", "fix", "prevent", "investigate"
  std::string text;
  std::string owner;  // "app team", "serving team", "" when not clear
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
  std::vector<std::string> contributions;  // "tenant acme: hit rate 81% to 3%, 92% of ..."
  Magnitude magnitude;
  std::vector<Annotation> annotations;
  std::vector<Annotation> suspect_changes;  // changes near the onset, closest first
  std::vector<std::string> label_changes;   // "template app: v1 -> v2 (new in the incident)"
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
  const std::vector<std::string>& label_changes;
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

// Builds the report. Errors (InvalidArgument): a window without a table or
// snapshots, overlapping windows on the same table, an empty window range,
// different `model` labels in the two windows, an unknown --model/--gpu.
Result<DiagnosisReport> Diagnose(const DiagnosisInput& input);

// Statistics of a set of rows of `table` over a window of `window_s` seconds.
// Exposed for tests and the benchmark.
WindowStats ComputeWindowStats(const SpanTable& table, std::span<const uint32_t> rows,
                               double from_s, double to_s);

// Stats of a window from metric snapshots alone (reduced fidelity: quantiles from
// histogram buckets; no per-request figures). REQUIRES: >= 2 snapshots.
Result<WindowStats> WindowStatsFromMetrics(std::span<const MetricSnapshot> snapshots, double from_s,
                                           double to_s);

}  // namespace ttft

#endif  // TTFT_DIAGNOSE_H_
