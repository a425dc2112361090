// Span readers: ttft JSONL (simdjson On-Demand), CSV, OTLP/JSON traces and the
// flattened span-sink lines, behind one chunked, bounded-memory line driver
// (ttft/spans.h, docs/telemetry.md).
#include <fmt/format.h>
#include <simdjson.h>
#include <sys/mman.h>
#include <xxhash.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <new>
#include <queue>
#include <thread>

#include "telemetry/input_stream.h"
#include "telemetry/span_readers_internal.h"
#include "ttft/csv.h"
#include "ttft/spans.h"

namespace ttft {
namespace {

namespace od = simdjson::ondemand;

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
constexpr std::string_view kFieldNames[kNumFields] = {
    "request_id",    "arrival_s",   "queue_s",    "prefill_s", "front_end_s",   "ttft_s",
    "decode_s",      "e2e_s",       "itl_mean_s", "itl_max_s", "prompt_tokens", "cached_tokens",
    "output_tokens", "preemptions", "status",     "replica",   "region",        "tenant",
    "model",         "template",    "deploy"};

bool IsDouble(int f) { return f >= kArrival && f <= kItlMax; }
bool IsInt(int f) { return f >= kPromptTokens && f <= kPreemptions; }

double* DoubleSlot(SpanRecord& r, int f) {
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
void SetInt(SpanRecord& r, int f, int64_t v) {
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

bool IsBlank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

bool LooksNonFinite(std::string_view s) {
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
    if (!ttft_present) return Bad(line, "missing field", "missing field ttft_s");
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

std::string JsonErrorReason(simdjson::error_code e, bool unterminated, std::string_view text) {
  std::string reason = unterminated
                           ? fmt::format("truncated record at end of input (no newline): {}",
                                         simdjson::error_message(e))
                           : fmt::format("malformed JSON: {}", simdjson::error_message(e));
  if (text.find("NaN") != std::string_view::npos ||
      text.find("Infinity") != std::string_view::npos) {
    reason += " (NaN/Infinity are not JSON; write null for a missing value)";
  }
  return reason;
}

// ---------------------------------------------------------------------------
// The fast path for span JSONL: a strict scanner for the flat, ASCII, escape-free
// objects our writer (and most loggers) produce. It either yields exactly the record
// the simdjson path would yield for the line, or declines and the simdjson path parses
// the line (which also produces every error message). It declines on anything it does
// not fully validate: escapes, non-ASCII or control bytes, nested values, numbers
// outside the JSON grammar or range, strings or booleans in numeric fields, unknown
// status values, trailing bytes after the object. A differential test and fuzzer
// (span_readers_test.cc, span_jsonl_fuzz.cc) compare the two paths.
// ---------------------------------------------------------------------------

constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool IsDigit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

// A scanned scalar value. Numbers keep their digit runs; the value is computed only
// for fields that want it.
struct FastValue {
  enum Kind : uint8_t { kNull, kNumber, kString, kBool } kind = kNull;
  std::string_view text;      // the string's contents, or the number's whole token
  std::string_view integer;   // the number's integer digits
  std::string_view fraction;  // the number's fraction digits (may be empty)
  int exp10 = 0;              // the explicit exponent (0 when absent)
  bool has_exponent = false;
  bool negative = false;
};

// The value of up to 19 validated decimal digits.
uint64_t DigitsValue(uint64_t m, std::string_view digits) {
  size_t i = 0;
  for (; i + 8 <= digits.size(); i += 8) {
    // Eight digits at once (the SWAR trick of fast_float and simdjson).
    uint64_t v;
    std::memcpy(&v, digits.data() + i, 8);
    v -= 0x3030303030303030ULL;
    v = (v * 10) + (v >> 8);
    v = (((v & 0x000000FF000000FFULL) * 0x000F424000000064ULL) +
         (((v >> 16) & 0x000000FF000000FFULL) * 0x0000271000000001ULL)) >>
        32;
    m = m * 100000000 + v;
  }
  for (; i < digits.size(); ++i) m = m * 10 + static_cast<uint64_t>(digits[i] - '0');
  return m;
}

// Scans [p, p + len). Reads up to 8 bytes past the end of a string or digit run (callers
// guarantee that much padding); the bytes past the end never change the result.
class FastScanner {
 public:
  FastScanner(const char* p, size_t len) : cur_(p), end_(p + len) {}

  [[gnu::always_inline]] void SkipSpace() {
    while (cur_ < end_ && IsJsonSpace(*cur_)) ++cur_;
  }
  bool Consume(char c) {
    if (cur_ < end_ && *cur_ == c) {
      ++cur_;
      return true;
    }
    return false;
  }
  bool AtEnd() const { return cur_ == end_; }
  char Peek() const { return cur_ < end_ ? *cur_ : '\0'; }

  // A string without escapes, starting at the opening quote; eight bytes at a time.
  bool String(std::string_view& out) {
    if (!Consume('"')) return false;
    const char* const start = cur_;
    constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
    for (;;) {
      uint64_t x;
      std::memcpy(&x, cur_, 8);
      const uint64_t quote = x ^ (kOnes * '"'), slash = x ^ (kOnes * '\\');
      // The lowest flagged byte of each term is exact (borrows only move upward):
      // a zero byte of quote or slash, a byte below 0x20, a byte at or above 0x80.
      const uint64_t stop =
          ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash) | ((x - kOnes * 0x20) & ~x) | x;
      const uint64_t mask = stop & kHigh;
      if (mask == 0) {
        cur_ += 8;
        if (cur_ >= end_) return false;  // ran off the end: a cut string
        continue;
      }
      cur_ += __builtin_ctzll(mask) / 8;
      if (cur_ >= end_ || *cur_ != '"') return false;  // escape, control, non-ASCII, cut
      out = std::string_view(start, static_cast<size_t>(cur_ - start));
      ++cur_;
      return true;
    }
  }

  // Advances past a run of ASCII digits, eight bytes at a time: a byte b is a digit
  // when b < 0x80, (b & 0x7F) + 0x46 < 0x80 (b <= '9') and (b & 0x7F) + 0x50 >= 0x80
  // (b >= '0'); neither sum carries into the next byte. Reads up to 8 bytes past the
  // run (within the padding callers guarantee) but never moves past the end.
  [[gnu::always_inline]] void SkipDigits() {
    constexpr uint64_t kHigh = 0x8080808080808080ULL, kLow7 = 0x7F7F7F7F7F7F7F7FULL;
    while (cur_ < end_) {
      uint64_t x;
      std::memcpy(&x, cur_, 8);
      const uint64_t low = x & kLow7;
      const uint64_t above_nine = low + 0x4646464646464646ULL;
      const uint64_t from_zero = low + 0x5050505050505050ULL;
      const uint64_t not_digit = (x | above_nine | ~from_zero) & kHigh;
      if (not_digit != 0) {
        cur_ = std::min(end_, cur_ + __builtin_ctzll(not_digit) / 8);
        return;
      }
      cur_ = std::min(end_, cur_ + 8);
    }
  }

  // A JSON number (RFC 8259 grammar), starting at '-' or a digit.
  bool Number(FastValue& v) {
    v.kind = FastValue::kNumber;
    const char* const start = cur_;
    v.negative = Consume('-');
    const char* const int_begin = cur_;
    if (cur_ >= end_ || !IsDigit(*cur_)) return false;
    if (*cur_ == '0') {
      ++cur_;
    } else {
      SkipDigits();
    }
    const char* const int_end = cur_;
    const char* frac_begin = cur_;
    const char* frac_end = cur_;
    bool exponent = false;
    int exp10 = 0;
    if (cur_ < end_ && *cur_ == '.') {
      frac_begin = ++cur_;
      SkipDigits();
      frac_end = cur_;
      if (frac_end == frac_begin) return false;
    }
    if (cur_ < end_ && (*cur_ == 'e' || *cur_ == 'E')) {
      ++cur_;
      exponent = true;
      bool negative = false;
      if (cur_ < end_ && (*cur_ == '+' || *cur_ == '-')) negative = *cur_++ == '-';
      const char* const digits = cur_;
      while (cur_ < end_ && IsDigit(*cur_)) {
        if (exp10 < 100000) exp10 = exp10 * 10 + (*cur_ - '0');
        ++cur_;
      }
      if (cur_ == digits) return false;
      if (negative) exp10 = -exp10;
    }
    v.text = std::string_view(start, static_cast<size_t>(cur_ - start));
    v.integer = std::string_view(int_begin, static_cast<size_t>(int_end - int_begin));
    v.fraction = std::string_view(frac_begin, static_cast<size_t>(frac_end - frac_begin));
    v.exp10 = exp10;
    v.has_exponent = exponent;
    return true;
  }

  // Any scalar; false for objects, arrays and anything not valid JSON.
  bool Value(FastValue& v) {
    const char c = Peek();
    if (c == '"') {
      v.kind = FastValue::kString;
      return String(v.text);
    }
    if (c == '-' || IsDigit(c)) return Number(v);
    auto literal = [&](std::string_view word, FastValue::Kind kind) {
      if (static_cast<size_t>(end_ - cur_) < word.size() ||
          std::string_view(cur_, word.size()) != word) {
        return false;
      }
      cur_ += word.size();
      v.kind = kind;
      return true;
    };
    if (c == 'n') return literal("null", FastValue::kNull);
    if (c == 't') return literal("true", FastValue::kBool);
    if (c == 'f') return literal("false", FastValue::kBool);
    return false;
  }

 private:
  const char* cur_;
  const char* end_;
};

// The integer a number without fraction or exponent and with at most 18 digits
// denotes; false for any other number.
bool FastInt(const FastValue& v, int64_t& out) {
  if (!v.fraction.empty() || v.has_exponent || v.integer.size() > 18) return false;
  const auto m = static_cast<int64_t>(DigitsValue(0, v.integer));
  out = v.negative ? -m : m;
  return true;
}

#if defined(__x86_64__) && LDBL_MANT_DIG == 64
// Clinger's fast path widened to x87 extended precision (Clinger, "How to Read Floating
// Point Numbers Accurately", PLDI 1990, section 6): the decimals our writer prints
// (shortest round-trip, 16-17 digits) miss the double path, and std::from_chars cost
// 9% of a 10 M-span read. m < 10^18 < 2^63 and 10^k for k <= 27 (5^27 < 2^64) are
// exact in the 64-bit significand, so m * 10^e rounds once, correctly, to 64 bits.
// Rounding that again to double's 53 bits is correct unless the 64-bit result lies
// exactly halfway between two doubles (its low 11 bits are 100 0000 0000): rounding
// is monotone, so the exact value lies on the same side of every other midpoint. That
// case (1 in 2,048) declines.
constexpr long double kPow10Ext[] = {1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,
                                     1e7L,  1e8L,  1e9L,  1e10L, 1e11L, 1e12L, 1e13L,
                                     1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L,
                                     1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};

// The x87 unit rounds to 64 bits (Linux's default precision control; a process may
// lower it, and valgrind computes long double in 53 bits): checked once.
bool ExtendedIsExact() {
  static const bool exact = [] {
    volatile long double one = 1.0L;
    return one + 0x1p-63L != 1.0L;
  }();
  return exact;
}

// m * 10^exp10 correctly rounded; false when that cannot be certain here.
// REQUIRES: m < 2^63, -27 <= exp10 <= 27.
bool ExtendedDouble(uint64_t m, int exp10, double& out) {
  if (!ExtendedIsExact()) return false;
  const auto x = static_cast<long double>(static_cast<int64_t>(m));
  const long double r = exp10 < 0 ? x / kPow10Ext[-exp10] : x * kPow10Ext[exp10];
  uint64_t significand;
  std::memcpy(&significand, &r, sizeof significand);  // the low 8 of its 10 bytes
  if ((significand & 0x7FF) == 0x400) return false;
  out = static_cast<double>(r);
  return true;
}
#else
bool ExtendedDouble(uint64_t, int, double&) { return false; }
#endif

// The double a scanned number denotes, correctly rounded (as simdjson's); false when
// out of range.
bool FastDouble(const FastValue& v, double& out) {
  // Significant digits: a "0." number's leading fraction zeros add nothing to m.
  size_t digits = v.integer.size() + v.fraction.size();
  if (v.integer == "0") {
    const size_t zeros = std::min(v.fraction.find_first_not_of('0'), v.fraction.size());
    digits = v.fraction.size() - zeros;
  }
  if (digits <= 18) {  // m < 10^18 < 2^63
    const uint64_t m = DigitsValue(DigitsValue(0, v.integer), v.fraction);
    const int exp10 = v.exp10 - static_cast<int>(v.fraction.size());
    bool exact = false;
    if (digits <= 15 && exp10 >= -22 && exp10 <= 22) {
      // Clinger's fast path: under 10^15 < 2^53 the mantissa is exact, and so is
      // 10^|exp10|, so one IEEE operation rounds once, correctly.
      const auto d = static_cast<double>(m);
      out = exp10 < 0 ? d / kPow10[-exp10] : d * kPow10[exp10];
      exact = true;
    } else if (exp10 >= -27 && exp10 <= 27) {
      exact = ExtendedDouble(m, exp10, out);
    }
    if (exact) {
      if (v.negative) out = -out;
      return true;
    }
  }
  const auto res = std::from_chars(v.text.data(), v.text.data() + v.text.size(), out);
  return res.ec == std::errc() && res.ptr == v.text.data() + v.text.size() && std::isfinite(out);
}

}  // namespace

bool internal::FastJsonDouble(std::string_view token, double& out) {
  // The scanner may read 8 bytes past the token: scan a padded copy.
  std::string padded(token);
  padded.append(8, '\0');
  FastScanner in(padded.data(), token.size());
  FastValue v;
  return in.Value(v) && v.kind == FastValue::kNumber && in.AtEnd() && FastDouble(v, out);
}

namespace {

// ---------------------------------------------------------------------------
// ttft span JSONL, On-Demand: one pass over each object's fields, no DOM.
// ---------------------------------------------------------------------------
class JsonlParser final : public LineParser {
 public:
  JsonlParser(RecordContext& ctx, bool fast_path)
      : ctx_(ctx), fields_(ctx.options().columns), fast_path_(fast_path) {}

  Status ParseLine(const char* p, size_t len, size_t capacity, int64_t line,
                   bool unterminated) override {
    if (IsBlank(std::string_view(p, len))) return Status::Ok();
    ctx_.ClearHint();  // a hint from an earlier line may point into reused memory
    SpanRecord r;
    bool ttft_present = false;
    // The fast scanner reads up to 8 bytes past a string run: capacity covers that.
    if (fast_path_ && capacity >= len + 8 && FastParse(p, len, r, ttft_present)) {
      ++fast_lines_;
      return ctx_.Emit(r, line, ttft_present);
    }
    r = SpanRecord{};
    ttft_present = false;
    std::string err;
    const simdjson::error_code e = ParseObject(p, len, capacity, r, ttft_present, err);
    if (e != simdjson::SUCCESS) {
      return ctx_.Bad(line, unterminated ? "truncated record" : "malformed json",
                      JsonErrorReason(e, unterminated, std::string_view(p, len)));
    }
    if (!err.empty()) return ctx_.Bad(line, "invalid value", std::move(err));
    return ctx_.Emit(r, line, ttft_present);
  }
  Status Finish() override { return ctx_.Finish(); }
  int64_t fast_lines() const override { return fast_lines_; }

  // The fast path alone (tests): true when it accepted the line into `r`.
  bool FastParse(const char* p, size_t len, SpanRecord& r, bool& ttft_present) const {
    FastScanner in(p, len);
    in.SkipSpace();
    if (!in.Consume('{')) return false;
    in.SkipSpace();
    size_t cursor = 0;
    // One value reused for every key: Value() sets every member a field reads for its
    // kind, and building a fresh one per key (64 bytes zeroed by `rep stos`) was 13%
    // of the scanner's time.
    FastValue v;
    if (!in.Consume('}')) {
      for (;;) {
        std::string_view key;
        if (!in.String(key)) return false;
        in.SkipSpace();
        if (!in.Consume(':')) return false;
        in.SkipSpace();
        if (!in.Value(v)) return false;
        const int idx = fields_.Lookup(key, cursor);
        if (idx >= 0) {
          const FieldTable::Entry& entry = fields_.entry(idx);
          if (!FastField(entry, v, r, ttft_present)) return false;
          if (entry.field == kRequestId && v.kind == FastValue::kString) {
            ctx_.HintRequestId(v.text);
          }
        }
        in.SkipSpace();
        if (in.Consume('}')) break;
        if (!in.Consume(',')) return false;
        in.SkipSpace();
      }
    }
    in.SkipSpace();
    return in.AtEnd();
  }

 private:
  // Stores one known field as ParseObject would; false where ParseObject would report
  // an error or take a path the fast scanner does not mirror.
  static bool FastField(const FieldTable::Entry& entry, const FastValue& v, SpanRecord& r,
                        bool& ttft_present) {
    const int f = entry.field;
    if (f == kTtft) ttft_present = true;
    if (v.kind == FastValue::kNull) return true;  // missing: NaN / -1 / ""
    if (IsDouble(f)) {
      double d;
      if (v.kind != FastValue::kNumber || !FastDouble(v, d)) return false;
      *DoubleSlot(r, f) = d * entry.scale;
      return true;
    }
    if (IsInt(f)) {
      int64_t i;
      if (v.kind != FastValue::kNumber || !FastInt(v, i)) return false;
      SetInt(r, f, i);
      return true;
    }
    if (v.kind != FastValue::kString) return false;
    if (f == kRequestId) {
      r.request_id = v.text;
    } else if (f == kStatus) {
      auto st = ParseRequestStatus(v.text);
      if (!st) return false;
      r.status = *st;
    } else {
      r.labels[static_cast<size_t>(f - kReplica)] = v.text;
    }
    return true;
  }

  // simdjson 3.0.1's On-Demand get_double misreads some numbers whose digits overflow
  // 64 bits ("0.44444444444444444444" gives 0.0755; its DOM parser is right; found by
  // the differential fuzzer). A validated number token with 19 or more digits is read
  // again with std::from_chars, which rounds correctly; `d` is returned otherwise.
  static double RereadLongNumber(std::string_view token, double d) {
    while (!token.empty() && IsJsonSpace(token.back())) token.remove_suffix(1);
    size_t digits = 0;
    for (char c : token) digits += IsDigit(c) ? 1 : 0;
    if (digits < 19) return d;
    double exact;
    const auto res = std::from_chars(token.data(), token.data() + token.size(), exact);
    return res.ec == std::errc() && res.ptr == token.data() + token.size() ? exact : d;
  }

  // A string value as a view: straight into the input when it has no escapes (the
  // common case: no copy), else unescaped into the parser's buffer.
  static simdjson::error_code GetString(od::value& v, std::string_view& out) {
    const std::string_view tok = v.raw_json_token();
    const size_t close = tok.find_last_of('"');
    if (tok.size() >= 2 && tok.front() == '"' && close > 0 &&
        std::memchr(tok.data() + 1, '\\', close - 1) == nullptr) {
      out = tok.substr(1, close - 1);
      return simdjson::SUCCESS;
    }
    return v.get_string().get(out);
  }

  simdjson::error_code ParseObject(const char* p, size_t len, size_t capacity, SpanRecord& r,
                                   bool& ttft_present, std::string& err) {
    const char* const end = p + len;
    od::document doc;
    auto e = parser_.iterate(p, len, capacity).get(doc);
    if (e) return e;
    od::object obj;
    if ((e = doc.get_object().get(obj))) return e;
    size_t cursor = 0;
    for (auto field_result : obj) {
      od::field field;
      if ((e = std::move(field_result).get(field))) return e;
      // The key as a view into the input unless it holds escapes.
      std::string_view key;
      const char* k = field.key().raw();
      const void* quote = k < end ? std::memchr(k, '"', static_cast<size_t>(end - k)) : nullptr;
      if (quote != nullptr &&
          std::memchr(k, '\\', static_cast<size_t>(static_cast<const char*>(quote) - k)) ==
              nullptr) {
        key = std::string_view(k, static_cast<size_t>(static_cast<const char*>(quote) - k));
      } else if ((e = field.unescaped_key().get(key))) {
        return e;
      }
      const int idx = fields_.Lookup(key, cursor);
      if (idx < 0) continue;  // unknown fields are ignored
      const FieldTable::Entry& entry = fields_.entry(idx);
      od::value v = field.value();
      od::json_type type;
      if ((e = v.type().get(type))) return e;
      const int f = entry.field;
      if (f == kTtft) ttft_present = true;
      if (type == od::json_type::null) continue;  // missing: NaN / -1 / ""
      if (IsDouble(f)) {
        double d;
        if (type == od::json_type::string) {
          std::string_view s;
          if ((e = GetString(v, s))) return e;
          if (LooksNonFinite(s)) {
            err = fmt::format("{} is {} (NaN/Infinity)", entry.source, s);
          } else if (std::from_chars(s.data(), s.data() + s.size(), d).ec != std::errc()) {
            err = fmt::format("{}: expected a number, got \"{}\"", entry.source, s);
          } else {
            *DoubleSlot(r, f) = d * entry.scale;
          }
          continue;
        }
        const std::string_view token = v.raw_json_token();
        if ((e = v.get_double().get(d))) {
          if (e == simdjson::INCORRECT_TYPE) {
            err = fmt::format("{}: expected a number", entry.source);
            continue;
          }
          return e;
        }
        *DoubleSlot(r, f) = RereadLongNumber(token, d) * entry.scale;
      } else if (IsInt(f)) {
        if (type != od::json_type::number) {
          err = fmt::format("{}: expected an integer", entry.source);
          continue;
        }
        int64_t i;
        auto ie = v.get_int64().get(i);
        if (ie) {
          double d;
          const std::string_view token = v.raw_json_token();
          if ((e = v.get_double().get(d))) return e;
          d = RereadLongNumber(token, d);
          if (d != std::floor(d) || std::fabs(d) > 9e15) {
            err = fmt::format("{}: expected an integer, got {}", entry.source, d);
            continue;
          }
          i = static_cast<int64_t>(d);
        }
        SetInt(r, f, i);
      } else {
        std::string_view s;
        if (type != od::json_type::string) {
          err = fmt::format("{}: expected a string", entry.source);
          continue;
        }
        if ((e = GetString(v, s))) return e;
        if (f == kRequestId) {
          r.request_id = s;
        } else if (f == kStatus) {
          auto st = ParseRequestStatus(s);
          if (!st) {
            err = fmt::format("status: unknown value \"{}\"", s);
          } else {
            r.status = *st;
          }
        } else {
          r.labels[static_cast<size_t>(f - kReplica)] = s;
        }
      }
    }
    return simdjson::SUCCESS;
  }

  RecordContext& ctx_;
  FieldTable fields_;
  bool fast_path_;
  int64_t fast_lines_ = 0;
  od::parser parser_;
};

// ---------------------------------------------------------------------------
// CSV: a header row naming the columns, RFC 4180 quoting (no newlines in fields).
// ---------------------------------------------------------------------------
class CsvParser final : public LineParser {
 public:
  explicit CsvParser(RecordContext& ctx) : ctx_(ctx), fields_(ctx.options().columns) {}

  Status ParseLine(const char* p, size_t len, size_t, int64_t line, bool unterminated) override {
    const std::string_view text(p, len);
    if (IsBlank(text)) return Status::Ok();
    // One line is one record (no newlines in quoted fields): the tokenizer drops one
    // '\r' before its end, as the record's line end.
    CsvReader csv(text, CsvOptions{.trim_spaces = true});
    if (!csv.Next(cells_)) {
      return ctx_.Bad(line, unterminated ? "truncated record" : "malformed csv",
                      "malformed CSV: unbalanced quotes");
    }
    if (columns_.empty()) {
      size_t cursor = 0;
      for (const std::string& name : cells_) {
        const int idx = fields_.Lookup(name, cursor);
        columns_.push_back(idx);
      }
      ttft_column_ = false;
      for (int c : columns_)
        ttft_column_ = ttft_column_ || (c >= 0 && fields_.entry(c).field == kTtft);
      return Status::Ok();
    }
    if (cells_.size() != columns_.size()) {
      return ctx_.Bad(line, unterminated ? "truncated record" : "malformed csv",
                      fmt::format("{}{} fields, header has {}",
                                  unterminated ? "truncated record at end of input: " : "",
                                  cells_.size(), columns_.size()));
    }
    SpanRecord r;
    for (size_t c = 0; c < cells_.size(); ++c) {
      if (columns_[c] < 0) continue;
      const FieldTable::Entry& entry = fields_.entry(columns_[c]);
      const std::string& cell = cells_[c];
      const int f = entry.field;
      if (cell.empty() || cell == "null") continue;
      if (IsDouble(f) || IsInt(f)) {
        if (LooksNonFinite(cell)) {
          return ctx_.Bad(line, "invalid value",
                          fmt::format("{} is {} (NaN/Infinity)", entry.source, cell));
        }
        double d;
        auto res = std::from_chars(cell.data(), cell.data() + cell.size(), d);
        if (res.ec != std::errc() || res.ptr != cell.data() + cell.size()) {
          return ctx_.Bad(line, "invalid value",
                          fmt::format("{}: expected a number, got \"{}\"", entry.source, cell));
        }
        if (IsDouble(f)) {
          *DoubleSlot(r, f) = d * entry.scale;
        } else {
          if (d != std::floor(d) || std::fabs(d) > 9e15) {
            return ctx_.Bad(line, "invalid value",
                            fmt::format("{}: expected an integer, got \"{}\"", entry.source, cell));
          }
          SetInt(r, f, static_cast<int64_t>(d));
        }
      } else if (f == kRequestId) {
        r.request_id = cell;
      } else if (f == kStatus) {
        auto st = ParseRequestStatus(cell);
        if (!st) {
          return ctx_.Bad(line, "invalid value", fmt::format("status: unknown value \"{}\"", cell));
        }
        r.status = *st;
      } else {
        r.labels[static_cast<size_t>(f - kReplica)] = cell;
      }
    }
    return ctx_.Emit(r, line, ttft_column_);
  }
  Status Finish() override { return ctx_.Finish(); }

 private:
  RecordContext& ctx_;
  FieldTable fields_;
  std::vector<int> columns_;
  std::vector<std::string> cells_;
  bool ttft_column_ = false;
};

// ---------------------------------------------------------------------------
// OTLP/JSON traces and span-sink lines (DOM: documents are nested and small).
// ---------------------------------------------------------------------------

// An attribute value, whatever its JSON spelling.
struct AttrValue {
  enum Kind { kNone, kString, kInt, kDouble, kBool } kind = kNone;
  std::string_view s;
  int64_t i = 0;
  double d = 0;
  bool b = false;
};

// Numbers may arrive as JSON numbers or decimal strings (OTLP int64 rule).
bool ElementToDouble(simdjson::dom::element el, double& out, std::string& err) {
  if (el.is_string()) {
    std::string_view s = el.get_string().value_unsafe();
    if (LooksNonFinite(s)) {
      err = fmt::format("NaN/Infinity (\"{}\")", s);
      return false;
    }
    if (std::from_chars(s.data(), s.data() + s.size(), out).ec != std::errc()) {
      err = fmt::format("expected a number, got \"{}\"", s);
      return false;
    }
    return true;
  }
  if (el.is_number()) {
    double d;
    if (el.get_double().get(d) == simdjson::SUCCESS) {
      out = d;
      return true;
    }
  }
  err = "expected a number";
  return false;
}

bool ElementToInt(simdjson::dom::element el, int64_t& out, std::string& err) {
  if (el.is_int64()) {
    out = el.get_int64().value_unsafe();
    return true;
  }
  if (el.is_uint64()) {
    out = static_cast<int64_t>(std::min<uint64_t>(el.get_uint64().value_unsafe(), INT64_MAX));
    return true;
  }
  double d;
  if (!ElementToDouble(el, d, err)) return false;
  if (d != std::floor(d) || std::fabs(d) > 9.2e18) {
    err = fmt::format("expected an integer, got {}", d);
    return false;
  }
  out = static_cast<int64_t>(d);
  return true;
}

// Unix nanoseconds (string or number) -> seconds, keeping sub-microsecond precision.
bool NanosToSeconds(simdjson::dom::element el, double& out) {
  uint64_t ns = 0;
  if (el.is_string()) {
    std::string_view s = el.get_string().value_unsafe();
    if (std::from_chars(s.data(), s.data() + s.size(), ns).ec != std::errc()) return false;
  } else if (el.is_uint64()) {
    ns = el.get_uint64().value_unsafe();
  } else if (el.is_int64()) {
    const int64_t v = el.get_int64().value_unsafe();
    if (v < 0) return false;
    ns = static_cast<uint64_t>(v);
  } else if (el.is_double()) {
    const double d = el.get_double().value_unsafe();
    if (!(d >= 0) || d > 1.8e19) return false;
    out = d / 1e9;
    return true;
  } else {
    return false;
  }
  out = static_cast<double>(ns / 1000000000ULL) + static_cast<double>(ns % 1000000000ULL) / 1e9;
  return true;
}

// The OTLP AnyValue object: {"stringValue": ..} | {"intValue": ..} | ...
AttrValue OtlpValue(simdjson::dom::element v, std::string& err) {
  AttrValue out;
  simdjson::dom::object obj;
  if (v.get_object().get(obj)) return out;
  for (auto [k, el] : obj) {
    if (k == "stringValue" && el.is_string()) {
      out.kind = AttrValue::kString;
      out.s = el.get_string().value_unsafe();
    } else if (k == "intValue") {
      if (ElementToInt(el, out.i, err)) out.kind = AttrValue::kInt;
    } else if (k == "doubleValue") {
      if (ElementToDouble(el, out.d, err)) out.kind = AttrValue::kDouble;
    } else if (k == "boolValue" && el.is_bool()) {
      out.kind = AttrValue::kBool;
      out.b = el.get_bool().value_unsafe();
    }
  }
  return out;
}

// A flattened attribute value (span-sink lines): a JSON scalar.
AttrValue FlatValue(simdjson::dom::element el, std::string& err) {
  AttrValue out;
  if (el.is_string()) {
    out.kind = AttrValue::kString;
    out.s = el.get_string().value_unsafe();
  } else if (el.is_int64() || el.is_uint64()) {
    if (ElementToInt(el, out.i, err)) out.kind = AttrValue::kInt;
  } else if (el.is_double()) {
    out.kind = AttrValue::kDouble;
    out.d = el.get_double().value_unsafe();
  } else if (el.is_bool()) {
    out.kind = AttrValue::kBool;
    out.b = el.get_bool().value_unsafe();
  }
  return out;
}

bool AsDouble(const AttrValue& v, double& d) {
  if (v.kind == AttrValue::kDouble) {
    d = v.d;
  } else if (v.kind == AttrValue::kInt) {
    d = static_cast<double>(v.i);
  } else if (v.kind == AttrValue::kString) {
    if (LooksNonFinite(v.s)) return false;
    return std::from_chars(v.s.data(), v.s.data() + v.s.size(), d).ec == std::errc();
  } else {
    return false;
  }
  return true;
}
bool AsInt(const AttrValue& v, int64_t& i) {
  double d;
  if (v.kind == AttrValue::kInt) {
    i = v.i;
    return true;
  }
  if (!AsDouble(v, d) || d != std::floor(d)) return false;
  i = static_cast<int64_t>(d);
  return true;
}

// Mapping of vLLM llm_request attributes and OTel GenAI names (docs/telemetry.md).
struct RequestBuilder {
  SpanRecord r;
  bool is_request = false;
  bool ttft_present = false;
  int replica_rank = 99;  // lower wins: service.instance.id < k8s.pod.name < host.name
  std::string error;

  void Attribute(std::string_view key, const AttrValue& v, bool resource) {
    if (!error.empty() || v.kind == AttrValue::kNone) return;
    if (key == "service.instance.id" || key == "k8s.pod.name" || key == "host.name") {
      const int rank = key == "service.instance.id" ? 0 : key == "k8s.pod.name" ? 1 : 2;
      if (v.kind == AttrValue::kString && rank < replica_rank) {
        replica_rank = rank;
        r.labels[static_cast<size_t>(SpanLabel::kReplica)] = v.s;
      }
      return;
    }
    if (key == "cloud.region") {
      if (v.kind == AttrValue::kString) r.labels[static_cast<size_t>(SpanLabel::kRegion)] = v.s;
      return;
    }
    if (resource || !key.starts_with("gen_ai.")) return;
    double* slot = nullptr;
    if (key == "gen_ai.latency.time_to_first_token") {
      slot = &r.ttft_s;
      ttft_present = true;
    } else if (key == "gen_ai.latency.time_in_queue") {
      slot = &r.queue_s;
    } else if (key == "gen_ai.latency.time_in_model_prefill") {
      slot = &r.prefill_s;
    } else if (key == "gen_ai.latency.time_in_model_decode") {
      slot = &r.decode_s;
    } else if (key == "gen_ai.latency.e2e") {
      slot = &r.e2e_s;
    }
    if (key.starts_with("gen_ai.latency.")) is_request = true;
    if (slot != nullptr) {
      if (!AsDouble(v, *slot)) error = fmt::format("{}: not a finite number", key);
      return;
    }
    int64_t* islot = nullptr;
    if (key == "gen_ai.usage.prompt_tokens" || key == "gen_ai.usage.input_tokens") {
      islot = &r.prompt_tokens;
    } else if (key == "gen_ai.usage.completion_tokens" || key == "gen_ai.usage.output_tokens") {
      islot = &r.output_tokens;
    } else if (key == "gen_ai.usage.cache_read.input_tokens" ||
               key == "gen_ai.usage.cached_tokens") {
      islot = &r.cached_tokens;
    }
    if (islot != nullptr) {
      if (!AsInt(v, *islot)) error = fmt::format("{}: not an integer", key);
      return;
    }
    if (v.kind != AttrValue::kString) return;
    if (key == "gen_ai.request.id") {
      r.request_id = v.s;
    } else if (key == "gen_ai.response.model" ||
               (key == "gen_ai.request.model" && r.labels[3].empty())) {
      r.labels[static_cast<size_t>(SpanLabel::kModel)] = v.s;
    } else if (key == "gen_ai.response.finish_reasons") {
      if (v.s.find("abort") != std::string_view::npos) {
        r.status = RequestStatus::kAborted;
      } else if (v.s.find("error") != std::string_view::npos) {
        r.status = RequestStatus::kError;
      }
    }
  }

  // Derived fields: vLLM's mean TPOT = decode / (output_tokens - 1).
  void Finish() {
    if (std::isnan(r.itl_mean_s) && !std::isnan(r.decode_s) && r.output_tokens >= 2) {
      r.itl_mean_s = r.decode_s / static_cast<double>(r.output_tokens - 1);
    }
  }
};

class OtlpParser final : public LineParser {
 public:
  OtlpParser(RecordContext& ctx, bool sink_lines) : ctx_(ctx), sink_lines_(sink_lines) {}

  Status ParseLine(const char* p, size_t len, size_t, int64_t line, bool unterminated) override {
    std::string_view text(p, len);
    if (whole_document_) {
      document_.append(text);
      document_.push_back('\n');
      return Status::Ok();
    }
    if (IsBlank(text)) return Status::Ok();
    simdjson::dom::element doc;
    auto e = parser_.parse(p, len).get(doc);
    if (e) {
      // A pretty-printed document (the TracesData example) spans many lines: the
      // first line alone does not parse, so read the rest as one document.
      if (first_line_ && !unterminated && !sink_lines_) {
        whole_document_ = true;
        document_line_ = line;
        document_.assign(text);
        document_.push_back('\n');
        return Status::Ok();
      }
      return ctx_.Bad(line, unterminated ? "truncated record" : "malformed json",
                      JsonErrorReason(e, unterminated, text));
    }
    first_line_ = false;
    return sink_lines_ ? SinkLine(doc, line) : Document(doc, line);
  }

  Status Finish() override {
    if (whole_document_) {
      simdjson::dom::element doc;
      auto e = parser_.parse(document_).get(doc);
      if (e) {
        TTFT_RETURN_IF_ERROR(
            ctx_.Bad(document_line_, "malformed json", JsonErrorReason(e, false, document_)));
      } else {
        TTFT_RETURN_IF_ERROR(Document(doc, document_line_));
      }
    }
    return ctx_.Finish();
  }

 private:
  // {"resourceSpans":[{"resource":{"attributes":[..]},"scopeSpans":[{"spans":[..]}]}]}
  Status Document(simdjson::dom::element doc, int64_t line) {
    simdjson::dom::array resource_spans;
    if (doc["resourceSpans"].get(resource_spans) && doc["resource_spans"].get(resource_spans)) {
      return ctx_.Bad(line, "not otlp", "not an OTLP traces object (no resourceSpans array)");
    }
    for (simdjson::dom::element rs : resource_spans) {
      RequestBuilder resource;
      simdjson::dom::array attrs;
      if (!rs["resource"]["attributes"].get(attrs)) {
        ApplyOtlpAttributes(attrs, resource, /*resource=*/true);
      }
      for (std::string_view scope_key :
           {"scopeSpans", "instrumentationLibrarySpans", "scope_spans"}) {
        simdjson::dom::array scopes;
        if (rs[scope_key].get(scopes)) continue;
        for (simdjson::dom::element scope : scopes) {
          simdjson::dom::array spans;
          if (scope["spans"].get(spans)) continue;
          for (simdjson::dom::element span : spans) {
            TTFT_RETURN_IF_ERROR(OtlpSpan(span, resource, line));
          }
        }
      }
    }
    return Status::Ok();
  }

  void ApplyOtlpAttributes(simdjson::dom::array attrs, RequestBuilder& b, bool resource) {
    for (simdjson::dom::element kv : attrs) {
      std::string_view key;
      simdjson::dom::element value;
      if (kv["key"].get(key) || kv["value"].get(value)) continue;
      std::string err;
      AttrValue v = OtlpValue(value, err);
      if (!err.empty() && b.error.empty()) b.error = fmt::format("{}: {}", key, err);
      b.Attribute(key, v, resource);
    }
  }

  Status OtlpSpan(simdjson::dom::element span, const RequestBuilder& resource, int64_t line) {
    RequestBuilder b = resource;
    std::string_view name;
    if (span["name"].get(name)) name = {};
    b.is_request = name == "llm_request";
    simdjson::dom::array attrs;
    if (!span["attributes"].get(attrs)) ApplyOtlpAttributes(attrs, b, false);
    if (!b.is_request) {
      ctx_.Ignore();
      return Status::Ok();
    }
    simdjson::dom::element start;
    if (!span["startTimeUnixNano"].get(start) && !NanosToSeconds(start, b.r.arrival_s)) {
      return ctx_.Bad(line, "invalid value", "startTimeUnixNano: not a timestamp");
    }
    simdjson::dom::element code;
    if (!span["status"]["code"].get(code)) {
      if ((code.is_int64() && code.get_int64().value_unsafe() == 2) ||
          (code.is_string() && code.get_string().value_unsafe() == "STATUS_CODE_ERROR")) {
        if (b.r.status == RequestStatus::kOk) b.r.status = RequestStatus::kError;
      }
    }
    return Finish(b, line);
  }

  // {"name": .., "start_unix_ns": .., "end_unix_ns": .., "attributes": {flat}}
  Status SinkLine(simdjson::dom::element doc, int64_t line) {
    RequestBuilder b;
    std::string_view name;
    if (doc["name"].get(name)) name = {};
    b.is_request = name == "llm_request";
    simdjson::dom::object attrs;
    if (!doc["attributes"].get(attrs)) {
      for (auto [k, el] : attrs) {
        std::string err;
        AttrValue v = FlatValue(el, err);
        if (!err.empty() && b.error.empty()) b.error = fmt::format("{}: {}", k, err);
        b.Attribute(k, v, false);
      }
    }
    if (!b.is_request) {
      ctx_.Ignore();
      return Status::Ok();
    }
    simdjson::dom::element start;
    if (!doc["start_unix_ns"].get(start) && !NanosToSeconds(start, b.r.arrival_s)) {
      return ctx_.Bad(line, "invalid value", "start_unix_ns: not a timestamp");
    }
    return Finish(b, line);
  }

  Status Finish(RequestBuilder& b, int64_t line) {
    if (!b.error.empty()) return ctx_.Bad(line, "invalid value", b.error);
    b.Finish();
    if (!b.ttft_present && b.r.status == RequestStatus::kOk) {
      return ctx_.Bad(line, "missing field",
                      "llm_request span without gen_ai.latency.time_to_first_token");
    }
    return ctx_.Emit(b.r, line, true);
  }

  RecordContext& ctx_;
  bool sink_lines_;
  simdjson::dom::parser parser_;
  bool first_line_ = true;
  bool whole_document_ = false;
  int64_t document_line_ = 1;
  std::string document_;
};

std::unique_ptr<LineParser> MakeParser(InputFormat f, RecordContext& ctx, bool fast_path = true) {
  switch (f) {
    case InputFormat::kCsv: return std::make_unique<CsvParser>(ctx);
    case InputFormat::kOtlp: return std::make_unique<OtlpParser>(ctx, false);
    case InputFormat::kSpanSink: return std::make_unique<OtlpParser>(ctx, true);
    default: return std::make_unique<JsonlParser>(ctx, fast_path);
  }
}

Status CheckSpanFormat(InputFormat f, std::string_view source) {
  if (f == InputFormat::kProm || f == InputFormat::kPromQueryJson) {
    return Status::Invalid(fmt::format("{}: holds {} metrics, not spans", source, ToString(f)));
  }
  return Status::Ok();
}

// Splits `buf[0, filled)` into lines and feeds them; returns the offset of the
// first byte not consumed (the start of an incomplete last line).
Result<size_t> FeedLines(LineParser& parser, char* buf, size_t filled, size_t capacity,
                         int64_t& line_no) {
  size_t start = 0;
  for (;;) {
    const void* nl = std::memchr(buf + start, '\n', filled - start);
    if (nl == nullptr) return start;
    const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - buf);
    size_t len = end - start;
    if (len > 0 && buf[start + len - 1] == '\r') --len;
    TTFT_RETURN_IF_ERROR(parser.ParseLine(buf + start, len, capacity - start, line_no, false));
    ++line_no;
    start = end + 1;
  }
}

// Feeds everything `read(dst, n) -> Result<size_t>` (0 at the end) returns to `parser`,
// line by line. `buf` (size data_cap + SIMDJSON_PADDING) holds `filled` bytes read
// already, `eof` when they are all there are. The last line may lack its newline. Does
// not call parser.Finish(). Stops early, returning Ok, once `*stop` is set.
template <typename Read>
Status ParseStream(Read&& read, LineParser& parser, std::vector<char>& buf, size_t data_cap,
                   size_t filled, bool eof, int64_t& line_no,
                   const std::atomic<bool>* stop = nullptr) {
  const size_t padding = simdjson::SIMDJSON_PADDING;
  for (;;) {
    TTFT_ASSIGN_OR_RETURN(size_t rest, FeedLines(parser, buf.data(), filled, buf.size(), line_no));
    // Keep the incomplete tail; grow when one line fills the buffer.
    std::memmove(buf.data(), buf.data() + rest, filled - rest);
    filled -= rest;
    if (eof) break;
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) return Status::Ok();
    if (filled == data_cap) {
      data_cap *= 2;
      buf.resize(data_cap + padding, '\0');
    }
    TTFT_ASSIGN_OR_RETURN(size_t n, read(buf.data() + filled, data_cap - filled));
    if (n == 0) eof = true;
    filled += n;
  }
  if (filled > 0) {
    std::memset(buf.data() + filled, 0, buf.size() - filled);
    size_t len = filled;
    if (buf[len - 1] == '\r') --len;
    TTFT_RETURN_IF_ERROR(parser.ParseLine(buf.data(), len, buf.size(), line_no, true));
  }
  return Status::Ok();
}

// The spans a reader would emit from `filled` bytes of `buf` holding `lines` newlines
// when the whole input is `total` bytes: 2% high, so that columns are allocated once.
size_t EstimateSpans(size_t lines, size_t filled, uint64_t total) {
  return static_cast<size_t>(static_cast<double>(total) / static_cast<double>(filled) *
                             static_cast<double>(lines) * 1.02) +
         1;
}

}  // namespace

InputFormat DetectFormat(std::string_view head) {
  size_t i = 0;
  if (head.starts_with("\xEF\xBB\xBF")) i = 3;
  while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  std::string_view rest = head.substr(i);
  if (rest.starts_with("{") || rest.starts_with("[")) {
    const std::string_view first = rest.substr(0, 4096);
    if (first.find("\"resourceSpans\"") != std::string_view::npos ||
        first.find("\"resource_spans\"") != std::string_view::npos) {
      return InputFormat::kOtlp;
    }
    if (first.find("\"resultType\"") != std::string_view::npos) return InputFormat::kPromQueryJson;
    if (first.find("\"start_unix_ns\"") != std::string_view::npos) return InputFormat::kSpanSink;
    return InputFormat::kSpanJsonl;
  }
  // Exposition text: HELP/TYPE comments or `name{...} value` samples in the first lines.
  if (head.find("# TYPE ") != std::string_view::npos ||
      head.find("# HELP ") != std::string_view::npos) {
    return InputFormat::kProm;
  }
  const std::string_view line = rest.substr(0, rest.find('\n'));
  if (line.find(',') != std::string_view::npos) return InputFormat::kCsv;
  if (!line.empty() && (std::isalpha(static_cast<unsigned char>(line[0])) || line[0] == '_') &&
      line.find(' ') != std::string_view::npos) {
    return InputFormat::kProm;
  }
  return InputFormat::kSpanJsonl;
}

Status ParseSpans(std::string_view data, std::string_view source, const SpanReadOptions& options,
                  SpanSink& sink, ReadReport& report) {
  return internal::ParseSpansWithFastPath(data, source, options, sink, report, true, nullptr);
}

Status internal::ParseSpansWithFastPath(std::string_view data, std::string_view source,
                                        const SpanReadOptions& options, SpanSink& sink,
                                        ReadReport& report, bool fast_path, int64_t* fast_lines) {
  InputFormat format = options.format == InputFormat::kAuto ? DetectFormat(data) : options.format;
  TTFT_RETURN_IF_ERROR(CheckSpanFormat(format, source));
  // Copy into a padded buffer (simdjson reads up to SIMDJSON_PADDING past the end).
  std::vector<char> buf(data.size() + simdjson::SIMDJSON_PADDING + 1, '\0');
  if (!data.empty()) std::memcpy(buf.data(), data.data(), data.size());  // data() may be null
  RecordContext ctx(source, options, sink, report);
  auto parser = MakeParser(format, ctx, fast_path);
  auto parse = [&]() -> Status {
    int64_t line_no = 1;
    TTFT_ASSIGN_OR_RETURN(size_t rest,
                          FeedLines(*parser, buf.data(), data.size(), buf.size() - 1, line_no));
    if (rest < data.size()) {
      size_t len = data.size() - rest;
      if (buf[rest + len - 1] == '\r') --len;
      TTFT_RETURN_IF_ERROR(
          parser->ParseLine(buf.data() + rest, len, buf.size() - 1 - rest, line_no, true));
    }
    return parser->Finish();
  };
  Status st = parse();
  if (fast_lines != nullptr) *fast_lines = parser->fast_lines();
  return st;
}

Status ReadSpans(const std::string& path, const SpanReadOptions& options, SpanSink& sink,
                 ReadReport& report) {
  TTFT_ASSIGN_OR_RETURN(auto in, internal::InputStream::Open(path));
  const size_t padding = simdjson::SIMDJSON_PADDING;
  size_t data_cap = std::max<size_t>(options.chunk_bytes, 4096);
  std::vector<char> buf(data_cap + padding, '\0');
  size_t filled = 0;
  bool eof = false;
  // Fill the first chunk, detect the format from it.
  while (filled < data_cap && !eof) {
    TTFT_ASSIGN_OR_RETURN(size_t n, in->Read(buf.data() + filled, data_cap - filled));
    eof = n == 0;
    filled += n;
  }
  InputFormat format = options.format == InputFormat::kAuto
                           ? DetectFormat(std::string_view(buf.data(), filled))
                           : options.format;
  TTFT_RETURN_IF_ERROR(CheckSpanFormat(format, in->name()));
  RecordContext ctx(in->name(), options, sink, report);
  // One line is one span in JSONL and CSV: estimate the count from the file size and
  // the first chunk's lines, 2% high so that the columns are allocated once.
  if ((format == InputFormat::kSpanJsonl || format == InputFormat::kCsv) && !in->gzip() &&
      path != "-" && filled > 0) {
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(path, ec);
    const size_t lines = static_cast<size_t>(std::count(buf.data(), buf.data() + filled, '\n'));
    if (!ec && lines > 0) ctx.ExpectMore(EstimateSpans(lines, filled, size));
  }
  auto parser = MakeParser(format, ctx);
  int64_t line_no = 1;
  TTFT_RETURN_IF_ERROR(ParseStream([&](char* dst, size_t n) { return in->Read(dst, n); }, *parser,
                                   buf, data_cap, filled, eof, line_no));
  return parser->Finish();
}

namespace {

// An open file, closed on scope exit.
struct FileFd {
  int fd = -1;
  ~FileFd() {
    if (fd >= 0) ::close(fd);
  }
};

Result<size_t> PRead(int fd, const std::string& name, char* dst, size_t n, uint64_t pos) {
  for (;;) {
    const ssize_t r = ::pread(fd, dst, n, static_cast<off_t>(pos));
    if (r >= 0) return static_cast<size_t>(r);
    if (errno != EINTR) {
      return Status::IoError(fmt::format("{}: read failed: {}", name, std::strerror(errno)));
    }
  }
}

// One byte range of a span JSONL file read by ReadSpanTable: [begin, end), starting at
// a line's first byte and (but for the last) ending just after a newline.
struct Range {
  uint64_t begin = 0, end = 0;
  SpanTable own;          // the spans of ranges after the first (the first fills the table)
  ReadReport own_report;  // likewise
  std::unique_ptr<RecordContext> ctx;
  std::unique_ptr<LineParser> parser;
  Status status;
  int64_t lines = 0;  // lines parsed: the range's last line number
};

// Parses one range; `first` ranges estimate the spans of the whole file (`total`).
Status ParseRange(int fd, const std::string& name, Range& r, SpanTable& table, bool first,
                  uint64_t total, size_t chunk_bytes, const std::atomic<bool>& stop) {
  size_t data_cap = std::max<size_t>(chunk_bytes, 4096);
  std::vector<char> buf(data_cap + simdjson::SIMDJSON_PADDING, '\0');
  uint64_t pos = r.begin;
  auto read = [&](char* dst, size_t n) -> Result<size_t> {
    n = static_cast<size_t>(std::min<uint64_t>(n, r.end - pos));
    if (n == 0) return size_t{0};
    TTFT_ASSIGN_OR_RETURN(size_t got, PRead(fd, name, dst, n, pos));
    pos += got;
    return got;
  };
  size_t filled = 0;
  bool eof = false;
  while (filled < data_cap && !eof) {
    TTFT_ASSIGN_OR_RETURN(size_t n, read(buf.data() + filled, data_cap - filled));
    eof = n == 0;
    filled += n;
  }
  const size_t lines = static_cast<size_t>(std::count(buf.data(), buf.data() + filled, '\n'));
  if (lines > 0) {
    if (first) {
      table.Reserve(table.size() + EstimateSpans(lines, filled, total));
      r.ctx->ReserveIds(EstimateSpans(lines, filled, r.end - r.begin));
    } else {
      r.ctx->ExpectMore(EstimateSpans(lines, filled, r.end - r.begin));
    }
  }
  int64_t line_no = 1;
  Status st = ParseStream(read, *r.parser, buf, data_cap, filled, eof, line_no, &stop);
  r.lines = line_no - 1;
  return st;
}

// The line numbers `wanted` (ascending, 1-based within the range) of range `r`, as text.
Result<std::vector<std::string>> LinesOf(int fd, const std::string& name, const Range& r,
                                         const std::vector<int64_t>& wanted) {
  std::vector<std::string> out(wanted.size());
  std::vector<char> buf(1 << 20);
  size_t next = 0;
  int64_t line = 1;
  for (uint64_t pos = r.begin; pos < r.end && next < wanted.size();) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), r.end - pos));
    TTFT_ASSIGN_OR_RETURN(size_t n, PRead(fd, name, buf.data(), want, pos));
    if (n == 0) break;
    pos += n;
    for (const char* p = buf.data(); p < buf.data() + n && next < wanted.size();) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', buf.data() + n - p));
      const char* stop = nl != nullptr ? nl : buf.data() + n;
      if (line == wanted[next]) out[next].append(p, stop);
      if (nl == nullptr) break;
      if (line == wanted[next]) ++next;
      ++line;
      p = nl + 1;
    }
  }
  return out;
}

