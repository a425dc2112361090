// Round trips through the simulator's outputs (spans JSONL, OTLP/JSON, exposition
// snapshots), the streaming path against exact quantiles, a cut OTLP file, and the
// DDSketch guarantee on heavy-tailed data (ttft/spans.h, ttft/metrics.h, ttft/window_stats.h,
// ttft/stats.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "ttft/fleet.h"
#include "ttft/metrics.h"
#include "ttft/spans.h"
#include "ttft/stats.h"
#include "ttft/window_stats.h"

namespace ttft {
namespace {

class CollectSink : public SimulationSink {
 public:
  Status OnSpan(const Span& s) override {
    spans.push_back(s);
    return Status::Ok();
  }
  Status OnSnapshot(const MetricSnapshot& snap) override {
    snapshots.push_back(snap);
    return Status::Ok();
  }
  std::vector<Span> spans;
  std::vector<MetricSnapshot> snapshots;
};

// Two replicas, one tenant with a shared 2,000-token prefix (after simulate_test.cc).
Scenario SmallScenario() {
  Scenario sc;
  sc.name = "roundtrip";
  sc.duration_s = 60;
  sc.scrape_interval_s = 10;
  for (int i = 0; i < 2; ++i) {
    ReplicaSpec r;
    r.name = "r" + std::to_string(i);
    r.region = i == 0 ? "east" : "west";
    r.engine.hardware = *MakeHardwareConfig("llama-3.1-8b", "h100-sxm", Dtype::kBf16, 1);
    r.engine.max_model_len = 8192;
    sc.replicas.push_back(r);
  }
  TemplateSpec t;
  t.name = "app";
  TemplateVersion v1;
  v1.version = "v1";
  v1.segments = {{"system", SegmentKind::kStatic, "system", Distribution::Fixed(2000)},
                 {"q", SegmentKind::kPerRequest, "", Distribution::Fixed(300)}};
  t.versions = {v1};
  sc.workload.templates = {t};
  TenantSpec ten;
  ten.name = "acme";
  ten.template_name = "app";
  ten.template_version = "v1";
  ten.arrivals.rate_rps = 15;
  ten.output_tokens = Distribution::Fixed(60);
  sc.workload.tenants.push_back(ten);
  sc.workload.duration_s = sc.duration_s;
  sc.workload.seed = 11;
  return sc;
}

// Type-7 quantile of the TTFTs as the table stores them (float).
double ExactFloatQuantile(const std::vector<Span>& spans, double q) {
  std::vector<double> v;
  for (const Span& s : spans) {
    if (!std::isnan(s.ttft_s)) v.push_back(static_cast<float>(s.ttft_s));
  }
  return Quantile(v, q);
}

class SimulatorRoundTrip : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sink_ = new CollectSink();
    auto r = Simulate(SmallScenario(), *sink_, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_GT(sink_->spans.size(), 500u);
    ASSERT_GE(sink_->snapshots.size(), 2u);
  }
  static void TearDownTestSuite() {
    delete sink_;
    sink_ = nullptr;
  }
  static inline CollectSink* sink_ = nullptr;
};

TEST_F(SimulatorRoundTrip, SpansJsonlGiveTheSameCountsAndExactQuantiles) {
  std::string jsonl;
  for (const Span& s : sink_->spans) {
    AppendSpanJson(s, jsonl);
    jsonl += '\n';
  }
  SpanTable table;
  ReadReport report;
  ASSERT_TRUE(ParseSpans(jsonl, "spans.jsonl", {}, table, report).ok());
  EXPECT_EQ(report.records_skipped, 0) << report.Summary();
  ASSERT_EQ(table.size(), sink_->spans.size());
  auto groups = SummarizeSpans(table, {});
  ASSERT_TRUE(groups.ok());
  for (size_t i = 0; i < TermQuantiles::kQs.size(); ++i) {
    EXPECT_EQ(groups->front().stats.ttft_s.at(i),
              ExactFloatQuantile(sink_->spans, TermQuantiles::kQs[i]));
  }
  // Grouped by replica: the per-replica counts add up to the spans of each replica.
  SummaryOptions by;
  by.by = "replica";
  auto per = SummarizeSpans(table, by);
  ASSERT_TRUE(per.ok());
  ASSERT_EQ(per->size(), 2u);
  for (const GroupSummary& g : *per) {
    const int64_t n = std::count_if(sink_->spans.begin(), sink_->spans.end(),
                                    [&](const Span& s) { return s.replica == g.key[0].second; });
    EXPECT_EQ(g.stats.requests, n);
  }
}

TEST_F(SimulatorRoundTrip, OtlpRenderingGivesTheSameCountsAndQuantiles) {
  // Batches of 100 spans per line, as a Collector's file exporter flushes them.
  std::string otlp;
  const std::span<const Span> all(sink_->spans);
  for (size_t i = 0; i < all.size(); i += 100) {
    AppendOtlpJson(all.subspan(i, std::min<size_t>(100, all.size() - i)), otlp);
    otlp += '\n';
  }
  SpanTable table;
  ReadReport report;
  SpanReadOptions o;
  ASSERT_EQ(DetectFormat(otlp), InputFormat::kOtlp);
  ASSERT_TRUE(ParseSpans(otlp, "traces.jsonl", o, table, report).ok());
  EXPECT_EQ(report.records_skipped, 0) << report.Summary();
  ASSERT_EQ(table.size(), sink_->spans.size());
  auto groups = SummarizeSpans(table, {});
  ASSERT_TRUE(groups.ok());
  for (size_t i = 0; i < TermQuantiles::kQs.size(); ++i) {
    EXPECT_EQ(groups->front().stats.ttft_s.at(i),
              ExactFloatQuantile(sink_->spans, TermQuantiles::kQs[i]));
  }
  // Resource attributes came back as labels; the hit rate is the spans' own.
  int64_t cached = 0, prompt = 0;
  for (const Span& s : sink_->spans) {
    if (s.cached_tokens >= 0 && s.prompt_tokens >= 0) {
      cached += s.cached_tokens;
      prompt += s.prompt_tokens;
    }
  }
  EXPECT_NEAR(groups->front().stats.prefix_cache_hit_rate,
              static_cast<double>(cached) / static_cast<double>(prompt), 1e-12);
  SummaryOptions by;
  by.by = "region";
  auto per = SummarizeSpans(table, by);
  ASSERT_TRUE(per.ok());
  ASSERT_EQ(per->size(), 2u);
  EXPECT_EQ((*per)[0].key[0].second, "east");

  // The last line cut mid-record: reported as truncated, every earlier span kept.
  const size_t last_nl = otlp.rfind('\n', otlp.size() - 2);
  const std::string cut = otlp.substr(0, last_nl + 1 + (otlp.size() - last_nl) / 2);
  SpanTable cut_table;
  ReadReport cut_report;
  ASSERT_TRUE(ParseSpans(cut, "cut.jsonl", o, cut_table, cut_report).ok());
  EXPECT_EQ(cut_report.records_skipped, 1);
  EXPECT_EQ(cut_report.skipped_by_category["truncated record"], 1) << cut_report.Summary();
  const size_t last_batch = all.size() % 100 == 0 ? 100 : all.size() % 100;
  EXPECT_EQ(cut_table.size(), all.size() - last_batch);
  SpanReadOptions strict = o;
  strict.strict = true;
  SpanTable t2;
  ReadReport r2;
  EXPECT_EQ(ParseSpans(cut, "cut.jsonl", strict, t2, r2).code(), StatusCode::kDataError);
}

TEST_F(SimulatorRoundTrip, ExpositionSnapshotsGiveTheCountAndBucketsHoldingTheExactP99) {
  // The last snapshot is cumulative over the run; render and parse it as a scrape.
  const MetricSnapshot& last = sink_->snapshots.back();
  ReadReport report;
  auto parsed = ParseExposition(FormatExposition(last), {}, report);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(report.records_skipped, 0) << report.Summary();
  auto groups = SummarizeMetrics(*parsed, {});
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 1u);
  const GroupSummary& g = groups->front();
  int64_t with_ttft = 0;
  for (const Span& s : sink_->spans) with_ttft += std::isnan(s.ttft_s) ? 0 : 1;
  EXPECT_EQ(g.stats.requests, with_ttft);
  ASSERT_TRUE(g.stats.ttft_s.source == TermQuantiles::Source::kBuckets);
  for (size_t i = 0; i < TermQuantiles::kQs.size(); ++i) {
    const double exact = ExactFloatQuantile(sink_->spans, TermQuantiles::kQs[i]);
    SCOPED_TRACE(::testing::Message() << "q=" << TermQuantiles::kQs[i] << " exact=" << exact);
    EXPECT_LE(g.stats.ttft_s.buckets[i].lower_bound, exact * (1 + 1e-6));
    EXPECT_GE(g.stats.ttft_s.buckets[i].upper_bound, exact * (1 - 1e-6));
  }
  // The window between the first and last scrape counts the requests in between.
  ReadReport wr;
  auto window = WindowDelta(sink_->snapshots, wr);
  ASSERT_TRUE(window.ok());
  auto wg = SummarizeMetrics(*window, {});
  ASSERT_TRUE(wg.ok());
  auto first = SummarizeMetrics(sink_->snapshots.front(), {});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(wg->front().stats.requests + first->front().stats.requests, g.stats.requests);
}

