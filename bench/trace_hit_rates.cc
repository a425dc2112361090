// Prefix-cache hit rate of the Mooncake traces versus KV-cache size and router, on 4
// and 8 replicas (docs/calibration.md, "Mooncake trace replay").
//
//   build/trace_hit_rates ../shared/data/traces/mooncake_fast25_conversation_trace.jsonl
//
// Each replica: Llama-3.1-8B BF16 on one H100 (calibrated cost model), vLLM defaults
// (block 16, max_num_batched_tokens 8192, max_num_seqs 256), max_model_len 262144 so
// every prompt fits; the trace at its recorded timing. The KV cache per replica is
// set explicitly (num_gpu_blocks); the memory-derived size for this model is printed
// for reference. The "ids" row is the unlimited-cache reuse from the trace's block ids.
#include <fmt/format.h>

#include <cstdio>

#include "ttft/engine.h"
#include "ttft/validate.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: trace_hit_rates MOONCAKE.jsonl [MAX_REQUESTS]\n");
    return 2;
  }
  const std::string path = argv[1];
  const int64_t max_requests = argc > 2 ? std::atoll(argv[2]) : 0;
  auto ids = ttft::MooncakeReuseFromIds(path, max_requests, 16);
  if (!ids.ok()) {
    std::fprintf(stderr, "%s\n", ids.status().ToString().c_str());
    return 1;
  }
  ttft::EngineConfig ec;
  ec.hardware = *ttft::MakeHardwareConfig("llama-3.1-8b", "h100-sxm", ttft::Dtype::kBf16, 1);
  ec.max_model_len = 16;
  const int64_t mem_blocks = *ec.KvCapacityBlocks();
  std::printf(
      "trace %s: %lld requests, %lld prompt tokens; unlimited-cache reuse from ids %.1f%%\n",
      path.c_str(), static_cast<long long>(ids->requests),
      static_cast<long long>(ids->prompt_tokens), ids->ratio() * 100);
  std::printf("memory-derived KV cache of one replica: %lld blocks (%lld tokens)\n\n",
              static_cast<long long>(mem_blocks), static_cast<long long>(mem_blocks * 16));
  std::printf(
      "| KV cache per replica (tokens) | 4 x round_robin | 4 x prefix_aware | "
      "8 x round_robin | 8 x prefix_aware |\n|---|---|---|---|---|\n");
  for (int64_t tokens : {262144LL, 524288LL, 1048576LL, 2097152LL, 4194304LL}) {
    std::string line = fmt::format("| {} |", tokens);
    for (int replicas : {4, 8}) {
      for (auto router :
           {ttft::RouterSpec::Kind::kRoundRobin, ttft::RouterSpec::Kind::kPrefixAware}) {
        ttft::TraceReplayOptions o;
        o.path = path;
        o.max_requests = max_requests;
        o.replicas = replicas;
        o.router = router;
        o.blocks_per_replica = tokens / 16;
        auto r = ttft::SimulateTraceReuse(o);
        line += r.ok() ? fmt::format(" {:.1f}% |", r->ratio() * 100) : " error |";
        if (!r.ok()) std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      }
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  return 0;
}
