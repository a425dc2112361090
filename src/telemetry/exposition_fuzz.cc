// libFuzzer target: Prometheus exposition parser, window delta and metric summaries.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "ttft/metrics.h"
#include "ttft/window_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ttft::ReadReport report;
  auto snap = ttft::ParseExposition(std::string_view(reinterpret_cast<const char*>(data), size), {},
                                    report);
  if (!snap.ok()) return 0;
  std::vector<ttft::MetricSnapshot> snaps = {ttft::MetricSnapshot{}, *snap, *snap};
  auto window = ttft::WindowDelta(snaps, report);
  if (window.ok()) (void)ttft::SummarizeMetrics(*window, {});
  (void)ttft::SummarizeMetrics(*snap, {});
  return 0;
}
