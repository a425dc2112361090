// `ttft lint`: the prompt-template lint and the prompt-corpus prefix-cache prediction
// (ttft/lint.h, docs/template.md).
//
//   ttft lint TEMPLATE --vars vars.yaml [--tokenizer tokenizer.json] [--first-tokens N]
//                      [--block-size 16] [--format text|json|sarif|github] [--output F]
//   ttft lint --corpus prompts.jsonl [--template T [--vars V]] [--tokenizer F]
//             [--block-size 16] [--cache-blocks N] [--min-hit-rate R] [--format ...]
//
// Exit codes: 0 clean, 1 violations (ExitViolation), 2 usage or input errors.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "ttft/lint.h"
#include "ttft/template.h"
#include "ttft/tokenizer.h"

namespace ttft::cli {

namespace {

Result<std::string> ReadWhole(const std::string& path, std::string_view what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::NotFound(fmt::format("{}: cannot open the {}", path, what));
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return Status::IoError(fmt::format("{}: read failed", path));
  return ss.str();
}

}  // namespace

Runner RegisterLint(CLI::App& app) {
  struct Opts {
    std::string template_path, vars, tokenizer, corpus, corpus_template, format = "text", output;
    int64_t first_tokens = 1024;
    int block_size = 16;
    int64_t cache_blocks = -1;
    double min_hit_rate = -1;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("TEMPLATE", o->template_path, "Chat template (Jinja) to lint (template mode)");
  app.add_option("--vars", o->vars,
                 "YAML: variable or path -> {class: static|per_tenant|per_user|per_request, "
                 "sample: V} or a bare class");
  app.add_option("--tokenizer", o->tokenizer,
                 "Hugging Face tokenizer.json; without it token counts are approximate");
  app.add_option("--first-tokens", o->first_tokens,
                 "Fail when non-static content starts within these first tokens")
      ->capture_default_str();
  app.add_option("--block-size", o->block_size, "KV block size in tokens")->capture_default_str();
  app.add_option("--corpus", o->corpus,
                 "JSONL of prompts, {\"prompt\": ...} or {\"messages\": [...]} (corpus mode)");
  app.add_option("--template", o->corpus_template,
                 "Template to render the corpus's chat messages with");
  app.add_option("--cache-blocks", o->cache_blocks,
                 "Prefix-cache capacity in blocks (LRU); default unbounded");
  app.add_option("--min-hit-rate", o->min_hit_rate,
                 "Corpus mode: fail below this predicted hit rate (0-1)");
  app.add_option("--format", o->format, "text, json, sarif (SARIF 2.1.0) or github (annotations)")
      ->check(CLI::IsMember({"text", "json", "sarif", "github"}))
      ->capture_default_str();
  app.add_option("--output", o->output, "Write the report here instead of standard output");
  return [o]() -> Status {
    if (o->block_size <= 0) return Status::Invalid("--block-size must be > 0");
    if (o->first_tokens < 0) return Status::Invalid("--first-tokens must be >= 0");
    Tokenizer tok = Tokenizer::Approximate();
    if (!o->tokenizer.empty()) {
      TTFT_ASSIGN_OR_RETURN(tok, Tokenizer::FromFile(o->tokenizer));
    }
    std::string report;
    bool violation = false;
    if (!o->corpus.empty()) {
      if (!o->template_path.empty()) {
        return Status::Invalid(
            "give either TEMPLATE (template mode) or --corpus (corpus mode); "
            "a corpus's template is --template");
      }
      if (o->min_hit_rate > 1) return Status::Invalid("--min-hit-rate is a fraction in [0, 1]");
      std::optional<Template> tmpl;
      if (!o->corpus_template.empty()) {
        TTFT_ASSIGN_OR_RETURN(std::string src, ReadWhole(o->corpus_template, "template"));
        TTFT_ASSIGN_OR_RETURN(tmpl, Template::Parse(src, o->corpus_template));
      }
      std::optional<VarsFile> vars;
      if (!o->vars.empty()) {
        TTFT_ASSIGN_OR_RETURN(vars, ReadVarsFile(o->vars));
      }
      TTFT_ASSIGN_OR_RETURN(std::string text, ReadWhole(o->corpus, "corpus"));
      TTFT_ASSIGN_OR_RETURN(Corpus corpus, ReadCorpus(text, o->corpus, tmpl ? &*tmpl : nullptr,
                                                      vars ? &*vars : nullptr));
      CorpusLintOptions opt;
      opt.cache.block_size = o->block_size;
      opt.cache.capacity_blocks = o->cache_blocks;
      opt.min_hit_rate = o->min_hit_rate;
      TTFT_ASSIGN_OR_RETURN(CorpusReport rep, LintCorpus(corpus, tok, opt));
      violation = rep.violation();
      TTFT_ASSIGN_OR_RETURN(report, FormatCorpusReport(rep, o->format));
    } else {
      if (o->template_path.empty()) {
        return Status::Invalid("nothing to lint: give TEMPLATE --vars FILE, or --corpus FILE");
      }
      if (o->vars.empty()) {
        return Status::Invalid(
            "template mode needs --vars FILE (each variable's class and "
            "sample)");
      }
      if (!o->corpus_template.empty() || o->cache_blocks >= 0 || o->min_hit_rate >= 0) {
        return Status::Invalid("--template, --cache-blocks and --min-hit-rate are for --corpus");
      }
      TTFT_ASSIGN_OR_RETURN(std::string src, ReadWhole(o->template_path, "template"));
      TTFT_ASSIGN_OR_RETURN(Template tmpl, Template::Parse(src, o->template_path));
      TTFT_ASSIGN_OR_RETURN(VarsFile vars, ReadVarsFile(o->vars));
      LintOptions opt;
      opt.first_tokens = o->first_tokens;
      opt.block_size = o->block_size;
      TTFT_ASSIGN_OR_RETURN(TemplateLintReport rep, LintTemplate(tmpl, src, vars, tok, opt));
      violation = rep.violation();
      TTFT_ASSIGN_OR_RETURN(report, FormatTemplateReport(rep, o->format));
    }
    TTFT_RETURN_IF_ERROR(WriteOutput(report, o->output));
    if (violation) return ExitViolation();
    return Status::Ok();
  };
}

}  // namespace ttft::cli
