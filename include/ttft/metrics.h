// -----------------------------------------------------------------------------
// File: ttft/metrics.h
// -----------------------------------------------------------------------------
//
// Metrics as plain data: a model of one Prometheus scrape (MetricSnapshot), the text
// exposition format 0.0.4 written as prometheus_client writes it and parsed from any
// exporter, the canonical quantities a TTFT diagnosis needs under their vLLM V1 / V0
// and SGLang names, and the increase over a window of scrapes (WindowDelta).
//
// Example:
//
//   ttft::ReadReport report;
//   TTFT_ASSIGN_OR_RETURN(auto snapshot, ttft::ReadExpositionFile("metrics.prom", false, report));
//   const ttft::MetricFamily* ttft = ttft::FindCanonical(snapshot, ttft::CanonicalMetric::kTtft);
//
// Thread safety: the functions are re-entrant.

#ifndef TTFT_METRICS_H_
#define TTFT_METRICS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ttft/core.h"
#include "ttft/input.h"

namespace ttft {

// -----------------------------------------------------------------------------
// Metrics: a plain model of one exposition snapshot
// -----------------------------------------------------------------------------

// Label pairs, kept sorted by name (the order prometheus_client prints).
using Labels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType : uint8_t { kCounter, kGauge, kHistogram, kSummary, kUntyped };
std::string_view ToString(MetricType t);

// A histogram series. `upper_bounds` are the finite `le` bounds in increasing
// order; `cumulative_counts[i]` counts observations <= upper_bounds[i];
// `count` is the +Inf bucket. Invariant: cumulative_counts is non-decreasing and
// <= count.
struct HistogramValue {
  std::vector<double> upper_bounds;
  std::vector<double> cumulative_counts;
  double count = 0;
  double sum = 0;
};

struct MetricSeries {
  Labels labels;
  double value = 0;          // counters (>= 0, not NaN) and gauges (any value)
  HistogramValue histogram;  // histograms
  // Summaries: (quantile, value) pairs in exposition order; `histogram.count` and
  // `histogram.sum` carry _count and _sum.
  std::vector<std::pair<double, double>> summary_quantiles;
};

// A metric family as exposed. For counters `name` is the exposed sample name
// (with `_total`), for histograms the base name (samples add _bucket/_sum/_count).
struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kUntyped;
  std::vector<MetricSeries> series;
};

struct MetricSnapshot {
  double timestamp_s = 0;  // scrape time, in the run's time base
  std::vector<MetricFamily> families;
};

// Renders a snapshot in the Prometheus text exposition format 0.0.4, as
// prometheus_client does: "# HELP", "# TYPE", then samples; `le` formatted like
// Python's float repr ("0.001", "1.0", "1e+06"), "+Inf" last.
std::string FormatExposition(const MetricSnapshot& snapshot);

// A series for messages: `name{a="x",b="y"}` (values as they are, not escaped).
std::string SeriesText(std::string_view name, const Labels& labels);

// Formats a double like prometheus_client's floatToGoString: "+Inf", "-Inf", "NaN",
// integers with ".0", Go-style exponents ("1e+06") at and above 1e6 for
// integral values.
std::string FormatPromFloat(double v);

// -----------------------------------------------------------------------------
// Prometheus text exposition format 0.0.4: parsing; canonical metrics; windows
// -----------------------------------------------------------------------------

struct ExpositionParseOptions {
  bool strict = false;
  std::string source = "<exposition>";  // file name for issues
};

// Parses one scrape. Accepts any label order, escapes (\\, \", \n) in label values,
// optional HELP/TYPE lines and timestamps, `le`/`quantile` as numbers ("1e+06",
// "+Inf"), NaN/+Inf/-Inf values of gauges; a counter's value that is negative,
// infinite or NaN is a bad line (OpenMetrics 1.0: a Total is non-NaN, from 0).
// `_created` samples and the `*_created` gauge families prometheus_client emits
// beside counters and histograms are dropped. Samples without a TYPE are untyped
// families, except that *_bucket (with le),
// *_sum and *_count siblings are assembled into a histogram. A last line without a
// newline is reported as a scrape cut mid-line and dropped. Bad lines are skipped
// and reported (DataError at the first under strict).
Result<MetricSnapshot> ParseExposition(std::string_view text, const ExpositionParseOptions& options,
                                       ReadReport& report);

// Reads and parses a file ("-" for stdin, gzip detected).
Result<MetricSnapshot> ReadExpositionFile(const std::string& path, bool strict, ReadReport& report);

// Quantities that tell TTFT regressions apart, whatever the engine calls them.
enum class CanonicalMetric : uint8_t {
  kTtft,                // histogram, s
  kQueue,               // histogram, s
  kPrefill,             // histogram, s
  kDecode,              // histogram, s
  kE2e,                 // histogram, s
  kItl,                 // histogram, s
  kPromptTokensHist,    // histogram, tokens per request
  kPrefixCacheHits,     // counter, tokens (blocks in early V1)
  kPrefixCacheQueries,  // counter, tokens (blocks in early V1)
  kPreemptions,         // counter
  kPromptTokens,        // counter, tokens
  kCachedPromptTokens,  // counter, tokens
  kKvCacheUsage,        // gauge, fraction 0..1
  kRunning,             // gauge, requests
  kWaiting,             // gauge, requests
  kRequestsFinished,    // counter, requests
};
std::string_view ToString(CanonicalMetric m);  // "ttft", "queue", ...

// The exposed family names that carry `m`, in order of preference: vLLM V1, vLLM V0
// / deprecated names, SGLang (docs/telemetry.md has the table).
std::span<const std::string_view> FamilyNamesFor(CanonicalMetric m);

// The first family of `snapshot` that carries `m`, or nullptr.
const MetricFamily* FindCanonical(const MetricSnapshot& snapshot, CanonicalMetric m);

// Every exposed family name of every CanonicalMetric (all spellings of FamilyNamesFor).
std::vector<std::string> CanonicalFamilyNames();

// Window increase between snapshots ordered in time, per series (family + labels),
// like PromQL's increase() WITHOUT extrapolation: the sum of positive differences
// between consecutive snapshots, where a decrease is a counter reset and the new
// value counts from zero. For histograms a reset is detected on _count and applies
// to the whole series (buckets, _sum, _count). Gauges take the last value. Series
// missing from the first snapshot count from zero (created in the window); counters
// and histograms missing from the last (a replica gone mid-window) keep their increase
// up to their last scrape, with a warning (none when it is zero: a replica drained
// before the window counts as gone); series whose bucket bounds change are
// skipped and reported. REQUIRES: >= 2 snapshots.
Result<MetricSnapshot> WindowDelta(std::span<const MetricSnapshot> snapshots, ReadReport& report);

}  // namespace ttft

#endif  // TTFT_METRICS_H_
