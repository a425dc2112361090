// Tests for the exposition parser, canonical names, window deltas and metric
// summaries (ttft/metrics.h, ttft/window_stats.h).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>

#include "ttft/metrics.h"
#include "ttft/window_stats.h"

namespace ttft {
namespace {

namespace fs = std::filesystem;

MetricSnapshot Parse(std::string_view text, ReadReport& r) {
  auto s = ParseExposition(text, {}, r);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : MetricSnapshot{};
}

const MetricFamily* Family(const MetricSnapshot& s, std::string_view name) {
  for (const auto& f : s.families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(Exposition, LabelsInAnyOrderEscapesAndLe) {
  const std::string text =
      "# HELP x:lat Latency.\n"
      "# TYPE x:lat histogram\n"
      "x:lat_bucket{model=\"a\\\"b\\\\c\\nd\",le=\"1.0\"} 1\n"
      "x:lat_bucket{le=\"1e+06\",model=\"a\\\"b\\\\c\\nd\"} 3 1712000000000\n"
      "x:lat_bucket{le=\"+Inf\",model=\"a\\\"b\\\\c\\nd\",} 4\n"
      "x:lat_sum{model=\"a\\\"b\\\\c\\nd\"} 10.5\n"
      "x:lat_count{model=\"a\\\"b\\\\c\\nd\"} 4\n"
      "x:lat_created{model=\"a\\\"b\\\\c\\nd\"} 1.7e9\n"
      "# TYPE req counter\n"
      "req_total{b=\"2\",a=\"1\"} 7\n"
      "req_created{b=\"2\",a=\"1\"} 1.7e9\n"
      "untyped_thing 3.5\n"
      "g NaN\n";
  ReadReport r;
  MetricSnapshot s = Parse(text, r);
  EXPECT_EQ(r.records_skipped, 0) << r.Summary();
  const MetricFamily* h = Family(s, "x:lat");
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->series.size(), 1u);
  EXPECT_EQ(h->series[0].labels[0].second, "a\"b\\c\nd");
  EXPECT_EQ(h->series[0].histogram.upper_bounds, (std::vector<double>{1.0, 1e6}));
  EXPECT_EQ(h->series[0].histogram.count, 4);
  EXPECT_EQ(h->series[0].histogram.sum, 10.5);
  const MetricFamily* c = Family(s, "req_total");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->type, MetricType::kCounter);
  EXPECT_EQ(c->series[0].labels[0].first, "a");  // sorted
  EXPECT_EQ(Family(s, "req_created"), nullptr);
  EXPECT_NE(Family(s, "untyped_thing"), nullptr);
}

TEST(Exposition, RoundTripsFormatExposition) {
  MetricSnapshot snap;
  MetricFamily f;
  f.name = "vllm:time_to_first_token_seconds";
  f.type = MetricType::kHistogram;
  MetricSeries s;
  s.labels = {{"engine", "0"}, {"model_name", "m"}};
  s.histogram.upper_bounds = {0.1, 1.0, 2e6};
  s.histogram.cumulative_counts = {1, 5, 6};
  s.histogram.count = 7;
  s.histogram.sum = 9.25;
  f.series.push_back(s);
  snap.families.push_back(f);
  ReadReport r;
  MetricSnapshot back = Parse(FormatExposition(snap), r);
  ASSERT_EQ(back.families.size(), 1u);
  EXPECT_EQ(back.families[0].series[0].histogram.upper_bounds, s.histogram.upper_bounds);
  EXPECT_EQ(back.families[0].series[0].histogram.cumulative_counts, s.histogram.cumulative_counts);
  EXPECT_EQ(back.families[0].series[0].histogram.count, 7);
}

TEST(Exposition, CutMidLineAndBadLinesAreReported) {
  ReadReport r;
  MetricSnapshot s = Parse("a 1\nb{x=\"1\" 2\nc 3\nd{x=\"1", r);
  EXPECT_EQ(r.records_skipped, 2);
  ASSERT_EQ(r.issues.size(), 2u);
  EXPECT_EQ(r.issues[0].line, 2);
  EXPECT_EQ(r.issues[1].line, 4);
  EXPECT_NE(r.issues[1].reason.find("cut mid-line"), std::string::npos);
  EXPECT_EQ(Family(s, "d"), nullptr);
  ReadReport strict_report;
  ExpositionParseOptions o;
  o.strict = true;
  EXPECT_EQ(ParseExposition("a 1\nb{", o, strict_report).status().code(), StatusCode::kDataError);
}

// The repeated-label check used to compare each label with every label before it:
// quadratic in the labels of a line (about 5e9 string comparisons for this input,
// minutes under the fuzzer's sanitizers). It is now a sort and one adjacent scan.
TEST(Exposition, ManyLabelsOnOneLineParseInLinearTime) {
  constexpr int kLabels = 100000;
  std::string labels;
  for (int i = 0; i < kLabels; ++i) labels += "l" + std::to_string(i) + "=\"v\",";
  const std::string text = "m{" + labels + "} 1\n" +                    // accepted
                           "h_bucket{" + labels + "le=\"+Inf\"} 2\n" +  // an untyped histogram
                           "m2{" + labels + "l77=\"again\"} 3\n" +      // a repeated name
                           "m3{" + labels + "} 4";                      // cut: no newline
  const auto t0 = std::chrono::steady_clock::now();
  ReadReport r;
  MetricSnapshot s = Parse(text, r);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 5.0);  // about 0.3 s at -O2 under load; the quadratic check took minutes
  const MetricFamily* m = Family(s, "m");
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->series.size(), 1u);
  EXPECT_EQ(m->series[0].labels.size(), static_cast<size_t>(kLabels));
  EXPECT_EQ(r.records_skipped, 1);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].line, 3);
  EXPECT_EQ(r.issues[0].reason, "label l77 repeated");
  EXPECT_NE(Family(s, "h"), nullptr);
  EXPECT_NE(Family(s, "m3"), nullptr);  // parses, kept with a warning
}

