// Simulation outputs for the CLI (sim_output.h).
#include "cli/sim_output.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/commands.h"

namespace ttft::cli {
namespace fs = std::filesystem;

Status OutputSink::Open(const std::string& out_dir) {
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

void OutputSink::KeepOnly(double before_from, double before_to, double after_from,
                          double after_to) {
  filter_ = true;
  keep_[0] = before_from;
  keep_[1] = before_to;
  keep_[2] = after_from;
  keep_[3] = after_to;
}

Status OutputSink::OnSpan(const Span& span) {
  const double t = span.arrival_s;
  if (!filter_ || (t >= keep_[0] && t < keep_[1]) || (t >= keep_[2] && t < keep_[3])) {
    symptoms_.Add(span);
  }
  if (out_dir_.empty()) return Status::Ok();
  return spans_.Write(span);
}

Status OutputSink::OnSnapshot(const MetricSnapshot& snap) {
  if (out_dir_.empty()) return Status::Ok();
  // Fixed-width names sort by time: metrics/t000000900.000.prom
  const std::string path =
      (fs::path(out_dir_) / "metrics" / fmt::format("t{:013.3f}.prom", snap.timestamp_s)).string();
  std::ofstream f(path, std::ios::binary);
  f << FormatExposition(snap);
  if (!f.good()) return Status::IoError(path + ": write failed");
  return Status::Ok();
}

Status OutputSink::Close() {
  TTFT_RETURN_IF_ERROR(spans_.Close());
  if (out_dir_.empty()) return Status::Ok();
  std::error_code ec;
  fs::rename(fs::path(out_dir_) / "spans.jsonl.partial", fs::path(out_dir_) / "spans.jsonl", ec);
  if (ec) return Status::IoError(fmt::format("{}/spans.jsonl: {}", out_dir_, ec.message()));
  return Status::Ok();
}

Windows AnalysisWindows(const Scenario& sc) {
  Windows w;
  double change = sc.analysis.change_at_s;
  if (change < 0 && !sc.events.empty()) change = sc.events.front().at_s;
  const double start = std::max(0.0, sc.analysis.warmup_s);
  if (change < 0 || change <= start || change >= sc.duration_s) {
    w.after_from = start;
    w.after_to = sc.duration_s;
    return w;
  }
  w.has_change = true;
  w.change_at_s = change;
  const double win = sc.analysis.window_s > 0 ? sc.analysis.window_s : sc.duration_s;
  w.before_from = std::max(start, change - win);
  w.before_to = change;
  w.after_from = change;
  w.after_to = std::min(sc.duration_s, change + win);
  return w;
}

namespace {

nlohmann::json Num(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

}  // namespace

nlohmann::json SymptomsJson(const WindowSymptoms& w) {
  return nlohmann::json{
      {"from_s", Num(w.from_s)},
      {"to_s", Num(w.to_s)},
      {"requests", w.requests},
      {"request_rate_rps", Num(w.request_rate_rps)},
      {"ttft_p50_s", Num(w.ttft_p50_s)},
      {"ttft_p90_s", Num(w.ttft_p90_s)},
      {"ttft_p99_s", Num(w.ttft_p99_s)},
      {"queue_p50_s", Num(w.queue_p50_s)},
      {"queue_p99_s", Num(w.queue_p99_s)},
      {"prefill_p50_s", Num(w.prefill_p50_s)},
      {"prefill_p99_s", Num(w.prefill_p99_s)},
      {"itl_p50_s", Num(w.itl_p50_s)},
      {"error_rate", Num(w.error_rate)},
      {"replicas", w.replicas},
      {"prefix_cache_hit_rate", Num(w.prefix_cache_hit_rate)},
      {"prompt_tokens_p50", Num(w.prompt_tokens_p50)},
      {"prompt_tokens_p99", Num(w.prompt_tokens_p99)},
      {"preemptions", w.preemptions},
  };
}

nlohmann::json SummaryJson(const Scenario& sc, const SimulationResult& r, const Windows& win,
                           const SymptomCollector& symptoms) {
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
  if (win.has_change) {
    j["change_at_s"] = win.change_at_s;
    j["symptoms"] = {{"baseline", SymptomsJson(symptoms.Compute(win.before_from, win.before_to))},
                     {"incident", SymptomsJson(symptoms.Compute(win.after_from, win.after_to))}};
  } else {
    j["symptoms"] = {{"all", SymptomsJson(symptoms.Compute(win.after_from, win.after_to))}};
  }
  return j;
}

namespace {

std::string Secs(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (v < 1) return fmt::format("{:.0f} ms", v * 1000);
  return fmt::format("{:.2f} s", v);
}
std::string Pct(double v) { return std::isfinite(v) ? fmt::format("{:.1f}%", v * 100) : "n/a"; }
std::string Count(double v) { return std::isfinite(v) ? fmt::format("{:.0f}", v) : "n/a"; }
std::string Ratio(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b) || a <= 0) return "";
  return fmt::format("{:.2f}x", b / a);
}

}  // namespace

std::string SymptomTableText(const WindowSymptoms& a, const WindowSymptoms& b, bool colour) {
  const char* bold = colour ? "\033[1m" : "";
  const char* reset = colour ? "\033[0m" : "";
  const char* red = colour ? "\033[31m" : "";
  std::string out = fmt::format("{}{:<24}{:>14}{:>14}{:>10}{}\n", bold, "symptom", "baseline",
                                "incident", "change", reset);
  auto row = [&](const char* name, const std::string& x, const std::string& y,
                 const std::string& ratio, bool alarm) {
    out += fmt::format("{:<24}{:>14}{:>14}{}{:>10}{}\n", name, x, y, alarm ? red : "", ratio,
                       alarm ? reset : "");
  };
  auto big = [](double x, double y, double factor) {
    return std::isfinite(x) && std::isfinite(y) && x > 0 && y / x >= factor;
  };
  row("window", fmt::format("[{:.0f},{:.0f}) s", a.from_s, a.to_s),
      fmt::format("[{:.0f},{:.0f}) s", b.from_s, b.to_s), "", false);
  row("requests", Count(static_cast<double>(a.requests)), Count(static_cast<double>(b.requests)),
      Ratio(static_cast<double>(a.requests), static_cast<double>(b.requests)), false);
  row("p50 TTFT", Secs(a.ttft_p50_s), Secs(b.ttft_p50_s), Ratio(a.ttft_p50_s, b.ttft_p50_s),
      big(a.ttft_p50_s, b.ttft_p50_s, 2));
  row("p99 TTFT", Secs(a.ttft_p99_s), Secs(b.ttft_p99_s), Ratio(a.ttft_p99_s, b.ttft_p99_s),
      big(a.ttft_p99_s, b.ttft_p99_s, 2));
  row("p99 queue time", Secs(a.queue_p99_s), Secs(b.queue_p99_s),
      Ratio(a.queue_p99_s, b.queue_p99_s), big(a.queue_p99_s, b.queue_p99_s, 2));
  row("p99 prefill time", Secs(a.prefill_p99_s), Secs(b.prefill_p99_s),
      Ratio(a.prefill_p99_s, b.prefill_p99_s), big(a.prefill_p99_s, b.prefill_p99_s, 2));
  row("inter-token latency p50", Secs(a.itl_p50_s), Secs(b.itl_p50_s),
      Ratio(a.itl_p50_s, b.itl_p50_s), big(a.itl_p50_s, b.itl_p50_s, 1.5));
  row("error rate", Pct(a.error_rate), Pct(b.error_rate), "", false);
  row("replicas", Count(static_cast<double>(a.replicas)), Count(static_cast<double>(b.replicas)),
      "", a.replicas != b.replicas);
  row("prefix-cache hit rate", Pct(a.prefix_cache_hit_rate), Pct(b.prefix_cache_hit_rate), "",
      std::isfinite(a.prefix_cache_hit_rate) &&
          b.prefix_cache_hit_rate < 0.5 * a.prefix_cache_hit_rate);
  row("p99 prompt tokens", Count(a.prompt_tokens_p99), Count(b.prompt_tokens_p99),
      Ratio(a.prompt_tokens_p99, b.prompt_tokens_p99), false);
  row("preemptions", Count(static_cast<double>(a.preemptions)),
      Count(static_cast<double>(b.preemptions)), "", b.preemptions > 2 * a.preemptions + 10);
  return out;
}

std::string SymptomColumnText(const WindowSymptoms& w) {
  std::string out;
  auto row = [&](const char* name, const std::string& v) {
    out += fmt::format("{:<24}{:>16}\n", name, v);
  };
  row("window", fmt::format("[{:.0f},{:.0f}) s", w.from_s, w.to_s));
  row("requests", Count(static_cast<double>(w.requests)));
  row("request rate", fmt::format("{:.2f}/s", w.request_rate_rps));
  row("p50 TTFT", Secs(w.ttft_p50_s));
  row("p90 TTFT", Secs(w.ttft_p90_s));
  row("p99 TTFT", Secs(w.ttft_p99_s));
  row("p99 queue time", Secs(w.queue_p99_s));
  row("p99 prefill time", Secs(w.prefill_p99_s));
  row("inter-token latency p50", Secs(w.itl_p50_s));
  row("error rate", Pct(w.error_rate));
  row("replicas", Count(static_cast<double>(w.replicas)));
  row("prefix-cache hit rate", Pct(w.prefix_cache_hit_rate));
  row("p99 prompt tokens", Count(w.prompt_tokens_p99));
  row("preemptions", Count(static_cast<double>(w.preemptions)));
  return out;
}

std::vector<MetricSnapshot> SnapshotsCovering(const std::vector<MetricSnapshot>& all, double from,
                                              double to) {
  std::vector<MetricSnapshot> out;
  const MetricSnapshot* before = nullptr;
  for (const MetricSnapshot& s : all) {
    if (s.timestamp_s < from) before = &s;
    if (s.timestamp_s >= from && s.timestamp_s <= to) out.push_back(s);
  }
  // A scrape exactly at `from` is the starting point; an earlier one would add the
  // previous interval's requests to the window.
  if (before != nullptr && (out.empty() || out.front().timestamp_s > from)) {
    out.insert(out.begin(), *before);
  }
  return out;
}

Result<SimulationResult> RunWithProgress(const Scenario& sc, SimulationSink& sink, bool quiet) {
  SimulateOptions opts;
  const auto start = std::chrono::steady_clock::now();
  const bool show = !quiet && StderrIsTty();
  bool shown = false;
  if (show) {
    opts.progress = [&](double sim_s, double fraction) {
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (wall < 1.0) return;  // only runs longer than a second show progress
      shown = true;
      std::fprintf(stderr, "\r  simulating %s: %5.1f%%  t=%.0f s  (%.1f s wall)", sc.name.c_str(),
                   fraction * 100, sim_s, wall);
      std::fflush(stderr);
    };
  }
  auto r = Simulate(sc, sink, opts);
  if (shown) std::fprintf(stderr, "\r\033[K");
  return r;
}

}  // namespace ttft::cli
