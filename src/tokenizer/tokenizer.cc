// Byte-level BPE from a Hugging Face tokenizer.json (ttft/tokenizer.h).
//
// Sources of the semantics: huggingface/tokenizers (tokenizers/src): tokenizer/mod.rs
// (`encode`: added tokens, then pre-tokenizer, then model), tokenizer/added_vocabulary.rs
// (leftmost-longest matching of added tokens, lstrip/rstrip), pre_tokenizers/split.rs and
// byte_level.rs, models/bpe/model.rs (`tokenize_with_cache`, ignore_merges) and
// models/bpe/word.rs (`merge_all`: a heap of (rank, position), stale entries skipped).
#include "ttft/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <absl/container/flat_hash_map.h>
#include <absl/strings/string_view.h>
#include <fmt/format.h>
#include <pcre2.h>
#include <simdjson.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ttft {

namespace {

// ---------------------------------------------------------------------------
// UTF-8 and GPT-2's byte-to-unicode mapping
// ---------------------------------------------------------------------------

constexpr std::array<char32_t, 256> MakeByteToUnicode() {
  std::array<char32_t, 256> m{};
  char32_t n = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    m[b] = printable ? static_cast<char32_t>(b) : 0x100 + n++;
  }
  return m;
}
constexpr std::array<char32_t, 256> kByteToUnicode = MakeByteToUnicode();
// Inverse: code points below 0x144 (the largest image is U+0143) to bytes, -1 if none.
constexpr std::array<int16_t, 0x144> MakeUnicodeToByte() {
  std::array<int16_t, 0x144> m{};
  for (auto& v : m) v = -1;
  for (int b = 0; b < 256; ++b) m[kByteToUnicode[b]] = static_cast<int16_t>(b);
  return m;
}
constexpr std::array<int16_t, 0x144> kUnicodeToByte = MakeUnicodeToByte();

// Decodes the code point at s[i] of valid UTF-8; advances i.
char32_t NextCodePoint(std::string_view s, size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    ++i;
    return c;
  }
  int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  char32_t cp = c & (0x3F >> (len - 1));
  for (int k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
  i += len;
  return cp;
}

// The byte offset of the first invalid UTF-8 sequence (s is known to be invalid).
size_t FirstInvalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return i;
    if (len == 1) {
      ++i;
      continue;
    }
    char32_t cp = c & (0x3F >> (len - 1));
    for (int k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    const char32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return s.size();
}

Status CheckUtf8(std::string_view text) {
  if (simdjson::validate_utf8(text.data(), text.size())) return Status::Ok();
  return Status::Invalid(fmt::format("byte {}: invalid UTF-8 (the tokenizer needs UTF-8 text)",
                                     FirstInvalidUtf8(text)));
}

// Unicode White_Space (Rust's char::is_whitespace, used by lstrip/rstrip).
bool IsWhiteSpace(char32_t c) {
  return (c >= 9 && c <= 13) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// A byte-level vocab string to the bytes it stands for; nullopt if a character is
// outside the mapping (such a token is never produced by the byte-level BPE).
std::optional<std::string> ByteLevelToBytes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const char32_t cp = NextCodePoint(s, i);
    if (cp >= kUnicodeToByte.size() || kUnicodeToByte[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(kUnicodeToByte[cp]));
  }
  return out;
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, 80)) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else {
      out.push_back(c);
    }
  }
  if (s.size() > 80) out += "...";
  return out + "\"";
}

// ---------------------------------------------------------------------------
// PCRE2
// ---------------------------------------------------------------------------

struct CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};
struct MatchContextDeleter {
  void operator()(pcre2_match_context* m) const { pcre2_match_context_free(m); }
};
struct JitStackDeleter {
  void operator()(pcre2_jit_stack* s) const { pcre2_jit_stack_free(s); }
};

// A compiled split pattern (UTF, UCP; JIT when the platform has it). Immutable, so it is
// shared by threads; match data and JIT stacks are per call.
class Regex {
 public:
  static Result<std::shared_ptr<const Regex>> Compile(std::string_view pattern, bool literal,
                                                      std::string_view field) {
    int err = 0;
    PCRE2_SIZE err_off = 0;
    // PCRE2_LITERAL admits UTF but not UCP (pcre2_compile(3)).
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     opts, &err, &err_off, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(err, buf, sizeof buf);
      return Status::Invalid(fmt::format("{}: pattern does not compile at offset {}: {}", field,
                                         err_off, reinterpret_cast<const char*>(buf)));
    }
    auto re = std::make_shared<Regex>();
    re->code_.reset(code);
    re->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    return std::shared_ptr<const Regex>(std::move(re));
  }

  pcre2_code* code() const { return code_.get(); }
  bool jit() const { return jit_; }

 private:
  std::unique_ptr<pcre2_code, CodeDeleter> code_;
  bool jit_ = false;
};

// Per-call matching state for one Regex.
class Matcher {
 public:
  explicit Matcher(const Regex& re)
      : re_(re), md_(pcre2_match_data_create_from_pattern(re.code(), nullptr)) {}

