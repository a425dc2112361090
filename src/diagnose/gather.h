// -----------------------------------------------------------------------------
// File: diagnose/gather.h (private to the diagnose module)
// -----------------------------------------------------------------------------
//
// The machinery of the window statistics' passes over the span table: gathers of one
// quantity, the reusable buffers behind them, and ComputeWindowStats /
// ComputeGroupStats with caller-owned buffers (window_stats.cc).

#ifndef TTFT_DIAGNOSE_GATHER_H_
#define TTFT_DIAGNOSE_GATHER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ttft/diagnose.h"

namespace ttft::diag {

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
  bool lean = false;  // only the figures group rows carry (GroupRow in ttft/diagnose.h)
  // Zeroes the counters; the gathers are bound by the caller.
  void Reset(size_t label_sets, double threshold, bool lean_stats);
};

// ttft::ComputeWindowStats with caller-owned buffers (identical results).
WindowStats ComputeWindowStats(const SpanTable& t, std::span<const uint32_t> rows, double from_s,
                               double to_s, GatherArena& arena);

// The stats of every group of a window, and its ok requests with ttft > `threshold`.
struct GroupStats {
  WindowStats stats;
  int64_t above = 0;
};

// Statistics of all the groups of a window in ONE pass over `rows`, each row going to
// group group_of_set[label set] in [0, groups): the columns are read in order instead
// of gathered once per group (a group's rows are spread over the whole table). Each
// group's figures equal ComputeWindowStats' on its rows, except the quantiles GroupRow
// documents as not computed (NaN).
std::vector<GroupStats> ComputeGroupStats(const SpanTable& t, std::span<const uint32_t> rows,
                                          std::span<const int> group_of_set, size_t groups,
                                          double from_s, double to_s, double threshold,
                                          GatherArena& arena);

}  // namespace ttft::diag

#endif  // TTFT_DIAGNOSE_GATHER_H_
