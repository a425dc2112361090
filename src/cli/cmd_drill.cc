// `ttft drill`: the main job. Runs the built-in seed-drill scenario (a deploy moves
// a per-request timestamp ahead of a 5,000-token static prefix) and prints the
// symptom table before and after the deploy, the seed's signature checked against
// it, and the cost model's check of the seed's arithmetic.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/sim_output.h"
#include "ttft/diagnose.h"
#include "ttft/model.h"
#include "ttft/report.h"
#include "ttft/scenario.h"

namespace ttft::cli {

Result<Scenario> LoadScenarioArg(const std::string& arg);  // cmd_simulate.cc

namespace {

struct Check {
  std::string what;
  bool pass;
  std::string observed;
};

// The seed's symptom signature (issue 2, section 6).
std::vector<Check> SeedSignature(const WindowSymptoms& a, const WindowSymptoms& b) {
  const double p99x = b.ttft_p99_s / a.ttft_p99_s;
  const double p50x = b.ttft_p50_s / a.ttft_p50_s;
  const double qx = b.queue_p99_s / a.queue_p99_s;
  return {
      {"baseline p99 TTFT in 0.7-1.1 s", a.ttft_p99_s >= 0.7 && a.ttft_p99_s <= 1.1,
       fmt::format("{:.2f} s", a.ttft_p99_s)},
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

nlohmann::json DrillWindowJson(const WindowSymptoms& w) {
  nlohmann::json j = SymptomsJson(w);
  return j;
}

// Forwards to the drill's OutputSink and keeps every span in a table for the diagnosis.
class DiagnosingSink : public SimulationSink {
 public:
  explicit DiagnosingSink(OutputSink& out) : out_(out) {}
  Status OnSpan(const Span& span) override {
    AddSpanToTable(span, table_);
    return out_.OnSpan(span);
  }
  Status OnSnapshot(const MetricSnapshot& snapshot) override {
    snapshots_.push_back(snapshot);
    return out_.OnSnapshot(snapshot);
  }
  const SpanTable& table() const { return table_; }
  const std::vector<MetricSnapshot>& snapshots() const { return snapshots_; }

 private:
  OutputSink& out_;
  SpanTable table_;
  std::vector<MetricSnapshot> snapshots_;
};

}  // namespace

Runner RegisterDrill(CLI::App& app) {
  struct Opts {
    std::string scenario = "seed-drill", out, format = "text", variant = "seed";
    int64_t seed = -1;
    bool quiet = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--scenario", o->scenario, "Scenario file or built-in name")
      ->capture_default_str();
  app.add_option("--seed", o->seed, "Override the scenario's seed");
  app.add_option("--variant", o->variant,
                 "seed (the deploy), no-deploy (a new tenant, no deploy) or one-region (a drained "
                 "pool in one region)")
      ->check(CLI::IsMember({"seed", "no-deploy", "one-region"}))
      ->capture_default_str();
  app.add_option("--format", o->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--out", o->out, "Also write spans.jsonl, metrics/ and summary.json here");
  app.add_flag("--quiet", o->quiet, "No progress on standard error");
  return [o]() -> Status {
    std::string name = o->scenario;
    if (o->variant != "seed") {
      if (name != "seed-drill") {
        return Status::Invalid("--variant and --scenario are exclusive: a variant is a scenario");
      }
      name = "drill-" + o->variant;
    }
    TTFT_ASSIGN_OR_RETURN(Scenario sc, LoadScenarioArg(name));
    if (o->seed >= 0) sc.workload.seed = static_cast<uint64_t>(o->seed);
    const Windows win = AnalysisWindows(sc);
    if (!win.has_change) {
      return Status::Invalid(fmt::format(
          "{}: a drill needs a change to compare around (analysis.change_at_s or an event)",
          sc.name));
    }
    OutputSink sink;
    TTFT_RETURN_IF_ERROR(sink.Open(o->out));
    DiagnosingSink dsink(sink);
    // Progress on standard error only when it is a terminal, not --quiet, and the run
    // takes over a second (as `ttft simulate`); the line is erased when done.
    auto simulated = RunWithProgress(sc, dsink, o->quiet);
    TTFT_ASSIGN_OR_RETURN(SimulationResult r, std::move(simulated));
    TTFT_RETURN_IF_ERROR(sink.Close());
    DiagnosisInput din;
    din.baseline = {&dsink.table(), win.before_from, win.before_to};
    din.incident = {&dsink.table(), win.after_from, win.after_to};
    din.change_at_s = win.change_at_s;
    din.baseline_snapshots = SnapshotsCovering(dsink.snapshots(), win.before_from, win.before_to);
    din.incident_snapshots = SnapshotsCovering(dsink.snapshots(), win.after_from, win.after_to);
    din.sources.push_back("simulated: " + sc.name);
    for (const AppliedEvent& e : r.events) {
      din.annotations.push_back({e.at_s, std::string(ToString(e.kind)), e.target, e.detail});
    }
    TTFT_ASSIGN_OR_RETURN(DiagnosisReport diagnosis, Diagnose(din));
    const WindowSymptoms before = sink.symptoms().Compute(win.before_from, win.before_to);
    const WindowSymptoms after = sink.symptoms().Compute(win.after_from, win.after_to);
    const HardwareConfig& hw = sc.replicas.front().engine.hardware;
    const CostModel cm(hw, sc.replicas.front().engine.cost);
    const double cached_s = cm.PrefillTime(1000, 5000);
    const double cold_s = cm.PrefillTime(6000, 0);
    const std::vector<Check> checks = SeedSignature(before, after);
    if (!o->out.empty()) {
      std::ofstream f(o->out + "/summary.json");
      f << SummaryJson(sc, r, win, sink.symptoms()).dump(2) << "\n";
    }

    if (o->format == "json") {
      nlohmann::json events = nlohmann::json::array();
      for (const AppliedEvent& e : r.events) {
        events.push_back({{"at_s", e.at_s},
                          {"kind", std::string(ToString(e.kind))},
                          {"target", e.target},
                          {"detail", e.detail}});
      }
      nlohmann::json sig = nlohmann::json::array();
      for (const Check& c : checks) {
        sig.push_back({{"check", c.what}, {"pass", c.pass}, {"observed", c.observed}});
      }
      const nlohmann::json dj = ReportJson(diagnosis);
      nlohmann::json j{
          {"scenario", sc.name},
          {"variant", o->variant},
          {"verdict", dj["verdict"]},
          {"hypotheses", dj["hypotheses"]},
          {"diagnosis", dj},
          {"seed", sc.workload.seed},
          {"change_at_s", win.change_at_s},
          {"events", events},
          {"baseline", DrillWindowJson(before)},
          {"incident", DrillWindowJson(after)},
          {"signature", sig},
          {"cost",
           {{"model", hw.model.name},
            {"gpu", hw.gpu.name},
            {"dtype", std::string(ToString(hw.weight_dtype))},
            {"tp", hw.tp},
            {"prefill_1000_after_5000_cached_s", cached_s},
            {"prefill_6000_uncached_s", cold_s}}},
      };
      std::cout << j.dump(2) << "\n";
      return Status::Ok();
    }

    const bool colour = StdoutIsTty() && std::getenv("NO_COLOR") == nullptr;
    std::cout << fmt::format("ttft drill: {}\n", sc.name);
    if (!sc.description.empty()) std::cout << sc.description << "\n";
    std::cout << fmt::format(
        "\n{} requests simulated over {:.0f} s on {} replicas ({}, seed {}).\n", r.requests,
        sc.duration_s, sc.replicas.size(), hw.model.name, sc.workload.seed);
    for (const AppliedEvent& e : r.events) {
      std::cout << fmt::format("  t={:.0f} s  {}  {}  {}\n", e.at_s, ToString(e.kind), e.target,
                               e.detail);
    }
    std::cout << fmt::format(
        "\nSymptoms, {:.0f} s before versus {:.0f} s after the change at "
        "t={:.0f} s:\n\n",
        win.before_to - win.before_from, win.after_to - win.after_from, win.change_at_s);
    std::cout << SymptomTableText(before, after, colour);
    std::cout << "\nThe seed's signature:\n";
    for (const Check& c : checks) {
      std::cout << fmt::format("  [{}] {:<34} {}\n", c.pass ? "ok" : "--", c.what, c.observed);
    }
    std::cout << fmt::format(
        "\nCost check ({} {} on {} x{}): prefill 1,000 uncached tokens after a 5,000-token "
        "cached prefix {:.3f} s (seed ~0.07 s); 6,000 uncached {:.3f} s (seed ~0.42 s).\n",
        hw.model.name, ToString(hw.weight_dtype), hw.gpu.name, hw.tp, cached_s, cold_s);
    std::cout << "\n== Diagnosis (ttft diagnose) ==\n\n" << RenderText(diagnosis, colour);
    return Status::Ok();
  };
}

}  // namespace ttft::cli
