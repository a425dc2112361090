// Diagnosis figures for docs/performance.md ("Diagnosis"); issue 4's target: diagnosing
// 10 million spans takes at most 10 s and 2 GB.
//
//   diagnose_bench [SPANS] [--no-file] [--no-memory] [--keep-file] [--reuse-file]
//                  [--ttft PATH] [--dir DIR]
//                  (default 10,000,000 spans; PATH defaults to the `ttft` beside this binary;
//                  --reuse-file takes the span file a --keep-file run left in DIR as it is)
//
// Generates SPANS synthetic spans of a 192-replica fleet (3 regions x 64 replicas, 6
// tenants, 3 prompt templates, one hour before and one hour after a change at
// 2025-06-01T12:00:00Z) with one planted cause: at the change, template `rag` goes from
// v1 to v2, which puts a per-request field ahead of its 4,000-token static prefix, so
// the rag tenants' cached tokens fall to ~0 (prefix_cache_collapse) and every
// replica's queue grows. Then, each a plain timed run of a whole job:
//
//   1. In memory: the spans go straight into a SpanTable (not timed as diagnosis), then
//      ttft::Diagnose() runs on the two windows: wall, CPU and peak RSS.
//   2. End to end (unless --no-file): the same spans are written as JSON Lines with the
//      project's writer (SpanJsonlWriter), with a deploy annotation file, and
//      `ttft diagnose FILE --change-at ... --window 3600 --events ... --format json`
//      runs as a child process: its wall time, CPU time (user + system) and peak RSS
//      come from wait4()'s rusage, so they are the command's own, reading included.
//
// Each run prints whether the diagnosis found the planted cause (verdict regression,
// top hypothesis prefix_cache_collapse).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_clock.h"
#include "ttft/diagnose.h"
#include "ttft/spans.h"

namespace {

namespace fs = std::filesystem;

constexpr double kChangeAt = 1748779200.0;  // 2025-06-01T12:00:00Z
constexpr const char* kChangeAtRfc3339 = "2025-06-01T12:00:00Z";
constexpr double kWindowS = 3600.0;
constexpr int kRegions = 3;
constexpr int kReplicasPerRegion = 64;
constexpr int kTenants = 6;

using ttft::bench::CpuSelf;
using ttft::bench::Now;
using ttft::bench::Sec;

// Peak resident set of this process, MB (ru_maxrss is in KiB on Linux).
double PeakRssSelfMb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}
// Current resident set, MB.
double RssNowMb() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1048576.0;
}

// splitmix64: a cheap, fully specified generator (the same spans on every machine).
struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double Normal() {  // Box-Muller, one value per call
    const double u = 1.0 - Uniform(), v = Uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
  double LogNormal(double median, double sigma) { return median * std::exp(sigma * Normal()); }
};

// The fleet's label strings, built once; records hold views into them.
struct Labels {
  std::vector<std::string> replicas, replica_region;
  std::array<std::string, kRegions> regions = {"us-east", "eu-west", "ap-south"};
  std::array<std::string, kTenants> tenants = {"acme",     "globex", "initech",
                                               "umbrella", "hooli",  "stark"};
  // Tenants 0-1 use rag, 2-3 chat, 4-5 agent.
  std::array<std::string, 4> templates = {"rag@v1", "rag@v2", "chat@v1", "agent@v1"};
  std::string model = "llama-3.3-70b";
  std::string deploy = "engine-2025-05";
  Labels() {
    for (int g = 0; g < kRegions; ++g) {
      for (int i = 0; i < kReplicasPerRegion; ++i) {
        replicas.push_back(fmt::format("{}-vllm-{:02d}", regions[static_cast<size_t>(g)], i));
        replica_region.push_back(regions[static_cast<size_t>(g)]);
      }
    }
  }
};

