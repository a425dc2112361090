// ComputeWindowStats (ttft/window_stats.h): its quantiles are ttft::Quantile's exactly (it
// selects on float and int32 copies, and each selection only above the previous one).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ttft/stats.h"
#include "ttft/window_stats.h"

namespace ttft {
namespace {

// Parses one exposition text as a scrape taken at `t_s` and appends it.
void AddScrape(std::vector<MetricSnapshot>& snaps, const std::string& text, double t_s) {
  ReadReport report;
  auto s = ParseExposition(text, {}, report);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  s->timestamp_s = t_s;
  snaps.push_back(std::move(*s));
}

// Bit-identical, NaN equal to NaN.
void ExpectSame(double got, double want, const char* what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what;
  } else {
    EXPECT_EQ(got, want) << what;
  }
}

TEST(WindowStats, QuantilesAreTtftQuantileExactly) {
  for (int n : {0, 1, 2, 3, 7, 100, 1001, 54321}) {
    std::mt19937_64 rng(static_cast<uint64_t>(n) + 1);
    std::lognormal_distribution<double> lat(-2, 1);
    std::uniform_int_distribution<int> tokens(1, 9000);
    SpanTable t;
    std::set<std::string> replicas;
    std::vector<double> ttft, queue, prefill, itl, itl_max, prompt, output, per_token;
    for (int i = 0; i < n; ++i) {
      Span s;
      s.request_id = "r" + std::to_string(i);
      s.arrival_s = i;
      s.replica = i % 3 ? "a" : "b";
      s.queue_s = i % 5 == 0 ? 0.25 : lat(rng);  // ties
      s.prefill_s = lat(rng);
      s.front_end_s = 0.003;
      s.ttft_s = s.front_end_s + s.queue_s + s.prefill_s;
      s.itl_mean_s = i % 11 == 0 ? NAN : lat(rng) / 10;  // missing values
      s.itl_max_s = s.itl_mean_s * 3;
      s.decode_s = 1;
      s.e2e_s = s.ttft_s + 1;
      s.prompt_tokens = tokens(rng);
      s.cached_tokens = i % 2 ? s.prompt_tokens / 2 : 0;
      s.output_tokens = i % 4 == 0 ? 100 : tokens(rng) / 10;
      s.status = i % 13 == 0 ? RequestStatus::kError : RequestStatus::kOk;
      AddSpanToTable(s, t);
      if (s.status != RequestStatus::kOk) continue;
      replicas.insert(s.replica);
      // What the table holds (float columns), as double copies.
      const size_t r = t.size() - 1;
      ttft.push_back(t.ttft_s()[r]);
      queue.push_back(t.queue_s()[r]);
      prefill.push_back(t.prefill_s()[r]);
      if (!std::isnan(t.itl_mean_s()[r])) itl.push_back(t.itl_mean_s()[r]);
      if (!std::isnan(t.itl_max_s()[r])) itl_max.push_back(t.itl_max_s()[r]);
      prompt.push_back(static_cast<double>(s.prompt_tokens));
      output.push_back(static_cast<double>(s.output_tokens));
      const int64_t unc = s.prompt_tokens - s.cached_tokens;
      if (unc >= 256) {
        per_token.push_back(t.prefill_s()[r] * 1000.0 / static_cast<double>(unc));
      }
    }
    std::vector<uint32_t> rows(t.size());
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint32_t>(i);
    const WindowStats w = ComputeWindowStats(t, rows, 0, n + 1.0);
    SCOPED_TRACE(n);
    ExpectSame(w.ttft_s.p50, Quantile(ttft, 0.5), "ttft p50");
    ExpectSame(w.ttft_s.p90, Quantile(ttft, 0.9), "ttft p90");
    ExpectSame(w.ttft_s.p99, Quantile(ttft, 0.99), "ttft p99");
    ExpectSame(w.queue_s.p50, Quantile(queue, 0.5), "queue p50");
    ExpectSame(w.queue_s.p90, Quantile(queue, 0.9), "queue p90");
    ExpectSame(w.queue_s.p99, Quantile(queue, 0.99), "queue p99");
    ExpectSame(w.prefill_s.p99, Quantile(prefill, 0.99), "prefill p99");
    ExpectSame(w.itl_s.p50, Quantile(itl, 0.5), "itl p50");
    ExpectSame(w.itl_max_p99_s, Quantile(itl_max, 0.99), "itl max p99");
    ExpectSame(w.prompt_tokens.p50, n == 0 ? kMissing : Quantile(prompt, 0.5), "prompt p50");
    ExpectSame(w.prompt_tokens.p99, n == 0 ? kMissing : Quantile(prompt, 0.99), "prompt p99");
    ExpectSame(w.output_tokens_p99, Quantile(output, 0.99), "output p99");
    ExpectSame(w.prefill_s_per_1k_uncached, Quantile(per_token, 0.5), "prefill per 1k");
    EXPECT_EQ(w.ok, static_cast<int64_t>(ttft.size()));
    EXPECT_EQ(w.replicas, static_cast<int64_t>(replicas.size()));
  }
}

// The one statistics model: `ttft stats` (exact and streaming), the diagnosis and the
// drill read the same definitions. A failed request's TTFT is not a TTFT sample; it
// counts in requests and the error rate only.
SpanTable MixedTable() {
  SpanTable t;
  for (int i = 0; i < 200; ++i) {
    Span s;
    s.request_id = "r" + std::to_string(i);
    s.arrival_s = i;
    s.replica = i % 2 ? "a" : "b";
    s.ttft_s = 0.1 + 0.001 * i;
    s.queue_s = 0.01;
    s.prefill_s = s.ttft_s - 0.01;
    s.itl_mean_s = 0.02;
    s.prompt_tokens = 1000;
    s.cached_tokens = 500;
    s.status = RequestStatus::kOk;
    if (i % 10 == 9) {  // errors that still carry a (huge) TTFT and prompt
      s.status = RequestStatus::kError;
      s.ttft_s = 100;
      s.cached_tokens = 0;
    }
    AddSpanToTable(s, t);
  }
  return t;
}

TEST(OneStatisticsModel, StatsDiagnosisAndStreamingAgree) {
  const SpanTable t = MixedTable();
  std::vector<uint32_t> rows(t.size());
  for (uint32_t i = 0; i < rows.size(); ++i) rows[i] = i;
  const WindowStats window = ComputeWindowStats(t, rows, 0, 199, StatsDetail::kFull);
  EXPECT_EQ(window.requests, 200);
  EXPECT_EQ(window.ok, 180);
  EXPECT_DOUBLE_EQ(window.error_rate, 0.1);
  EXPECT_LT(window.ttft_s.p999, 1.0);  // the errors' 100 s is not a sample
  EXPECT_EQ(window.ttft_s.count, 180);
  EXPECT_DOUBLE_EQ(window.prefix_cache_hit_rate, 0.5);

  auto exact = SummarizeSpans(t, {});
  ASSERT_TRUE(exact.ok());
  ASSERT_EQ(exact->size(), 1u);
  const WindowStats& e = exact->front().stats;
  EXPECT_EQ(e.requests, window.requests);
  for (size_t i = 0; i < TermQuantiles::kQs.size(); ++i) {
    EXPECT_EQ(e.ttft_s.at(i), window.ttft_s.at(i)) << i;
  }
  EXPECT_EQ(e.prefix_cache_hit_rate, window.prefix_cache_hit_rate);
  EXPECT_DOUBLE_EQ(e.request_rate_rps, 200.0 / 199.0);  // first to last arrival

  auto streaming = StreamingStats::Create({});
  ASSERT_TRUE(streaming.ok());
  ReadReport report;
  ASSERT_TRUE(ParseSpans(
                  [&] {
                    std::string text;
                    for (size_t i = 0; i < t.size(); ++i) {
                      Span s;
                      s.request_id = "r" + std::to_string(i);
                      s.arrival_s = t.arrival_s()[i];
                      s.ttft_s = t.ttft_s()[i];
                      s.prompt_tokens = t.prompt_tokens()[i];
                      s.cached_tokens = t.cached_tokens()[i];
                      s.status = t.status()[i];
                      AppendSpanJson(s, text);
                      text += "\n";
                    }
                    return text;
                  }(),
                  "mem", {}, **streaming, report)
                  .ok());
  const auto sketched = (*streaming)->Finish();
  ASSERT_EQ(sketched.size(), 1u);
  const WindowStats& s = sketched.front().stats;
  EXPECT_EQ(s.requests, 200);
  EXPECT_EQ(s.ok, 180);
  EXPECT_EQ(s.ttft_s.count, 180);
  EXPECT_NEAR(s.ttft_s.p99, window.ttft_s.p99, window.ttft_s.p99 * s.ttft_s.sketch_alpha * 1.01);
  EXPECT_DOUBLE_EQ(s.prefix_cache_hit_rate, 0.5);
}

TEST(OneStatisticsModel, ByLabelAndStatusGroups) {
  const SpanTable t = MixedTable();
  SummaryOptions by;
  by.by = "replica";
  auto groups = SummarizeSpans(t, by);
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ(groups->at(0).key, (Labels{{"replica", "a"}}));
  EXPECT_EQ(groups->at(0).stats.requests + groups->at(1).stats.requests, 200);
  by.by = "status";
  groups = SummarizeSpans(t, by);
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 2u);
  by.by = "colour";
  EXPECT_EQ(SummarizeSpans(t, by).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(StreamingStats::Create(by).ok());
}

// A replica's series carrying both `replica` and `instance` (a scrape through a
// relabelling Prometheus) is one replica, not two.
TEST(WindowStatsFromMetrics, ReplicaAndInstanceLabelsCountOnce) {
  std::vector<MetricSnapshot> snaps;
  for (int k = 0; k < 2; ++k) {
    std::string text = "# TYPE vllm:time_to_first_token_seconds histogram\n";
    for (const char* r : {"a", "b"}) {
      const std::string labels =
          fmt::format("replica=\"{}\",instance=\"10.0.0.{}:8000\"", r, r[0] - 'a');
      text += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"1.0\"}} {}\n", labels,
                          10 * k);
      text += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"+Inf\"}} {}\n", labels,
                          10 * k);
      text += fmt::format("vllm:time_to_first_token_seconds_sum{{{}}} {}\n", labels, 5 * k);
      text += fmt::format("vllm:time_to_first_token_seconds_count{{{}}} {}\n", labels, 10 * k);
    }
    AddScrape(snaps, text, 15.0 * (k + 1));
  }
  auto w = WindowStatsFromMetrics(snaps, 15, 30);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->replicas, 2);
  EXPECT_EQ(w->requests, 20);
}

