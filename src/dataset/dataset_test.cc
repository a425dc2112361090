// Tests of the inputs and windows module (ttft/dataset.h).
#include "ttft/dataset.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

namespace ttft {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test's temporary directory, private to this process:
// ctest runs each test in its own process, two at a time.
fs::path TempDir(const std::string& name) {
  const fs::path d =
      fs::path(testing::TempDir()) / ("ttft_dataset_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void Write(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

TEST(ParseTime, SecondsAndRfc3339) {
  EXPECT_DOUBLE_EQ(*ParseTime("1200"), 1200);
  EXPECT_DOUBLE_EQ(*ParseTime("1200.5"), 1200.5);
  EXPECT_DOUBLE_EQ(*ParseTime("1970-01-01T00:20:00Z"), 1200);
  EXPECT_DOUBLE_EQ(*ParseTime("2025-06-01T12:00:00Z"), 1748779200);
  EXPECT_DOUBLE_EQ(*ParseTime("2025-06-01T14:00:00.250+02:00"), 1748779200.25);
  EXPECT_DOUBLE_EQ(*ParseTime("2025-06-01t11:30:00-00:30"), 1748779200);
  EXPECT_DOUBLE_EQ(*ParseTime("2024-02-29 00:00:00Z"), 1709164800);  // a leap day
}

TEST(ParseTime, RejectsMalformedAndOutOfRange) {
  for (const char* bad :
       {"", "abc", "nan", "inf", "1e400", "2025-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
        "2025-06-01T24:00:00Z", "2025-06-01T12:00:00", "2025-06-01T12:00:00+25:00",
        "2025-06-01T12:00:00.Z", "2025-06-01T12:00:00Zjunk"}) {
    const auto t = ParseTime(bad);
    EXPECT_FALSE(t.ok()) << bad;
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(ParseTime, LongFractionIsNeitherACrashNorAnError) {
  // std::regex recursed per digit and std::stod threw on such text.
  const std::string t = "2025-06-01T12:00:00." + std::string(100000, '5') + "Z";
  const auto v = ParseTime(t);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_NEAR(*v, 1748779200.5555555, 1e-6);
  EXPECT_FALSE(ParseTime(std::string(100000, '9')).ok());  // 1e100000 is not finite
}

TEST(ParseTimeRange, SplitsAtTheColonThatLeavesTwoTimes) {
  auto r = ParseTimeRange("100:300", "--w");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->from_s, 100);
  EXPECT_EQ(r->to_s, 300);
  r = ParseTimeRange("1970-01-01T00:01:40Z:1970-01-01T00:05:00Z", "--w");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->from_s, 100);
  EXPECT_EQ(r->to_s, 300);
  const auto bad = ParseTimeRange("100", "--baseline-window");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--baseline-window"), std::string::npos);
  EXPECT_FALSE(ParseTimeRange("100:x", "--w").ok());
  for (const char* empty : {"300:100", "100:100"}) {
    const auto reversed = ParseTimeRange(empty, "--incident-window");
    ASSERT_FALSE(reversed.ok()) << empty;
    EXPECT_NE(reversed.status().message().find("--incident-window"), std::string::npos);
    EXPECT_NE(reversed.status().message().find("must be before TO"), std::string::npos);
  }
}

TEST(ReadEvents, JsonLinesArrayObjectAndOneLine) {
  const fs::path d = TempDir("events");
  Write(d / "a.jsonl",
        "{\"at_s\": 10, \"kind\": \"deploy\", \"target\": \"app\", \"detail\": \"v2\"}\n\n"
        "{\"time\": \"1970-01-01T00:00:20Z\", \"note\": \"flag\"}\n");
  auto e = ReadEvents((d / "a.jsonl").string());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->size(), 2u);
  EXPECT_EQ((*e)[0].kind, "deploy");
  EXPECT_EQ((*e)[1].at_s, 20);
  EXPECT_EQ((*e)[1].kind, "change");
  EXPECT_EQ((*e)[1].detail, "flag");
  Write(d / "b.json", "{\"events\": [{\"at_s\": 1}, {\"at_s\": 2}]}");
  EXPECT_EQ(ReadEvents((d / "b.json").string())->size(), 2u);
  // One event on one line: that event (it used to be ignored).
  Write(d / "c.jsonl", "{\"at_s\": 5, \"kind\": \"deploy\"}\n");
  e = ReadEvents((d / "c.jsonl").string());
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->size(), 1u);
  EXPECT_EQ((*e)[0].at_s, 5);
}

// Identical events are read once and said; a file without an event is said; a line
// that is not UTF-8 is an error saying so.
TEST(ParseEvents, RepeatsReadOnceEmptyFileSaidNonUtf8Named) {
  std::vector<std::string> w;
  const std::string line = R"({"at_s": 5, "kind": "deploy", "target": "app"})";
  auto e = ParseEvents(line + "\n" + R"({"at_s": 9, "kind": "flag"})" + "\n" + line + "\n",
                       "ev.jsonl", &w);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->size(), 2u);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], "1 repeated event read once (first: ev.jsonl:3: the same event as ev.jsonl:1)");
  w.clear();
  e = ParseEvents("\n", "none.jsonl", &w);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->empty());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], "none.jsonl: no events in the file");
  e = ParseEvents("{\"at_s\": 1, \"kind\": \"d\xff\"}\n", "u.jsonl", &w);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "u.jsonl:1: not valid UTF-8");
}

