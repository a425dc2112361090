// The input of a diagnosis from loaded datasets (ttft/diagnose.h).
#include <cmath>
#include <limits>

#include "ttft/diagnose.h"

namespace ttft {

DiagnosisInput DiagnosisInputOf(const Dataset& data, const AnalysisWindows& w) {
  DiagnosisInput in;
  in.change_at_s = w.change_at_s;
  const SpanTable* t = data.has_spans ? &data.spans : nullptr;
  in.baseline = {t, w.baseline.from_s, w.baseline.to_s};
  in.incident = {t, w.incident.from_s, w.incident.to_s};
  in.baseline_snapshots = SnapshotsCovering(data.snapshots, w.baseline.from_s, w.baseline.to_s);
  in.incident_snapshots = SnapshotsCovering(data.snapshots, w.incident.from_s, w.incident.to_s);
  in.annotations = data.annotations;
  in.sources = data.sources;
  return in;
}

Result<DiagnosisInput> DiagnosisInputOf(const Dataset& base, const Dataset& inc) {
  if (base.has_spans != inc.has_spans) {
    return Status::Invalid("the baseline and incident inputs differ in kind (spans vs metrics)");
  }
  DiagnosisInput in;
  const TimeRange a = base.range(), b = inc.range();
  in.baseline = {base.has_spans ? &base.spans : nullptr, a.from_s, a.to_s};
  in.incident = {inc.has_spans ? &inc.spans : nullptr, b.from_s, b.to_s};
  in.baseline_snapshots = base.snapshots;
  in.incident_snapshots = inc.snapshots;
  in.annotations = inc.annotations;
  in.sources = base.sources;
  for (const auto& s : inc.sources) in.sources.push_back(s);
  return in;
}

}  // namespace ttft
