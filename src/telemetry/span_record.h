// Internal: what every span reader shares below its format: the span fields and their
// source-name lookup (FieldTable), record validation, duplicate detection, strictness
// and the unit heuristics (RecordContext), and the interface of a format's line parser
// (LineParser). Header-only where it runs per record, so that it inlines into each
// format's parser.
#ifndef TTFT_TELEMETRY_SPAN_RECORD_H_
#define TTFT_TELEMETRY_SPAN_RECORD_H_

#include <fmt/format.h>
#include <sys/mman.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/format.h"
#include "ttft/spans.h"

namespace ttft::internal {

// The span JSONL keys, in the order SpanJsonlWriter writes them.
enum Field : int {
  kRequestId,
  kArrival,
  kQueue,
  kPrefill,
  kFrontEnd,
  kTtft,
  kDecode,
  kE2e,
  kItlMean,
  kItlMax,
  kPromptTokens,
  kCachedTokens,
  kOutputTokens,
  kPreemptions,
  kStatus,
  kReplica,
  kRegion,
  kTenant,
  kModel,
  kTemplate,
  kDeploy,
  kNumFields
};
inline constexpr std::string_view kFieldNames[kNumFields] = {
    "request_id",    "arrival_s",   "queue_s",    "prefill_s", "front_end_s",   "ttft_s",
    "decode_s",      "e2e_s",       "itl_mean_s", "itl_max_s", "prompt_tokens", "cached_tokens",
    "output_tokens", "preemptions", "status",     "replica",   "region",        "tenant",
    "model",         "template",    "deploy"};

inline bool IsDouble(int f) { return f >= kArrival && f <= kItlMax; }
inline bool IsInt(int f) { return f >= kPromptTokens && f <= kPreemptions; }

inline double* DoubleSlot(SpanRecord& r, int f) {
  switch (f) {
    case kArrival: return &r.arrival_s;
    case kQueue: return &r.queue_s;
    case kPrefill: return &r.prefill_s;
    case kFrontEnd: return &r.front_end_s;
    case kTtft: return &r.ttft_s;
    case kDecode: return &r.decode_s;
    case kE2e: return &r.e2e_s;
    case kItlMean: return &r.itl_mean_s;
    default: return &r.itl_max_s;
  }
}
inline void SetInt(SpanRecord& r, int f, int64_t v) {
  switch (f) {
    case kPromptTokens: r.prompt_tokens = v; break;
    case kCachedTokens: r.cached_tokens = v; break;
    case kOutputTokens: r.output_tokens = v; break;
    default: r.preemptions = static_cast<int32_t>(std::clamp<int64_t>(v, -1, INT32_MAX));
  }
}

// Source field name -> span field, with the unit scale. Lookup tries the field
// expected next (files from our writer hit every time) before a linear scan.
class FieldTable {
 public:
  explicit FieldTable(const ColumnMap& map) {
    for (int f = 0; f < kNumFields; ++f) entries_.push_back({std::string(kFieldNames[f]), f, 1.0});
    for (const ColumnMap::Entry& e : map.entries) {
      for (auto& entry : entries_) {
        if (kFieldNames[entry.field] == e.target) {
          entry.source = e.source;
          entry.scale = e.scale;
        }
      }
    }
  }
  // Index into entries(), or -1. Inlined: it runs for every key of every line.
  [[gnu::always_inline]] int Lookup(std::string_view key, size_t& cursor) const {
    if (cursor < entries_.size() && Equal(entries_[cursor].source, key))
      return static_cast<int>(cursor++);
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (Equal(entries_[i].source, key)) {
        cursor = i + 1;
        return static_cast<int>(i);
      }
    }
    return -1;
  }
  struct Entry {
    std::string source;
    int field;
    double scale;
  };
  const Entry& entry(int i) const { return entries_[static_cast<size_t>(i)]; }