TEST(ReadEvents, BadEventsAreErrorsWithTheirPlace) {
  const fs::path d = TempDir("bad_events");
  Write(d / "a.jsonl", "{\"at_s\": 1}\n{\"kind\": \"deploy\"}\n");
  auto e = ReadEvents((d / "a.jsonl").string());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("a.jsonl:2"), std::string::npos) << e.status().message();
  Write(d / "b.json", "[{\"at_s\": 1}, {\"time\": \"yesterday\"}]");
  e = ReadEvents((d / "b.json").string());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("event 1"), std::string::npos) << e.status().message();
  Write(d / "c.jsonl", "{\"at_s\": 1}\nnot json\n");
  EXPECT_FALSE(ReadEvents((d / "c.jsonl").string()).ok());
  EXPECT_EQ(ReadEvents((d / "missing").string()).status().code(), StatusCode::kNotFound);
}

// Four spans at arrivals 10, 20, 30, 40 in ttft's JSONL.
std::string FourSpans() {
  std::string out;
  for (int i = 1; i <= 4; ++i) {
    out += "{\"request_id\":\"r" + std::to_string(i) +
           "\",\"arrival_s\":" + std::to_string(i * 10) +
           ",\"ttft_s\":0.5,\"queue_s\":0.1,\"prefill_s\":0.4,\"status\":\"ok\"}\n";
  }
  return out;
}

TEST(LoadInput, SimulateFolderBringsItsWindowsAndEvents) {
  const fs::path d = TempDir("folder");
  Write(d / "spans.jsonl", FourSpans());
  Write(d / "summary.json",
        "{\"change_at_s\": 25, \"events\": [{\"at_s\": 25, \"kind\": \"deploy_template\"}],"
        " \"symptoms\": {\"baseline\": {\"from_s\": 5, \"to_s\": 25},"
        " \"incident\": {\"from_s\": 25, \"to_s\": 45}}}");
  Dataset data;
  ASSERT_TRUE(LoadInput(d.string(), {}, data).ok());
  FinishLoading(data);
  EXPECT_TRUE(data.has_spans);
  EXPECT_EQ(data.spans.size(), 4u);
  ASSERT_EQ(data.annotations.size(), 1u);
  EXPECT_EQ(data.recorded_change_at_s, 25);
  EXPECT_EQ(data.first_s, 10);
  EXPECT_EQ(data.last_s, 40);
  const auto w = ChooseWindows({}, data);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->baseline.from_s, 5);
  EXPECT_EQ(w->incident.to_s, 45);
  EXPECT_EQ(data.sources, std::vector<std::string>{d.string()});
}

