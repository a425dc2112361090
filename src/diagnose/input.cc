// The input of a diagnosis from loaded datasets (ttft/diagnose.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

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

namespace {

// The process starts (Unix seconds) of a scrape, sorted: prometheus_client's process
// collector exports process_start_time_seconds, and vLLM and SGLang both expose it.
std::vector<double> ProcessStarts(const MetricSnapshot& scrape) {
  std::vector<double> out;
  for (const MetricFamily& f : scrape.families) {
    if (f.name != "process_start_time_seconds") continue;
    for (const MetricSeries& s : f.series) {
      if (std::isfinite(s.value)) out.push_back(s.value);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A window of one scrape's totals: WindowDelta from a snapshot without series (each
// counts from zero). Its time is NaN, so the window has no request rate: the process's
// start includes loading the model, so the totals over that span would understate it.
std::vector<MetricSnapshot> TotalsOf(const MetricSnapshot& scrape) {
  MetricSnapshot start;
  start.timestamp_s = std::numeric_limits<double>::quiet_NaN();
  return {std::move(start), scrape};
}

std::string NameOf(const Dataset& d, const char* fallback) {
  return d.sources.empty() ? fallback : d.sources.front();
}

// One scrape in each input (the contract in ttft/diagnose.h).
Status ReadOneScrapeEach(const Dataset& base, const Dataset& inc, DiagnosisInput& in) {
  const MetricSnapshot& a = base.snapshots.front();
  const MetricSnapshot& b = inc.snapshots.front();
  const std::string name_a = NameOf(base, "the baseline"), name_b = NameOf(inc, "the incident");
  if (!(b.timestamp_s > a.timestamp_s)) {
    return Status::Invalid(
        fmt::format("{}: its scrape (t={:.3f} s) is not after the baseline's ({}, t={:.3f} s)",
                    name_b, b.timestamp_s, name_a, a.timestamp_s));
  }
  const std::vector<double> starts_a = ProcessStarts(a), starts_b = ProcessStarts(b);
  for (const auto& [name, starts, at_s] : {std::tuple{&name_a, &starts_a, a.timestamp_s},
                                           std::tuple{&name_b, &starts_b, b.timestamp_s}}) {
    if (starts->empty()) {
      return Status::Invalid(fmt::format(
          "{}: one scrape in each window, and this one has no (finite) "
          "process_start_time_seconds, so "
          "neither the start of its totals nor a restart between the scrapes can be told: give "
          "at least two scrapes per window (one at its start, one at its end)",
          *name));
    }
    if (starts->front() < 0) {  // Unix seconds (or a simulation's time base from 0)
      return Status::Invalid(
          fmt::format("{}: process_start_time_seconds {} is negative", *name, starts->front()));
    }
    if (starts->back() > at_s) {
      return Status::Invalid(fmt::format(
          "{}: process_start_time_seconds {:.3f} is after the scrape (t={:.3f} s): the scrape's "
          "time is in another time base; name the file t<Unix seconds>.prom",
          *name, starts->back(), at_s));
    }
  }
  in.baseline_snapshots = TotalsOf(a);
  in.baseline.from_s = starts_a.front();
  in.baseline.to_s = a.timestamp_s;
  in.notes.push_back(fmt::format(
      "one scrape per window: the baseline is {}'s totals since its process started ({:.0f} s "
      "before the scrape), with no request rate (that span includes loading the model)",
      name_a, a.timestamp_s - starts_a.front()));
  if (starts_b == starts_a) {
    in.incident_snapshots = {a, b};
    in.incident.from_s = a.timestamp_s;
    in.incident.to_s = b.timestamp_s;
    in.notes.push_back(fmt::format(
        "the incident is the increase from the baseline's scrape to {}'s ({:.0f} s later; the "
        "same process start)",
        name_b, b.timestamp_s - a.timestamp_s));
    return Status::Ok();
  }
  if (starts_b.front() <= a.timestamp_s) {
    return Status::Invalid(fmt::format(
        "{}: its process starts differ from the baseline's, and not every one is after the "
        "baseline's scrape: neither the increase nor its totals isolate the incident; give at "
        "least two scrapes per window",
        name_b));
  }
  in.incident_snapshots = TotalsOf(b);
  in.annotations.push_back({starts_b.front(), "restart", name_b, "process_start_time_seconds"});
  in.incident.from_s = starts_b.front();
  in.incident.to_s = b.timestamp_s;
  in.notes.push_back(fmt::format(
      "{}'s process started after the baseline's scrape (a restart between the scrapes, as a "
      "deploy does): the incident is its totals since then, with no request rate",
      name_b));
  return Status::Ok();
}

}  // namespace

Result<DiagnosisInput> DiagnosisInputOf(const Dataset& base, const Dataset& inc) {
  if (base.has_spans != inc.has_spans) {
    return Status::Invalid("the baseline and incident inputs differ in kind (spans vs metrics)");
  }
  DiagnosisInput in;
  const TimeRange a = base.range(), b = inc.range();
  in.baseline = {base.has_spans ? &base.spans : nullptr, a.from_s, a.to_s};
  in.incident = {inc.has_spans ? &inc.spans : nullptr, b.from_s, b.to_s};
  in.annotations = inc.annotations;
  in.sources = base.sources;
  for (const auto& s : inc.sources) in.sources.push_back(s);
  if (!base.has_spans && base.snapshots.size() == 1 && inc.snapshots.size() == 1) {
    TTFT_RETURN_IF_ERROR(ReadOneScrapeEach(base, inc, in));
    return in;
  }
  in.baseline_snapshots = base.snapshots;
  in.incident_snapshots = inc.snapshots;
  return in;
}

}  // namespace ttft