 private:
  // Inline word compares: keys are short, and a memcmp call per key showed in profiles.
  [[gnu::always_inline]] static bool Equal(const std::string& a, std::string_view b) {
    const size_t n = b.size();
    if (a.size() != n) return false;
    const char* x = a.data();
    const char* y = b.data();
    auto word = [](const char* p, auto& w) { std::memcpy(&w, p, sizeof w); };
    if (n >= 8) {
      uint64_t u, v;
      for (size_t i = 0; i + 8 <= n; i += 8) {
        word(x + i, u);
        word(y + i, v);
        if (u != v) return false;
      }
      word(x + n - 8, u);
      word(y + n - 8, v);
      return u == v;
    }
    if (n >= 4) {
      uint32_t u1, v1, u2, v2;
      word(x, u1);
      word(y, v1);
      word(x + n - 4, u2);
      word(y + n - 4, v2);
      return u1 == v1 && u2 == v2;
    }
    for (size_t i = 0; i < n; ++i) {
      if (x[i] != y[i]) return false;
    }
    return true;
  }

  std::vector<Entry> entries_;
};

inline bool IsBlank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

inline bool LooksNonFinite(std::string_view s) {
  return s == "NaN" || s == "nan" || s == "-NaN" || s == "Infinity" || s == "-Infinity" ||
         s == "inf" || s == "-inf" || s == "+Inf" || s == "-Inf" || s == "Inf" || s == "+inf";
}

// A set of 64-bit hashes: open addressing, linear probing, power-of-two size, at most
// half full (16 to 32 bytes an element). XXH3 output is uniform, so the slot is taken
// from its bits directly; 0 marks an empty slot (a hash of 0 is stored as 1 << 63).
class HashSet64 {
 public:
  HashSet64() = default;
  ~HashSet64() { Free(slots_, capacity_); }
  HashSet64(const HashSet64&) = delete;
  HashSet64& operator=(const HashSet64&) = delete;

  // Inserts `hash`; false when it was already present.
  bool Insert(uint64_t hash) {
    if (hash == 0) hash = uint64_t{1} << 63;
    if ((size_ + 1) * 2 > capacity_) Rehash(std::max<size_t>(1024, capacity_ * 2));
    const size_t mask = capacity_ - 1;
    for (size_t i = static_cast<size_t>(hash) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == hash) return false;
      if (slots_[i] == 0) {
        slots_[i] = hash;
        ++size_;
        return true;
      }
    }
  }
  // True when `hash` is present.
  bool Contains(uint64_t hash) const {
    if (hash == 0) hash = uint64_t{1} << 63;
    if (capacity_ == 0) return false;
    const size_t mask = capacity_ - 1;
    for (size_t i = static_cast<size_t>(hash) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == hash) return true;
      if (slots_[i] == 0) return false;
    }
  }
  // Starts loading the slot `hash` would probe first (a cache miss per span otherwise).
  // (A hash of 0, stored as 1 << 63, gets a useless prefetch; GCC 12 drops the
  // prefetch altogether when it is remapped here.)
  void Prefetch(uint64_t hash) const {
    if (capacity_ > 0) __builtin_prefetch(&slots_[static_cast<size_t>(hash) & (capacity_ - 1)]);
  }
  void Reserve(size_t n) {
    size_t want = 1024;
    while (want < n * 2) want *= 2;
    if (want > capacity_) Rehash(want);
  }

 private:
  // Zeroed slots. Tables of 2 MB and more are mapped with transparent huge pages
  // where the kernel allows it: probes land all over the table, and with 4 KB pages
  // nearly every probe also missed the TLB.
  static uint64_t* Allocate(size_t n) {
    const size_t bytes = n * sizeof(uint64_t);
    constexpr size_t kHuge = size_t{2} << 20;
    if (bytes >= kHuge) {
      void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p != MAP_FAILED) {
        ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint; failure leaves 4 KB pages
        return static_cast<uint64_t*>(p);
      }
      throw std::bad_alloc();
    }
    return new uint64_t[n]();
  }
  static void Free(uint64_t* p, size_t n) {
    if (p == nullptr) return;
    if (n * sizeof(uint64_t) >= (size_t{2} << 20)) {
      ::munmap(p, n * sizeof(uint64_t));
    } else {
      delete[] p;
    }
  }
  void Rehash(size_t n) {
    uint64_t* old = slots_;
    const size_t old_n = capacity_;
    slots_ = Allocate(n);
    capacity_ = n;
    const size_t mask = n - 1;
    for (size_t k = 0; k < old_n; ++k) {
      const uint64_t h = old[k];
      if (h == 0) continue;
      size_t i = static_cast<size_t>(h) & mask;
      while (slots_[i] != 0) i = (i + 1) & mask;
      slots_[i] = h;
    }
    Free(old, old_n);
  }
  uint64_t* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;
};

