// Private to the lint module.
#ifndef TTFT_LINT_INTERNAL_H_
#define TTFT_LINT_INTERNAL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/core.h"

namespace ttft::lint {

// One step of a vars-file path: a key (index < 0) or a list index.
struct PathStep {
  std::string key;
  int64_t index = -1;
};
Result<std::vector<PathStep>> ParsePath(std::string_view path);

// The byte offset of the first invalid UTF-8 sequence in s, or -1.
int64_t FirstInvalidUtf8(std::string_view s);

// The chained block hashes of `ids` (full blocks only), from the fixed root seed.
std::vector<uint64_t> BlockHashes(const std::vector<int32_t>& ids, int block_size);
inline constexpr uint64_t kRootHash = 0x9E3779B97F4A7C15ull;

}  // namespace ttft::lint

#endif  // TTFT_LINT_INTERNAL_H_
