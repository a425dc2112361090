// -----------------------------------------------------------------------------
// File: ttft/window_stats.h
// -----------------------------------------------------------------------------
//
// The one statistics model: what a window of requests (or one group within it)
// looks like. `ttft diagnose`, `ttft stats`, `ttft drill`, `ttft simulate`'s summary
// and the canary gate all compute their figures here, so every output of one run
// agrees by construction.
//
// Three sources give the same WindowStats:
//   * spans (exact): ComputeWindowStats over rows of a SpanTable, and per group in one
//     pass (ComputeGroupWindowStats, SummarizeSpans);
//   * spans too many to hold (sketches): StreamingStats, DDSketch quantiles;
//   * Prometheus metrics: WindowStatsFromMetrics / SummarizeMetrics, quantiles from
//     histogram buckets with PromQL histogram_quantile semantics and their bounds.
//
// Definitions (docs/diagnosis.md):
//   * A span belongs to a window by its arrival time, [from_s, to_s).
//   * Latency and token quantiles are over requests that finished ok (a failed
//     request's TTFT is not a TTFT sample); counts and the error rate over all.
//   * itl_s is the per-request mean inter-token latency.
//   * prefix_cache_hit_rate is vLLM's, in tokens: sum(cached) / sum(prompt).
//   * The error rate is errors over all requests (spans); from metrics, over vLLM's
//     finished requests (request_success_total), an error being a finished_reason of
//     "abort" or "error".
//   * replicas counts distinct replicas that served an ok request in the window.
//
// Example:
//
//   std::vector<uint32_t> rows = ...;                 // rows of `table` in the window
//   ttft::WindowStats w = ttft::ComputeWindowStats(table, rows, 300, 900);
//   double p99 = w.ttft_s.p99;
//
// Thread safety: the functions are re-entrant; a WindowStatsArena is used by one
// thread at a time; a StreamingStats is single-threaded.

#ifndef TTFT_WINDOW_STATS_H_
#define TTFT_WINDOW_STATS_H_

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ttft/core.h"
#include "ttft/input.h"
#include "ttft/metrics.h"
#include "ttft/spans.h"
#include "ttft/stats.h"

