// libFuzzer target for the vars file reader of `ttft lint --vars` (ParseVarsFile,
// ttft/lint.h): any bytes give the variables or an error naming "fuzz.yaml", never a
// crash, an exception or a hang (yaml-cpp's own nesting guard stops deep input). Checked
// invariants: every variable read has a path that parses, a line inside the file, and
// no path declared twice. Built by scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "lint/internal.h"
#include "ttft/lint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto vf = ttft::ParseVarsFile(text, "fuzz.yaml");
  if (!vf.ok()) {
    if (vf.status().message().rfind("fuzz.yaml", 0) != 0) std::abort();
    return 0;
  }
  int lines = 1;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  std::set<std::string> seen;
  for (const ttft::VarSpec& v : vf->vars) {
    if (!ttft::lint::ParsePath(v.path).ok()) std::abort();
    if (v.line < 1 || v.line > lines) std::abort();
    if (!seen.insert(v.path).second) std::abort();
  }
  return 0;
}
