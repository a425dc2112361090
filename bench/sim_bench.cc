// Simulated requests per wall-clock second on one core, for the seed drill and for
// one hour of a chat workload on 8 replicas (issue 2's speed goal: >= 100,000/s).
//
//   build/sim_bench [REPEATS] [SCENARIO [DURATION_S]]
//
// SCENARIO limits the run to one built-in scenario and DURATION_S shortens it
// (for profiling under callgrind, whose instruction counts are repeatable).
//
// Each scenario runs REPEATS times (default 3) into a sink that keeps nothing (the
// simulator alone) and once into a sink that formats every span as JSON and every
// scrape as exposition text (what `ttft simulate` pays, minus the disk). Both wall
// and CPU time (CLOCK_PROCESS_CPUTIME_ID) are printed: on a shared machine the CPU
// figure is the one-core rate, the wall figure what the run took. The best
// repeat is reported: these machines are shared and noisy.
//
// Last, the seed drill end to end through the library's one simulate-and-diagnose call
// (ttft::RunDrill, what `ttft drill`, the incident suite test and this benchmark share):
// simulation, the diagnosis and the checks, best of REPEATS.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>

#include "bench_clock.h"
#include "ttft/fleet.h"
#include "ttft/metrics.h"
#include "ttft/pipeline.h"
#include "ttft/scenario.h"
#include "ttft/spans.h"

namespace {

class NullSink : public ttft::SimulationSink {
 public:
  ttft::Status OnSpan(const ttft::Span&) override { return ttft::Status::Ok(); }
  ttft::Status OnSnapshot(const ttft::MetricSnapshot&) override { return ttft::Status::Ok(); }
};

class FormatSink : public ttft::SimulationSink {
 public:
  ttft::Status OnSpan(const ttft::Span& s) override {
    buf_.clear();
    ttft::AppendSpanJson(s, buf_);
    bytes += buf_.size() + 1;
    return ttft::Status::Ok();
  }
  ttft::Status OnSnapshot(const ttft::MetricSnapshot& snap) override {
    bytes += ttft::FormatExposition(snap).size();
    return ttft::Status::Ok();
  }
  size_t bytes = 0;

 private:
  std::string buf_;
};

struct Timing {
  double wall_s = 0;
  double cpu_s = 0;
};

template <typename Sink>
Timing TimeRun(const ttft::Scenario& sc, int64_t& requests, int64_t& steps) {
  Sink sink;
  const double c0 = ttft::bench::CpuSelf();
  const auto t0 = std::chrono::steady_clock::now();
  auto r = ttft::Simulate(sc, sink, {});
  Timing t;
  t.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t.cpu_s = ttft::bench::CpuSelf() - c0;
  if (!r.ok()) {
    fmt::print(stderr, "{}\n", r.status().ToString());
    std::exit(1);
  }
  requests = r->requests;
  steps = r->steps;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const std::string only = argc > 2 ? argv[2] : "";
  const double duration_s = argc > 3 ? std::atof(argv[3]) : 0;
  fmt::print("{:<16} {:>8} {:>10} {:>8} {:>8} {:>11} {:>11} {:>12} {:>12}\n", "scenario",
             "requests", "steps", "wall s", "cpu s", "req/s wall", "req/s cpu", "+output wall",
             "+output cpu");
  for (const char* name : {"seed-drill", "bench-chat-8x1h"}) {
    if (!only.empty() && only != name) continue;
    auto sc = ttft::BuiltinScenario(name);
    if (!sc.ok()) {
      fmt::print(stderr, "{}\n", sc.status().ToString());
      return 1;
    }
    if (duration_s > 0) sc->duration_s = sc->workload.duration_s = duration_s;
    int64_t requests = 0, steps = 0;
    Timing best{1e30, 1e30};
    for (int i = 0; i < repeats; ++i) {
      const Timing t = TimeRun<NullSink>(*sc, requests, steps);
      best.wall_s = std::min(best.wall_s, t.wall_s);
      best.cpu_s = std::min(best.cpu_s, t.cpu_s);
    }
    const Timing out = TimeRun<FormatSink>(*sc, requests, steps);
    const double n = static_cast<double>(requests);
    fmt::print("{:<16} {:>8} {:>10} {:>8.3f} {:>8.3f} {:>11.0f} {:>11.0f} {:>12.0f} {:>12.0f}\n",
               name, requests, steps, best.wall_s, best.cpu_s, n / best.wall_s, n / best.cpu_s,
               n / out.wall_s, n / out.cpu_s);
  }
  if (only.empty() || only == "drill") {
    auto sc = ttft::BuiltinScenario("seed-drill");
    if (!sc.ok()) return 1;
    Timing best{1e30, 1e30};
    std::string top;
    for (int i = 0; i < repeats; ++i) {
      const double t0 = ttft::bench::Now(), c0 = ttft::bench::CpuSelf();
      auto drill = ttft::RunDrill(*sc, "seed", {});
      if (!drill.ok()) {
        fmt::print(stderr, "{}\n", drill.status().ToString());
        return 1;
      }
      best.wall_s = std::min(best.wall_s, ttft::bench::Now() - t0);
      best.cpu_s = std::min(best.cpu_s, ttft::bench::CpuSelf() - c0);
      top = drill->run.diagnosis->hypotheses.front().id;
    }
    fmt::print("drill (simulate + diagnose, RunDrill): wall {:.3f} s, cpu {:.3f} s; top cause {}\n",
               best.wall_s, best.cpu_s, top);
  }
  return 0;
}
