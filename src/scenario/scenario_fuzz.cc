// libFuzzer target: any text must parse into a Scenario or an error, never a crash
// or an exception. Built by scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ttft/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto sc = ttft::ParseScenario(text, "fuzz.yaml", "");
  if (!sc.ok() && sc.status().message().empty()) __builtin_trap();
  return 0;
}