namespace ttft {

// A figure the input cannot give.
inline constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

// The quantiles (type 7) and mean of one quantity. NaN when unknown.
struct TermQuantiles {
  static constexpr std::array<double, 4> kQs = {0.5, 0.9, 0.99, 0.999};
  double p50 = kMissing, p90 = kMissing, p99 = kMissing, p999 = kMissing;
  double mean = kMissing;
  int64_t count = 0;  // values behind the figures
  // How the figures were obtained: exact order statistics of the values, a DDSketch
  // with relative error `sketch_alpha`, or histogram buckets (each quantile then lies
  // in buckets[i] = (lower_bound, upper_bound], i over kQs).
  enum class Source : uint8_t { kExact, kSketch, kBuckets };
  Source source = Source::kExact;
  double sketch_alpha = 0;
  std::array<BucketQuantile, 4> buckets{};
  std::string note;  // why accuracy is limited, or what the values are
  bool available() const { return count > 0; }
  double at(size_t i) const { return i == 0 ? p50 : i == 1 ? p90 : i == 2 ? p99 : p999; }
};

// What one window (or one group within it) looks like. NaN when unknown.
struct WindowStats {
  double from_s = 0, to_s = 0;
  int64_t requests = 0, ok = 0, errors = 0, rejected_too_long = 0;
  double request_rate_rps = kMissing;  // requests / (to_s - from_s)
  double error_rate = kMissing;        // errors / error_rate_requests
  // The requests behind error_rate: every request (spans); vLLM's finished requests
  // (metrics; 0 without the counter, and then errors is 0 and error_rate NaN).
  int64_t error_rate_requests = 0;
  TermQuantiles ttft_s, queue_s, prefill_s, front_end_s;
  TermQuantiles itl_s;                      // per-request mean inter-token latency
  double itl_max_p99_s = kMissing;          // p99 of per-request max ITL (stalls)
  double prefix_cache_hit_rate = kMissing;  // sum(cached) / sum(prompt)
  // The hit rate's denominator in prompt tokens: sum(prompt) over the ok requests with
  // both counts known (spans), the prefix-cache queries counter's increase (metrics).
  // NaN when the hit rate has no source.
  double prefix_cache_query_tokens = kMissing;
  std::string hit_rate_note;  // where the hit rate comes from
  double cached_tokens_mean = kMissing;
  double uncached_tokens_mean = kMissing;
  TermQuantiles prompt_tokens;
  double output_tokens_mean = kMissing, output_tokens_p99 = kMissing;
  int64_t preemptions = 0;  // total over the window's requests
  double preemptions_per_request = kMissing;
  // Median over ok requests with >= 256 uncached tokens of prefill_s per 1,000
  // uncached tokens: the compute path's speed as requests see it.
  double prefill_s_per_1k_uncached = kMissing;
  double concurrency = kMissing;  // Little's law: sum(e2e_s) / window length
  int64_t replicas = 0;
  double kv_usage = kMissing;  // from metrics (gauge, 0..1), NaN without
  bool from_metrics = false;
};

// Whether quantile i (TermQuantiles::kQs) of a term is only a bound: from histogram
// buckets, in the first bucket (0, b] or above the highest finite bound.
bool IsQuantileBound(const TermQuantiles& t, size_t i);

// Quantile i (TermQuantiles::kQs) of a term in seconds as reports print it: its value
// (numfmt::Secs), or for a quantile from histogram buckets that they do not resolve
// "<=300 ms" (in the first bucket) or ">=10.00 s" (above the highest finite bound), never
// the interpolated figure, which there is no measurement.
//
//   QuantileText(w.queue_s, 2)   // "<=300 ms" for vLLM's queue p99 under 0.3 s
std::string QuantileText(const TermQuantiles& t, size_t i);

// What the buckets say of the ratio after / before of quantile i: [lo, hi], equal for
// two resolved quantiles (or exact ones); a quantile in the first bucket (0, b] spans
// (0, b], one above the highest finite bound [b, inf). NaN when either is missing.
struct RatioBounds {
  double lo = kMissing, hi = kMissing;
};
RatioBounds QuantileRatio(const TermQuantiles& before, const TermQuantiles& after, size_t i);

// QuantileRatio as reports print it: "x1.52", "at least x91.60", "at most x0.50", "not
// resolved by the buckets", or "n/a".
std::string QuantileRatioText(const TermQuantiles& before, const TermQuantiles& after, size_t i);

// `w.replicas` as reports show it: NaN (unknown) for a metrics window whose requests'
// TTFT series name no replica (a scrape of one server carries no replica or instance
// label), where the count of 0 would contradict its requests.
double ReplicasShown(const WindowStats& w);

// Converts a Span into a SpanRecord (views into `span`) and adds it to `table`.
void AddSpanToTable(const Span& span, SpanTable& table);

// How much ComputeWindowStats computes. kDiagnosis: p50/p90/p99 of the latency terms
// and of ITL and prompt tokens' p50/p99/mean (what the diagnosis reads). kFull adds
// p99.9, means and counts of every term (what `ttft stats` prints).
enum class StatsDetail : uint8_t { kDiagnosis, kFull };

// Reusable buffers of the passes below: a diagnosis makes a dozen passes over
// millions of rows, and fresh buffers for each would page-fault in every time.
class WindowStatsArena {
 public:
  WindowStatsArena();
  ~WindowStatsArena();
  WindowStatsArena(const WindowStatsArena&) = delete;
  WindowStatsArena& operator=(const WindowStatsArena&) = delete;
  struct Buffers;  // private to the dataset module
  Buffers& buffers() { return *buffers_; }

