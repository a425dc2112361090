// The lint's output formats: text, JSON, SARIF 2.1.0 and GitHub Actions annotations.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ttft/format.h"
#include "ttft/lint.h"

namespace ttft {
namespace {

// The rules, in the order of their ids (docs/template.md).
constexpr LintRule kRules[] = {
    {"TTFT-L001", "non-static-in-prefix",
     "Non-static content within the first tokens of the prompt",
     "A per-tenant, per-user or per-request value (or the clock) is rendered within the first N "
     "tokens, so requests stop sharing their prompt prefix and vLLM's prefix cache misses from "
     "that block on.",
     "error"},
    {"TTFT-L002", "volatile-literal", "Volatile-looking literal in the static prefix",
     "A date, time, UUID or request id written as static text ahead of the shared prefix: when "
     "it changes (per deploy, per day) every cached prefix after it is lost.",
     "warning"},
    {"TTFT-L003", "clock-call", "The template reads the wall clock",
     "strftime_now() or now() renders the current date or time: the text changes every day (or "
     "second), and the prompt prefix with it.",
     "warning"},
    {"TTFT-L004", "unordered-dict-iteration", "Dict serialised in request order",
     "tojson or items() of a non-static dict: its key order follows the request's JSON, so equal "
     "content can render differently and miss the cache.",
     "warning"},
    {"TTFT-L005", "low-hit-rate", "Predicted prefix-cache hit rate below the threshold",
     "The corpus's predicted prefix-cache hit rate (vLLM block semantics, LRU) is below "
     "--min-hit-rate.",
     "error"},
};

const char* LevelName(FindingLevel l) {
  switch (l) {
    case FindingLevel::kError: return "error";
    case FindingLevel::kWarning: return "warning";
    case FindingLevel::kNote: return "note";
  }
  return "note";
}

int RuleIndex(const std::string& id, const std::vector<LintRule>& rules) {
  for (size_t i = 0; i < rules.size(); ++i) {
    if (id == rules[i].id) return static_cast<int>(i);
  }
  return -1;
}

nlohmann::ordered_json FindingsJson(const std::vector<Finding>& fs) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const Finding& f : fs) {
    nlohmann::ordered_json j;
    j["rule"] = f.rule_id;
    j["level"] = LevelName(f.level);
    j["message"] = f.message;
    if (f.pos.line > 0) {
      j["line"] = f.pos.line;
      j["column"] = f.pos.column;
    }
    if (!f.variable.empty()) j["variable"] = f.variable;
    a.push_back(std::move(j));
  }
  return a;
}

}  // namespace

std::string FindingsSarif(const std::vector<Finding>& fs, const std::string& uri,
                          const std::vector<LintRule>& extra_rules) {
  std::vector<LintRule> table(std::begin(kRules), std::end(kRules));
  table.insert(table.end(), extra_rules.begin(), extra_rules.end());
  nlohmann::ordered_json rules = nlohmann::ordered_json::array();
  for (const LintRule& r : table) {
    rules.push_back({{"id", r.id},
                     {"name", r.name},
                     {"shortDescription", {{"text", r.short_text}}},
                     {"fullDescription", {{"text", r.full_text}}},
                     {"help", {{"text", std::string(r.full_text) + " See docs/template.md."}}},
                     {"defaultConfiguration", {{"level", r.level}}}});
  }
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const Finding& f : fs) {
    nlohmann::ordered_json region = {{"startLine", std::max(1, f.pos.line)},
                                     {"startColumn", std::max(1, f.pos.column)}};
    results.push_back(
        {{"ruleId", f.rule_id},
         {"ruleIndex", RuleIndex(f.rule_id, table)},
         {"level", LevelName(f.level)},
         {"message", {{"text", f.message}}},
         {"locations",
          {{{"physicalLocation",
             {{"artifactLocation", {{"uri", uri}}}, {"region", std::move(region)}}}}}}});
  }
  nlohmann::ordered_json doc = {
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs",
       {{{"tool",
          {{"driver",
            {{"name", "ttft-lint"},
             {"informationUri", "https://github.com/ttft/ttft/blob/main/docs/template.md"},
             {"version", TTFT_VERSION},
             {"rules", std::move(rules)}}}}},
         {"results", std::move(results)}}}}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