// State shared by the record-level parsers: the sink, the report, duplicate
// detection, strictness and the unit heuristics.
class RecordContext {
 public:
  RecordContext(std::string_view source, const SpanReadOptions& options, SpanSink& sink,
                ReadReport& report)
      : source_(source), options_(options), sink_(sink), report_(report) {}

  // "missing field ttft_s", or the field --columns reads it from.
  std::string MissingTtft() const {
    for (const ColumnMap::Entry& e : options_.columns.entries) {
      if (e.target == "ttft_s")
        return fmt::format("missing field {} (ttft_s by --columns)", e.source);
    }
    return "missing field ttft_s";
  }

  Status Bad(int64_t line, std::string_view category, std::string reason) {
    report_.Skip(source_, line, category, reason);
    if (options_.strict) {
      strict_error_line_ = line;
      return Status::DataError(fmt::format("{}:{}: {}", source_, line, reason));
    }
    return Status::Ok();
  }
  void Ignore() { ++report_.records_ignored; }

  // Validates and emits one record. `ttft_present`: the key was there (null allowed
  // for requests that did not finish normally).
  Status Emit(SpanRecord& r, int64_t line, bool ttft_present) {
    if (!ttft_present) return Bad(line, "missing field", MissingTtft());
    if (std::isnan(r.ttft_s) && r.status == RequestStatus::kOk) {
      return Bad(line, "missing field", "ttft_s is null for a request with status ok");
    }
    std::string why = ValidateSpan(r);
    if (!why.empty()) {
      std::string_view category = why.starts_with("negative duration") ? "negative duration"
                                  : why.find("milliseconds") != std::string::npos
                                      ? "unit (ms in seconds field)"
                                  : why.find("clock skew") != std::string::npos ? "ttft < queue"
                                                                                : "invalid value";
      return Bad(line, category, std::move(why));
    }
    // Labels reach JSON and terminals: bytes that are not UTF-8 reject the record (the
    // JSON readers' parsers already refuse them; CSV and mapped columns do not).
    for (int k = 0; k < kNumSpanLabels; ++k) {
      if (!escape::IsValidUtf8(r.labels[k])) {
        return Bad(line, "invalid utf-8",
                   fmt::format("label {} is not valid UTF-8", ToString(static_cast<SpanLabel>(k))));
      }
    }
    if (!escape::IsValidUtf8(r.request_id)) {
      return Bad(line, "invalid utf-8", "request_id is not valid UTF-8");
    }
    if (options_.detect_duplicates && !r.request_id.empty()) {
      const uint64_t h =
          r.request_id.data() == hinted_id_.data() && r.request_id.size() == hinted_id_.size()
              ? hinted_hash_
              : XXH3_64bits(r.request_id.data(), r.request_id.size());
      hinted_id_ = {};
      if (collect_ids_) {
        ids_.push_back(h);
      } else if (!seen_ids_.Insert(h)) {
        return Bad(line, "duplicate request_id",
                   fmt::format("duplicate request_id '{}'", r.request_id));
      } else if (trace_rows_) {
        rows_.push_back({h, line | kHasId});
      }
    } else if (trace_rows_) {
      rows_.push_back({0, line});
    }
    if (!std::isnan(r.ttft_s)) {
      ++with_ttft_;
      if (r.ttft_s > 30) ++ttft_over_30s_;
      if (trace_rows_) rows_.back().line |= r.ttft_s > 30 ? kWithTtft | kTtftOver30 : kWithTtft;
    }
    sink_.Add(r);
    ++report_.records_read;
    return Status::Ok();
  }

  // File-level checks once the input is consumed (of every range, for a file read in
  // ranges: see AddTtftCounts).
  Status Finish() {
    if (with_ttft_ >= 3 && ttft_over_30s_ * 2 > with_ttft_) {
      std::string w = fmt::format(
          "{}: {} of {} spans have ttft_s > 30 s: the field looks like milliseconds "
          "(use --columns ttft_s=FIELD:ms)",
          source_, ttft_over_30s_, with_ttft_);
      if (options_.strict) return Status::DataError(w);
      report_.warnings.push_back(std::move(w));
    }
    return Status::Ok();
  }

