// The columnar span table and the span labels (ttft/spans.h).
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ttft/spans.h"

namespace ttft {
namespace {

constexpr std::array<std::string_view, kNumSpanLabels> kLabelNames = {
    "replica", "region", "tenant", "model", "template", "deploy"};

float ToFloat(double v) { return static_cast<float>(v); }
int32_t ToInt32(int64_t v) { return static_cast<int32_t>(std::clamp<int64_t>(v, -1, INT32_MAX)); }

constexpr uint32_t kEmptySlot = UINT32_MAX;

size_t SlotOf(uint64_t hash, size_t mask) {
  return static_cast<size_t>((hash * 0x9E3779B97F4A7C15ULL) >> 17) & mask;
}

// Rebuilds `slots` for ids [0, hashes.size()), sized for `room` ids: the smallest
// power of two, at least 16, that keeps them at most half full.
void Reindex(std::vector<uint32_t>& slots, size_t room, const std::vector<uint64_t>& hashes) {
  size_t n = 16;
  while (room * 2 > n) n *= 2;
  slots.assign(n, kEmptySlot);
  const size_t mask = n - 1;
  for (uint32_t id = 0; id < hashes.size(); ++id) {
    size_t i = SlotOf(hashes[id], mask);
    while (slots[i] != kEmptySlot) i = (i + 1) & mask;
    slots[i] = id;
  }
}

// Open addressing over `slots` (ids into `hashes`; linear probing, power-of-two size,
// at most half full): the id whose hash is `hash` and for which same(id) holds, or
// the id make() returns after inserting it (make() must append to `hashes`).
template <typename Same, typename Make>
uint32_t FindOrInsert(std::vector<uint32_t>& slots, const std::vector<uint64_t>& hashes,
                      uint64_t hash, Same same, Make make) {
  if ((hashes.size() + 1) * 2 > slots.size()) Reindex(slots, hashes.size() + 1, hashes);
  const size_t mask = slots.size() - 1;
  for (size_t i = SlotOf(hash, mask);; i = (i + 1) & mask) {
    const uint32_t id = slots[i];
    if (id == kEmptySlot) {
      const uint32_t fresh = make();
      slots[i] = fresh;
      return fresh;
    }
    if (hashes[id] == hash && same(id)) return id;
  }
}

}  // namespace

std::string_view ToString(SpanLabel l) { return kLabelNames[static_cast<size_t>(l)]; }

std::optional<SpanLabel> ParseSpanLabel(std::string_view s) {
  for (size_t i = 0; i < kLabelNames.size(); ++i) {
    if (kLabelNames[i] == s) return static_cast<SpanLabel>(i);
  }
  if (s == "template_version") return SpanLabel::kTemplate;
  return std::nullopt;
}

auto SpanTable::DataColumns() {
  return std::tie(arrival_s_, queue_s_, prefill_s_, front_end_s_, ttft_s_, decode_s_, e2e_s_,
                  itl_mean_s_, itl_max_s_, prompt_tokens_, cached_tokens_, output_tokens_,
                  preemptions_, status_);
}

auto SpanTable::DataColumns() const {
  return std::tie(arrival_s_, queue_s_, prefill_s_, front_end_s_, ttft_s_, decode_s_, e2e_s_,
                  itl_mean_s_, itl_max_s_, prompt_tokens_, cached_tokens_, output_tokens_,
                  preemptions_, status_);
}

namespace {

// Calls f(std::integral_constant<size_t, i>, a_i, b_i) for each element i of two tuples.
template <typename A, typename B, typename F>
void ForEachPair(A&& a, B&& b, F&& f) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    (f(std::integral_constant<size_t, I>{}, std::get<I>(a), std::get<I>(b)), ...);
  }
  (std::make_index_sequence<std::tuple_size_v<std::decay_t<A>>>{});
}

}  // namespace

void SpanTable::Reserve(size_t n) {
  std::apply([&](auto&... c) { (c.reserve(n), ...); }, DataColumns());
  label_set_.reserve(n);
}

void SpanTable::ShrinkToFit() {
  std::apply([](auto&... c) { (c.shrink_to_fit(), ...); }, DataColumns());
  label_set_.shrink_to_fit();
}

