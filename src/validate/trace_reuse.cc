// Prefix reuse of a Mooncake trace, from its block ids and from the simulator
// (ttft/validate.h).
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <unordered_map>

#include "ttft/fleet.h"
#include "ttft/validate.h"
#include "ttft/workload.h"

namespace ttft {

Result<TraceReuse> MooncakeReuseFromIds(const std::string& path, int64_t max_requests,
                                        int block_size) {
  TTFT_ASSIGN_OR_RETURN(auto reader, TraceReader::Open(TraceSpec::Format::kMooncake, path));
  constexpr int64_t kBlock = kMooncakeBlockTokens;
  if (block_size <= 0 || kBlock % block_size != 0) {
    return Status::Invalid(fmt::format("block_size: must divide {}, got {}", kBlock, block_size));
  }
  // Most tokens ever seen in the Mooncake block at the end of each id chain.
  std::unordered_map<uint64_t, int64_t> seen;
  TraceRecord rec;
  TraceReuse out;
  while (max_requests <= 0 || out.requests < max_requests) {
    TTFT_ASSIGN_OR_RETURN(bool more, reader->Next(rec));
    if (!more) break;
    const auto n = static_cast<int64_t>(rec.hash_ids.size());
    uint64_t chain = 0x6d6f6f6e63616b65ULL;
    int64_t hit = 0;
    bool whole = true;  // every earlier Mooncake block matched in full
    for (int64_t i = 0; i < n; ++i) {
      // Chained like the ids themselves: a block is reusable only after the same prefix.
      chain = (chain ^ rec.hash_ids[static_cast<size_t>(i)]) * 0x100000001b3ULL +
              0x9e3779b97f4a7c15ULL * (i + 1);
      const int64_t tokens = i + 1 < n ? kBlock : rec.input_tokens - kBlock * (n - 1);
      int64_t& s = seen[chain];
      if (whole) {
        const int64_t avail = std::min(tokens, s);
        hit += avail / block_size * block_size;  // full blocks only
        whole = avail == tokens;
      }
      s = std::max(s, tokens);
    }
    // vLLM computes the last prompt token whatever the cache holds.
    hit = std::min(hit, (rec.input_tokens - 1) / block_size * block_size);
    out.cached_tokens += hit;
    out.prompt_tokens += rec.input_tokens;
    out.blocks_needed +=
        (rec.input_tokens + std::max<int64_t>(1, rec.output_tokens)) / block_size + 2;
    out.max_prompt_tokens = std::max(out.max_prompt_tokens, rec.input_tokens);
    ++out.requests;
  }
  return out;
}

namespace {

class ReuseSink final : public SimulationSink {
 public:
  Status OnSpan(const Span& s) override {
    if (s.status == RequestStatus::kOk) {
      reuse.cached_tokens += s.cached_tokens;
      reuse.prompt_tokens += s.prompt_tokens;
    } else {
      ++failed;
    }
    ++reuse.requests;
    return Status::Ok();
  }
  Status OnSnapshot(const MetricSnapshot&) override { return Status::Ok(); }
  TraceReuse reuse;
  int64_t failed = 0;
};

}  // namespace

Result<TraceReuse> SimulateTraceReuse(const TraceReplayOptions& o) {
  Scenario sc;
  sc.name = "trace-reuse";
  TraceSpec tr;
  tr.format = TraceSpec::Format::kMooncake;
  tr.path = o.path;
  tr.time_scale = o.time_scale;
  tr.max_requests = o.max_requests;
  sc.workload.traces.push_back(tr);
  sc.workload.block_size = o.block_size;
  // The whole trace: its first 30 days of (scaled) time, the simulator's limit.
  sc.duration_s = kMaxDurationS;
  sc.drain_limit_s = kMaxDurationS;
  sc.scrape_interval_s = 1e9;
  sc.router.kind = o.router;
  auto hw = MakeHardwareConfig(o.model, o.gpu, Dtype::kBf16, o.tp);
  if (!hw.ok()) return hw.status();
  for (int i = 0; i < o.replicas; ++i) {
    ReplicaSpec r;
    r.name = fmt::format("r{}", i);
    r.engine.hardware = *hw;
    r.engine.block_size = o.block_size;
    r.engine.num_gpu_blocks = o.blocks_per_replica;
    r.engine.max_model_len = o.max_model_len;
    r.engine.max_num_batched_tokens = o.max_num_batched_tokens;
    r.engine.max_num_seqs = o.max_num_seqs;
    sc.replicas.push_back(std::move(r));
  }
  ReuseSink sink;
  TTFT_ASSIGN_OR_RETURN(SimulationResult res, Simulate(sc, sink, {}));
  (void)res;
  if (sink.failed > 0) {
    return Status::Invalid(
        fmt::format("{}: {} requests failed in the replay (prompt longer than "
                    "max_model_len {}, or the cache too small for one)",
                    o.path, sink.failed, o.max_model_len));
  }
  return sink.reuse;
}

}  // namespace ttft
