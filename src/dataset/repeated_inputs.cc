// Inputs given twice (ttft/dataset.h, DropRepeatedInputs): an ordinary shell glob over
// overlapping folders, or a file copied next to itself, would otherwise count the same
// requests or scrapes twice.
#include <fmt/format.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "ttft/dataset.h"

namespace ttft {
namespace {

// XXH3-128 of a file's bytes (nullopt when it cannot be read: its reader reports that).
std::optional<std::pair<uint64_t, uint64_t>> HashFile(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return std::nullopt;
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> st(XXH3_createState(),
                                                                     &XXH3_freeState);
  if (!st || XXH3_128bits_reset(st.get()) != XXH_OK) return std::nullopt;
  std::vector<char> buf(size_t{1} << 20);
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) {
    XXH3_128bits_update(st.get(), buf.data(), n);
  }
  if (std::ferror(f.get())) return std::nullopt;
  const XXH128_hash_t h = XXH3_128bits_digest(st.get());
  return std::make_pair(h.high64, h.low64);
}

}  // namespace

std::vector<std::string> DropRepeatedInputs(std::span<const std::string> paths,
                                            ReadReport& report) {
  std::vector<std::string> out;
  if (paths.size() < 2) return {paths.begin(), paths.end()};
  std::map<std::pair<dev_t, ino_t>, std::string> by_identity;
  std::map<off_t, std::vector<std::string>> by_size;  // kept regular files, by size
  std::map<std::string, std::pair<uint64_t, uint64_t>> hashes;
  auto hash_of = [&](const std::string& p) {
    auto it = hashes.find(p);
    if (it != hashes.end()) return std::optional(it->second);
    auto h = HashFile(p);
    if (h) hashes.emplace(p, *h);
    return h;
  };
  for (const std::string& p : paths) {
    struct stat sb {};
    if (p == "-" || ::stat(p.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) {
      out.push_back(p);
      continue;
    }
    auto [it, fresh] = by_identity.emplace(std::make_pair(sb.st_dev, sb.st_ino), p);
    if (!fresh) {
      report.warnings.push_back(
          fmt::format("{}: the same file as {}, given twice: read once", p, it->second));
      continue;
    }
    std::vector<std::string>& same_size = by_size[sb.st_size];
    const std::string* copy_of = nullptr;
    if (!same_size.empty()) {
      const auto h = hash_of(p);
      for (const std::string& q : same_size) {
        if (h && hash_of(q) == h) {
          copy_of = &q;
          break;
        }
      }
    }
    if (copy_of != nullptr) {
      report.warnings.push_back(fmt::format(
          "{}: the same bytes as {} (a copy), so the same records: read once", p, *copy_of));
      continue;
    }
    same_size.push_back(p);
    out.push_back(p);
  }
  return out;
}

}  // namespace ttft
