#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>

#include "ttft/calibration.h"
#include "ttft/engine.h"

namespace ttft {
namespace {

EngineConfig SmallConfig(int64_t blocks, int64_t budget = 8192, bool chunked = true) {
  EngineConfig c;
  c.hardware = *MakeHardwareConfig("llama-3.1-8b", "h100-sxm", Dtype::kBf16, 1);
  c.num_gpu_blocks = blocks;
  c.block_size = 16;
  c.max_num_batched_tokens = budget;
  c.max_model_len = 4096;
  c.enable_chunked_prefill = chunked;
  return c;
}

// A request whose blocks hash as `prefix` (shared) then unique values.
std::unique_ptr<Request> MakeRequest(int64_t seq, int32_t prompt, int32_t output,
                                     uint64_t prefix_id, int32_t shared_blocks) {
  auto r = std::make_unique<Request>();
  r->seq = seq;
  r->prompt_tokens = prompt;
  r->output_tokens = output;
  const int32_t full = prompt / 16;
  for (int32_t i = 0; i < full; ++i) {
    r->block_hashes.push_back(i < shared_blocks ? (prefix_id << 20) + static_cast<uint64_t>(i)
                                                : (static_cast<uint64_t>(seq) << 40) + i + 7);
  }
  return r;
}

struct Harness {
  explicit Harness(const EngineConfig& c) : replica(c, *c.KvCapacityBlocks()) {}
  Replica replica;
  double now = 0;
  std::vector<FinishedRequest> finished;
  std::map<int64_t, FinishedRequest> by_seq;
  std::map<int64_t, std::pair<int32_t, int32_t>> prompt_output;  // request is gone after the call
  FinishFn fn = [this](const FinishedRequest& f) {
    FinishedRequest copy = f;
    prompt_output[f.request->seq] = {f.request->prompt_tokens, f.request->output_tokens};
    copy.request = nullptr;
    finished.push_back(copy);
    by_seq[f.request->seq] = copy;
  };
  // Runs one planned step (or run) to its end; false when idle.
  bool Step() {
    double end = replica.StartStep(now);
    if (end < 0) return false;
    now = end;
    replica.FinishStep(now, fn);
    EXPECT_TRUE(replica.CheckInvariants().ok()) << replica.CheckInvariants().ToString();
    return true;
  }
  void RunToIdle(int max_steps = 1000000) {
    for (int i = 0; i < max_steps && Step(); ++i) {
    }
  }
};

TEST(PrefixCache, SecondRequestHitsSharedFullBlocksOnly) {
  Harness h(SmallConfig(1000));
  // 100 tokens: 6 full blocks; the first 4 shared.
  h.replica.Enqueue(MakeRequest(0, 100, 2, 1, 4), 0, h.fn);
  h.RunToIdle();
  h.replica.Enqueue(MakeRequest(1, 100, 2, 1, 4), h.now, h.fn);
  h.RunToIdle();
  ASSERT_EQ(h.finished.size(), 2u);
  EXPECT_EQ(h.by_seq[0].cached_tokens, 0);
  EXPECT_EQ(h.by_seq[1].cached_tokens, 4 * 16);
  EXPECT_EQ(h.replica.metrics().prefix_cache_queries, 200u);
  EXPECT_EQ(h.replica.metrics().prefix_cache_hits, 64u);
}

TEST(PrefixCache, LastTokenIsAlwaysComputed) {
  Harness h(SmallConfig(1000));
  // 64 tokens = exactly 4 full blocks, all shared: the lookup is capped at
  // (64 - 1) / 16 = 3 blocks so the last token is recomputed.
  h.replica.Enqueue(MakeRequest(0, 64, 1, 9, 4), 0, h.fn);
  h.RunToIdle();
  h.replica.Enqueue(MakeRequest(1, 64, 1, 9, 4), h.now, h.fn);
  h.RunToIdle();
  EXPECT_EQ(h.by_seq[1].cached_tokens, 48);
}

TEST(PrefixCache, DisabledCachingNeverHits) {
  EngineConfig c = SmallConfig(1000);
  c.enable_prefix_caching = false;
  Harness h(c);
  h.replica.Enqueue(MakeRequest(0, 100, 1, 1, 6), 0, h.fn);
  h.RunToIdle();
  h.replica.Enqueue(MakeRequest(1, 100, 1, 1, 6), h.now, h.fn);
  h.RunToIdle();
  EXPECT_EQ(h.by_seq[1].cached_tokens, 0);
}

TEST(PrefixCache, LruEvictsOldestFreeAndTailBlocksFirst) {
  // 12 blocks. Request A (prefix 1, 4 blocks) then B (prefix 2, 4 blocks) finish;
  // C needs 7 blocks and gets them only by evicting 3 cached ones. The free queue
  // holds the 4 never-used blocks first, then A's blocks tail-first, then B's. So
  // C evicts A's last 3 blocks: A's first block stays, B stays whole.
  EngineConfig c = SmallConfig(12);
  c.max_model_len = 12 * 16;
  Harness h(c);
  h.replica.Enqueue(MakeRequest(0, 64, 1, 1, 4), 0, h.fn);
  h.RunToIdle();
  h.replica.Enqueue(MakeRequest(1, 64, 1, 2, 4), h.now, h.fn);
  h.RunToIdle();
  h.replica.Enqueue(MakeRequest(2, 7 * 16 - 1, 1, 3, 0), h.now, h.fn);
  h.RunToIdle();
  Request a, b;
  for (int i = 0; i < 4; ++i) {
    a.block_hashes.push_back((1ull << 20) + static_cast<uint64_t>(i));
    b.block_hashes.push_back((2ull << 20) + static_cast<uint64_t>(i));
  }
  EXPECT_EQ(h.replica.CachedPrefixBlocks(b), 4);
  EXPECT_EQ(h.replica.CachedPrefixBlocks(a), 1);
}

TEST(Scheduler, TokenBudgetChunksLongPrefill) {
  Harness h(SmallConfig(1000, /*budget=*/512));
  h.replica.Enqueue(MakeRequest(0, 2000, 3, 1, 0), 0, h.fn);
  int steps = 0;
  while (h.finished.empty() && h.Step()) ++steps;
  // ceil(2000 / 512) = 4 prefill steps, then 2 decode steps (the first token
  // comes from the last prefill step).
  EXPECT_EQ(h.replica.steps_executed(), 4 + 2);
  EXPECT_EQ(h.finished[0].output_tokens, 3);
}

TEST(Scheduler, ChunkedPrefillOffBlocksQueueBehindLongPrompt) {
  // Budget 4096 = max_model_len: a 3000-token prompt fits whole; with it running,
  // a second 3000-token prompt does not fit the remaining budget and waits.
  EngineConfig c = SmallConfig(2000, 4096, /*chunked=*/false);
  Harness h(c);
  h.replica.Enqueue(MakeRequest(0, 3000, 5, 1, 0), 0, h.fn);
  h.replica.Enqueue(MakeRequest(1, 3000, 5, 2, 0), 0, h.fn);
  double end = h.replica.StartStep(0);
  EXPECT_GT(end, 0);
  EXPECT_EQ(h.replica.num_running(), 1);
  EXPECT_EQ(h.replica.num_waiting(), 1);
  h.replica.FinishStep(end, h.fn);
  h.now = end;
  h.RunToIdle();
  ASSERT_EQ(h.finished.size(), 2u);
  EXPECT_GE(h.by_seq[1].scheduled_s, h.by_seq[0].first_token_s);

  // The same with chunking: the second prompt starts in the first step.
  Harness h2(SmallConfig(2000, 4096, /*chunked=*/true));
  h2.replica.Enqueue(MakeRequest(0, 3000, 5, 1, 0), 0, h2.fn);
  h2.replica.Enqueue(MakeRequest(1, 3000, 5, 2, 0), 0, h2.fn);
  h2.replica.StartStep(0);
  EXPECT_EQ(h2.replica.num_running(), 2);
}

TEST(Scheduler, PreemptsNewestRunningAndAdmitsNothingThatStep) {
  // 20 blocks of 16 tokens. Three requests of 96 tokens (6 blocks each) run; each
  // decode step needs a 7th block per request at token 97; only 2 blocks remain.
  EngineConfig c = SmallConfig(20);
  c.max_model_len = 20 * 16;
  Harness h(c);
  for (int i = 0; i < 3; ++i) h.replica.Enqueue(MakeRequest(i, 96, 40, 10 + i, 0), 0, h.fn);
  h.Step();  // prefill all three: 18 blocks used, 2 free
  EXPECT_EQ(h.replica.num_running(), 3);
  h.replica.Enqueue(MakeRequest(3, 16, 5, 99, 0), h.now, h.fn);
  // Next step: requests 0 and 1 take the 2 free blocks; request 2 (newest) cannot
  // and preempts itself. The waiting request 3 must not be admitted in that step.
  h.Step();
  EXPECT_EQ(h.replica.num_running(), 2);
  EXPECT_EQ(h.replica.num_waiting(), 2);
  h.RunToIdle();
  ASSERT_EQ(h.finished.size(), 4u);
  EXPECT_EQ(h.by_seq[2].preemptions, 1);
  EXPECT_EQ(h.by_seq[0].preemptions, 0);
  EXPECT_EQ(h.replica.metrics().num_preemptions, 1u);
  // Preempted request 2 went to the front: it is scheduled again before 3 finishes.
  EXPECT_EQ(h.by_seq[2].output_tokens, 40);
}

TEST(Scheduler, RejectsPromptLongerThanMaxModelLen) {
  Harness h(SmallConfig(1000));
  h.replica.Enqueue(MakeRequest(0, 4096, 5, 1, 0), 0, h.fn);
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_EQ(h.finished[0].status, RequestStatus::kRejectedTooLong);
  // Output capped to fit max_model_len.
  h.replica.Enqueue(MakeRequest(1, 4000, 500, 2, 0), 0, h.fn);
  h.RunToIdle();
  EXPECT_EQ(h.by_seq[1].output_tokens, 96);
  EXPECT_EQ(h.replica.metrics().success_length, 1u);
}

TEST(Scheduler, MaxNumSeqsLimitsBatch) {
  EngineConfig c = SmallConfig(1000);
  c.max_num_seqs = 2;
  Harness h(c);
  for (int i = 0; i < 5; ++i) h.replica.Enqueue(MakeRequest(i, 32, 3, 1, 0), 0, h.fn);
  h.replica.StartStep(0);
  EXPECT_EQ(h.replica.num_running(), 2);
}

// A decode run (many steps planned at once) must give exactly what single steps
// give: same token times, same metrics.
TEST(DecodeRun, MatchesStepByStepAndInterruptIsExact) {
  EngineConfig c = SmallConfig(4000);
  Harness run(c);
  for (int i = 0; i < 6; ++i)
    run.replica.Enqueue(MakeRequest(i, 200 + 37 * i, 50 + 11 * i, 1, 0), 0, run.fn);
  run.RunToIdle();

  // Reference: force single steps by interrupting every run right after it starts.
  Harness ref(c);
  for (int i = 0; i < 6; ++i)
    ref.replica.Enqueue(MakeRequest(i, 200 + 37 * i, 50 + 11 * i, 1, 0), 0, ref.fn);
  for (int guard = 0; guard < 100000; ++guard) {
    double end = ref.replica.StartStep(ref.now);
    if (end < 0) break;
    end = ref.replica.Interrupt(ref.now);  // cut to the step in progress
    ref.now = end;
    ref.replica.FinishStep(end, ref.fn);
  }
  ASSERT_EQ(run.finished.size(), 6u);
  ASSERT_EQ(ref.finished.size(), 6u);
  EXPECT_LT(run.replica.steps_executed(), 100000);
  EXPECT_EQ(run.replica.steps_executed(), ref.replica.steps_executed());
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(run.by_seq[i].last_token_s, ref.by_seq[i].last_token_s, 1e-9);
    EXPECT_NEAR(run.by_seq[i].itl_sum_s, ref.by_seq[i].itl_sum_s, 1e-9);
    EXPECT_NEAR(run.by_seq[i].itl_max_s, ref.by_seq[i].itl_max_s, 1e-12);
  }
  EXPECT_EQ(run.replica.metrics().itl.counts, ref.replica.metrics().itl.counts);
  EXPECT_EQ(run.replica.metrics().generation_tokens, ref.replica.metrics().generation_tokens);
}

// A client disconnect (vLLM abort_request): a WAITING request ends at once; a
// RUNNING one ends after the step in progress, its blocks freed, counted as
// finished_reason "abort".
TEST(Abort, WaitingEndsAtOnceRunningAfterTheStep) {
  EngineConfig c = SmallConfig(1000);
  c.max_num_seqs = 1;
  Harness h(c);
  h.replica.Enqueue(MakeRequest(0, 64, 500, 1, 0), 0, h.fn);
  h.replica.Enqueue(MakeRequest(1, 64, 5, 1, 0), 0, h.fn);
  const double end = h.replica.StartStep(0);  // request 0's prefill; 1 waits
  ASSERT_GT(end, 0);
  EXPECT_TRUE(h.replica.Abort(1, end / 2, h.fn));
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_EQ(h.by_seq[1].status, RequestStatus::kAborted);
  EXPECT_DOUBLE_EQ(h.by_seq[1].last_token_s, end / 2);
  EXPECT_EQ(h.replica.num_waiting(), 0);
  h.now = end;
  h.replica.FinishStep(end, h.fn);
  // Request 0 now decodes in a long run; the client leaves mid-run. The fleet cuts
  // the run at the step in progress (Interrupt) and the abort applies there.
  const double run_end = h.replica.StartStep(end);
  ASSERT_GT(run_end, end);
  const double t = end + (run_end - end) / 3;
  const double cut = h.replica.Interrupt(t);
  EXPECT_LT(cut, run_end);
  EXPECT_TRUE(h.replica.Abort(0, t, h.fn));
  EXPECT_EQ(h.finished.size(), 1u);  // not before the step ends
  h.replica.FinishStep(cut, h.fn);
  ASSERT_EQ(h.finished.size(), 2u);
  EXPECT_EQ(h.by_seq[0].status, RequestStatus::kAborted);
  EXPECT_DOUBLE_EQ(h.by_seq[0].last_token_s, cut);
  EXPECT_GT(h.by_seq[0].output_tokens, 1);
  EXPECT_LT(h.by_seq[0].output_tokens, 500);
  EXPECT_TRUE(h.replica.idle() || h.replica.num_outstanding() == 0);
  EXPECT_EQ(h.replica.num_free_blocks(), h.replica.num_blocks());
  EXPECT_EQ(h.replica.metrics().success_abort, 2u);
  EXPECT_EQ(h.replica.metrics().success_stop, 0u);
  EXPECT_TRUE(h.replica.CheckInvariants().ok());
  EXPECT_FALSE(h.replica.Abort(0, t, h.fn));  // gone
}

// Property: random arrivals on a tight cache; every request ends exactly once,
// durations are non-negative, invariants hold after every step.
TEST(Property, RandomLoadOnTightCache) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    std::mt19937_64 rng(seed);
    EngineConfig c = SmallConfig(300, 1024);
    c.max_num_seqs = 16;
    Harness h(c);
    int64_t n = 0;
    for (int round = 0; round < 200; ++round) {
      if (rng() % 3 == 0) {
        int32_t prompt = 16 + static_cast<int32_t>(rng() % 900);
        int32_t out = 1 + static_cast<int32_t>(rng() % 200);
        h.replica.Enqueue(MakeRequest(n, prompt, out, rng() % 4, static_cast<int32_t>(rng() % 30)),
                          h.now, h.fn);
        ++n;
      }
      if (h.replica.step_planned() || !h.Step()) h.now += 0.01;
    }
    h.RunToIdle();
    ASSERT_EQ(static_cast<int64_t>(h.finished.size()), n) << "seed " << seed;
    EXPECT_EQ(static_cast<int64_t>(h.by_seq.size()), n);
    for (const auto& f : h.finished) {
      if (f.status != RequestStatus::kOk) continue;
      EXPECT_GE(f.scheduled_s, f.queued_s);
      EXPECT_GE(f.first_token_s, f.scheduled_s);
      EXPECT_GE(f.last_token_s, f.first_token_s);
    }
    for (const auto& [seq, f] : h.by_seq) {
      if (f.status != RequestStatus::kOk) continue;
      EXPECT_LE(f.cached_tokens, h.prompt_output[seq].first);
      EXPECT_EQ(f.output_tokens, h.prompt_output[seq].second);
    }
    EXPECT_EQ(h.replica.num_free_blocks(), h.replica.num_blocks());
  }
}

