// Per-group statistics (ttft/window_stats.h): exact (span table), streaming (DDSketch
// per group) and from histogram buckets (PromQL semantics). Every path fills the one
// WindowStats.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "dataset/internal.h"
#include "ttft/window_stats.h"

namespace ttft {
namespace {

constexpr const char* kItlNote = "per-request mean inter-token latency";
constexpr const char* kSpanHitRateNote = "cached_tokens / prompt_tokens";

TermQuantiles SketchTerms(const DDSketch& s) {
  TermQuantiles q;
  q.count = s.count();
  if (s.count() == 0) return q;
  q.source = TermQuantiles::Source::kSketch;
  q.sketch_alpha = s.alpha();
  q.mean = s.sum() / static_cast<double>(s.count());
  q.p50 = s.Quantile(0.5);
  q.p90 = s.Quantile(0.9);
  q.p99 = s.Quantile(0.99);
  q.p999 = s.Quantile(0.999);
  return q;
}

Status CheckBy(const SummaryOptions& o, std::optional<SpanLabel>& label, bool& by_status) {
  by_status = false;
  if (!o.by) return Status::Ok();
  if (*o.by == "status") {
    by_status = true;
    return Status::Ok();
  }
  label = ParseSpanLabel(*o.by);
  if (!label) {
    return Status::Invalid(fmt::format(
        "--by {}: spans carry replica, region, tenant, model, template, deploy and status", *o.by));
  }
  return Status::Ok();
}

bool InRange(double arrival, const SummaryOptions& o) {
  // Spans without an arrival time count only when no range was asked for.
  return (arrival >= o.from_s && arrival < o.to_s) ||
         (std::isnan(arrival) && std::isinf(o.from_s) && std::isinf(o.to_s));
}

}  // namespace

Result<std::vector<GroupSummary>> SummarizeSpans(const SpanTable& t, const SummaryOptions& o) {
  std::optional<SpanLabel> label;
  bool by_status = false;
  TTFT_RETURN_IF_ERROR(CheckBy(o, label, by_status));
  // Group rows by key.
  std::map<std::string, std::vector<uint32_t>, std::less<>> rows;
  const auto arrival = t.arrival_s();
  for (size_t i = 0; i < t.size(); ++i) {
    if (!InRange(arrival[i], o)) continue;
    std::string key;
    if (by_status) {
      key = std::string(ToString(t.status()[i]));
    } else if (label) {
      key = std::string(t.label(i, *label));
    }
    rows[key].push_back(static_cast<uint32_t>(i));
  }
  std::vector<GroupSummary> out;
  WindowStatsArena arena;
  for (const auto& [key, idx] : rows) {
    GroupSummary g;
    if (o.by) g.key.emplace_back(*o.by, key);
    double first = std::numeric_limits<double>::infinity(), last = -first;
    for (uint32_t i : idx) {
      first = std::min(first, arrival[i]);
      last = std::max(last, arrival[i]);
    }
    g.stats = ComputeWindowStats(t, idx, first, last, StatsDetail::kFull, arena);
    if (!(last > first)) g.stats.request_rate_rps = kMissing;
    if (g.stats.itl_s.available()) g.stats.itl_s.note = kItlNote;
    if (!std::isnan(g.stats.prefix_cache_hit_rate)) g.stats.hit_rate_note = kSpanHitRateNote;
    out.push_back(std::move(g));
  }
  return out;
}

struct StreamingStats::Group {
  explicit Group(double alpha)
      : ttft(alpha), queue(alpha), prefill(alpha), itl(alpha), prompt(alpha) {}
  DDSketch ttft, queue, prefill, itl, prompt;
  int64_t requests = 0, ok = 0, errors = 0;
  double hits = 0, queries = 0;
  double first = std::numeric_limits<double>::infinity();
  double last = -std::numeric_limits<double>::infinity();
};

StreamingStats::StreamingStats(SummaryOptions options, double alpha)
    : options_(std::move(options)), alpha_(alpha) {}
StreamingStats::~StreamingStats() = default;

Result<std::unique_ptr<StreamingStats>> StreamingStats::Create(SummaryOptions options,
                                                               double alpha) {
  std::unique_ptr<StreamingStats> s(new StreamingStats(std::move(options), alpha));
  TTFT_RETURN_IF_ERROR(CheckBy(s->options_, s->label_, s->by_status_));
  return s;
}

void StreamingStats::Add(const SpanRecord& s) {
  if (!InRange(s.arrival_s, options_)) return;
  std::string_view key;
  if (by_status_) {
    key = ToString(s.status);
  } else if (label_) {
    key = s.labels[static_cast<size_t>(*label_)];
  }
  auto it = groups_.find(key);
  if (it == groups_.end()) {
    it = groups_.emplace(std::string(key), std::make_unique<Group>(alpha_)).first;
  }
  Group& g = *it->second;
  ++g.requests;
  if (!std::isnan(s.arrival_s)) {
    g.first = std::min(g.first, s.arrival_s);
    g.last = std::max(g.last, s.arrival_s);
  }
  if (s.status != RequestStatus::kOk) {
    ++g.errors;
    return;
  }
  ++g.ok;
  g.ttft.Add(s.ttft_s);  // NaN (missing) is rejected by the sketch
  g.queue.Add(s.queue_s);
  g.prefill.Add(s.prefill_s);
  g.itl.Add(s.itl_mean_s);
  if (s.prompt_tokens >= 0) g.prompt.Add(static_cast<double>(s.prompt_tokens));
  if (s.prompt_tokens >= 0 && s.cached_tokens >= 0) {
    g.hits += static_cast<double>(s.cached_tokens);
    g.queries += static_cast<double>(s.prompt_tokens);
  }
}

std::vector<GroupSummary> StreamingStats::Finish() const {
  std::vector<GroupSummary> out;
  for (const auto& [key, gp] : groups_) {
    const Group& g = *gp;
    GroupSummary s;
    if (options_.by) s.key.emplace_back(*options_.by, key);
    WindowStats& w = s.stats;
    w.from_s = g.first;
    w.to_s = g.last;
    w.requests = g.requests;
    w.ok = g.ok;
    w.errors = g.errors;
    w.error_rate = g.requests > 0 ? static_cast<double>(g.errors) / g.requests : kMissing;
    w.error_rate_requests = g.requests;
    if (g.last > g.first) w.request_rate_rps = static_cast<double>(g.requests) / (g.last - g.first);
    w.ttft_s = SketchTerms(g.ttft);
    w.queue_s = SketchTerms(g.queue);
    w.prefill_s = SketchTerms(g.prefill);
    w.itl_s = SketchTerms(g.itl);
    if (w.itl_s.available()) w.itl_s.note = kItlNote;
    w.prompt_tokens = SketchTerms(g.prompt);
    w.prefix_cache_hit_rate = PrefixCacheHitRateFromCounters(g.hits, g.queries);
    if (!std::isnan(w.prefix_cache_hit_rate)) w.prefix_cache_query_tokens = g.queries;
    if (!std::isnan(w.prefix_cache_hit_rate)) w.hit_rate_note = kSpanHitRateNote;
    out.push_back(std::move(s));
  }
  return out;
}

// ---------------------------------------------------------------------------
// From metrics
// ---------------------------------------------------------------------------
namespace {

std::string GroupValue(const Labels& labels, const std::optional<std::string>& by) {
  if (!by) return {};
  for (const auto& [k, v] : labels) {
    if (k == *by) return v;
  }
  return {};
}

// sum by (le) over the series of one group: buckets merged by upper bound.
TermQuantiles HistogramTerms(const MetricFamily* f,
                             const std::function<bool(const Labels&)>& keep) {
  TermQuantiles q;
  if (f == nullptr) return q;
  std::map<double, double> by_le;
  double count = 0, sum = 0;
  bool any = false;
  for (const MetricSeries& s : f->series) {
    if (!keep(s.labels)) continue;
    any = true;
    for (size_t i = 0; i < s.histogram.upper_bounds.size(); ++i) {
      by_le[s.histogram.upper_bounds[i]] += s.histogram.cumulative_counts[i];
    }
    count += s.histogram.count;
    sum += s.histogram.sum;
  }
  if (!any || count <= 0) {
    if (any) q.note = "no observations in the window";
    return q;
  }
  // Each series' count is finite (the parser's histogram invariant), their sum need not
  // fit a request count (found by exposition_fuzz: 7.4e26).
  if (!(count < kCountLimit)) {
    q.note = fmt::format(
        "_count sums to {:g} over the series: not a request count (beyond 2^63), so no "
        "quantiles are read from these buckets",
        count);
    return q;
  }
  std::vector<Bucket> buckets;
  buckets.reserve(by_le.size() + 1);
  for (const auto& [le, c] : by_le) buckets.push_back({le, c});
  buckets.push_back({std::numeric_limits<double>::infinity(), count});
  q.source = TermQuantiles::Source::kBuckets;
  q.count = static_cast<int64_t>(count);
  q.mean = sum / count;
  bool first_bucket = false, inf_bucket = false;
  double* values[] = {&q.p50, &q.p90, &q.p99, &q.p999};
  for (size_t i = 0; i < TermQuantiles::kQs.size(); ++i) {
    q.buckets[i] = HistogramQuantile(TermQuantiles::kQs[i], buckets);
    *values[i] = q.buckets[i].value;
    first_bucket = first_bucket || q.buckets[i].in_first_bucket;
    inf_bucket = inf_bucket || q.buckets[i].in_inf_bucket;
  }
  if (first_bucket && !buckets.empty()) {
    q.note = fmt::format(
        "quantiles in the first bucket (0, {}] are not resolved: a change below {} s shows only "
        "in the mean (_sum/_count)",
        buckets.front().upper_bound, buckets.front().upper_bound);
  }
  if (inf_bucket) {
    if (!q.note.empty()) q.note += "; ";
    q.note +=
        "quantiles above the highest finite bucket are reported as that bound (a lower limit)";
  }
  return q;
}

double CounterSum(const MetricFamily* f, const std::function<bool(const Labels&)>& keep,
                  bool& found) {
  double v = 0;
  found = false;
  if (f == nullptr) return kMissing;
  for (const MetricSeries& s : f->series) {
    if (!keep(s.labels)) continue;
    found = true;
    v += s.value;
  }
  return v;
}

// vLLM's finished_reason of an error: "abort" (or "error", newer versions).
bool IsErrorReason(const Labels& labels) {
  for (const auto& [n, v] : labels) {
    if (n == "finished_reason") return v == "abort" || v == "error";
  }
  return false;
}

}  // namespace

namespace dataset_internal {

WindowStats MetricSeriesStats(const MetricSnapshot& w,
                              const std::function<bool(const Labels&)>& keep) {
  WindowStats s;
  s.from_metrics = true;
  s.ttft_s = HistogramTerms(FindCanonical(w, CanonicalMetric::kTtft), keep);
  s.queue_s = HistogramTerms(FindCanonical(w, CanonicalMetric::kQueue), keep);
  s.prefill_s = HistogramTerms(FindCanonical(w, CanonicalMetric::kPrefill), keep);
  s.itl_s = HistogramTerms(FindCanonical(w, CanonicalMetric::kItl), keep);
  s.prompt_tokens = HistogramTerms(FindCanonical(w, CanonicalMetric::kPromptTokensHist), keep);
  s.requests = s.ok = s.ttft_s.count;
  bool hf = false, qf = false;
  const double hits = CounterSum(FindCanonical(w, CanonicalMetric::kPrefixCacheHits), keep, hf);
  const double queries =
      CounterSum(FindCanonical(w, CanonicalMetric::kPrefixCacheQueries), keep, qf);
  if (hf && qf) {
    s.prefix_cache_hit_rate = PrefixCacheHitRateFromCounters(hits, queries);
    s.prefix_cache_query_tokens = queries;
    s.hit_rate_note = "prefix_cache_hits / prefix_cache_queries (tokens; early V1 counted blocks)";
  }
  bool pf = false;
  const double preempt = CounterSum(FindCanonical(w, CanonicalMetric::kPreemptions), keep, pf);
  if (pf) {
    s.preemptions = SaturatingCount(preempt);
    s.preemptions_per_request =
        s.requests > 0 ? preempt / static_cast<double>(s.requests) : kMissing;
  }
  // The error rate over finished requests, by finished_reason.
  bool ff = false, ef = false;
  const MetricFamily* finished = FindCanonical(w, CanonicalMetric::kRequestsFinished);
  const double all = CounterSum(finished, keep, ff);
  const double errors = CounterSum(
      finished, [&](const Labels& l) { return keep(l) && IsErrorReason(l); }, ef);
  if (ff) {
    s.error_rate_requests = SaturatingCount(all);
    s.errors = SaturatingCount(errors);
    s.error_rate = all > 0 ? errors / all : kMissing;
  }
  return s;
}

WindowStats MetricGroupStats(const MetricSnapshot& w, const std::optional<std::string>& by,
                             const std::string& group) {
  return MetricSeriesStats(w, [&](const Labels& l) { return GroupValue(l, by) == group; });
}

}  // namespace dataset_internal

Result<std::vector<GroupSummary>> SummarizeMetrics(const MetricSnapshot& w,
                                                   const SummaryOptions& o) {
  const MetricFamily* ttft = FindCanonical(w, CanonicalMetric::kTtft);
  // Groups: the values of `by` on the TTFT series (or on any series without TTFT).
  std::set<std::string> groups;
  for (const MetricFamily& f : w.families) {
    if (ttft != nullptr && &f != ttft) continue;
    for (const MetricSeries& s : f.series) groups.insert(GroupValue(s.labels, o.by));
  }
  if (groups.empty()) groups.insert("");
  std::vector<GroupSummary> out;
  for (const std::string& group : groups) {
    GroupSummary g;
    if (o.by) g.key.emplace_back(*o.by, group);
    g.stats = dataset_internal::MetricGroupStats(w, o.by, group);
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace ttft
