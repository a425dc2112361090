// libFuzzer target: saved /api/v1/query_range responses -> snapshots (the body the
// HTTP client streams in, bounded by kMaxPromResponseBytes). Any body gives series or
// an error with a message; the snapshots' names and labels are valid UTF-8
// (telemetry/metrics_fuzz_checks.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "telemetry/metrics_fuzz_checks.h"
#include "ttft/prometheus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto series =
      ttft::ParsePromQueryJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!series.ok()) {
    if (series.status().message().empty()) __builtin_trap();
    return 0;
  }
  for (const ttft::MetricSnapshot& snap : ttft::SnapshotsFromSeries(*series)) {
    ttft::internal::CheckSnapshot(snap, /*histograms_checked=*/false);
  }
  return 0;
}