  // Finds the first match in subject[from, size) (lookaround sees the whole subject).
  // Returns false when there is none; *begin/*end are the match.
  Result<bool> Find(std::string_view subject, size_t from, size_t* begin, size_t* end) {
    if (md_ == nullptr) return Status::Internal("pcre2: out of memory");
    const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
    for (;;) {
      const int rc = re_.jit() ? pcre2_jit_match(re_.code(), s, subject.size(), from,
                                                 PCRE2_NO_UTF_CHECK, md_.get(), ctx_.get())
                               : pcre2_match(re_.code(), s, subject.size(), from,
                                             PCRE2_NO_UTF_CHECK, md_.get(), ctx_.get());
      if (rc == PCRE2_ERROR_NOMATCH) return false;
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT && stack_ == nullptr) {
        // A very long pre-token: retry once with a large JIT stack (grown on demand).
        stack_.reset(pcre2_jit_stack_create(64 << 10, 256 << 20, nullptr));
        ctx_.reset(pcre2_match_context_create(nullptr));
        if (stack_ == nullptr || ctx_ == nullptr) return Status::Internal("pcre2: out of memory");
        pcre2_jit_stack_assign(ctx_.get(), nullptr, stack_.get());
        continue;
      }
      if (rc < 0) {
        PCRE2_UCHAR buf[256];
        pcre2_get_error_message(rc, buf, sizeof buf);
        return Status::Invalid(fmt::format("split pattern: match failed at byte {}: {}", from,
                                           reinterpret_cast<const char*>(buf)));
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md_.get());
      *begin = ov[0];
      *end = ov[1];
      return true;
    }
  }

 private:
  const Regex& re_;
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> md_;
  std::unique_ptr<pcre2_match_context, MatchContextDeleter> ctx_;
  std::unique_ptr<pcre2_jit_stack, JitStackDeleter> stack_;
};

// ---------------------------------------------------------------------------
// JSON helpers (simdjson DOM)
// ---------------------------------------------------------------------------

namespace dom = simdjson::dom;

std::string_view TypeName(dom::element_type t) {
  switch (t) {
    case dom::element_type::ARRAY: return "an array";
    case dom::element_type::OBJECT: return "an object";
    case dom::element_type::INT64:
    case dom::element_type::UINT64:
    case dom::element_type::DOUBLE: return "a number";
    case dom::element_type::STRING: return "a string";
    case dom::element_type::BOOL: return "a boolean";
    case dom::element_type::NULL_VALUE: return "null";
  }
  return "?";
}

Status WrongType(std::string_view field, std::string_view want, dom::element e) {
  return Status::Invalid(fmt::format("{}: must be {}, got {}", field, want, TypeName(e.type())));
}

// An optional member: nullopt when absent.
std::optional<dom::element> Member(dom::object o, std::string_view key) {
  dom::element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS) return std::nullopt;
  return e;
}

Result<bool> OptBool(dom::object o, std::string_view key, std::string_view field, bool dflt) {
  auto e = Member(o, key);
  if (!e || e->is_null()) return dflt;
  bool b = false;
  if (e->get(b) != simdjson::SUCCESS) return WrongType(field, "true or false", *e);
  return b;
}

// An optional string member; nullopt when absent or null.
Result<std::optional<std::string_view>> OptString(dom::object o, std::string_view key,
                                                  std::string_view field) {
  auto e = Member(o, key);
  if (!e || e->is_null()) return std::optional<std::string_view>();
  std::string_view s;
  if (e->get(s) != simdjson::SUCCESS) return WrongType(field, "a string", *e);
  return std::optional<std::string_view>(s);
}

Result<int32_t> TokenIdValue(dom::element e, std::string_view field) {
  int64_t v = 0;
  if (e.get(v) != simdjson::SUCCESS) return WrongType(field, "an integer id", e);
  if (v < 0 || v > INT32_MAX - 1) {
    return Status::Invalid(fmt::format("{}: id must be in [0, 2^31-2], got {}", field, v));
  }
  return static_cast<int32_t>(v);
}

}  // namespace

char32_t ByteToUnicode(uint8_t b) { return kByteToUnicode[b]; }

namespace {
// Debian's Abseil has its own string_view type: heterogeneous lookups go through it.
absl::string_view AV(std::string_view s) { return {s.data(), s.size()}; }
}  // namespace

// ---------------------------------------------------------------------------
// The tables
// ---------------------------------------------------------------------------

struct Tokenizer::Impl {
  bool approximate = false;

  // One pre-tokenizer step, applied in order to every piece.
  struct SplitStep {
    std::shared_ptr<const Regex> re;
    bool remove_matches = false;  // behavior "Removed" (else "Isolated")
    bool invert = false;
  };
  std::vector<SplitStep> steps;
  bool add_prefix_space = false;  // ByteLevel's, applied to each stretch before splitting

  // BPE, on raw bytes.
  absl::flat_hash_map<std::string, int32_t> bytes_to_id;     // byte-level vocab entries
  absl::flat_hash_map<std::string, int32_t> unmapped_vocab;  // entries outside the mapping
  std::array<int32_t, 256> byte_id{};                        // -1: the byte has no token
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  absl::flat_hash_map<uint64_t, Merge> merges;  // (left id << 32 | right id) -> merge
  bool ignore_merges = false;
  int32_t unk_id = -1;
  bool fuse_unk = false;

