// libFuzzer target: the trace readers must turn any input into records or an error,
// never a crash. The first byte picks the format. Built by scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

#include "ttft/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ttft::TraceReader;
  using ttft::TraceRecord;
  if (size == 0) return 0;
  const auto format =
      (data[0] & 1) ? ttft::TraceSpec::Format::kAzure : ttft::TraceSpec::Format::kMooncake;
  auto in = std::make_unique<std::istringstream>(
      std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  TraceReader reader(format, std::move(in), "fuzz");
  TraceRecord rec;
  for (int i = 0; i < 100000; ++i) {
    auto more = reader.Next(rec);
    if (!more.ok() || !*more) break;
    if (rec.input_tokens < 1 || rec.output_tokens < 0 || rec.t_s < 0) __builtin_trap();
  }
  return 0;
}
