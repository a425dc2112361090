// DiagnosisInputOf (ttft/diagnose.h) on two inputs of one scrape each: `curl /metrics`
// before and after, read by the process start both carry.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ttft/diagnose.h"

namespace ttft {
namespace {

using ::testing::HasSubstr;

// A vLLM scrape at `at_s` of a process started at `start_s` (NaN: no
// process_start_time_seconds) that has served `fast` requests under 0.1 s TTFT and
// `slow` ones between 1 and 10 s.
MetricSnapshot Scrape(double at_s, double start_s, double fast, double slow) {
  MetricSnapshot s;
  s.timestamp_s = at_s;
  MetricFamily ttft;
  ttft.name = "vllm:time_to_first_token_seconds";
  ttft.type = MetricType::kHistogram;
  MetricSeries h;
  h.labels = {{"model_name", "m"}};
  h.histogram.upper_bounds = {0.1, 1, 10};
  h.histogram.cumulative_counts = {fast, fast, fast + slow};
  h.histogram.count = fast + slow;
  h.histogram.sum = 0.05 * fast + 5 * slow;
  ttft.series.push_back(h);
  s.families.push_back(ttft);
  if (!std::isnan(start_s)) {
    MetricFamily start;
    start.name = "process_start_time_seconds";
    start.type = MetricType::kGauge;
    MetricSeries g;
    g.value = start_s;
    start.series.push_back(g);
    s.families.push_back(start);
  }
  return s;
}

Dataset OneScrape(const std::string& name, MetricSnapshot scrape) {
  Dataset d;
  d.snapshots.push_back(std::move(scrape));
  d.sources.push_back(name);
  d.first_s = d.last_s = d.snapshots.front().timestamp_s;
  return d;
}

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += s + "\n";
  return out;
}

// The same process: the baseline is its totals since it started, the incident the
// increase between the scrapes (here every new request is slow).
TEST(DiagnosisInputOf, OneScrapeEachOfOneProcessIsTotalsThenTheIncrease) {
  const Dataset before = OneScrape("before.prom", Scrape(1000, 400, 2000, 10));
  const Dataset after = OneScrape("after.prom", Scrape(1600, 400, 2000, 510));
  Result<DiagnosisInput> in = DiagnosisInputOf(before, after);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->baseline.from_s, 400);
  EXPECT_EQ(in->baseline.to_s, 1000);
  EXPECT_EQ(in->incident.from_s, 1000);
  EXPECT_EQ(in->incident.to_s, 1600);
  Result<DiagnosisReport> r = Diagnose(*in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->baseline.requests, 2010);
  EXPECT_EQ(r->incident.requests, 500);
  EXPECT_TRUE(std::isnan(r->baseline.request_rate_rps));  // totals: no rate
  EXPECT_NEAR(r->incident.request_rate_rps, 500.0 / 600, 1e-9);
  EXPECT_GT(r->incident.ttft_s.p99, 1);
  EXPECT_LT(r->baseline.ttft_s.p99, 10);
  const std::string notes = Joined(r->fidelity_notes);
  EXPECT_THAT(notes, HasSubstr("the baseline is before.prom's totals since its process started "
                               "(600 s before the scrape), with no request rate"));
  EXPECT_THAT(notes, HasSubstr("the incident is the increase from the baseline's scrape to "
                               "after.prom's (600 s later; the same process start)"));
}

// A restart between the scrapes (a deploy): the incident is the new process's totals,
// not the difference from the old one's counters.
TEST(DiagnosisInputOf, ARestartBetweenTheScrapesMakesTheIncidentItsOwnTotals) {
  const Dataset before = OneScrape("before.prom", Scrape(1000, 400, 2000, 10));
  // Bigger than the baseline's counters, so WindowDelta alone would see no reset.
  const Dataset after = OneScrape("after.prom", Scrape(1600, 1100, 2500, 300));
  Result<DiagnosisInput> in = DiagnosisInputOf(before, after);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->incident.from_s, 1100);
  Result<DiagnosisReport> r = Diagnose(*in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->incident.requests, 2800);
  EXPECT_TRUE(std::isnan(r->incident.request_rate_rps));
  EXPECT_THAT(Joined(r->fidelity_notes),
              HasSubstr("after.prom's process started after the baseline's scrape (a restart"));
}

TEST(DiagnosisInputOf, OneScrapeEachThatCannotBeReadIsAnErrorNamingTheFile) {
  const Dataset before = OneScrape("before.prom", Scrape(1000, 400, 2000, 10));
  struct Case {
    MetricSnapshot after;
    const char* names;
  } cases[] = {
      {Scrape(1600, NAN, 2000, 510),
       "after.prom: one scrape in each window, and this one has no (finite) "
       "process_start_time_seconds"},
      {Scrape(900, 400, 2000, 510),
       "after.prom: its scrape (t=900.000 s) is not after the "
       "baseline's (before.prom, t=1000.000 s)"},
      {Scrape(1600, 1700, 2000, 510),
       "after.prom: process_start_time_seconds 1700.000 is after "
       "the scrape"},
      {Scrape(1600, -1e308, 2000, 510),
       "after.prom: process_start_time_seconds -1e+308 is "
       "negative"},
      // Another process, started before the baseline's scrape: not a restart.
      {Scrape(1600, 300, 2000, 510), "after.prom: its process starts differ from the baseline's"},
  };
  for (const Case& c : cases) {
    Result<DiagnosisInput> in = DiagnosisInputOf(before, OneScrape("after.prom", c.after));
    ASSERT_FALSE(in.ok()) << c.names;
    EXPECT_EQ(in.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(in.status().message(), HasSubstr(c.names));
  }
  // Two scrapes in a window are read as before: each window is its input's range.
  Dataset two = OneScrape("b2.prom", Scrape(900, 400, 1900, 10));
  two.snapshots.push_back(Scrape(1000, 400, 2000, 10));
  two.last_s = 1000;
  Result<DiagnosisInput> in =
      DiagnosisInputOf(two, OneScrape("after.prom", Scrape(1600, 400, 2000, 510)));
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->baseline_snapshots.size(), 2u);
  EXPECT_TRUE(in->notes.empty());
}

}  // namespace
}  // namespace ttft