  // Added tokens: a byte trie per matching pass (non-normalized first, then normalized;
  // with no normalizer the second pass only sees what the first left).
  struct AddedToken {
    std::string content;
    int32_t id;
    bool lstrip, rstrip;
  };
  std::vector<AddedToken> added;
  struct TrieNode {
    int32_t token = -1;  // index into `added`
    std::vector<std::pair<uint8_t, int32_t>> kids;
  };
  std::array<std::vector<TrieNode>, 2> tries;
  std::array<std::array<bool, 256>, 2> first_byte{};

  absl::flat_hash_map<int32_t, std::string> id_to_bytes;  // for Decode
  int32_t vocab_size = 0;

  void AddToTrie(int pass, int32_t index) {
    auto& trie = tries[pass];
    if (trie.empty()) trie.emplace_back();
    int32_t node = 0;
    for (char ch : added[index].content) {
      const auto c = static_cast<uint8_t>(ch);
      int32_t next = -1;
      for (auto& [k, v] : trie[node].kids) {
        if (k == c) next = v;
      }
      if (next < 0) {
        next = static_cast<int32_t>(trie.size());
        trie[node].kids.emplace_back(c, next);
        trie.emplace_back();
      }
      node = next;
    }
    if (trie[node].token < 0) trie[node].token = index;  // first definition wins
    first_byte[pass][static_cast<uint8_t>(added[index].content[0])] = true;
  }

  // Longest added token of `pass` starting at text[i]; -1 if none. Sets *len.
  int32_t LongestAt(int pass, std::string_view text, size_t i, size_t* len) const {
    const auto& trie = tries[pass];
    int32_t node = 0, best = -1;
    for (size_t j = i; j < text.size(); ++j) {
      const auto c = static_cast<uint8_t>(text[j]);
      int32_t next = -1;
      for (const auto& [k, v] : trie[node].kids) {
        if (k == c) {
          next = v;
          break;
        }
      }
      if (next < 0) break;
      node = next;
      if (trie[node].token >= 0) {
        best = trie[node].token;
        *len = j + 1 - i;
      }
    }
    return best;
  }
};

namespace {

using Impl = Tokenizer::Impl;

// Reusable buffers of one Encode call.
struct Scratch {
  struct Sym {
    int32_t id;
    uint32_t start, len;
    int32_t prev, next;
  };
  struct Cand {
    int32_t rank, pos, new_id;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<Sym> syms;
  std::vector<Cand> heap;
  std::vector<std::pair<uint32_t, uint32_t>> pieces, next_pieces;
  std::vector<std::unique_ptr<Matcher>> matchers;
  std::string prefixed;
};

struct Sink {
  std::vector<int32_t>* ids;
  std::vector<uint32_t>* offsets;  // may be null
  int64_t count = 0;
  void Emit(int32_t id, size_t offset) {
    ++count;
    if (ids != nullptr) ids->push_back(id);
    if (offsets != nullptr) offsets->push_back(static_cast<uint32_t>(offset));
  }
};

// BPE of one pre-token (raw bytes); `base` is its offset in the input text (offsets in
// messages are base + msg_shift).
Status Bpe(const Impl& t, std::string_view word, size_t base, Scratch& s, Sink& out,
           int64_t msg_shift = 0) {
  if (word.empty()) return Status::Ok();
  if (t.ignore_merges || word.size() == 1) {
    auto it = t.bytes_to_id.find(AV(word));
    if (it != t.bytes_to_id.end()) {
      out.Emit(it->second, base);
      return Status::Ok();
    }
  }
  auto& syms = s.syms;
  syms.clear();
  for (size_t i = 0; i < word.size(); ++i) {
    const auto b = static_cast<uint8_t>(word[i]);
    int32_t id = t.byte_id[b];
    if (id < 0) {
      if (t.unk_id < 0) {
        return Status::Invalid(fmt::format(
            "byte 0x{:02X} at offset {} has no token in model.vocab and model.unk_token is not "
            "set",
            b, static_cast<int64_t>(base + i) + msg_shift));
      }
      id = t.unk_id;
      if (t.fuse_unk && !syms.empty() && syms.back().id == t.unk_id) {
        ++syms.back().len;
        continue;
      }
    }
    const auto n = static_cast<int32_t>(syms.size());
    syms.push_back({id, static_cast<uint32_t>(i), 1, n - 1, -1});
    if (n > 0) syms[n - 1].next = n;
  }
  auto& heap = s.heap;
  heap.clear();
  auto push_pair = [&](int32_t pos) {
    const int32_t next = syms[pos].next;
    if (next < 0) return;
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(syms[pos].id)) << 32) |
                         static_cast<uint32_t>(syms[next].id);
    auto it = t.merges.find(key);
    if (it == t.merges.end()) return;
    heap.push_back({it->second.rank, pos, it->second.new_id});
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) push_pair(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const Scratch::Cand top = heap.back();
    heap.pop_back();
    Scratch::Sym& left = syms[top.pos];
    if (left.len == 0 || left.next < 0) continue;
    Scratch::Sym& right = syms[left.next];
    // A stale entry: the pair at this position changed since it was queued.
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(left.id)) << 32) |
                         static_cast<uint32_t>(right.id);
    auto it = t.merges.find(key);
    if (it == t.merges.end() || it->second.new_id != top.new_id) continue;
    left.id = top.new_id;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (left.next >= 0) syms[left.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (int32_t i = 0; i >= 0; i = syms[i].next) out.Emit(syms[i].id, base + syms[i].start);
  return Status::Ok();
}

