// Telemetry and statistics figures for docs/performance.md ("Telemetry and statistics").
//
//   ingest_bench [SPANS] [--ttft-only]   (default 400000 spans)
//
// Generates a span JSONL file of SPANS spans (the writer's exact format), then on one
// core: reads it into the columnar table and computes the TTFT p99 (MB/s; again with the
// file split in two byte ranges on two threads, ReadSpanTable), does the
// same p99 with `jq` and with pandas (`python3 -c`) when present and reports the
// ratios, reports the table's bytes/span, DDSketch insertion rate and the time to
// merge 1,000 replica sketches. Plain main(): each figure is one timed run of a
// whole job, as an operator would run it.
#include <fmt/format.h>

#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench_clock.h"
#include "ttft/spans.h"
#include "ttft/stats.h"
#include "ttft/window_stats.h"

namespace {

using ttft::bench::CpuSelf;
using ttft::bench::Now;

// CPU seconds (user + system) of this process's reaped children.
double CpuChildren() {
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  return ttft::bench::Sec(ru.ru_utime) + ttft::bench::Sec(ru.ru_stime);
}

// Wall and CPU seconds of one job. On a shared machine CPU time is the steadier
// "one core" figure; both are printed.
struct Timing {
  double wall = NAN;
  double cpu = NAN;
};

// Runs a shell command; returns its timing (NaN if it failed) and first line of stdout.
std::pair<Timing, std::string> Timed(const std::string& cmd) {
  const double t0 = Now(), c0 = CpuChildren();
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {{}, ""};
  char buf[256] = {0};
  std::string out;
  if (fgets(buf, sizeof buf, p) != nullptr) out = buf;
  while (fgets(buf, sizeof buf, p) != nullptr) {
  }
  const int rc = pclose(p);
  const Timing t{Now() - t0, CpuChildren() - c0};
  if (rc != 0) return {{}, out};
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return {t, out};
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 400000;
  const bool ttft_only = argc > 2 && std::string(argv[2]) == "--ttft-only";
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("ttft_ingest_bench_{}.jsonl", n))
          .string();
  {
    std::mt19937_64 rng(42);
    std::lognormal_distribution<double> lat(-2.0, 0.8);
    ttft::SpanJsonlWriter w;
    if (!w.Open(path).ok()) return 1;
    for (size_t i = 0; i < n; ++i) {
      ttft::Span s;
      s.request_id = fmt::format("req-{:08d}", i);
      s.arrival_s = 1712000000.0 + static_cast<double>(i) * 0.001;
      s.front_end_s = 0.003;
      s.queue_s = lat(rng) * 0.3;
      s.prefill_s = lat(rng);
      s.ttft_s = s.front_end_s + s.queue_s + s.prefill_s;
      s.decode_s = lat(rng) * 10;
      s.e2e_s = s.ttft_s + s.decode_s;
      s.itl_mean_s = 0.02;
      s.itl_max_s = 0.08;
      s.prompt_tokens = 500 + static_cast<int64_t>(i % 3000);
      s.cached_tokens = s.prompt_tokens / 2;
      s.output_tokens = 200;
      s.replica = fmt::format("vllm-{}", i % 16);
      s.region = "us-east-1";
      s.tenant = fmt::format("tenant-{}", i % 5);
      s.model = "llama-3.1-8b";
      s.template_version = "v3";
      s.deploy = "2024-04-01";
      if (!w.Write(s).ok()) return 1;
    }
    if (!w.Close().ok()) return 1;
  }
  const double mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  fmt::print("file: {} spans, {:.1f} MB ({:.0f} bytes/line)\n", n, mb,
             mb * 1e6 / static_cast<double>(n));

