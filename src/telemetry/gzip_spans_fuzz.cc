// libFuzzer target: gzip input (the InputStream under every reader). The bytes are
// written to a file and read as spans, gzip-compressed or not as their first bytes
// say: any input ends in spans or an error with a message, never a crash, and the
// accepted spans keep the properties of telemetry/span_fuzz_checks.h (labels are valid
// UTF-8, so they serialise as JSON). Bounded by kMaxLineBytes per line.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "telemetry/span_fuzz_checks.h"
#include "ttft/spans.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/ttft_gzip_fuzz_" + std::to_string(::getpid());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  ttft::SpanTable table;
  ttft::ReadReport report;
  const ttft::Status st = ttft::ReadSpanTable(path, ttft::SpanReadOptions{}, table, report);
  if (!st.ok() && st.message().empty()) __builtin_trap();
  ttft::internal::CheckAcceptedSpans(table, report);
  return 0;
}
