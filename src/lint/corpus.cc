// Corpus mode: the JSONL reader, vLLM's prefix cache on a prompt stream, and where the
// shared prefixes split.
#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <list>
#include <nlohmann/json.hpp>
#include <thread>

#include "lint/internal.h"
#include "ttft/lint.h"

namespace ttft {
namespace lint {

int64_t FirstInvalidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return static_cast<int64_t>(i);
    }
    if (i + static_cast<size_t>(len) > n) return static_cast<int64_t>(i);
    for (int k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc & 0xC0) != 0x80) return static_cast<int64_t>(i);
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates, beyond U+10FFFF.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
      return static_cast<int64_t>(i);
    }
    i += static_cast<size_t>(len);
  }
  return -1;
}

std::vector<uint64_t> BlockHashes(const std::vector<int32_t>& ids, int block_size) {
  const size_t bs = static_cast<size_t>(block_size);
  std::vector<uint64_t> h(ids.size() / bs);
  uint64_t parent = kRootHash;
  for (size_t i = 0; i < h.size(); ++i) {
    parent = XXH3_64bits_withSeed(ids.data() + i * bs, bs * sizeof(int32_t), parent);
    h[i] = parent;
  }
  return h;
}

}  // namespace lint

PrefixCachePrediction PredictPrefixCache(const std::vector<std::vector<int32_t>>& prompts,
                                         const PrefixCacheOptions& options) {
  PrefixCachePrediction p;
  const int bs = std::max(1, options.block_size);
  // LRU order: front = next to evict.
  std::list<uint64_t> lru;
  absl::flat_hash_map<uint64_t, std::list<uint64_t>::iterator> cached;
  p.cached_tokens.reserve(prompts.size());
  for (const std::vector<int32_t>& ids : prompts) {
    const std::vector<uint64_t> h = lint::BlockHashes(ids, bs);
    const auto n = static_cast<int64_t>(ids.size());
    const int64_t max_hit = n > 0 ? (n - 1) / bs : 0;
    int64_t hits = 0;
    while (hits < max_hit && hits < static_cast<int64_t>(h.size()) &&
           cached.contains(h[static_cast<size_t>(hits)])) {
      ++hits;
    }
    ++p.prompts;
    p.prompt_tokens += n;
    p.hit_tokens += hits * bs;
    p.cached_tokens.push_back(hits * bs);
    // Cache every full block; the last block is touched first so it is evicted first.
    for (size_t i = h.size(); i-- > 0;) {
      auto it = cached.find(h[i]);
      if (it != cached.end()) {
        lru.splice(lru.end(), lru, it->second);
      } else {
        lru.push_back(h[i]);
        cached.emplace(h[i], std::prev(lru.end()));
      }
      if (options.capacity_blocks >= 0) {
        while (static_cast<int64_t>(lru.size()) > options.capacity_blocks) {
          cached.erase(lru.front());
          lru.pop_front();
          ++p.evicted_blocks;
        }
      }
    }
    p.peak_cached_blocks =
        std::max<int64_t>(p.peak_cached_blocks, static_cast<int64_t>(lru.size()));
  }
  return p;
}