// Captures the request id of the one span it receives.
class IdSink final : public SpanSink {
 public:
  void Add(const SpanRecord& s) override { id = std::string(s.request_id); }
  std::string id;
};

// The request id the JSONL reader sees on `line` (a line it accepted once).
std::string RequestIdOf(std::string line, const SpanReadOptions& options) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const size_t len = line.size();
  line.resize(len + simdjson::SIMDJSON_PADDING, '\0');
  SpanReadOptions o = options;
  o.strict = false;
  o.detect_duplicates = false;
  IdSink sink;
  ReadReport report;
  RecordContext ctx("", o, sink, report);
  JsonlParser parser(ctx, true);
  (void)parser.ParseLine(line.data(), len, line.size(), 1, false);
  return sink.id;
}

// Merges range `r` (after the first) into `table` and `report` as if it had been read
// right after the ranges before it, whose duplicate sets are `earlier` and whose lines
// number `line_offset`: the records whose id an earlier range accepted are dropped
// and reported as duplicates, issues get file line numbers and join in line order.
// Returns the status a sequential read would have stopped with (strict: the first
// bad record of the range in file order).
Status MergeRange(int fd, const std::string& name, Range& r, RecordContext& first,
                  const std::vector<const RecordContext*>& earlier, int64_t line_offset,
                  const SpanReadOptions& options, SpanTable& table, ReadReport& report) {
  using Row = RecordContext::Row;
  const LargeVector<Row>& rows = r.ctx->rows();
  // Rows whose id an earlier range holds, in order.
  std::vector<size_t> dropped;
  constexpr size_t kAhead = 16;
  auto seen = [&](size_t i) {
    for (const RecordContext* c : earlier) {
      if (c->SeenId(rows[i].hash)) return true;
    }
    return false;
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i + kAhead < rows.size() && (rows[i + kAhead].line & RecordContext::kHasId)) {
      for (const RecordContext* c : earlier) c->PrefetchId(rows[i + kAhead].hash);
    }
    if ((rows[i].line & RecordContext::kHasId) && seen(i)) dropped.push_back(i);
  }
  auto line_of = [&](size_t row) { return rows[row].line & RecordContext::kLineMask; };
  // Under strict, a duplicate before the range's own first error stops the read there.
  const bool strict_dup = options.strict && !dropped.empty() &&
                          (r.status.ok() || r.ctx->strict_error_line() == 0 ||
                           line_of(dropped.front()) < r.ctx->strict_error_line());
  size_t keep_end = r.own.size();  // rows past this are dropped too (strict)
  if (strict_dup) {
    keep_end = dropped.front();
    dropped.resize(1);
  }
  // Reported duplicates: the first ones that fit in the report's issue list.
  const ReadReport& local = r.own_report;
  std::vector<RecordIssue> issues;
  std::string strict_reason;
  {
    std::vector<int64_t> dup_lines;
    size_t li = 0, di = 0;
    const size_t room = ReadReport::kMaxIssues > report.issues.size()
                            ? ReadReport::kMaxIssues - report.issues.size()
                            : 0;
    std::vector<std::pair<int64_t, int>> order;  // (line, 0 local / 1 duplicate)
    while (order.size() < room && (li < local.issues.size() || di < dropped.size())) {
      const int64_t dl = di < dropped.size() ? line_of(dropped[di]) : INT64_MAX;
      const int64_t ll =
          li < local.issues.size() && !strict_dup ? local.issues[li].line : INT64_MAX;
      if (dl == INT64_MAX && ll == INT64_MAX) break;
      if (dl < ll) {
        order.emplace_back(dl, 1);
        dup_lines.push_back(dl);
        ++di;
      } else {
        order.emplace_back(ll, 0);
        ++li;
      }
    }
    if (strict_dup && dup_lines.empty()) dup_lines.push_back(line_of(dropped.front()));
    std::vector<std::string> texts;
    if (!dup_lines.empty()) {
      TTFT_ASSIGN_OR_RETURN(texts, LinesOf(fd, name, r, dup_lines));
    }
    for (std::string& t : texts) {
      t = fmt::format("duplicate request_id '{}'", RequestIdOf(std::move(t), options));
    }
    if (strict_dup) strict_reason = texts.front();
    li = 0;
    di = 0;
    for (const auto& [line, kind] : order) {
      if (kind == 0) {
        RecordIssue issue = local.issues[li++];
        issue.line += line_offset;
        issues.push_back(std::move(issue));
      } else {
        issues.push_back(RecordIssue{name, line + line_offset, texts[di++]});
      }
    }
  }
  // Counts.
  const int64_t ndrop = static_cast<int64_t>(dropped.size());
  if (strict_dup) {
    report.records_read += static_cast<int64_t>(keep_end);
    report.records_skipped += 1;
    report.skipped_by_category["duplicate request_id"] += 1;
  } else {
    report.records_read += local.records_read - ndrop;
    report.records_skipped += local.records_skipped + ndrop;
    report.records_ignored += local.records_ignored;
    for (const auto& [category, n] : local.skipped_by_category) {
      report.skipped_by_category[category] += n;
    }
    if (ndrop > 0) report.skipped_by_category["duplicate request_id"] += ndrop;
    for (const std::string& w : local.warnings) report.warnings.push_back(w);
  }
  for (RecordIssue& issue : issues) report.issues.push_back(std::move(issue));
  // Rows.
  if (strict_dup) {
    table.Append(r.own, {}, keep_end);
    return Status::DataError(
        fmt::format("{}:{}: {}", name, line_of(keep_end) + line_offset, strict_reason));
  }
  table.Append(r.own, dropped, SIZE_MAX, /*threads=*/2);
  int64_t with = r.ctx->with_ttft(), over = r.ctx->ttft_over_30s();
  for (size_t i : dropped) {
    with -= (rows[i].line & RecordContext::kWithTtft) ? 1 : 0;
    over -= (rows[i].line & RecordContext::kTtftOver30) ? 1 : 0;
  }
  first.AddTtftCounts(with, over);
  if (!r.status.ok() && r.ctx->strict_error_line() > 0) {
    const RecordIssue& bad = local.issues.back();
    return Status::DataError(
        fmt::format("{}:{}: {}", name, r.ctx->strict_error_line() + line_offset, bad.reason));
  }
  return r.status;
}

}  // namespace

