// -----------------------------------------------------------------------------
// File: ttft/summary.h
// -----------------------------------------------------------------------------
//
// Per-group summaries for `ttft stats` (docs/telemetry.md): p50/p90/p99/p99.9, counts,
// rates and the prefix-cache hit rate of a span table (exact), of a span stream
// (DDSketch, bounded memory) or of a metric window (histogram_quantile semantics).
//
// Thread safety: the functions are re-entrant; a StreamingSummarizer is not
// thread-safe.

#ifndef TTFT_SUMMARY_H_
#define TTFT_SUMMARY_H_

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ttft/core.h"
#include "ttft/metrics.h"
#include "ttft/spans.h"
#include "ttft/stats.h"

namespace ttft {

// p50/p90/p99/p99.9 of one quantity. `available` false means the input cannot give
// it (printed as null). From histograms every quantile carries the bucket it falls in.
struct QuantileSet {
  static constexpr std::array<double, 4> kQs = {0.5, 0.9, 0.99, 0.999};
  bool available = false;
  std::array<double, 4> values{};
  double mean = std::numeric_limits<double>::quiet_NaN();
  int64_t count = 0;  // observations behind the figures
  bool from_buckets = false;
  std::array<BucketQuantile, 4> buckets{};  // when from_buckets
  bool from_sketch = false;                 // DDSketch, relative error `sketch_alpha`
  double sketch_alpha = 0;
  std::string note;  // e.g. why accuracy is limited
};

struct GroupSummary {
  Labels key;  // empty without --by
  int64_t count = 0;
  double rate_rps = std::numeric_limits<double>::quiet_NaN();  // count / window
  double window_s = std::numeric_limits<double>::quiet_NaN();
  QuantileSet ttft_s, queue_s, prefill_s, itl_s, prompt_tokens;
  double prefix_cache_hit_rate = std::numeric_limits<double>::quiet_NaN();  // NaN = null
  std::string hit_rate_note;
};

struct SummaryOptions {
  std::optional<std::string> by;                             // a label name
  double from_s = -std::numeric_limits<double>::infinity();  // arrival_s window, spans only
  double to_s = std::numeric_limits<double>::infinity();
};

// Exact summaries of a span table: selection-based quantiles per group. `by` must be
// a span label or "status" (InvalidArgument otherwise). Groups are sorted by key.
Result<std::vector<GroupSummary>> SummarizeSpans(const SpanTable& table,
                                                 const SummaryOptions& options);

// Bounded-memory summaries: a SpanSink keeping one DDSketch per quantity per group
// (no table), for inputs too large to hold.
class StreamingSummarizer : public SpanSink {
 public:
  explicit StreamingSummarizer(SummaryOptions options, double alpha = DDSketch::kDefaultAlpha);
  ~StreamingSummarizer() override;
  // REQUIRES: options.by is empty or a span label or "status" (checked by Create).
  static Result<std::unique_ptr<StreamingSummarizer>> Create(SummaryOptions options);
  void Add(const SpanRecord& span) override;
  std::vector<GroupSummary> Finish() const;

 private:
  struct Group;
  SummaryOptions options_;
  double alpha_;
  std::optional<SpanLabel> label_;
  bool by_status_ = false;
  std::map<std::string, std::unique_ptr<Group>, std::less<>> groups_;
};

// Summaries from a metric window (a WindowDelta, or one cumulative scrape):
// quantiles with PromQL histogram_quantile semantics and their bucket bounds,
// count = TTFT _count, hit rate = prefix-cache hits / queries. `by` groups series
// by any label (series without it go to an empty value).
Result<std::vector<GroupSummary>> SummarizeMetrics(const MetricSnapshot& window,
                                                   const SummaryOptions& options);

}  // namespace ttft

#endif  // TTFT_SUMMARY_H_
