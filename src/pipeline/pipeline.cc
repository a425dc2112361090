// End-to-end runs (ttft/pipeline.h): a scenario into a folder, and simulated and
// diagnosed in one call.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "ttft/metrics.h"
#include "ttft/model.h"
#include "ttft/pipeline.h"
#include "ttft/spans.h"

namespace ttft {
namespace fs = std::filesystem;
namespace {

// Writes the folder (when out_dir is set) and keeps in a table the spans of the
// analysis windows, or with KeepAll every span and every scrape for a diagnosis.
class RunSink : public SimulationSink {
 public:
  Status Open(const std::string& out_dir);
  // Keeps only spans arriving inside the two windows, so memory is bounded by the
  // windows, not the run length.
  void KeepOnly(double before_from, double before_to, double after_from, double after_to);
  void KeepAll() { keep_all_ = true; }
  Status OnSpan(const Span& span) override;
  Status OnSnapshot(const MetricSnapshot& snapshot) override;
  Status Close();
  const SpanTable& table() const { return *table_; }
  std::unique_ptr<SpanTable> TakeTable() { return std::move(table_); }
  std::vector<MetricSnapshot> TakeSnapshots() { return std::move(snapshots_); }

 private:
  std::string out_dir_;
  bool filter_ = false;
  bool keep_all_ = false;
  double keep_[4] = {0, 0, 0, 0};
  SpanJsonlWriter spans_;
  std::unique_ptr<SpanTable> table_ = std::make_unique<SpanTable>();
  std::vector<MetricSnapshot> snapshots_;
};

Status RunSink::Open(const std::string& out_dir) {
  out_dir_ = out_dir;
  if (out_dir.empty()) return Status::Ok();
  std::error_code ec;
  fs::create_directories(fs::path(out_dir) / "metrics", ec);
  if (ec) return Status::IoError(fmt::format("{}: cannot create: {}", out_dir, ec.message()));
  // Old scrapes from an earlier run would sort among the new ones: remove them.
  for (const auto& e : fs::directory_iterator(fs::path(out_dir) / "metrics", ec)) {
    if (e.path().extension() == ".prom") fs::remove(e.path(), ec);
  }
  // Spans go to a .partial file that becomes spans.jsonl only when the run
  // completes: a failed run never leaves output that looks complete.
  fs::remove(fs::path(out_dir) / "spans.jsonl", ec);
  fs::remove(fs::path(out_dir) / "summary.json", ec);
  return spans_.Open((fs::path(out_dir) / "spans.jsonl.partial").string());
}

void RunSink::KeepOnly(double before_from, double before_to, double after_from, double after_to) {
  filter_ = true;
  keep_[0] = before_from;
  keep_[1] = before_to;
  keep_[2] = after_from;
  keep_[3] = after_to;
}

Status RunSink::OnSpan(const Span& span) {
  const double t = span.arrival_s;
  if (keep_all_ || !filter_ || (t >= keep_[0] && t < keep_[1]) || (t >= keep_[2] && t < keep_[3])) {
    AddSpanToTable(span, *table_);
  }
  if (out_dir_.empty()) return Status::Ok();
  return spans_.Write(span);
}

Status RunSink::OnSnapshot(const MetricSnapshot& snap) {
  if (keep_all_) snapshots_.push_back(snap);
  if (out_dir_.empty()) return Status::Ok();
  // Fixed-width names sort by time: metrics/t000000900.000.prom
  const std::string path =
      (fs::path(out_dir_) / "metrics" / fmt::format("t{:013.3f}.prom", snap.timestamp_s)).string();
  std::ofstream f(path, std::ios::binary);
  f << FormatExposition(snap);
  if (!f.good()) return Status::IoError(path + ": write failed");
  return Status::Ok();
}

Status RunSink::Close() {
  TTFT_RETURN_IF_ERROR(spans_.Close());
  if (out_dir_.empty()) return Status::Ok();
  std::error_code ec;
  fs::rename(fs::path(out_dir_) / "spans.jsonl.partial", fs::path(out_dir_) / "spans.jsonl", ec);
  if (ec) return Status::IoError(fmt::format("{}/spans.jsonl: {}", out_dir_, ec.message()));
  return Status::Ok();
}

nlohmann::json Num(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

}  // namespace

nlohmann::json SymptomsJson(const WindowStats& w) {
  return nlohmann::json{
      {"from_s", Num(w.from_s)},
      {"to_s", Num(w.to_s)},
      {"requests", w.requests},
      {"request_rate_rps", Num(w.request_rate_rps)},
      {"ttft_p50_s", Num(w.ttft_s.p50)},
      {"ttft_p90_s", Num(w.ttft_s.p90)},
      {"ttft_p99_s", Num(w.ttft_s.p99)},
      {"queue_p50_s", Num(w.queue_s.p50)},
      {"queue_p99_s", Num(w.queue_s.p99)},
      {"prefill_p50_s", Num(w.prefill_s.p50)},
      {"prefill_p99_s", Num(w.prefill_s.p99)},
      {"itl_p50_s", Num(w.itl_s.p50)},
      {"error_rate", Num(w.error_rate)},
      {"replicas", w.replicas},
      {"prefix_cache_hit_rate", Num(w.prefix_cache_hit_rate)},
      {"prompt_tokens_p50", Num(w.prompt_tokens.p50)},
      {"prompt_tokens_p99", Num(w.prompt_tokens.p99)},
      {"preemptions", w.preemptions},
  };
}

namespace {

nlohmann::json SummaryJson(const Scenario& sc, const ScenarioRun& run) {
  const SimulationResult& r = run.result;
  nlohmann::json events = nlohmann::json::array();
  for (const AppliedEvent& e : r.events) {
    events.push_back({{"at_s", e.at_s},
                      {"kind", std::string(ToString(e.kind))},
                      {"target", e.target},
                      {"detail", e.detail}});
  }
  nlohmann::json j{
      {"scenario", sc.name},
      {"seed", sc.workload.seed},
      {"duration_s", sc.duration_s},
      {"requests", r.requests},
      {"finished_ok", r.finished_ok},
      {"errors", r.errors},
      {"engine_steps", r.steps},
      {"snapshots", r.snapshots},
      {"end_s", r.end_s},
      {"truncated", r.truncated},
      {"events", events},
  };
  if (std::isfinite(run.windows.change_at_s)) {
    j["change_at_s"] = run.windows.change_at_s;
    j["symptoms"] = {{"baseline", SymptomsJson(run.baseline)},
                     {"incident", SymptomsJson(run.incident)}};
  } else {
    j["symptoms"] = {{"all", SymptomsJson(run.incident)}};
  }
  return j;
}

// The rows of `table` arriving in [from_s, to_s).
std::vector<uint32_t> RowsIn(const SpanTable& table, const TimeRange& range) {
  std::vector<uint32_t> rows;
  const auto arrival = table.arrival_s();
  for (size_t i = 0; i < arrival.size(); ++i) {
    if (arrival[i] >= range.from_s && arrival[i] < range.to_s)
      rows.push_back(static_cast<uint32_t>(i));
  }
  return rows;
}

}  // namespace

AnalysisWindows ScenarioWindows(const Scenario& sc) {
  double change = sc.analysis.change_at_s;
  if (change < 0 && !sc.events.empty()) change = sc.events.front().at_s;
  const double start = std::max(0.0, sc.analysis.warmup_s);
  if (change < 0 || change <= start || change >= sc.duration_s) {
    AnalysisWindows w;
    w.baseline = {start, start};
    w.incident = {start, sc.duration_s};
    return w;
  }
  const double window_s = sc.analysis.window_s > 0 ? sc.analysis.window_s : sc.duration_s;
  return WindowsAround(change, window_s, {start, sc.duration_s});
}

std::vector<Annotation> AnnotationsOf(const SimulationResult& r) {
  std::vector<Annotation> out;
  for (const AppliedEvent& e : r.events) {
    out.push_back({e.at_s, std::string(ToString(e.kind)), e.target, e.detail});
  }
  return out;
}

Result<ScenarioRun> RunScenario(const Scenario& sc, const RunOptions& options) {
  ScenarioRun run;
  run.windows = ScenarioWindows(sc);
  const AnalysisWindows& w = run.windows;
  const bool has_change = std::isfinite(w.change_at_s);
  if (options.diagnose && !has_change) {
    return Status::Invalid(fmt::format(
        "{}: a diagnosis needs a change to compare around (analysis.change_at_s or an event)",
        sc.name));
  }
  RunSink sink;
  TTFT_RETURN_IF_ERROR(sink.Open(options.out_dir));
  if (options.diagnose) {
    sink.KeepAll();
  } else {
    sink.KeepOnly(w.baseline.from_s, w.baseline.to_s, w.incident.from_s, w.incident.to_s);
  }
  SimulateOptions sim;
  sim.progress = options.progress;
  TTFT_ASSIGN_OR_RETURN(run.result, Simulate(sc, sink, sim));
  TTFT_RETURN_IF_ERROR(sink.Close());
  if (options.diagnose) {
    run.spans = sink.TakeTable();
    run.snapshots = sink.TakeSnapshots();
    DiagnosisInput in;
    in.baseline = {run.spans.get(), w.baseline.from_s, w.baseline.to_s};
    in.incident = {run.spans.get(), w.incident.from_s, w.incident.to_s};
    in.change_at_s = w.change_at_s;
    in.baseline_snapshots = SnapshotsCovering(run.snapshots, w.baseline.from_s, w.baseline.to_s);
    in.incident_snapshots = SnapshotsCovering(run.snapshots, w.incident.from_s, w.incident.to_s);
    in.sources.push_back("simulated: " + sc.name);
    in.annotations = AnnotationsOf(run.result);
    // The replay runs the scenario's own fleet (ttft/attribution.h): each replica's
    // settings as of the baseline window's start, and as of the incident window's middle
    // where a deploy_config changed them in between (the `settings` factor).
    AttributionOptions& ao = in.options.attribution;
    for (const ReplicaSpec& r : sc.replicas) ao.known_engines[r.name] = r.engine;
    const double incident_mid_s = (w.incident.from_s + w.incident.to_s) / 2;
    for (const FleetEvent& e : sc.events) {
      if (e.kind == EventKind::kAddReplica) {
        ao.known_engines[e.new_replica.name] = e.new_replica.engine;
      } else if (e.kind == EventKind::kDeployConfig && e.engine_set && e.at_s <= incident_mid_s) {
        for (const std::string& name : e.replicas) {
          if (e.at_s <= w.baseline.from_s) {
            ao.known_engines[name] = e.engine;
          } else {
            ao.incident_engines[name] = e.engine;
          }
        }
      }
    }
    in.options.attribution.router = sc.router.kind;
    TTFT_ASSIGN_OR_RETURN(DiagnosisReport report, Diagnose(in));
    run.diagnosis = std::move(report);
    // The symptom table is a view of the report: one computation.
    run.baseline = run.diagnosis->baseline;
    run.incident = run.diagnosis->incident;
  } else {
    const SpanTable& t = sink.table();
    run.baseline = ComputeWindowStats(t, RowsIn(t, w.baseline), w.baseline.from_s, w.baseline.to_s);
    run.incident = ComputeWindowStats(t, RowsIn(t, w.incident), w.incident.from_s, w.incident.to_s);
  }
  run.summary = SummaryJson(sc, run);
  if (!options.out_dir.empty()) {
    const std::string path = (fs::path(options.out_dir) / "summary.json").string();
    std::ofstream f(path);
    f << run.summary.dump(2) << "\n";
    f.close();
    if (!f.good()) return Status::IoError(path + ": write failed");
  }
  return run;
}

std::vector<SignatureCheck> SeedSignature(const WindowStats& a, const WindowStats& b) {
  const double p99x = b.ttft_s.p99 / a.ttft_s.p99;
  const double p50x = b.ttft_s.p50 / a.ttft_s.p50;
  const double qx = b.queue_s.p99 / a.queue_s.p99;
  return {
      {"baseline p99 TTFT in 0.7-1.1 s", a.ttft_s.p99 >= 0.7 && a.ttft_s.p99 <= 1.1,
       fmt::format("{:.2f} s", a.ttft_s.p99)},
      {"incident p99 TTFT >= 4x baseline", p99x >= 4, fmt::format("{:.2f}x", p99x)},
      {"p50 TTFT rises at most 1.6x", p50x <= 1.6, fmt::format("{:.2f}x", p50x)},
      {"hit rate from >= 75% to <= 5%",
       a.prefix_cache_hit_rate >= 0.75 && b.prefix_cache_hit_rate <= 0.05,
       fmt::format("{:.1f}% -> {:.1f}%", a.prefix_cache_hit_rate * 100,
                   b.prefix_cache_hit_rate * 100)},
      {"p99 queue time up >= 5x", qx >= 5, fmt::format("{:.1f}x", qx)},
      {"error rate unchanged", std::fabs(b.error_rate - a.error_rate) < 0.001,
       fmt::format("{:.2f}% -> {:.2f}%", a.error_rate * 100, b.error_rate * 100)},
      {"replica count unchanged", a.replicas == b.replicas,
       fmt::format("{} -> {}", a.replicas, b.replicas)},
  };
}

Result<Drill> RunDrill(const Scenario& sc, const std::string& variant, const RunOptions& options) {
  if (!std::isfinite(ScenarioWindows(sc).change_at_s)) {
    return Status::Invalid(fmt::format(
        "{}: a drill needs a change to compare around (analysis.change_at_s or an event)",
        sc.name));
  }
  RunOptions with_diagnosis = options;
  with_diagnosis.diagnose = true;
  Drill d;
  TTFT_ASSIGN_OR_RETURN(d.run, RunScenario(sc, with_diagnosis));
  d.scenario = sc.name;
  d.description = sc.description;
  d.variant = variant;
  d.seed = sc.workload.seed;
  d.duration_s = sc.duration_s;
  d.replicas = static_cast<int64_t>(sc.replicas.size());
  const HardwareConfig& hw = sc.replicas.front().engine.hardware;
  d.model = hw.model.name;
  d.gpu = hw.gpu.name;
  d.dtype = std::string(ToString(hw.weight_dtype));
  d.tp = hw.tp;
  const CostModel cm(hw, sc.replicas.front().engine.cost);
  d.prefill_1000_after_5000_cached_s = cm.PrefillTime(1000, 5000);
  d.prefill_6000_uncached_s = cm.PrefillTime(6000, 0);
  d.signature = SeedSignature(d.run.baseline, d.run.incident);
  return d;
}

}  // namespace ttft
