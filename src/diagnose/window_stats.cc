// Window statistics from spans and from metric snapshots (ttft/diagnose.h).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "ttft/diagnose.h"

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

constexpr std::array<double, 3> kTermQs = {0.5, 0.9, 0.99};

TermQuantiles TermsOf(std::vector<double>& v) {
  TermQuantiles t;
  if (v.empty()) return t;
  const std::vector<double> q = Quantiles(v, kTermQs);
  t.p50 = q[0];
  t.p90 = q[1];
  t.p99 = q[2];
  return t;
}

double Mean(double sum, int64_t n) { return n > 0 ? sum / static_cast<double>(n) : kMissing; }

}  // namespace

WindowStats ComputeWindowStats(const SpanTable& t, std::span<const uint32_t> rows, double from_s,
                               double to_s) {
  WindowStats w;
  w.from_s = from_s;
  w.to_s = to_s;
  const auto ttft = t.ttft_s();
  const auto queue = t.queue_s();
  const auto prefill = t.prefill_s();
  const auto fe = t.front_end_s();
  const auto itl = t.itl_mean_s();
  const auto itl_max = t.itl_max_s();
  const auto e2e = t.e2e_s();
  const auto prompt = t.prompt_tokens();
  const auto cached = t.cached_tokens();
  const auto output = t.output_tokens();
  const auto preempt = t.preemptions();
  const auto status = t.status();
  const auto sets = t.label_set();

  std::vector<double> v_ttft, v_queue, v_prefill, v_fe, v_itl, v_itl_max, v_prompt, v_output,
      v_per_token;
  for (auto* v : {&v_ttft, &v_queue, &v_prefill, &v_fe, &v_prompt}) v->reserve(rows.size());
  std::vector<char> set_seen(t.num_label_sets(), 0);
  double prompt_sum = 0, cached_sum = 0, hit_prompt_sum = 0, output_sum = 0, e2e_sum = 0;
  int64_t cached_n = 0, output_n = 0, preempt_sum = 0, preempt_n = 0;
  for (uint32_t r : rows) {
    ++w.requests;
    if (preempt[r] >= 0) {
      preempt_sum += preempt[r];
      ++preempt_n;
    }
    if (status[r] != RequestStatus::kOk) {
      ++w.errors;
      if (status[r] == RequestStatus::kRejectedTooLong) ++w.rejected_too_long;
      continue;
    }
    ++w.ok;
    set_seen[sets[r]] = 1;
    if (!std::isnan(ttft[r])) v_ttft.push_back(ttft[r]);
    if (!std::isnan(queue[r])) v_queue.push_back(queue[r]);
    if (!std::isnan(prefill[r])) v_prefill.push_back(prefill[r]);
    if (!std::isnan(fe[r])) v_fe.push_back(fe[r]);
    if (!std::isnan(itl[r])) v_itl.push_back(itl[r]);
    if (!std::isnan(itl_max[r])) v_itl_max.push_back(itl_max[r]);
    if (!std::isnan(e2e[r])) e2e_sum += e2e[r];
    if (prompt[r] >= 0) {
      v_prompt.push_back(prompt[r]);
      prompt_sum += prompt[r];
      if (cached[r] >= 0) {
        cached_sum += cached[r];
        hit_prompt_sum += prompt[r];
        ++cached_n;
        const int64_t uncached = prompt[r] - cached[r];
        if (uncached >= 256 && !std::isnan(prefill[r])) {
          v_per_token.push_back(prefill[r] * 1000.0 / static_cast<double>(uncached));
        }
      }
    }
    if (output[r] >= 0) {
      v_output.push_back(output[r]);
      output_sum += output[r];
      ++output_n;
    }
  }
  const double len = to_s - from_s;
  w.request_rate_rps = len > 0 ? static_cast<double>(w.requests) / len : kMissing;
  w.error_rate =
      w.requests > 0 ? static_cast<double>(w.errors) / static_cast<double>(w.requests) : kMissing;
  w.ttft_s = TermsOf(v_ttft);
  w.queue_s = TermsOf(v_queue);
  w.prefill_s = TermsOf(v_prefill);
  w.front_end_s = TermsOf(v_fe);
  w.itl_p50_s = Quantile(v_itl, 0.5);
  w.itl_max_p99_s = Quantile(v_itl_max, 0.99);
  w.prefix_cache_hit_rate = hit_prompt_sum > 0 ? cached_sum / hit_prompt_sum : kMissing;
  w.cached_tokens_mean = Mean(cached_sum, cached_n);
  w.uncached_tokens_mean = cached_n > 0 ? (hit_prompt_sum - cached_sum) / cached_n : kMissing;
  w.prompt_tokens_mean = Mean(prompt_sum, static_cast<int64_t>(v_prompt.size()));
  if (!v_prompt.empty()) {
    const std::vector<double> q = Quantiles(v_prompt, std::array<double, 2>{0.5, 0.99});
    w.prompt_tokens_p50 = q[0];
    w.prompt_tokens_p99 = q[1];
  }
  w.output_tokens_mean = Mean(output_sum, output_n);
  w.output_tokens_p99 = Quantile(v_output, 0.99);
  w.preemptions_per_request = Mean(static_cast<double>(preempt_sum), preempt_n);
  w.prefill_s_per_1k_uncached = Quantile(v_per_token, 0.5);
  w.concurrency = len > 0 && w.ok > 0 ? e2e_sum / len : kMissing;
  // Distinct replicas among the label sets seen.
  std::vector<std::string_view> replicas;
  for (size_t s = 0; s < set_seen.size(); ++s) {
    if (set_seen[s])
      replicas.push_back(t.label_of_set(static_cast<uint32_t>(s), SpanLabel::kReplica));
  }
  std::sort(replicas.begin(), replicas.end());
  w.replicas = std::unique(replicas.begin(), replicas.end()) - replicas.begin();
  return w;
}