  const SpanReadOptions& options() const { return options_; }
  std::string_view source() const { return source_; }
  // The record being parsed has this request id: hash it and start loading its slot
  // in the duplicate set while the rest of the record is parsed.
  void ClearHint() { hinted_id_ = {}; }
  void HintRequestId(std::string_view id) {
    if (!options_.detect_duplicates) return;
    hinted_id_ = id;
    hinted_hash_ = XXH3_64bits(id.data(), id.size());
    if (!collect_ids_) seen_ids_.Prefetch(hinted_hash_);
  }
  // About `n` more records are coming: size the sink and the duplicate set once.
  void ExpectMore(size_t n) {
    sink_.ExpectMore(n);
    ReserveIds(n);
  }
  void ReserveIds(size_t n) {
    if (!options_.detect_duplicates) return;
    if (collect_ids_) {
      ids_.reserve(ids_.size() + n);
    } else {
      seen_ids_.Reserve(report_.records_read + n);
    }
    if (trace_rows_) rows_.reserve(rows_.size() + n);
  }

  // For a file read in byte ranges (ReadSpanTable): one entry per accepted record, in
  // order, so that a later merge can drop the records whose id an earlier range holds.
  struct Row {
    uint64_t hash;  // XXH3 of the request id, when line & kHasId
    int64_t line;   // the record's line in this range, | the flags below
  };
  static constexpr int64_t kHasId = int64_t{1} << 62;
  static constexpr int64_t kWithTtft = int64_t{1} << 61;
  static constexpr int64_t kTtftOver30 = int64_t{1} << 60;
  static constexpr int64_t kLineMask = kTtftOver30 - 1;
  void TraceRows() { trace_rows_ = options_.detect_duplicates; }
  // Instead of rejecting duplicates as they come, keep every accepted record's id hash
  // (ids()) for the caller to check afterwards (ReadSpanTable's optimistic pass).
  // REQUIRES: called before the first record, and not with TraceRows().
  void CollectIds() { collect_ids_ = options_.detect_duplicates; }
  LargeVector<uint64_t>& ids() { return ids_; }
  const LargeVector<Row>& rows() const { return rows_; }
  bool SeenId(uint64_t hash) const { return seen_ids_.Contains(hash); }
  void PrefetchId(uint64_t hash) const { seen_ids_.Prefetch(hash); }
  // The line of the record that stopped a strict read, or 0.
  int64_t strict_error_line() const { return strict_error_line_; }
  int64_t with_ttft() const { return with_ttft_; }
  int64_t ttft_over_30s() const { return ttft_over_30s_; }
  // Counts of the other ranges of the same file, for Finish().
  void AddTtftCounts(int64_t with_ttft, int64_t over_30s) {
    with_ttft_ += with_ttft;
    ttft_over_30s_ += over_30s;
  }

 private:
  std::string source_;
  const SpanReadOptions& options_;
  SpanSink& sink_;
  ReadReport& report_;
  // Request ids as XXH3 hashes: two distinct ids collide (a false duplicate) with
  // probability about n^2 / 2^65 (1e-8 at 10^6 spans, 3e-4 at 10^8).
  HashSet64 seen_ids_;
  std::string_view hinted_id_;
  uint64_t hinted_hash_ = 0;
  int64_t with_ttft_ = 0;
  int64_t ttft_over_30s_ = 0;
  int64_t strict_error_line_ = 0;
  bool trace_rows_ = false;
  LargeVector<Row> rows_;
  bool collect_ids_ = false;
  LargeVector<uint64_t> ids_;
};

// Parses complete lines. `capacity` bytes from `p` are readable (>= len + padding).
class LineParser {
 public:
  virtual ~LineParser() = default;
  virtual Status ParseLine(const char* p, size_t len, size_t capacity, int64_t line,
                           bool unterminated) = 0;
  virtual Status Finish() = 0;
  // Lines the span JSONL fast path accepted (tests).
  virtual int64_t fast_lines() const { return 0; }
};

// The reason for a line simdjson rejected (`error` is simdjson::error_message's text):
// malformed JSON, or a record cut at the end of the input, with a hint when the text
// holds NaN or Infinity.
std::string JsonErrorReason(const char* error, bool unterminated, std::string_view text);

}  // namespace ttft::internal

#endif  // TTFT_TELEMETRY_SPAN_RECORD_H_
