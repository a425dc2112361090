// Tests of the byte-level BPE tokenizer (ttft/tokenizer.h): unit tests on small
// hand-written tokenizer.json files, and a differential test of the Llama 3 ids against
// the npm package llama3-tokenizer-js under node (skipped when npm or the registry
// cannot be reached).
#include "ttft/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tokenizer/llama3_js_testing.h"

namespace ttft {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ByteToUnicode, Gpt2Mapping) {
  EXPECT_EQ(ByteToUnicode('a'), U'a');
  EXPECT_EQ(ByteToUnicode('!'), U'!');
  EXPECT_EQ(ByteToUnicode(0xA1), char32_t{0xA1});
  EXPECT_EQ(ByteToUnicode(0xFF), char32_t{0xFF});
  EXPECT_EQ(ByteToUnicode(0x00), char32_t{0x100});
  EXPECT_EQ(ByteToUnicode(' '), char32_t{0x120});   // 'Ġ'
  EXPECT_EQ(ByteToUnicode('\n'), char32_t{0x10A});  // 'Ċ'
  EXPECT_EQ(ByteToUnicode(0x7F), char32_t{0x121});
  EXPECT_EQ(ByteToUnicode(0xA0), char32_t{0x142});
  EXPECT_EQ(ByteToUnicode(0xAD), char32_t{0x143});
}

// A small byte-level vocabulary, written out by hand: single characters a-z, space
// (written 'Ġ'), newline ('Ċ'), apostrophe, digits, '<', '|', '>' and the merges below.
// Ids are given explicitly; merges as "a b" strings unless `pairs`.
std::string SmallTokenizerJson(bool pairs, bool ignore_merges,
                               const std::string& pre_tokenizer = "") {
  nlohmann::json vocab = nlohmann::json::object();
  int id = 0;
  for (char c = 'a'; c <= 'z'; ++c) vocab[std::string(1, c)] = id++;  // 0..25
  vocab["Ġ"] = id++;                                                  // 26
  vocab["Ċ"] = id++;                                                  // 27
  vocab["'"] = id++;                                                  // 28
  for (char c = '0'; c <= '9'; ++c) vocab[std::string(1, c)] = id++;  // 29..38
  vocab["<"] = id++;                                                  // 39
  vocab["|"] = id++;                                                  // 40
  vocab[">"] = id++;                                                  // 41
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"},  {"o", "r"}, {"Ġw", "or"},
      {"a", "a"}, {"b", "c"}, {"a", "b"},   {"x", "y"},    {"xy", "z"}, {"Ġ", "Ġ"},
  };
  for (const auto& [a, b] : merges) vocab[a + b] = id++;  // 42..54
  vocab["xz"] = id++;  // 55: reachable only through ignore_merges
  nlohmann::json m = nlohmann::json::array();
  for (const auto& [a, b] : merges) {
    if (pairs) {
      m.push_back({a, b});
    } else {
      m.push_back(std::string(a).append(" ").append(b));
    }
  }
  nlohmann::json j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens",
       {{{"id", 100},
         {"content", "<|eot|>"},
         {"special", true},
         {"normalized", false},
         {"lstrip", false},
         {"rstrip", false},
         {"single_word", false}},
        {{"id", 101},
         {"content", "<|eot|>!"},
         {"special", true},
         {"normalized", false},
         {"lstrip", false},
         {"rstrip", false},
         {"single_word", false}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", std::string(kLlama3SplitPattern)}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", ignore_merges},
        {"vocab", vocab},
        {"merges", m}}}};
  if (!pre_tokenizer.empty()) j["pre_tokenizer"] = nlohmann::json::parse(pre_tokenizer);
  return j.dump();
}

Tokenizer Small(bool pairs = false, bool ignore_merges = false) {
  auto t = Tokenizer::FromJson(SmallTokenizerJson(pairs, ignore_merges), "small.json");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(*t);
}

std::vector<int32_t> Ids(const Tokenizer& t, std::string_view text) {
  auto r = t.Encode(text);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<int32_t>{};
}

