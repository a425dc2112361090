// `ttft lint`: the prompt-template lint and the prompt-corpus prefix-cache prediction
// (ttft/lint.h, docs/template.md).
//
//   ttft lint TEMPLATE --vars vars.yaml [--tokenizer tokenizer.json] [--first-tokens N]
//                      [--block-size 16] [--format text|json|sarif|github] [--output F]
//   ttft lint --corpus prompts.jsonl [--template T [--vars V]] [--tokenizer F]
//             [--block-size 16] [--cache-blocks N] [--min-hit-rate R] [--format ...]
//   ttft lint OLD --diff NEW --vars vars.yaml --scenario S [--scenario-template NAME]
//             [--tenant T] [--seeds 5] [--keep-segments a,b] [--max-p99-increase 0.1]
//             [--max-hit-rate-drop 0.05] [--tokenizer F] [--format ...]   (the what-if)
//   ttft lint --corpus OLD.jsonl --diff-corpus NEW.jsonl [...corpus flags]
//             [--max-hit-rate-drop 0.05]
//
// Exit codes: 0 clean, 1 violations (ExitViolation), 2 usage or input errors.
#include <fmt/format.h>

#include <cmath>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "ttft/input.h"
#include "ttft/lint.h"
#include "ttft/template.h"
#include "ttft/tokenizer.h"
#include "ttft/whatif.h"