TEST(LoadInput, ScrapesTakeTheirTimeFromTheNameAndSortByTime) {
  const fs::path d = TempDir("scrapes");
  const std::string body = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n";
  Write(d / "t0000000030.000.prom", body);
  Write(d / "t0000000015.000.prom", body);
  Write(d / "untimed.prom", body);
  Dataset data;
  ASSERT_TRUE(LoadInput((d / "t0000000030.000.prom").string(), {}, data).ok());
  ASSERT_TRUE(LoadInput((d / "t0000000015.000.prom").string(), {}, data).ok());
  FinishLoading(data);
  ASSERT_EQ(data.snapshots.size(), 2u);
  EXPECT_EQ(data.snapshots[0].timestamp_s, 15);
  EXPECT_EQ(data.snapshots[1].timestamp_s, 30);
  EXPECT_FALSE(data.has_spans);
  EXPECT_EQ(data.first_s, 15);
  const Status st = LoadInput((d / "untimed.prom").string(), {}, data);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("untimed.prom"), std::string::npos);
  LoadOptions lenient;
  lenient.require_snapshot_times = false;
  EXPECT_TRUE(LoadInput((d / "untimed.prom").string(), lenient, data).ok());
}

// The same file by another path, or a copy of it, is read once and named; files of
// equal size but other bytes, and missing paths, are all kept.
TEST(DropRepeatedInputs, SameFileOrSameBytesReadOnceWithAWarning) {
  const fs::path d = TempDir("repeated");
  Write(d / "a.jsonl", "{\"request_id\":\"r1\"}\n");
  Write(d / "copy.jsonl", "{\"request_id\":\"r1\"}\n");
  Write(d / "other.jsonl", "{\"request_id\":\"r2\"}\n");  // same size, other bytes
  fs::create_directories(d / "sub");
  const std::vector<std::string> paths = {
      (d / "a.jsonl").string(),       (d / "sub" / ".." / "a.jsonl").string(),
      (d / "copy.jsonl").string(),    (d / "other.jsonl").string(),
      (d / "missing.jsonl").string(), "-"};
  ReadReport report;
  const std::vector<std::string> kept = DropRepeatedInputs(paths, report);
  EXPECT_EQ(kept, (std::vector<std::string>{paths[0], paths[3], paths[4], paths[5]}));
  ASSERT_EQ(report.warnings.size(), 2u);
  EXPECT_NE(report.warnings[0].find("the same file as " + paths[0]), std::string::npos)
      << report.warnings[0];
  EXPECT_NE(report.warnings[1].find("the same bytes as " + paths[0]), std::string::npos)
      << report.warnings[1];
  ReadReport one;
  EXPECT_EQ(DropRepeatedInputs(std::span(paths).first(1), one).size(), 1u);
  EXPECT_TRUE(one.warnings.empty());
}

// Scrapes given twice (the same file under two paths, or a spans file and its copy)
// count once in a loaded dataset.
TEST(LoadDataset, InputsGivenTwiceCountOnce) {
  const fs::path d = TempDir("twice");
  Write(d / "s.jsonl",
        "{\"request_id\":\"r1\",\"arrival_s\":1,\"queue_s\":0.1,\"prefill_s\":0.2,"
        "\"ttft_s\":0.3}\n");
  fs::copy_file(d / "s.jsonl", d / "s2.jsonl");
  const std::vector<std::string> paths = {(d / "s.jsonl").string(), (d / "s2.jsonl").string(),
                                          (d / "s.jsonl").string()};
  Dataset data;
  ASSERT_TRUE(LoadDataset(paths, {}, data).ok());
  EXPECT_EQ(data.spans.size(), 1u);
  EXPECT_EQ(data.report.warnings.size(), 2u);
}

