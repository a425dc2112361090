// libFuzzer target: Prometheus exposition parser, window delta and metric summaries.
// Every snapshot parsed, and the window delta of three of them, keeps the properties of
// telemetry/metrics_fuzz_checks.h (valid UTF-8, the histogram invariant, so no negative
// or non-finite count reaches a report).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "telemetry/metrics_fuzz_checks.h"
#include "ttft/metrics.h"
#include "ttft/window_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ttft::ReadReport report;
  auto snap = ttft::ParseExposition(std::string_view(reinterpret_cast<const char*>(data), size), {},
                                    report);
  if (!snap.ok()) {
    if (snap.status().message().empty()) __builtin_trap();
    return 0;
  }
  ttft::internal::CheckSnapshot(*snap, /*histograms_checked=*/true);
  std::vector<ttft::MetricSnapshot> snaps = {ttft::MetricSnapshot{}, *snap, *snap};
  auto window = ttft::WindowDelta(snaps, report);
  if (window.ok()) {
    ttft::internal::CheckSnapshot(*window, /*histograms_checked=*/true);
    (void)ttft::SummarizeMetrics(*window, {});
  }
  (void)ttft::SummarizeMetrics(*snap, {});
  return 0;
}
