// -----------------------------------------------------------------------------
// File: ttft/lint.h
// -----------------------------------------------------------------------------
//
// The prompt-template and prompt-corpus lint (issue 11): will a template, or a stream of
// rendered prompts, keep vLLM's prefix cache warm? docs/template.md describes the rules
// and the output formats.
//
// Template mode (LintTemplate): every variable the template reads is declared in a vars
// file with a class (static, per_tenant, per_user, per_request) and a sample. Non-static
// variables are tracked sources: the template renders twice, with two different samples
// for each of them (and two different clocks for strftime_now), and the first byte that
// either came from a tracked source (render tracking, ttft/template.h) or differs between
// the two renders ends the cacheable prefix. In tokens (the tokenizer's offsets: a token
// that straddles the boundary is not cacheable) and in KV blocks (full blocks only, as
// vLLM caches them). Non-static content within the first N tokens is a violation.
//
// Corpus mode (PredictPrefixCache): vLLM's automatic prefix caching on a stream of
// prompts, processed in order: each full block of `block_size` tokens is identified by a
// hash chained from the first block (vllm/v1/core/kv_cache_utils.py hash_block_tokens);
// a prompt hits the longest run of cached blocks from its start, capped so at least one
// token is computed (kv_cache_manager.py get_computed_blocks: num_tokens - 1); then all of
// its full blocks are cached. A bounded cache evicts the least recently used block, and
// of one prompt's blocks the last first (vLLM frees a request's blocks in reverse order).
// Requests do not overlap in time here, so no block is pinned by a running request.
//
// Thread safety: the functions are reentrant; PredictPrefixCache may run concurrently on
// different inputs.

#ifndef TTFT_LINT_H_
#define TTFT_LINT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/core.h"
#include "ttft/template.h"
#include "ttft/tokenizer.h"

