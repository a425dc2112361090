// The Markdown renderer of a DiagnosisReport (ttft/report.h): ready to paste into a
// postmortem. Every string of the report passes through escape::Markdown
// (ttft/format.h): labels, event fields and file names come from data, and the
// sentences quote them, so none may open markup in GitHub-flavoured Markdown.
#include <fmt/format.h>

#include <cctype>
#include <string>

#include "report/tables.h"
#include "ttft/format.h"
#include "ttft/report.h"

namespace ttft {

using escape::Markdown;
using report::Symptoms;
using report::SymRow;
using report::Terms;

std::string RenderMarkdown(const DiagnosisReport& r) {
  std::string o;
  o += "# TTFT regression diagnosis\n\n";
  o += fmt::format("**Verdict: `{}`** — {}\n\n", ToString(r.verdict), Markdown(r.verdict_reason));
  if (!r.sources.empty()) {
    o += "Inputs: ";
    for (size_t i = 0; i < r.sources.size(); ++i) {
      o += (i == 0 ? "" : ", ") + Markdown(r.sources[i]);
    }
    o += "\n\n";
  }
  if (r.verdict == Verdict::kRegression) {
    o += "## 1. Mitigate now\n\n";
    bool any = false;
    for (const Action& a : r.actions) {
      if (a.kind != "mitigate") continue;
      o += fmt::format("- {} (owner: {})\n", Markdown(a.text), Markdown(a.owner));
      any = true;
    }
    if (!any) o += "- No change near the onset is known; apply the top hypothesis' fix.\n";
    o += "\n";
  }
  o += "## 2. Symptoms\n\n| symptom | baseline | incident | change |\n|---|---|---|---|\n";
  for (const SymRow& s : Symptoms(r)) {
    o += fmt::format("| {} | {} | {} | {} |\n", Markdown(s.name), Markdown(s.before),
                     Markdown(s.after), Markdown(s.change));
  }
  const Decomposition& d = r.decomposition;
  o += "\n## 3. Decomposition\n\nTTFT = front end + queue + prefill, p50 / p90 / p99.\n\n";
  o += "| term | baseline | incident | share of the tail increase |\n|---|---|---|---|\n";
  o += fmt::format("| TTFT | {} | {} | |\n", Terms(d.before_ttft), Terms(d.after_ttft));
  const report::TermShares sh = report::Shares(r);
  o += fmt::format("| front end | {} | {} | {} |\n", Terms(d.before_front_end),
                   Terms(d.after_front_end), Markdown(sh.front_end));
  o += fmt::format("| queue | {} | {} | {} |\n", Terms(d.before_queue), Terms(d.after_queue),
                   Markdown(sh.queue));
  o += fmt::format("| prefill | {} | {} | {} |\n", Terms(d.before_prefill), Terms(d.after_prefill),
                   Markdown(sh.prefill));
  if (!report::StatesShares(r)) o += fmt::format("\n{}.\n", Markdown(report::SharesWithheld(r)));
  o += "\n## 4. Ranked hypotheses\n\n";
  if (!r.hypotheses_assessed) {
    o += "Not assessable: too few requests for a p99 (see the verdict); no cause is ranked.\n";
  }
  int i = 0;
  for (const Hypothesis& h : r.hypotheses) {
    ++i;
    // The id is the rule registry's constant (no data), code-spanned.
    o += fmt::format("{}. **`{}`** (confidence {:.2f}) — {}\n", i, h.id, h.confidence,
                     Markdown(h.title));
    if (i <= 3) {
      for (const EvidenceLine& e : h.evidence) o += fmt::format("   - {}\n", Markdown(e.sentence));
      o += fmt::format("   - *Splitting metric:* {}\n   - *Next check:* {}\n",
                       Markdown(h.splitting_metric), Markdown(h.next_check));
    }
  }
  {
    const report::AttributionText at = report::AttributionLines(r);
    o += "\n## Attribution by counterfactual replay\n\n";
    o += Markdown(at.headline) + "\n\n";
    for (const std::string& l : at.causes) o += fmt::format("- {}\n", Markdown(l));
    if (!at.mitigations.empty()) o += "\nMitigations, in order of share:\n\n";
    for (size_t k = 0; k < at.mitigations.size(); ++k)
      o += fmt::format("{}. {}\n", k + 1, Markdown(at.mitigations[k]));
    if (!at.checks.empty() || !at.notes.empty()) o += "\n";
    for (const std::string& l : at.checks) o += fmt::format("- {}\n", Markdown(l));
    for (const std::string& l : at.notes) o += fmt::format("- {}\n", Markdown(l));
  }
  o += "\n## 5. Where it lives\n\n";
  if (r.hypotheses_assessed && !report::StatesShares(r)) {
    o += r.contributions.empty()
             ? "No significant tail increase to locate.\n\n"
             : "No significant tail increase to locate; the groups whose p99 moved most:\n\n";
  }
  for (const std::string& line : report::WhereItLives(r)) {
    o += fmt::format("- {}\n", Markdown(line));
  }
  if (!r.hypotheses_assessed) {
    o += "- Not assessed: too few requests to credit any group with a tail increase.\n";
  } else if (report::StatesShares(r) && r.contributions.empty() && r.label_changes.empty()) {
    o += "- No single group holds most of the tail increase.\n";
  }
  o += "\n## 6. Why the magnitude fits\n\n";
  o += (r.magnitude.available ? Markdown(r.magnitude.sentence) : std::string("Not estimated.")) +
       "\n";
  o += "\n## 7. Fix and prevention\n\n";
  if (r.actions.empty()) {
    std::string nothing = report::NothingToFix(r);
    nothing[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(nothing[0])));
    o += nothing + ".\n";
  }
  for (const Action& a : r.actions) {
    if (a.kind == "mitigate") continue;
    o += fmt::format("- **{}**: {}{}\n", Markdown(a.kind), Markdown(a.text),
                     a.owner.empty() ? "" : fmt::format(" (owner: {})", Markdown(a.owner)));
  }
  if (!r.annotations.empty()) {
    o += "\n## Timeline of changes\n\n";
    for (const Annotation& a : r.annotations) {
      o += fmt::format("- {}: {} {} {}\n", numfmt::TimePoint(a.at_s), Markdown(a.kind),
                       Markdown(a.target), Markdown(a.detail));
    }
  }
  if (!r.fidelity_notes.empty()) {
    o += "\n## Checks not run and limits\n\n";
    for (const std::string& n : r.fidelity_notes) o += fmt::format("- {}\n", Markdown(n));
  }
  return o;
}

}  // namespace ttft
