// libFuzzer target for the corpus reader of `ttft lint --corpus` (ttft/lint.h): any bytes
// read as JSONL give prompts or an error naming "fuzz.jsonl:LINE", never crash; the first
// half of the input is also tried as a chat template to render {"messages": ...} lines.
// Prompts read are predicted through the prefix cache (approximate tokens, a tiny LRU).
// Checked invariants: one line number per prompt, increasing; hits never exceed tokens.
// Built by scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ttft/lint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static const ttft::Template chatml = *ttft::Template::Parse(
      "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}", "chatml");
  auto c = ttft::ReadCorpus(text, "fuzz.jsonl", &chatml, nullptr);
  if (!c.ok()) {
    if (c.status().message().rfind("fuzz.jsonl:", 0) != 0) std::abort();
    return 0;
  }
  if (c->lines.size() != c->prompts.size()) std::abort();
  for (size_t i = 1; i < c->lines.size(); ++i) {
    if (c->lines[i] <= c->lines[i - 1]) std::abort();
  }
  ttft::CorpusLintOptions opt;
  opt.cache.block_size = 4;
  opt.cache.capacity_blocks = 8;
  opt.threads = 1;
  auto r = ttft::LintCorpus(*c, ttft::Tokenizer::Approximate(), opt);
  if (!r.ok()) return 0;  // text the tokenizer rejects (not UTF-8 after JSON unescaping)
  if (r->prediction.hit_tokens > r->prediction.prompt_tokens) std::abort();
  return 0;
}
