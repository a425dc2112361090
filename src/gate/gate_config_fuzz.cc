// libFuzzer target: any text must parse into a GateConfig or an error with a message,
// never a crash or an exception; a config that parses keeps the ranges ttft/gate.h
// promises (a ratio threshold > 1, a difference threshold in (0, 1) for rates, finite;
// min_samples >= 1; confidence in (0.5, 1); resamples >= 100; alpha in (0, 0.5)), so
// no judge divides by zero or compares with NaN. The same bytes are also read as a
// sequential --state file (SequentialGate::FromJson). Built by scripts/fuzz.sh.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ttft/gate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // The same bytes as a --state file: a value or an error, and a state that reads in
  // keeps every log likelihood ratio finite through further looks.
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) {
    auto state = ttft::SequentialGate::FromJson(j, "state.json");
    if (!state.ok() && state.status().message().rfind("state.json", 0) != 0) __builtin_trap();
    if (state.ok()) {
      for (ttft::SequentialStream& s : state->streams) {
        s.Add(1000000, 1000);
        if (!std::isfinite(s.log_lr)) __builtin_trap();
      }
    }
  }
  auto config = ttft::ParseGateConfig(text, "fuzz.yaml");
  if (!config.ok()) {
    if (config.status().message().empty()) __builtin_trap();
    return 0;
  }
  if (!(config->confidence > 0.5 && config->confidence < 1)) __builtin_trap();
  if (config->bootstrap_resamples < 100) __builtin_trap();
  if (!(config->sequential_alpha > 0 && config->sequential_alpha < 0.5)) __builtin_trap();
  for (const ttft::GateCriterion& c : config->criteria) {
    if (!std::isfinite(c.threshold) || c.min_samples < 1) __builtin_trap();
    if (ttft::IsRatioMetric(c.metric) ? !(c.threshold > 1) : !(c.threshold > 0)) {
      __builtin_trap();
    }
  }
  return 0;
}
