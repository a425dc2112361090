// -----------------------------------------------------------------------------
// File: dataset/gather.h (private to the dataset module)
// -----------------------------------------------------------------------------
//
// The machinery of the window statistics' passes over the span table: gathers of one
// quantity, the reusable buffers behind them (WindowStatsArena::Buffers) and the
// state of one pass (window_stats.cc).

#ifndef TTFT_DATASET_GATHER_H_
#define TTFT_DATASET_GATHER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ttft/window_stats.h"

namespace ttft::stats_internal {

// The values one pass over rows gathers for one quantity, written at a cursor into
// storage the caller sized. REQUIRES: no more push_back calls than the room bound.
template <typename T>
class Gather {
 public:
  void Bind(T* storage) { begin_ = end_ = storage; }
  void push_back(T v) { *end_++ = v; }
  size_t size() const { return static_cast<size_t>(end_ - begin_); }
  bool empty() const { return begin_ == end_; }
  std::span<T> values() const { return {begin_, end_}; }

 private:
  T* begin_ = nullptr;
  T* end_ = nullptr;
};

// Uninitialised storage for Gathers that grows and is reused, never shrunk: a
// diagnosis makes a dozen passes over millions of rows, and fresh buffers for each
// would page-fault in every time (most of its cost at 10 M spans).
template <typename T>
class GatherBuffer {
 public:
  // Room for n values (contents unspecified: LargeVector default-initialises).
  T* Room(size_t n) {
    if (n > buf_.size()) {
      buf_ = LargeVector<T>();  // freed before the larger block is taken
      buf_.resize(n);
    }
    return buf_.data();
  }

 private:
  LargeVector<T> buf_;
};

// The storage behind one window's gathers: the whole window's, then its groups' in
// turn. One per thread.
struct GatherArena {
  GatherBuffer<float> ttft, queue, prefill, fe, itl, itl_max;
  GatherBuffer<int32_t> prompt, output;
  GatherBuffer<double> per_token;
};

// The state of ComputeWindowStats' pass over a window's rows (or a group's).
struct StatsScratch {
  Gather<float> ttft, queue, prefill, fe, itl, itl_max;
  Gather<int32_t> prompt, output;
  Gather<double> per_token;
  std::vector<char> set_seen;
  int64_t requests = 0, ok = 0, errors = 0, rejected_too_long = 0;
  int64_t cached_n = 0, output_n = 0, preempt_sum = 0, preempt_n = 0;
  double prompt_sum = 0, cached_sum = 0, hit_prompt_sum = 0, output_sum = 0, e2e_sum = 0;
  double above_threshold = kMissing;  // ok rows with ttft above it are counted in `above`
  int64_t above = 0;
  bool lean = false;  // only the figures ComputeGroupWindowStats documents
  bool full = false;  // StatsDetail::kFull
  // Zeroes the counters; the gathers are bound by the caller.
  void Reset(size_t label_sets, double threshold, bool lean_stats);
};

}  // namespace ttft::stats_internal

namespace ttft {
// The public arena is the gather buffers.
struct WindowStatsArena::Buffers : stats_internal::GatherArena {};
}  // namespace ttft

#endif  // TTFT_DATASET_GATHER_H_