namespace {

// Sorts id hashes ascending: one pass distributes them by their top 11 bits, then
// each of the 2,048 buckets (a few KB for millions of uniform XXH3 hashes, so in
// cache) is sorted on its own. Three times faster than std::sort over 5 M hashes,
// which missed the cache on every partition pass.
void SortHashes(LargeVector<uint64_t>& v) {
  constexpr int kBits = 11;
  if (v.size() < (size_t{1} << 16)) {
    std::sort(v.begin(), v.end());
    return;
  }
  std::vector<size_t> first((size_t{1} << kBits) + 1, 0);
  for (uint64_t x : v) ++first[(x >> (64 - kBits)) + 1];
  for (size_t b = 1; b < first.size(); ++b) first[b] += first[b - 1];
  std::vector<size_t> at(first.begin(), first.end() - 1);
  LargeVector<uint64_t> out(v.size());
  for (uint64_t x : v) out[at[x >> (64 - kBits)]++] = x;
  for (size_t b = 0; b + 1 < first.size(); ++b) {
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(first[b]),
              out.begin() + static_cast<std::ptrdiff_t>(first[b + 1]));
  }
  v.swap(out);
}

// True when two of the values of `runs` (each sorted ascending) are equal, within a
// run or across runs: a k-way merge, O(n log k).
bool AnyEqual(const std::vector<std::span<const uint64_t>>& runs) {
  using Cursor = std::pair<uint64_t, size_t>;  // (value, run)
  std::priority_queue<Cursor, std::vector<Cursor>, std::greater<>> heap;
  std::vector<size_t> at(runs.size(), 0);
  for (size_t k = 0; k < runs.size(); ++k) {
    if (!runs[k].empty()) heap.emplace(runs[k][0], k);
  }
  bool any = false;
  uint64_t last = 0;
  while (!heap.empty()) {
    const auto [v, k] = heap.top();
    heap.pop();
    if (any && v == last) return true;
    any = true;
    last = v;
    // Stay on run k while it holds the smallest values (the common case for k = 1).
    const std::span<const uint64_t> run = runs[k];
    size_t i = ++at[k];
    const uint64_t bound = heap.empty() ? UINT64_MAX : heap.top().first;
    for (; i < run.size() && run[i] < bound; ++i) {
      if (run[i] == last) return true;
      last = run[i];
    }
    at[k] = i;
    if (i < run.size()) heap.emplace(run[i], k);
  }
  return false;
}