std::vector<Divergence> FindDivergences(const std::vector<std::vector<int32_t>>& prompts,
                                        int block_size, int top) {
  struct Node {
    int64_t count = 0;
    int64_t first = 0;
    int64_t depth = 0;
    int64_t children = 0;
    uint64_t parent = 0;
  };
  const int bs = std::max(1, block_size);
  absl::flat_hash_map<uint64_t, Node> nodes;
  Node& root = nodes[lint::kRootHash];
  root.count = static_cast<int64_t>(prompts.size());
  for (size_t p = 0; p < prompts.size(); ++p) {
    uint64_t parent = lint::kRootHash;
    int64_t depth = 0;
    for (uint64_t h : lint::BlockHashes(prompts[p], bs)) {
      ++depth;
      auto [it, inserted] = nodes.try_emplace(h);
      if (inserted) {
        it->second.first = static_cast<int64_t>(p);
        it->second.depth = depth;
        it->second.parent = parent;
        ++nodes[parent].children;
      }
      ++it->second.count;
      parent = h;
    }
  }
  std::vector<std::pair<uint64_t, const Node*>> cands;
  for (const auto& [h, n] : nodes) {
    if (n.children >= 2) cands.emplace_back(h, &n);
  }
  std::sort(cands.begin(), cands.end(), [](const auto& a, const auto& b) {
    if (a.second->count != b.second->count) return a.second->count > b.second->count;
    if (a.second->depth != b.second->depth) return a.second->depth > b.second->depth;
    return a.second->first < b.second->first;
  });
  if (static_cast<int>(cands.size()) > top) cands.resize(static_cast<size_t>(std::max(0, top)));
  std::vector<Divergence> out;
  for (const auto& [h, n] : cands) {
    Divergence d;
    d.shared_tokens = n->depth * bs;
    d.prompts = n->count;
    d.branches = n->children;
    d.first_prompt = n->first;
    std::vector<std::pair<int64_t, int64_t>> kids;  // count, first prompt
    for (const auto& [ch, cn] : nodes) {
      if (cn.parent == h && cn.depth == n->depth + 1) kids.emplace_back(cn.count, cn.first);
    }
    std::sort(kids.begin(), kids.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (size_t k = 0; k < kids.size() && k < 3; ++k) {
      d.top_branches.emplace_back(kids[k].second, kids[k].first);
    }
    out.push_back(std::move(d));
  }
  return out;
}

Result<Corpus> ReadCorpus(std::string_view jsonl, std::string_view source, const Template* tmpl,
                          const VarsFile* vars) {
  Corpus c;
  c.source = std::string(source);
  Value base = Value::Dict();
  if (vars != nullptr) {
    for (const VarSpec& v : vars->vars) {
      if (v.path.find_first_of(".[") != std::string::npos || v.path == "messages") continue;
      if (!v.sample) {
        return Status::Invalid(
            fmt::format("{}:{}: {}: corpus rendering needs a sample", vars->path, v.line, v.path));
      }
      base.Set(v.path, *v.sample);
    }
  }
  if (base.Find("add_generation_prompt") == nullptr) base.Set("add_generation_prompt", Value(true));
  size_t pos = 0;
  int64_t line = 0;
  while (pos < jsonl.size()) {
    ++line;
    size_t nl = jsonl.find('\n', pos);
    if (nl == std::string_view::npos) nl = jsonl.size();
    std::string_view l = jsonl.substr(pos, nl - pos);
    pos = nl + 1;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    auto err = [&](std::string_view what) {
      return Status::Invalid(fmt::format("{}:{}: {}", source, line, what));
    };
    if (l.find_first_not_of(" \t") == std::string_view::npos) {
      return err("empty line (one JSON object per line: {\"prompt\": ...} or {\"messages\": ...})");
    }
    if (int64_t bad = lint::FirstInvalidUtf8(l); bad >= 0) {
      return err(fmt::format("invalid UTF-8 at byte {} of the line", bad + 1));
    }
    {
      // Bounded nesting: the value conversion and serialisation below recurse.
      int depth = 0, max_depth = 0;
      bool in_string = false;
      for (size_t i = 0; i < l.size(); ++i) {
        const char ch = l[i];
        if (in_string) {
          if (ch == '\\') {
            ++i;
          } else if (ch == '"') {
            in_string = false;
          }
        } else if (ch == '"') {
          in_string = true;
        } else if (ch == '[' || ch == '{') {
          max_depth = std::max(max_depth, ++depth);
        } else if (ch == ']' || ch == '}') {
          --depth;
        }
      }
      if (max_depth > 128) return err("JSON nested deeper than 128");
    }
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(l, nullptr, false);
    if (j.is_discarded()) return err("not valid JSON");
    if (!j.is_object()) return err("expected a JSON object");
    const nlohmann::ordered_json* prompt = nullptr;
    const nlohmann::ordered_json* messages = nullptr;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "prompt") {
        prompt = &it.value();
      } else if (it.key() == "messages") {
        messages = &it.value();
      } else {
        return err(fmt::format("unknown field '{}' (expected prompt or messages)", it.key()));
      }
    }
    if ((prompt == nullptr) == (messages == nullptr)) {
      return err("expected exactly one of \"prompt\" and \"messages\"");
    }
    if (prompt != nullptr) {
      if (!prompt->is_string()) return err("prompt: expected a string");
      c.prompts.push_back(prompt->get<std::string>());
    } else {
      if (!messages->is_array()) return err("messages: expected a list");
      if (tmpl == nullptr) return err("chat messages need --template to be rendered");
      auto m = Value::FromJson(messages->dump());
      if (!m.ok()) return err(m.status().message());
      Value copy = Value::Dict();
      for (const auto& [k, v] : base.items()) copy.Set(k, v);
      copy.Set("messages", *m);
      RenderOptions opt;
      opt.strict_undefined = true;
      auto r = tmpl->Render(copy, opt);
      if (!r.ok()) return err(r.status().message());
      c.prompts.push_back(std::move(r->text));
    }
    c.lines.push_back(line);
  }
  if (c.prompts.empty()) {
    // A lint over nothing would pass: an empty file, blank lines only, or a folder.
    return Status::Invalid(fmt::format("{}: no prompts (one JSON object per line)", source));
  }
  return c;
}

