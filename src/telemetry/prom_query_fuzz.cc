// libFuzzer target: saved /api/v1/query_range responses -> snapshots.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ttft/prometheus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto series =
      ttft::ParsePromQueryJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (series.ok()) (void)ttft::SnapshotsFromSeries(*series);
  return 0;
}
