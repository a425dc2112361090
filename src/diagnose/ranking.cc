// Diagnose() stage: evaluate the hypothesis rules and rank them (diagnose/stages.h).
#include <fmt/format.h>

#include <algorithm>

#include "diagnose/stages.h"

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

}  // namespace ttft::diag