// Span `i` of `n` (deterministic in i): arrival uniform over [change - 1 h, change + 1 h).
// Written so that only the planted cause moves between the windows: same rate, prompts,
// outputs, per-token prefill speed, replicas and tenant mix.
ttft::Span MakeSpan(uint64_t i, uint64_t n, const Labels& L) {
  Rng rng{i * 0x2545f4914f6cdd1dULL + 17};
  ttft::Span s;
  s.request_id = fmt::format("req-{:09d}", i);
  const double dt = 2 * kWindowS / static_cast<double>(n);
  s.arrival_s = kChangeAt - kWindowS + (static_cast<double>(i) + rng.Uniform()) * dt;
  const bool incident = s.arrival_s >= kChangeAt;
  const size_t rep = rng.Next() % L.replicas.size();
  const size_t tenant = rng.Next() % kTenants;
  const int kind = static_cast<int>(tenant / 2);  // 0 rag, 1 chat, 2 agent
  s.replica = L.replicas[rep];
  s.region = L.replica_region[rep];
  s.tenant = L.tenants[tenant];
  s.model = L.model;
  s.deploy = L.deploy;
  s.template_version = kind == 0 ? L.templates[incident ? 1 : 0] : L.templates[kind + 1];
  static constexpr std::array<int64_t, 3> kStatic = {4000, 1000, 2500};
  static constexpr std::array<double, 3> kQuestion = {600, 300, 800};
  const int64_t stat = kStatic[static_cast<size_t>(kind)];
  const int64_t question = std::clamp<int64_t>(
      std::llround(rng.LogNormal(kQuestion[static_cast<size_t>(kind)], 0.7)), 10, 12000);
  s.prompt_tokens = stat + question;
  // The static prefix hits in 92% of requests (whole 16-token blocks); rag@v2 never.
  const bool hit = rng.Uniform() < 0.92 && !(kind == 0 && incident);
  s.cached_tokens = hit ? stat / 16 * 16 : 0;
  const int64_t uncached = s.prompt_tokens - s.cached_tokens;
  s.front_end_s = 0.003;
  s.prefill_s = static_cast<double>(uncached) * 8e-5 * rng.LogNormal(1.0, 0.1);
  // Every replica queues longer once a third of its requests prefill ~5x more tokens.
  s.queue_s = incident ? rng.LogNormal(0.12, 1.2) : rng.LogNormal(0.02, 1.0);
  s.ttft_s = s.front_end_s + s.queue_s + s.prefill_s;
  s.output_tokens = std::clamp<int64_t>(std::llround(rng.LogNormal(180, 0.6)), 2, 4000);
  s.itl_mean_s = 0.025 * rng.LogNormal(1.0, 0.15);
  s.itl_max_s = s.itl_mean_s * 2.5;
  s.decode_s = s.itl_mean_s * static_cast<double>(s.output_tokens - 1);
  s.e2e_s = s.ttft_s + s.decode_s;
  s.preemptions = 0;
  if (rng.Uniform() < 0.004) {
    s.status = ttft::RequestStatus::kError;
  }
  return s;
}

struct Found {
  std::string verdict, top, second;
  double top_confidence = NAN, p99_before = NAN, p99_after = NAN;
  bool ok() const { return verdict == "regression" && top == "prefix_cache_collapse"; }
};

