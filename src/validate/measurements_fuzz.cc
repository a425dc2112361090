// libFuzzer target: the measurement table of `ttft validate` (ParseMeasurements). Any
// text gives rows or an error with a message, never a crash or an exception; every
// row kept for simulation keeps the properties of validate/measurement_fuzz_checks.h.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ttft/validate.h"
#include "validate/measurement_fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto rows = ttft::ParseMeasurements(text, "fuzz.csv");
  if (!rows.ok()) {
    if (rows.status().message().empty()) __builtin_trap();
    return 0;
  }
  if (rows->empty()) __builtin_trap();  // "no data rows" is an error, not an empty table
  for (const ttft::MeasurementRow& m : *rows) ttft::internal::CheckMeasurementRow(m);
  return 0;
}
