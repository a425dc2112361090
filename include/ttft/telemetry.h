// -----------------------------------------------------------------------------
// File: ttft/telemetry.h
// -----------------------------------------------------------------------------
//
// Telemetry in and out: the span JSON Lines format (docs/spans.md) and the
// Prometheus text exposition format (version 0.0.4) with vLLM v1 metric names.
//
// The simulator writes through this module; real telemetry is read through it, so
// the diagnosis never knows whether its input was simulated. This module knows
// nothing of the engine's internals: it formats and parses plain data.
//
// Example:
//
//   ttft::SpanJsonlWriter w;
//   TTFT_RETURN_IF_ERROR(w.Open("out/spans.jsonl"));
//   TTFT_RETURN_IF_ERROR(w.Write(span));
//   TTFT_RETURN_IF_ERROR(w.Close());
//
// Thread safety: writers are not thread-safe; use one per thread.

#ifndef TTFT_TELEMETRY_H_
#define TTFT_TELEMETRY_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ttft/core.h"

namespace ttft {

// -----------------------------------------------------------------------------
// Spans as JSON Lines
// -----------------------------------------------------------------------------

// Appends one span as a single JSON object (no trailing newline) to `out`.
// Field order is fixed and numbers are printed with the shortest round-trip form,
// so the same span always gives the same bytes. NaN durations are written as null.
void AppendSpanJson(const Span& span, std::string& out);

// Streams spans to a file, one JSON object per line, through a buffer.
class SpanJsonlWriter {
 public:
  SpanJsonlWriter() = default;
  ~SpanJsonlWriter();
  SpanJsonlWriter(const SpanJsonlWriter&) = delete;
  SpanJsonlWriter& operator=(const SpanJsonlWriter&) = delete;

  Status Open(const std::string& path);
  // REQUIRES: Open() succeeded.
  Status Write(const Span& span);
  // Flushes and closes; reports a failed write. Safe to call twice.
  Status Close();
  int64_t spans_written() const { return spans_written_; }

 private:
  Status Flush();
  std::FILE* file_ = nullptr;
  std::string path_;
  std::string buf_;
  int64_t spans_written_ = 0;
};

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
  double value = 0;          // counters and gauges
  HistogramValue histogram;  // histograms
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

// Formats a double like prometheus_client's floatToGoString: "+Inf", "-Inf", "NaN",
// integers with ".0", Go-style exponents ("1e+06") at and above 1e6 for
// integral values.
std::string FormatPromFloat(double v);

}  // namespace ttft

#endif  // TTFT_TELEMETRY_H_
