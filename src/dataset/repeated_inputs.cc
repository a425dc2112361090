// Inputs given twice (ttft/dataset.h, DropRepeatedInputs, DropRequestsRepeatedAcrossFiles):
// an ordinary shell glob over overlapping folders, a file copied next to itself or two
// exports that overlap would otherwise count the same requests or scrapes twice.
#include <fmt/format.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <absl/container/flat_hash_map.h>

#include <cstdio>
#include <cstring>
#include <iterator>
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

void DropRequestsRepeatedAcrossFiles(SpanTable& table, std::span<const size_t> file_end_rows,
                                     std::span<const std::string> files, ReadReport& report) {
  size_t files_with_rows = 0;
  for (size_t k = 0; k < file_end_rows.size(); ++k) {
    const size_t begin = k == 0 ? 0 : file_end_rows[k - 1];
    if (file_end_rows[k] > begin) ++files_with_rows;
  }
  if (files_with_rows < 2) return;
  // A row's bytes, hashed: every column, the label set by its interned id (equal
  // label sets share an id in one table).
  auto row_hash = [&](size_t i) {
    struct {
      double arrival;
      float f[8];
      int32_t tokens[3];
      int16_t preemptions;
      uint8_t status;
      uint32_t labels;
    } key;
    std::memset(&key, 0, sizeof key);  // padding too: the bytes are hashed
    key.arrival = table.arrival_s()[i];
    const std::span<const float> cols[] = {
        table.queue_s(),  table.prefill_s(), table.front_end_s(), table.ttft_s(),
        table.decode_s(), table.e2e_s(),     table.itl_mean_s(),  table.itl_max_s()};
    static_assert(std::size(cols) == std::size(key.f));
    for (size_t c = 0; c < std::size(cols); ++c) key.f[c] = cols[c][i];
    key.tokens[0] = table.prompt_tokens()[i];
    key.tokens[1] = table.cached_tokens()[i];
    key.tokens[2] = table.output_tokens()[i];
    key.preemptions = table.preemptions()[i];
    key.status = static_cast<uint8_t>(table.status()[i]);
    key.labels = table.label_set()[i];
    return XXH3_64bits(&key, sizeof key);
  };
  // hash -> the file that first had it; rows are compared by hash (XXH3-64 collisions
  // between distinct rows: about n^2 / 2^65).
  absl::flat_hash_map<uint64_t, uint32_t> first_file;
  first_file.reserve(table.size());
  std::vector<size_t> skip;
  for (size_t k = 0; k < file_end_rows.size(); ++k) {
    const size_t begin = k == 0 ? 0 : file_end_rows[k - 1];
    // A file's rows join the map after it, so rows equal within one file (requests
    // without ids) are never taken for repeats.
    std::vector<std::pair<uint64_t, size_t>> mine;
    for (size_t i = begin; i < file_end_rows[k]; ++i) {
      const uint64_t h = row_hash(i);
      auto it = first_file.find(h);
      if (it != first_file.end()) {
        skip.push_back(i);
        // The table keeps no line numbers; the record's ordinal in its file names it.
        report.Skip(files[k], 0, "duplicate request (in two files)",
                    fmt::format("request {} read from the file: already read from {}",
                                i - begin + 1, files[it->second]));
        --report.records_read;
      } else {
        mine.emplace_back(h, i);
      }
    }
    for (const auto& [h, i] : mine) first_file.emplace(h, static_cast<uint32_t>(k));
  }
  if (skip.empty()) return;
  SpanTable kept;
  kept.Append(table, skip);
  table = std::move(kept);
}

}  // namespace ttft