void SpanTable::Truncate(size_t n) {
  if (n >= size()) return;
  std::apply([&](auto&... c) { (c.resize(n), ...); }, DataColumns());
  label_set_.resize(n);
  // Ids are handed out at first sight in row order, so the label sets rows [0, n) use
  // are ids [0, sets) and the strings those sets use are ids [0, strings).
  uint32_t sets = 0, strings = 0;
  for (uint32_t set : label_set_) sets = std::max(sets, set + 1);
  for (uint32_t set = 0; set < sets; ++set) {
    for (uint32_t id : label_sets_[set]) strings = std::max(strings, id + 1);
  }
  label_sets_.resize(sets);
  label_set_hashes_.resize(sets);
  strings_.resize(strings);
  string_hashes_.resize(strings);
  Reindex(label_set_slots_, sets, label_set_hashes_);
  Reindex(string_slots_, strings, string_hashes_);
  last_set_ = n > 0 ? label_set_.back() : UINT32_MAX;
  last_ids_ = n > 0 ? label_sets_[last_set_] : std::array<uint32_t, kNumSpanLabels>{};
}

void SpanTable::Append(const SpanTable& other, std::span<const size_t> skip_rows, size_t end_row,
                       int threads) {
  end_row = std::min(end_row, other.size());
  size_t kept = end_row;
  for (size_t r : skip_rows) kept -= r < end_row ? 1 : 0;
  Reserve(size() + kept);
  // Label sets of `other` -> ours, made on first use (the order Add() interns in).
  std::vector<uint32_t> set_map(other.label_sets_.size(), UINT32_MAX);
  auto map_set = [&](uint32_t set) {
    uint32_t& mine = set_map[set];
    if (mine == UINT32_MAX) {
      std::array<uint32_t, kNumSpanLabels> ids;
      for (size_t i = 0; i < kNumSpanLabels; ++i) {
        ids[i] = Intern(other.strings_[other.label_sets_[set][i]]);
      }
      mine = InternSet(ids);
    }
    return mine;
  };
  if (threads > 1 && skip_rows.empty() && end_row >= (size_t{1} << 20) &&
      std::thread::hardware_concurrency() > 1) {
    // Whole columns copied on two threads: the copy writes hundreds of MB of fresh
    // memory, and the kernel's page zeroing then runs on both cores.
    for (size_t r = 0; r < end_row; ++r) map_set(other.label_set_[r]);
    const size_t base = size();
    auto copy = [&](auto& dst, const auto& src) {
      dst.resize(base + end_row);  // default-initialised (LargeAllocator)
      std::memcpy(dst.data() + base, src.data(), end_row * sizeof(src[0]));
    };
    // The first seven columns (32 of the 59 bytes a row) on the helper, the rest here.
    auto copy_half = [&](bool first) {
      ForEachPair(DataColumns(), other.DataColumns(), [&](auto i, auto& dst, const auto& src) {
        if ((i() < 7) == first) copy(dst, src);
      });
    };
    {
      std::jthread helper(copy_half, true);
      copy_half(false);
      label_set_.resize(base + end_row);
      for (size_t r = 0; r < end_row; ++r) label_set_[base + r] = set_map[other.label_set_[r]];
    }
    last_set_ = label_set_.back();
    last_ids_ = label_sets_[last_set_];
    return;
  }
  auto copy_run = [&](size_t from, size_t to) {
    if (from >= to) return;
    auto run = [&](auto& dst, const auto& src) {
      dst.insert(dst.end(), src.begin() + static_cast<ptrdiff_t>(from),
                 src.begin() + static_cast<ptrdiff_t>(to));
    };
    ForEachPair(DataColumns(), other.DataColumns(),
                [&](auto, auto& dst, const auto& src) { run(dst, src); });
    for (size_t r = from; r < to; ++r) {
      last_set_ = map_set(other.label_set_[r]);
      label_set_.push_back(last_set_);
    }
  };
  size_t from = 0;
  for (size_t r : skip_rows) {
    if (r >= end_row) break;
    copy_run(from, r);
    from = r + 1;
  }
  copy_run(from, end_row);
  if (last_set_ != UINT32_MAX) last_ids_ = label_sets_[last_set_];
}

uint32_t SpanTable::Intern(std::string_view s) {
  const uint64_t h = XXH3_64bits(s.data(), s.size());
  return FindOrInsert(
      string_slots_, string_hashes_, h, [&](uint32_t id) { return strings_[id] == s; },
      [&] {
        strings_.emplace_back(s);
        string_hashes_.push_back(h);
        return static_cast<uint32_t>(strings_.size() - 1);
      });
}

uint32_t SpanTable::InternSet(const std::array<uint32_t, kNumSpanLabels>& ids) {
  const uint64_t h = XXH3_64bits(ids.data(), sizeof(ids));
  return FindOrInsert(
      label_set_slots_, label_set_hashes_, h, [&](uint32_t id) { return label_sets_[id] == ids; },
      [&] {
        label_sets_.push_back(ids);
        label_set_hashes_.push_back(h);
        return static_cast<uint32_t>(label_sets_.size() - 1);
      });
}

