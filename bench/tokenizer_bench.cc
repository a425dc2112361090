// Tokenizer figures for docs/tokenizer.md (and docs/performance.md).
//
//   tokenizer_bench [PACKAGE_DIR] [MB]   (defaults: the test's folder, 4 MB)
//
// PACKAGE_DIR holds node_modules/llama3-tokenizer-js (the differential test installs it
// under the build directory; the bench installs it there too when missing, and runs
// without the side-by-side figure when npm cannot). The Llama 3 tokenizer.json is made
// from the package's data (tokenizer/llama3_js_testing.h). The text is a deterministic
// mix of English prose, code, numbers, other scripts (CJK, Cyrillic, Arabic,
// Devanagari), emoji, whitespace runs and chat special tokens. On one core: the time to
// load tokenizer.json, then Encode of the whole text (MB/s, best of 3, wall and CPU),
// and the package's encode() of the same text under node (after a warm-up), and the
// ratio. Plain main(): each figure is one timed run of a whole job.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bench_clock.h"
#include "tokenizer/llama3_js_testing.h"
#include "ttft/tokenizer.h"

namespace {

using ttft::bench::CpuSelf;
using ttft::bench::Now;

std::string MixedText(size_t bytes) {
  const std::vector<std::string> words = {"the",
                                          "of",
                                          "and",
                                          "to",
                                          "in",
                                          "is",
                                          "that",
                                          "for",
                                          "it",
                                          "as",
                                          "was",
                                          "with",
                                          "be",
                                          "by",
                                          "on",
                                          "not",
                                          "he",
                                          "this",
                                          "are",
                                          "or",
                                          "his",
                                          "from",
                                          "at",
                                          "which",
                                          "but",
                                          "have",
                                          "an",
                                          "had",
                                          "they",
                                          "you",
                                          "were",
                                          "their",
                                          "one",
                                          "all",
                                          "we",
                                          "can",
                                          "her",
                                          "has",
                                          "there",
                                          "been",
                                          "if",
                                          "more",
                                          "when",
                                          "will",
                                          "would",
                                          "who",
                                          "so",
                                          "no",
                                          "request",
                                          "latency",
                                          "prefix",
                                          "cache",
                                          "tokenizer",
                                          "template",
                                          "serving",
                                          "fleet",
                                          "replica",
                                          "throughput",
                                          "p99",
                                          "regression",
                                          "deploy",
                                          "Kubernetes",
                                          "GPU",
                                          "H100",
                                          "vLLM",
                                          "scheduler",
                                          "batching",
                                          "prefill",
                                          "decode",
                                          "it's",
                                          "don't",
                                          "we're",
                                          "they'll",
                                          "I've",
                                          "You'd",
                                          "internationalization",
                                          "misunderstanding",
                                          "photosynthesis",
                                          "Llama",
                                          "Mistral",
                                          "JSON",
                                          "YAML"};
  const std::vector<std::string> code = {
      "#include <vector>\nint main(int argc, char** argv) {\n  std::vector<int> v{1, 2, 3};\n",
      "  for (auto& x : v) x *= 2;  // doubling\n  return v.size() > 2 ? 0 : 1;\n}\n\n",
      "def handler(event, context):\n\tif not event:\n\t\treturn {\"status\": 400}\n",
      "\treturn [r for r in event[\"records\"] if r.get(\"ttft_s\", 0) > 0.5]\n\n\n",
      "SELECT replica, quantile(0.99)(ttft_s) FROM spans WHERE ts > now() - 3600 GROUP BY 1;\n",
      "{\"model\": \"llama-3.1-8b\", \"max_tokens\": 256, \"temperature\": 0.7, \"stream\": "
      "true}\n",
      "    if (queue.size() >= max_num_seqs) {\n        return Status::Unavailable(\"full\");\n"};
  const std::vector<std::string> other = {
      "東京は日本の首都です。人口は約1400万人で、世界最大の都市圏の一つです。",
      "我爱自然语言处理。今天天气很好，我们去公园散步吧！",
      "한국어 텍스트도 토큰화해야 합니다. 안녕하세요!",
      "Съешь же ещё этих мягких французских булок, да выпей чаю.",
      "العربية لغة جميلة، وهي من أكثر اللغات انتشاراً في العالم.",
      "हिन्दी भारत की राजभाषा है। नमस्ते दुनिया!",
      "Emoji: 🦙🦙 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ 😀😃😄",
      "<|start_header_id|>user<|end_header_id|>\n\n",
      "<|eot_id|>",
      "      \n\n\t\t   \n"};
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  std::string text;
  text.reserve(bytes + 1024);
  while (text.size() < bytes) {
    const double r = u(rng);
    if (r < 0.6) {  // a sentence of prose, with numbers and a made-up identifier now and then
      const int n = 5 + static_cast<int>(rng() % 20);
      for (int i = 0; i < n; ++i) {
        text += i == 0 ? "" : " ";
        const double q = u(rng);
        if (q < 0.05) {
          text += std::to_string(rng() % 100000);
        } else if (q < 0.08) {
          for (int k = 0; k < 6; ++k) text.push_back(static_cast<char>('a' + rng() % 26));
        } else {
          text += pick(words);
        }
      }
      text += u(rng) < 0.2 ? ".\n\n" : ". ";
    } else if (r < 0.8) {
      text += pick(code);
    } else {
      text += pick(other);
      text += " ";
    }
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir =
      argc > 1 ? argv[1]
               : ttft::testing::ExecutableDir() + "/tokenizer_testdata/llama3-tokenizer-js";
  const double mb = argc > 2 ? std::atof(argv[2]) : 4.0;
  const std::string why = ttft::testing::InstallLlama3Js(dir);
  if (!why.empty()) {
    fmt::print("llama3-tokenizer-js unavailable ({}): no Llama 3 vocabulary, nothing to time\n",
               why);
    return 1;
  }
  const std::string json = dir + "/tokenizer.json";
  if (auto err = ttft::testing::WriteLlama3TokenizerJson(dir, json); !err.empty()) {
    fmt::print("{}\n", err);
    return 1;
  }
  double t0 = Now();
  auto tok = ttft::Tokenizer::FromFile(json);
  const double load_s = Now() - t0;
  if (!tok.ok()) {
    fmt::print("{}\n", tok.status().ToString());
    return 1;
  }
  const std::string text = MixedText(static_cast<size_t>(mb * 1e6));
  const double text_mb = static_cast<double>(text.size()) / 1e6;
  fmt::print("tokenizer.json load: {:.3f} s ({} ids)\n", load_s, tok->vocab_size());

  double best_wall = INFINITY, best_cpu = INFINITY;
  size_t n_tokens = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const double w0 = Now(), c0 = CpuSelf();
    auto ids = tok->Encode(text);
    const double w = Now() - w0, c = CpuSelf() - c0;
    if (!ids.ok()) {
      fmt::print("{}\n", ids.status().ToString());
      return 1;
    }
    n_tokens = ids->size();
    best_wall = std::min(best_wall, w);
    best_cpu = std::min(best_cpu, c);
  }
  fmt::print("text: {:.2f} MB, {} tokens ({:.2f} bytes/token)\n", text_mb, n_tokens,
             static_cast<double>(text.size()) / static_cast<double>(n_tokens));
  fmt::print(
      "ttft Encode:          {:7.3f} s wall {:7.3f} s CPU  {:7.1f} MB/s (CPU)  {:.2f} Mtok/s\n",
      best_wall, best_cpu, text_mb / best_cpu, static_cast<double>(n_tokens) / best_cpu / 1e6);
  const auto approx = ttft::Tokenizer::Approximate();
  {
    const double c0 = CpuSelf();
    auto n = approx.Count(text);
    const double c = CpuSelf() - c0;
    if (n.ok()) {
      fmt::print("approximation Count:  {:7.3f} s CPU  {:7.1f} MB/s  {} tokens ({:+.1f}%)\n", c,
                 text_mb / c, *n,
                 100.0 * (static_cast<double>(*n) - static_cast<double>(n_tokens)) /
                     static_cast<double>(n_tokens));
    }
  }

  // The package under node, same text, one encode() after a warm-up.
  const std::string text_path = dir + "/bench_text.txt";
  std::ofstream(text_path, std::ios::binary) << text;
  const std::string cmd =
      "timeout 900 " +
      ttft::testing::NodeCommand(dir, "bench " + ttft::testing::ShellQuote(text_path));
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (p != nullptr && fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int rc = p != nullptr ? pclose(p) : -1;
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (rc != 0 || j.is_discarded() || !j.contains("seconds")) {
    fmt::print("llama3-tokenizer-js under node: failed (exit {}): {}\n", rc, out);
    return 1;
  }
  const double js_s = j["seconds"].get<double>();
  const double js_cpu = j["cpu_seconds"].get<double>();
  const auto js_tokens = j["tokens"].get<size_t>();
  fmt::print(
      "llama3-tokenizer-js:  {:7.3f} s wall {:7.3f} s CPU  {:7.1f} MB/s (CPU)  ({} tokens{})\n",
      js_s, js_cpu, text_mb / js_cpu, js_tokens,
      js_tokens == n_tokens ? ", same count" : ", DIFFERENT");
  fmt::print("speed-up: {:.1f}x (CPU against CPU), {:.1f}x (wall against wall)\n",
             js_cpu / best_cpu, js_s / best_wall);
  return js_tokens == n_tokens ? 0 : 1;
}