// Buckets out of order with counts that then decrease (found by exposition_fuzz on a
// damaged real SGLang scrape): raised to the count below, as histogram_quantile does,
// with a warning, so no bucket holds a negative number of observations.
TEST(Exposition, DecreasingBucketCountsAreRaisedWithAWarning) {
  ReadReport r;
  MetricSnapshot s = Parse(
      "# TYPE h histogram\n"
      "h_bucket{le=\"1\"} 5\nh_bucket{le=\"3\"} 7\nh_bucket{le=\"2\"} 9\n"
      "h_bucket{le=\"+Inf\"} 8\nh_sum 4\nh_count 8\n",
      r);
  const MetricFamily* h = Family(s, "h");
  ASSERT_NE(h, nullptr);
  const HistogramValue& v = h->series[0].histogram;
  EXPECT_EQ(v.upper_bounds, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(v.cumulative_counts, (std::vector<double>{5, 9, 9}));
  EXPECT_EQ(v.count, 9);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("bucket counts decrease with le"), std::string::npos);
}

// A bucket bound of -Inf or NaN (found by exposition_fuzz) drops its series with the
// line, instead of a histogram with a bound that is not a number.
TEST(Exposition, BucketBoundsMustBeFiniteOrPlusInf) {
  for (const char* le : {"-inf", "NaN"}) {
    ReadReport r;
    MetricSnapshot s =
        Parse(std::string("# TYPE h histogram\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"") + le +
                  "\"} 2\nh_bucket{le=\"+Inf\"} 8\nh_sum 4\nh_count 8\n",
              r);
    const MetricFamily* h = Family(s, "h");
    if (std::string(le) == "-inf") {
      EXPECT_EQ(h, nullptr);
      EXPECT_EQ(r.skipped_by_category["bad bucket bound"], 1);
    }
    if (h != nullptr) {  // NaN: the bucket line itself is refused earlier
      for (double b : h->series[0].histogram.upper_bounds) EXPECT_TRUE(std::isfinite(b)) << le;
    }
    EXPECT_GE(r.records_skipped, 1) << le;
  }
  // Nor a count that is not a count (found by exposition_fuzz: a bucket of "inf").
  for (const char* v : {"inf", "-3", "NaN"}) {
    ReadReport r;
    MetricSnapshot s = Parse(std::string("# TYPE h histogram\nh_bucket{le=\"1\"} ") + v +
                                 "\nh_bucket{le=\"+Inf\"} 8\nh_sum 4\nh_count 8\n",
                             r);
    const MetricFamily* h = Family(s, "h");
    if (h != nullptr) {
      for (double c : h->series[0].histogram.cumulative_counts) {
        EXPECT_TRUE(std::isfinite(c) && c >= 0) << v;
      }
    }
    EXPECT_GE(r.records_skipped, 1) << v;
  }
}

// OpenMetrics: a counter is non-NaN and non-negative; a gauge may be anything.
TEST(Exposition, ACounterThatIsNoCountIsSkipped) {
  for (const char* v : {"inf", "-3", "NaN"}) {
    ReadReport r;
    MetricSnapshot s =
        Parse(std::string("# TYPE c counter\nc_total ") + v + "\n# TYPE g gauge\ng " + v + "\n", r);
    EXPECT_EQ(Family(s, "c_total"), nullptr) << v;
    ASSERT_NE(Family(s, "g"), nullptr) << v;
    EXPECT_EQ(r.skipped_by_category["bad value"], 1) << v << r.Summary();
  }
}

TEST(WindowDelta, CounterResetLikeIncrease) {
  ReadReport r;
  std::vector<MetricSnapshot> snaps = {
      Parse("# TYPE c counter\nc_total 10\n# TYPE h histogram\nh_bucket{le=\"1\"} "
            "5\nh_bucket{le=\"+Inf\"} 8\nh_sum 4\nh_count 8\n",
            r),
      Parse("# TYPE c counter\nc_total 15\n# TYPE h histogram\nh_bucket{le=\"1\"} "
            "6\nh_bucket{le=\"+Inf\"} 10\nh_sum 5\nh_count 10\n",
            r),
      // restart: both reset
      Parse("# TYPE c counter\nc_total 3\n# TYPE h histogram\nh_bucket{le=\"1\"} "
            "1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.5\nh_count 2\n",
            r)};
  auto d = WindowDelta(snaps, r);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(Family(*d, "c_total")->series[0].value, 5 + 3);
  const auto& h = Family(*d, "h")->series[0].histogram;
  EXPECT_EQ(h.count, 2 + 2);
  EXPECT_EQ(h.cumulative_counts[0], 1 + 1);
  EXPECT_DOUBLE_EQ(h.sum, 1 + 0.5);
  // Read as a restart, and said: if the scrapes were misordered the user can tell.
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("2 counter or histogram series decrease"), std::string::npos)
      << r.warnings[0];
  EXPECT_NE(r.warnings[0].find("counter resets"), std::string::npos) << r.warnings[0];
  EXPECT_FALSE(WindowDelta(std::span(snaps).first(1), r).ok());
}