// The Prometheus fields of a request are checked when files are read instead: a bad
// step or timeout is refused, and so is a selector (it would filter nothing).
TEST(ComputeStats, PrometheusFieldsAreCheckedWithFilesToo) {
  const fs::path d = TempDir("stats_prom_fields");
  Write(d / "s.jsonl",
        "{\"request_id\":\"r1\",\"arrival_s\":1,\"queue_s\":0.1,\"prefill_s\":0.2,"
        "\"ttft_s\":0.3}\n");
  const std::vector<std::string> paths = {(d / "s.jsonl").string()};
  StatsRequest ok;
  Result<StatsResult> r = ComputeStats(paths, ok);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->groups.size(), 1u);
  StatsRequest step = ok;
  step.step_s = INFINITY;
  EXPECT_NE(ComputeStats(paths, step).status().message().find("--step inf"), std::string::npos);
  StatsRequest timeout = ok;
  timeout.client.timeout_s = -1;
  EXPECT_NE(ComputeStats(paths, timeout).status().message().find("--timeout -1"),
            std::string::npos);
  StatsRequest selector = ok;
  selector.selector = "model_name=\"m\"";
  const Status s = ComputeStats(paths, selector).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("needs --prometheus"), std::string::npos) << s.ToString();
}

// Two exports that overlap (the same requests in two files, here one as JSONL and one
// as CSV): each repeated request counts once, and the repeat is reported with the file.
TEST(LoadDataset, RequestsRepeatedAcrossFilesCountOnce) {
  const fs::path d = TempDir("overlap");
  Write(d / "a.jsonl",
        "{\"request_id\":\"r1\",\"arrival_s\":1,\"queue_s\":0.1,\"prefill_s\":0.2,"
        "\"ttft_s\":0.3,\"tenant\":\"t\"}\n"
        "{\"request_id\":\"r2\",\"arrival_s\":2,\"queue_s\":0.1,\"prefill_s\":0.2,"
        "\"ttft_s\":0.3,\"tenant\":\"t\"}\n");
  Write(d / "b.csv",
        "request_id,arrival_s,queue_s,prefill_s,ttft_s,tenant\n"
        "r2,2,0.1,0.2,0.3,t\n"    // r2 again
        "r3,3,0.1,0.2,0.3,t\n"    // new
        "r4,3,0.1,0.2,0.3,t\n"    // equal to r3 in every column: within one file, kept
        "r5,3,0.1,0.2,0.3,u\n");  // another tenant: not a repeat
  Dataset data;
  const std::vector<std::string> paths = {(d / "a.jsonl").string(), (d / "b.csv").string()};
  ASSERT_TRUE(LoadDataset(paths, {}, data).ok());
  EXPECT_EQ(data.spans.size(), 5u);
  EXPECT_EQ(data.report.records_read, 5);
  EXPECT_EQ(data.report.skipped_by_category["duplicate request (in two files)"], 1);
  ASSERT_FALSE(data.report.issues.empty());
  EXPECT_EQ(data.report.issues.back().file, paths[1]);
  EXPECT_NE(data.report.issues.back().reason.find(paths[0]), std::string::npos);
  // No line is known after reading: the summary names the file without a ":0:".
  EXPECT_EQ(data.report.issues.back().line, 0);
  EXPECT_EQ(data.report.Summary().find(paths[1] + ":0:"), std::string::npos)
      << data.report.Summary();
  EXPECT_NE(data.report.Summary().find(paths[1] + ": request "), std::string::npos)
      << data.report.Summary();
}