void SpanTable::Add(const SpanRecord& s) {
  arrival_s_.push_back(s.arrival_s);
  queue_s_.push_back(ToFloat(s.queue_s));
  prefill_s_.push_back(ToFloat(s.prefill_s));
  front_end_s_.push_back(ToFloat(s.front_end_s));
  ttft_s_.push_back(ToFloat(s.ttft_s));
  decode_s_.push_back(ToFloat(s.decode_s));
  e2e_s_.push_back(ToFloat(s.e2e_s));
  itl_mean_s_.push_back(ToFloat(s.itl_mean_s));
  itl_max_s_.push_back(ToFloat(s.itl_max_s));
  prompt_tokens_.push_back(ToInt32(s.prompt_tokens));
  cached_tokens_.push_back(ToInt32(s.cached_tokens));
  output_tokens_.push_back(ToInt32(s.output_tokens));
  preemptions_.push_back(static_cast<int16_t>(std::clamp<int32_t>(s.preemptions, -1, INT16_MAX)));
  status_.push_back(s.status);
  // Consecutive spans often share labels: each label is compared with the previous
  // span's first, and the label set is looked up only when one of them changed.
  const bool first = last_set_ == UINT32_MAX;
  bool changed = first;
  for (size_t i = 0; i < kNumSpanLabels; ++i) {
    if (!first && strings_[last_ids_[i]] == s.labels[i]) continue;
    const uint32_t id = Intern(s.labels[i]);
    changed = changed || id != last_ids_[i];
    last_ids_[i] = id;
  }
  if (changed) last_set_ = InternSet(last_ids_);
  label_set_.push_back(last_set_);
}

std::string_view SpanTable::label_of_set(uint32_t set, SpanLabel label) const {
  return strings_[label_sets_[set][static_cast<size_t>(label)]];
}

std::string_view SpanTable::label(size_t row, SpanLabel l) const {
  return label_of_set(label_set_[row], l);
}

Span SpanTable::Get(size_t i) const {
  Span s;
  s.arrival_s = arrival_s_[i];
  s.queue_s = queue_s_[i];
  s.prefill_s = prefill_s_[i];
  s.front_end_s = front_end_s_[i];
  s.ttft_s = ttft_s_[i];
  s.decode_s = decode_s_[i];
  s.e2e_s = e2e_s_[i];
  s.itl_mean_s = itl_mean_s_[i];
  s.itl_max_s = itl_max_s_[i];
  s.prompt_tokens = prompt_tokens_[i];
  s.cached_tokens = cached_tokens_[i];
  s.output_tokens = output_tokens_[i];
  s.preemptions = preemptions_[i];
  s.status = status_[i];
  s.replica = label(i, SpanLabel::kReplica);
  s.region = label(i, SpanLabel::kRegion);
  s.tenant = label(i, SpanLabel::kTenant);
  s.model = label(i, SpanLabel::kModel);
  s.template_version = label(i, SpanLabel::kTemplate);
  s.deploy = label(i, SpanLabel::kDeploy);
  return s;
}

double SpanTable::bytes_per_span() const {
  if (size() == 0) return 0;
  size_t bytes = arrival_s_.capacity() * sizeof(double);
  for (const auto* v : {&queue_s_, &prefill_s_, &front_end_s_, &ttft_s_, &decode_s_, &e2e_s_,
                        &itl_mean_s_, &itl_max_s_}) {
    bytes += v->capacity() * sizeof(float);
  }
  for (const auto* v : {&prompt_tokens_, &cached_tokens_, &output_tokens_}) {
    bytes += v->capacity() * sizeof(int32_t);
  }
  bytes += preemptions_.capacity() * sizeof(int16_t) + status_.capacity() +
           label_set_.capacity() * sizeof(uint32_t);
  for (const std::string& s : strings_) bytes += s.capacity() + sizeof(std::string);
  bytes += string_hashes_.capacity() * sizeof(uint64_t) +
           string_slots_.capacity() * sizeof(uint32_t) +
           label_sets_.capacity() * sizeof(label_sets_[0]) +
           label_set_hashes_.capacity() * sizeof(uint64_t) +
           label_set_slots_.capacity() * sizeof(uint32_t);
  return static_cast<double>(bytes) / static_cast<double>(size());
}

}  // namespace ttft