// GitHub workflow-command escaping (actions/toolkit command.ts).
std::string EscapeData(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '%') {
      o += "%25";
    } else if (c == '\r') {
      o += "%0D";
    } else if (c == '\n') {
      o += "%0A";
    } else {
      o.push_back(c);
    }
  }
  return o;
}
std::string EscapeProperty(std::string_view s) {
  std::string o;
  for (char c : EscapeData(s)) {
    if (c == ':') {
      o += "%3A";
    } else if (c == ',') {
      o += "%2C";
    } else {
      o.push_back(c);
    }
  }
  return o;
}

}  // namespace

std::string FindingsGithub(const std::vector<Finding>& fs, const std::string& file) {
  std::string out;
  for (const Finding& f : fs) {
    out += fmt::format("::{} file={},line={},col={},title={}::{}\n",
                       LevelName(f.level) == std::string("note") ? "notice" : LevelName(f.level),
                       EscapeProperty(file), std::max(1, f.pos.line), std::max(1, f.pos.column),
                       EscapeProperty(f.rule_id), EscapeData(f.message));
  }
  return out;
}

Result<std::string> FormatTemplateReport(const TemplateLintReport& r, std::string_view format) {
  if (format == "sarif") return FindingsSarif(r.findings, r.template_path);
  if (format == "github") return FindingsGithub(r.findings, r.template_path);
  if (format == "json") {
    nlohmann::ordered_json j;
    j["template"] = r.template_path;
    j["vars"] = r.vars_path;
    j["result"] = r.violation() ? "fail" : "pass";
    j["approximate_tokens"] = r.approximate_tokens;
    j["first_tokens"] = r.first_tokens;
    j["block_size"] = r.block_size;
    j["prompt_tokens"] = r.prompt_tokens;
    j["cacheable_prefix_tokens"] = r.cacheable_prefix_tokens;
    j["cacheable_prefix_blocks"] = r.cacheable_prefix_blocks;
    if (r.first_non_static_byte >= 0) {
      j["first_non_static"] = {{"byte", r.first_non_static_byte}, {"source", r.offender},
                               {"class", r.offender_class},       {"line", r.offender_pos.line},
                               {"column", r.offender_pos.column}, {"excerpt", r.excerpt}};
    } else {
      j["first_non_static"] = nullptr;
    }
    j["notes"] = r.notes;
    j["findings"] = FindingsJson(r.findings);
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  if (format != "text") return Status::Invalid(fmt::format("unknown format '{}'", format));
  std::string o = fmt::format("{}: {}\n", r.template_path, r.violation() ? "FAIL" : "pass");
  o += fmt::format("  prompt: {} tokens{}\n", r.prompt_tokens,
                   r.approximate_tokens ? " (approximate: no --tokenizer)" : "");
  o += fmt::format("  cacheable prefix: {} tokens = {} KV block{} of {} (full blocks only)\n",
                   r.cacheable_prefix_tokens, r.cacheable_prefix_blocks,
                   r.cacheable_prefix_blocks == 1 ? "" : "s", r.block_size);
  if (r.first_non_static_byte >= 0) {
    o += fmt::format("  first non-static content: {} ({}) at byte {}", escape::Terminal(r.offender),
                     escape::Terminal(r.offender_class), r.first_non_static_byte);
    if (r.offender_pos.line > 0) {
      o += fmt::format(", emitted at {}:{}:{}", r.template_path, r.offender_pos.line,
                       r.offender_pos.column);
    }
    o += fmt::format("\n    {}\n", escape::Terminal(r.excerpt));
  } else {
    o += "  the whole rendered prompt is static\n";
  }
  for (const Finding& f : r.findings) {
    o += fmt::format("  {} {} {}:{}:{}: {}\n", LevelName(f.level), f.rule_id, r.template_path,
                     std::max(1, f.pos.line), std::max(1, f.pos.column),
                     escape::Terminal(f.message));
  }
  for (const std::string& n : r.notes) o += "  note: " + escape::Terminal(n) + "\n";
  return o;
}

Result<std::string> FormatCorpusReport(const CorpusReport& r, std::string_view format) {
  if (format == "sarif") return FindingsSarif(r.findings, r.corpus_path);
  if (format == "github") return FindingsGithub(r.findings, r.corpus_path);
  const PrefixCachePrediction& p = r.prediction;
  if (format == "json") {
    nlohmann::ordered_json j;
    j["corpus"] = r.corpus_path;
    j["result"] = r.violation() ? "fail" : "pass";
    j["approximate_tokens"] = r.approximate_tokens;
    j["block_size"] = r.block_size;
    if (r.capacity_blocks >= 0) {
      j["capacity_blocks"] = r.capacity_blocks;
    } else {
      j["capacity_blocks"] = nullptr;
    }
    j["prompts"] = p.prompts;
    j["prompt_tokens"] = p.prompt_tokens;
    j["hit_tokens"] = p.hit_tokens;
    j["hit_rate"] = p.hit_rate();
    j["evicted_blocks"] = p.evicted_blocks;
    j["peak_cached_blocks"] = p.peak_cached_blocks;
    nlohmann::ordered_json splits = nlohmann::ordered_json::array();
    for (const auto& s : r.splits) {
      nlohmann::ordered_json c = nlohmann::ordered_json::array();
      for (const auto& [text, n] : s.continuations) c.push_back({{"text", text}, {"prompts", n}});
      splits.push_back({{"shared_tokens", s.where.shared_tokens},
                        {"prompts", s.where.prompts},
                        {"branches", s.where.branches},
                        {"line", s.line},
                        {"shared_tail", s.shared_tail},
                        {"continuations", std::move(c)}});
    }
    j["splits"] = std::move(splits);
    j["findings"] = FindingsJson(r.findings);
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  if (format != "text") return Status::Invalid(fmt::format("unknown format '{}'", format));
  std::string o = fmt::format("{}: {}\n", r.corpus_path, r.violation() ? "FAIL" : "pass");
  o += fmt::format("  {} prompts, {} tokens{}\n", p.prompts, p.prompt_tokens,
                   r.approximate_tokens ? " (approximate: no --tokenizer)" : "");
  o += fmt::format(
      "  predicted prefix-cache hit rate: {:.2f}% ({} of {} tokens; blocks of {}, "
      "{}; {} evictions)\n",
      100 * p.hit_rate(), p.hit_tokens, p.prompt_tokens, r.block_size,
      r.capacity_blocks >= 0 ? fmt::format("capacity {} blocks, LRU", r.capacity_blocks)
                             : std::string("unbounded cache"),
      p.evicted_blocks);
  if (r.splits.empty()) o += "  no shared prefix splits into two or more branches\n";
  for (const auto& s : r.splits) {
    o += fmt::format(
        "  after {} tokens shared by {} prompts ({:.1f}%), {} branches "
        "(first at line {}):\n    ...{}\n",
        s.where.shared_tokens, s.where.prompts,
        p.prompts ? 100.0 * static_cast<double>(s.where.prompts) / static_cast<double>(p.prompts)
                  : 0.0,
        s.where.branches, s.line, escape::Terminal(s.shared_tail));
    for (const auto& [text, n] : s.continuations) {
      o += fmt::format("      -> {}... ({} prompts)\n", escape::Terminal(text), n);
    }
  }
  for (const Finding& f : r.findings) {
    o += fmt::format("  {} {}: {}\n", LevelName(f.level), f.rule_id, escape::Terminal(f.message));
  }
  return o;
}

}  // namespace ttft