bool CorpusReport::violation() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.level == FindingLevel::kError; });
}

namespace {

// Token ids of an approximation are -1: a token's bytes stand for it (XXH32), so equal
// text gives equal blocks.
std::vector<int32_t> PseudoIds(std::string_view text, const Encoding& e) {
  std::vector<int32_t> ids(e.ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const size_t b = e.byte_offsets[i];
    const size_t end = i + 1 < ids.size() ? e.byte_offsets[i + 1] : text.size();
    ids[i] = static_cast<int32_t>(XXH32(text.data() + b, end - b, 0) & 0x7FFFFFFF);
  }
  return ids;
}

std::string Show(std::string_view s, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < s.size() && i < max_bytes) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    if (i + len > s.size()) break;
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace

Result<CorpusReport> LintCorpus(const Corpus& corpus, const Tokenizer& tokenizer,
                                const CorpusLintOptions& options) {
  if (options.cache.block_size <= 0) return Status::Invalid("--block-size must be > 0");
  CorpusReport rep;
  rep.corpus_path = corpus.source;
  rep.approximate_tokens = tokenizer.approximate();
  rep.capacity_blocks = options.cache.capacity_blocks;
  rep.block_size = options.cache.block_size;
  const size_t n = corpus.prompts.size();
  std::vector<std::vector<int32_t>> ids(n);
  std::vector<Status> errors(n);
  int threads = options.threads > 0
                    ? options.threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads =
      static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(1, n)));
  auto work = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      if (tokenizer.approximate()) {
        auto e = tokenizer.EncodeWithOffsets(corpus.prompts[i]);
        if (!e.ok()) {
          errors[i] = e.status();
          return;
        }
        ids[i] = PseudoIds(corpus.prompts[i], *e);
      } else {
        auto e = tokenizer.Encode(corpus.prompts[i]);
        if (!e.ok()) {
          errors[i] = e.status();
          return;
        }
        ids[i] = std::move(*e);
      }
    }
  };
  std::vector<std::thread> pool;
  const size_t chunk = (n + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
  for (int t = 1; t < threads; ++t) {
    const size_t b = static_cast<size_t>(t) * chunk;
    if (b < n) pool.emplace_back(work, b, std::min(n, b + chunk));
  }
  work(0, std::min(n, chunk));
  for (auto& th : pool) th.join();
  for (size_t i = 0; i < n; ++i) {
    if (!errors[i].ok()) {
      return errors[i].WithContext(fmt::format("{}:{}", rep.corpus_path, corpus.lines[i]));
    }
  }
  rep.prediction = PredictPrefixCache(ids, options.cache);
  const int bs = options.cache.block_size;
  for (const Divergence& d : FindDivergences(ids, bs, options.top_divergences)) {
    CorpusReport::Split s;
    s.where = d;
    s.line = corpus.lines[static_cast<size_t>(d.first_prompt)];
    auto text_at = [&](int64_t prompt, int64_t token) -> std::pair<std::string, size_t> {
      const std::string& t = corpus.prompts[static_cast<size_t>(prompt)];
      auto e = tokenizer.EncodeWithOffsets(t);
      if (!e.ok() || e->byte_offsets.empty()) return {t, 0};
      const size_t k = static_cast<size_t>(token);
      return {t, k < e->byte_offsets.size() ? e->byte_offsets[k] : t.size()};
    };
    auto [text, off] = text_at(d.first_prompt, d.shared_tokens);
    const size_t tail_begin = off > 48 ? off - 48 : 0;
    size_t tb = tail_begin;
    while (tb < off && (static_cast<unsigned char>(text[tb]) & 0xC0) == 0x80) ++tb;
    s.shared_tail = Show(std::string_view(text).substr(tb, off - tb), 48);
    for (const auto& [prompt, count] : d.top_branches) {
      auto [t2, o2] = text_at(prompt, d.shared_tokens);
      s.continuations.emplace_back(Show(std::string_view(t2).substr(o2), 48), count);
    }
    rep.splits.push_back(std::move(s));
  }
  if (options.min_hit_rate >= 0 && rep.prediction.hit_rate() < options.min_hit_rate) {
    Finding f;
    f.rule_id = "TTFT-L005";
    f.level = FindingLevel::kError;
    f.message = fmt::format("predicted prefix-cache hit rate {:.1f}% is below the required {:.1f}%",
                            100 * rep.prediction.hit_rate(), 100 * options.min_hit_rate);
    f.pos = {rep.splits.empty() ? 1 : static_cast<int>(rep.splits[0].line), 1};
    rep.findings.push_back(f);
  }
  return rep;
}

}  // namespace ttft