TEST_F(SimulatorRoundTrip, StreamingPathIsWithinTheSketchErrorOfExact) {
  SpanTable table;
  auto streaming = StreamingStats::Create({});
  ASSERT_TRUE(streaming.ok());
  std::string jsonl;
  for (const Span& s : sink_->spans) {
    AppendSpanJson(s, jsonl);
    jsonl += '\n';
  }
  ReadReport r1, r2;
  ASSERT_TRUE(ParseSpans(jsonl, "a", {}, table, r1).ok());
  SpanReadOptions no_dedup;
  no_dedup.detect_duplicates = false;
  ASSERT_TRUE(ParseSpans(jsonl, "a", no_dedup, **streaming, r2).ok());
  const auto sketch = (*streaming)->Finish();
  ASSERT_EQ(sketch.size(), 1u);
  EXPECT_EQ(sketch[0].stats.requests, static_cast<int64_t>(table.size()));
  ASSERT_TRUE(sketch[0].stats.ttft_s.source == TermQuantiles::Source::kSketch);
  const double alpha = sketch[0].stats.ttft_s.sketch_alpha;
  // The sketch answers with order statistic floor(q (n - 1)) to within alpha.
  std::vector<double> v;
  for (float x : table.ttft_s()) {
    if (!std::isnan(x)) v.push_back(x);
  }
  std::sort(v.begin(), v.end());
  for (size_t i = 0; i < TermQuantiles::kQs.size(); ++i) {
    const double q = TermQuantiles::kQs[i];
    const double exact = v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
    EXPECT_NEAR(sketch[0].stats.ttft_s.at(i), exact, alpha * exact * (1 + 1e-9) + 1e-7)
        << "q=" << q;
  }
}

