// Diagnose() stage: the changes near the onset and the actions, mitigate first, then
// fix and prevent (diagnose/stages.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

#include "diagnose/stages.h"
#include "ttft/format.h"

namespace ttft::diag {
namespace {

using numfmt::Pct;
using numfmt::Secs;

// The immediate mitigation for a change of this kind: undo it.
std::string UndoVerb(std::string_view kind) {
  if (kind == "drain_replica" || kind == "remove_replica") return "Undrain (or replace)";
  if (kind == "tenant_traffic") return "Rate-limit the traffic behind";
  return "Roll back";
}

// Where the p99 should return to: "toward 815 ms", or the bound the buckets give it
// ("to at most 100 ms", "toward at least 10.00 s").
std::string BaselineTarget(const TermQuantiles& ttft_s) {
  const std::string q = QuantileText(ttft_s, 2);
  if (q.starts_with("<=")) return "to at most " + q.substr(2);
  if (q.starts_with(">=")) return "toward at least " + q.substr(2);
  return "toward " + q;
}

std::string Owner(std::string_view kind) {
  if (kind == "deploy_template") return "app team";
  if (kind == "tenant_traffic") return "the tenant's client owner";
  return "serving team";
}

// The rollback of a template deploy, naming the template and its versions: "Roll back
// template app@v2 to app@v1 (deployed at t=1800 s on every replica)". The deploy's
// detail is the new version ("app@v2") or the change ("v1 -> v2"); the version it
// replaced is the template value of the same name gone in the incident, when one is.
// Target "*" is every replica.
std::string TemplateRollback(const Annotation& a, const std::vector<LabelChange>& changes) {
  const std::string where = a.target == "*" || a.target.empty() ? " on every replica" : "";
  const std::string when = fmt::format("deployed at {}{}", numfmt::TimePoint(a.at_s), where);
  const size_t at = a.detail.find('@');
  if (at != std::string::npos && a.detail.find(' ') == std::string::npos) {
    const std::string prefix = a.detail.substr(0, at + 1);
    for (const LabelChange& c : changes) {
      if (c.dimension == "template" && c.kind == LabelChange::Kind::kGone &&
          c.value.rfind(prefix, 0) == 0) {
        return fmt::format("Roll back template {} to {} ({})", a.detail, c.value, when);
      }
    }
    return fmt::format("Roll back template {} to its previous version ({})", a.detail, when);
  }
  const std::string named = where.empty() ? a.target : "";
  if (a.detail.empty()) {
    return fmt::format("Roll back the template deploy{} ({})", named.empty() ? "" : " of " + named,
                       when);
  }
  return fmt::format("Roll back template {}{}{} ({})", named, named.empty() ? "" : " ", a.detail,
                     when);
}

}  // namespace

std::vector<Annotation> SuspectChanges(std::span<const Annotation> annotations, double onset_s,
                                       double change_at_s, const SpanWindow& incident) {
  const SpanWindow& B = incident;
  const double pivot = std::isfinite(onset_s)       ? onset_s
                       : std::isfinite(change_at_s) ? change_at_s
                                                    : B.from_s;
  const double slack = std::max(60.0, 0.1 * (B.to_s - B.from_s));
  std::vector<Annotation> out;
  for (const Annotation& a : annotations) {
    if (a.at_s >= B.from_s - slack && a.at_s <= pivot + slack) out.push_back(a);
  }
  std::stable_sort(out.begin(), out.end(), [&](const Annotation& x, const Annotation& y) {
    return std::fabs(x.at_s - pivot) < std::fabs(y.at_s - pivot);
  });
  return out;
}

std::vector<Action> PlanActions(const DiagnosisReport& rep) {
  std::vector<Action> actions;
  if (rep.verdict != Verdict::kRegression) return actions;
  const Hypothesis* top = rep.hypotheses.empty() ? nullptr : &rep.hypotheses.front();
  // A change that another of the same kind already covers (the drain of "a,b" and
  // then of "a" and "b" one by one) is one action.
  auto covered = [&](const Annotation& a) {
    for (const Annotation& b : rep.suspect_changes) {
      if (&a == &b || a.kind != b.kind || a.target == b.target) continue;
      if (("," + b.target + ",").find("," + a.target + ",") != std::string::npos) return true;
    }
    return false;
  };
  for (const Annotation& a : rep.suspect_changes) {
    if (covered(a)) continue;
    std::string undo;
    if (a.kind == "deploy_template") {
      undo = TemplateRollback(a, rep.label_changes);
    } else if (a.kind == "restart") {  // a process start seen in a scrape: a deploy's mark
      undo = fmt::format("Roll back the deploy that restarted the server of {} ({}{})", a.target,
                         numfmt::TimePoint(a.at_s), a.detail.empty() ? "" : ", " + a.detail);
    } else {
      undo = fmt::format("{} {} {} ({}{})", UndoVerb(a.kind), a.kind, a.target,
                         numfmt::TimePoint(a.at_s), a.detail.empty() ? "" : ", " + a.detail);
    }
    actions.push_back(
        {"mitigate",
         fmt::format(
             "{}{} now, before any analysis; confirm "
             "p99 TTFT returns {}",
             undo,
             UndoVerb(a.kind) == "Roll back" && a.kind != "restart" ? " or flip its flag" : "",
             BaselineTarget(rep.baseline.ttft_s)),
         Owner(a.kind), ActionSubject::kChange, a.kind, a.target});
  }
  // No change to undo and a cause that names a group to shed (a tenant that grew):
  // shed that group's load first. A template that is new only because its tenant is
  // new is not a rollback.
  const GroupSplit* shed = nullptr;
  if (rep.suspect_changes.empty() && top != nullptr && !top->shed_load_of.empty()) {
    for (const GroupSplit& g : rep.groups) {
      if (g.dimension == top->shed_load_of && !g.rows.empty()) shed = &g;
    }
  }
  if (shed != nullptr) {
    const GroupRow& grown = shed->rows.front();
    actions.push_back({"mitigate",
                       fmt::format("No deploy to roll back: rate-limit {} {} (or move it to its "
                                   "own pool) now; it holds {} of the p99 increase at {} of the "
                                   "requests",
                                   shed->dimension, LabelValueText(grown.value),
                                   Pct(grown.contribution), Pct(grown.share_after)),
                       "serving team", ActionSubject::kGroup, shed->dimension, grown.value});
  } else if (rep.suspect_changes.empty()) {
    for (const LabelChange& c : rep.label_changes) {
      if (c.dimension != "template" && c.dimension != "deploy") continue;
      actions.push_back(
          {"mitigate",
           fmt::format(
               "Roll back the change behind \"{}\" (or flip its flag) now, before any analysis",
               ToString(c)),
           c.dimension == "template" ? "app team" : "serving team", ActionSubject::kLabelChange,
           c.dimension, c.value});
    }
  }
  if (top != nullptr) {
    actions.push_back({"investigate",
                       fmt::format("Confirm {} with its splitting metric: {}. Next: {}", top->id,
                                   top->splitting_metric, top->next_check),
                       "", ActionSubject::kHypothesis, top->id});
    actions.push_back({"fix", top->fix, top->owners, ActionSubject::kHypothesis, top->id});
    actions.push_back(
        {"prevent", top->prevention, top->owners, ActionSubject::kHypothesis, top->id});
  }
  actions.push_back(
      {"prevent",
       "Gate canaries on p99 TTFT and prefix-cache hit rate, not only on error rate; put the "
       "hit-rate metric on the dashboard the app and serving teams both watch",
       "serving team + app team"});
  return actions;
}

}  // namespace ttft::diag