// The approximation's pseudo-tokens for one pre-token (see kApproxAsciiWordBytes).
void ApproxPieces(std::string_view word, size_t base, Sink& out) {
  const size_t n = word.size();
  if (n == 0) return;
  const bool ascii =
      std::all_of(word.begin(), word.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; });
  const size_t k = ascii ? (n <= kApproxAsciiWordBytes
                                ? 1
                                : (n + kApproxAsciiBytesPerToken - 1) / kApproxAsciiBytesPerToken)
                         : std::max<size_t>(1, (2 * n + kApproxNonAsciiBytesPerTokenX2 - 1) /
                                                   kApproxNonAsciiBytesPerTokenX2);
  size_t last = 0;
  out.Emit(-1, base);
  for (size_t j = 1; j < k; ++j) {
    size_t cut = j * n / k;
    while (cut < n && (static_cast<uint8_t>(word[cut]) & 0xC0) == 0x80) ++cut;
    if (cut <= last || cut >= n) continue;
    out.Emit(-1, base + cut);
    last = cut;
  }
}

// Pre-tokenizes and encodes one stretch of text between added tokens.
Status EncodeStretch(const Impl& t, std::string_view stretch, size_t base, Scratch& s, Sink& out) {
  if (stretch.empty()) return Status::Ok();
  std::string_view work = stretch;
  bool prefixed = false;
  if (t.add_prefix_space && stretch.front() != ' ') {
    s.prefixed.assign(1, ' ');
    s.prefixed.append(stretch);
    work = s.prefixed;
    prefixed = true;
  }
  // Offsets in `work` to offsets in the input: the added space maps to the stretch start.
  auto origin = [&](size_t off) { return base + (prefixed ? (off == 0 ? 0 : off - 1) : off); };

  s.pieces.assign(1, {0, static_cast<uint32_t>(work.size())});
  for (size_t k = 0; k < t.steps.size(); ++k) {
    const Impl::SplitStep& step = t.steps[k];
    Matcher& m = *s.matchers[k];
    s.next_pieces.clear();
    auto keep = [&](size_t b, size_t e, bool is_match) {
      if (b == e) return;
      const bool removed = step.remove_matches && (is_match != step.invert);
      if (!removed) s.next_pieces.emplace_back(b, e);
    };
    for (auto [pb, pe] : s.pieces) {
      const std::string_view subject = work.substr(pb, pe - pb);
      size_t from = 0;
      while (from < subject.size()) {
        size_t mb = 0, me = 0;
        TTFT_ASSIGN_OR_RETURN(bool found, m.Find(subject, from, &mb, &me));
        if (!found) break;
        if (me == mb) {  // an empty match splits nothing; step over one character
          size_t i = mb;
          if (i >= subject.size()) break;
          NextCodePoint(subject, i);
          if (mb > from) keep(pb + from, pb + mb, false);
          keep(pb + mb, pb + i, false);
          from = i;
          continue;
        }
        keep(pb + from, pb + mb, false);
        keep(pb + mb, pb + me, true);
        from = me;
      }
      keep(pb + from, pb + subject.size(), false);
    }
    std::swap(s.pieces, s.next_pieces);
  }
  for (auto [pb, pe] : s.pieces) {
    const std::string_view word = work.substr(pb, pe - pb);
    if (t.approximate) {
      ApproxPieces(word, origin(pb), out);
      continue;
    }
    if (!prefixed) {
      TTFT_RETURN_IF_ERROR(Bpe(t, word, base + pb, s, out));
      continue;
    }
    // With the added space, token offsets need the shift; run into a side buffer.
    std::vector<int32_t> ids;
    std::vector<uint32_t> offs;
    Sink side{&ids, &offs};
    TTFT_RETURN_IF_ERROR(Bpe(t, word, pb, s, side, static_cast<int64_t>(base) - 1));
    for (size_t i = 0; i < ids.size(); ++i) out.Emit(ids[i], origin(offs[i]));
  }
  return Status::Ok();
}