// A replica that goes away mid-window: its counter and histogram keep their increase
// up to their last scrape, with a warning naming one; its gauge has no current value.
// One gone with no increase in the window (drained before it) is simply absent.
TEST(WindowDelta, SeriesThatVanishKeepTheirIncreaseWithAWarning) {
  ReadReport r;
  const std::string gauge = "# TYPE g gauge\ng{replica=\"a\"} 7\ng{replica=\"b\"} 9\n";
  std::vector<MetricSnapshot> snaps = {
      Parse("# TYPE c counter\nc_total{replica=\"a\"} 10\nc_total{replica=\"b\"} 100\n"
            "c_total{replica=\"c\"} 50\n" +  // drained before the window: no increase
                gauge,
            r),
      Parse("# TYPE c counter\nc_total{replica=\"a\"} 12\nc_total{replica=\"b\"} 130\n" + gauge, r),
      Parse("# TYPE c counter\nc_total{replica=\"a\"} 15\n# TYPE g gauge\ng{replica=\"a\"} 3\n",
            r)};
  snaps[0].timestamp_s = 0;
  snaps[1].timestamp_s = 15;
  snaps[2].timestamp_s = 30;
  ASSERT_TRUE(r.warnings.empty());
  auto d = WindowDelta(snaps, r);
  ASSERT_TRUE(d.ok());
  const MetricFamily* c = Family(*d, "c_total");
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->series.size(), 2u);
  EXPECT_EQ(c->series[0].labels, (Labels{{"replica", "a"}}));
  EXPECT_EQ(c->series[0].value, 5);
  EXPECT_EQ(c->series[1].labels, (Labels{{"replica", "b"}}));
  EXPECT_EQ(c->series[1].value, 30);  // vanished after t=15: not lost
  const MetricFamily* g = Family(*d, "g");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->series.size(), 1u);  // b's gauge has no value at the window's end
  EXPECT_EQ(g->series[0].value, 3);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("1 counter or histogram series vanish"), std::string::npos)
      << r.warnings[0];
  EXPECT_NE(r.warnings[0].find("replica=\"b\""), std::string::npos) << r.warnings[0];
  EXPECT_NE(r.warnings[0].find("t=15"), std::string::npos) << r.warnings[0];
}

