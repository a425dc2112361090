// Diagnose() stage: evaluate the hypothesis rules and rank them (diagnose/stages.h).
#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "diagnose/stages.h"
#include "ttft/format.h"

namespace ttft::diag {

std::vector<Hypothesis> EvaluateRules(std::span<const std::unique_ptr<HypothesisRule>> rules,
                                      const Evidence& ev, std::vector<std::string>& notes) {
  std::vector<Hypothesis> out;
  for (const auto& rule : rules) {
    Hypothesis h = rule->Evaluate(ev);
    h.id = std::string(rule->id());
    h.confidence = std::clamp(h.confidence, 0.0, 1.0);
    if (!h.runnable) {
      h.confidence = 0;
      notes.push_back(fmt::format("{}: not checked ({})", h.id, h.not_run_reason));
    }
    out.push_back(std::move(h));
  }
  std::stable_sort(out.begin(), out.end(), [](const Hypothesis& x, const Hypothesis& y) {
    return x.confidence > y.confidence;
  });
  return out;
}

void WeighByAttribution(const Attribution& a, std::vector<Hypothesis>& hypotheses) {
  if (!a.run || !a.incident_check_ok || !(a.replay_none_p99_s - a.replay_all_p99_s > 0)) return;
  for (const FactorShare& f : a.factors) {
    if (!(f.share_lo >= 0.1)) continue;
    for (Hypothesis& h : hypotheses) {
      if (h.id != f.hypothesis || !h.runnable) continue;
      const std::string interval = numfmt::Pct(f.share_lo) == numfmt::Pct(f.share_hi)
                                       ? std::string()
                                       : fmt::format(" ({}-{})", numfmt::Fixed(f.share_lo * 100, 0),
                                                     numfmt::Pct(f.share_hi));
      h.evidence.push_back(
          {"attribution_share", kMissing, f.share, "fraction",
           fmt::format("counterfactual replay: {}, {}{} of the p99 increase (Shapley "
                       "share); undone alone it removes {}",
                       f.cause, numfmt::Pct(f.share), interval, numfmt::Pct(f.single_share))});
      h.confidence = std::max(h.confidence, std::min(0.8, 0.2 + f.share));
    }
  }
  std::stable_sort(
      hypotheses.begin(), hypotheses.end(),
      [](const Hypothesis& x, const Hypothesis& y) { return x.confidence > y.confidence; });
}

// Removes every "<share> of the p99 increase" clause from `s`: from the ", " or "; "
// before it (the start of the sentence when none) to the end of the phrase.
static void DropShareOfIncrease(std::string& s) {
  static constexpr std::string_view kPhrase = " of the p99 increase";
  for (size_t at = s.find(kPhrase); at != std::string::npos; at = s.find(kPhrase)) {
    size_t from = 0;
    const size_t comma = s.rfind(", ", at);
    const size_t semi = s.rfind("; ", at);
    if (comma != std::string::npos) from = comma;
    if (semi != std::string::npos && (comma == std::string::npos || semi > comma)) from = semi;
    s.erase(from, at + kPhrase.size() - from);
  }
}

void WordForVerdict(Verdict verdict, std::vector<Hypothesis>& hypotheses) {
  if (verdict == Verdict::kRegression) return;
  for (Hypothesis& h : hypotheses) {
    for (EvidenceLine& line : h.evidence) DropShareOfIncrease(line.sentence);
  }
}

}  // namespace ttft::diag
