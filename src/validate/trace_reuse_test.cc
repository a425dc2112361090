// Mooncake trace replay: the simulator's prefix reuse against the trace's own block ids.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ttft/validate.h"

namespace ttft {
namespace {

std::string Trace(const char* name) {
  return (std::filesystem::path(TTFT_SHARED_DATA_DIR) / "traces" / name).string();
}

#define SKIP_WITHOUT(path)                                                       \
  if (!std::filesystem::exists(path)) {                                          \
    GTEST_SKIP() << "shared trace data not found at " << (path) << "; skipping"; \
  }

// Unlimited cache (capacity above every block the replay can allocate), one replica,
// a step budget above the longest prompt (no chunking, so a prompt's blocks are all
// registered before the next request's lookup), arrivals stretched 1000x (requests in
// trace order): the simulator's hit ratio must equal the ids' ratio exactly.
TEST(MooncakeReplay, UnlimitedCacheReuseEqualsTheBlockIdRatio) {
  for (const char* name :
       {"mooncake_fast25_conversation_trace.jsonl", "mooncake_fast25_synthetic_trace.jsonl"}) {
    const std::string path = Trace(name);
    SKIP_WITHOUT(path);
    auto ids = MooncakeReuseFromIds(path, 2000, 16);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    ASSERT_EQ(ids->requests, 2000);
    EXPECT_GT(ids->ratio(), 0.05) << name;  // the traces do reuse prefixes
    TraceReplayOptions o;
    o.path = path;
    o.max_requests = 2000;
    o.time_scale = 1000;
    o.blocks_per_replica = ids->blocks_needed + 1024;
    o.max_num_batched_tokens = 1 << 20;
    auto sim = SimulateTraceReuse(o);
    ASSERT_TRUE(sim.ok()) << sim.status().ToString();
    EXPECT_EQ(sim->requests, ids->requests) << name;
    EXPECT_EQ(sim->prompt_tokens, ids->prompt_tokens) << name;
    EXPECT_EQ(sim->cached_tokens, ids->cached_tokens) << name;
  }
}

TEST(MooncakeReplay, HitRateFallsWithCapacity) {
  const std::string path = Trace("mooncake_fast25_conversation_trace.jsonl");
  SKIP_WITHOUT(path);
  auto ids = MooncakeReuseFromIds(path, 2000, 16);
  ASSERT_TRUE(ids.ok());
  double last = 2;
  // From unlimited down to a cache barely above one longest prompt.
  for (double frac : {1.0, 0.5, 0.25, 0.12, 0.06}) {
    TraceReplayOptions o;
    o.path = path;
    o.max_requests = 2000;
    o.time_scale = 1000;
    o.blocks_per_replica =
        std::max<int64_t>(static_cast<int64_t>(frac * static_cast<double>(ids->blocks_needed)),
                          ids->max_prompt_tokens / 16 + 2048);
    o.max_num_batched_tokens = 1 << 20;
    auto sim = SimulateTraceReuse(o);
    ASSERT_TRUE(sim.ok()) << sim.status().ToString();
    EXPECT_LE(sim->ratio(), last + 1e-12) << "capacity fraction " << frac;
    if (frac == 1.0) {
      EXPECT_EQ(sim->cached_tokens, ids->cached_tokens);
    }
    last = sim->ratio();
  }
  EXPECT_LT(last, ids->ratio());  // the smallest cache loses hits
}

TEST(MooncakeReplay, IdRatioCountsFullBlocksAndTheLastToken) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ttft_reuse_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.jsonl").string();
  {
    std::ofstream f(path);
    // 600 tokens: ids 0,1 (512 + 88). Then the same 600: 599 tokens reusable -> 592.
    f << R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]})"
      << "\n";
    f << R"({"timestamp": 1, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]})"
      << "\n";
    // Same first id, longer second block: 512 + 80 (the 88 seen, in full blocks).
    f << R"({"timestamp": 2, "input_length": 1000, "output_length": 5, "hash_ids": [0, 1]})"
      << "\n";
    // Same id 1 after a different first block: a different chain, nothing after 0.
    f << R"({"timestamp": 3, "input_length": 700, "output_length": 5, "hash_ids": [7, 1]})"
      << "\n";
  }
  auto r = MooncakeReuseFromIds(path, 0, 16);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->cached_tokens, 0 + 592 + 592 + 0);
  EXPECT_EQ(r->prompt_tokens, 600 + 600 + 1000 + 700);
  TraceReplayOptions o;
  o.path = path;
  o.time_scale = 1000;
  o.blocks_per_replica = 100000;
  auto sim = SimulateTraceReuse(o);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  EXPECT_EQ(sim->cached_tokens, r->cached_tokens);
}

}  // namespace
}  // namespace ttft