TEST(SummarizeMetrics, FirstBucketIsFlagged) {
  ReadReport r;
  MetricSnapshot s = Parse(
      "# TYPE vllm:request_queue_time_seconds histogram\n"
      "vllm:request_queue_time_seconds_bucket{le=\"0.3\"} 100\n"
      "vllm:request_queue_time_seconds_bucket{le=\"0.5\"} 100\n"
      "vllm:request_queue_time_seconds_bucket{le=\"+Inf\"} 100\n"
      "vllm:request_queue_time_seconds_sum 2\n"
      "vllm:request_queue_time_seconds_count 100\n",
      r);
  auto g = SummarizeMetrics(s, {});
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->size(), 1u);
  const TermQuantiles& q = (*g)[0].stats.queue_s;
  ASSERT_TRUE(q.available());
  EXPECT_TRUE(q.buckets[2].in_first_bucket);
  EXPECT_EQ(q.buckets[2].upper_bound, 0.3);
  EXPECT_NE(q.note.find("_sum/_count"), std::string::npos);
  EXPECT_DOUBLE_EQ(q.mean, 0.02);
  EXPECT_FALSE((*g)[0].stats.ttft_s.available());  // no TTFT family: null, not a guess
}

#ifdef TTFT_SHARED_DATA_DIR
std::string RealScrape(const std::string& name) {
  return std::string(TTFT_SHARED_DATA_DIR) + "/real-telemetry/" + name;
}

TEST(RealTelemetry, EveryScrapeParses) {
  const std::string dir = std::string(TTFT_SHARED_DATA_DIR) + "/real-telemetry";
  if (!fs::exists(dir)) GTEST_SKIP() << "shared data absent: " << dir;
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".prom") continue;
    ++files;
    ReadReport r;
    auto s = ReadExpositionFile(e.path().string(), false, r);
    ASSERT_TRUE(s.ok()) << e.path();
    EXPECT_TRUE(FindCanonical(*s, CanonicalMetric::kTtft) != nullptr) << e.path();
    if (e.path().filename().string().starts_with("sglang_v0.4")) {
      // Line 1 is the `$ curl` command as published: the one explained complaint.
      ASSERT_EQ(r.records_skipped, 1) << r.Summary();
      EXPECT_EQ(r.issues[0].line, 1);
    } else {
      EXPECT_EQ(r.records_skipped, 0) << e.path() << r.Summary();
    }
    if (e.path().filename().string().starts_with("vllm_v0")) {
      // Published without a final newline: kept, with a warning that says why.
      ASSERT_EQ(r.warnings.size(), 1u);
      EXPECT_NE(r.warnings[0].find("no newline"), std::string::npos);
    } else {
      EXPECT_TRUE(r.warnings.empty()) << e.path() << r.Summary();
    }
  }
  EXPECT_EQ(files, 6);
}

TEST(RealTelemetry, PrePostWindowHas32Requests) {
  const std::string pre = RealScrape("vllm_v1_0.30.0_qwen2.5-0.5b_stormlog_q05c08_PRE.prom");
  if (!fs::exists(pre)) GTEST_SKIP() << "shared data absent: " << pre;
  ReadReport r;
  auto a = ReadExpositionFile(pre, true, r);
  auto b = ReadExpositionFile(RealScrape("vllm_v1_0.30.0_qwen2.5-0.5b_stormlog_q05c08_POST.prom"),
                              true, r);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<MetricSnapshot> snaps = {*a, *b};
  auto w = WindowDelta(snaps, r);
  ASSERT_TRUE(w.ok());
  const MetricFamily* ttft = FindCanonical(*w, CanonicalMetric::kTtft);
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->series[0].histogram.count, 32);
  EXPECT_NEAR(ttft->series[0].histogram.sum, 1.78, 0.01);
  double finished = 0;
  for (const auto& s : FindCanonical(*w, CanonicalMetric::kRequestsFinished)->series)
    finished += s.value;
  EXPECT_EQ(finished, 32);
  auto g = SummarizeMetrics(*w, {});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)[0].stats.requests, 32);
  EXPECT_EQ((*g)[0].stats.prefix_cache_hit_rate, 0.0);
  EXPECT_TRUE((*g)[0].stats.ttft_s.source == TermQuantiles::Source::kBuckets);
  EXPECT_GT((*g)[0].stats.ttft_s.buckets[2].upper_bound,
            (*g)[0].stats.ttft_s.buckets[2].lower_bound);
}
#endif

}  // namespace
}  // namespace ttft
