// Diagnose() stage: validation of the input and the window statistics
// (diagnose/stages.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "diagnose/parallel.h"
#include "diagnose/stages.h"
#include "ttft/model.h"

namespace ttft::diag {
namespace {

std::vector<uint32_t> RowsIn(const SpanWindow& w) {
  std::vector<uint32_t> rows;
  if (w.table == nullptr) return rows;
  const auto arr = w.table->arrival_s();
  auto in = [&](double a) { return a >= w.from_s && a < w.to_s; };
  rows.reserve(static_cast<size_t>(std::count_if(arr.begin(), arr.end(), in)));  // no regrowth
  for (size_t i = 0; i < arr.size(); ++i) {
    if (in(arr[i])) rows.push_back(static_cast<uint32_t>(i));
  }
  return rows;
}

}  // namespace

Result<InputShape> ValidateInput(const DiagnosisInput& in) {
  const SpanWindow& A = in.baseline;
  const SpanWindow& B = in.incident;
  if (!(A.to_s > A.from_s) || !(B.to_s > B.from_s)) {
    return Status::Invalid(fmt::format("empty window: baseline [{}, {}), incident [{}, {})",
                                       A.from_s, A.to_s, B.from_s, B.to_s));
  }
  if (A.table != nullptr && A.table == B.table && A.from_s < B.to_s && B.from_s < A.to_s) {
    return Status::Invalid(fmt::format(
        "the baseline [{:.0f}, {:.0f}) s and incident [{:.0f}, {:.0f}) s windows overlap", A.from_s,
        A.to_s, B.from_s, B.to_s));
  }
  // An explicit cost model must be one the magnitude check can price; the spans' own
  // model label is checked there (an unknown label is a note, not an error).
  const DiagnoseOptions& o = in.options;
  if (!o.model.empty() && !FindModel(o.model).ok()) {
    return Status::Invalid(
        fmt::format("unknown model \"{}\" (DiagnoseOptions::model, --model); "
                    "the cost-model presets are: {}",
                    o.model, fmt::join(ModelNames(), ", ")));
  }
  if (!o.gpu.empty() && !FindGpu(o.gpu).ok()) {
    return Status::Invalid(
        fmt::format("unknown gpu \"{}\" (DiagnoseOptions::gpu, --gpu); the GPU presets are: {}",
                    o.gpu, fmt::join(GpuNames(), ", ")));
  }
  InputShape shape;
  shape.has_spans = A.table != nullptr && B.table != nullptr;
  shape.has_metrics = in.baseline_snapshots.size() >= 2 && in.incident_snapshots.size() >= 2;
  if (!shape.has_spans && !shape.has_metrics) {
    return Status::Invalid("no data: each window needs spans or at least 2 metric snapshots");
  }
  return shape;
}

Workspace::Workspace(const DiagnosisInput& in, const InputShape& shape) {
  const SpanWindow& A = in.baseline;
  const SpanWindow& B = in.incident;
  // Large windows are computed on two threads (one each), small ones in turn.
  parallel_ = shape.has_spans && in.options.parallel &&
              A.table->size() + (B.table == A.table ? 0 : B.table->size()) >= kParallelRows;
}

Result<Windows> ComputeWindows(const DiagnosisInput& in, const InputShape& shape, Workspace& ws,
                               std::vector<std::string>& notes) {
  const SpanWindow& A = in.baseline;
  const SpanWindow& B = in.incident;
  Windows w;
  if (shape.has_spans) {
    RunBoth(
        ws.parallel(),
        [&] {
          w.rows_a = RowsIn(A);
          w.baseline = ComputeWindowStats(*A.table, w.rows_a, A.from_s, A.to_s,
                                          StatsDetail::kDiagnosis, ws.baseline());
        },
        [&] {
          w.rows_b = RowsIn(B);
          w.incident = ComputeWindowStats(*B.table, w.rows_b, B.from_s, B.to_s,
                                          StatsDetail::kDiagnosis, ws.incident());
        });
    if (shape.has_metrics) {
      auto ma = WindowStatsFromMetrics(in.baseline_snapshots, A.from_s, A.to_s);
      auto mb = WindowStatsFromMetrics(in.incident_snapshots, B.from_s, B.to_s);
      if (ma.ok()) w.baseline.kv_usage = ma->kv_usage;
      if (mb.ok()) w.incident.kv_usage = mb->kv_usage;
    }
  } else {
    TTFT_ASSIGN_OR_RETURN(w.baseline,
                          WindowStatsFromMetrics(in.baseline_snapshots, A.from_s, A.to_s));
    TTFT_ASSIGN_OR_RETURN(w.incident,
                          WindowStatsFromMetrics(in.incident_snapshots, B.from_s, B.to_s));
    notes.push_back(
        "metrics only: quantiles come from histogram buckets (PromQL histogram_quantile); no "
        "per-request decomposition of the tail, no splits by tenant or template, no "
        "per-token prefill time, no output lengths; the bootstrap CI and Mann-Whitney test "
        "need per-request values and were not run");
  }
  if (!shape.has_metrics && shape.has_spans) {
    notes.push_back(
        "spans only: KV-cache usage (vllm:kv_cache_usage_perc) was not available; KV pressure "
        "is judged from per-request preemptions");
  }
  return w;
}

Status CheckSameModel(const DiagnosisInput& in, const InputShape& shape, const Windows& w) {
  const SpanWindow& A = in.baseline;
  const SpanWindow& B = in.incident;
  if (!shape.has_spans || A.table == B.table) return Status::Ok();
  auto models_of = [](const SpanTable& t, const std::vector<uint32_t>& rows) {
    std::set<std::string> m;
    std::vector<char> seen(t.num_label_sets(), 0);
    for (uint32_t r : rows) seen[t.label_set()[r]] = 1;
    for (size_t s = 0; s < seen.size(); ++s) {
      if (seen[s]) m.emplace(t.label_of_set(static_cast<uint32_t>(s), SpanLabel::kModel));
    }
    return m;
  };
  const auto ma = models_of(*A.table, w.rows_a), mb = models_of(*B.table, w.rows_b);
  if (!ma.empty() && !mb.empty() && ma != mb) {
    return Status::Invalid(
        fmt::format("the baseline and incident serve different models ({} vs {}): not comparable",
                    fmt::join(ma, ","), fmt::join(mb, ",")));
  }
  return Status::Ok();
}

}  // namespace ttft::diag
