// Diagnose() stage: validation of the input and the window statistics
// (diagnose/stages.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "diagnose/parallel.h"
#include "diagnose/stages.h"
#include "ttft/format.h"
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

std::string BucketNote(std::string_view term, const TermQuantiles& a, const TermQuantiles& b) {
  constexpr std::array<const char*, 3> kNames = {"p50", "p90", "p99"};
  std::vector<std::string> first, inf;
  double first_upper = kMissing, inf_bound = kMissing;
  for (const auto& [window, t] : {std::pair{"baseline", &a}, std::pair{"incident", &b}}) {
    if (t->source != TermQuantiles::Source::kBuckets) continue;
    std::vector<std::string> f, i;
    for (size_t q = 0; q < kNames.size(); ++q) {
      const BucketQuantile& bq = t->buckets[q];
      if (bq.in_first_bucket) {
        f.emplace_back(kNames[q]);
        first_upper = bq.upper_bound;
      } else if (bq.in_inf_bucket) {
        i.emplace_back(kNames[q]);
        inf_bound = bq.value;
      }
    }
    if (!f.empty()) first.push_back(fmt::format("{} {}", window, fmt::join(f, ", ")));
    if (!i.empty()) inf.push_back(fmt::format("{} {}", window, fmt::join(i, ", ")));
  }
  std::string out;
  if (!first.empty()) {
    out = fmt::format(
        "{}: {} lie in the first histogram bucket [0, {}] and are shown as <= {} (an "
        "interpolated value there, e.g. {} for the median, is not a measurement); the exact "
        "mean (_sum/_count) is {} -> {}",
        term, fmt::join(first, " and "), numfmt::Secs(first_upper), numfmt::Secs(first_upper),
        numfmt::Secs(first_upper / 2), numfmt::Secs(a.mean), numfmt::Secs(b.mean));
  }
  if (!inf.empty()) {
    out += fmt::format(
        "{}{}: {} lie above the highest finite bucket and are shown as >= {} (a lower limit)",
        out.empty() ? "" : "; ", term, fmt::join(inf, " and "), numfmt::Secs(inf_bound));
  }
  return out;
}

std::vector<std::string> ImpossibleDecomposition(const WindowStats& a, const WindowStats& b,
                                                 const MetricFamilyNames& names) {
  std::vector<std::string> out;
  for (const auto& [window, w] : {std::pair{"baseline", &a}, std::pair{"incident", &b}}) {
    // Per request queue <= TTFT and prefill <= TTFT, so every quantile of a term is at
    // most the same quantile of TTFT: a term's p50 whose bucket starts above the TTFT
    // p99's bucket end cannot come from the same requests.
    bool flagged = false;
    for (const auto& [term, t, metric] : {std::tuple{"queue", &w->queue_s, &names.queue},
                                          std::tuple{"prefill", &w->prefill_s, &names.prefill}}) {
      const BucketQuantile& p50 = t->buckets[0];
      const BucketQuantile& ttft99 = w->ttft_s.buckets[2];
      const double lo = t->source == TermQuantiles::Source::kBuckets ? p50.lower_bound : t->p50;
      const double hi =
          w->ttft_s.source == TermQuantiles::Source::kBuckets ? ttft99.upper_bound : w->ttft_s.p99;
      if (std::isfinite(lo) && std::isfinite(hi) && lo > hi) {
        flagged = true;
        out.push_back(fmt::format(
            "impossible decomposition ({}): the {} p50 ({}, from {}) is above the TTFT p99 ({}), "
            "with a mean of {} against a mean TTFT of {}: {} does not measure the wait inside TTFT "
            "here (another definition or engine version); its figures are not comparable with "
            "TTFT",
            window, term, QuantileText(*t, 0), *metric, QuantileText(w->ttft_s, 2),
            numfmt::Secs(t->mean), numfmt::Secs(w->ttft_s.mean), *metric));
      }
    }
    if (flagged) continue;
    // The means are exact (_sum/_count) and add up per request: queue + prefill <= TTFT
    // (front end and rounding aside: 5% and 1 ms of slack). A missing term counts as 0.
    std::string parts, metrics;
    double terms = 0;
    for (const auto& [term, t, metric] : {std::tuple{"queue", &w->queue_s, &names.queue},
                                          std::tuple{"prefill", &w->prefill_s, &names.prefill}}) {
      if (!std::isfinite(t->mean)) continue;
      terms += t->mean;
      parts += fmt::format("{}mean {} {} ({})", parts.empty() ? "" : " + ", term,
                           numfmt::Secs(t->mean), *metric);
      metrics += fmt::format("{}{}", metrics.empty() ? "" : " and ", *metric);
    }
    if (!parts.empty() && std::isfinite(w->ttft_s.mean) && terms > 1.05 * w->ttft_s.mean + 0.001) {
      out.push_back(fmt::format(
          "impossible decomposition ({}): {} exceeds the mean TTFT {}: the terms do not add up "
          "to TTFT; check what {} measure",
          window, parts, numfmt::Secs(w->ttft_s.mean), metrics));
    }
  }
  return out;
}