// Scrapes with no time given newest first (a shell glob over names without times):
// ordered by their counters, with a warning, instead of reading the decrease as a
// restart. A true restart (no order makes every counter grow) keeps the order given.
TEST(LoadDataset, UntimedScrapesAreOrderedByTheirCounters) {
  const fs::path d = TempDir("untimed");
  auto scrape = [](int requests, double hist) {
    return fmt::format(
        "# TYPE vllm:request_success counter\nvllm:request_success_total {}\n"
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        "vllm:time_to_first_token_seconds_bucket{{le=\"1.0\"}} {}\n"
        "vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {}\n"
        "vllm:time_to_first_token_seconds_sum {}\nvllm:time_to_first_token_seconds_count {}\n",
        requests, hist, hist, hist / 4, hist);
  };
  Write(d / "b.prom", scrape(300, 300));
  Write(d / "a.prom", scrape(100, 100));
  LoadOptions lenient;
  lenient.require_snapshot_times = false;
  Dataset data;
  const std::vector<std::string> newest_first = {(d / "b.prom").string(), (d / "a.prom").string()};
  ASSERT_TRUE(LoadDataset(newest_first, lenient, data).ok());
  ASSERT_EQ(data.snapshots.size(), 2u);
  ASSERT_EQ(data.report.warnings.size(), 1u);
  EXPECT_NE(data.report.warnings[0].find("ordered by their counters"), std::string::npos)
      << data.report.warnings[0];
  ReadReport r;
  auto window = WindowDelta(data.snapshots, r);
  ASSERT_TRUE(window.ok());
  EXPECT_EQ(FindCanonical(*window, CanonicalMetric::kTtft)->series[0].histogram.count, 200);
  EXPECT_TRUE(r.warnings.empty());  // no reset read

  // A restart: the counter falls while the histogram grows; no order fits both.
  Write(d / "c.prom", scrape(50, 400));
  Dataset restart;
  const std::vector<std::string> given = {(d / "b.prom").string(), (d / "c.prom").string()};
  ASSERT_TRUE(LoadDataset(given, lenient, restart).ok());
  ASSERT_EQ(restart.report.warnings.size(), 1u);
  EXPECT_NE(restart.report.warnings[0].find("read in the order given"), std::string::npos)
      << restart.report.warnings[0];
}

// A simulate folder's metrics/ given alone: its scrapes, and the folder's recorded
// windows and events (so it diagnoses the same windows as the whole folder); a trailing
// slash is the same folder.
TEST(LoadInput, AFolderOfScrapesTakesItsSimulateFoldersWindows) {
  const fs::path d = TempDir("metrics_only");
  fs::create_directories(d / "metrics");
  const std::string body = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n";
  Write(d / "metrics" / "t0000000015.000.prom", body);
  Write(d / "metrics" / "t0000000030.000.prom", body);
  Write(d / "metrics" / "notes.txt", "not a scrape");
  Write(d / "summary.json",
        "{\"change_at_s\": 20, \"events\": [{\"at_s\": 20, \"kind\": \"drain_replica\"}],"
        " \"symptoms\": {\"baseline\": {\"from_s\": 10, \"to_s\": 20},"
        " \"incident\": {\"from_s\": 20, \"to_s\": 30}}}");
  for (const std::string& in : {(d / "metrics").string(), (d / "metrics").string() + "/"}) {
    Dataset data;
    ASSERT_TRUE(LoadInput(in, {}, data).ok()) << in;
    FinishLoading(data);
    EXPECT_FALSE(data.has_spans);
    ASSERT_EQ(data.snapshots.size(), 2u) << in;
    EXPECT_EQ(data.snapshots[0].timestamp_s, 15);
    ASSERT_EQ(data.annotations.size(), 1u) << in;
    EXPECT_EQ(data.recorded_change_at_s, 20) << in;
    const auto w = ChooseWindows({}, data);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ(w->baseline.from_s, 10);
    EXPECT_EQ(w->incident.to_s, 30);
  }
  // Without a summary.json beside it: the scrapes alone (no recorded windows).
  const fs::path bare = TempDir("bare") / "scrapes";  // its parent: no summary.json
  fs::create_directories(bare);
  Write(bare / "t0000000015.000.prom", body);
  Dataset data;
  ASSERT_TRUE(LoadInput(bare.string(), {}, data).ok());
  EXPECT_EQ(data.snapshots.size(), 1u);
  EXPECT_TRUE(std::isnan(data.recorded_change_at_s));
}

TEST(LoadInput, MissingPathsAndEmptyFolders) {
  Dataset data;
  EXPECT_EQ(LoadInput("/nonexistent/x.jsonl", {}, data).code(), StatusCode::kNotFound);
  const fs::path d = TempDir("empty");
  const Status st = LoadInput(d.string(), {}, data);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(data.sources.empty());
}