TEST(Tokenizer, MergesByRank) {
  Tokenizer t = Small();
  EXPECT_FALSE(t.approximate());
  EXPECT_EQ(t.vocab_size(), 102);
  // "hello" -> he, ll, hell, hello; " world" -> Ġw, or, Ġwor; l; d.
  EXPECT_THAT(Ids(t, "hello world"), ElementsAre(45, 48, 11, 3));
  // "abc": b c (rank 8) before a b (rank 9).
  EXPECT_THAT(Ids(t, "abc"), ElementsAre(0, 50));
  // Equal ranks merge leftmost first: "aaa" -> aa, a.
  EXPECT_THAT(Ids(t, "aaa"), ElementsAre(49, 0));
  EXPECT_THAT(Ids(t, "aaaa"), ElementsAre(49, 49));
  // Re-merging: x y -> xy, then xy z.
  EXPECT_THAT(Ids(t, "xyz"), ElementsAre(53));
  EXPECT_THAT(Ids(t, ""), ElementsAre());
}

TEST(Tokenizer, MergePairsEqualStrings) {
  Tokenizer s = Small(false), p = Small(true);
  for (const char* text : {"hello world", "abc aaa xyz", "hehe llo wor ld", "bcab"}) {
    EXPECT_EQ(Ids(s, text), Ids(p, text)) << text;
  }
}

TEST(Tokenizer, IgnoreMergesTakesWholeVocabEntries) {
  // "xz" has no merge; only ignore_merges finds it as one token.
  EXPECT_THAT(Ids(Small(false, false), "xz"), ElementsAre(23, 25));
  EXPECT_THAT(Ids(Small(false, true), "xz"), ElementsAre(55));
}

TEST(Tokenizer, AddedTokensMatchedFirstLongest) {
  Tokenizer t = Small();
  EXPECT_EQ(t.TokenId("<|eot|>"), 100);
  EXPECT_EQ(t.TokenId("Ġw"), 46);
  EXPECT_EQ(t.TokenId("nope"), std::nullopt);
  EXPECT_THAT(Ids(t, "he<|eot|>he"), ElementsAre(42, 100, 42));
  EXPECT_THAT(Ids(t, "<|eot|>!x"), ElementsAre(101, 23));  // the longer one
  // The whitespace before a special token ends its stretch: " " alone, then the token.
  EXPECT_THAT(Ids(t, "a <|eot|>"), ElementsAre(0, 26, 100));
  // Not a complete added token: plain bytes.
  EXPECT_THAT(Ids(t, "<|eo"), ElementsAre(39, 40, 4, 14));
}

TEST(Tokenizer, OffsetsAndDecode) {
  Tokenizer t = Small();
  const std::string text = "hello world<|eot|>\n12";
  auto enc = t.EncodeWithOffsets(text);
  ASSERT_TRUE(enc.ok()) << enc.status().ToString();
  EXPECT_THAT(enc->ids, ElementsAre(45, 48, 11, 3, 100, 27, 30, 31));
  EXPECT_THAT(enc->byte_offsets, ElementsAre(0, 5, 9, 10, 11, 18, 19, 20));
  auto back = t.Decode(enc->ids);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, text);
  EXPECT_THAT(t.Decode({9999}).status().message(), HasSubstr("9999"));
  auto n = t.Count(text);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 8);
}

TEST(Tokenizer, InvalidUtf8IsAnErrorWithItsOffset) {
  Tokenizer t = Small();
  for (const std::string& bad : {std::string("ab\xff"), std::string("ab\xc3"),
                                 std::string("ab\xed\xa0\x80"), std::string("ab\xc0\xaf")}) {
    auto r = t.Encode(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("byte 2: invalid UTF-8"));
  }
}

TEST(Tokenizer, MissingByteWithoutUnkIsAnError) {
  auto r = Small().Encode("A");  // 'A' is not in the small vocabulary
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("0x41"));
}