// Parses the ranges [cuts[k], cuts[k + 1]) of an open span JSONL file on a thread
// each and merges them in file order (see ReadSpanTable). With `duplicates_found`
// null, duplicate ids are rejected as they come. Otherwise no id is rejected: each
// range keeps its records' id hashes, sorted on its thread, and when two are equal,
// or a range stopped with an error, *duplicates_found is set and the table and
// report are left for the caller to restore (the results would not be those of a
// sequential read).
Status ReadRanges(int fd, const std::string& path, const SpanReadOptions& options,
                  InputFormat format, const std::vector<uint64_t>& cuts, uint64_t size,
                  SpanTable& table, ReadReport& report, bool* duplicates_found) {
  const bool optimistic = duplicates_found != nullptr;
  std::vector<Range> ranges(cuts.size());
  for (size_t k = 0; k < ranges.size(); ++k) {
    Range& r = ranges[k];
    r.begin = cuts[k];
    r.end = k + 1 < cuts.size() ? cuts[k + 1] : size;
    if (k == 0) {
      r.ctx = std::make_unique<RecordContext>(path, options, table, report);
    } else {
      r.ctx = std::make_unique<RecordContext>(path, options, r.own, r.own_report);
      if (!optimistic) r.ctx->TraceRows();
    }
    if (optimistic) r.ctx->CollectIds();
    r.parser = MakeParser(format, *r.ctx);
  }
  // Under strict, ranges after one that stopped are not needed.
  std::vector<std::atomic<bool>> stop(ranges.size());
  auto run = [&](size_t k) {
    Range& r = ranges[k];
    r.status = ParseRange(fd, path, r, table, k == 0, size, options.chunk_bytes, stop[k]);
    if (!r.status.ok()) {
      for (size_t j = k + 1; j < ranges.size(); ++j) stop[j] = true;
    }
    if (optimistic && r.status.ok()) SortHashes(r.ctx->ids());
  };
  {
    std::vector<std::jthread> helpers;
    for (size_t k = 1; k < ranges.size(); ++k) helpers.emplace_back(run, k);
    run(0);
  }
  if (optimistic) {
    std::vector<std::span<const uint64_t>> sorted;
    for (Range& r : ranges) {
      if (!r.status.ok()) {
        *duplicates_found = true;  // which record stops a read depends on the duplicates
        return Status::Ok();
      }
      sorted.emplace_back(r.ctx->ids());
    }
    if (AnyEqual(sorted)) {
      *duplicates_found = true;
      return Status::Ok();
    }
  }
  if (!ranges[0].status.ok()) return ranges[0].status;
  std::vector<const RecordContext*> earlier = {ranges[0].ctx.get()};
  int64_t line_offset = ranges[0].lines;
  for (size_t k = 1; k < ranges.size(); ++k) {
    Range& r = ranges[k];
    TTFT_RETURN_IF_ERROR(
        MergeRange(fd, path, r, *ranges[0].ctx, earlier, line_offset, options, table, report));
    line_offset += r.lines;
    earlier.push_back(r.ctx.get());
    r.own = SpanTable();
  }
  return ranges[0].parser->Finish();
}

}  // namespace

