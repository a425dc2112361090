// -----------------------------------------------------------------------------
// File: ttft/tokenizer.h
// -----------------------------------------------------------------------------
//
// Byte-level BPE tokenization from a Hugging Face `tokenizer.json`, in C++ (no Python),
// with the ids of the reference implementation (huggingface/tokenizers), and a
// documented approximation for when no tokenizer file is at hand. docs/tokenizer.md
// describes the format, the algorithm and the measured speed.
//
// What a file may contain (anything else is an error naming the field, never ignored):
//   * model: type "BPE" (or absent), vocab {token: id}, merges as "a b" strings or
//     ["a", "b"] pairs (rank = index), ignore_merges (Llama 3 sets it), unk_token,
//     dropout null/0, byte_fallback false, no continuing_subword_prefix or
//     end_of_word_suffix.
//   * pre_tokenizer: ByteLevel (use_regex true or absent: the GPT-2 split pattern),
//     or a Sequence of Split {pattern: {Regex|String}, behavior "Isolated" or
//     "Removed", invert false} and ByteLevel {use_regex: false} (the Llama 3 form).
//     add_prefix_space is honoured.
//   * normalizer: null. added_tokens: id, content, special, lstrip, rstrip,
//     single_word false. post_processor, decoder, truncation and padding are not
//     used: Encode adds no BOS/EOS (Hugging Face's add_special_tokens=False) and never
//     truncates or pads.
//
// Encoding (huggingface/tokenizers tokenizer/mod.rs `encode`, added_vocabulary.rs,
// models/bpe/model.rs):
//   1. Added tokens are matched first, leftmost-longest, on the raw text.
//   2. Each stretch between them is split by the pre-tokenizer's pattern (PCRE2 with
//      UTF and UCP, JIT-compiled; `\s` = Unicode White_Space plus U+180E).
//   3. Each pre-token's UTF-8 bytes are one vocab entry (ignore_merges) or go through
//      BPE: the adjacent pair with the lowest merge rank merges first, leftmost on
//      ties, until no pair has a rank. Vocab strings are read through GPT-2's
//      bytes_to_unicode, so the BPE runs on raw bytes.
//
// Invalid UTF-8 input text is an error (Status with the byte offset): the split pattern
// is defined on characters, and the reference implementations take Unicode strings
// (Python str, JS string), so there is no reference id sequence for such bytes.
//
// Example:
//
//   TTFT_ASSIGN_OR_RETURN(ttft::Tokenizer tok, ttft::Tokenizer::FromFile("tokenizer.json"));
//   TTFT_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.Encode("Hello world"));
//   // ids == {9906, 1917} for Llama 3
//
//   ttft::Tokenizer approx = ttft::Tokenizer::Approximate();   // approx.approximate()
//
// Thread safety: a Tokenizer is immutable after construction; its const methods may be
// called from many threads at once. Copying shares the (immutable) tables.

#ifndef TTFT_TOKENIZER_H_
#define TTFT_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/core.h"

namespace ttft {

// Tokens of a text, with where each starts. A BPE token always covers whole bytes of
// the input, so token i is text[byte_offsets[i], byte_offsets[i + 1]) (the last one
// ends at the text's end).
struct Encoding {
  std::vector<int32_t> ids;            // -1 for every token of an approximation
  std::vector<uint32_t> byte_offsets;  // same size as ids, non-decreasing
};

// The approximation used without a tokenizer file: the text is split with the Llama 3
// pre-tokenizer pattern, and a pre-token of B UTF-8 bytes counts as
//   * ASCII:      1 token if B <= kApproxAsciiWordBytes, else ceil(B / kApproxAsciiBytesPerToken);
//   * non-ASCII:  max(1, ceil(B / 3.5)) tokens (kApproxNonAsciiBytesPerTokenX2 / 2),
// cut into pieces of about equal bytes at character boundaries. Llama 3 maps most English
// words to one token; other scripts average ~3.5-4 bytes a token. Fitted on chat templates
// and English prose (error about -1%); docs/tokenizer.md gives the measured errors.
inline constexpr int kApproxAsciiWordBytes = 7;
inline constexpr int kApproxAsciiBytesPerToken = 6;
inline constexpr int kApproxNonAsciiBytesPerTokenX2 = 7;

// The Llama 3 pre-tokenizer pattern (meta-llama/llama3 llama/tokenizer.py `pat_str`).
inline constexpr std::string_view kLlama3SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// The GPT-2 pattern, used by ByteLevel with use_regex true (pre_tokenizers/byte_level.rs).
inline constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class Tokenizer {
 public:
  // Reads a tokenizer.json. Errors (kInvalidArgument, kNotFound, kIoError) name the
  // file and the field, e.g. "tok.json: model.merges[12]: token \"ab\" not in model.vocab".
  static Result<Tokenizer> FromFile(const std::string& path);
  // Parses the text of a tokenizer.json; `source` names it in messages.
  static Result<Tokenizer> FromJson(std::string_view json, std::string_view source);
  // The approximation described at kApproxAsciiWordBytes: approximate() is true, ids -1.
  static Tokenizer Approximate();

  // True for Approximate(): counts and offsets are estimates, ids are -1.
  bool approximate() const;

  // The ids of `text`, added tokens included, nothing prepended or appended.
  // Errors: invalid UTF-8 (kInvalidArgument, "byte N: invalid UTF-8").
  Result<std::vector<int32_t>> Encode(std::string_view text) const;
  // As Encode, with each token's starting byte offset.
  // REQUIRES: text.size() < 2^32.
  Result<Encoding> EncodeWithOffsets(std::string_view text) const;
  // The number of tokens Encode would return.
  Result<int64_t> Count(std::string_view text) const;

  // The bytes of the tokens (byte-level decoding); an id not in the vocabulary is an
  // error naming it. Empty for an approximation's -1 ids is an error as well.
  Result<std::string> Decode(const std::vector<int32_t>& ids) const;

  // The id of a vocab entry or added token, as written in the file (byte-level form for
  // vocab entries, e.g. "Ġthe"); nullopt if absent.
  std::optional<int32_t> TokenId(std::string_view token) const;
  // One more than the largest id (0 for an approximation).
  int32_t vocab_size() const;

  Tokenizer(const Tokenizer&) = default;
  Tokenizer& operator=(const Tokenizer&) = default;
  Tokenizer(Tokenizer&&) noexcept = default;
  Tokenizer& operator=(Tokenizer&&) noexcept = default;
  ~Tokenizer();

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

// GPT-2's bytes_to_unicode (openai/gpt-2 src/encoder.py): the code point that stands for
// byte `b` in byte-level vocab strings (bytes 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF map to
// themselves, the other 68 in order to U+0100 + n: space to U+0120 'Ġ').
char32_t ByteToUnicode(uint8_t b);

}  // namespace ttft

#endif  // TTFT_TOKENIZER_H_