  // ttft: read into the table + exact p99. Best of 3 (page cache warm for all tools).
  Timing best{1e9, 1e9};
  double p99 = 0, bytes_per_span = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const double t0 = Now(), c0 = CpuSelf();
    ttft::SpanTable table;
    ttft::ReadReport report;
    ttft::SpanReadOptions options;
    if (!ttft::ReadSpans(path, options, table, report).ok() || table.size() != n) {
      fmt::print("read failed: {}\n", report.Summary());
      return 1;
    }
    table.ShrinkToFit();
    std::vector<double> v(table.ttft_s().begin(), table.ttft_s().end());
    p99 = ttft::Quantile(v, 0.99);
    best.wall = std::min(best.wall, Now() - t0);
    best.cpu = std::min(best.cpu, CpuSelf() - c0);
    bytes_per_span = table.bytes_per_span();
  }
  auto line = [&](const char* name, Timing t, const std::string& p99_text,
                  const std::string& tail) {
    fmt::print("{:<7}: wall {:.3f} s {:7.1f} MB/s | cpu {:.3f} s {:7.1f} MB/s | p99={}{}\n", name,
               t.wall, mb / t.wall, t.cpu, mb / t.cpu, p99_text, tail);
  };
  line("ttft", best, fmt::format("{:.6f}", p99), " (table, exact p99, best of 3)");
  // The same read split into two byte ranges on two threads (ReadSpanTable, what
  // `ttft diagnose` uses): wall time is the figure here, CPU time is both threads'.
  {
    Timing best2{1e9, 1e9};
    double p99_2 = 0;
    for (int rep = 0; rep < 3; ++rep) {
      const double t0 = Now(), c0 = CpuSelf();
      ttft::SpanTable table;
      ttft::ReadReport report;
      ttft::SpanReadOptions options;
      options.threads = 2;
      if (!ttft::ReadSpanTable(path, options, table, report).ok() || table.size() != n) {
        fmt::print("read failed: {}\n", report.Summary());
        return 1;
      }
      table.ShrinkToFit();
      std::vector<double> v(table.ttft_s().begin(), table.ttft_s().end());
      p99_2 = ttft::Quantile(v, 0.99);
      best2.wall = std::min(best2.wall, Now() - t0);
      best2.cpu = std::min(best2.cpu, CpuSelf() - c0);
    }
    line("ttft x2", best2, fmt::format("{:.6f}", p99_2),
         " (2 threads, table, exact p99, best of 3)");
  }
  // Same without duplicate detection (the streaming configuration).
  {
    const double t0 = Now(), c0 = CpuSelf();
    auto created = ttft::StreamingStats::Create({});
    if (!created.ok()) return 1;
    auto& sum = *created;
    ttft::ReadReport report;
    ttft::SpanReadOptions options;
    options.detect_duplicates = false;
    if (!ttft::ReadSpans(path, options, *sum, report).ok()) return 1;
    const auto g = sum->Finish();
    line("stream", Timing{Now() - t0, CpuSelf() - c0},
         fmt::format("{:.6f}", g.empty() ? NAN : g[0].stats.ttft_s.at(2)),
         " (DDSketch, no table, no dedup)");
  }
  fmt::print("columnar table: {:.1f} bytes/span (heap, including capacity and dictionaries)\n",
             bytes_per_span);
  if (ttft_only) {
    std::filesystem::remove(path);
    return 0;
  }
  auto [jq_s, jq_out] = Timed(fmt::format(
      "jq -n '[inputs.ttft_s] | sort | .[((length - 1) * 0.99 | floor)]' {} 2>/dev/null", path));
  line("jq", jq_s, jq_out,
       fmt::format("  ttft faster: {:.1f}x wall, {:.1f}x cpu", jq_s.wall / best.wall,
                   jq_s.cpu / best.cpu));
  auto [pd_s, pd_out] = Timed(
      fmt::format("/usr/bin/python3 -c \"import pandas as pd; "
                  "print(pd.read_json('{}', lines=True)['ttft_s'].quantile(0.99))\" 2>/dev/null",
                  path));
  line("pandas", pd_s, pd_out,
       fmt::format("  ttft faster: {:.1f}x wall, {:.1f}x cpu", pd_s.wall / best.wall,
                   pd_s.cpu / best.cpu));

  // DDSketch insertion.
  {
    std::mt19937_64 rng(7);
    std::lognormal_distribution<double> lat(-2.0, 1.0);
    std::vector<double> values(10'000'000);
    for (double& x : values) x = lat(rng);
    ttft::DDSketch s;
    const double t0 = Now();
    s.AddAll(values);
    const double dt = Now() - t0;
    fmt::print("DDSketch insert: {:.1f} M values/s ({} values, {} buckets)\n",
               static_cast<double>(values.size()) / dt / 1e6, values.size(), s.buckets_in_use());
    // 1,000 replica sketches of 10,000 values each, merged into one.
    std::vector<ttft::DDSketch> replicas(1000);
    for (size_t r = 0; r < replicas.size(); ++r) {
      for (size_t i = 0; i < 10000; ++i) replicas[r].Add(values[(r * 10000 + i) % values.size()]);
    }
    const double m0 = Now();
    ttft::DDSketch fleet;
    for (const auto& r : replicas) {
      if (!fleet.Merge(r).ok()) return 1;
    }
    const double mdt = Now() - m0;
    fmt::print("DDSketch merge of 1,000 sketches: {:.2f} ms (fleet p99 {:.5f})\n", mdt * 1e3,
               fleet.Quantile(0.99));
  }
  std::filesystem::remove(path);
  return 0;
}