// A histogram whose counts sum past any request count (each series finite) is said to
// be unusable, not cast into an integer it does not fit (found by exposition_fuzz).
TEST(WindowStatsFromMetrics, ACountBeyondARequestCountIsSaid) {
  std::vector<MetricSnapshot> snaps;
  for (int k = 0; k < 2; ++k) {
    const double n = k * 7.4e26;
    const std::string text = fmt::format(
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        "vllm:time_to_first_token_seconds_bucket{{le=\"1.0\"}} {0}\n"
        "vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {0}\n"
        "vllm:time_to_first_token_seconds_sum {1}\nvllm:time_to_first_token_seconds_count {0}\n",
        n, n / 2);
    AddScrape(snaps, text, 15.0 * (k + 1));
  }
  auto w = WindowStatsFromMetrics(snaps, 15, 30);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_FALSE(w->ttft_s.available());
  EXPECT_NE(w->ttft_s.note.find("not a request count"), std::string::npos) << w->ttft_s.note;
}

// Counters whose increase is past any count (each sample finite, as the parser
// keeps them): the counts saturate at kCountLimit, the rates keep the exact double.
TEST(WindowStatsFromMetrics, CountersBeyondACountSaturate) {
  std::vector<MetricSnapshot> snaps;
  for (int k = 0; k < 2; ++k) {
    const std::string text = fmt::format(
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        "vllm:time_to_first_token_seconds_bucket{{le=\"1.0\"}} {0}\n"
        "vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {0}\n"
        "vllm:time_to_first_token_seconds_sum {0}\nvllm:time_to_first_token_seconds_count {0}\n"
        "# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total {1}\n"
        "# TYPE vllm:request_success counter\n"
        "vllm:request_success_total{{finished_reason=\"stop\"}} {1}\n"
        "vllm:request_success_total{{finished_reason=\"abort\"}} {1}\n",
        100 * k, k * 1e300);
    AddScrape(snaps, text, 15.0 * (k + 1));
  }
  auto w = WindowStatsFromMetrics(snaps, 15, 30);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->ttft_s.count, 100);
  EXPECT_EQ(w->preemptions, SaturatingCount(kCountLimit));
  EXPECT_DOUBLE_EQ(w->preemptions_per_request, 1e300 / 100);
  EXPECT_EQ(w->errors, SaturatingCount(kCountLimit));
  EXPECT_EQ(w->error_rate_requests, SaturatingCount(kCountLimit));
  EXPECT_DOUBLE_EQ(w->error_rate, 0.5);
  EXPECT_EQ(SaturatingCount(41.6), 42);
  EXPECT_EQ(SaturatingCount(std::nan("")), 0);
  EXPECT_EQ(SaturatingCount(-3), 0);
}

