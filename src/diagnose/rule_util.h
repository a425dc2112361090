// Small helpers shared by the hypothesis rules (src/diagnose/rule_*.cc) and the
// report builder. Internal to the diagnose module.
#ifndef TTFT_DIAGNOSE_RULE_UTIL_H_
#define TTFT_DIAGNOSE_RULE_UTIL_H_

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

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
