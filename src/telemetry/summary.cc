// Per-group summaries for `ttft stats` (ttft/summary.h): exact (span table),
// streaming (DDSketch per group) and from histogram buckets (PromQL semantics).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "ttft/summary.h"

namespace ttft {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QuantileSet ExactSet(std::vector<double>& v) {
  QuantileSet q;
  std::erase_if(v, [](double x) { return std::isnan(x); });
  q.count = static_cast<int64_t>(v.size());
  if (v.empty()) return q;
  q.available = true;
  double sum = 0;
  for (double x : v) sum += x;
  q.mean = sum / static_cast<double>(v.size());
  for (size_t i = 0; i < QuantileSet::kQs.size(); ++i)
    q.values[i] = Quantile(v, QuantileSet::kQs[i]);
  return q;
}

QuantileSet SketchSet(const DDSketch& s) {
  QuantileSet q;
  q.count = s.count();
  if (s.count() == 0) return q;
  q.available = true;
  q.from_sketch = true;
  q.sketch_alpha = s.alpha();
  q.mean = s.sum() / static_cast<double>(s.count());
  for (size_t i = 0; i < QuantileSet::kQs.size(); ++i)
    q.values[i] = s.Quantile(QuantileSet::kQs[i]);
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

void SetRate(GroupSummary& g, double first, double last) {
  if (g.count >= 2 && last > first) {
    g.window_s = last - first;
    g.rate_rps = static_cast<double>(g.count) / g.window_s;
  }
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
    if (!(arrival[i] >= o.from_s && arrival[i] < o.to_s) &&
        !(std::isnan(arrival[i]) && std::isinf(o.from_s) && std::isinf(o.to_s))) {
      continue;
    }
    std::string key;
    if (by_status) {
      key = std::string(ToString(t.status()[i]));
    } else if (label) {
      key = std::string(t.label(i, *label));
    }
    rows[key].push_back(static_cast<uint32_t>(i));
  }
  std::vector<GroupSummary> out;
  std::vector<double> buf;
  auto column = [&](std::span<const float> col, const std::vector<uint32_t>& idx) {
    buf.clear();
    for (uint32_t i : idx) buf.push_back(col[i]);
    return ExactSet(buf);
  };
  for (const auto& [key, idx] : rows) {
    GroupSummary g;
    if (o.by) g.key.emplace_back(*o.by, key);
    g.count = static_cast<int64_t>(idx.size());
    double first = std::numeric_limits<double>::infinity(), last = -first;
    for (uint32_t i : idx) {
      first = std::min(first, arrival[i]);
      last = std::max(last, arrival[i]);
    }
    SetRate(g, first, last);
    g.ttft_s = column(t.ttft_s(), idx);
    g.queue_s = column(t.queue_s(), idx);
    g.prefill_s = column(t.prefill_s(), idx);
    g.itl_s = column(t.itl_mean_s(), idx);
    if (g.itl_s.available) g.itl_s.note = "per-request mean inter-token latency";
    buf.clear();
    std::vector<int64_t> cached, prompt;
    for (uint32_t i : idx) {
      if (t.prompt_tokens()[i] >= 0) buf.push_back(t.prompt_tokens()[i]);
      cached.push_back(t.cached_tokens()[i]);
      prompt.push_back(t.prompt_tokens()[i]);
    }
    g.prompt_tokens = ExactSet(buf);
    g.prefix_cache_hit_rate = PrefixCacheHitRate(cached, prompt);
    if (!std::isnan(g.prefix_cache_hit_rate)) g.hit_rate_note = "cached_tokens / prompt_tokens";
    out.push_back(std::move(g));
  }
  return out;
}

struct StreamingSummarizer::Group {
  explicit Group(double alpha)
      : ttft(alpha), queue(alpha), prefill(alpha), itl(alpha), prompt(alpha) {}
  DDSketch ttft, queue, prefill, itl, prompt;
  int64_t count = 0;
  double hits = 0, queries = 0;
  double first = std::numeric_limits<double>::infinity();
  double last = -std::numeric_limits<double>::infinity();
};

StreamingSummarizer::StreamingSummarizer(SummaryOptions options, double alpha)
    : options_(std::move(options)), alpha_(alpha) {
  (void)CheckBy(options_, label_, by_status_);
}
StreamingSummarizer::~StreamingSummarizer() = default;

Result<std::unique_ptr<StreamingSummarizer>> StreamingSummarizer::Create(SummaryOptions options) {
  std::optional<SpanLabel> label;
  bool by_status = false;
  TTFT_RETURN_IF_ERROR(CheckBy(options, label, by_status));
  return std::make_unique<StreamingSummarizer>(std::move(options));
}

void StreamingSummarizer::Add(const SpanRecord& s) {
  if (!(s.arrival_s >= options_.from_s && s.arrival_s < options_.to_s) &&
      !(std::isnan(s.arrival_s) && std::isinf(options_.from_s) && std::isinf(options_.to_s))) {
    return;
  }
  std::string_view key;
  if (by_status_) {
    key = ToString(s.status);
  } else if (label_) {
    key = s.labels[static_cast<size_t>(*label_)];
  }
  auto it = groups_.find(key);
  if (it == groups_.end())
    it = groups_.emplace(std::string(key), std::make_unique<Group>(alpha_)).first;
  Group& g = *it->second;
  ++g.count;
  g.ttft.Add(s.ttft_s);  // NaN (missing) is rejected by the sketch
  g.queue.Add(s.queue_s);
  g.prefill.Add(s.prefill_s);
  g.itl.Add(s.itl_mean_s);
  if (s.prompt_tokens >= 0) g.prompt.Add(static_cast<double>(s.prompt_tokens));
  if (s.prompt_tokens >= 0 && s.cached_tokens >= 0) {
    g.hits += static_cast<double>(s.cached_tokens);
    g.queries += static_cast<double>(s.prompt_tokens);
  }
  if (!std::isnan(s.arrival_s)) {
    g.first = std::min(g.first, s.arrival_s);
    g.last = std::max(g.last, s.arrival_s);
  }
}

std::vector<GroupSummary> StreamingSummarizer::Finish() const {
  std::vector<GroupSummary> out;
  for (const auto& [key, gp] : groups_) {
    const Group& g = *gp;
    GroupSummary s;
    if (options_.by) s.key.emplace_back(*options_.by, key);
    s.count = g.count;
    SetRate(s, g.first, g.last);
    s.ttft_s = SketchSet(g.ttft);
    s.queue_s = SketchSet(g.queue);
    s.prefill_s = SketchSet(g.prefill);
    s.itl_s = SketchSet(g.itl);
    s.prompt_tokens = SketchSet(g.prompt);
    s.prefix_cache_hit_rate = PrefixCacheHitRateFromCounters(g.hits, g.queries);
    if (!std::isnan(s.prefix_cache_hit_rate)) s.hit_rate_note = "cached_tokens / prompt_tokens";
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
QuantileSet HistogramSet(const MetricFamily* f, const std::optional<std::string>& by,
                         const std::string& group) {
  QuantileSet q;
  if (f == nullptr) return q;
  std::map<double, double> by_le;
  double count = 0, sum = 0;
  bool any = false;
  for (const MetricSeries& s : f->series) {
    if (GroupValue(s.labels, by) != group) continue;
    any = true;
    for (size_t i = 0; i < s.histogram.upper_bounds.size(); ++i) {
      by_le[s.histogram.upper_bounds[i]] += s.histogram.cumulative_counts[i];
    }
    count += s.histogram.count;
    sum += s.histogram.sum;
  }
  if (!any || count <= 0) {
    q.count = 0;
    if (any) q.note = "no observations in the window";
    return q;
  }
  std::vector<Bucket> buckets;
  for (const auto& [le, c] : by_le) buckets.push_back({le, c});
  buckets.push_back({std::numeric_limits<double>::infinity(), count});
  q.available = true;
  q.from_buckets = true;
  q.count = static_cast<int64_t>(count);
  q.mean = sum / count;
  bool first_bucket = false, inf_bucket = false;
  for (size_t i = 0; i < QuantileSet::kQs.size(); ++i) {
    q.buckets[i] = HistogramQuantile(QuantileSet::kQs[i], buckets);
    q.values[i] = q.buckets[i].value;
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

double CounterSum(const MetricFamily* f, const std::optional<std::string>& by,
                  const std::string& group, bool& found) {
  double v = 0;
  found = false;
  if (f == nullptr) return kNaN;
  for (const MetricSeries& s : f->series) {
    if (GroupValue(s.labels, by) != group) continue;
    found = true;
    v += s.value;
  }
  return v;
}

}  // namespace

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
    g.ttft_s = HistogramSet(ttft, o.by, group);
    g.queue_s = HistogramSet(FindCanonical(w, CanonicalMetric::kQueue), o.by, group);
    g.prefill_s = HistogramSet(FindCanonical(w, CanonicalMetric::kPrefill), o.by, group);
    g.itl_s = HistogramSet(FindCanonical(w, CanonicalMetric::kItl), o.by, group);
    g.prompt_tokens =
        HistogramSet(FindCanonical(w, CanonicalMetric::kPromptTokensHist), o.by, group);
    g.count = g.ttft_s.count;
    bool hf = false, qf = false;
    const double hits =
        CounterSum(FindCanonical(w, CanonicalMetric::kPrefixCacheHits), o.by, group, hf);
    const double queries =
        CounterSum(FindCanonical(w, CanonicalMetric::kPrefixCacheQueries), o.by, group, qf);
    if (hf && qf) {
      g.prefix_cache_hit_rate = PrefixCacheHitRateFromCounters(hits, queries);
      g.hit_rate_note =
          "prefix_cache_hits / prefix_cache_queries (tokens; early V1 counted blocks)";
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace ttft
