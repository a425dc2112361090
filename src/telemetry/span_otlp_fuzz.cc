// libFuzzer target: span otlp reader; accepted spans keep the properties of
// telemetry/span_fuzz_checks.h.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "telemetry/span_fuzz_checks.h"
#include "ttft/spans.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ttft::SpanTable table;
  ttft::ReadReport report;
  ttft::SpanReadOptions options;
  options.format = ttft::InputFormat::kOtlp;
  (void)ttft::ParseSpans(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz",
                         options, table, report);
  ttft::internal::CheckAcceptedSpans(table, report);
  return 0;
}
