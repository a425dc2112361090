// libFuzzer target: span JSONL reader (ParseSpans, format forced to jsonl): accepted
// spans keep the properties of telemetry/span_fuzz_checks.h; and a differential check: the fast
// path and simdjson alone must read the same spans and report the same issues.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "telemetry/span_fuzz_checks.h"
#include "telemetry/span_readers_internal.h"
#include "ttft/spans.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ttft::SpanTable table;
  ttft::ReadReport report;
  ttft::SpanReadOptions options;
  options.format = ttft::InputFormat::kSpanJsonl;
  (void)ttft::ParseSpans(text, "fuzz", options, table, report);
  ttft::internal::CheckAcceptedSpans(table, report);

  ttft::internal::RecordingSink fast_sink, slow_sink;
  ttft::ReadReport fast_report, slow_report;
  const ttft::Status fast =
      ttft::internal::ParseSpansWithFastPath(text, "fuzz", options, fast_sink, fast_report, true);
  const ttft::Status slow =
      ttft::internal::ParseSpansWithFastPath(text, "fuzz", options, slow_sink, slow_report, false);
  if (fast.ToString() != slow.ToString() || fast_sink.text() != slow_sink.text() ||
      ttft::internal::ReportText(fast_report) != ttft::internal::ReportText(slow_report)) {
    std::fprintf(stderr, "fast path differs from simdjson:\nfast: %s\n%s\nslow: %s\n%s\n",
                 fast_sink.text().c_str(), ttft::internal::ReportText(fast_report).c_str(),
                 slow_sink.text().c_str(), ttft::internal::ReportText(slow_report).c_str());
    std::abort();
  }
  return 0;
}