// The error rate from vLLM's finished-requests counter (errors: finished_reason abort
// or error), the hit rate's token denominator, and a selector that keeps only the
// series carrying every given label.
TEST(WindowStatsFromMetrics, ErrorRateHitRateAndSelector) {
  std::vector<MetricSnapshot> snaps;
  for (int k = 0; k < 2; ++k) {
    std::string text =
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        "# TYPE vllm:request_success_total counter\n"
        "# TYPE vllm:prefix_cache_hits_total counter\n"
        "# TYPE vllm:prefix_cache_queries_total counter\n";
    for (const char* d : {"v1", "v2"}) {
      const int scale = d[1] == '1' ? 1 : 3;  // v2 has three times the traffic
      const std::string labels = fmt::format("deploy=\"{}\"", d);
      text += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"1.0\"}} {}\n", labels,
                          100 * k * scale);
      text += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"+Inf\"}} {}\n", labels,
                          100 * k * scale);
      text += fmt::format("vllm:time_to_first_token_seconds_sum{{{}}} {}\n", labels, 10 * k);
      text +=
          fmt::format("vllm:time_to_first_token_seconds_count{{{}}} {}\n", labels, 100 * k * scale);
      text += fmt::format("vllm:request_success_total{{{},finished_reason=\"stop\"}} {}\n", labels,
                          95 * k * scale);
      text += fmt::format("vllm:request_success_total{{{},finished_reason=\"abort\"}} {}\n", labels,
                          5 * k * scale * scale);
      text += fmt::format("vllm:prefix_cache_hits_total{{{}}} {}\n", labels, 600 * k * scale);
      text += fmt::format("vllm:prefix_cache_queries_total{{{}}} {}\n", labels, 1000 * k * scale);
    }
    AddScrape(snaps, text, 15.0 * (k + 1));
  }
  auto all = WindowStatsFromMetrics(snaps, 15, 30);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->requests, 400);
  EXPECT_EQ(all->error_rate_requests, 95 + 5 + 285 + 45);
  EXPECT_EQ(all->errors, 50);
  EXPECT_DOUBLE_EQ(all->error_rate, 50.0 / 430);
  EXPECT_DOUBLE_EQ(all->prefix_cache_query_tokens, 4000);
  EXPECT_DOUBLE_EQ(all->prefix_cache_hit_rate, 0.6);
  const std::vector<std::pair<std::string, std::string>> v2 = {{"deploy", "v2"}};
  auto sel = WindowStatsFromMetrics(snaps, 15, 30, v2);
  ASSERT_TRUE(sel.ok()) << sel.status().ToString();
  EXPECT_EQ(sel->requests, 300);
  EXPECT_EQ(sel->error_rate_requests, 330);
  EXPECT_EQ(sel->errors, 45);
  EXPECT_DOUBLE_EQ(sel->prefix_cache_query_tokens, 3000);
  const std::vector<std::pair<std::string, std::string>> none = {{"deploy", "v3"}};
  auto empty = WindowStatsFromMetrics(snaps, 15, 30, none);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->requests, 0);
  EXPECT_EQ(empty->error_rate_requests, 0);
  EXPECT_TRUE(std::isnan(empty->error_rate));
  EXPECT_TRUE(std::isnan(empty->prefix_cache_hit_rate));
}