void PrintFound(const Found& f) {
  fmt::print(
      "  diagnosis: verdict {}, p99 TTFT {:.3f} s -> {:.3f} s, top {} ({:.2f}), second {}; "
      "planted cause {}\n",
      f.verdict, f.p99_before, f.p99_after, f.top, f.top_confidence, f.second,
      f.ok() ? "FOUND" : "MISSED");
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // line-buffered: progress shows in a pipe
  uint64_t n = 10'000'000;
  bool with_file = true, with_memory = true, keep_file = false, reuse_file = false;
  std::string ttft_bin = (fs::path(argv[0]).parent_path() / "ttft").string();
  std::string dir = fs::temp_directory_path().string();
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--no-file") {
      with_file = false;
    } else if (arg == "--no-memory") {
      with_memory = false;
    } else if (arg == "--keep-file") {
      keep_file = true;
    } else if (arg == "--reuse-file") {
      reuse_file = true;
    } else if (arg == "--ttft" && a + 1 < argc) {
      ttft_bin = argv[++a];
    } else if (arg == "--dir" && a + 1 < argc) {
      dir = argv[++a];
    } else if (!arg.empty() && arg[0] != '-') {
      n = std::strtoull(arg.c_str(), nullptr, 10);
    } else {
      fmt::print(stderr,
                 "usage: diagnose_bench [SPANS] [--no-file] [--no-memory] [--keep-file] "
                 "[--reuse-file] [--ttft PATH] [--dir DIR]\n");
      return 2;
    }
  }
  const Labels labels;
  fmt::print("diagnose_bench: {} spans, {} replicas in {} regions, {} tenants; change at {}\n", n,
             labels.replicas.size(), kRegions, kTenants, kChangeAtRfc3339);

  // 1. In memory.
  if (with_memory) {
    const double g0 = Now();
    ttft::SpanTable table;
    table.Reserve(n);
    for (uint64_t i = 0; i < n; ++i) ttft::AddSpanToTable(MakeSpan(i, n, labels), table);
    table.ShrinkToFit();
    fmt::print(
        "in memory: table of {} spans built in {:.1f} s ({:.1f} bytes/span, RSS {:.0f} MB)\n",
        table.size(), Now() - g0, table.bytes_per_span(), RssNowMb());
    ttft::DiagnosisInput in;
    in.baseline = {&table, kChangeAt - kWindowS, kChangeAt};
    in.incident = {&table, kChangeAt, kChangeAt + kWindowS};
    in.change_at_s = kChangeAt;
    in.annotations.push_back({kChangeAt, "deploy_template", "rag", "rag@v1 -> rag@v2"});
    const double rss0 = RssNowMb();
    const double t0 = Now(), c0 = CpuSelf();
    auto rep = ttft::Diagnose(in);
    const double wall = Now() - t0, cpu = CpuSelf() - c0;
    if (!rep.ok()) {
      fmt::print("Diagnose failed: {}\n", rep.status().ToString());
      return 1;
    }
    fmt::print(
        "in memory: Diagnose() wall {:.2f} s, cpu {:.2f} s; peak RSS of the process {:.0f} MB "
        "(table + diagnosis; {:.0f} MB before the call)\n",
        wall, cpu, PeakRssSelfMb(), rss0);
    Found f;
    f.verdict = std::string(ttft::ToString(rep->verdict));
    if (!rep->hypotheses.empty()) {
      f.top = rep->hypotheses[0].id;
      f.top_confidence = rep->hypotheses[0].confidence;
    }
    if (rep->hypotheses.size() > 1) f.second = rep->hypotheses[1].id;
    f.p99_before = rep->baseline.ttft_s.p99;
    f.p99_after = rep->incident.ttft_s.p99;
    PrintFound(f);
    // The counterfactual replay's part (issue 13): the same call without it.
    fmt::print("attribution: {} replays; {}\n", rep->attribution.replays,
               ttft::Headline(rep->attribution));
    in.options.attribute = false;
    const double t1 = Now(), c1 = CpuSelf();
    auto without = ttft::Diagnose(in);
    const double wall_without = Now() - t1, cpu_without = CpuSelf() - c1;
    fmt::print("in memory: Diagnose() without attribution wall {:.2f} s, cpu {:.2f} s\n",
               wall_without, cpu_without);
    (void)without;
    // The first call also pays the diagnosis' fresh memory (page faults the later calls
    // do not, as LargeAllocator keeps freed blocks), so the attribution's own cost is
    // this third call, with it again, against the second.
    in.options.attribute = true;
    const double t2 = Now(), c2 = CpuSelf();
    auto again = ttft::Diagnose(in);
    const double wall_again = Now() - t2, cpu_again = CpuSelf() - c2;
    fmt::print(
        "in memory: Diagnose() with attribution again wall {:.2f} s, cpu {:.2f} s; the "
        "attribution: wall {:.2f} s, cpu {:.2f} s ({} replays)\n",
        wall_again, cpu_again, wall_again - wall_without, cpu_again - cpu_without,
        again.ok() ? again->attribution.replays : 0);
  }
  if (!with_file) return 0;

  // 2. End to end from a file, through the `ttft diagnose` command.
  if (::access(ttft_bin.c_str(), X_OK) != 0) {
    fmt::print("end to end: skipped, no ttft binary at {} (give --ttft PATH)\n", ttft_bin);
    return 1;
  }
  const std::string path =
      (fs::path(dir) / fmt::format("ttft_diagnose_bench_{}.jsonl", n)).string();
  const std::string events = (fs::path(dir) / "ttft_diagnose_bench_events.jsonl").string();
  const std::string out = (fs::path(dir) / "ttft_diagnose_bench_report.json").string();
  std::ofstream(events) << fmt::format(
      "{{\"time\": \"{}\", \"kind\": \"deploy_template\", \"target\": \"rag\", \"detail\": "
      "\"rag@v1 -> rag@v2\"}}\n",
      kChangeAtRfc3339);
  std::error_code exists_ec;
  if (reuse_file && fs::exists(path, exists_ec)) {
    fmt::print("end to end: reusing {} ({:.2f} GB)\n", path,
               static_cast<double>(fs::file_size(path)) / 1e9);
  } else {
    const double w0 = Now();
    ttft::SpanJsonlWriter w;
    if (auto st = w.Open(path); !st.ok()) {
      fmt::print("{}\n", st.ToString());
      return 1;
    }
    for (uint64_t i = 0; i < n; ++i) {
      if (!w.Write(MakeSpan(i, n, labels)).ok()) return 1;
    }
    if (!w.Close().ok()) return 1;
    fmt::print("end to end: wrote {} ({:.2f} GB, {:.0f} bytes/line) in {:.1f} s\n", path,
               static_cast<double>(fs::file_size(path)) / 1e9,
               static_cast<double>(fs::file_size(path)) / static_cast<double>(n), Now() - w0);
  }
  const std::vector<std::string> args = {
      ttft_bin,   "diagnose", path,       "--change-at", kChangeAtRfc3339, "--window", "3600",
      "--events", events,     "--format", "json",        "--out",          out};
  std::string cmd;
  for (const auto& a : args) cmd += (cmd.empty() ? "" : " ") + a;
  fmt::print("end to end: {}\n", cmd);
  const double t0 = Now();
  const pid_t pid = ::fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    std::vector<char*> av;
    for (const auto& a : args) av.push_back(const_cast<char*>(a.c_str()));
    av.push_back(nullptr);
    ::execv(av[0], av.data());
    ::_exit(127);
  }
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  const double wall = Now() - t0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fmt::print("end to end: ttft diagnose failed (status {})\n", status);
    return 1;
  }
  fmt::print(
      "end to end: wall {:.2f} s, cpu {:.2f} s (user {:.2f} + sys {:.2f}), peak RSS {:.0f} MB\n",
      wall, Sec(ru.ru_utime) + Sec(ru.ru_stime), Sec(ru.ru_utime), Sec(ru.ru_stime),
      static_cast<double>(ru.ru_maxrss) / 1024.0);
  std::ifstream rf(out);
  const auto j = nlohmann::json::parse(rf, nullptr, false);
  if (j.is_discarded()) {
    fmt::print("end to end: the report is not JSON\n");
    return 1;
  }
  Found f;
  f.verdict = j.value("verdict", "");
  if (!j["hypotheses"].empty()) {
    f.top = j["hypotheses"][0].value("id", "");
    f.top_confidence = j["hypotheses"][0].value("confidence", NAN);
  }
  if (j["hypotheses"].size() > 1) f.second = j["hypotheses"][1].value("id", "");
  if (j["baseline"]["ttft_s"]["p99"].is_number()) f.p99_before = j["baseline"]["ttft_s"]["p99"];
  if (j["incident"]["ttft_s"]["p99"].is_number()) f.p99_after = j["incident"]["ttft_s"]["p99"];
  PrintFound(f);
  if (!keep_file) {
    fs::remove(path);
    fs::remove(events);
    fs::remove(out);
  }
  return f.ok() ? 0 : 1;
}
