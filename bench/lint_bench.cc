// `ttft lint --corpus` figures for docs/template.md.
//
//   lint_bench [PROMPTS] [TOKENIZER_JSON]   (defaults: 100000, the approximation)
//
// Generates a deterministic corpus of PROMPTS rendered chat prompts as JSONL (ChatML; one
// of 8 tenants' system prompts of ~150-400 tokens, a per-request user turn of 20-200
// words, every fourth prompt a follow-up turn that repeats an earlier conversation), then
// times what `ttft lint --corpus` does: read the JSONL (UTF-8 check, JSON parse), tokenize
// every prompt (all cores), predict the prefix cache (unbounded, and a 20,000-block LRU)
// and find the splits. Plain main(): one timed run of the whole job; wall and CPU time.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_clock.h"
#include "ttft/lint.h"
#include "ttft/tokenizer.h"

namespace {

using ttft::bench::CpuSelf;
using ttft::bench::Now;

std::string Corpus(int n) {
  static const char* kWords[] = {"order",  "parcel", "refund", "account", "delivery", "invoice",
                                 "please", "help",   "where",  "my",      "the",      "is",
                                 "late",   "broken", "change", "address", "thanks",   "today",
                                 "when",   "will",   "arrive", "support", "ticket",   "number"};
  std::mt19937_64 rng(42);
  auto words = [&](int k) {
    std::string s;
    for (int i = 0; i < k; ++i) {
      if (i) s += ' ';
      s += kWords[rng() % std::size(kWords)];
    }
    return s;
  };
  std::vector<std::string> systems;
  for (int t = 0; t < 8; ++t) {
    systems.push_back(fmt::format("You are the support assistant of tenant {}. ", t) +
                      words(150 + 35 * t));
  }
  std::vector<std::string> convs;
  std::string out;
  out.reserve(static_cast<size_t>(n) * 1400);
  for (int i = 0; i < n; ++i) {
    std::string p;
    if (i % 4 == 3 && !convs.empty()) {
      p = convs[rng() % convs.size()] + "<|im_start|>user\n" + words(10) + "<|im_end|>\n";
    } else {
      p = "<|im_start|>system\n" + systems[rng() % systems.size()] + "<|im_end|>\n" +
          "<|im_start|>user\n" + words(20 + static_cast<int>(rng() % 180)) + "<|im_end|>\n";
      if (convs.size() < 1000) convs.push_back(p + "<|im_start|>assistant\nSure.<|im_end|>\n");
    }
    p += "<|im_start|>assistant\n";
    out += nlohmann::json({{"prompt", p}}).dump();
    out += '\n';
  }
  return out;
}

int Run(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  ttft::Tokenizer tok = ttft::Tokenizer::Approximate();
  if (argc > 2) {
    auto t = ttft::Tokenizer::FromFile(argv[2]);
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", t.status().message().c_str());
      return 2;
    }
    tok = *t;
  }
  const std::string jsonl = Corpus(n);
  std::printf("corpus: %d prompts, %.1f MB of JSONL; tokenizer: %s; %u hardware threads\n", n,
              static_cast<double>(jsonl.size()) / 1e6,
              tok.approximate() ? "approximation" : argv[2], std::thread::hardware_concurrency());
  const double w0 = Now(), c0 = CpuSelf();
  auto corpus = ttft::ReadCorpus(jsonl, "bench.jsonl", nullptr, nullptr);
  if (!corpus.ok()) {
    std::fprintf(stderr, "%s\n", corpus.status().message().c_str());
    return 2;
  }
  const double w1 = Now(), c1 = CpuSelf();
  ttft::CorpusLintOptions opt;
  auto rep = ttft::LintCorpus(*corpus, tok, opt);
  if (!rep.ok()) {
    std::fprintf(stderr, "%s\n", rep.status().message().c_str());
    return 2;
  }
  const double w2 = Now(), c2 = CpuSelf();
  opt.cache.capacity_blocks = 20000;
  auto rep2 = ttft::LintCorpus(*corpus, tok, opt);
  const double w3 = Now();
  std::printf("read:                   %6.2f s wall, %6.2f s CPU\n", w1 - w0, c1 - c0);
  std::printf("tokenize + predict:     %6.2f s wall, %6.2f s CPU (%lld tokens, hit rate %.2f%%)\n",
              w2 - w1, c2 - c1, static_cast<long long>(rep->prediction.prompt_tokens),
              100 * rep->prediction.hit_rate());
  std::printf("total (read + lint):    %6.2f s wall, %6.2f s CPU\n", w2 - w0, c2 - c0);
  std::printf("again with a 20,000-block LRU: %.2f s wall (hit rate %.2f%%, %lld evictions)\n",
              w3 - w2, 100 * rep2->prediction.hit_rate(),
              static_cast<long long>(rep2->prediction.evicted_blocks));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