// Splits `text[b, e)` on the added tokens of `pass` (and then of the next pass), encoding
// the stretches between them.
Status EncodeAdded(const Impl& t, int pass, std::string_view text, size_t b, size_t e, Scratch& s,
                   Sink& out) {
  if (pass == 2 || t.tries[pass].empty()) {
    if (pass < 1) return EncodeAdded(t, pass + 1, text, b, e, s, out);
    return EncodeStretch(t, text.substr(b, e - b), b, s, out);
  }
  size_t from = b;  // start of the pending stretch
  size_t i = b;
  while (i < e) {
    if (!t.first_byte[pass][static_cast<uint8_t>(text[i])]) {
      ++i;
      continue;
    }
    size_t len = 0;
    const int32_t idx = t.LongestAt(pass, text.substr(0, e), i, &len);
    if (idx < 0) {
      ++i;
      continue;
    }
    const Impl::AddedToken& tok = t.added[idx];
    size_t mb = i, me = i + len;
    if (tok.lstrip) {  // absorb the white space before it, back to the previous match
      while (mb > from) {
        size_t k = mb - 1;
        while (k > from && (static_cast<uint8_t>(text[k]) & 0xC0) == 0x80) --k;
        size_t kk = k;
        if (!IsWhiteSpace(NextCodePoint(text, kk))) break;
        mb = k;
      }
    }
    if (tok.rstrip) {
      while (me < e) {
        size_t k = me;
        if (!IsWhiteSpace(NextCodePoint(text, k))) break;
        me = k;
      }
    }
    if (pass == 0) {
      TTFT_RETURN_IF_ERROR(EncodeAdded(t, 1, text, from, mb, s, out));
    } else {
      TTFT_RETURN_IF_ERROR(EncodeStretch(t, text.substr(from, mb - from), from, s, out));
    }
    out.Emit(tok.id, mb);
    from = i = me;
  }
  if (pass == 0) return EncodeAdded(t, 1, text, from, e, s, out);
  return EncodeStretch(t, text.substr(from, e - from), from, s, out);
}

Status EncodeAll(const Impl& t, std::string_view text, Sink& out) {
  if (text.size() >= (uint64_t{1} << 32)) {
    return Status::Invalid(fmt::format("text of {} bytes: at most 4 GiB - 1", text.size()));
  }
  TTFT_RETURN_IF_ERROR(CheckUtf8(text));
  Scratch s;
  for (const auto& step : t.steps) s.matchers.push_back(std::make_unique<Matcher>(*step.re));
  return EncodeAdded(t, 0, text, 0, text.size(), s, out);
}

// ---------------------------------------------------------------------------
// Reading tokenizer.json
// ---------------------------------------------------------------------------

// One pre-tokenizer (not a Sequence) into `t`. `index` >= 0 inside a Sequence.
Status ReadPreTokenizer(dom::object pt, const std::string& field, bool in_sequence,
                        bool* byte_level, Impl& t) {
  std::string_view type;
  auto te = Member(pt, "type");
  if (!te || te->get(type) != simdjson::SUCCESS) {
    return Status::Invalid(fmt::format("{}.type: missing or not a string", field));
  }
  if (type == "ByteLevel") {
    if (*byte_level) return Status::Invalid(fmt::format("{}: a second ByteLevel", field));
    *byte_level = true;
    TTFT_ASSIGN_OR_RETURN(bool prefix,
                          OptBool(pt, "add_prefix_space", field + ".add_prefix_space", false));
    TTFT_ASSIGN_OR_RETURN(bool use_regex, OptBool(pt, "use_regex", field + ".use_regex", true));
    if (prefix) {
      if (!t.steps.empty()) {
        return Status::Invalid(fmt::format(
            "{}.add_prefix_space: true after a Split is not supported (a space per piece)", field));
      }
      t.add_prefix_space = true;
    }
    if (use_regex) {
      TTFT_ASSIGN_OR_RETURN(auto re, Regex::Compile(kGpt2SplitPattern, false, field));
      t.steps.push_back({std::move(re), false, false});
    }
    return Status::Ok();
  }
  if (type == "Split") {
    if (*byte_level) {
      return Status::Invalid(fmt::format(
          "{}: a Split after ByteLevel is not supported (it would split mapped text)", field));
    }
    auto pe = Member(pt, "pattern");
    dom::object po;
    if (!pe || pe->get(po) != simdjson::SUCCESS) {
      return Status::Invalid(
          fmt::format("{}.pattern: must be {{\"Regex\": ...}} or {{\"String\": ...}}", field));
    }
    std::string_view pattern;
    bool literal = false;
    if (auto r = Member(po, "Regex")) {
      if (r->get(pattern) != simdjson::SUCCESS)
        return WrongType(field + ".pattern.Regex", "a string", *r);
    } else if (auto s = Member(po, "String")) {
      if (s->get(pattern) != simdjson::SUCCESS)
        return WrongType(field + ".pattern.String", "a string", *s);
      literal = true;
    } else {
      return Status::Invalid(
          fmt::format("{}.pattern: needs a \"Regex\" or \"String\" member", field));
    }
    if (!simdjson::validate_utf8(pattern)) {
      return Status::Invalid(fmt::format("{}.pattern: not UTF-8", field));
    }
    std::string_view behavior = "Isolated";
    TTFT_ASSIGN_OR_RETURN(auto b, OptString(pt, "behavior", field + ".behavior"));
    if (b) behavior = *b;
    if (behavior != "Isolated" && behavior != "Removed") {
      return Status::Invalid(fmt::format(
          "{}.behavior: \"{}\" is not supported (Isolated or Removed)", field, behavior));
    }
    TTFT_ASSIGN_OR_RETURN(bool invert, OptBool(pt, "invert", field + ".invert", false));
    TTFT_ASSIGN_OR_RETURN(auto re, Regex::Compile(pattern, literal, field + ".pattern"));
    t.steps.push_back({std::move(re), behavior == "Removed", invert});
    return Status::Ok();
  }
  if (type == "Sequence" && !in_sequence) {
    auto ps = Member(pt, "pretokenizers");
    dom::array arr;
    if (!ps || ps->get(arr) != simdjson::SUCCESS) {
      return Status::Invalid(fmt::format("{}.pretokenizers: must be an array", field));
    }
    size_t i = 0;
    for (dom::element e : arr) {
      const std::string f = fmt::format("{}.pretokenizers[{}]", field, i++);
      dom::object o;
      if (e.get(o) != simdjson::SUCCESS) return WrongType(f, "an object", e);
      TTFT_RETURN_IF_ERROR(ReadPreTokenizer(o, f, true, byte_level, t));
    }
    return Status::Ok();
  }
  return Status::Invalid(fmt::format(
      "{}.type: \"{}\" is not supported (ByteLevel, or a Sequence of Split and ByteLevel)", field,
      type));
}