TEST(WindowStats, ErrorRateAndHitRateDenominatorFromSpans) {
  SpanTable t;
  for (int i = 0; i < 10; ++i) {
    Span s;
    s.arrival_s = i;
    s.ttft_s = 0.1;
    s.prompt_tokens = 100;
    s.cached_tokens = i < 5 ? 50 : -1;  // unknown for half of them
    if (i == 9) s.status = RequestStatus::kError;
    AddSpanToTable(s, t);
  }
  std::vector<uint32_t> rows(10);
  for (uint32_t r = 0; r < 10; ++r) rows[r] = r;
  WindowStats w = ComputeWindowStats(t, rows, 0, 10);
  EXPECT_EQ(w.error_rate_requests, 10);
  EXPECT_DOUBLE_EQ(w.error_rate, 0.1);
  EXPECT_DOUBLE_EQ(w.prefix_cache_query_tokens, 500);
  EXPECT_DOUBLE_EQ(w.prefix_cache_hit_rate, 0.5);
}

// Per-label-value statistics of a metric window: a series' group is its first label
// among the alternatives (replica, then instance), the parent its region, and the
// requests above a threshold are interpolated linearly inside the bucket holding it.
TEST(GroupWindowStatsFromMetrics, GroupsByTheFirstLabelPresentWithParentsAndCountsAbove) {
  std::vector<MetricSnapshot> snaps;
  // Each series: bucket le=0.5 and le=1.0; per scrape k the counts grow by
  // (n05, n10, inf) = (a, b, c) cumulative.
  struct Series {
    const char* labels;
    int c05, c10, count;
  };
  const std::vector<Series> series = {
      {R"(replica="a",region="east")", 10, 10, 10},            // all <= 0.5 s
      {R"(replica="b",region="east")", 0, 20, 20},             // all in (0.5, 1.0]
      {R"(instance="10.0.0.3:8000",region="west")", 0, 0, 5},  // all above 1.0 s
  };
  for (int k = 0; k < 2; ++k) {
    std::string text = "# TYPE vllm:time_to_first_token_seconds histogram\n";
    for (const Series& x : series) {
      text += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"0.5\"}} {}\n", x.labels,
                          x.c05 * k);
      text += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"1.0\"}} {}\n", x.labels,
                          x.c10 * k);
      text += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"+Inf\"}} {}\n",
                          x.labels, x.count * k);
      text += fmt::format("vllm:time_to_first_token_seconds_sum{{{}}} {}\n", x.labels, x.count * k);
      text +=
          fmt::format("vllm:time_to_first_token_seconds_count{{{}}} {}\n", x.labels, x.count * k);
    }
    AddScrape(snaps, text, 10.0 * (k + 1));
  }
  const std::vector<std::string> replica = {"replica", "pod", "instance"};
  const std::vector<std::string> region = {"region"};
  auto g = GroupWindowStatsFromMetrics(snaps, 10, 20, replica, region, 0.75);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->size(), 3u);
  EXPECT_EQ((*g)[0].value, "10.0.0.3:8000");
  EXPECT_EQ((*g)[0].parent, "west");
  EXPECT_DOUBLE_EQ((*g)[0].above, 5);  // the +Inf bucket: all above
  EXPECT_EQ((*g)[0].stats.requests, 5);
  EXPECT_EQ((*g)[1].value, "a");
  EXPECT_EQ((*g)[1].parent, "east");
  EXPECT_DOUBLE_EQ((*g)[1].above, 0);  // all <= 0.5 s
  EXPECT_EQ((*g)[1].stats.requests, 10);
  EXPECT_DOUBLE_EQ((*g)[1].stats.request_rate_rps, 1.0);  // 10 requests over 10 s
  EXPECT_EQ((*g)[2].value, "b");
  EXPECT_DOUBLE_EQ((*g)[2].above, 10);  // half of (0.5, 1.0] lies above 0.75
  EXPECT_EQ((*g)[2].stats.requests, 20);
  EXPECT_EQ((*g)[2].stats.ttft_s.source, TermQuantiles::Source::kBuckets);
  EXPECT_DOUBLE_EQ((*g)[2].stats.ttft_s.buckets[0].lower_bound, 0.5);
  EXPECT_DOUBLE_EQ((*g)[2].stats.ttft_s.buckets[0].upper_bound, 1.0);
  for (const auto& x : *g) EXPECT_EQ(x.stats.replicas, 1) << x.value;

  // By region: two groups; east holds two replicas.
  auto r = GroupWindowStatsFromMetrics(snaps, 10, 20, region, {}, 0.75);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].value, "east");
  EXPECT_EQ((*r)[0].stats.replicas, 2);
  EXPECT_EQ((*r)[0].stats.requests, 30);
  EXPECT_DOUBLE_EQ((*r)[0].above, 10);
  EXPECT_EQ((*r)[1].stats.replicas, 1);

  // No series carries the label: no groups. One snapshot: an error.
  const std::vector<std::string> tenant = {"tenant"};
  auto t = GroupWindowStatsFromMetrics(snaps, 10, 20, tenant, {}, 0.75);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->empty());
  EXPECT_FALSE(
      GroupWindowStatsFromMetrics(std::span(snaps).first(1), 10, 20, tenant, {}, 0.75).ok());
}