// Keeping request-unique blocks out of the shared map (Request::unique_from_block)
// must change nothing: same token times under heavy preemption, where resumed
// requests re-hit their own blocks.
TEST(Property, UniqueBlockHintChangesNoResult) {
  auto run = [](bool hint) {
    std::mt19937_64 rng(42);
    EngineConfig c = SmallConfig(200, 1024);
    c.max_model_len = 2048;
    c.max_num_seqs = 24;
    auto h = std::make_unique<Harness>(c);
    int64_t n = 0;
    for (int round = 0; round < 300; ++round) {
      if (rng() % 2 == 0) {
        const int32_t prompt = 16 + static_cast<int32_t>(rng() % 700);
        const int32_t out = 1 + static_cast<int32_t>(rng() % 300);
        const int32_t shared = static_cast<int32_t>(rng() % 20);
        auto req = MakeRequest(n++, prompt, out, rng() % 3, shared);
        if (hint) req->unique_from_block = shared;
        h->replica.Enqueue(std::move(req), h->now, h->fn);
      }
      if (h->replica.step_planned() || !h->Step()) h->now += 0.005;
    }
    h->RunToIdle();
    return h;
  };
  auto plain = run(false);
  auto hinted = run(true);
  ASSERT_EQ(plain->finished.size(), hinted->finished.size());
  EXPECT_GT(plain->replica.metrics().num_preemptions, 10u);
  EXPECT_EQ(plain->replica.metrics().num_preemptions, hinted->replica.metrics().num_preemptions);
  for (const auto& [seq, f] : plain->by_seq) {
    EXPECT_DOUBLE_EQ(f.last_token_s, hinted->by_seq[seq].last_token_s) << seq;
    EXPECT_EQ(f.cached_tokens, hinted->by_seq[seq].cached_tokens) << seq;
  }
}

