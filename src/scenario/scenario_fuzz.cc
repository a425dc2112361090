// libFuzzer target: any text must parse into a Scenario or an error with a message,
// never a crash or an exception; a scenario that parses is within every limit of
// ValidateScenario (ttft/fleet.h: duration, scrape count, rates, token counts), so
// simulating it cannot run away. Built by scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ttft/fleet.h"
#include "ttft/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto sc = ttft::ParseScenario(text, "fuzz.yaml", "");
  if (!sc.ok()) {
    if (sc.status().message().empty()) __builtin_trap();
    return 0;
  }
  if (!ttft::ValidateScenario(*sc).ok()) __builtin_trap();
  return 0;
}