Dataset SpansFrom10To40() {
  const fs::path d = TempDir("windows");
  Write(d / "s.jsonl", FourSpans());
  Dataset data;
  EXPECT_TRUE(LoadDataset(std::vector<std::string>{(d / "s.jsonl").string()}, {}, data).ok());
  return data;
}

TEST(ChooseWindows, AroundTheChangeWidestSymmetricByDefault) {
  const Dataset data = SpansFrom10To40();
  WindowRequest want;
  want.change_at_s = 20;
  auto w = ChooseWindows(want, data);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->baseline.from_s, 10);  // min(20 - 10, 40 - 20) = 10 on each side
  EXPECT_EQ(w->baseline.to_s, 20);
  EXPECT_EQ(w->incident.from_s, 20);
  EXPECT_EQ(w->incident.to_s, 30);
  want.window_s = 100;  // clipped to the data: the last arrival stays inside
  w = ChooseWindows(want, data);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->baseline.from_s, 10);
  EXPECT_GT(w->incident.to_s, 40);
  EXPECT_LT(w->incident.to_s, 40.000001);
}

TEST(ChooseWindows, ErrorsSayWhatToGive) {
  const Dataset data = SpansFrom10To40();
  auto msg = [&](const WindowRequest& r) {
    auto w = ChooseWindows(r, data);
    EXPECT_FALSE(w.ok());
    return w.ok() ? std::string() : w.status().message();
  };
  EXPECT_NE(msg({}).find("--change-at"), std::string::npos);
  WindowRequest outside;
  outside.change_at_s = 99;
  EXPECT_NE(msg(outside).find("outside the data"), std::string::npos);
  WindowRequest one;
  one.baseline = TimeRange{10, 20};
  EXPECT_NE(msg(one).find("both"), std::string::npos);
  WindowRequest overlap;
  overlap.baseline = TimeRange{10, 25};
  overlap.incident = TimeRange{20, 40};
  EXPECT_NE(msg(overlap).find("overlap"), std::string::npos);
  WindowRequest unix_time;  // the data are in seconds of the run
  unix_time.baseline = TimeRange{1.7e9, 1.7e9 + 10};
  unix_time.incident = TimeRange{20, 40};
  EXPECT_NE(msg(unix_time).find("--baseline-window [2023-11-14T22:13:20Z, 22:13:30Z) is outside "
                                "the data, whose arrivals run from t=10 s to t=40 s"),
            std::string::npos)
      << msg(unix_time);
  WindowRequest before;  // ends where the first arrival is: [0, 10) holds none
  before.baseline = TimeRange{20, 40};
  before.incident = TimeRange{0, 10};
  EXPECT_NE(msg(before).find("--incident-window"), std::string::npos);
  WindowRequest reversed_order;  // either order is a comparison
  reversed_order.baseline = TimeRange{25, 41};
  reversed_order.incident = TimeRange{10, 25};
  EXPECT_TRUE(ChooseWindows(reversed_order, data).ok());
  for (double bad : {-5.0, std::nan(""), static_cast<double>(INFINITY)}) {
    WindowRequest r;
    r.change_at_s = 20;
    r.window_s = bad;
    EXPECT_NE(msg(r).find("--window"), std::string::npos) << bad;
  }
  Dataset empty;
  FinishLoading(empty);
  EXPECT_FALSE(ChooseWindows({}, empty).ok());
}

TEST(SnapshotsCovering, AddsTheStartingPointBeforeTheWindow) {
  std::vector<MetricSnapshot> all(4);
  for (int i = 0; i < 4; ++i) all[i].timestamp_s = 10.0 * i;  // 0, 10, 20, 30
  auto in = SnapshotsCovering(all, 15, 30);
  ASSERT_EQ(in.size(), 3u);
  EXPECT_EQ(in[0].timestamp_s, 10);
  EXPECT_EQ(in[2].timestamp_s, 30);
  in = SnapshotsCovering(all, 10, 20);  // one exactly at the start is the starting point
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].timestamp_s, 10);
}

}  // namespace
}  // namespace ttft
