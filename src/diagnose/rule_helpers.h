// -----------------------------------------------------------------------------
// File: diagnose/rule_helpers.h (private to the diagnose module)
// -----------------------------------------------------------------------------
//
// What the hypothesis rules (src/diagnose/rule_*.cc) share: the scoring ramps, the
// group lookup, the number formatters (ttft/format.h) and the registry's factories.

#ifndef TTFT_DIAGNOSE_RULE_HELPERS_H_
#define TTFT_DIAGNOSE_RULE_HELPERS_H_

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ttft/diagnose.h"
#include "ttft/format.h"
#include "ttft/stats.h"

namespace ttft::diag {

using numfmt::Num;
using numfmt::Pct;
using numfmt::Pct1;
using numfmt::Ratio;
using numfmt::Secs;
using numfmt::X;

// 0 at or below `lo`, 1 at or above `hi`, linear between; 0 for NaN.
inline double Ramp(double x, double lo, double hi) {
  if (!std::isfinite(x)) return std::isinf(x) && x > 0 ? 1.0 : 0.0;
  if (x <= lo) return 0;
  if (x >= hi) return 1;
  return (x - lo) / (hi - lo);
}

// 1 when a ratio is within [1/band, band] of 1 (flat), falling to 0 at band^2.
inline double Flat(double ratio, double band) {
  if (!std::isfinite(ratio) || ratio <= 0) return 1;  // unknown: do not penalise
  const double dev = std::fabs(std::log(ratio));
  const double b = std::log(band);
  return 1 - Ramp(dev, b, 2 * b);
}

// A signal that another cause moved something this cause expects flat weakens the
// case but never cancels it (issue 13: with two causes at once, "is everything else
// flat?" let one cause's evidence veto the other): `flat` in [0, 1] maps to [0.5, 1].
inline double AtMostHalves(double flat) { return 0.5 + 0.5 * std::clamp(flat, 0.0, 1.0); }

// How a change ratio (after / before) reads: flat within [1/band, band], else up or
// down; unknown when the ratio is not finite. Evidence sentences say what the numbers
// show through this, never a fixed claim.
enum class Trend : uint8_t { kUnknown, kFlat, kUp, kDown };
inline Trend TrendOf(double ratio, double band) {
  if (!std::isfinite(ratio) || ratio <= 0) return Trend::kUnknown;
  if (ratio > band) return Trend::kUp;
  if (ratio < 1 / band) return Trend::kDown;
  return Trend::kFlat;
}

// Whether quantile i (TermQuantiles::kQs) of `t` is a figure: exact or sketched, or
// from histogram buckets neither in the first bucket nor above the highest finite
// bound (there the buckets give only a bound).
inline bool Resolved(const TermQuantiles& t, size_t i) {
  return t.source != TermQuantiles::Source::kBuckets ||
         (!t.buckets[i].in_first_bucket && !t.buckets[i].in_inf_bucket);
}

// An evidence line about `metric`, `before` -> `after` in `unit`.
inline EvidenceLine Line(std::string metric, double before, double after, std::string unit,
                         std::string sentence) {
  return {std::move(metric), before, after, std::move(unit), std::move(sentence)};
}
// An evidence line that quotes no single figure.
inline EvidenceLine Remark(std::string sentence) {
  return {"", kMissing, kMissing, "", std::move(sentence)};
}
// The evidence line of a label change: its share of requests in each window.
inline EvidenceLine ChangeLine(const LabelChange& c) {
  const bool added = c.kind == LabelChange::Kind::kNew;
  return {"share_of_requests", added ? 0 : c.share, added ? c.share : 0, "fraction", ToString(c)};
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

#endif  // TTFT_DIAGNOSE_RULE_HELPERS_H_