Status ReadSpanTable(const std::string& path, const SpanReadOptions& options, SpanTable& table,
                     ReadReport& report) {
  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::error_code ec;
  if (threads < 2 || path == "-" || !std::filesystem::is_regular_file(path, ec)) {
    return ReadSpans(path, options, table, report);
  }
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec || size < std::max<uint64_t>(options.parallel_min_bytes, 2)) {
    return ReadSpans(path, options, table, report);
  }
  FileFd file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) return ReadSpans(path, options, table, report);  // it words the error
  // Only plain span JSONL: the format must be certain from the first bytes (DetectFormat
  // decides a JSON object from its first 4 KB) and the file not gzip.
  std::string head(static_cast<size_t>(std::min<uint64_t>(size, 1 << 16)), '\0');
  {
    auto n = PRead(file.fd, path, head.data(), head.size(), 0);
    if (!n.ok()) return ReadSpans(path, options, table, report);
    head.resize(*n);
  }
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
      static_cast<unsigned char>(head[1]) == 0x8b) {
    return ReadSpans(path, options, table, report);
  }
  size_t lead = head.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  while (lead < head.size() && std::isspace(static_cast<unsigned char>(head[lead]))) ++lead;
  const InputFormat format =
      options.format != InputFormat::kAuto                                     ? options.format
      : lead + 4096 <= head.size() && (head[lead] == '{' || head[lead] == '[') ? DetectFormat(head)
                                                                               : InputFormat::kAuto;
  if (format != InputFormat::kSpanJsonl) return ReadSpans(path, options, table, report);

  // Split points: just after the first newline at or past size * k / threads.
  std::vector<uint64_t> cuts = {0};
  for (int k = 1; k < threads; ++k) {
    uint64_t at = std::max(cuts.back(), size * static_cast<uint64_t>(k) / threads);
    char block[4096];
    uint64_t cut = size;
    while (at < size) {
      auto n = PRead(file.fd, path, block, sizeof block, at);
      if (!n.ok() || *n == 0) break;
      const void* nl = std::memchr(block, '\n', *n);
      if (nl != nullptr) {
        cut = at + static_cast<uint64_t>(static_cast<const char*>(nl) - block) + 1;
        break;
      }
      at += *n;
    }
    if (cut >= size || cut <= cuts.back()) break;
    cuts.push_back(cut);
  }
  if (cuts.size() < 2) return ReadSpans(path, options, table, report);
  if (!options.detect_duplicates) {
    return ReadRanges(file.fd, path, options, format, cuts, size, table, report, nullptr);
  }
  // Optimistic first: duplicate ids are rare, and checking them afterwards (sorting
  // the ranges' id hashes) costs a fraction of rejecting them as they come (a random
  // probe into a set of millions per record). If there are any, the read is redone
  // the exact way, from the same starting table and report.
  const size_t base_rows = table.size();
  const ReadReport base_report = report;
  bool redo = false;
  Status st = ReadRanges(file.fd, path, options, format, cuts, size, table, report, &redo);
  if (!redo) return st;
  table.Truncate(base_rows);
  report = base_report;
  return ReadRanges(file.fd, path, options, format, cuts, size, table, report, nullptr);
}

Result<std::string> ReadInputHead(const std::string& path, size_t max_bytes) {
  TTFT_ASSIGN_OR_RETURN(auto in, internal::InputStream::Open(path));
  std::string out(max_bytes, '\0');
  size_t filled = 0;
  while (filled < max_bytes) {
    TTFT_ASSIGN_OR_RETURN(size_t n, in->Read(out.data() + filled, max_bytes - filled));
    if (n == 0) break;
    filled += n;
  }
  out.resize(filled);
  return out;
}

Result<std::string> ReadInputFile(const std::string& path) {
  TTFT_ASSIGN_OR_RETURN(auto in, internal::InputStream::Open(path));
  std::string out;
  size_t filled = 0;
  for (;;) {
    out.resize(std::max<size_t>(filled * 2, filled + (1 << 16)));
    TTFT_ASSIGN_OR_RETURN(size_t n, in->Read(out.data() + filled, out.size() - filled));
    if (n == 0) break;
    filled += n;
  }
  out.resize(filled);
  return out;
}

}  // namespace ttft