namespace ttft {

// ---------------------------------------------------------------------------
// Prefix-cache prediction (corpus mode; also the what-if's building block)
// ---------------------------------------------------------------------------

struct PrefixCacheOptions {
  int block_size = 16;  // tokens per KV block; REQUIRES: > 0
  // Cache capacity in blocks; < 0: unbounded (no eviction).
  int64_t capacity_blocks = -1;
};

struct PrefixCachePrediction {
  int64_t prompts = 0;
  int64_t prompt_tokens = 0;  // vLLM's prefix-cache "queries"
  int64_t hit_tokens = 0;     // vLLM's prefix-cache "hits" (whole blocks)
  int64_t evicted_blocks = 0;
  int64_t peak_cached_blocks = 0;
  // hit_tokens / prompt_tokens (0 for no tokens).
  double hit_rate() const {
    return prompt_tokens > 0 ? static_cast<double>(hit_tokens) / static_cast<double>(prompt_tokens)
                             : 0.0;
  }
  // Cached tokens of each prompt, in order (vLLM's num_cached_tokens).
  std::vector<int64_t> cached_tokens;
};

// The prefix-cache hit rate of `prompts` (token ids) processed in order.
// REQUIRES: options.block_size > 0.
PrefixCachePrediction PredictPrefixCache(const std::vector<std::vector<int32_t>>& prompts,
                                         const PrefixCacheOptions& options);

// Where the most common prefixes of a corpus split (the shared-prefix tree over blocks).
struct Divergence {
  int64_t shared_tokens = 0;  // the prefix all `prompts` share (whole blocks)
  int64_t prompts = 0;        // prompts through this prefix
  int64_t branches = 0;       // distinct next blocks (prompts ending here not counted)
  int64_t first_prompt = 0;   // index of a prompt through it (0-based)
  // The most common continuations: a prompt index and how many prompts take it.
  std::vector<std::pair<int64_t, int64_t>> top_branches;
};

// The `top` branching points carrying the most prompts (ties: the longer prefix first).
std::vector<Divergence> FindDivergences(const std::vector<std::vector<int32_t>>& prompts,
                                        int block_size, int top = 5);

// ---------------------------------------------------------------------------
// Template mode
// ---------------------------------------------------------------------------

enum class VarClass : uint8_t { kStatic, kPerTenant, kPerUser, kPerRequest };
std::string_view ToString(VarClass c);

// One entry of a vars file. `path` is a variable (`messages`) or a path into one
// (`messages[0].content`, `tools[1].function.name`).
struct VarSpec {
  std::string path;
  VarClass cls = VarClass::kStatic;
  std::optional<Value> sample;  // nullopt: a placeholder (kPlaceholderBytes) is used
  int line = 0;                 // in the vars file
};

// A placeholder's length in bytes, for a variable declared with a bare class.
inline constexpr int kPlaceholderBytes = 32;

struct VarsFile {
  std::string path;
  std::vector<VarSpec> vars;
};

// Reads a vars file (YAML): a map from variable or path to `{class: C, sample: V}` or a
// bare class C. Errors name the file, line and key.
Result<VarsFile> ReadVarsFile(const std::string& path);
Result<VarsFile> ParseVarsFile(std::string_view yaml, std::string_view source);

struct LintOptions {
  int64_t first_tokens = 1024;
  int block_size = 16;
};

enum class FindingLevel : uint8_t { kError, kWarning, kNote };

// One reported problem. rule ids: docs/template.md ("TTFT-L001"...).
struct Finding {
  std::string rule_id;
  FindingLevel level = FindingLevel::kWarning;
  std::string message;
  SourcePos pos;  // in the template (line 0: none)
  std::string variable;
};

struct TemplateLintReport {
  std::string template_path;
  std::string vars_path;
  bool approximate_tokens = false;
  int64_t first_tokens = 0;
  int block_size = 16;
  int64_t prompt_tokens = 0;            // of the first render
  int64_t cacheable_prefix_tokens = 0;  // tokens before the first non-static byte
  int64_t cacheable_prefix_blocks = 0;  // full blocks of those
  int64_t first_non_static_byte = -1;   // -1: none (the whole render is static)
  // The first offending source (when first_non_static_byte >= 0).
  std::string offender;  // variable path, "strftime_now()" or "(control flow)"
  std::string offender_class;
  SourcePos offender_pos;          // where the template emitted it
  std::string excerpt;             // the rendered text around the boundary
  std::vector<std::string> notes;  // placeholders used, approximation
  std::vector<Finding> findings;
  bool violation() const;  // any error-level finding
};

// Lints `tmpl` with the variables of `vars`. Errors (kInvalidArgument): a variable the
// template does not read, a path missing from its sample, an undefined variable the
// template prints or uses, a render error, text that is not UTF-8.
Result<TemplateLintReport> LintTemplate(const Template& tmpl, std::string_view template_source,
                                        const VarsFile& vars, const Tokenizer& tokenizer,
                                        const LintOptions& options);

// ---------------------------------------------------------------------------
// Corpus mode
// ---------------------------------------------------------------------------

// A corpus: one prompt per JSONL line, {"prompt": "..."} or {"messages": [...]} (rendered
// with the template, the other variables from the vars file's samples, and
// add_generation_prompt true unless given). Errors name "file:line"; a corpus without a
// prompt is an error.
struct Corpus {
  std::string source;  // the file, for messages
  std::vector<std::string> prompts;
  std::vector<int64_t> lines;  // the file line of each prompt
};
Result<Corpus> ReadCorpus(std::string_view jsonl, std::string_view source, const Template* tmpl,
                          const VarsFile* vars);

struct CorpusLintOptions {
  PrefixCacheOptions cache;
  double min_hit_rate = -1;  // < 0: no threshold
  int threads = 0;           // tokenizer threads; 0: the hardware's
  int top_divergences = 5;
};

struct CorpusReport {
  std::string corpus_path;
  bool approximate_tokens = false;
  PrefixCachePrediction prediction;
  int64_t capacity_blocks = -1;
  int block_size = 16;
  struct Split {
    Divergence where;
    int64_t line = 0;         // corpus line of `where.first_prompt`
    std::string shared_tail;  // the last text before the split
    std::vector<std::pair<std::string, int64_t>> continuations;  // text, prompts
  };
  std::vector<Split> splits;
  std::vector<Finding> findings;
  bool violation() const;
};

// Tokenizes the corpus (in parallel) and predicts its prefix-cache behaviour.
Result<CorpusReport> LintCorpus(const Corpus& corpus, const Tokenizer& tokenizer,
                                const CorpusLintOptions& options);

// ---------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------

// "text", "json", "sarif" (SARIF 2.1.0 for code scanning) or "github" (workflow
// commands, `::error file=...,line=...,col=...::message`). `artifact` is the file the
// findings point into (the template, or the corpus).
Result<std::string> FormatTemplateReport(const TemplateLintReport& r, std::string_view format);
Result<std::string> FormatCorpusReport(const CorpusReport& r, std::string_view format);

// A rule of the SARIF driver's table (docs/template.md lists them).
struct LintRule {
  const char* id;
  const char* name;
  const char* short_text;
  const char* full_text;
  const char* level;  // "error", "warning" or "note"
};

// `findings` as a SARIF 2.1.0 log whose rule table is the lint's (TTFT-L001...) followed
// by `extra_rules` (the what-if's, ttft/whatif.h), locations in `uri`; and as GitHub
// workflow commands for `file`. What the formats above print for sarif and github.
std::string FindingsSarif(const std::vector<Finding>& findings, const std::string& uri,
                          const std::vector<LintRule>& extra_rules = {});
std::string FindingsGithub(const std::vector<Finding>& findings, const std::string& file);

}  // namespace ttft

#endif  // TTFT_LINT_H_
