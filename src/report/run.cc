// Renderers of scenario runs (ttft/report.h): the symptom table of `ttft simulate`
// and `ttft drill`, and the drill's text and JSON.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "ttft/format.h"
#include "ttft/pipeline.h"
#include "ttft/report.h"

namespace ttft {
namespace {

// "2.00x" (after / before), "" when either is not finite or before <= 0: the symptom
// table's change column.
std::string Change(double a, double b) {
  const double r = numfmt::Ratio(a, b);
  return std::isfinite(r) ? fmt::format("{:.2f}x", r) : "";
}

}  // namespace

std::string RenderSymptomTable(const WindowStats& a, const WindowStats& b, bool colour) {
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
  row("window", numfmt::Window(a.from_s, a.to_s), numfmt::Window(b.from_s, b.to_s), "", false);
  row("requests", numfmt::Num(static_cast<double>(a.requests)),
      numfmt::Num(static_cast<double>(b.requests)),
      Change(static_cast<double>(a.requests), static_cast<double>(b.requests)), false);
  row("p50 TTFT", numfmt::Secs(a.ttft_s.p50), numfmt::Secs(b.ttft_s.p50),
      Change(a.ttft_s.p50, b.ttft_s.p50), big(a.ttft_s.p50, b.ttft_s.p50, 2));
  row("p99 TTFT", numfmt::Secs(a.ttft_s.p99), numfmt::Secs(b.ttft_s.p99),
      Change(a.ttft_s.p99, b.ttft_s.p99), big(a.ttft_s.p99, b.ttft_s.p99, 2));
  row("p99 queue time", numfmt::Secs(a.queue_s.p99), numfmt::Secs(b.queue_s.p99),
      Change(a.queue_s.p99, b.queue_s.p99), big(a.queue_s.p99, b.queue_s.p99, 2));
  row("p99 prefill time", numfmt::Secs(a.prefill_s.p99), numfmt::Secs(b.prefill_s.p99),
      Change(a.prefill_s.p99, b.prefill_s.p99), big(a.prefill_s.p99, b.prefill_s.p99, 2));
  row("inter-token latency p50", numfmt::Secs(a.itl_s.p50), numfmt::Secs(b.itl_s.p50),
      Change(a.itl_s.p50, b.itl_s.p50), big(a.itl_s.p50, b.itl_s.p50, 1.5));
  row("error rate", numfmt::Pct1(a.error_rate), numfmt::Pct1(b.error_rate), "", false);
  row("replicas", numfmt::Num(ReplicasShown(a)), numfmt::Num(ReplicasShown(b)), "",
      a.replicas != b.replicas);
  row("prefix-cache hit rate", numfmt::Pct1(a.prefix_cache_hit_rate),
      numfmt::Pct1(b.prefix_cache_hit_rate), "",
      std::isfinite(a.prefix_cache_hit_rate) &&
          b.prefix_cache_hit_rate < 0.5 * a.prefix_cache_hit_rate);
  row("p99 prompt tokens", numfmt::Num(a.prompt_tokens.p99), numfmt::Num(b.prompt_tokens.p99),
      Change(a.prompt_tokens.p99, b.prompt_tokens.p99), false);
  row("preemptions", numfmt::Num(static_cast<double>(a.preemptions)),
      numfmt::Num(static_cast<double>(b.preemptions)), "", b.preemptions > 2 * a.preemptions + 10);
  return out;
}

std::string RenderSymptomColumn(const WindowStats& w) {
  std::string out;
  auto row = [&](const char* name, const std::string& v) {
    out += fmt::format("{:<24}{:>16}\n", name, v);
  };
  row("window", numfmt::Window(w.from_s, w.to_s));
  row("requests", numfmt::Num(static_cast<double>(w.requests)));
  row("request rate", numfmt::Fixed(w.request_rate_rps, 2) + "/s");
  row("p50 TTFT", numfmt::Secs(w.ttft_s.p50));
  row("p90 TTFT", numfmt::Secs(w.ttft_s.p90));
  row("p99 TTFT", numfmt::Secs(w.ttft_s.p99));
  row("p99 queue time", numfmt::Secs(w.queue_s.p99));
  row("p99 prefill time", numfmt::Secs(w.prefill_s.p99));
  row("inter-token latency p50", numfmt::Secs(w.itl_s.p50));
  row("error rate", numfmt::Pct1(w.error_rate));
  row("replicas", numfmt::Num(ReplicasShown(w)));
  row("prefix-cache hit rate", numfmt::Pct1(w.prefix_cache_hit_rate));
  row("p99 prompt tokens", numfmt::Num(w.prompt_tokens.p99));
  row("preemptions", numfmt::Num(static_cast<double>(w.preemptions)));
  return out;
}

nlohmann::json DrillJson(const Drill& d) {
  const ScenarioRun& run = d.run;
  nlohmann::json events = nlohmann::json::array();
  for (const AppliedEvent& e : run.result.events) {
    events.push_back({{"at_s", e.at_s},
                      {"kind", std::string(ToString(e.kind))},
                      {"target", e.target},
                      {"detail", e.detail}});
  }
  nlohmann::json sig = nlohmann::json::array();
  for (const SignatureCheck& c : d.signature) {
    sig.push_back({{"check", c.what}, {"pass", c.pass}, {"observed", c.observed}});
  }
  const nlohmann::json dj = ReportJson(*run.diagnosis);
  return nlohmann::json{
      {"scenario", d.scenario},
      {"variant", d.variant},
      {"verdict", dj["verdict"]},
      {"hypotheses", dj["hypotheses"]},
      {"diagnosis", dj},
      {"seed", d.seed},
      {"change_at_s", run.windows.change_at_s},
      {"events", events},
      {"baseline", SymptomsJson(run.baseline)},
      {"incident", SymptomsJson(run.incident)},
      {"signature", sig},
      {"cost",
       {{"model", d.model},
        {"gpu", d.gpu},
        {"dtype", d.dtype},
        {"tp", d.tp},
        {"prefill_1000_after_5000_cached_s", d.prefill_1000_after_5000_cached_s},
        {"prefill_6000_uncached_s", d.prefill_6000_uncached_s}}},
  };
}

std::string RenderDrillText(const Drill& d, bool colour) {
  const ScenarioRun& run = d.run;
  const AnalysisWindows& win = run.windows;
  std::string out = fmt::format("ttft drill: {}\n", escape::Terminal(d.scenario));
  if (!d.description.empty()) out += escape::Terminal(d.description) + "\n";
  out +=
      fmt::format("\n{} requests simulated over {:.0f} s on {} replicas ({}, seed {}).\n",
                  run.result.requests, d.duration_s, d.replicas, escape::Terminal(d.model), d.seed);
  for (const AppliedEvent& e : run.result.events) {
    out += fmt::format("  {}  {}  {}  {}\n", numfmt::TimePoint(e.at_s), ToString(e.kind),
                       escape::Terminal(e.target), escape::Terminal(e.detail));
  }
  out += fmt::format(
      "\nSymptoms, {:.0f} s before versus {:.0f} s after the change at "
      "{}:\n\n",
      win.baseline.to_s - win.baseline.from_s, win.incident.to_s - win.incident.from_s,
      numfmt::TimePoint(win.change_at_s));
  out += RenderSymptomTable(run.baseline, run.incident, colour);
  out += "\nThe seed's signature:\n";
  for (const SignatureCheck& c : d.signature) {
    out += fmt::format("  [{}] {:<34} {}\n", c.pass ? "ok" : "--", escape::Terminal(c.what),
                       escape::Terminal(c.observed));
  }
  out += fmt::format(
      "\nCost check ({} {} on {} x{}): prefill 1,000 uncached tokens after a 5,000-token "
      "cached prefix {:.3f} s (seed ~0.07 s); 6,000 uncached {:.3f} s (seed ~0.42 s).\n",
      escape::Terminal(d.model), escape::Terminal(d.dtype), escape::Terminal(d.gpu), d.tp,
      d.prefill_1000_after_5000_cached_s, d.prefill_6000_uncached_s);
  out += "\n== Diagnosis (ttft diagnose) ==\n\n" + RenderText(*run.diagnosis, colour);
  return out;
}

}  // namespace ttft