namespace {

// The sum over series of a histogram family, as buckets.
std::vector<Bucket> SumBuckets(const MetricFamily* f, double* count, double* sum) {
  std::vector<Bucket> out;
  *count = 0;
  *sum = 0;
  if (f == nullptr || f->type != MetricType::kHistogram) return out;
  for (const MetricSeries& s : f->series) {
    const HistogramValue& h = s.histogram;
    if (out.empty()) {
      for (double b : h.upper_bounds) out.push_back({b, 0});
    }
    if (h.upper_bounds.size() + 0 != out.size()) continue;  // differing bounds: skip
    for (size_t i = 0; i < out.size(); ++i) out[i].cumulative_count += h.cumulative_counts[i];
    *count += h.count;
    *sum += h.sum;
  }
  if (!out.empty()) out.push_back({std::numeric_limits<double>::infinity(), *count});
  return out;
}

TermQuantiles TermsFromHistogram(const MetricSnapshot& w, CanonicalMetric m) {
  TermQuantiles t;
  double count = 0, sum = 0;
  std::vector<Bucket> b = SumBuckets(FindCanonical(w, m), &count, &sum);
  if (b.size() < 2 || count <= 0) return t;
  t.p50 = HistogramQuantile(0.5, b).value;
  t.p90 = HistogramQuantile(0.9, b).value;
  t.p99 = HistogramQuantile(0.99, b).value;
  return t;
}

double SumCounter(const MetricSnapshot& w, CanonicalMetric m) {
  const MetricFamily* f = FindCanonical(w, m);
  if (f == nullptr) return kMissing;
  double v = 0;
  for (const MetricSeries& s : f->series) v += s.value;
  return v;
}

}  // namespace

Result<WindowStats> WindowStatsFromMetrics(std::span<const MetricSnapshot> snapshots, double from_s,
                                           double to_s) {
  if (snapshots.size() < 2) {
    return Status::Invalid(fmt::format(
        "metrics window [{:.0f}, {:.0f}) s: {} snapshot(s); need at least 2 to take a delta",
        from_s, to_s, snapshots.size()));
  }
  ReadReport report;
  TTFT_ASSIGN_OR_RETURN(MetricSnapshot d, WindowDelta(snapshots, report));
  WindowStats w;
  w.from_s = from_s;
  w.to_s = to_s;
  w.from_metrics = true;
  w.ttft_s = TermsFromHistogram(d, CanonicalMetric::kTtft);
  w.queue_s = TermsFromHistogram(d, CanonicalMetric::kQueue);
  w.prefill_s = TermsFromHistogram(d, CanonicalMetric::kPrefill);
  w.itl_p50_s = TermsFromHistogram(d, CanonicalMetric::kItl).p50;
  const TermQuantiles prompt = TermsFromHistogram(d, CanonicalMetric::kPromptTokensHist);
  w.prompt_tokens_p50 = prompt.p50;
  w.prompt_tokens_p99 = prompt.p99;
  double count = 0, sum = 0;
  SumBuckets(FindCanonical(d, CanonicalMetric::kTtft), &count, &sum);
  w.requests = w.ok = static_cast<int64_t>(std::llround(count));
  const double span_s = snapshots.back().timestamp_s - snapshots.front().timestamp_s;
  w.request_rate_rps = span_s > 0 ? count / span_s : kMissing;
  const double hits = SumCounter(d, CanonicalMetric::kPrefixCacheHits);
  const double queries = SumCounter(d, CanonicalMetric::kPrefixCacheQueries);
  w.prefix_cache_hit_rate = PrefixCacheHitRateFromCounters(hits, queries);
  const double preempt = SumCounter(d, CanonicalMetric::kPreemptions);
  w.preemptions_per_request = count > 0 ? preempt / count : kMissing;
  double ptok_count = 0, ptok_sum = 0;
  SumBuckets(FindCanonical(d, CanonicalMetric::kPromptTokensHist), &ptok_count, &ptok_sum);
  w.prompt_tokens_mean = ptok_count > 0 ? ptok_sum / ptok_count : kMissing;
  if (std::isfinite(w.prompt_tokens_mean) && std::isfinite(w.prefix_cache_hit_rate)) {
    w.cached_tokens_mean = w.prompt_tokens_mean * w.prefix_cache_hit_rate;
    w.uncached_tokens_mean = w.prompt_tokens_mean - w.cached_tokens_mean;
  }
  // KV usage: the mean over replicas of the gauge, averaged over the scrapes.
  double kv_sum = 0;
  int kv_n = 0;
  for (const MetricSnapshot& s : snapshots) {
    const MetricFamily* f = FindCanonical(s, CanonicalMetric::kKvCacheUsage);
    if (f == nullptr) continue;
    for (const MetricSeries& se : f->series) {
      kv_sum += se.value;
      ++kv_n;
    }
  }
  if (kv_n > 0) w.kv_usage = kv_sum / kv_n;
  // Replicas: distinct `replica` (or `instance`) label values of the TTFT family.
  if (const MetricFamily* f = FindCanonical(d, CanonicalMetric::kTtft)) {
    std::vector<std::string> names;
    for (const MetricSeries& s : f->series) {
      for (const auto& [k, v] : s.labels) {
        if (k == "replica" || k == "instance") names.push_back(v);
      }
    }
    std::sort(names.begin(), names.end());
    w.replicas = std::unique(names.begin(), names.end()) - names.begin();
  }
  return w;
}

}  // namespace ttft
