// The diff-mode prediction for the seed incident (issue 11: at most 5 s), for
// docs/performance.md.
//
//   whatif_bench [SEEDS [THREADS [RUNS]]]   (defaults: 5, 0 = all cores, 3)
//
// Times what `ttft lint examples/seed/app-v1.jinja --diff examples/seed/app-v2.jinja
// --vars examples/seed/vars.yaml --scenario scenarios/seed-drill.yaml
// --scenario-template app` does, in process: parse and lint both versions (the
// approximation), load the scenario, and simulate both versions over SEEDS seeds
// (PredictTemplateChange). Plain main(): RUNS timed runs of the whole job, wall and CPU
// time of each, and the prediction (the same every run).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "bench_clock.h"
#include "ttft/lint.h"
#include "ttft/scenario.h"
#include "ttft/template.h"
#include "ttft/tokenizer.h"
#include "ttft/whatif.h"

namespace {

using ttft::bench::CpuSelf;
using ttft::bench::Now;

ttft::Result<std::string> Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return ttft::Status::NotFound(path + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

ttft::Result<ttft::WhatIfReport> Predict(const std::string& root, int seeds, int threads) {
  const std::string dir = root + "/examples/seed/";
  TTFT_ASSIGN_OR_RETURN(ttft::VarsFile vars, ttft::ReadVarsFile(dir + "vars.yaml"));
  const ttft::Tokenizer tok = ttft::Tokenizer::Approximate();
  ttft::TemplateLintReport lints[2];
  const char* names[2] = {"app-v1.jinja", "app-v2.jinja"};
  for (int i = 0; i < 2; ++i) {
    TTFT_ASSIGN_OR_RETURN(std::string src, Slurp(dir + names[i]));
    TTFT_ASSIGN_OR_RETURN(ttft::Template t, ttft::Template::Parse(src, dir + names[i]));
    TTFT_ASSIGN_OR_RETURN(lints[i], ttft::LintTemplate(t, src, vars, tok, {}));
  }
  TTFT_ASSIGN_OR_RETURN(ttft::Scenario sc, ttft::LoadScenario(root + "/scenarios/seed-drill.yaml"));
  ttft::WhatIfOptions o;
  o.template_name = "app";
  o.seeds = seeds;
  o.threads = threads;
  return ttft::PredictTemplateChange(lints[0], lints[1], sc, o);
}

int Run(int argc, char** argv) {
  const int seeds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 0;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 3;
  const std::string root = TTFT_SOURCE_DIR;  // set by CMake for the benchmarks
  std::printf("seed-incident what-if: %d seeds x 2 versions, %d threads (0 = all; %u hardware)\n",
              seeds, threads, std::thread::hardware_concurrency());
  for (int r = 0; r < runs; ++r) {
    const double w0 = Now(), c0 = CpuSelf();
    auto rep = Predict(root, seeds, threads);
    const double w1 = Now(), c1 = CpuSelf();
    if (!rep.ok()) {
      std::fprintf(stderr, "%s\n", rep.status().message().c_str());
      return 2;
    }
    std::printf(
        "run %d: %5.2f s wall, %5.2f s CPU; p99 TTFT %.3f -> %.3f s (x%.2f), hit rate of %s "
        "%.1f%% -> %.1f%%\n",
        r + 1, w1 - w0, c1 - c0, rep->old_arm.p99_ttft_s.mean, rep->new_arm.p99_ttft_s.mean,
        rep->p99_ratio.mean, rep->tenants.front().c_str(), 100 * rep->old_arm.tenant_hit_rate.mean,
        100 * rep->new_arm.tenant_hit_rate.mean);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