Status ReadModel(dom::object model, Impl& t) {
  TTFT_ASSIGN_OR_RETURN(auto type, OptString(model, "type", "model.type"));
  if (type && *type != "BPE") {
    return Status::Invalid(fmt::format("model.type: \"{}\" is not supported (BPE only)", *type));
  }
  if (auto d = Member(model, "dropout"); d && !d->is_null()) {
    double p = 0;
    if (d->get(p) != simdjson::SUCCESS) return WrongType("model.dropout", "null or a number", *d);
    if (p != 0) {
      return Status::Invalid(
          fmt::format("model.dropout: {} makes encoding random; not supported (null or 0)", p));
    }
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const std::string f = std::string("model.") + key;
    TTFT_ASSIGN_OR_RETURN(auto v, OptString(model, key, f));
    if (v && !v->empty()) {
      return Status::Invalid(
          fmt::format("{}: {} is not supported (byte-level BPE has none)", f, Quote(*v)));
    }
  }
  TTFT_ASSIGN_OR_RETURN(t.ignore_merges,
                        OptBool(model, "ignore_merges", "model.ignore_merges", false));
  TTFT_ASSIGN_OR_RETURN(t.fuse_unk, OptBool(model, "fuse_unk", "model.fuse_unk", false));
  TTFT_ASSIGN_OR_RETURN(bool byte_fallback,
                        OptBool(model, "byte_fallback", "model.byte_fallback", false));

  // vocab
  auto ve = Member(model, "vocab");
  dom::object vocab;
  if (!ve) return Status::Invalid("model.vocab: missing");
  if (ve->get(vocab) != simdjson::SUCCESS) return WrongType("model.vocab", "an object", *ve);
  absl::flat_hash_map<absl::string_view, int32_t> by_string;  // views into the parsed DOM
  by_string.reserve(vocab.size());
  for (auto [key, value] : vocab) {
    TTFT_ASSIGN_OR_RETURN(int32_t id,
                          TokenIdValue(value, fmt::format("model.vocab[{}]", Quote(key))));
    by_string.insert_or_assign(AV(key), id);
    t.vocab_size = std::max(t.vocab_size, id + 1);
    if (!simdjson::validate_utf8(key)) {
      return Status::Invalid(fmt::format("model.vocab[{}]: token is not UTF-8", Quote(key)));
    }
    if (auto bytes = ByteLevelToBytes(key)) {
      t.id_to_bytes.insert_or_assign(id, *bytes);
      t.bytes_to_id.insert_or_assign(std::move(*bytes), id);
    } else {
      t.id_to_bytes.insert_or_assign(id, std::string(key));
      t.unmapped_vocab.insert_or_assign(std::string(key), id);
    }
  }
  t.byte_id.fill(-1);
  for (int b = 0; b < 256; ++b) {
    auto it = t.bytes_to_id.find(std::string(1, static_cast<char>(b)));
    if (it != t.bytes_to_id.end()) t.byte_id[b] = it->second;
  }
  if (byte_fallback && std::count(t.byte_id.begin(), t.byte_id.end(), -1) > 0) {
    return Status::Invalid(
        "model.byte_fallback: true with bytes missing from model.vocab is not supported");
  }
  TTFT_ASSIGN_OR_RETURN(auto unk, OptString(model, "unk_token", "model.unk_token"));
  if (unk) {
    auto it = by_string.find(AV(*unk));
    if (it == by_string.end()) {
      return Status::Invalid(fmt::format("model.unk_token: {} not in model.vocab", Quote(*unk)));
    }
    t.unk_id = it->second;
  }

  // merges: "a b" or ["a", "b"]; rank = index; a later duplicate wins, as in a HashMap.
  auto me = Member(model, "merges");
  dom::array merges;
  if (!me) return Status::Invalid("model.merges: missing");
  if (me->get(merges) != simdjson::SUCCESS) return WrongType("model.merges", "an array", *me);
  t.merges.reserve(merges.size());
  int32_t rank = 0;
  std::string joined;
  for (dom::element m : merges) {
    std::string_view a, b;
    std::string_view str;
    dom::array pair;
    if (m.get(str) == simdjson::SUCCESS) {
      const size_t sp = str.find(' ');
      if (sp == std::string_view::npos || str.find(' ', sp + 1) != std::string_view::npos) {
        return Status::Invalid(fmt::format(
            "model.merges[{}]: {} must be two tokens separated by one space", rank, Quote(str)));
      }
      a = str.substr(0, sp);
      b = str.substr(sp + 1);
    } else if (m.get(pair) == simdjson::SUCCESS) {
      if (pair.size() != 2 || pair.at(0).get(a) != simdjson::SUCCESS ||
          pair.at(1).get(b) != simdjson::SUCCESS) {
        return Status::Invalid(
            fmt::format("model.merges[{}]: a pair must be two strings [\"a\", \"b\"]", rank));
      }
    } else {
      return WrongType(fmt::format("model.merges[{}]", rank), "a string \"a b\" or a pair", m);
    }
    joined.assign(a);
    joined.append(b);
    int32_t ids[3];
    const std::string_view parts[3] = {a, b, joined};
    for (int k = 0; k < 3; ++k) {
      auto it = by_string.find(AV(parts[k]));
      if (it == by_string.end()) {
        return Status::Invalid(
            fmt::format("model.merges[{}]: token {} not in model.vocab", rank, Quote(parts[k])));
      }
      ids[k] = it->second;
    }
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(ids[0])) << 32) |
                         static_cast<uint32_t>(ids[1]);
    t.merges.insert_or_assign(key, Impl::Merge{rank, ids[2]});
    ++rank;
  }
  return Status::Ok();
}

