// Window statistics from spans and from metric snapshots (ttft/window_stats.h).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dataset/gather.h"
#include "dataset/internal.h"
#include "ttft/format.h"
#include "ttft/stats.h"
#include "ttft/window_stats.h"

namespace ttft {

void AddSpanToTable(const Span& s, SpanTable& table) {
  SpanRecord r;
  r.request_id = s.request_id;
  r.arrival_s = s.arrival_s;
  r.queue_s = s.queue_s;
  r.prefill_s = s.prefill_s;
  r.front_end_s = s.front_end_s;
  r.ttft_s = s.ttft_s;
  r.decode_s = s.decode_s;
  r.e2e_s = s.e2e_s;
  r.itl_mean_s = s.itl_mean_s;
  r.itl_max_s = s.itl_max_s;
  r.prompt_tokens = s.prompt_tokens;
  r.cached_tokens = s.cached_tokens;
  r.output_tokens = s.output_tokens;
  r.preemptions = s.preemptions;
  r.status = s.status;
  r.labels[static_cast<size_t>(SpanLabel::kReplica)] = s.replica;
  r.labels[static_cast<size_t>(SpanLabel::kRegion)] = s.region;
  r.labels[static_cast<size_t>(SpanLabel::kTenant)] = s.tenant;
  r.labels[static_cast<size_t>(SpanLabel::kModel)] = s.model;
  r.labels[static_cast<size_t>(SpanLabel::kTemplate)] = s.template_version;
  r.labels[static_cast<size_t>(SpanLabel::kDeploy)] = s.deploy;
  table.Add(r);
}

namespace {

// Exact type-7 quantiles of `v` at `qs` into `out` (ttft::ColumnQuantile: on the
// column's own type, bit-identical to ttft::Quantile on double copies); NaN for an
// empty `v`. May reorder `v`.
template <typename T>
void SelectQuantiles(std::span<T> v, std::span<const double> qs, double* out) {
  for (size_t i = 0; i < qs.size(); ++i) out[i] = ColumnQuantile(v, qs[i]);
}

constexpr std::array<double, 3> kTermQs = {0.5, 0.9, 0.99};

// The quantiles of one term: p50/p90/p99, and with `full` p99.9 and the mean too.
template <typename T>
TermQuantiles TermsOf(const stats_internal::Gather<T>& v, bool full) {
  TermQuantiles t;
  t.count = static_cast<int64_t>(v.size());
  if (full) {
    std::array<double, 4> q;
    SelectQuantiles(v.values(), TermQuantiles::kQs, q.data());
    t.p50 = q[0];
    t.p90 = q[1];
    t.p99 = q[2];
    t.p999 = q[3];
    double sum = 0;
    for (T x : v.values()) sum += static_cast<double>(x);
    if (t.count > 0) t.mean = sum / static_cast<double>(t.count);
    return t;
  }
  std::array<double, 3> q;
  SelectQuantiles(v.values(), kTermQs, q.data());
  t.p50 = q[0];
  t.p90 = q[1];
  t.p99 = q[2];
  return t;
}

template <typename T>
double QuantileOf(const stats_internal::Gather<T>& v, double q) {
  double out = kMissing;
  SelectQuantiles(v.values(), std::span<const double>(&q, 1), &out);
  return out;
}

double Mean(double sum, int64_t n) { return n > 0 ? sum / static_cast<double>(n) : kMissing; }

}  // namespace

WindowStatsArena::WindowStatsArena() : buffers_(std::make_unique<Buffers>()) {}
WindowStatsArena::~WindowStatsArena() = default;

namespace stats_internal {
namespace {

// Adds row `r` of `t` to `a` (the body of ComputeWindowStats' pass over its rows).
inline void Accumulate(const SpanTable& t, uint32_t r, StatsScratch& a) {
  ++a.requests;
  const int16_t pre = t.preemptions()[r];
  if (pre >= 0) {
    a.preempt_sum += pre;
    ++a.preempt_n;
  }
  const RequestStatus st = t.status()[r];
  if (st != RequestStatus::kOk) {
    ++a.errors;
    if (st == RequestStatus::kRejectedTooLong) ++a.rejected_too_long;
    return;
  }
  ++a.ok;
  a.set_seen[t.label_set()[r]] = 1;
  const float ttft = t.ttft_s()[r], queue = t.queue_s()[r], prefill = t.prefill_s()[r],
              fe = t.front_end_s()[r], itl = t.itl_mean_s()[r], itl_max = t.itl_max_s()[r],
              e2e = t.e2e_s()[r];
  if (!std::isnan(ttft)) {
    a.ttft.push_back(ttft);
    if (ttft > a.above_threshold) ++a.above;
  }
  if (!a.lean) {
    if (!std::isnan(queue)) a.queue.push_back(queue);
    if (!std::isnan(prefill)) a.prefill.push_back(prefill);
    if (!std::isnan(fe)) a.fe.push_back(fe);
    if (!std::isnan(itl)) a.itl.push_back(itl);
  }
  if (!std::isnan(itl_max)) a.itl_max.push_back(itl_max);
  if (!std::isnan(e2e)) a.e2e_sum += e2e;
  const int32_t prompt = t.prompt_tokens()[r], cached = t.cached_tokens()[r],
                output = t.output_tokens()[r];
  if (prompt >= 0) {
    a.prompt.push_back(prompt);
    a.prompt_sum += prompt;
    if (cached >= 0) {
      a.cached_sum += cached;
      a.hit_prompt_sum += prompt;
      ++a.cached_n;
      const int64_t uncached = prompt - cached;
      if (uncached >= 256 && !std::isnan(prefill)) {
        a.per_token.push_back(prefill * 1000.0 / static_cast<double>(uncached));
      }
    }
  }
  if (output >= 0) {
    if (!a.lean) a.output.push_back(output);
    a.output_sum += output;
    ++a.output_n;
  }
}

WindowStats Finish(const SpanTable& t, double from_s, double to_s, StatsScratch& a) {
  WindowStats w;
  w.from_s = from_s;
  w.to_s = to_s;
  w.requests = a.requests;
  w.ok = a.ok;
  w.errors = a.errors;
  w.rejected_too_long = a.rejected_too_long;
  const double len = to_s - from_s;
  w.request_rate_rps = len > 0 ? static_cast<double>(w.requests) / len : kMissing;
  w.error_rate =
      w.requests > 0 ? static_cast<double>(w.errors) / static_cast<double>(w.requests) : kMissing;
  w.error_rate_requests = w.requests;
  if (a.lean) {
    w.ttft_s.p99 = QuantileOf(a.ttft, 0.99);
    w.ttft_s.count = static_cast<int64_t>(a.ttft.size());
  } else {
    w.ttft_s = TermsOf(a.ttft, a.full);
    w.queue_s = TermsOf(a.queue, a.full);
    w.prefill_s = TermsOf(a.prefill, a.full);
    w.front_end_s = TermsOf(a.fe, a.full);
    if (a.full) {
      w.itl_s = TermsOf(a.itl, true);
    } else {
      w.itl_s.p50 = QuantileOf(a.itl, 0.5);
      w.itl_s.count = static_cast<int64_t>(a.itl.size());
    }
  }
  w.itl_max_p99_s = QuantileOf(a.itl_max, 0.99);
  w.prefix_cache_hit_rate = a.hit_prompt_sum > 0 ? a.cached_sum / a.hit_prompt_sum : kMissing;
  if (!std::isnan(w.prefix_cache_hit_rate)) w.prefix_cache_query_tokens = a.hit_prompt_sum;
  w.cached_tokens_mean = Mean(a.cached_sum, a.cached_n);
  w.uncached_tokens_mean =
      a.cached_n > 0 ? (a.hit_prompt_sum - a.cached_sum) / a.cached_n : kMissing;
  if (a.full) {
    w.prompt_tokens = TermsOf(a.prompt, true);
  } else if (a.lean) {
    w.prompt_tokens.p99 = QuantileOf(a.prompt, 0.99);
  } else if (!a.prompt.empty()) {
    std::array<double, 2> q;
    SelectQuantiles(a.prompt.values(), std::array<double, 2>{0.5, 0.99}, q.data());
    w.prompt_tokens.p50 = q[0];
    w.prompt_tokens.p99 = q[1];
  }
  w.prompt_tokens.count = static_cast<int64_t>(a.prompt.size());
  // The mean from the running sum, as before (the same value TermsOf gives).
  w.prompt_tokens.mean = Mean(a.prompt_sum, static_cast<int64_t>(a.prompt.size()));
  w.output_tokens_mean = Mean(a.output_sum, a.output_n);
  if (!a.lean) w.output_tokens_p99 = QuantileOf(a.output, 0.99);
  w.preemptions = a.preempt_sum;
  w.preemptions_per_request = Mean(static_cast<double>(a.preempt_sum), a.preempt_n);
  w.prefill_s_per_1k_uncached = QuantileOf(a.per_token, 0.5);
  w.concurrency = len > 0 && w.ok > 0 ? a.e2e_sum / len : kMissing;
  // Distinct replicas among the label sets seen.
  std::vector<std::string_view> replicas;
  for (size_t s = 0; s < a.set_seen.size(); ++s) {
    if (a.set_seen[s])
      replicas.push_back(t.label_of_set(static_cast<uint32_t>(s), SpanLabel::kReplica));
  }
  std::sort(replicas.begin(), replicas.end());
  w.replicas = std::unique(replicas.begin(), replicas.end()) - replicas.begin();
  return w;
}

}  // namespace

void StatsScratch::Reset(size_t label_sets, double threshold, bool lean_stats) {
  lean = lean_stats;
  full = false;
  set_seen.assign(label_sets, 0);
  requests = ok = errors = rejected_too_long = 0;
  cached_n = output_n = preempt_sum = preempt_n = 0;
  prompt_sum = cached_sum = hit_prompt_sum = output_sum = e2e_sum = 0;
  above_threshold = threshold;
  above = 0;
}

}  // namespace stats_internal

WindowStats ComputeWindowStats(const SpanTable& t, std::span<const uint32_t> rows, double from_s,
                               double to_s, StatsDetail detail, WindowStatsArena& arena_) {
  stats_internal::GatherArena& arena = arena_.buffers();
  stats_internal::StatsScratch sc;
  sc.Reset(t.num_label_sets(), kMissing, /*lean_stats=*/false);
  sc.full = detail == StatsDetail::kFull;
  const size_t n = rows.size();  // each row adds at most one value to each gather
  sc.ttft.Bind(arena.ttft.Room(n));
  sc.queue.Bind(arena.queue.Room(n));
  sc.prefill.Bind(arena.prefill.Room(n));
  sc.fe.Bind(arena.fe.Room(n));
  sc.itl.Bind(arena.itl.Room(n));
  sc.itl_max.Bind(arena.itl_max.Room(n));
  sc.prompt.Bind(arena.prompt.Room(n));
  sc.output.Bind(arena.output.Room(n));
  sc.per_token.Bind(arena.per_token.Room(n));
  for (uint32_t r : rows) stats_internal::Accumulate(t, r, sc);
  return stats_internal::Finish(t, from_s, to_s, sc);
}

WindowStats ComputeWindowStats(const SpanTable& t, std::span<const uint32_t> rows, double from_s,
                               double to_s, StatsDetail detail) {
  WindowStatsArena arena;
  return ComputeWindowStats(t, rows, from_s, to_s, detail, arena);
}

std::vector<GroupWindowStats> ComputeGroupWindowStats(const SpanTable& t,
                                                      std::span<const uint32_t> rows,
                                                      std::span<const int> group_of_set,
                                                      size_t groups, double from_s, double to_s,
                                                      double threshold, WindowStatsArena& arena_) {
  stats_internal::GatherArena& arena = arena_.buffers();
  const auto sets = t.label_set();
  // Group g gathers into [first[g], first[g] + its rows) of each buffer (a counting
  // sort: one buffer per quantity for all groups, reused across splits).
  std::vector<size_t> first(groups + 1, 0);
  for (uint32_t r : rows) ++first[static_cast<size_t>(group_of_set[sets[r]]) + 1];
  for (size_t g = 0; g < groups; ++g) first[g + 1] += first[g];
  const size_t n = rows.size();
  float* ttft = arena.ttft.Room(n);
  float* itl_max = arena.itl_max.Room(n);
  int32_t* prompt = arena.prompt.Room(n);
  double* per_token = arena.per_token.Room(n);
  std::vector<stats_internal::StatsScratch> acc(groups);
  for (size_t g = 0; g < groups; ++g) {
    acc[g].Reset(t.num_label_sets(), threshold, /*lean_stats=*/true);
    acc[g].ttft.Bind(ttft + first[g]);
    acc[g].itl_max.Bind(itl_max + first[g]);
    acc[g].prompt.Bind(prompt + first[g]);
    acc[g].per_token.Bind(per_token + first[g]);
  }
  for (uint32_t r : rows) {
    stats_internal::Accumulate(t, r, acc[static_cast<size_t>(group_of_set[sets[r]])]);
  }
  std::vector<GroupWindowStats> out(groups);
  for (size_t g = 0; g < groups; ++g) {
    out[g].above = acc[g].above;
    out[g].stats = stats_internal::Finish(t, from_s, to_s, acc[g]);
  }
  return out;
}

namespace {

// The value of the first of `names` that `labels` carries, or nullptr.
const std::string* FirstLabel(const Labels& labels, std::span<const std::string> names) {
  for (const std::string& n : names) {
    for (const auto& [k, v] : labels) {
      if (k == n) return &v;
    }
  }
  return nullptr;
}

// Observations of a histogram series above `threshold`, linear inside the bucket
// that holds it (the lower bound of the first bucket is 0, as in histogram_quantile);
// a threshold above the highest finite bound counts the +Inf bucket only.
double CountAbove(const HistogramValue& h, double threshold) {
  if (!std::isfinite(threshold)) return 0;
  double lower = 0, below_lower = 0;
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    const double upper = h.upper_bounds[i], at_upper = h.cumulative_counts[i];
    if (threshold <= upper) {
      const double frac =
          upper > lower ? std::clamp((threshold - lower) / (upper - lower), 0.0, 1.0) : 1.0;
      return std::max(0.0, h.count - (below_lower + frac * (at_upper - below_lower)));
    }
    lower = upper;
    below_lower = at_upper;
  }
  return std::max(0.0, h.count - below_lower);
}

const std::array<std::string, 3> kReplicaLabels = {"replica", "pod", "instance"};

}  // namespace