TEST(Tokenizer, Gpt2ByteLevelWithPrefixSpace) {
  auto t = Tokenizer::FromJson(
      SmallTokenizerJson(false, false,
                         R"({"type": "ByteLevel", "add_prefix_space": true, "use_regex": true})"),
      "gpt2.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // " world" after the added space: Ġwor, l, d; the space maps to offset 0.
  auto enc = t->EncodeWithOffsets("world");
  ASSERT_TRUE(enc.ok());
  EXPECT_THAT(enc->ids, ElementsAre(48, 11, 3));
  EXPECT_THAT(enc->byte_offsets, ElementsAre(0, 3, 4));
  // GPT-2's digits: " ?\p{N}+" keeps "12345" together (no Llama 3 groups of 3).
  EXPECT_EQ(Ids(*t, "12345").size(), 6u);  // Ġ + five digits (no digit merges)
}

TEST(Tokenizer, SplitOnLiteralStringRemoved) {
  auto t = Tokenizer::FromJson(SmallTokenizerJson(false, false,
                                                  R"({"type": "Sequence", "pretokenizers": [
                               {"type": "Split", "pattern": {"String": " "},
                                "behavior": "Removed", "invert": false},
                               {"type": "ByteLevel", "use_regex": false}]})"),
                               "literal.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // The spaces are removed; "he", "ll", "o" stay apart (no "hello").
  EXPECT_THAT(Ids(*t, "he ll  o"), ElementsAre(42, 43, 14));
}

// Pre-token boundaries, observed through the approximation (ASCII pre-tokens of at most
// 7 bytes are one pseudo-token each).
std::vector<uint32_t> ApproxOffsets(std::string_view text) {
  auto enc = Tokenizer::Approximate().EncodeWithOffsets(text);
  EXPECT_TRUE(enc.ok());
  return enc.ok() ? enc->byte_offsets : std::vector<uint32_t>{};
}

TEST(Tokenizer, Llama3PatternSplits) {
  // (?i:'s|...) contractions, case-insensitive.
  EXPECT_THAT(ApproxOffsets("I'M"), ElementsAre(0, 1));
  // Numbers in groups of at most three; the space before a digit stands alone.
  EXPECT_THAT(ApproxOffsets(" 1234567"), ElementsAre(0, 1, 4, 7));
  // \s+(?!\S): a run of spaces leaves its last one to the next word.
  EXPECT_THAT(ApproxOffsets("a   b"), ElementsAre(0, 1, 3));
  // \s*[\r\n]+ takes spaces and newlines together.
  EXPECT_THAT(ApproxOffsets("a \n\nb"), ElementsAre(0, 1, 4));
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*': punctuation with its leading space and trailing newlines.
  EXPECT_THAT(ApproxOffsets("x ;\n"), ElementsAre(0, 1));
}

TEST(Tokenizer, Approximation) {
  Tokenizer t = Tokenizer::Approximate();
  EXPECT_TRUE(t.approximate());
  EXPECT_EQ(t.vocab_size(), 0);
  auto enc = t.EncodeWithOffsets("The internationalization of 東京都庁");
  ASSERT_TRUE(enc.ok());
  // "The", " internationalization" (21 ASCII bytes: ceil(21 / 6) = 4), " of",
  // " 東京都庁" (13 bytes, not ASCII: ceil(13 / 3.5) = 4).
  EXPECT_EQ(enc->ids.size(), 1u + 4u + 1u + 4u);
  EXPECT_THAT(enc->byte_offsets, ElementsAre(0, 3, 8, 13, 18, 24, 27, 31, 34, 37));
  for (int32_t id : enc->ids) EXPECT_EQ(id, -1);
  for (uint32_t off : enc->byte_offsets) {
    EXPECT_NE(static_cast<uint8_t>("The internationalization of 東京都庁"[off]) & 0xC0, 0x80u);
  }
  EXPECT_TRUE(std::is_sorted(enc->byte_offsets.begin(), enc->byte_offsets.end()));
  auto n = t.Count("The internationalization of 東京都庁");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 10);
  EXPECT_FALSE(t.Decode(enc->ids).ok());
}