TEST(EngineConfig, CapacityFromMemoryMatchesVllmOnLlama2_70bTp4) {
  // ../shared/data/vllm-h100: vLLM reported 501,712 KV tokens for Llama-2-70B,
  // TP4, BF16, gpu_memory_utilization 0.9 on H100 80GB.
  EngineConfig c;
  c.hardware = *MakeHardwareConfig("llama-2-70b", "h100-sxm", Dtype::kBf16, 4);
  c.max_model_len = 4096;
  auto blocks = c.KvCapacityBlocks();
  ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
  EXPECT_NEAR(static_cast<double>(*blocks * 16), 501712.0, 501712.0 * 0.01);
}

TEST(EngineConfig, ValidationMessagesNameTheField) {
  EngineConfig c = SmallConfig(1000, 2048, /*chunked=*/false);
  Status st = c.Validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("max_num_batched_tokens"), std::string::npos);
  EngineConfig d = SmallConfig(10);
  d.max_model_len = 100000;
  EXPECT_NE(d.KvCapacityBlocks().status().message().find("max_model_len"), std::string::npos);
}

TEST(EngineConfig, CostParametersHaveTheProfilesRanges) {
  EngineConfig c = SmallConfig(10);
  ASSERT_TRUE(c.Validate().ok());
  c.cost.prefill_mfu = 1e-300;  // would print as "MFU 0.00" and prefill for 1e297 s
  EXPECT_EQ(c.Validate().message(), "cost.prefill_mfu: 1e-300 is outside 0.001..1");
  c.cost.prefill_mfu = std::nan("");
  EXPECT_NE(c.Validate().message().find("cost.prefill_mfu: nan"), std::string::npos);
  c = SmallConfig(10);
  c.cost.gqa_kv_mbu = -1;
  EXPECT_EQ(c.Validate().message(), "cost.gqa_kv_mbu: -1 is outside 0..1 (0: tied to kv_mbu)");
  c = SmallConfig(10);
  for (const CostParamField& f : CostParamFields()) {  // each bound is a valid value
    for (double x : {f.min, f.max}) {
      EngineConfig e = c;
      e.cost.*(f.field) = x;
      EXPECT_TRUE(e.Validate().ok()) << f.name << " = " << x << ": " << e.Validate().ToString();
    }
  }
  c.cost.slowdown = 0;
  EXPECT_NE(c.Validate().message().find("cost.slowdown"), std::string::npos);
}

TEST(Histogram, BucketsAndBuild125) {
  EXPECT_EQ(Build125Buckets(8192),
            (std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}));
  Histogram hst(&TtftBuckets());
  hst.Observe(0.001);  // le is inclusive
  hst.Observe(3000.0);
  EXPECT_EQ(hst.counts.front(), 1u);
  EXPECT_EQ(hst.counts.back(), 1u);
  EXPECT_EQ(hst.count, 2u);
}

}  // namespace
}  // namespace ttft
