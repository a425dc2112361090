// libFuzzer target: the calibration profile parser (ParseCalibrationProfile) and the
// `vllm bench serve` result reader (ParseBenchServeJson). Any bytes give a value or an
// error with a message, never a crash or an exception.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ttft/calibrate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto prof = ttft::ParseCalibrationProfile(text, "fuzz.yaml");
  if (!prof.ok() && prof.status().message().empty()) __builtin_trap();
  ttft::BenchAssumptions a;
  a.gpu = "h100-sxm";
  auto row = ttft::ParseBenchServeJson(text, "fuzz.json", a);
  if (!row.ok() && row.status().message().empty()) __builtin_trap();
  return 0;
}