TEST(Tokenizer, LongRunsDoNotOverflow) {
  Tokenizer t = Small();
  const std::string letters(2'000'000, 'a');
  auto r = t.Count(letters);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, 1'000'000);  // all "aa"
  auto s = t.Count(std::string(1'000'000, ' ') + "hello");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
}

TEST(Tokenizer, ConstMethodsFromManyThreads) {
  const Tokenizer t = Small();
  const std::string text = "hello world aaa abc xyz <|eot|> 123\n";
  const std::vector<int32_t> want = Ids(t, text);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < 2000; ++i) {
        auto r = t.Encode(text);
        ok[k] += r.ok() && *r == want;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_THAT(ok, ElementsAre(2000, 2000, 2000, 2000));
}

// Malformed files: a clear message naming the field, never a crash.
TEST(TokenizerJson, ErrorsNameTheField) {
  struct Case {
    std::string json, want;
  };
  const std::string good = SmallTokenizerJson(false, false);
  auto edit = [&](const std::function<void(nlohmann::json&)>& f) {
    auto j = nlohmann::json::parse(good);
    f(j);
    return j.dump();
  };
  const std::vector<Case> cases = {
      {"{",
       ":1: not valid JSON at column 2: syntax error while parsing object key - unexpected end"},
      // The line and column of a syntax error (simdjson gives none; nlohmann finds them).
      {"{\n  \"model\": {\n    \"type\": \"BPE\",\n    x\n}", ":4: not valid JSON at column 5"},
      {"{\"a\": 1}\n\n  {", ":3: not valid JSON at column 3"},
      {"[]", "top level: must be an object"},
      {"{}", "model: missing"},
      {edit([](auto& j) { j["model"].erase("vocab"); }), "model.vocab: missing"},
      {edit([](auto& j) { j["model"]["vocab"] = 3; }), "model.vocab: must be an object"},
      {edit([](auto& j) { j["model"]["vocab"]["a"] = -1; }), "model.vocab[\"a\"]: id must be"},
      {edit([](auto& j) { j["model"]["vocab"]["a"] = "x"; }),
       "model.vocab[\"a\"]: must be an integer"},
      {edit([](auto& j) { j["model"]["merges"][3] = "q r"; }),
       "model.merges[3]: token \"qr\" not in model.vocab"},
      {edit([](auto& j) { j["model"]["merges"][2] = "he"; }),
       "model.merges[2]: \"he\" must be two tokens"},
      {edit([](auto& j) { j["model"]["merges"][1] = {"l"}; }), "model.merges[1]: a pair must be"},
      {edit([](auto& j) { j["model"]["merges"][1] = 7; }), "model.merges[1]: must be a string"},
      {edit([](auto& j) { j["model"]["type"] = "WordPiece"; }), "model.type: \"WordPiece\""},
      {edit([](auto& j) { j["model"]["dropout"] = 0.1; }), "model.dropout"},
      {edit([](auto& j) { j["model"]["unk_token"] = "<unk>"; }),
       "model.unk_token: \"<unk>\" not in"},
      {edit([](auto& j) { j["model"]["ignore_merges"] = "yes"; }),
       "model.ignore_merges: must be true or false"},
      {edit([](auto& j) {
         j["normalizer"] = {{"type", "NFC"}};
       }),
       "normalizer: \"NFC\""},
      {edit([](auto& j) { j["pre_tokenizer"] = nullptr; }), "pre_tokenizer: missing"},
      {edit([](auto& j) {
         j["pre_tokenizer"] = {{"type", "Whitespace"}};
       }),
       "pre_tokenizer.type: \"Whitespace\""},
      {edit([](auto& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a"; }),
       "pre_tokenizer.pretokenizers[0].pattern: pattern does not compile"},
      {edit([](auto& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Contiguous"; }),
       "pre_tokenizer.pretokenizers[0].behavior"},
      {edit([](auto& j) { j["pre_tokenizer"]["pretokenizers"].erase(1); }),
       "pre_tokenizer: no ByteLevel"},
      {edit([](auto& j) { j["added_tokens"][1].erase("id"); }), "added_tokens[1].id: missing"},
      {edit([](auto& j) { j["added_tokens"][0]["content"] = ""; }), "added_tokens[0].content"},
      {edit([](auto& j) { j["added_tokens"][0]["single_word"] = true; }),
       "added_tokens[0].single_word"},
      {edit([](auto& j) { j["added_tokens"] = "x"; }), "added_tokens: must be an array"},
  };
  for (const auto& c : cases) {
    auto t = Tokenizer::FromJson(c.json, "bad.json");
    ASSERT_FALSE(t.ok()) << c.want;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << c.want;
    // A syntax error names its line ("bad.json:4: ..."), the others their field.
    const std::string want = (c.want[0] == ':' ? "bad.json" : "bad.json: ") + c.want;
    EXPECT_THAT(t.status().message(), HasSubstr(want)) << t.status().message();
  }
  auto missing = Tokenizer::FromFile("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(TokenizerJson, UnkAndFuseUnk) {
  auto j = nlohmann::json::parse(SmallTokenizerJson(false, false));
  j["model"]["vocab"]["<unk>"] = 60;
  j["model"]["unk_token"] = "<unk>";
  auto t = Tokenizer::FromJson(j.dump(), "unk.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_THAT(Ids(*t, "aBCa"), ElementsAre(0, 60, 60, 0));
  j["model"]["fuse_unk"] = true;
  auto f = Tokenizer::FromJson(j.dump(), "unk.json");
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(Ids(*f, "aBCa"), ElementsAre(0, 60, 0));
}

// ---------------------------------------------------------------------------
// Differential test against llama3-tokenizer-js
// ---------------------------------------------------------------------------

// The corpus: code, several scripts, emoji, whitespace runs, numbers, contractions, the
// special tokens and strings that look like them; then random mixes of the same classes.
// (U+0085, U+FEFF, U+180E, U+017F and U+212A are left out: there JavaScript's \s or its
// rewritten (?i:) differ from the reference regex engines; docs/tokenizer.md.)
std::vector<std::string> DifferentialCorpus() {
  // Long texts are written as concatenated literals on purpose.
  // NOLINTBEGIN(bugprone-suspicious-missing-comma)
  std::vector<std::string> c = {
      "Hello world",
      "This is a test sentence.",
      "The llama (/ˈlɑːmə/; 🦙Spanish pronunciation: [ˈʎama]) (Lama glama) is a "
      "domesticated "
      "South American camelid, widely used as a meat and pack animal by Andean cultures since "
      "the Pre-Columbian era.",
      "I'm sure you're right; they'll say it's what we've done. I'D SAY IT'S FINE. Don't won't "
      "can't shouldn't y'all",
      "#include <vector>\nint main(int argc, char** argv) {\n  std::vector<int> v{1, 2, 3};\n"
      "  for (auto& x : v) x *= 2;  // doubling\n  return v.size() > 2 ? 0 : 1;\n}\n",
      "def f(x):\n\tif x > 0:\n\t\treturn [i**2 for i in range(x)]\n\treturn None\n\n\n",
      "    indented    with     spaces   \n\n\n   and\ttabs\t\t\tand\r\nCRLF\r\n\r\n  ",
      "   ",
      "\n",
      " \n",
      "\t\t",
      " \t \n \t",
      "a  ",
      "  a",
      "\n\n\nx\n\n\n",
      "1 12 123 1234 12345 123456 1234567 3.14159 -42 1,000,000 0x1F 1e-9 ١٢٣ ४५६ ７８９",
      "東京は日本の首都です。人口は約1400万人で、世界最大の都市圏の一つです。",
      "我爱自然语言处理。今天天气很好，我们去公园散步吧！",
      "한국어 텍스트도 토큰화해야 합니다. 안녕하세요!",
      "Съешь же ещё этих мягких французских булок, да выпей чаю. ПРИВЕТ, мир!",
      "العربية لغة جميلة، وهي من أكثر اللغات انتشاراً في العالم.",
      "हिन्दी भारत की राजभाषा है। नमस्ते दुनिया!",
      "Ελληνικά: Γειά σου Κόσμε. עברית: שלום עולם. ไทย: สวัสดีชาวโลก",
      "Emoji: 🦙🦙 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ 😀😃😄 "
      "🤖✨ "
      "☕ "
      "🏳️‍🌈",
      "🦙Ꙋ",
      "Ꙋ🦙",
      "镇",
      "ax\n####\nboo",
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|><|start_header_id|>assistant"
      "<|end_header_id|>\n\n",
      "<|python_tag|>x<|eom_id|> <|finetune_right_pad_id|>  <|reserved_special_token_0|>"
      "<|reserved_special_token_247|><|end_of_text|>",
      "<|reserved_special_token_248|> <|reserved_special_token_00|> <|eot_id <||> <|hello|>",
      "trailing special   <|eot_id|>   leading",
      "{\"key\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\\n\"}}",
      "SELECT id, name FROM users WHERE created_at > '2024-01-01' ORDER BY id DESC LIMIT 10;",
      "https://example.com/path?query=1&x=y#frag user@example.org C:\\Windows\\System32",
      "Ünïcödé àccénts: naïve café résumé Straße ÆØÅ œuvre ǅ ǈ",
      "Mixed123abc ABC123 a1b2c3 $100.00 50% 3rd 21st x²+y²=z² ½ ⅓ Ⅻ",
      "\u00a0non-breaking\u00a0spaces\u2003em\u2003space\u3000ideographic\u3000space",
      "zero\u200bwidth\u200djoiner\u200cnon-joiner",
      "'s 's 'S 'll 'LL 'Ll 're 've 'm 'd 't ''' '' '",
      "!!!??? ... --- *** ``` ~~~ ;;; :::\n\n...\n",
  };
  // NOLINTEND(bugprone-suspicious-missing-comma)
  // Random mixes, fixed seed: pieces of every class joined without separators too.
  const std::vector<std::string> atoms = {"a",          "Z",
                                          "the",        " the",
                                          "don",        "'t",
                                          "'S",         "123",
                                          "4",          "٣",
                                          "東",         "京",
                                          "Ж",          "ж",
                                          "ب",          "ह",
                                          "ि",          "🦙",
                                          "👍🏽",   "‍",
                                          " ",          "  ",
                                          "\t",         "\n",
                                          "\r\n",       "\r",
                                          ".",          ",",
                                          "!",          "(",
                                          ")",          "{",
                                          "}",          "<",
                                          "|",          ">",
                                          "<|eot_id|>", "<|begin_of_text|>",
                                          "_",          "-",
                                          "=",          "\"",
                                          "é",          "ß",
                                          "\u00a0",     "\u3000",
                                          "ｱ",          "가",
                                          "\u0301",     "𝔘",
                                          "∑",          "€",
                                          "0.5",        "Ⅻ",
                                          "²"};
  std::mt19937 rng(20250101);
  std::uniform_int_distribution<size_t> pick(0, atoms.size() - 1), len(1, 40);
  for (int i = 0; i < 400; ++i) {
    std::string s;
    const size_t n = len(rng);
    for (size_t k = 0; k < n; ++k) s += atoms[pick(rng)];
    c.push_back(std::move(s));
  }
  return c;
}

class Llama3Differential : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testing::ExecutableDir() + "/tokenizer_testdata/llama3-tokenizer-js";
    skip_ = testing::InstallLlama3Js(dir_);
    if (!skip_.empty()) return;
    const std::string json = dir_ + "/tokenizer.json";
    skip_ = testing::WriteLlama3TokenizerJson(dir_, json);
    if (!skip_.empty()) return;
    auto t = Tokenizer::FromFile(json);
    if (!t.ok()) {
      load_error_ = t.status().ToString();
      return;
    }
    tok_ = new Tokenizer(std::move(*t));
  }
  static void TearDownTestSuite() {
    delete tok_;
    tok_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << "llama3-tokenizer-js unavailable: " << skip_;
    ASSERT_EQ(load_error_, "");
    ASSERT_NE(tok_, nullptr);
  }
  static std::string dir_, skip_, load_error_;
  static Tokenizer* tok_;
};
std::string Llama3Differential::dir_, Llama3Differential::skip_, Llama3Differential::load_error_;
Tokenizer* Llama3Differential::tok_ = nullptr;

TEST_F(Llama3Differential, KnownIds) {
  // From the package's own tests (test/node-test.js) and the Llama 3 repository.
  EXPECT_THAT(Ids(*tok_, "This is a test sentence."), ElementsAre(2028, 374, 264, 1296, 11914, 13));
  EXPECT_THAT(Ids(*tok_, "\n"), ElementsAre(198));
  EXPECT_THAT(Ids(*tok_, " \n"), ElementsAre(720));
  EXPECT_THAT(Ids(*tok_, "\ttabs\t\t\t\tout here"), ElementsAre(3324, 3518, 573, 14294, 1618));
  EXPECT_THAT(Ids(*tok_, "🦙Ꙋ"), ElementsAre(9468, 99, 247, 166, 247, 232));
  EXPECT_EQ(tok_->TokenId("<|begin_of_text|>"), 128000);
  EXPECT_EQ(tok_->TokenId("<|eot_id|>"), 128009);
  EXPECT_EQ(tok_->vocab_size(), 128256);
}

// The real chat templates (../shared/data/chat-templates/), when present: Jinja, JSON
// and English, the text the lint tokenizes.
std::vector<std::string> ChatTemplates() {
  std::vector<std::string> out;
#ifdef TTFT_SHARED_DATA_DIR
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(
           std::string(TTFT_SHARED_DATA_DIR) + "/chat-templates", ec)) {
    std::ifstream f(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    out.push_back(ss.str());
  }
#endif
  return out;
}

TEST_F(Llama3Differential, SameIdsAsReference) {
  std::vector<std::string> corpus = DifferentialCorpus();
  const std::vector<std::string> templates = ChatTemplates();
  corpus.insert(corpus.end(), templates.begin(), templates.end());
  std::printf("[ differential ] with %zu chat templates\n", templates.size());
  std::vector<std::vector<int32_t>> want;
  const std::string err = testing::EncodeWithLlama3Js(dir_, corpus, &want);
  ASSERT_EQ(err, "");
  int64_t tokens = 0, approx = 0, differing = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    auto enc = tok_->EncodeWithOffsets(corpus[i]);
    ASSERT_TRUE(enc.ok()) << enc.status().ToString();
    differing += enc->ids != want[i];
    EXPECT_EQ(enc->ids, want[i]) << "corpus[" << i << "] = " << nlohmann::json(corpus[i]).dump();
    // Offsets cut the text into the tokens' bytes.
    auto back = tok_->Decode(enc->ids);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, corpus[i]);
    for (size_t k = 0; k + 1 < enc->byte_offsets.size(); ++k) {
      auto piece = tok_->Decode({enc->ids[k]});
      ASSERT_TRUE(piece.ok());
      EXPECT_EQ(enc->byte_offsets[k + 1] - enc->byte_offsets[k], piece->size());
    }
    tokens += static_cast<int64_t>(want[i].size());
    approx += *Tokenizer::Approximate().Count(corpus[i]);
  }
  // The whole corpus in one text as well (the cache and stretch handling across items).
  std::string all;
  std::vector<int32_t> all_want;
  for (size_t i = 0; i < corpus.size(); ++i) {
    all += corpus[i];
    all += "\n<|eot_id|>";
  }
  std::vector<std::vector<int32_t>> whole;
  ASSERT_EQ(testing::EncodeWithLlama3Js(dir_, {all}, &whole), "");
  EXPECT_EQ(Ids(*tok_, all), whole[0]);
  std::printf(
      "[ differential ] %zu texts, %lld reference tokens, %lld texts differ; approximation %lld "
      "(%+.1f%%)\n",
      corpus.size(), static_cast<long long>(tokens), static_cast<long long>(differing),
      static_cast<long long>(approx),
      100.0 * static_cast<double>(approx - tokens) / static_cast<double>(tokens));
}

}  // namespace
}  // namespace ttft