namespace ttft::cli {

namespace {

// A template, vars file, corpus or tokenizer, read whole: gzip is decompressed, and the
// size is bounded (kMaxWholeFileBytes). A folder is an error (it read as an empty
// template that linted, or an empty corpus that passed).
Result<std::string> ReadWhole(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::Invalid(fmt::format("{}: is a folder, expected the {} file", path, what));
  }
  if (!std::filesystem::exists(path, ec)) {
    return Status::NotFound(fmt::format("{}: cannot open the {}", path, what));
  }
  return ReadInputFile(path);
}

struct LintOpts {
  std::string template_path, vars, tokenizer, corpus, corpus_template, format = "text", output;
  int64_t first_tokens = 1024;
  int block_size = 16;
  int64_t cache_blocks = -1;
  double min_hit_rate = -1;
  // Diff mode (the what-if).
  std::string diff, diff_corpus, scenario, scenario_template, tenant, calibration;
  std::vector<std::string> keep_segments;
  int seeds = 5;
  int threads = 0;
  double max_p99_increase = 0.10, max_hit_rate_drop = 0.05;
};

Result<Tokenizer> LoadTokenizer(const LintOpts& o) {
  if (o.tokenizer.empty()) return Tokenizer::Approximate();
  return Tokenizer::FromFile(o.tokenizer);
}

// Diff mode: two template versions through the simulator, or two corpora's hit rates.
Status RunDiff(const LintOpts& o, const CLI::App& app) {
  if (o.block_size <= 0) return Status::Invalid("--block-size must be > 0");
  if (o.max_hit_rate_drop > 1 || std::isnan(o.max_hit_rate_drop)) {
    return Status::Invalid("--max-hit-rate-drop is a fraction in [0, 1] (< 0: never fail)");
  }
  if (!std::isfinite(o.max_p99_increase)) {  // NaN compared false: the gate never failed
    return Status::Invalid("--max-p99-increase must be a finite fraction (< 0: never fail)");
  }
  TTFT_ASSIGN_OR_RETURN(Tokenizer tok, LoadTokenizer(o));
  std::string report;
  bool violation = false;
  if (!o.diff_corpus.empty()) {
    if (o.corpus.empty() || !o.template_path.empty() || !o.diff.empty()) {
      return Status::Invalid("a corpus diff is --corpus OLD.jsonl --diff-corpus NEW.jsonl");
    }
    for (const char* f : {"--scenario", "--scenario-template", "--tenant", "--seeds",
                          "--keep-segments", "--max-p99-increase", "--threads"}) {
      if (app.count(f) > 0) {
        return Status::Invalid(fmt::format(
            "{}: a corpus diff predicts the hit rate only; TTFT through the simulator is "
            "predicted for template diffs (TEMPLATE --diff NEW --scenario S; docs/template.md)",
            f));
      }
    }
    std::optional<Template> tmpl;
    if (!o.corpus_template.empty()) {
      TTFT_ASSIGN_OR_RETURN(std::string src, ReadWhole(o.corpus_template, "template"));
      TTFT_ASSIGN_OR_RETURN(tmpl, Template::Parse(src, o.corpus_template));
    }
    std::optional<VarsFile> vars;
    if (!o.vars.empty()) {
      TTFT_ASSIGN_OR_RETURN(vars, ReadVarsFile(o.vars));
    }
    if (o.min_hit_rate >= 0) {
      return Status::Invalid(
          "--min-hit-rate is for corpus mode; a corpus diff's threshold is --max-hit-rate-drop");
    }
    CorpusLintOptions opt;
    opt.cache.block_size = o.block_size;
    opt.cache.capacity_blocks = o.cache_blocks;
    CorpusReport reports[2];
    const std::string* paths[2] = {&o.corpus, &o.diff_corpus};
    for (int i = 0; i < 2; ++i) {
      TTFT_ASSIGN_OR_RETURN(std::string text, ReadWhole(*paths[i], "corpus"));
      TTFT_ASSIGN_OR_RETURN(Corpus corpus, ReadCorpus(text, *paths[i], tmpl ? &*tmpl : nullptr,
                                                      vars ? &*vars : nullptr));
      TTFT_ASSIGN_OR_RETURN(reports[i], LintCorpus(corpus, tok, opt));
    }
    CorpusDiffReport d =
        DiffCorpora(std::move(reports[0]), std::move(reports[1]), o.max_hit_rate_drop);
    violation = d.violation();
    TTFT_ASSIGN_OR_RETURN(report, FormatCorpusDiffReport(d, o.format));
  } else {
    if (o.template_path.empty()) {
      return Status::Invalid("--diff NEW needs TEMPLATE, the old version");
    }
    if (!o.corpus.empty()) {
      return Status::Invalid("give TEMPLATE --diff NEW, or --corpus OLD --diff-corpus NEW");
    }
    if (o.vars.empty()) {
      return Status::Invalid("diff mode needs --vars FILE (each variable's class and sample)");
    }
    if (o.scenario.empty()) {
      return Status::Invalid(
          "diff mode needs --scenario FILE or a built-in name: the traffic to predict on");
    }
    if (!o.corpus_template.empty() || o.cache_blocks >= 0 || o.min_hit_rate >= 0) {
      return Status::Invalid("--template, --cache-blocks and --min-hit-rate are for --corpus");
    }
    if (o.seeds < 1 || o.seeds > 1000) return Status::Invalid("--seeds must be in [1, 1000]");
    if (o.threads < 0) return Status::Invalid("--threads must be >= 0");
    TTFT_ASSIGN_OR_RETURN(VarsFile vars, ReadVarsFile(o.vars));
    LintOptions lopt;
    lopt.first_tokens = o.first_tokens;
    lopt.block_size = o.block_size;
    TemplateLintReport lints[2];
    const std::string* paths[2] = {&o.template_path, &o.diff};
    for (int i = 0; i < 2; ++i) {
      TTFT_ASSIGN_OR_RETURN(std::string src, ReadWhole(*paths[i], "template"));
      TTFT_ASSIGN_OR_RETURN(Template tmpl, Template::Parse(src, *paths[i]));
      TTFT_ASSIGN_OR_RETURN(lints[i], LintTemplate(tmpl, src, vars, tok, lopt));
    }
    TTFT_ASSIGN_OR_RETURN(Scenario sc, LoadScenarioArg(o.scenario));
    if (!o.calibration.empty()) {
      TTFT_ASSIGN_OR_RETURN(CalibrationProfile prof, ReadCalibrationProfile(o.calibration));
      ApplyCalibration(sc, prof);
    }
    WhatIfOptions w;
    w.template_name = o.scenario_template;
    if (w.template_name.empty()) {
      if (sc.workload.templates.size() != 1) {
        std::string names;
        for (const auto& t : sc.workload.templates) names += (names.empty() ? "" : ", ") + t.name;
        return Status::Invalid(
            fmt::format("{}: the scenario has {} templates ({}): say which one TEMPLATE is with "
                        "--scenario-template NAME",
                        o.scenario, sc.workload.templates.size(), names.empty() ? "none" : names));
      }
      w.template_name = sc.workload.templates.front().name;
    }
    w.tenant = o.tenant;
    w.seeds = o.seeds;
    w.keep_segments_set = app.count("--keep-segments") > 0;
    w.keep_segments = o.keep_segments;
    w.max_p99_increase = o.max_p99_increase;
    w.max_hit_rate_drop = o.max_hit_rate_drop;
    w.threads = o.threads;
    TTFT_ASSIGN_OR_RETURN(WhatIfReport rep, PredictTemplateChange(lints[0], lints[1], sc, w));
    violation = rep.violation();
    TTFT_ASSIGN_OR_RETURN(report, FormatWhatIfReport(rep, o.format));
  }
  TTFT_RETURN_IF_ERROR(WriteOutput(report, o.output));
  if (violation) return ExitViolation();
  return Status::Ok();
}

}  // namespace

