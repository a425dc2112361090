// libFuzzer target: the calibration profile parser (ParseCalibrationProfile) and the
// `vllm bench serve` result reader (ParseBenchServeJson). Any bytes give a value or an
// error with a message, never a crash or an exception. A profile that parses has every
// cost parameter finite and within its field's range (ttft/calibration.h), and writing
// it (CalibrationProfileYaml) and parsing that again gives the same values, bit for
// bit; a bench result keeps the row properties of validate/measurement_fuzz_checks.h.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ttft/calibrate.h"
#include "ttft/calibration.h"
#include "validate/measurement_fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto prof = ttft::ParseCalibrationProfile(text, "fuzz.yaml");
  if (!prof.ok() && prof.status().message().empty()) __builtin_trap();
  if (prof.ok()) {
    for (const ttft::CostParamField& f : ttft::CostParamFields()) {
      const double v = prof->cost.*f.field;
      if (!std::isfinite(v) || v < f.min || v > f.max) __builtin_trap();
    }
    const std::string yaml = ttft::CalibrationProfileYaml(prof->cost, prof->async_scheduling, "");
    auto again = ttft::ParseCalibrationProfile(yaml, "written.yaml");
    if (!again.ok()) __builtin_trap();
    for (const ttft::CostParamField& f : ttft::CostParamFields()) {
      if (again->cost.*f.field != prof->cost.*f.field) __builtin_trap();
    }
    if (again->async_scheduling != prof->async_scheduling) __builtin_trap();
  }
  ttft::BenchAssumptions a;
  a.gpu = "h100-sxm";
  auto row = ttft::ParseBenchServeJson(text, "fuzz.json", a);
  if (!row.ok() && row.status().message().empty()) __builtin_trap();
  if (row.ok()) ttft::internal::CheckMeasurementRow(*row);
  return 0;
}
