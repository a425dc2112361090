// libFuzzer target: the events file (ParseEvents). Any text gives events or an error
// with a message, never a crash or an exception; every event has a finite time and
// strings that serialise as JSON (valid UTF-8), as the reports write them.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "ttft/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto events = ttft::ParseEvents(text, "fuzz.jsonl");
  if (!events.ok()) {
    if (events.status().message().empty()) __builtin_trap();
    return 0;
  }
  for (const ttft::Annotation& a : *events) {
    if (!std::isfinite(a.at_s)) __builtin_trap();
    try {
      (void)nlohmann::json({{"kind", a.kind}, {"target", a.target}, {"detail", a.detail}}).dump();
    } catch (const nlohmann::json::exception&) {
      __builtin_trap();  // a string the JSON writers would throw on
    }
  }
  return 0;
}