Status ReadAddedTokens(dom::element e, Impl& t) {
  if (e.is_null()) return Status::Ok();
  dom::array arr;
  if (e.get(arr) != simdjson::SUCCESS) return WrongType("added_tokens", "an array", e);
  size_t i = 0;
  std::vector<bool> normalized;
  for (dom::element a : arr) {
    const std::string f = fmt::format("added_tokens[{}]", i++);
    dom::object o;
    if (a.get(o) != simdjson::SUCCESS) return WrongType(f, "an object", a);
    auto ide = Member(o, "id");
    if (!ide) return Status::Invalid(f + ".id: missing");
    TTFT_ASSIGN_OR_RETURN(int32_t id, TokenIdValue(*ide, f + ".id"));
    TTFT_ASSIGN_OR_RETURN(auto content, OptString(o, "content", f + ".content"));
    if (!content || content->empty()) return Status::Invalid(f + ".content: missing or empty");
    if (!simdjson::validate_utf8(*content)) return Status::Invalid(f + ".content: not UTF-8");
    TTFT_ASSIGN_OR_RETURN(bool special, OptBool(o, "special", f + ".special", false));
    TTFT_ASSIGN_OR_RETURN(bool lstrip, OptBool(o, "lstrip", f + ".lstrip", false));
    TTFT_ASSIGN_OR_RETURN(bool rstrip, OptBool(o, "rstrip", f + ".rstrip", false));
    TTFT_ASSIGN_OR_RETURN(bool single_word, OptBool(o, "single_word", f + ".single_word", false));
    // Hugging Face's default: normalized = !special.
    TTFT_ASSIGN_OR_RETURN(bool norm, OptBool(o, "normalized", f + ".normalized", !special));
    if (single_word) return Status::Invalid(f + ".single_word: true is not supported");
    t.added.push_back({std::string(*content), id, lstrip, rstrip});
    normalized.push_back(norm && !special);
    t.vocab_size = std::max(t.vocab_size, id + 1);
    t.id_to_bytes.insert_or_assign(id, std::string(*content));
  }
  for (size_t k = 0; k < t.added.size(); ++k) {
    t.AddToTrie(normalized[k] ? 1 : 0, static_cast<int32_t>(k));
  }
  return Status::Ok();
}

}  // namespace

// ---------------------------------------------------------------------------
// Tokenizer
// ---------------------------------------------------------------------------

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

namespace {

// Where JSON text stops being JSON: simdjson reports no position, so on that error path
// nlohmann's SAX parser reads the text again (building nothing) for the line and column.
struct SyntaxErrorAt : nlohmann::json_sax<nlohmann::json> {
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(size_t byte, const std::string&, const nlohmann::json::exception& e) override {
    byte_ = byte;
    // "[json.exception.parse_error.101] parse error at line 4, column 5: syntax error ..."
    const std::string_view what = e.what();
    const size_t col = what.find("column ");
    const size_t colon = col == std::string_view::npos ? col : what.find(": ", col);
    why_ = colon == std::string_view::npos ? what : what.substr(colon + 2);
    return false;
  }
  size_t byte_ = 0;  // nlohmann's 1-based index of the offending byte
  std::string why_;  // nlohmann's reason, which names what it read and expected
};

Status NotJson(std::string_view json, std::string_view source, const char* why) {
  SyntaxErrorAt at;
  nlohmann::json::sax_parse(json.begin(), json.end(), &at);
  if (at.byte_ == 0) return Status::Invalid(fmt::format("{}: not valid JSON: {}", source, why));
  const size_t end = std::min(at.byte_ - 1, json.size());
  const size_t line = 1 + static_cast<size_t>(std::count(json.begin(), json.begin() + end, '\n'));
  const size_t nl = json.substr(0, end).rfind('\n');
  const size_t column = end - (nl == std::string_view::npos ? 0 : nl + 1) + 1;
  return Status::Invalid(
      fmt::format("{}:{}: not valid JSON at column {}: {}", source, line, column, at.why_));
}

}  // namespace

