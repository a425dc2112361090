// libFuzzer target: span otlp reader.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ttft/spans.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ttft::SpanTable table;
  ttft::ReadReport report;
  ttft::SpanReadOptions options;
  options.format = ttft::InputFormat::kOtlp;
  (void)ttft::ParseSpans(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz",
                         options, table, report);
  for (size_t i = 0; i < table.size(); ++i) (void)table.Get(i);
  (void)report.Summary();
  return 0;
}
