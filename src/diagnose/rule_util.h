// Small helpers shared by the hypothesis rules (src/diagnose/rule_*.cc) and the
// report builder. Internal to the diagnose module.
#ifndef TTFT_DIAGNOSE_RULE_UTIL_H_
#define TTFT_DIAGNOSE_RULE_UTIL_H_

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ttft/diagnose.h"

namespace ttft::diag {

// 0 at or below `lo`, 1 at or above `hi`, linear between; 0 for NaN.
inline double Ramp(double x, double lo, double hi) {
  if (!std::isfinite(x)) return std::isinf(x) && x > 0 ? 1.0 : 0.0;
  if (x <= lo) return 0;
  if (x >= hi) return 1;
  return (x - lo) / (hi - lo);
}

// after / before; NaN unless both are finite and before > 0.
inline double Ratio(double before, double after) {
  if (!std::isfinite(before) || !std::isfinite(after) || before <= 0) return kMissing;
  return after / before;
}

// 1 when a ratio is within [1/band, band] of 1 (flat), falling to 0 at band^2.
inline double Flat(double ratio, double band) {
  if (!std::isfinite(ratio) || ratio <= 0) return 1;  // unknown: do not penalise
  const double dev = std::fabs(std::log(ratio));
  const double b = std::log(band);
  return 1 - Ramp(dev, b, 2 * b);
}

inline std::string Secs(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (v < 1) return fmt::format("{:.0f} ms", v * 1000);
  return fmt::format("{:.2f} s", v);
}
inline std::string Pct(double v) {
  return std::isfinite(v) ? fmt::format("{:.0f}%", v * 100) : "n/a";
}
inline std::string Pct1(double v) {
  return std::isfinite(v) ? fmt::format("{:.1f}%", v * 100) : "n/a";
}
inline std::string Num(double v) { return std::isfinite(v) ? fmt::format("{:.0f}", v) : "n/a"; }
inline std::string X(double ratio) {
  return std::isfinite(ratio) ? fmt::format("x{:.2f}", ratio) : "n/a";
}

// The row of `split` with the largest contribution that passes `pred`, or nullptr.
template <typename Pred>
const GroupRow* TopRow(const GroupSplit* split, Pred pred) {
  if (split == nullptr) return nullptr;
  const GroupRow* best = nullptr;
  for (const GroupRow& r : split->rows) {
    if (!pred(r)) continue;
    if (best == nullptr || r.contribution > best->contribution) best = &r;
  }
  return best;
}

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

// Runs `a` and `b`, which must not share mutable state: `b` on a second thread when
// `parallel` (the baseline and incident windows of a large diagnosis, on two cores),
// else one after the other. The results do not depend on which.
template <typename A, typename B>
void RunBoth(bool parallel, A&& a, B&& b) {
  if (!parallel || std::thread::hardware_concurrency() < 2) {
    a();
    b();
    return;
  }
  std::jthread other(std::forward<B>(b));
  a();
}

// Windows with at least this many rows between them are computed on two threads.
inline constexpr size_t kParallelRows = 200000;

// Registered rule factories (one per file).
std::unique_ptr<HypothesisRule> MakePrefixCacheCollapseRule();
std::unique_ptr<HypothesisRule> MakeSchedulerConfigRule();
std::unique_ptr<HypothesisRule> MakeKvPressureRule();
std::unique_ptr<HypothesisRule> MakeLongerPromptsRule();
std::unique_ptr<HypothesisRule> MakeBadReplicaRule();
std::unique_ptr<HypothesisRule> MakeRegionCapacityRule();
std::unique_ptr<HypothesisRule> MakeTrafficMixRule();
std::unique_ptr<HypothesisRule> MakeLoadSurgeRule();
std::unique_ptr<HypothesisRule> MakeComputeSlowdownRule();
std::unique_ptr<HypothesisRule> MakeDecodeHeavyRule();

}  // namespace ttft::diag

#endif  // TTFT_DIAGNOSE_RULE_UTIL_H_