Result<Tokenizer> Tokenizer::FromJson(std::string_view json, std::string_view source) {
  dom::parser parser;
  dom::element root;
  simdjson::padded_string padded(json);
  if (auto err = parser.parse(padded).get(root); err != simdjson::SUCCESS) {
    return NotJson(json, source, simdjson::error_message(err));
  }
  auto run = [&]() -> Result<Tokenizer> {
    dom::object top;
    if (root.get(top) != simdjson::SUCCESS) return WrongType("top level", "an object", root);
    auto impl = std::make_shared<Impl>();
    if (auto n = Member(top, "normalizer"); n && !n->is_null()) {
      std::string_view type = "?";
      if (n->is_object() && (*n)["type"].get(type) != simdjson::SUCCESS) type = "?";
      return Status::Invalid(fmt::format("normalizer: \"{}\" is not supported (null only)", type));
    }
    auto model = Member(top, "model");
    dom::object mo;
    if (!model) return Status::Invalid("model: missing");
    if (model->get(mo) != simdjson::SUCCESS) return WrongType("model", "an object", *model);
    TTFT_RETURN_IF_ERROR(ReadModel(mo, *impl));
    auto pt = Member(top, "pre_tokenizer");
    dom::object pto;
    if (!pt || pt->is_null()) {
      return Status::Invalid("pre_tokenizer: missing (byte-level BPE needs ByteLevel)");
    }
    if (pt->get(pto) != simdjson::SUCCESS) return WrongType("pre_tokenizer", "an object", *pt);
    bool byte_level = false;
    TTFT_RETURN_IF_ERROR(ReadPreTokenizer(pto, "pre_tokenizer", false, &byte_level, *impl));
    if (!byte_level) {
      return Status::Invalid("pre_tokenizer: no ByteLevel (only byte-level BPE is supported)");
    }
    if (auto at = Member(top, "added_tokens")) TTFT_RETURN_IF_ERROR(ReadAddedTokens(*at, *impl));
    return Tokenizer(std::move(impl));
  };
  auto r = run();
  if (!r.ok()) return r.status().WithContext(source);
  return r;
}

Result<Tokenizer> Tokenizer::FromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::IoError(fmt::format("{}: read failed", path));
  return FromJson(ss.str(), path);
}

Tokenizer Tokenizer::Approximate() {
  auto impl = std::make_shared<Impl>();
  impl->approximate = true;
  auto re = Regex::Compile(kLlama3SplitPattern, false, "llama3 pattern");
  // The pattern is a constant known to compile; a failure here is a broken build.
  if (!re.ok()) std::abort();
  impl->steps.push_back({std::move(*re), false, false});
  return Tokenizer(std::move(impl));
}

bool Tokenizer::approximate() const { return impl_->approximate; }
int32_t Tokenizer::vocab_size() const { return impl_->vocab_size; }

Result<std::vector<int32_t>> Tokenizer::Encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  Sink sink{&ids, nullptr};
  TTFT_RETURN_IF_ERROR(EncodeAll(*impl_, text, sink));
  return ids;
}

Result<Encoding> Tokenizer::EncodeWithOffsets(std::string_view text) const {
  Encoding enc;
  Sink sink{&enc.ids, &enc.byte_offsets};
  TTFT_RETURN_IF_ERROR(EncodeAll(*impl_, text, sink));
  return enc;
}

Result<int64_t> Tokenizer::Count(std::string_view text) const {
  Sink sink{nullptr, nullptr};
  TTFT_RETURN_IF_ERROR(EncodeAll(*impl_, text, sink));
  return sink.count;
}

Result<std::string> Tokenizer::Decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = impl_->id_to_bytes.find(ids[i]);
    if (it == impl_->id_to_bytes.end()) {
      return Status::Invalid(fmt::format("ids[{}]: {} is not a token id", i, ids[i]));
    }
    out += it->second;
  }
  return out;
}

std::optional<int32_t> Tokenizer::TokenId(std::string_view token) const {
  for (const auto& a : impl_->added) {
    if (a.content == token) return a.id;
  }
  if (auto it = impl_->unmapped_vocab.find(AV(token)); it != impl_->unmapped_vocab.end()) {
    return it->second;
  }
  if (!simdjson::validate_utf8(token)) return std::nullopt;
  if (auto bytes = ByteLevelToBytes(token)) {
    if (auto it = impl_->bytes_to_id.find(*bytes); it != impl_->bytes_to_id.end()) {
      return it->second;
    }
  }
  return std::nullopt;
}

}  // namespace ttft