Result<std::vector<MetricGroupWindowStats>> GroupWindowStatsFromMetrics(
    std::span<const MetricSnapshot> snapshots, double from_s, double to_s,
    std::span<const std::string> labels, std::span<const std::string> parent_labels,
    double threshold) {
  if (snapshots.size() < 2 || labels.empty()) {
    return Status::Invalid(fmt::format(
        "metrics window [{:.0f}, {:.0f}) s: {} snapshot(s) and {} label(s); need at least 2 "
        "snapshots and a label to split by",
        from_s, to_s, snapshots.size(), labels.size()));
  }
  ReadReport report;
  TTFT_ASSIGN_OR_RETURN(MetricSnapshot d, WindowDelta(snapshots, report));
  // Every series gets the label labels[0] from its first alternative, so one grouping
  // (MetricGroupStats by labels[0]) covers them all.
  bool any = false;
  const MetricFamily* ttft = FindCanonical(d, CanonicalMetric::kTtft);
  for (MetricFamily& f : d.families) {
    for (MetricSeries& s : f.series) {
      const std::string* v = FirstLabel(s.labels, labels);
      if (v != nullptr && &f == ttft) any = true;
      if (v == nullptr || std::any_of(s.labels.begin(), s.labels.end(),
                                      [&](const auto& kv) { return kv.first == labels[0]; })) {
        continue;
      }
      s.labels.emplace_back(labels[0], *v);
    }
  }
  std::vector<MetricGroupWindowStats> out;
  if (!any) return out;
  std::map<std::string, MetricGroupWindowStats> groups;
  for (const MetricSeries& s : ttft->series) {
    const std::string* v = FirstLabel(s.labels, labels);
    const std::string value = v != nullptr ? *v : std::string();
    auto [it, inserted] = groups.try_emplace(value);
    MetricGroupWindowStats& g = it->second;
    if (inserted) {
      g.value = value;
      if (const std::string* p = FirstLabel(s.labels, parent_labels)) g.parent = *p;
    }
    g.above += CountAbove(s.histogram, threshold);
  }
  const double span_s = snapshots.back().timestamp_s - snapshots.front().timestamp_s;
  const std::optional<std::string> by = labels[0];
  for (auto& [value, g] : groups) {
    WindowStats& w = g.stats;
    w = dataset_internal::MetricGroupStats(d, by, value);
    w.from_s = from_s;
    w.to_s = to_s;
    w.request_rate_rps = span_s > 0 ? static_cast<double>(w.ttft_s.count) / span_s : kMissing;
    if (std::isfinite(w.prompt_tokens.mean) && std::isfinite(w.prefix_cache_hit_rate)) {
      w.cached_tokens_mean = w.prompt_tokens.mean * w.prefix_cache_hit_rate;
      w.uncached_tokens_mean = w.prompt_tokens.mean - w.cached_tokens_mean;
    }
    std::vector<std::string> names;
    for (const MetricSeries& s : ttft->series) {
      const std::string* v = FirstLabel(s.labels, labels);
      if ((v != nullptr ? *v : std::string()) != value) continue;
      if (const std::string* r = FirstLabel(s.labels, kReplicaLabels)) names.push_back(*r);
    }
    std::sort(names.begin(), names.end());
    w.replicas = std::unique(names.begin(), names.end()) - names.begin();
    out.push_back(std::move(g));
  }
  return out;
}

