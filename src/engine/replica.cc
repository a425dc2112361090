// One replica with vLLM v1 scheduling, paged KV cache and prefix caching
// (ttft/engine.h). Line references are to vLLM's vllm/v1/core/sched/scheduler.py
// (Scheduler.schedule), kv_cache_manager.py (get_computed_blocks, allocate_slots)
// and block_pool.py / kv_cache_utils.py (BlockPool, FreeKVCacheBlockQueue).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "ttft/calibration.h"
#include "ttft/engine.h"

namespace ttft {

// ---------------------------------------------------------------------------
// Engine config
// ---------------------------------------------------------------------------

Result<int64_t> EngineConfig::KvCapacityBlocks() const {
  if (block_size <= 0) {
    return Status::Invalid(fmt::format("block_size: must be 1..1024, got {}", block_size));
  }
  const double block_bytes_per_gpu =
      hardware.KvBytesPerToken() / hardware.tp * static_cast<double>(block_size);
  int64_t blocks = num_gpu_blocks;
  if (blocks <= 0) {
    const double weights_per_gpu = hardware.WeightBytes() / hardware.tp;
    const double avail = hardware.gpu.memory_gb * 1e9 * gpu_memory_utilization - weights_per_gpu -
                         non_kv_reserve_gb * 1e9;
    if (avail <= 0) {
      return Status::Invalid(fmt::format(
          "gpu_memory_utilization: {} of {}'s {:.1f} GB leaves no room for KV cache after "
          "{:.1f} GB of {} weights per GPU (tp {})",
          gpu_memory_utilization, hardware.gpu.name, hardware.gpu.memory_gb, weights_per_gpu / 1e9,
          hardware.model.name, hardware.tp));
    }
    blocks = static_cast<int64_t>(std::floor(avail / block_bytes_per_gpu));
  }
  const int64_t need = (max_model_len + block_size - 1) / block_size;
  if (blocks < need) {
    return Status::Invalid(fmt::format(
        "max_model_len: KV cache holds {} blocks ({} tokens), fewer than one {}-token request "
        "needs",
        blocks, blocks * block_size, max_model_len));
  }
  return blocks;
}

Status EngineConfig::Validate() const {
  if (block_size <= 0 || block_size > 1024) {
    return Status::Invalid(fmt::format("block_size: must be 1..1024, got {}", block_size));
  }
  if (!(gpu_memory_utilization > 0 && gpu_memory_utilization <= 1)) {
    return Status::Invalid(
        fmt::format("gpu_memory_utilization: must be in (0, 1], got {}", gpu_memory_utilization));
  }
  if (max_num_batched_tokens <= 0) {
    return Status::Invalid(
        fmt::format("max_num_batched_tokens: must be > 0, got {}", max_num_batched_tokens));
  }
  if (max_num_seqs <= 0) {
    return Status::Invalid(fmt::format("max_num_seqs: must be > 0, got {}", max_num_seqs));
  }
  if (max_model_len <= 1) {
    return Status::Invalid(fmt::format("max_model_len: must be > 1, got {}", max_model_len));
  }
  if (!enable_chunked_prefill && max_num_batched_tokens < max_model_len) {
    // vLLM's SchedulerConfig raises the same: without chunking a whole prompt must fit a step.
    return Status::Invalid(fmt::format(
        "max_num_batched_tokens: {} is smaller than max_model_len {}; with chunked prefill "
        "disabled every prompt must fit one step",
        max_num_batched_tokens, max_model_len));
  }
  if (long_prefill_token_threshold < 0) {
    return Status::Invalid("long_prefill_token_threshold: must be >= 0");
  }
  // One definition of a valid cost parameter, the calibration profile's
  // (CostParamFields), for a scenario, a profile and a flag alike: the bounds exclude a
  // zero efficiency (a division by zero) and values no GPU reaches.
  for (const CostParamField& f : CostParamFields()) {
    const double x = cost.*(f.field);
    if (!f.Admits(x)) {
      return Status::Invalid(
          fmt::format("cost.{}: {} is outside {}..{}{}", f.name, x, f.min, f.max,
                      f.zero_means ? fmt::format(" (0: {})", f.zero_means) : std::string()));
    }
  }
  if (!(cost.slowdown > 0) || !std::isfinite(cost.slowdown)) {
    return Status::Invalid(
        fmt::format("cost.slowdown: must be a finite number > 0, got {}", cost.slowdown));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Block pool: blocks, the LRU free queue, and the hash -> block map
// ---------------------------------------------------------------------------

class Replica::BlockPool {
 public:
  // Initially every block is free, in id order (FreeKVCacheBlockQueue.__init__). The
  // blocks are materialised lazily: the never-used ones are the ids [blocks_.size(), n)
  // and stand, in id order, ahead of every queue entry (later pushes go to the tail,
  // and a never-used block can be neither touched nor released), so Allocate takes
  // them first, exactly as popping the initial queue did. Constructing a pool thus
  // touches none of its memory: a replay of a short window on a large fleet builds
  // many pools and uses a small part of each (docs/performance.md, "Attribution on
  // large fleets").
  explicit BlockPool(int64_t n)
      : n_(static_cast<size_t>(n)), queue_(2 * static_cast<size_t>(n) + kSweepSlack + 1) {
    blocks_.reserve(n_);
    num_free_ = n;
  }

  int64_t size() const { return static_cast<int64_t>(n_); }
  int64_t num_free() const { return num_free_; }

  // The block array and the map outgrow the caches of a fleet of replicas, and a
  // request's blocks are scattered through them: the loops over a request's
  // blocks prefetch a few iterations ahead so the cache misses overlap
  // (measured in docs/performance.md).
  static constexpr size_t kPrefetchAhead = 8;
  void PrefetchBlock(int32_t id) const { __builtin_prefetch(&blocks_[id], 1); }
  void PrefetchHash(uint64_t hash) const { cached_.prefetch(hash); }
  int32_t ref(int32_t id) const { return blocks_[id].ref; }

  // The block caching `hash`, or -1. Invariant: an entry's block holds its hash
  // (Allocate erases an evicted block's entry; CheckInvariants verifies).
  int32_t Lookup(uint64_t hash) const {
    auto it = cached_.find(hash);
    return it == cached_.end() ? -1 : it->second;
  }

  // A cache hit takes a reference; a free block leaves the free queue (touch()).
  void Touch(int32_t id) {
    Block& b = blocks_[id];
    if (b.ref == 0) {
      b.free = false;  // its queue entry goes stale
      --num_free_;
    }
    ++b.ref;
  }

  // Pops the LRU free block, evicting its cached hash (get_new_blocks).
  // REQUIRES: num_free() > 0.
  int32_t Allocate() {
    assert(num_free_ > 0);
    if (blocks_.size() < n_) {  // a never-used block: the front of the free queue
      const auto id = static_cast<int32_t>(blocks_.size());
      Block& b = blocks_.emplace_back();
      b.stamp = 1;  // as its push at construction would have left it
      b.ref = 1;
      --num_free_;
      return id;
    }
    for (;;) {
      // The block 8 pops ahead, and the map slot its eviction will erase (from the
      // entry's hint: reading the block itself here would wait for it).
      if (queue_.size() > kPrefetchAhead) {
        const Entry& ahead = queue_[kPrefetchAhead];
        PrefetchBlock(ahead.id);
        if (ahead.evict_hint != 0) PrefetchHash(ahead.evict_hint);
      }
      const Entry e = queue_.front();
      queue_.pop_front();
      Block& b = blocks_[e.id];
      if (!b.free || b.stamp != e.stamp) continue;  // stale: touched since it was queued
      b.free = false;
      --num_free_;
      // Eviction erases the map entry, so the map holds at most one entry per block.
      if (b.hashed && b.shared) cached_.erase(b.hash);
      b.hashed = false;
      b.ref = 1;
      return e.id;
    }
  }

  // Drops a reference; a block reaching zero joins the free queue's tail.
  void Release(int32_t id) {
    Block& b = blocks_[id];
    assert(b.ref > 0);
    if (--b.ref == 0) PushBack(id);
  }

  // Registers a full block's hash. V1 does not de-duplicate: when the hash is
  // already cached by another block, this one stays unhashed (see engine.h).
  void Cache(int32_t id, uint64_t hash) {
    Block& b = blocks_[id];
    if (b.hashed) return;
    if (!cached_.try_emplace(hash, id).second) return;  // live elsewhere: no dedup
    b.hash = hash;
    b.hashed = true;
    b.shared = true;
  }

  // Registers a block whose content is unique to its request: only that request,
  // resumed after a preemption, can hit it, through its remembered block ids
  // (HoldsHash). Equivalent to Cache() for every lookup that can happen.
  void CachePrivate(int32_t id, uint64_t hash) {
    Block& b = blocks_[id];
    if (b.hashed) return;
    b.hash = hash;
    b.hashed = true;
    b.shared = false;
  }

  bool HoldsHash(int32_t id, uint64_t hash) const {
    const Block& b = blocks_[id];
    return b.hashed && b.hash == hash;
  }

  void Clear() {
    for (Block& b : blocks_) b.hashed = false;
    cached_.clear();
  }

  Status Check(const std::vector<int32_t>& expected_refs) const {
    // The never-used blocks are free, unreferenced and in the queue.
    int64_t live = static_cast<int64_t>(n_ - blocks_.size());
    for (size_t i = blocks_.size(); i < n_; ++i) {
      if (expected_refs[i] != 0) {
        return Status::Internal(
            fmt::format("block {} never allocated but {} holders", i, expected_refs[i]));
      }
    }
    std::vector<int> seen(blocks_.size(), 0);
    for (size_t k = 0; k < queue_.size(); ++k) {
      const Entry& e = queue_[k];
      if (e.id < 0 || static_cast<size_t>(e.id) >= blocks_.size()) {
        return Status::Internal(fmt::format("queue entry for never-allocated block {}", e.id));
      }
      const Block& b = blocks_[e.id];
      if (!b.free || b.stamp != e.stamp) continue;
      if (b.ref != 0) return Status::Internal(fmt::format("block {} free with ref", e.id));
      if (++seen[e.id] > 1) return Status::Internal(fmt::format("block {} queued twice", e.id));
      ++live;
    }
    if (live != num_free_) return Status::Internal("free count mismatch");
    for (size_t i = 0; i < blocks_.size(); ++i) {
      if (blocks_[i].ref != expected_refs[i]) {
        return Status::Internal(
            fmt::format("block {} ref {} but {} holders", i, blocks_[i].ref, expected_refs[i]));
      }
      if ((blocks_[i].ref == 0) != blocks_[i].free) {
        return Status::Internal(fmt::format("block {} free flag disagrees with ref", i));
      }
    }
    for (const auto& [hash, id] : cached_) {
      if (!blocks_[id].hashed || !blocks_[id].shared || blocks_[id].hash != hash) {
        return Status::Internal(fmt::format("map entry for block {} is stale", id));
      }
    }
    for (size_t i = 0; i < blocks_.size(); ++i) {
      if (blocks_[i].hashed && blocks_[i].shared &&
          Lookup(blocks_[i].hash) != static_cast<int32_t>(i)) {
        return Status::Internal(fmt::format("hashed block {} is not reachable from the map", i));
      }
    }
    return Status::Ok();
  }

 private:
  struct Block {
    uint64_t hash = 0;
    int32_t ref = 0;
    uint32_t stamp = 0;   // bumped at every enqueue; tells live queue entries from stale
    bool free = false;    // in the free queue (ref == 0)
    bool hashed = false;  // holds `hash` and can be hit
    bool shared = false;  // reachable through the map (else only by its own request)
  };
  static constexpr size_t kSweepSlack = 1024;
  // The LRU free queue (FreeKVCacheBlockQueue) as a FIFO with lazy deletion: a
  // touched block's entry stays behind and is skipped when it reaches the front.
  // Pops read sequential memory, where a linked list chased pointers through the
  // block array. Stale entries are swept when they outnumber the blocks.
  struct Entry {
    int32_t id;
    uint32_t stamp;       // Block::stamp at the push
    uint64_t evict_hint;  // the map key its eviction erases, or 0; a prefetch hint only
  };

  void PushBack(int32_t id) {
    Block& b = blocks_[id];
    ++b.stamp;
    b.free = true;
    // While free, a block's hash cannot change (only allocated blocks are cached).
    queue_.push_back({id, b.stamp, b.hashed && b.shared ? b.hash : 0});
    ++num_free_;
    if (queue_.size() > 2 * n_ + kSweepSlack) SweepQueue();
  }

  void SweepQueue() {
    queue_.KeepIf([this](const Entry& e) {
      const Block& b = blocks_[e.id];
      return b.free && b.stamp == e.stamp;
    });
  }

  size_t n_;                   // blocks in the pool
  std::vector<Block> blocks_;  // the materialised ones, ids [0, blocks_.size()); capacity n_
  // A FIFO in a fixed power-of-two ring: the sweep bounds its length, so it never
  // grows, and push and pop are an index and a mask (no node allocation as in std::deque).
  // Its storage is left uninitialised: only the slots the tail has passed are touched.
  class EntryRing {
   public:
    explicit EntryRing(size_t min_capacity)
        : capacity_(std::bit_ceil(min_capacity)),
          buf_(std::make_unique_for_overwrite<Entry[]>(capacity_)),
          mask_(capacity_ - 1) {}
    size_t size() const { return static_cast<size_t>(tail_ - head_); }
    const Entry& operator[](size_t i) const { return buf_[(head_ + i) & mask_]; }
    const Entry& front() const { return buf_[head_ & mask_]; }
    void pop_front() { ++head_; }
    // REQUIRES: size() < capacity (the sweep keeps it so).
    void push_back(const Entry& e) {
      assert(size() < capacity_);
      buf_[tail_++ & mask_] = e;
    }
    // Keeps the entries for which keep(e) is true, in order.
    template <typename Keep>
    void KeepIf(Keep keep) {
      uint64_t w = head_;
      for (uint64_t r = head_; r != tail_; ++r) {
        const Entry e = buf_[r & mask_];
        if (keep(e)) buf_[w++ & mask_] = e;
      }
      tail_ = w;
    }

   private:
    size_t capacity_;
    std::unique_ptr<Entry[]> buf_;
    size_t mask_;
    uint64_t head_ = 0, tail_ = 0;
  };
  EntryRing queue_;
  int64_t num_free_ = 0;
  // Open addressing (Abseil's SwissTable): this map is the simulator's hottest
  // structure, probed once per prompt block on lookup and on caching.
  absl::flat_hash_map<uint64_t, int32_t> cached_;
};

// ---------------------------------------------------------------------------
// Sequences
// ---------------------------------------------------------------------------

struct Replica::Seq {
  std::unique_ptr<Request> req;
  int64_t num_tokens = 0;    // prompt + generated so far
  int64_t num_computed = 0;  // tokens whose KV is in the cache
  int64_t generated = 0;
  int64_t target = 0;       // tokens to generate
  bool capped = false;      // target cut by max_model_len (finish reason "length")
  int64_t num_cached = -1;  // prefix-cache hit at first scheduling (vLLM num_cached_tokens)
  std::vector<int32_t> blocks;
  std::vector<int32_t> preempted_blocks;  // block ids held before the last preemption
  int64_t num_hashed = 0;                 // leading blocks registered in the prefix cache
  double queued_s = 0;
  double scheduled_s = -1;
  double first_token_s = -1;
  double last_token_s = 0;
  double itl_sum_s = 0;
  double itl_max_s = 0;
  int32_t preemptions = 0;
  bool abort_requested = false;  // the client disconnected; ends after the current step
  // Async scheduling: arrived while a step was in flight, so the next step was already
  // scheduled without it; it may join the step after (cleared at the next schedule).
  bool held = false;
};

Replica::Replica(const EngineConfig& config, int64_t num_blocks)
    : config_(config),
      cost_(config.hardware, config.cost),
      pool_(std::make_unique<BlockPool>(num_blocks)),
      metrics_(config.max_model_len) {}

Replica::~Replica() {
  for (Seq* s : waiting_) delete s;
  for (Seq* s : running_) delete s;
}

int64_t Replica::num_blocks() const { return pool_->size(); }
int64_t Replica::num_free_blocks() const { return pool_->num_free(); }
double Replica::KvUsage() const {
  return 1.0 - static_cast<double>(pool_->num_free()) / static_cast<double>(pool_->size());
}

void Replica::Reconfigure(const EngineConfig& config) {
  const double slowdown = cost_.params().slowdown;
  config_ = config;
  cost_ = CostModel(config.hardware, config.cost);
  cost_.set_slowdown(slowdown);
}

void Replica::SetSlowdown(double factor) { cost_.set_slowdown(factor); }

void Replica::ResetCache() { pool_->Clear(); }

void Replica::AbortAll(double now, const FinishFn& on_finish) {
  step_planned_ = false;
  scheduled_.clear();
  run_steps_ = 0;
  std::vector<Seq*> all(running_.begin(), running_.end());
  all.insert(all.end(), waiting_.begin(), waiting_.end());
  running_.clear();
  waiting_.clear();
  abort_pending_ = 0;
  for (Seq* s : all) {
    s->last_token_s = std::max(s->last_token_s, now);
    Finish(*s, RequestStatus::kAborted, on_finish);
  }
}

bool Replica::Abort(int64_t request_seq, double now, const FinishFn& on_finish) {
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    Seq* s = *it;
    if (s->req->seq != request_seq) continue;
    waiting_.erase(it);
    s->last_token_s = std::max(s->last_token_s, now);
    Finish(*s, RequestStatus::kAborted, on_finish);
    return true;
  }
  for (Seq* s : running_) {
    if (s->req->seq != request_seq) continue;
    if (!s->abort_requested) {
      s->abort_requested = true;
      ++abort_pending_;
    }
    if (!step_planned_) FinishAborted(now, on_finish);
    return true;
  }
  return false;
}

void Replica::FinishAborted(double now, const FinishFn& on_finish) {
  if (abort_pending_ == 0) return;
  auto it = std::stable_partition(running_.begin(), running_.end(),
                                  [](const Seq* s) { return !s->abort_requested; });
  std::vector<Seq*> done(it, running_.end());
  running_.erase(it, running_.end());
  // A flagged sequence preempted before its step ended waits in WAITING.
  for (auto w = waiting_.begin(); w != waiting_.end();) {
    if ((*w)->abort_requested) {
      done.push_back(*w);
      w = waiting_.erase(w);
    } else {
      ++w;
    }
  }
  abort_pending_ = 0;
  for (Seq* s : done) {
    s->last_token_s = std::max(s->last_token_s, now);
    Finish(*s, RequestStatus::kAborted, on_finish);
  }
}

void Replica::Enqueue(std::unique_ptr<Request> request, double now, const FinishFn& on_finish) {
  auto* s = new Seq();
  s->req = std::move(request);
  s->num_tokens = s->req->prompt_tokens;
  s->queued_s = now;
  s->last_token_s = now;
  // vLLM rejects a prompt that leaves no room for one generated token, and caps
  // the output at max_model_len.
  if (s->req->prompt_tokens + 1 > config_.max_model_len) {
    Finish(*s, RequestStatus::kRejectedTooLong, on_finish);
    return;
  }
  s->target = std::max<int64_t>(1, s->req->output_tokens);
  if (s->req->prompt_tokens + s->target > config_.max_model_len) {
    s->target = config_.max_model_len - s->req->prompt_tokens;
    s->capped = true;
  }
  // vLLM's AsyncScheduler schedules step N+1 while step N runs: a request that arrives
  // during a step misses the step already scheduled. An idle engine takes it at once.
  s->held = config_.async_scheduling && step_planned_;
  waiting_.push_back(s);
}

int64_t Replica::LookupPrefix(const Seq& s, std::vector<int32_t>& hits) const {
  hits.clear();
  if (!config_.enable_prefix_caching) return 0;
  // max_cache_hit_length = num_tokens - 1: the last token is always computed.
  const auto& hashes = s.req->block_hashes;
  const int64_t max_blocks = std::min<int64_t>((s.num_tokens - 1) / config_.block_size,
                                               static_cast<int64_t>(hashes.size()));
  const int64_t shared_blocks = std::min<int64_t>(max_blocks, s.req->unique_from_block);
  for (int64_t i = 0; i < shared_blocks; ++i) {
    if (i + static_cast<int64_t>(BlockPool::kPrefetchAhead) < shared_blocks) {
      pool_->PrefetchHash(hashes[static_cast<size_t>(i) + BlockPool::kPrefetchAhead]);
    }
    const int32_t id = pool_->Lookup(hashes[static_cast<size_t>(i)]);
    if (id < 0) return static_cast<int64_t>(hits.size()) * config_.block_size;
    hits.push_back(id);
  }
  // Request-unique blocks can only be this request's own, from before a preemption.
  const auto& own = s.preempted_blocks;
  for (int64_t i = shared_blocks; i < max_blocks && i < static_cast<int64_t>(own.size()); ++i) {
    const int32_t id = own[static_cast<size_t>(i)];
    if (!pool_->HoldsHash(id, hashes[static_cast<size_t>(i)])) break;
    hits.push_back(id);
  }
  return static_cast<int64_t>(hits.size()) * config_.block_size;
}

int64_t Replica::CachedPrefixBlocks(const Request& req) const {
  const auto& hashes = req.block_hashes;
  if (!config_.enable_prefix_caching || hashes.empty()) return 0;
  // Request-unique blocks are in no other request's cache.
  int64_t lo = 0, hi = std::min<int64_t>(static_cast<int64_t>(hashes.size()),
                                         req.unique_from_block);  // answer in [lo, hi]
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (pool_->Lookup(hashes[static_cast<size_t>(mid - 1)]) >= 0)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

void Replica::CacheFullBlocks(Seq& s, int64_t num_tokens) {
  if (!config_.enable_prefix_caching) return;
  const auto& hashes = s.req->block_hashes;
  const int64_t full =
      std::min<int64_t>(num_tokens / config_.block_size, static_cast<int64_t>(hashes.size()));
  const int64_t unique_from = s.req->unique_from_block;
  constexpr int64_t kAhead = BlockPool::kPrefetchAhead;
  for (int64_t i = s.num_hashed; i < full; ++i) {
    if (i + kAhead < full) {
      const size_t j = static_cast<size_t>(i + kAhead);
      pool_->PrefetchBlock(s.blocks[j]);
      if (i + kAhead < unique_from) pool_->PrefetchHash(hashes[j]);
    }
    const int32_t id = s.blocks[static_cast<size_t>(i)];
    const uint64_t h = hashes[static_cast<size_t>(i)];
    if (i < unique_from)
      pool_->Cache(id, h);
    else
      pool_->CachePrivate(id, h);
  }
  s.num_hashed = std::max(s.num_hashed, full);
}

// allocate_slots(): `hits` are the blocks a prefix lookup found for `s` (empty for
// a running request). On success the hits are touched and counted as computed.
bool Replica::TryAllocate(Seq& s, int64_t num_new_tokens, const std::vector<int32_t>& hits) {
  const int64_t bs = config_.block_size;
  const int64_t num_hits = static_cast<int64_t>(hits.size());
  const int64_t computed = s.num_computed + num_hits * bs;
  const int64_t required = (computed + num_new_tokens + bs - 1) / bs;
  const int64_t to_allocate = required - static_cast<int64_t>(s.blocks.size()) - num_hits;
  int64_t evictable_hits = 0;
  for (int32_t id : hits) evictable_hits += pool_->ref(id) == 0 ? 1 : 0;
  if (to_allocate > pool_->num_free() - evictable_hits) return false;
  for (int32_t id : hits) {
    pool_->Touch(id);
    s.blocks.push_back(id);
  }
  if (num_hits > 0) {
    s.num_hashed = num_hits;
    s.num_computed = computed;
  }
  for (int64_t i = 0; i < to_allocate; ++i) s.blocks.push_back(pool_->Allocate());
  // vLLM caches the blocks this step will fill at allocation time.
  CacheFullBlocks(s, s.num_computed + num_new_tokens);
  return true;
}

void Replica::FreeSeq(Seq& s) {
  // Reverse order: the request's last block reaches the free queue first and so is
  // evicted first (KVCacheManager.free).
  const size_t n = s.blocks.size();
  for (size_t k = n; k-- > 0;) {
    if (k >= BlockPool::kPrefetchAhead)
      pool_->PrefetchBlock(s.blocks[k - BlockPool::kPrefetchAhead]);
    pool_->Release(s.blocks[k]);
  }
  s.blocks.clear();
  s.num_hashed = 0;
}

void Replica::Preempt(Seq& victim) {
  victim.preempted_blocks = victim.blocks;
  FreeSeq(victim);
  victim.num_computed = 0;
  ++victim.preemptions;
  ++metrics_.num_preemptions;
  waiting_.push_front(&victim);
}

void Replica::Finish(Seq& s, RequestStatus status, const FinishFn& on_finish) {
  FinishedRequest f;
  f.request = s.req.get();
  f.status = status;
  f.queued_s = s.queued_s;
  f.scheduled_s = s.scheduled_s;
  f.first_token_s = s.first_token_s;
  f.last_token_s = s.last_token_s;
  f.itl_sum_s = s.itl_sum_s;
  f.itl_max_s = s.itl_max_s;
  f.cached_tokens = std::max<int64_t>(0, s.num_cached);
  f.output_tokens = s.generated;
  f.preemptions = s.preemptions;
  if (status == RequestStatus::kOk) {
    const double arrival = s.req->arrival_s;
    metrics_.e2e.Observe(s.last_token_s - arrival);
    metrics_.queue.Observe(s.scheduled_s - s.queued_s);
    metrics_.prefill.Observe(s.first_token_s - s.scheduled_s);
    metrics_.decode.Observe(s.last_token_s - s.first_token_s);
    metrics_.inference.Observe(s.last_token_s - s.scheduled_s);
    if (s.generated > 1) {
      metrics_.tpot.Observe((s.last_token_s - s.first_token_s) /
                            static_cast<double>(s.generated - 1));
    }
    metrics_.prompt_len.Observe(static_cast<double>(s.req->prompt_tokens));
    metrics_.generation_len.Observe(static_cast<double>(s.generated));
    if (s.capped)
      ++metrics_.success_length;
    else
      ++metrics_.success_stop;
  } else if (status == RequestStatus::kAborted) {
    ++metrics_.success_abort;  // vllm:request_success_total{finished_reason="abort"}
  }
  FreeSeq(s);
  if (on_finish) on_finish(f);
  delete &s;
}

// ---------------------------------------------------------------------------
// Scheduling
// ---------------------------------------------------------------------------

double Replica::StartStep(double now) {
  assert(!step_planned_);
  if (running_.empty() && waiting_.empty()) return -1;
  const int64_t run = DecodeRunLength();
  if (run >= 2) {
    // A run of decode steps: the batch and its growth are fixed until the first
    // sequence finishes, so each step's time follows from the batch's context.
    scheduled_.clear();
    const int64_t batch = static_cast<int64_t>(running_.size());
    int64_t context = 0;
    for (const Seq* s : running_) context += s->num_computed;
    run_ends_.resize(static_cast<size_t>(run));
    run_durations_.resize(static_cast<size_t>(run));
    double t = now;
    for (int64_t j = 0; j < run; ++j) {
      StepShape shape;
      shape.tokens = batch;
      shape.seqs = batch;
      shape.logit_seqs = batch;
      const int64_t ctx = context + batch * j;
      shape.attention_pairs = static_cast<double>(ctx + batch);
      shape.kv_tokens_read = ctx + batch;
      const double d = cost_.StepTime(shape);
      t += d;
      run_durations_[static_cast<size_t>(j)] = d;
      run_ends_[static_cast<size_t>(j)] = t;
    }
    run_next_ = 0;
    run_steps_ = run;
    step_planned_ = true;
    step_start_ = now;
    return run_ends_.back();
  }
  run_steps_ = 0;
  return PlanSingleStep(now);
}

int64_t Replica::DecodeRunLength() const {
  if (running_.empty()) return 0;
  const int64_t batch = static_cast<int64_t>(running_.size());
  if (batch > config_.max_num_batched_tokens) return 0;
  if (!waiting_.empty() && batch < config_.max_num_seqs) return 0;
  int64_t k = std::numeric_limits<int64_t>::max();
  for (const Seq* s : running_) {
    if (s->num_tokens - s->num_computed != 1) return 0;  // a prefill is in flight
    k = std::min(k, s->target - s->generated);
  }
  k = std::min<int64_t>(k, 1 << 14);
  // Largest run whose new blocks fit in the free pool (no preemption inside a run).
  const int64_t bs = config_.block_size;
  auto blocks_needed = [&](int64_t steps) {
    int64_t need = 0;
    for (const Seq* s : running_) {
      const int64_t required = (s->num_computed + steps + bs - 1) / bs;
      need += std::max<int64_t>(0, required - static_cast<int64_t>(s->blocks.size()));
    }
    return need;
  };
  const int64_t free = pool_->num_free();
  if (blocks_needed(k) > free) {
    int64_t lo = 0, hi = k;  // largest steps in [lo, hi] with need <= free
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (blocks_needed(mid) <= free)
        lo = mid;
      else
        hi = mid - 1;
    }
    k = lo;
  }
  return k;
}

double Replica::PlanSingleStep(double now) {
  static const std::vector<int32_t> kNoHits;
  int64_t budget = config_.max_num_batched_tokens;
  const int64_t threshold = config_.long_prefill_token_threshold;
  scheduled_.clear();
  bool preempted = false;
  hit_scratch_.clear();

  // RUNNING first (Scheduler.schedule: "First, schedule the RUNNING requests").
  size_t i = 0;
  while (i < running_.size() && budget > 0) {
    Seq* s = running_[i];
    int64_t num_new = s->num_tokens - s->num_computed;
    if (threshold > 0 && num_new > threshold) num_new = threshold;
    num_new = std::min(num_new, budget);
    bool scheduled = true;
    while (!TryAllocate(*s, num_new, kNoHits)) {
      // Preempt the newest running request (FCFS policy: self.running.pop()).
      Seq* victim = running_.back();
      running_.pop_back();
      Preempt(*victim);
      preempted = true;
      if (victim == s) {
        scheduled = false;
        break;
      }
    }
    if (!scheduled) break;
    scheduled_.push_back({s, num_new});
    budget -= num_new;
    ++i;
  }

  // WAITING next, unless this step preempted ("if not preempted_reqs").
  if (!preempted) {
    while (!waiting_.empty() && budget > 0) {
      if (static_cast<int64_t>(running_.size()) >= config_.max_num_seqs) break;
      Seq* s = waiting_.front();
      if (s->held && !scheduled_.empty()) break;  // FCFS: those behind arrived later
      int64_t hit_tokens = 0;
      hit_scratch_.clear();
      if (s->num_computed == 0) hit_tokens = LookupPrefix(*s, hit_scratch_);
      int64_t num_new = s->num_tokens - s->num_computed - hit_tokens;
      if (threshold > 0 && num_new > threshold) num_new = threshold;
      // Without chunked prefill the whole prompt must fit: the queue stops here.
      if (!config_.enable_chunked_prefill && num_new > budget) break;
      num_new = std::min(num_new, budget);
      if (!TryAllocate(*s, num_new, hit_scratch_)) break;
      s->preempted_blocks.clear();
      waiting_.pop_front();
      running_.push_back(s);
      if (s->num_cached < 0) {
        s->num_cached = hit_tokens;
        // Prometheus counts first lookups only (preempted requests are separate).
        metrics_.prefix_cache_queries += static_cast<uint64_t>(s->num_tokens);
        metrics_.prefix_cache_hits += static_cast<uint64_t>(hit_tokens);
      }
      if (s->scheduled_s < 0) s->scheduled_s = now;
      scheduled_.push_back({s, num_new});
      budget -= num_new;
    }
  }
  hit_scratch_.clear();
  for (Seq* s : waiting_) s->held = false;  // missed one schedule: eligible from the next

  if (scheduled_.empty()) return -1;
  StepShape shape;
  for (const Scheduled& sc : scheduled_) {
    // Context is what was computed before this step (hits included).
    const int64_t context = sc.seq->num_computed;
    CostModel::AddSequence(shape, context, sc.num_new, context + sc.num_new >= sc.seq->num_tokens);
  }
  step_tokens_ = shape.tokens;
  step_planned_ = true;
  step_start_ = now;
  step_end_ = now + cost_.StepTime(shape);
  return step_end_;
}

double Replica::Interrupt(double t) {
  assert(step_planned_);
  if (run_steps_ == 0) return step_end_;
  // Steps that ended by t are committed; the one in progress finishes; the rest
  // of the run is dropped and will be re-planned.
  int64_t done = run_next_;
  while (done < run_steps_ - 1 && run_ends_[static_cast<size_t>(done)] <= t) ++done;
  if (done > run_next_) CommitRunSteps(done - run_next_, nullptr);
  run_steps_ = run_next_ + 1;
  return run_ends_[static_cast<size_t>(run_next_)];
}

void Replica::CommitRunSteps(int64_t steps, const FinishFn* on_finish) {
  const int64_t batch = static_cast<int64_t>(running_.size());
  const int64_t bs = config_.block_size;
  double max_d = 0;
  for (int64_t j = 0; j < steps; ++j) {
    const double d = run_durations_[static_cast<size_t>(run_next_ + j)];
    max_d = std::max(max_d, d);
    metrics_.itl.Observe(d, static_cast<uint64_t>(batch));
  }
  metrics_.iteration_tokens.Observe(static_cast<double>(batch), static_cast<uint64_t>(steps));
  metrics_.generation_tokens += static_cast<uint64_t>(batch * steps);
  steps_executed_ += steps;
  const double end = run_ends_[static_cast<size_t>(run_next_ + steps - 1)];
  run_next_ += steps;
  bool any_finished = false;
  for (Seq* s : running_) {
    s->num_computed += steps;
    s->generated += steps;
    s->itl_sum_s += end - s->last_token_s;
    s->itl_max_s = std::max(s->itl_max_s, max_d);
    s->last_token_s = end;
    const int64_t required = (s->num_computed + bs - 1) / bs;
    while (static_cast<int64_t>(s->blocks.size()) < required) {
      s->blocks.push_back(pool_->Allocate());
    }
    if (s->generated >= s->target)
      any_finished = true;
    else
      s->num_tokens += steps;
  }
  if (any_finished) {
    assert(on_finish != nullptr);
    std::vector<Seq*> done;
    auto it = std::stable_partition(running_.begin(), running_.end(),
                                    [](const Seq* s) { return s->generated < s->target; });
    done.assign(it, running_.end());
    running_.erase(it, running_.end());
    for (Seq* s : done) Finish(*s, RequestStatus::kOk, *on_finish);
  }
}

void Replica::FinishStep(double now, const FinishFn& on_finish) {
  assert(step_planned_);
  step_planned_ = false;
  if (run_steps_ > 0) {
    CommitRunSteps(run_steps_ - run_next_, &on_finish);
    run_steps_ = 0;
    FinishAborted(now, on_finish);
    return;
  }
  ++steps_executed_;
  metrics_.iteration_tokens.Observe(static_cast<double>(step_tokens_));
  bool any_finished = false;
  for (const Scheduled& sc : scheduled_) {
    Seq* s = sc.seq;
    s->num_computed += sc.num_new;
    if (s->num_computed < s->num_tokens) continue;  // a prefill chunk: no token yet
    ++s->generated;
    ++metrics_.generation_tokens;
    if (s->first_token_s < 0) {
      s->first_token_s = now;
      metrics_.ttft.Observe(now - s->req->arrival_s);
      const int64_t cached = std::max<int64_t>(0, s->num_cached);
      metrics_.prompt_tokens += static_cast<uint64_t>(s->req->prompt_tokens);
      metrics_.prompt_tokens_cached += static_cast<uint64_t>(cached);
      metrics_.prefill_kv_computed.Observe(static_cast<double>(s->req->prompt_tokens - cached));
    } else {
      const double itl = now - s->last_token_s;
      s->itl_sum_s += itl;
      s->itl_max_s = std::max(s->itl_max_s, itl);
      metrics_.itl.Observe(itl);
    }
    s->last_token_s = now;
    if (s->generated >= s->target)
      any_finished = true;
    else
      ++s->num_tokens;
  }
  scheduled_.clear();
  if (any_finished) {
    auto it = std::stable_partition(running_.begin(), running_.end(),
                                    [](const Seq* s) { return s->generated < s->target; });
    std::vector<Seq*> done(it, running_.end());
    running_.erase(it, running_.end());
    for (Seq* s : done) Finish(*s, RequestStatus::kOk, on_finish);
  }
  FinishAborted(now, on_finish);
}

Status Replica::CheckInvariants() const {
  std::vector<int32_t> refs(static_cast<size_t>(pool_->size()), 0);
  for (const Seq* s : running_) {
    for (int32_t id : s->blocks) ++refs[static_cast<size_t>(id)];
    if (s->num_computed > s->num_tokens) return Status::Internal("computed beyond tokens");
    const int64_t need = (s->num_computed + config_.block_size - 1) / config_.block_size;
    if (static_cast<int64_t>(s->blocks.size()) < need) {
      return Status::Internal("running sequence has fewer blocks than its computed tokens");
    }
  }
  for (const Seq* s : waiting_) {
    if (!s->blocks.empty()) return Status::Internal("waiting sequence holds blocks");
  }
  return pool_->Check(refs);
}

}  // namespace ttft