Runner RegisterLint(CLI::App& app) {
  auto o = std::make_shared<LintOpts>();
  app.add_option("TEMPLATE", o->template_path, "Chat template (Jinja) to lint (template mode)");
  app.add_option("--vars", o->vars,
                 "YAML: variable or path -> {class: static|per_tenant|per_user|per_request, "
                 "sample: V} or a bare class");
  app.add_option("--tokenizer", o->tokenizer,
                 "Hugging Face tokenizer.json; without it token counts are approximate");
  app.add_option("--first-tokens", o->first_tokens,
                 "Fail when non-static content starts within these first tokens")
      ->check(Integer<int64_t>())
      ->capture_default_str();
  app.add_option("--block-size", o->block_size, "KV block size in tokens")
      ->check(Integer<int>())
      ->capture_default_str();
  app.add_option("--corpus", o->corpus,
                 "JSONL of prompts, {\"prompt\": ...} or {\"messages\": [...]} (corpus mode)");
  app.add_option("--template", o->corpus_template,
                 "Template to render the corpus's chat messages with");
  app.add_option("--cache-blocks", o->cache_blocks,
                 "Prefix-cache capacity in blocks (LRU); default unbounded")
      ->check(Integer<int64_t>());
  app.add_option("--min-hit-rate", o->min_hit_rate,
                 "Corpus mode: fail below this predicted hit rate (0-1)");
  app.add_option("--format", o->format, "text, json, sarif (SARIF 2.1.0) or github (annotations)")
      ->check(CLI::IsMember({"text", "json", "sarif", "github"}))
      ->capture_default_str();
  app.add_option("--output", o->output, "Write the report here instead of standard output");
  app.add_option("--diff", o->diff,
                 "Diff mode: the new version of TEMPLATE; predicts the change through --scenario");
  app.add_option("--diff-corpus", o->diff_corpus,
                 "Diff mode: the new corpus to compare --corpus with (hit rate)");
  app.add_option("--scenario", o->scenario,
                 "Diff mode: the scenario (file or built-in name) to simulate both versions on");
  app.add_option("--calibration", o->calibration,
                 "Diff mode: a calibration profile (ttft calibrate) applied to the scenario's "
                 "replicas");
  app.add_option("--scenario-template", o->scenario_template,
                 "Diff mode: the scenario's template that TEMPLATE is (default: its only one)");
  app.add_option("--tenant", o->tenant,
                 "Diff mode: switch only this tenant (default: every tenant on the template)");
  app.add_option("--seeds", o->seeds, "Diff mode: simulations per version (seed, seed+1, ...)")
      ->check(Integer<int>())
      ->capture_default_str();
  app.add_option("--keep-segments", o->keep_segments,
                 "Diff mode: scenario segments kept as request content (default: the "
                 "per_request segments whose length is a distribution)")
      ->delimiter(',');
  app.add_option("--max-p99-increase", o->max_p99_increase,
                 "Diff mode: fail when every seed predicts a p99 TTFT rise above this fraction "
                 "(< 0: never)")
      ->capture_default_str();
  app.add_option("--max-hit-rate-drop", o->max_hit_rate_drop,
                 "Diff mode: fail when the predicted hit rate drops by more than this (0-1; "
                 "< 0: never)")
      ->capture_default_str();
  app.add_option("--threads", o->threads, "Diff mode: simulation threads (0: all cores)")
      ->check(Integer<int>())
      ->capture_default_str();
  const CLI::App* sub = &app;  // outlives the runner (main.cc)
  return [o, sub]() -> Status {
    if (!o->diff.empty() || !o->diff_corpus.empty()) return RunDiff(*o, *sub);
    for (const char* f :
         {"--scenario", "--scenario-template", "--tenant", "--seeds", "--keep-segments",
          "--max-p99-increase", "--max-hit-rate-drop", "--threads", "--calibration"}) {
      if (sub->count(f) > 0) {
        return Status::Invalid(fmt::format(
            "{} is for diff mode (TEMPLATE --diff NEW, or --corpus OLD --diff-corpus NEW)", f));
      }
    }
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
      if (o->min_hit_rate > 1 || std::isnan(o->min_hit_rate)) {
        return Status::Invalid("--min-hit-rate is a fraction in [0, 1]");
      }
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