MetricFamilyNames MetricNames(std::span<const MetricSnapshot> snapshots) {
  MetricFamilyNames n;
  if (snapshots.empty()) return n;
  const MetricSnapshot& s = snapshots.back();
  if (const MetricFamily* f = FindCanonical(s, CanonicalMetric::kQueue)) n.queue = f->name;
  if (const MetricFamily* f = FindCanonical(s, CanonicalMetric::kPrefill)) n.prefill = f->name;
  return n;
}

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
  if (!o.dtype.empty()) {
    TTFT_RETURN_IF_ERROR(
        ParseDtype(o.dtype).status().WithContext("DiagnoseOptions::dtype, --dtype"));
  }
  if (o.tp < 0) {
    return Status::Invalid(
        fmt::format("tp {} (DiagnoseOptions::tp, --tp): must be >= 1 (0: the default, 2)", o.tp));
  }
  if (o.min_ok_requests < 1) {
    // A p99 of no request is no figure; the verdict would rest on NaN.
    return Status::Invalid(fmt::format(
        "min_ok_requests {} (DiagnoseOptions::min_ok_requests, --min-requests): must be >= 1",
        o.min_ok_requests));
  }
  InputShape shape;
  shape.has_spans = A.table != nullptr && B.table != nullptr;
  shape.has_metrics = in.baseline_snapshots.size() >= 2 && in.incident_snapshots.size() >= 2;
  if (!shape.has_spans && !shape.has_metrics) {
    // Two separate inputs of one scrape each were read by their process start
    // (DiagnosisInputOf); one input split at a change time has no such reading.
    return Status::Invalid(fmt::format(
        "no data: each window needs spans or at least 2 metric snapshots (the baseline has {}, "
        "the incident {}){}",
        in.baseline_snapshots.size(), in.incident_snapshots.size(),
        std::isfinite(in.change_at_s)
            ? "; for one scrape before the change and one after, give them as --baseline and "
              "--incident"
            : ""));
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
        "per-request decomposition of the tail, no per-token prefill time, no output lengths; "
        "the bootstrap CI and Mann-Whitney test need per-request values and were not run");
    for (const auto& [name, a, b] :
         {std::tuple{"TTFT", &w.baseline.ttft_s, &w.incident.ttft_s},
          std::tuple{"queue", &w.baseline.queue_s, &w.incident.queue_s},
          std::tuple{"prefill", &w.baseline.prefill_s, &w.incident.prefill_s}}) {
      std::string note = BucketNote(name, *a, *b);
      if (!note.empty()) notes.push_back(std::move(note));
    }
    for (std::string& n :
         ImpossibleDecomposition(w.baseline, w.incident, MetricNames(in.incident_snapshots))) {
      notes.push_back(std::move(n));
    }
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