// DDSketch's guarantee on heavy tails: the value of every quantile is within alpha
// (relative) of the exact order statistic, for Pareto and lognormal data.
TEST(SketchHeavyTails, RelativeErrorHoldsAgainstExactQuantiles) {
  std::mt19937_64 rng(99);
  std::lognormal_distribution<double> lognormal(-1.0, 2.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int dist = 0; dist < 2; ++dist) {
    std::vector<double> v(200000);
    for (double& x : v) {
      // Pareto with x_m = 0.01 s and shape 1.1 (infinite variance).
      x = dist == 0 ? lognormal(rng) : 0.01 / std::pow(1.0 - u(rng), 1.0 / 1.1);
    }
    DDSketch s;
    s.AddAll(v);
    ASSERT_FALSE(s.collapsed());
    std::sort(v.begin(), v.end());
    for (double q : {0.01, 0.5, 0.9, 0.99, 0.999, 0.9999}) {
      const double exact = v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
      EXPECT_LE(std::fabs(s.Quantile(q) - exact), s.alpha() * exact * (1 + 1e-9))
          << (dist == 0 ? "lognormal" : "pareto") << " q=" << q;
    }
    // Merging per-replica sketches gives the same answers.
    DDSketch a, b;
    for (size_t i = 0; i < v.size(); ++i) (i % 2 ? a : b).Add(v[i]);
    ASSERT_TRUE(a.Merge(b).ok());
    for (double q : {0.5, 0.99, 0.999}) EXPECT_EQ(a.Quantile(q), s.Quantile(q));
  }
}

}  // namespace
}  // namespace ttft
