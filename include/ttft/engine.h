// -----------------------------------------------------------------------------
// File: ttft/engine.h
// -----------------------------------------------------------------------------
//
// One serving replica with vLLM v1 semantics, stepped in simulated time.
//
//   * Scheduler (vllm/v1/core/sched/scheduler.py): a per-step token budget
//     (max_num_batched_tokens) and max_num_seqs; RUNNING requests are scheduled
//     before WAITING ones; chunked prefill on or off (off: a prefill must fit the
//     remaining budget whole, so a long prefill blocks the queue); no WAITING request
//     is admitted in a step that preempted; prompts longer than max_model_len are
//     rejected.
//   * Paged KV cache (vllm/v1/core/block_pool.py, kv_cache_utils.py): fixed-size
//     blocks; capacity from GPU memory; prefix caching over chained block hashes,
//     full blocks only, the lookup capped so the last prompt token is always
//     computed; free blocks in an LRU queue from which allocation evicts; a freed
//     request's blocks enter the queue tail-first so its last block goes first.
//   * Preemption by recompute: when a block cannot be allocated the newest running
//     request is preempted (FCFS), its KV dropped, and it goes to the front of the
//     waiting queue.
//
// Simplification (docs/architecture.md): blocks holding generated tokens are not
// hashed into the prefix cache; every synthetic output is unique, so no other
// request could hit them.
//
// The engine knows nothing of files, routers or wall clocks. The fleet drives it:
//
//   Replica r(config);
//   r.Enqueue(request, now);            // into WAITING
//   double end = r.StartStep(now);      // plans the next step (or a run of decode steps)
//   ... at `end`: r.FinishStep(end, on_finish);
//
// Thread safety: a Replica is single-threaded.

#ifndef TTFT_ENGINE_H_
#define TTFT_ENGINE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ttft/core.h"
#include "ttft/model.h"
#include "ttft/workload.h"

namespace ttft {

struct EngineConfig {
  HardwareConfig hardware;
  CostParams cost;
  int block_size = 16;
  double gpu_memory_utilization = 0.9;
  double non_kv_reserve_gb = 1.4;  // per GPU: activations, CUDA graphs, allocator slack
  int64_t num_gpu_blocks = 0;      // > 0 overrides the capacity derived from memory
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
  int64_t max_model_len = 8192;
  bool enable_chunked_prefill = true;
  bool enable_prefix_caching = true;
  // vLLM's async scheduling (AsyncScheduler; on by default from about v0.12, vllm#27614):
  // step N+1 is scheduled while step N runs, so a request arriving during a step waits
  // one more step. Off by default here (the scenarios' baselines); validate and
  // calibrate turn it on for the v0.15.1 measurements.
  bool async_scheduling = false;
  int64_t long_prefill_token_threshold = 0;  // 0 = off
  std::string deploy = "v1";                 // engine-config version label

  // KV capacity in blocks: per GPU, memory * utilisation - weights/tp - reserve,
  // divided by a block's bytes per GPU. Errors if it cannot hold one
  // max_model_len request, or the weights do not fit.
  Result<int64_t> KvCapacityBlocks() const;
  // Checks ranges and cross-field rules (e.g. chunked prefill off needs
  // max_num_batched_tokens >= max_model_len, as vLLM requires); the cost parameters
  // against CostParamFields' ranges (ttft/calibration.h), as a profile's are.
  Status Validate() const;
};

// A fixed-bucket Prometheus histogram (per-bucket counts, not cumulative).
struct Histogram {
  const std::vector<double>* bounds = nullptr;  // finite upper bounds, increasing
  std::vector<uint64_t> counts;                 // bounds->size() + 1 (last: +Inf)
  double sum = 0;
  uint64_t count = 0;

  explicit Histogram(const std::vector<double>* b = nullptr)
      : bounds(b), counts(b ? b->size() + 1 : 1, 0) {}
  void Observe(double v, uint64_t n = 1);
};

// vLLM v1's bucket boundaries (vllm/v1/metrics/loggers.py, buckets.py).
const std::vector<double>& TtftBuckets();
const std::vector<double>& ItlBuckets();
const std::vector<double>& RequestLatencyBuckets();
const std::vector<double>& IterationTokenBuckets();
// build_1_2_5_buckets(max_model_len): 1, 2, 5, 10, 20, 50, ... <= max_model_len.
std::vector<double> Build125Buckets(int64_t max_value);

// Cumulative counters and histograms of one replica, named after vLLM's.
struct EngineMetrics {
  explicit EngineMetrics(int64_t max_model_len);
  // Histograms point at token_buckets: not copyable.
  EngineMetrics(const EngineMetrics&) = delete;
  EngineMetrics& operator=(const EngineMetrics&) = delete;
  std::vector<double> token_buckets;  // build_1_2_5_buckets(max_model_len); owns storage
  uint64_t prompt_tokens = 0;         // vllm:prompt_tokens_total (includes cached)
  uint64_t prompt_tokens_cached = 0;  // vllm:prompt_tokens_cached_total
  uint64_t generation_tokens = 0;
  uint64_t prefix_cache_queries = 0;  // tokens
  uint64_t prefix_cache_hits = 0;     // tokens
  uint64_t num_preemptions = 0;
  uint64_t success_stop = 0;
  uint64_t success_length = 0;
  uint64_t success_abort = 0;
  Histogram ttft, itl, e2e, queue, prefill, decode, inference, tpot;
  Histogram prompt_len, generation_len, iteration_tokens, prefill_kv_computed;
};

// What the engine reports when a request ends (the fleet adds labels).
struct FinishedRequest {
  const Request* request = nullptr;  // valid only during the FinishFn call
  RequestStatus status = RequestStatus::kOk;
  double queued_s = 0;     // entered WAITING
  double scheduled_s = 0;  // first scheduled
  double first_token_s = 0;
  double last_token_s = 0;
  double itl_sum_s = 0;
  double itl_max_s = 0;
  int64_t cached_tokens = 0;
  int64_t output_tokens = 0;
  int32_t preemptions = 0;
};
using FinishFn = std::function<void(const FinishedRequest&)>;

class Replica {
 public:
  // REQUIRES: config.Validate().ok() and KvCapacityBlocks() ok.
  Replica(const EngineConfig& config, int64_t num_blocks);
  ~Replica();
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  // A request enters WAITING at `now`. Rejected at once (reported through
  // `on_finish`) when its prompt does not fit max_model_len.
  void Enqueue(std::unique_ptr<Request> request, double now, const FinishFn& on_finish);

