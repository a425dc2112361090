// Attribution figures for docs/performance.md ("Attribution"); issue 13's target: the
// counterfactual replay of the seed drill (about 16,000 requests per window) in at
// most 5 s on one core.
//
//   attribution_bench [SCENARIO] [SEEDS] [RUNS]   (default seed-drill, 3, 3)
//
// Simulates SCENARIO once (not timed), then times ttft::Attribute on its recorded
// windows RUNS times on this thread (CPU and wall) and prints the best and the median,
// the replays and requests, the two model checks and the headline.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_clock.h"
#include "ttft/attribution.h"
#include "ttft/pipeline.h"
#include "ttft/scenario.h"

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "seed-drill";
  const int seeds = argc > 2 ? std::atoi(argv[2]) : 3;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 3;
  auto sc = ttft::BuiltinScenario(name);
  if (!sc.ok()) {
    fmt::print(stderr, "{}\n", sc.status().ToString());
    return 1;
  }
  ttft::RunOptions ro;
  ro.diagnose = true;
  auto run = ttft::RunScenario(*sc, ro);
  if (!run.ok()) {
    fmt::print(stderr, "{}\n", run.status().ToString());
    return 1;
  }
  const ttft::SpanTable& t = *run->spans;
  const ttft::AnalysisWindows& w = run->windows;
  std::vector<uint32_t> ra, rb;
  for (size_t i = 0; i < t.size(); ++i) {
    const double at = t.arrival_s()[i];
    if (at >= w.baseline.from_s && at < w.baseline.to_s) ra.push_back(static_cast<uint32_t>(i));
    if (at >= w.incident.from_s && at < w.incident.to_s) rb.push_back(static_cast<uint32_t>(i));
  }
  ttft::AttributionOptions ao;
  ao.seeds = seeds;
  for (const ttft::ReplicaSpec& r : sc->replicas) ao.known_engines[r.name] = r.engine;
  ao.router = sc->router.kind;
  std::vector<double> cpu, wall;
  ttft::Attribution a;
  for (int i = 0; i < runs; ++i) {
    const double c0 = ttft::bench::CpuSelf(), w0 = ttft::bench::Now();
    a = ttft::Attribute({&t, ra, w.baseline.from_s, w.baseline.to_s},
                        {&t, rb, w.incident.from_s, w.incident.to_s}, ao);
    cpu.push_back(ttft::bench::CpuSelf() - c0);
    wall.push_back(ttft::bench::Now() - w0);
  }
  std::sort(cpu.begin(), cpu.end());
  std::sort(wall.begin(), wall.end());
  fmt::print("{}: {} baseline and {} incident requests, {} replays, {} seeds\n", name,
             a.requests_baseline, a.requests_incident, a.replays, a.seeds);
  fmt::print(
      "attribution CPU best {:.3f} s, median {:.3f} s; wall best {:.3f} s, median {:.3f} s\n",
      cpu.front(), cpu[cpu.size() / 2], wall.front(), wall[wall.size() / 2]);
  fmt::print("incident check: replay {:.3f} s vs observed {:.3f} s [{:.3f}, {:.3f}] -> {}\n",
             a.replay_none_p99_s, a.observed_after_p99_s, a.observed_after_lo_s,
             a.observed_after_hi_s, a.incident_check_ok ? "reproduced" : "NOT reproduced");
  fmt::print(
      "baseline check: replay {:.3f} s [{:.3f}, {:.3f}] vs observed {:.3f} s [{:.3f}, {:.3f}] -> "
      "{}\n",
      a.replay_all_p99_s, a.replay_all_min_s, a.replay_all_max_s, a.observed_before_p99_s,
      a.observed_before_lo_s, a.observed_before_hi_s,
      a.baseline_check_ok ? "within noise" : "NOT within noise");
  fmt::print("{}\n", ttft::Headline(a));
  return 0;
}