bool MatchesSelector(const Labels& labels, LabelSelector selector) {
  for (const auto& [name, value] : selector) {
    bool found = false;
    for (const auto& [n, v] : labels) {
      if (n == name) {
        found = v == value;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

bool IsQuantileBound(const TermQuantiles& t, size_t i) {
  return t.source == TermQuantiles::Source::kBuckets &&
         (t.buckets[i].in_first_bucket || t.buckets[i].in_inf_bucket);
}

std::string QuantileText(const TermQuantiles& t, size_t i) {
  if (IsQuantileBound(t, i)) {
    const BucketQuantile& b = t.buckets[i];
    return b.in_first_bucket ? "<=" + numfmt::Secs(b.upper_bound) : ">=" + numfmt::Secs(b.value);
  }
  return numfmt::Secs(t.at(i));
}

namespace {

// The interval a quantile lies in: its value, widened where the buckets do not resolve it.
std::pair<double, double> QuantileInterval(const TermQuantiles& t, size_t i) {
  if (IsQuantileBound(t, i)) {
    const BucketQuantile& b = t.buckets[i];
    return b.in_first_bucket ? std::pair{0.0, b.upper_bound}
                             : std::pair{b.value, std::numeric_limits<double>::infinity()};
  }
  return {t.at(i), t.at(i)};
}

}  // namespace

RatioBounds QuantileRatio(const TermQuantiles& before, const TermQuantiles& after, size_t i) {
  if (!std::isfinite(before.at(i)) || !std::isfinite(after.at(i))) return {};
  const auto [b_lo, b_hi] = QuantileInterval(before, i);
  const auto [a_lo, a_hi] = QuantileInterval(after, i);
  if (b_lo == b_hi && a_lo == a_hi) return {numfmt::Ratio(b_lo, a_lo), numfmt::Ratio(b_lo, a_lo)};
  RatioBounds r;
  r.lo = b_hi > 0 ? a_lo / b_hi : kMissing;  // b_hi may be inf: lo 0
  r.hi = b_lo > 0 ? a_hi / b_lo : INFINITY;
  return r;
}

std::string QuantileRatioText(const TermQuantiles& before, const TermQuantiles& after, size_t i) {
  const RatioBounds r = QuantileRatio(before, after, i);
  if (std::isnan(r.lo) || std::isnan(r.hi)) return "n/a";
  if (r.lo == r.hi) return numfmt::X(r.lo);
  if (r.lo > 0 && std::isfinite(r.lo)) return "at least " + numfmt::X(r.lo);
  if (std::isfinite(r.hi)) return "at most " + numfmt::X(r.hi);
  return "not resolved by the buckets";
}

double ReplicasShown(const WindowStats& w) {
  if (w.from_metrics && w.replicas == 0 && w.requests > 0) return kMissing;
  return static_cast<double>(w.replicas);
}

Result<WindowStats> WindowStatsFromMetrics(std::span<const MetricSnapshot> snapshots, double from_s,
                                           double to_s, LabelSelector selector) {
  if (snapshots.size() < 2) {
    return Status::Invalid(fmt::format(
        "metrics window [{:.0f}, {:.0f}) s: {} snapshot(s); need at least 2 to take a delta",
        from_s, to_s, snapshots.size()));
  }
  ReadReport report;
  TTFT_ASSIGN_OR_RETURN(MetricSnapshot d, WindowDelta(snapshots, report));
  auto keep = [selector](const Labels& l) { return MatchesSelector(l, selector); };
  WindowStats w = dataset_internal::MetricSeriesStats(d, keep);
  w.from_s = from_s;
  w.to_s = to_s;
  const double span_s = snapshots.back().timestamp_s - snapshots.front().timestamp_s;
  w.request_rate_rps = span_s > 0 ? static_cast<double>(w.ttft_s.count) / span_s : kMissing;
  if (std::isfinite(w.prompt_tokens.mean) && std::isfinite(w.prefix_cache_hit_rate)) {
    w.cached_tokens_mean = w.prompt_tokens.mean * w.prefix_cache_hit_rate;
    w.uncached_tokens_mean = w.prompt_tokens.mean - w.cached_tokens_mean;
  }
  // KV usage: the mean over replicas of the gauge, averaged over the scrapes.
  double kv_sum = 0;
  int kv_n = 0;
  for (const MetricSnapshot& s : snapshots) {
    const MetricFamily* f = FindCanonical(s, CanonicalMetric::kKvCacheUsage);
    if (f == nullptr) continue;
    for (const MetricSeries& se : f->series) {
      if (!keep(se.labels)) continue;
      kv_sum += se.value;
      ++kv_n;
    }
  }
  if (kv_n > 0) w.kv_usage = kv_sum / kv_n;
  // Replicas: distinct values of each TTFT series' `replica` label, or of its
  // `instance` label when it has no `replica` (one name per series: a series carrying
  // both was counted twice).
  if (const MetricFamily* f = FindCanonical(d, CanonicalMetric::kTtft)) {
    std::vector<std::string> names;
    for (const MetricSeries& s : f->series) {
      if (!keep(s.labels)) continue;
      const std::string* replica = nullptr;
      const std::string* instance = nullptr;
      for (const auto& [k, v] : s.labels) {
        if (k == "replica") replica = &v;
        if (k == "instance") instance = &v;
      }
      if (replica != nullptr) {
        names.push_back(*replica);
      } else if (instance != nullptr) {
        names.push_back(*instance);
      }
    }
    std::sort(names.begin(), names.end());
    w.replicas = std::unique(names.begin(), names.end()) - names.begin();
  }
  return w;
}

}  // namespace ttft
