// Text, Markdown and JSON renderers of a DiagnosisReport (ttft/report.h).
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "ttft/format.h"
#include "ttft/report.h"

namespace ttft {

using numfmt::Num;
using numfmt::Pct;
using numfmt::Pct1;
using numfmt::Ratio;
using numfmt::Secs;
using numfmt::X;

namespace {

struct SymRow {
  std::string name, before, after, change;
};

std::vector<SymRow> Symptoms(const DiagnosisReport& r) {
  const WindowStats& a = r.baseline;
  const WindowStats& b = r.incident;
  return {
      {"window", fmt::format("[{:.0f},{:.0f}) s", a.from_s, a.to_s),
       fmt::format("[{:.0f},{:.0f}) s", b.from_s, b.to_s), ""},
      {"requests (ok)", fmt::format("{} ({})", a.requests, a.ok),
       fmt::format("{} ({})", b.requests, b.ok), ""},
      {"request rate", fmt::format("{:.2f} rps", a.request_rate_rps),
       fmt::format("{:.2f} rps", b.request_rate_rps),
       X(Ratio(a.request_rate_rps, b.request_rate_rps))},
      {"p50 TTFT", Secs(a.ttft_s.p50), Secs(b.ttft_s.p50), X(Ratio(a.ttft_s.p50, b.ttft_s.p50))},
      {"p99 TTFT", Secs(a.ttft_s.p99), Secs(b.ttft_s.p99), X(Ratio(a.ttft_s.p99, b.ttft_s.p99))},
      {"p99 queue", Secs(a.queue_s.p99), Secs(b.queue_s.p99),
       X(Ratio(a.queue_s.p99, b.queue_s.p99))},
      {"p99 prefill", Secs(a.prefill_s.p99), Secs(b.prefill_s.p99),
       X(Ratio(a.prefill_s.p99, b.prefill_s.p99))},
      {"ITL p50", Secs(a.itl_p50_s), Secs(b.itl_p50_s), X(Ratio(a.itl_p50_s, b.itl_p50_s))},
      {"max ITL p99", Secs(a.itl_max_p99_s), Secs(b.itl_max_p99_s),
       X(Ratio(a.itl_max_p99_s, b.itl_max_p99_s))},
      {"error rate", Pct1(a.error_rate), Pct1(b.error_rate), ""},
      {"replicas", fmt::format("{}", a.replicas), fmt::format("{}", b.replicas), ""},
      {"prefix-cache hit rate", Pct1(a.prefix_cache_hit_rate), Pct1(b.prefix_cache_hit_rate), ""},
      {"prompt tokens p99", Num(a.prompt_tokens_p99), Num(b.prompt_tokens_p99),
       X(Ratio(a.prompt_tokens_p99, b.prompt_tokens_p99))},
      {"output tokens mean", Num(a.output_tokens_mean), Num(b.output_tokens_mean),
       X(Ratio(a.output_tokens_mean, b.output_tokens_mean))},
      {"preemptions / request", fmt::format("{:.3f}", a.preemptions_per_request),
       fmt::format("{:.3f}", b.preemptions_per_request), ""},
  };
}

std::string Terms(const TermQuantiles& t) {
  return fmt::format("{} / {} / {}", Secs(t.p50), Secs(t.p90), Secs(t.p99));
}

nlohmann::json J(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

nlohmann::json TermsJson(const TermQuantiles& t) {
  return {{"p50", J(t.p50)}, {"p90", J(t.p90)}, {"p99", J(t.p99)}};
}

nlohmann::json StatsJson(const WindowStats& w) {
  return {
      {"from_s", J(w.from_s)},
      {"to_s", J(w.to_s)},
      {"requests", w.requests},
      {"ok", w.ok},
      {"errors", w.errors},
      {"rejected_too_long", w.rejected_too_long},
      {"request_rate_rps", J(w.request_rate_rps)},
      {"error_rate", J(w.error_rate)},
      {"ttft_s", TermsJson(w.ttft_s)},
      {"queue_s", TermsJson(w.queue_s)},
      {"prefill_s", TermsJson(w.prefill_s)},
      {"front_end_s", TermsJson(w.front_end_s)},
      {"itl_p50_s", J(w.itl_p50_s)},
      {"itl_max_p99_s", J(w.itl_max_p99_s)},
      {"prefix_cache_hit_rate", J(w.prefix_cache_hit_rate)},
      {"cached_tokens_mean", J(w.cached_tokens_mean)},
      {"uncached_tokens_mean", J(w.uncached_tokens_mean)},
      {"prompt_tokens_p50", J(w.prompt_tokens_p50)},
      {"prompt_tokens_p99", J(w.prompt_tokens_p99)},
      {"output_tokens_mean", J(w.output_tokens_mean)},
      {"output_tokens_p99", J(w.output_tokens_p99)},
      {"preemptions_per_request", J(w.preemptions_per_request)},
      {"prefill_s_per_1k_uncached", J(w.prefill_s_per_1k_uncached)},
      {"concurrency", J(w.concurrency)},
      {"replicas", w.replicas},
      {"kv_usage", J(w.kv_usage)},
      {"from_metrics", w.from_metrics},
  };
}

nlohmann::json AnnotationJson(const Annotation& a) {
  return {{"at_s", a.at_s}, {"kind", a.kind}, {"target", a.target}, {"detail", a.detail}};
}

}  // namespace

nlohmann::json ReportJson(const DiagnosisReport& r) {
  nlohmann::json hyps = nlohmann::json::array();
  for (const Hypothesis& h : r.hypotheses) {
    hyps.push_back({{"id", h.id},
                    {"title", h.title},
                    {"confidence", h.confidence},
                    {"runnable", h.runnable},
                    {"evidence", h.evidence},
                    {"splitting_metric", h.splitting_metric},
                    {"next_check", h.next_check},
                    {"fix", h.fix},
                    {"prevention", h.prevention},
                    {"owners", h.owners}});
  }
  nlohmann::json groups = nlohmann::json::object();
  for (const GroupSplit& g : r.groups) {
    nlohmann::json rows = nlohmann::json::array();
    for (const GroupRow& row : g.rows) {
      if (rows.size() >= 50) break;
      rows.push_back({{"value", row.value},
                      {"share_before", row.share_before},
                      {"share_after", row.share_after},
                      {"contribution", row.contribution},
                      {"requests_before", row.before.requests},
                      {"requests_after", row.after.requests},
                      {"ttft_p99_before_s", J(row.before.ttft_s.p99)},
                      {"ttft_p99_after_s", J(row.after.ttft_s.p99)},
                      {"hit_rate_before", J(row.before.prefix_cache_hit_rate)},
                      {"hit_rate_after", J(row.after.prefix_cache_hit_rate)},
                      {"prompt_tokens_p99_before", J(row.before.prompt_tokens_p99)},
                      {"prompt_tokens_p99_after", J(row.after.prompt_tokens_p99)},
                      {"replicas_before", row.before.replicas},
                      {"replicas_after", row.after.replicas}});
    }
    groups[g.dimension] = rows;
  }
  const Decomposition& d = r.decomposition;
  nlohmann::json actions = nlohmann::json::array();
  for (const Action& a : r.actions) {
    actions.push_back({{"kind", a.kind}, {"text", a.text}, {"owner", a.owner}});
  }
  nlohmann::json ann = nlohmann::json::array(), sus = nlohmann::json::array();
  for (const Annotation& a : r.annotations) ann.push_back(AnnotationJson(a));
  for (const Annotation& a : r.suspect_changes) sus.push_back(AnnotationJson(a));
  const Magnitude& m = r.magnitude;
  return {
      {"schema_version", kReportSchemaVersion},
      {"verdict", std::string(ToString(r.verdict))},
      {"verdict_reason", r.verdict_reason},
      {"sources", r.sources},
      {"change_at_s", J(r.change_at_s)},
      {"onset_s", J(r.onset_s)},
      {"significance",
       {{"p99_ratio", J(r.p99_ratio.estimate)},
        {"p99_ratio_ci", {J(r.p99_ratio.lower), J(r.p99_ratio.upper)}},
        {"ci_level", r.p99_ratio.level},
        {"p50_ratio", J(r.p50_ratio)},
        {"mann_whitney_p", J(r.mann_whitney_p)},
        {"hodges_lehmann_shift_s", J(r.hodges_lehmann_shift_s)},
        {"tail_test_p", J(r.tail_test_p)},
        {"samples_baseline", r.test_samples_baseline},
        {"samples_incident", r.test_samples_incident}}},
      {"baseline", StatsJson(r.baseline)},
      {"incident", StatsJson(r.incident)},
      {"decomposition",
       {{"before",
         {{"ttft_s", TermsJson(d.before_ttft)},
          {"front_end_s", TermsJson(d.before_front_end)},
          {"queue_s", TermsJson(d.before_queue)},
          {"prefill_s", TermsJson(d.before_prefill)}}},
        {"after",
         {{"ttft_s", TermsJson(d.after_ttft)},
          {"front_end_s", TermsJson(d.after_front_end)},
          {"queue_s", TermsJson(d.after_queue)},
          {"prefill_s", TermsJson(d.after_prefill)}}},
        {"tail_mean_before",
         {{"ttft_s", J(d.tail_before_ttft)},
          {"front_end_s", J(d.tail_before_front_end)},
          {"queue_s", J(d.tail_before_queue)},
          {"prefill_s", J(d.tail_before_prefill)}}},
        {"tail_mean_after",
         {{"ttft_s", J(d.tail_after_ttft)},
          {"front_end_s", J(d.tail_after_front_end)},
          {"queue_s", J(d.tail_after_queue)},
          {"prefill_s", J(d.tail_after_prefill)}}},
        {"share_of_p99_increase",
         {{"front_end", J(d.share_front_end)},
          {"queue", J(d.share_queue)},
          {"prefill", J(d.share_prefill)}}},
        {"dominant", d.dominant}}},
      {"hypotheses", hyps},
      {"hypotheses_assessed", r.hypotheses_assessed},
      {"groups", groups},
      {"contributions", r.contributions},
      {"explanation",
       {{"available", m.available},
        {"cost_model", m.cost_model},
        {"prefill_compute_before_s", J(m.prefill_compute_before_s)},
        {"prefill_compute_after_s", J(m.prefill_compute_after_s)},
        {"utilisation_before", J(m.utilisation_before)},
        {"utilisation_after", J(m.utilisation_after)},
        {"busiest_replica_before", m.busiest_replica_before},
        {"busiest_replica_after", m.busiest_replica_after},
        {"kingman_wait_before_s", J(m.kingman_wait_before_s)},
        {"kingman_wait_after_s", J(m.kingman_wait_after_s)},
        {"pk_wait_before_s", J(m.pk_wait_before_s)},
        {"pk_wait_after_s", J(m.pk_wait_after_s)},
        {"observed_queue_mean_before_s", J(m.observed_queue_mean_before_s)},
        {"observed_queue_mean_after_s", J(m.observed_queue_mean_after_s)},
        {"verdict", m.verdict},
        {"sentence", m.sentence}}},
      {"actions", actions},
      {"annotations", ann},
      {"suspect_changes", sus},
      {"label_changes", r.label_changes},
      {"fidelity_notes", r.fidelity_notes},
  };
}

std::string RenderJson(const DiagnosisReport& r) { return ReportJson(r).dump(2) + "\n"; }

std::string RenderText(const DiagnosisReport& r, bool colour) {
  const char* bold = colour ? "\033[1m" : "";
  const char* red = colour ? "\033[31m" : "";
  const char* green = colour ? "\033[32m" : "";
  const char* reset = colour ? "\033[0m" : "";
  std::string o;
  const bool reg = r.verdict == Verdict::kRegression;
  o += fmt::format("{}Verdict: {}{}{}\n  {}\n", bold, reg ? red : green, ToString(r.verdict), reset,
                   r.verdict_reason);
  if (reg) {
    o += fmt::format("\n{}1. Mitigate now{}\n", bold, reset);
    bool any = false;
    for (const Action& a : r.actions) {
      if (a.kind != "mitigate") continue;
      o += fmt::format("  - {} [{}]\n", a.text, a.owner);
      any = true;
    }
    if (!any) o += "  - no change near the onset is known; see the top hypothesis' fix below\n";
  }
  o += fmt::format("\n{}2. Symptoms{}\n", bold, reset);
  o += fmt::format("  {:<24}{:>16}{:>16}{:>10}\n", "", "baseline", "incident", "change");
  for (const SymRow& s : Symptoms(r)) {
    o += fmt::format("  {:<24}{:>16}{:>16}{:>10}\n", s.name, s.before, s.after, s.change);
  }
  const Decomposition& d = r.decomposition;
  o += fmt::format("\n{}3. Decomposition{} (TTFT = front end + queue + prefill; p50 / p90 / p99)\n",
                   bold, reset);
  o += fmt::format("  {:<10}{:>30}{:>30}\n", "term", "baseline", "incident");
  o += fmt::format("  {:<10}{:>30}{:>30}\n", "TTFT", Terms(d.before_ttft), Terms(d.after_ttft));
  o += fmt::format("  {:<10}{:>30}{:>30}\n", "front end", Terms(d.before_front_end),
                   Terms(d.after_front_end));
  o += fmt::format("  {:<10}{:>30}{:>30}\n", "queue", Terms(d.before_queue), Terms(d.after_queue));
  o += fmt::format("  {:<10}{:>30}{:>30}\n", "prefill", Terms(d.before_prefill),
                   Terms(d.after_prefill));
  o += fmt::format("  Among the slowest 1%: queue {} of the increase, prefill {}, front end {}{}\n",
                   Pct(d.share_queue), Pct(d.share_prefill), Pct(d.share_front_end),
                   d.dominant.empty() ? "" : fmt::format(" -> the {} moved the tail", d.dominant));
  o += fmt::format("\n{}4. Ranked hypotheses{}\n", bold, reset);
  if (!r.hypotheses_assessed) {
    o += "  not assessable: too few requests for a p99 (see the verdict); no cause is ranked\n";
  }
  int i = 0;
  for (const Hypothesis& h : r.hypotheses) {
    ++i;
    if (i > 3 && h.confidence < 0.05) continue;
    o += fmt::format("  {}{}. {} ({:.2f}){} {}\n", i == 1 ? bold : "", i, h.id, h.confidence, reset,
                     h.title);
    if (i <= 3) {
      for (const std::string& e : h.evidence) o += fmt::format("       - {}\n", e);
      o += fmt::format("       splitting metric: {}\n       next check: {}\n", h.splitting_metric,
                       h.next_check);
    }
  }
  o += fmt::format("\n{}5. Where it lives{}\n", bold, reset);
  if (!r.hypotheses_assessed) {
    o += "  not assessed: too few requests to credit any group with a tail increase\n";
  } else if (r.contributions.empty()) {
    o += "  no single group holds most of the tail increase\n";
  }
  for (const std::string& c : r.contributions) o += fmt::format("  - {}\n", c);
  for (const std::string& c : r.label_changes) o += fmt::format("  - {}\n", c);
  o += fmt::format("\n{}6. Why the magnitude fits{}\n", bold, reset);
  o += fmt::format("  {}\n", r.magnitude.available ? r.magnitude.sentence : "not estimated");
  o += fmt::format("\n{}7. Fix and prevention{}\n", bold, reset);
  if (r.actions.empty()) o += "  nothing to fix: no regression\n";
  for (const Action& a : r.actions) {
    if (a.kind == "mitigate") continue;
    o += fmt::format("  - {}: {}{}\n", a.kind, a.text,
                     a.owner.empty() ? "" : fmt::format(" [owner: {}]", a.owner));
  }
  if (!r.fidelity_notes.empty()) {
    o += fmt::format("\n{}Checks not run / limits{}\n", bold, reset);
    for (const std::string& n : r.fidelity_notes) o += fmt::format("  - {}\n", n);
  }
  return o;
}

std::string RenderMarkdown(const DiagnosisReport& r) {
  std::string o;
  o += "# TTFT regression diagnosis\n\n";
  o += fmt::format("**Verdict: `{}`** — {}\n\n", ToString(r.verdict), r.verdict_reason);
  if (!r.sources.empty()) o += fmt::format("Inputs: {}\n\n", fmt::join(r.sources, ", "));
  if (r.verdict == Verdict::kRegression) {
    o += "## 1. Mitigate now\n\n";
    bool any = false;
    for (const Action& a : r.actions) {
      if (a.kind != "mitigate") continue;
      o += fmt::format("- {} (owner: {})\n", a.text, a.owner);
      any = true;
    }
    if (!any) o += "- No change near the onset is known; apply the top hypothesis' fix.\n";
    o += "\n";
  }
  o += "## 2. Symptoms\n\n| symptom | baseline | incident | change |\n|---|---|---|---|\n";
  for (const SymRow& s : Symptoms(r)) {
    o += fmt::format("| {} | {} | {} | {} |\n", s.name, s.before, s.after, s.change);
  }
  const Decomposition& d = r.decomposition;
  o += "\n## 3. Decomposition\n\nTTFT = front end + queue + prefill, p50 / p90 / p99.\n\n";
  o += "| term | baseline | incident | share of the tail increase |\n|---|---|---|---|\n";
  o += fmt::format("| TTFT | {} | {} | |\n", Terms(d.before_ttft), Terms(d.after_ttft));
  o += fmt::format("| front end | {} | {} | {} |\n", Terms(d.before_front_end),
                   Terms(d.after_front_end), Pct(d.share_front_end));
  o += fmt::format("| queue | {} | {} | {} |\n", Terms(d.before_queue), Terms(d.after_queue),
                   Pct(d.share_queue));
  o += fmt::format("| prefill | {} | {} | {} |\n", Terms(d.before_prefill), Terms(d.after_prefill),
                   Pct(d.share_prefill));
  o += "\n## 4. Ranked hypotheses\n\n";
  if (!r.hypotheses_assessed) {
    o += "Not assessable: too few requests for a p99 (see the verdict); no cause is ranked.\n";
  }
  int i = 0;
  for (const Hypothesis& h : r.hypotheses) {
    ++i;
    o += fmt::format("{}. **`{}`** (confidence {:.2f}) — {}\n", i, h.id, h.confidence, h.title);
    if (i <= 3) {
      for (const std::string& e : h.evidence) o += fmt::format("   - {}\n", e);
      o += fmt::format("   - *Splitting metric:* {}\n   - *Next check:* {}\n", h.splitting_metric,
                       h.next_check);
    }
  }
  o += "\n## 5. Where it lives\n\n";
  for (const std::string& c : r.contributions) o += fmt::format("- {}\n", c);
  for (const std::string& c : r.label_changes) o += fmt::format("- {}\n", c);
  if (!r.hypotheses_assessed) {
    o += "- Not assessed: too few requests to credit any group with a tail increase.\n";
  } else if (r.contributions.empty() && r.label_changes.empty()) {
    o += "- No single group holds most of the tail increase.\n";
  }
  o += "\n## 6. Why the magnitude fits\n\n";
  o += (r.magnitude.available ? r.magnitude.sentence : std::string("Not estimated.")) + "\n";
  o += "\n## 7. Fix and prevention\n\n";
  if (r.actions.empty()) o += "Nothing to fix: no regression.\n";
  for (const Action& a : r.actions) {
    if (a.kind == "mitigate") continue;
    o += fmt::format("- **{}**: {}{}\n", a.kind, a.text,
                     a.owner.empty() ? "" : fmt::format(" (owner: {})", a.owner));
  }
  if (!r.annotations.empty()) {
    o += "\n## Timeline of changes\n\n";
    for (const Annotation& a : r.annotations) {
      o += fmt::format("- t={:.0f} s: {} {} {}\n", a.at_s, a.kind, a.target, a.detail);
    }
  }
  if (!r.fidelity_notes.empty()) {
    o += "\n## Checks not run and limits\n\n";
    for (const std::string& n : r.fidelity_notes) o += fmt::format("- {}\n", n);
  }
  return o;
}

}  // namespace ttft
