// Diagnose(): builds the DiagnosisReport once (ttft/diagnose.h, docs/diagnosis.md) by
// running the stages of diagnose/stages.h in turn.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "diagnose/parallel.h"
#include "diagnose/stages.h"
#include "ttft/diagnose.h"
#include "ttft/format.h"

namespace ttft {

std::string_view ToString(Verdict v) {
  switch (v) {
    case Verdict::kRegression: return "regression";
    case Verdict::kNoRegression: return "no_regression";
    case Verdict::kInsufficientData: return "insufficient_data";
  }
  return "?";
}

std::string LabelValueText(std::string_view value) {
  return value.empty() ? std::string("\"\" (empty)") : std::string(value);
}

std::string ToString(const LabelChange& c) {
  if (c.kind == LabelChange::Kind::kNew) {
    return fmt::format("{} {}: new in the incident ({} of requests)", c.dimension,
                       LabelValueText(c.value), numfmt::Pct(c.share));
  }
  return fmt::format("{} {}: gone in the incident (was {})", c.dimension, LabelValueText(c.value),
                     numfmt::Pct(c.share));
}

const GroupSplit* Evidence::Split(std::string_view dimension) const {
  for (const GroupSplit& g : groups) {
    if (g.dimension == dimension) return &g;
  }
  return nullptr;
}

Result<DiagnosisReport> Diagnose(const DiagnosisInput& in) {
  TTFT_ASSIGN_OR_RETURN(const diag::InputShape shape, diag::ValidateInput(in));
  const DiagnoseOptions& opt = in.options;
  DiagnosisReport rep;
  rep.sources = in.sources;
  rep.change_at_s = in.change_at_s;
  rep.annotations = in.annotations;
  rep.fidelity_notes = in.notes;

  diag::Workspace ws(in, shape);
  TTFT_ASSIGN_OR_RETURN(const diag::Windows w,
                        diag::ComputeWindows(in, shape, ws, rep.fidelity_notes));
  TTFT_RETURN_IF_ERROR(diag::CheckSameModel(in, shape, w));
  rep.baseline = w.baseline;
  rep.incident = w.incident;

  std::vector<double> sa, sb;
  if (shape.has_spans) {
    diag::RunBoth(
        ws.parallel(),
        [&] { sa = diag::TtftSample(*in.baseline.table, w.rows_a, opt.max_test_samples); },
        [&] { sb = diag::TtftSample(*in.incident.table, w.rows_b, opt.max_test_samples); });
    rep.test_samples_baseline = static_cast<int64_t>(sa.size());
    rep.test_samples_incident = static_cast<int64_t>(sb.size());
  }
  diag::Significance sig =
      diag::AssessSignificance(rep.baseline, rep.incident, sa, sb, shape.has_spans, opt);
  rep.p99_ratio = sig.p99_ratio;
  rep.p50_ratio = sig.p50_ratio;
  rep.mann_whitney_p = sig.mann_whitney_p;
  rep.hodges_lehmann_shift_s = sig.hodges_lehmann_shift_s;
  rep.tail_test_p = sig.tail_test_p;
  rep.verdict = sig.verdict;
  rep.verdict_reason = std::move(sig.verdict_reason);

  diag::TailMeans ta, tb;
  if (shape.has_spans) {
    ta = diag::TailOf(*in.baseline.table, w.rows_a, rep.baseline.ttft_s.p99);
    tb = diag::TailOf(*in.incident.table, w.rows_b, rep.incident.ttft_s.p99);
  }
  rep.decomposition = diag::DecomposeTail(rep.baseline, rep.incident, ta, tb);

  diag::Groups groups;
  if (shape.has_spans) {
    groups = diag::SplitGroups(in, w, ws);
    rep.groups = std::move(groups.splits);
    rep.label_changes = std::move(groups.label_changes);
    // Too few requests for a p99: no group is credited with the increase.
    if (sig.enough) rep.contributions = diag::ContributionsOf(rep.groups);
  } else {
    // Metrics only: the splits come from the series' labels.
    TTFT_ASSIGN_OR_RETURN(groups, diag::SplitGroupsFromMetrics(in, w, rep.fidelity_notes));
    rep.groups = std::move(groups.splits);
    rep.label_changes = std::move(groups.label_changes);
    if (sig.enough) rep.contributions = diag::ContributionsOf(rep.groups);
  }

  if (!opt.attribute) {
    rep.attribution.not_run_reason = "turned off (--no-attribution)";
  } else if (!shape.has_spans) {
    rep.attribution.not_run_reason =
        "metrics only: the replay needs each request's arrival time and prompt, cached and output "
        "tokens (spans)";
  } else if (rep.verdict == Verdict::kInsufficientData) {
    rep.attribution.not_run_reason = "too few requests for a p99: there is nothing to share out";
  } else if (rep.verdict != Verdict::kRegression) {
    rep.attribution.not_run_reason = "no regression: there is no increase to share out";
  } else {
    AttributionOptions ao = opt.attribution;
    if (ao.model.empty()) ao.model = opt.model;
    if (ao.gpu.empty()) ao.gpu = opt.gpu;
    if (ao.dtype.empty()) ao.dtype = opt.dtype;
    if (ao.tp <= 0) ao.tp = opt.tp;
    rep.attribution =
        Attribute({in.baseline.table, w.rows_a, in.baseline.from_s, in.baseline.to_s},
                  {in.incident.table, w.rows_b, in.incident.from_s, in.incident.to_s}, ao);
  }

  // Too few requests for a p99: no cause is assessable, so none is ranked; the report
  // says why instead.
  rep.hypotheses_assessed = sig.enough;
  if (sig.enough) {
    const Evidence ev{rep.baseline,      rep.incident,    rep.decomposition, rep.groups,
                      rep.label_changes, shape.has_spans, shape.has_metrics};
    rep.hypotheses = diag::EvaluateRules(DefaultRules(), ev, rep.fidelity_notes);
    diag::WeighByAttribution(rep.attribution, rep.hypotheses);
    diag::WordForVerdict(rep.verdict, rep.hypotheses);
  } else {
    rep.fidelity_notes.push_back(fmt::format(
        "hypotheses not assessed: {} and {} ok requests are too few for a p99 (need {} in each "
        "window); widen the windows or lower --min-requests knowingly",
        rep.baseline.ok, rep.incident.ok, opt.min_ok_requests));
  }

  if (shape.has_spans) {
    rep.magnitude = diag::EstimateMagnitude(in, w.rows_a, w.rows_b, rep.fidelity_notes);
    diag::Charts charts =
        diag::BuildCharts(in, w, groups, rep.groups, std::move(sa), std::move(sb), ws);
    rep.onset_s = charts.onset_s;
    rep.timeline = std::move(charts.timeline);
    rep.group_series = std::move(charts.group_series);
    rep.cdf_before = std::move(charts.cdf_before);
    rep.cdf_after = std::move(charts.cdf_after);
  } else {
    rep.fidelity_notes.push_back(
        "no spans: the cost-model magnitude check needs prompt and cached "
        "tokens per request");
  }

  rep.suspect_changes =
      diag::SuspectChanges(in.annotations, rep.onset_s, in.change_at_s, in.incident);
  rep.actions = diag::PlanActions(rep);
  return rep;
}

}  // namespace ttft