 private:
  std::unique_ptr<Buffers> buffers_;
};

// Statistics of `rows` of `table` over the window [from_s, to_s) (the rate's length).
WindowStats ComputeWindowStats(const SpanTable& table, std::span<const uint32_t> rows,
                               double from_s, double to_s,
                               StatsDetail detail = StatsDetail::kDiagnosis);
// The same with caller-owned buffers (identical results).
WindowStats ComputeWindowStats(const SpanTable& table, std::span<const uint32_t> rows,
                               double from_s, double to_s, StatsDetail detail,
                               WindowStatsArena& arena);

// The stats of one group of a window, and its ok requests with ttft > a threshold.
struct GroupWindowStats {
  WindowStats stats;
  int64_t above = 0;
};

// Statistics of all the groups of a window in ONE pass over `rows`, each row going to
// group group_of_set[label set] in [0, groups): the columns are read in order instead
// of gathered once per group. Each group's figures equal ComputeWindowStats' on its
// rows except the quantiles no rule reads, which are NaN: of the quantiles only
// ttft_s.p99, itl_max_p99_s, prompt_tokens.p99 and prefill_s_per_1k_uncached are
// computed (a diagnosis of 10 M spans spent a fifth of its time on the others).
std::vector<GroupWindowStats> ComputeGroupWindowStats(const SpanTable& table,
                                                      std::span<const uint32_t> rows,
                                                      std::span<const int> group_of_set,
                                                      size_t groups, double from_s, double to_s,
                                                      double threshold, WindowStatsArena& arena);

// A series selector: a series is kept when it carries every (label name, value)
// pair; an empty selector keeps every series.
using LabelSelector = std::span<const std::pair<std::string, std::string>>;
bool MatchesSelector(const Labels& labels, LabelSelector selector);

// Stats of a window from metric snapshots alone (reduced fidelity: quantiles from
// histogram buckets; no per-request figures), over the series that match `selector`
// (the histograms, counters and gauges alike). REQUIRES: >= 2 snapshots (else
// InvalidArgument).
Result<WindowStats> WindowStatsFromMetrics(std::span<const MetricSnapshot> snapshots, double from_s,
                                           double to_s, LabelSelector selector = {});

// One value of a label in a metric window: the metrics-only splits of a diagnosis.
struct MetricGroupWindowStats {
  std::string value;   // the label's value; "" for series carrying none of the labels
  std::string parent;  // the group's first TTFT series' value of a parent label, or ""
  WindowStats stats;   // as WindowStatsFromMetrics' over the group's series alone
  // TTFT observations above the threshold: the count above the bucket holding it
  // plus the part of that bucket above it, linear inside the bucket (the assumption
  // of histogram_quantile). Fractional.
  double above = 0;
};

// The statistics of each value of a label over a metric window (a delta of
// `snapshots`, WindowDelta): a series' value is that of the first of `labels` it
// carries (alternatives in order of preference, e.g. replica, pod, instance);
// `parent_labels` likewise name each group's parent (a replica's region). Groups are
// sorted by value; none when no TTFT series carries any of `labels`. A group's
// `replicas` counts the distinct replica names (replica, pod or instance label) of
// its TTFT series. REQUIRES: >= 2 snapshots (else InvalidArgument).
Result<std::vector<MetricGroupWindowStats>> GroupWindowStatsFromMetrics(
    std::span<const MetricSnapshot> snapshots, double from_s, double to_s,
    std::span<const std::string> labels, std::span<const std::string> parent_labels,
    double threshold);

// -----------------------------------------------------------------------------
// Per-group statistics (`ttft stats`)
// -----------------------------------------------------------------------------

struct SummaryOptions {
  std::optional<std::string> by;  // a label name
  // The window: spans by arrival_s in [from_s, to_s); `ttft stats` of scrape files
  // takes the scrapes covering it (SnapshotsCovering, ttft/dataset.h).
  double from_s = -std::numeric_limits<double>::infinity();
  double to_s = std::numeric_limits<double>::infinity();
};

// One group's statistics. `stats` spans the group's first to last arrival (spans) or
// the first to last scrape (metrics), so its request_rate_rps is the group's rate;
// NaN with fewer than two requests or one scrape.
struct GroupSummary {
  Labels key;  // empty without --by
  WindowStats stats;
};

// Exact per-group statistics (StatsDetail::kFull) of a span table. `by` must be a span
// label or "status" (InvalidArgument otherwise). Groups are sorted by key.
Result<std::vector<GroupSummary>> SummarizeSpans(const SpanTable& table,
                                                 const SummaryOptions& options);

// Bounded memory: a SpanSink keeping one DDSketch per quantity per group (no table),
// for inputs too large to hold. The same definitions as SummarizeSpans.
class StreamingStats : public SpanSink {
 public:
  // InvalidArgument when options.by is neither a span label nor "status".
  static Result<std::unique_ptr<StreamingStats>> Create(SummaryOptions options,
                                                        double alpha = DDSketch::kDefaultAlpha);
  ~StreamingStats() override;
  void Add(const SpanRecord& span) override;
  std::vector<GroupSummary> Finish() const;

 private:
  StreamingStats(SummaryOptions options, double alpha);
  struct Group;
  SummaryOptions options_;
  double alpha_;
  std::optional<SpanLabel> label_;
  bool by_status_ = false;
  std::map<std::string, std::unique_ptr<Group>, std::less<>> groups_;
};

// Per-group statistics of a metric window (a WindowDelta, or one cumulative scrape):
// quantiles with PromQL histogram_quantile semantics and their bucket bounds,
// requests = TTFT _count, hit rate = prefix-cache hits / queries. `by` groups series
// by any label (series without it go to an empty value). No rate (the caller knows
// the window's length).
Result<std::vector<GroupSummary>> SummarizeMetrics(const MetricSnapshot& window,
                                                   const SummaryOptions& options);

}  // namespace ttft

#endif  // TTFT_WINDOW_STATS_H_