// Quantiles the buckets do not resolve are bounds, and so are the ratios they make.
TEST(QuantileRatio, BoundsWhereTheBucketsDoNotResolveAQuantile) {
  auto term = [](double v, double lo, double hi, bool first, bool inf) {
    TermQuantiles t;
    t.source = TermQuantiles::Source::kBuckets;
    t.count = 10;
    t.p50 = t.p90 = t.p99 = t.p999 = v;
    for (BucketQuantile& b : t.buckets) b = {v, lo, hi, first, inf};
    return t;
  };
  const TermQuantiles first = term(0.099, 0, 0.1, true, false);  // (0, 100 ms]
  const TermQuantiles mid = term(0.5, 0.25, 1, false, false);
  const TermQuantiles top = term(10, 10, INFINITY, false, true);  // above 10 s
  EXPECT_EQ(QuantileText(first, 2), "<=100 ms");
  EXPECT_EQ(QuantileText(mid, 2), "500 ms");
  EXPECT_EQ(QuantileText(top, 2), ">=10.00 s");
  EXPECT_EQ(QuantileRatioText(mid, mid, 2), "x1.00");
  EXPECT_EQ(QuantileRatioText(first, mid, 2), "at least x5.00");
  EXPECT_EQ(QuantileRatioText(mid, first, 2), "at most x0.20");
  EXPECT_EQ(QuantileRatioText(mid, top, 2), "at least x20.00");
  EXPECT_EQ(QuantileRatioText(top, mid, 2), "at most x0.05");
  EXPECT_EQ(QuantileRatioText(first, first, 2), "not resolved by the buckets");
  EXPECT_EQ(QuantileRatioText(first, top, 2), "at least x100.00");
  const RatioBounds r = QuantileRatio(first, mid, 2);
  EXPECT_DOUBLE_EQ(r.lo, 5);
  EXPECT_EQ(r.hi, INFINITY);
  // Exact quantiles are figures whatever the buckets hold; a missing one is n/a.
  TermQuantiles exact = first;
  exact.source = TermQuantiles::Source::kExact;
  EXPECT_EQ(QuantileText(exact, 2), "99 ms");
  EXPECT_EQ(QuantileRatioText(exact, mid, 2), "x5.05");
  EXPECT_EQ(QuantileRatioText(TermQuantiles{}, mid, 2), "n/a");
}

}  // namespace
}  // namespace ttft
