// libFuzzer target: the measurement table of `ttft validate` (ParseMeasurements). Any
// text gives rows or an error with a message, never a crash or an exception.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ttft/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto rows = ttft::ParseMeasurements(text, "fuzz.csv");
  if (!rows.ok() && rows.status().message().empty()) __builtin_trap();
  return 0;
}