  // True when no step is planned and there is no work: the replica is idle.
  bool idle() const { return !step_planned_ && running_.empty() && waiting_.empty(); }
  bool step_planned() const { return step_planned_; }
  // REQUIRES: !step_planned(). Plans the next step starting at `now`, or a run of
  // identical-shape decode steps when nothing can change before the run ends (no
  // request waiting, no prefill in flight, no block shortage). Returns its end, or
  // a negative value when there is nothing to do.
  double StartStep(double now);
  // Cuts a planned run of decode steps at the step in progress at `t`; returns the
  // new end (unchanged for a single step). Call before anything that can change
  // the next step: an arrival, a config change, a snapshot.
  double Interrupt(double t);
  // REQUIRES: step_planned(); `now` is the end StartStep or Interrupt returned.
  void FinishStep(double now, const FinishFn& on_finish);

  // Applies scheduler settings from `config` at the next step. KV capacity and the
  // cost model's hardware must be unchanged (a capacity change is a restart).
  void Reconfigure(const EngineConfig& config);
  void SetSlowdown(double factor);
  // Empties the prefix cache (a restart). REQUIRES: idle().
  void ResetCache();
  // Ends every request it holds with status kAborted at `now` (the run's time
  // limit), dropping any planned step.
  void AbortAll(double now, const FinishFn& on_finish);

  // The client of request `request_seq` disconnected at `now` (vLLM's abort_request).
  // A WAITING request ends at once. A RUNNING one ends with status kAborted when the
  // step in progress finishes (vLLM processes aborts between steps); a planned run of
  // decode steps is cut there, so call it before re-planning: the fleet calls
  // Interrupt(now) first. Returns false when the replica does not hold the request.
  bool Abort(int64_t request_seq, double now, const FinishFn& on_finish);

  // Longest prefix of the request's block hashes present in the prefix cache, in blocks.
  // Approximate: binary search, exact when a chain's cached blocks form a prefix
  // (the common case, since LRU eviction frees a chain's tail first).
  int64_t CachedPrefixBlocks(const Request& request) const;

  int64_t num_running() const { return static_cast<int64_t>(running_.size()); }
  int64_t num_waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t num_outstanding() const { return num_running() + num_waiting(); }
  double KvUsage() const;  // 1 - free / total, as vllm:kv_cache_usage_perc
  int64_t num_blocks() const;
  int64_t num_free_blocks() const;
  const EngineMetrics& metrics() const { return metrics_; }
  const EngineConfig& config() const { return config_; }
  int64_t steps_executed() const { return steps_executed_; }

  // Consistency checks for tests: block ref counts match the block tables, the free
  // queue holds exactly the free blocks, the hash map points at hashed blocks.
  Status CheckInvariants() const;

 private:
  struct Seq;
  class BlockPool;

  bool TryAllocate(Seq& s, int64_t num_new_tokens, const std::vector<int32_t>& hits);
  void CommitRunSteps(int64_t steps, const FinishFn* on_finish);
  void Preempt(Seq& victim);
  void FreeSeq(Seq& s);
  void CacheFullBlocks(Seq& s, int64_t num_tokens);
  int64_t LookupPrefix(const Seq& s, std::vector<int32_t>& hit_blocks) const;
  double PlanSingleStep(double now);
  int64_t DecodeRunLength() const;
  void Finish(Seq& s, RequestStatus status, const FinishFn& on_finish);
  // Ends running sequences whose client disconnected, after a step's tokens.
  void FinishAborted(double now, const FinishFn& on_finish);

  EngineConfig config_;
  CostModel cost_;
  std::unique_ptr<BlockPool> pool_;
  std::deque<Seq*> waiting_;
  std::vector<Seq*> running_;
  EngineMetrics metrics_;

  // The planned step.
  bool step_planned_ = false;
  double step_start_ = 0;
  struct Scheduled {
    Seq* seq;
    int64_t num_new;
  };
  std::vector<Scheduled> scheduled_;
  int64_t step_tokens_ = 0;
  double step_end_ = 0;
  std::vector<int32_t> hit_scratch_;
  // A planned run of decode steps: their durations and absolute ends. Steps
  // [run_next_, run_steps_) are planned and not yet committed.
  int64_t run_steps_ = 0;  // 0: a single ordinary step
  int64_t run_next_ = 0;
  std::vector<double> run_ends_;
  std::vector<double> run_durations_;
  int64_t steps_executed_ = 0;
  int64_t abort_pending_ = 0;  // running sequences with abort_requested
};

}  // namespace ttft

#endif  // TTFT_ENGINE_H_
