// DDSketch (ttft/stats.h). Masson, Rim, Lee, PVLDB 12(12) 2019, with the logarithmic
// mapping of DataDog/sketches-go (ddsketch/mapping/logarithmic_mapping.go) and a dense
// store that collapses its lowest buckets when it would exceed max_buckets.
#include <algorithm>
#include <cmath>

#include "ttft/stats.h"

namespace ttft {
namespace {
// Spare buckets added on each side when the store grows, so that a stream of slowly
// rising values does not reallocate on every new bucket.
constexpr int kGrowthMargin = 64;
}  // namespace

DDSketch::DDSketch(double alpha, double min_value, int max_buckets)
    : alpha_(alpha),
      gamma_((1 + alpha) / (1 - alpha)),
      inv_log_gamma_(1.0 / std::log((1 + alpha) / (1 - alpha))),
      min_value_(min_value),
      max_buckets_(std::max(max_buckets, 16)) {}

void DDSketch::AddAll(std::span<const double> values) {
  for (double v : values) Add(v);
}

void DDSketch::Grow(int index, uint64_t n) {
  if (counts_.empty()) {
    offset_ = index - std::min(kGrowthMargin, max_buckets_ / 4);
    counts_.assign(static_cast<size_t>(std::min(2 * kGrowthMargin, max_buckets_ / 2)), 0);
    counts_[static_cast<size_t>(index - offset_)] = n;
    return;
  }
  const int cur_hi = offset_ + static_cast<int>(counts_.size()) - 1;
  int lo = offset_;
  int hi = cur_hi;
  if (index < lo) lo = index - kGrowthMargin;
  if (index > hi) hi = index + kGrowthMargin;
  if (hi - lo + 1 > max_buckets_) {
    // Trim the margins first, then collapse the lowest buckets (paper, section 2.2).
    lo = std::min(offset_, index);
    hi = std::max(cur_hi, index);
    if (hi - lo + 1 > max_buckets_) {
      lo = hi - max_buckets_ + 1;
      collapsed_ = true;
    } else {
      hi = std::min(hi + kGrowthMargin, lo + max_buckets_ - 1);
    }
  }
  std::vector<uint64_t> grown(static_cast<size_t>(hi - lo + 1), 0);
  for (size_t i = 0; i < counts_.size(); ++i) {
    const int idx = std::max(offset_ + static_cast<int>(i), lo);
    grown[static_cast<size_t>(idx - lo)] += counts_[i];
  }
  grown[static_cast<size_t>(std::max(index, lo) - lo)] += n;
  counts_.swap(grown);
  offset_ = lo;
}

Status DDSketch::Merge(const DDSketch& other) {
  if (other.alpha_ != alpha_ || other.min_value_ != min_value_) {
    return Status::Invalid("DDSketch::Merge: sketches have different alpha or min_value");
  }
  if (other.count_ == 0 && other.rejected_ == 0) return Status::Ok();
  if (!other.counts_.empty()) {
    const int other_hi = other.offset_ + static_cast<int>(other.counts_.size()) - 1;
    // Make room for other's whole range at once, then add densely.
    if (counts_.empty() || other.offset_ < offset_ ||
        other_hi > offset_ + static_cast<int>(counts_.size()) - 1) {
      if (counts_.empty()) {
        offset_ = other.offset_;
        counts_.assign(other.counts_.size(), 0);
      } else {
        Grow(other.offset_, 0);
        Grow(other_hi, 0);
      }
    }
    const int lo = offset_;
    const size_t size = counts_.size();
    for (size_t i = 0; i < other.counts_.size(); ++i) {
      const int64_t pos = std::max<int64_t>(other.offset_ + static_cast<int64_t>(i) - lo, 0);
      if (static_cast<size_t>(pos) < size) counts_[static_cast<size_t>(pos)] += other.counts_[i];
    }
    collapsed_ = collapsed_ || other.collapsed_;
  }
  zero_count_ += other.zero_count_;
  count_ += other.count_;
  rejected_ += other.rejected_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  return Status::Ok();
}

double DDSketch::Quantile(double q) const {
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  if (q == 0) return min_;
  if (q == 1) return max_;
  const double rank = q * static_cast<double>(count_ - 1);
  double cumulative = static_cast<double>(zero_count_);
  if (cumulative > rank) return 0.0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    cumulative += static_cast<double>(counts_[i]);
    if (cumulative > rank) {
      const int index = offset_ + static_cast<int>(i);
      const double value = 2 * std::pow(gamma_, index) / (gamma_ + 1);
      return std::clamp(value, min_, max_);
    }
  }
  return max_;
}

}  // namespace ttft
