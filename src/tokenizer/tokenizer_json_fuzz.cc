// libFuzzer target for the tokenizer (ttft/tokenizer.h): any bytes, read as a
// tokenizer.json, load or give an error with a message, never crash; and the same bytes,
// read as text, encode or give an error (invalid UTF-8 only) with three tokenizers: the
// input itself when it loads, a fixed byte-level tokenizer, and the approximation.
// Checked invariants: a successful encoding decodes back to the text and its offsets
// are non-decreasing and inside the text. Built by scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ttft/tokenizer.h"

namespace {

// Every byte as a token (ids 0-255 in byte order), a few merges, two special tokens.
std::string FixedJson() {
  std::string vocab, out;
  auto esc = [](char32_t c) {
    std::string s;
    if (c < 0x80) {
      if (c == '"' || c == '\\') s.push_back('\\');
      s.push_back(static_cast<char>(c));
    } else {
      s.push_back(static_cast<char>(0xC0 | (c >> 6)));
      s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
    return s;
  };
  for (int b = 0; b < 256; ++b) {
    vocab += (b ? "," : "") + ("\"" + esc(ttft::ByteToUnicode(static_cast<uint8_t>(b))) + "\":") +
             std::to_string(b);
  }
  vocab += R"(,"th":256,"the":257,"Ġthe":258,"ĠĠ":259,"in":260,"ing":261)";
  return R"({"added_tokens":[{"id":300,"content":"<|eot_id|>","special":true},)"
         R"({"id":301,"content":"<s>","special":false,"lstrip":true,"rstrip":true}],)"
         R"("normalizer":null,"pre_tokenizer":{"type":"Sequence","pretokenizers":[)"
         R"({"type":"Split","pattern":{"Regex":")" +
         [] {
           std::string p;
           for (char c : ttft::kLlama3SplitPattern) {
             if (c == '\\' || c == '"') p.push_back('\\');
             p.push_back(c);
           }
           return p;
         }() +
         R"("},"behavior":"Isolated","invert":false},{"type":"ByteLevel","use_regex":false}]},)"
         R"("model":{"type":"BPE","ignore_merges":true,"vocab":{)" +
         vocab + R"(},"merges":["t h","th e",["Ġ","the"],"Ġ Ġ","i n","in g"]}})";
}

void Check(const ttft::Tokenizer& tok, std::string_view text, bool must_succeed) {
  auto enc = tok.EncodeWithOffsets(text);
  if (!enc.ok()) {
    if (enc.status().message().empty() || must_succeed) __builtin_trap();
    return;
  }
  if (enc->ids.size() != enc->byte_offsets.size()) __builtin_trap();
  for (size_t i = 0; i < enc->byte_offsets.size(); ++i) {
    if (enc->byte_offsets[i] > text.size()) __builtin_trap();
    if (i > 0 && enc->byte_offsets[i] < enc->byte_offsets[i - 1]) __builtin_trap();
  }
  auto n = tok.Count(text);
  if (!n.ok() || *n != static_cast<int64_t>(enc->ids.size())) __builtin_trap();
  // "<s>" absorbs white space around it (lstrip/rstrip): no round trip then.
  if (!tok.approximate() && must_succeed && text.find("<s>") == std::string_view::npos) {
    auto back = tok.Decode(enc->ids);
    if (!back.ok() || *back != text) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ttft::Tokenizer fixed = [] {
    auto t = ttft::Tokenizer::FromJson(FixedJson(), "fixed.json");
    if (!t.ok()) __builtin_trap();
    return *t;
  }();
  static const ttft::Tokenizer approx = ttft::Tokenizer::Approximate();
  std::string_view text(reinterpret_cast<const char*>(data), size);

  auto loaded = ttft::Tokenizer::FromJson(text, "fuzz.json");
  if (!loaded.ok()) {
    if (loaded.status().message().empty()) __builtin_trap();
  } else {
    Check(*loaded, text, false);
    Check(*loaded, "Hello world <|eot_id|> 123 \n\n", false);
  }
  // Valid UTF-8 must encode with the fixed tokenizer (every byte has a token).
  const bool utf8 = approx.Count(text).ok();
  Check(fixed, text, utf8);
  Check(approx, text, utf8);
  return 0;
}
