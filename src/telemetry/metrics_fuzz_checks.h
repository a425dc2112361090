// Properties the metrics fuzz targets check on every snapshot a reader or WindowDelta
// returns: names, label names and values and HELP text are valid UTF-8 (they reach the
// JSON and terminal writers), and, where `histograms_checked`, every histogram keeps
// the invariant of ttft/metrics.h (finite increasing bounds, finite non-negative
// cumulative counts, non-decreasing and at most the +Inf count); counters are never
// negative or NaN. A violation traps, so libFuzzer keeps the input.
#ifndef TTFT_TELEMETRY_METRICS_FUZZ_CHECKS_H_
#define TTFT_TELEMETRY_METRICS_FUZZ_CHECKS_H_

#include <cmath>

#include "ttft/format.h"
#include "ttft/metrics.h"

namespace ttft::internal {

inline void CheckHistogram(const HistogramValue& h) {
  if (h.upper_bounds.size() != h.cumulative_counts.size()) __builtin_trap();
  if (!std::isfinite(h.count) || h.count < 0) __builtin_trap();
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    const double c = h.cumulative_counts[i];
    if (!std::isfinite(h.upper_bounds[i]) || !std::isfinite(c) || c < 0 || c > h.count) {
      __builtin_trap();
    }
    if (i > 0 && (h.upper_bounds[i] <= h.upper_bounds[i - 1] || c < h.cumulative_counts[i - 1])) {
      __builtin_trap();
    }
  }
}

inline void CheckSnapshot(const MetricSnapshot& snap, bool histograms_checked) {
  for (const MetricFamily& f : snap.families) {
    if (!escape::IsValidUtf8(f.name) || !escape::IsValidUtf8(f.help)) __builtin_trap();
    for (const MetricSeries& s : f.series) {
      for (const auto& [name, value] : s.labels) {
        if (!escape::IsValidUtf8(name) || !escape::IsValidUtf8(value)) __builtin_trap();
      }
      if (histograms_checked && f.type == MetricType::kHistogram) CheckHistogram(s.histogram);
      // Parsed counters are finite; a window's increase may overflow to +Inf.
      if (f.type == MetricType::kCounter && !(s.value >= 0)) __builtin_trap();
    }
  }
}

}  // namespace ttft::internal

#endif  // TTFT_TELEMETRY_METRICS_FUZZ_CHECKS_H_
