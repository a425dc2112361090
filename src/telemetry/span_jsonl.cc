// The span JSON Lines reader (docs/spans.md): simdjson On-Demand, one pass over each
// object's fields, behind a fast path for the flat objects our writer produces.
#include <simdjson.h>

#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>

#include "telemetry/input_formats.h"
#include "telemetry/span_readers_internal.h"
#include "telemetry/span_record.h"

namespace ttft::internal {
namespace {

namespace od = simdjson::ondemand;

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

bool FastJsonDouble(std::string_view token, double& out) {
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
      return ctx_.Bad(
          line, unterminated ? "truncated record" : "malformed json",
          JsonErrorReason(simdjson::error_message(e), unterminated, std::string_view(p, len)));
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

}  // namespace

bool DetectSpanJsonl(const FormatProbe& probe) { return probe.json; }

std::unique_ptr<LineParser> MakeSpanJsonlParser(RecordContext& ctx, bool fast_path) {
  return std::make_unique<JsonlParser>(ctx, fast_path);
}

}  // namespace ttft::internal
