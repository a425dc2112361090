// libFuzzer target: any text must parse into a GateConfig or an error with a message,
// never a crash or an exception. Built with -DTTFT_BUILD_FUZZ=ON (clang).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ttft/gate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = ttft::ParseGateConfig(text, "fuzz.yaml");
  if (!config.ok() && config.status().message().empty()) __builtin_trap();
  return 0;
}
