// The terminal text renderer of a DiagnosisReport (ttft/report.h). Every string of the
// report passes through escape::Terminal (ttft/format.h): labels, event fields and
// file names come from data, and must not reach the terminal as control sequences.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "report/tables.h"
#include "ttft/format.h"
#include "ttft/report.h"

namespace ttft {

namespace {
std::string Safe(std::string_view s) { return escape::Terminal(s); }
}  // namespace
using report::Symptoms;
using report::SymRow;
using report::Terms;

std::string RenderText(const DiagnosisReport& r, bool colour) {
  const char* bold = colour ? "\033[1m" : "";
  const char* red = colour ? "\033[31m" : "";
  const char* green = colour ? "\033[32m" : "";
  const char* reset = colour ? "\033[0m" : "";
  std::string o;
  const bool reg = r.verdict == Verdict::kRegression;
  o += fmt::format("{}Verdict: {}{}{}\n  {}\n", bold, reg ? red : green, ToString(r.verdict), reset,
                   Safe(r.verdict_reason));
  if (reg) {
    o += fmt::format("\n{}1. Mitigate now{}\n", bold, reset);
    bool any = false;
    for (const Action& a : r.actions) {
      if (a.kind != "mitigate") continue;
      o += fmt::format("  - {} [{}]\n", Safe(a.text), Safe(a.owner));
      any = true;
    }
    if (!any) o += "  - no change near the onset is known; see the top hypothesis' fix below\n";
  }
  o += fmt::format("\n{}2. Symptoms{}\n", bold, reset);
  std::vector<SymRow> rows = Symptoms(r);
  // Clock-time windows (epoch inputs) do not fit the column: stated above the table,
  // the row gives their lengths.
  if (!rows.empty() && rows[0].name == "window" &&
      (rows[0].before.size() > 16 || rows[0].after.size() > 16)) {
    o += fmt::format("  baseline {}\n  incident {}\n", rows[0].before, rows[0].after);
    rows[0].name = "window length";
    rows[0].before = numfmt::Secs(r.baseline.to_s - r.baseline.from_s);
    rows[0].after = numfmt::Secs(r.incident.to_s - r.incident.from_s);
  }
  o += fmt::format("  {:<24}{:>16}{:>16}{:>10}\n", "", "baseline", "incident", "change");
  for (const SymRow& s : rows) {
    o += fmt::format("  {:<24}{:>16}{:>16}{:>10}\n", Safe(s.name), Safe(s.before), Safe(s.after),
                     Safe(s.change));
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
  if (report::StatesShares(r)) {
    const report::ShareWords q =
        report::ShareParts(d.share_queue, d.tail_after_queue - d.tail_before_queue);
    const report::ShareWords p =
        report::ShareParts(d.share_prefill, d.tail_after_prefill - d.tail_before_prefill);
    const report::ShareWords f =
        report::ShareParts(d.share_front_end, d.tail_after_front_end - d.tail_before_front_end);
    o += fmt::format(
        "  Among the slowest 1%: queue {} of the increase{}, prefill {}{}, front end {}{}{}\n",
        q.share, q.note, p.share, p.note, f.share, f.note,
        d.dominant.empty() ? "" : fmt::format(" -> the {} moved the tail", d.dominant));
  } else {
    o += fmt::format("  Among the slowest 1%: {}\n", report::SharesWithheld(r));
  }
  o += fmt::format("\n{}4. Ranked hypotheses{}\n", bold, reset);
  if (!r.hypotheses_assessed) {
    o += "  not assessable: too few requests for a p99 (see the verdict); no cause is ranked\n";
  }
  int i = 0;
  for (const Hypothesis& h : r.hypotheses) {
    ++i;
    if (i > 3 && h.confidence < 0.05) continue;
    o += fmt::format("  {}{}. {} ({:.2f}){} {}\n", i == 1 ? bold : "", i, Safe(h.id), h.confidence,
                     reset, Safe(h.title));
    if (i <= 3) {
      for (const EvidenceLine& e : h.evidence) o += fmt::format("       - {}\n", Safe(e.sentence));
      o += fmt::format("       splitting metric: {}\n       next check: {}\n",
                       Safe(h.splitting_metric), Safe(h.next_check));
    }
  }
  {
    const report::AttributionText at = report::AttributionLines(r);
    o += fmt::format("\n{}Attribution by counterfactual replay{}\n", bold, reset);
    o += fmt::format("  {}\n", Safe(at.headline));
    for (const std::string& l : at.causes) o += fmt::format("  - {}\n", Safe(l));
    if (!at.mitigations.empty()) o += "  Mitigations, in order of share:\n";
    for (size_t k = 0; k < at.mitigations.size(); ++k)
      o += fmt::format("    {}. {}\n", k + 1, Safe(at.mitigations[k]));
    for (const std::string& l : at.checks) o += fmt::format("  - {}\n", Safe(l));
    for (const std::string& l : at.notes) o += fmt::format("  - {}\n", Safe(l));
  }
  o += fmt::format("\n{}5. Where it lives{}\n", bold, reset);
  if (!r.hypotheses_assessed) {
    o += "  not assessed: too few requests to credit any group with a tail increase\n";
  } else if (!report::StatesShares(r)) {
    o += r.contributions.empty()
             ? "  no significant tail increase to locate\n"
             : "  no significant tail increase to locate; the groups whose p99 moved most:\n";
  } else if (r.contributions.empty()) {
    o += "  no single group holds most of the tail increase\n";
  }
  for (const std::string& line : report::WhereItLives(r)) o += fmt::format("  - {}\n", Safe(line));
  o += fmt::format("\n{}6. Why the magnitude fits{}\n", bold, reset);
  o += fmt::format("  {}\n", r.magnitude.available ? Safe(r.magnitude.sentence) : "not estimated");
  o += fmt::format("\n{}7. Fix and prevention{}\n", bold, reset);
  if (r.actions.empty()) o += fmt::format("  {}\n", report::NothingToFix(r));
  for (const Action& a : r.actions) {
    if (a.kind == "mitigate") continue;
    o += fmt::format("  - {}: {}{}\n", Safe(a.kind), Safe(a.text),
                     a.owner.empty() ? "" : fmt::format(" [owner: {}]", Safe(a.owner)));
  }
  if (!r.fidelity_notes.empty()) {
    o += fmt::format("\n{}Checks not run / limits{}\n", bold, reset);
    for (const std::string& n : r.fidelity_notes) o += fmt::format("  - {}\n", Safe(n));
  }
  return o;
}

}  // namespace ttft
