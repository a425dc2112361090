// ReadSpanTable (byte ranges parsed on several threads, then merged) against ReadSpans
// (one pass): the same table, label ids, report and status on files with bad lines,
// duplicates within and across ranges, blank and CRLF lines, escapes, and under strict.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ttft/spans.h"

namespace ttft {
namespace {

std::string Bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return std::to_string(u);
}

// Every row (by bits), every label set and the interning order, as text.
std::string Dump(const SpanTable& t) {
  std::string out = fmt::format("{} rows, {} label sets\n", t.size(), t.num_label_sets());
  for (uint32_t s = 0; s < t.num_label_sets(); ++s) {
    for (int l = 0; l < kNumSpanLabels; ++l) {
      out += std::string(t.label_of_set(s, static_cast<SpanLabel>(l))) + '|';
    }
    out += '\n';
  }
  for (size_t i = 0; i < t.size(); ++i) {
    const Span s = t.Get(i);
    for (double d : {s.arrival_s, s.queue_s, s.prefill_s, s.front_end_s, s.ttft_s, s.decode_s,
                     s.e2e_s, s.itl_mean_s, s.itl_max_s}) {
      out += Bits(d) + ',';
    }
    out += fmt::format("{},{},{},{},{},{}\n", s.prompt_tokens, s.cached_tokens, s.output_tokens,
                       s.preemptions, static_cast<int>(s.status), t.label_set()[i]);
  }
  return out;
}

std::string ReportDump(const ReadReport& r) {
  std::string out = fmt::format("{} read, {} skipped, {} ignored\n", r.records_read,
                                r.records_skipped, r.records_ignored);
  for (const auto& [k, n] : r.skipped_by_category) out += fmt::format("{}: {}\n", k, n);
  return out + r.Summary();
}

std::string SpanLine(int id, int replica, double ttft = 0.5) {
  return fmt::format(
      R"({{"request_id":"req-{}","arrival_s":{},"queue_s":0.01,"prefill_s":0.2,)"
      R"("front_end_s":0.003,"ttft_s":{},"decode_s":1.5,"e2e_s":2.0,"itl_mean_s":0.02,)"
      R"("itl_max_s":0.05,"prompt_tokens":{},"cached_tokens":16,"output_tokens":80,)"
      R"("preemptions":0,"status":"ok","replica":"r{}","region":"reg{}","tenant":"t{}",)"
      R"("model":"m","template":"tpl@v1","deploy":"d1"}})",
      id, 1000 + id * 0.37, ttft, 100 + id % 977, replica, replica % 3, id % 5);
}

class ParallelReadTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (std::filesystem::path(::testing::TempDir()) /
                              ("ttft_par_" + std::to_string(::getpid()) + "_" + name))
                                 .string();
    std::ofstream(path, std::ios::binary) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& p : paths_) std::remove(p.c_str());
  }

  // Reads `path` both ways with `threads` and compares everything.
  // Returns the status and report of the parallel read.
  std::pair<Status, ReadReport> ExpectSame(const std::string& path, SpanReadOptions options,
                                           int threads, const std::string& what) {
    SCOPED_TRACE(what + fmt::format(" threads {} strict {}", threads, options.strict));
    options.parallel_min_bytes = 0;
    SpanTable serial_table, parallel_table;
    ReadReport serial_report, parallel_report;
    // A table and report with content already (a second input of a command).
    for (SpanTable* t : {&serial_table, &parallel_table}) {
      SpanRecord pre;
      pre.ttft_s = 0.1;
      pre.labels = {"r7", "reg1", "t9", "m", "tpl@v0", "d0"};
      t->Add(pre);
    }
    serial_report.records_read = parallel_report.records_read = 1;
    const Status a = ReadSpans(path, options, serial_table, serial_report);
    options.threads = threads;
    const Status b = ReadSpanTable(path, options, parallel_table, parallel_report);
    EXPECT_EQ(a.code(), b.code());
    EXPECT_EQ(a.ToString(), b.ToString());
    EXPECT_EQ(ReportDump(serial_report), ReportDump(parallel_report));
    EXPECT_EQ(Dump(serial_table), Dump(parallel_table));
    // The tables keep interning alike after the read.
    for (SpanTable* t : {&serial_table, &parallel_table}) {
      SpanRecord post;
      post.ttft_s = 0.2;
      post.labels = {"r-new", "reg2", "t1", "m", "tpl@v1", "d1"};
      t->Add(post);
    }
    EXPECT_EQ(Dump(serial_table), Dump(parallel_table));
    return {b, parallel_report};
  }

  std::vector<std::string> paths_;
};

// Lines 0..n-1 with bad lines, blank and CRLF lines, escapes (the simdjson path),
// labels that first appear late, and duplicates near and far.
std::string MessyFile(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    const int replica = i < n / 2 ? i % 5 : i % 9;  // r5..r8 only in the second half
    if (i % 97 == 13) {
      text += "{\"request_id\": \"broken\", \"ttft_s\": \n";  // malformed
    } else if (i % 89 == 7) {
      text += "\n";  // blank
    } else if (i % 83 == 5) {
      text += SpanLine(i, replica, -1.0) + "\n";  // negative duration
    } else if (i % 61 == 3) {
      text += SpanLine(i / 2, replica) + "\n";  // a duplicate of an earlier id (or not yet)
    } else if (i % 71 == 11) {
      text += SpanLine(n - i, replica) + "\n";  // an id a later line repeats
    } else if (i % 53 == 1) {
      std::string line = SpanLine(i, replica);
      line.replace(line.find("\"tenant\":\"t"), 11, "\"tenant\":\"t\\u0041");  // escape
      text += line + "\r\n";
    } else {
      text += SpanLine(i, replica) + "\n";
    }
  }
  text += SpanLine(n + 1, 2).substr(0, 40);  // a last line cut short
  return text;
}

TEST_F(ParallelReadTest, SameAsSequentialOnMessyFile) {
  const std::string path = Write("messy.jsonl", MessyFile(6000));
  for (int threads : {2, 3, 4, 7}) {
    SpanReadOptions o;
    o.chunk_bytes = 4096;
    const auto [st, report] = ExpectSame(path, o, threads, "messy");
    EXPECT_TRUE(st.ok());
    EXPECT_GT(report.skipped_by_category.at("duplicate request_id"), 50);
    EXPECT_GT(report.skipped_by_category.at("malformed json"), 50);
    EXPECT_EQ(report.skipped_by_category.at("truncated record"), 1);
    o.chunk_bytes = 1 << 20;
    ExpectSame(path, o, threads, "messy, big chunks");
  }
}

TEST_F(ParallelReadTest, SameAsSequentialWhenTheFileIsTwice) {
  // Every line of the second half repeats one of the first: more than kMaxIssues
  // duplicates across ranges.
  std::string once;
  for (int i = 0; i < 3000; ++i) once += SpanLine(i, i % 4) + "\n";
  const std::string path = Write("twice.jsonl", once + once);
  for (int threads : {2, 3}) {
    EXPECT_EQ(ExpectSame(path, {}, threads, "twice").second.records_skipped, 3000);
    SpanReadOptions no_dups;
    no_dups.detect_duplicates = false;
    ExpectSame(path, no_dups, threads, "twice, no duplicate detection");
  }
}

TEST_F(ParallelReadTest, SameAsSequentialUnderStrict) {
  std::string clean;
  for (int i = 0; i < 4000; ++i) clean += SpanLine(i, i % 4) + "\n";
  const size_t half = clean.size() / 2;
  const size_t late = clean.find('\n', half + half / 2) + 1;
  const size_t mid = clean.find('\n', half + half / 4) + 1;
  SpanReadOptions strict;
  strict.strict = true;
  // No error at all.
  ExpectSame(Write("strict_clean.jsonl", clean), strict, 2, "clean");
  // A malformed line in the second range.
  std::string bad = clean;
  bad.insert(late, "{nope\n");
  EXPECT_EQ(ExpectSame(Write("strict_bad.jsonl", bad), strict, 2, "malformed late").first.code(),
            StatusCode::kDataError);
  // A duplicate of a first-range id before it in the second range: the duplicate wins.
  std::string dup = bad;
  dup.insert(mid, SpanLine(5, 1) + "\n");
  EXPECT_NE(ExpectSame(Write("strict_dup.jsonl", dup), strict, 2, "duplicate before malformed")
                .first.ToString()
                .find("duplicate request_id 'req-5'"),
            std::string::npos);
  // A malformed line in the first range and one in the second.
  std::string both = dup;
  both.insert(clean.find('\n', 1000) + 1, "{nope\n");
  ExpectSame(Write("strict_both.jsonl", both), strict, 2, "malformed early");
  for (int threads : {3, 5}) ExpectSame(Write("strict_dup3.jsonl", dup), strict, threads, "dup");
}

TEST_F(ParallelReadTest, SameAsSequentialForTheMillisecondsWarning) {
  std::string text;
  // ttft in ms in most lines; the duplicates across ranges must not count.
  for (int i = 0; i < 3000; ++i) text += SpanLine(i, i % 4, i % 3 == 0 ? 0.5 : 31.0) + "\n";
  for (int i = 0; i < 800; ++i) text += SpanLine(i, i % 4, i % 3 == 0 ? 0.5 : 31.0) + "\n";
  const std::string path = Write("ms.jsonl", text);
  EXPECT_EQ(ExpectSame(path, {}, 2, "ms").second.warnings.size(), 1u);
  SpanReadOptions strict;
  strict.strict = true;
  std::string ms;
  for (int i = 0; i < 3000; ++i) ms += SpanLine(i, i % 4, 31.0) + "\n";
  ExpectSame(Write("ms_strict.jsonl", ms), strict, 2, "ms strict");
}

// Duplicates are checked after the parse (the ranges' sorted id hashes; more than
// 65,536 per range takes the bucketed sort) and a file that has any is read again the
// exact way: a clean file, and files with one duplicate far apart, within a range and
// across ranges, all read as sequentially.
TEST_F(ParallelReadTest, SameAsSequentialOnLargeFilesWithOneDuplicateOrNone) {
  constexpr int kLines = 140000;
  std::vector<std::string> lines;
  lines.reserve(kLines);
  for (int i = 0; i < kLines; ++i) lines.push_back(SpanLine(i, i % 6) + "\n");
  auto file = [&](int dup_at, int dup_of) {
    std::string text;
    for (int i = 0; i < kLines; ++i) text += i == dup_at ? SpanLine(dup_of, 1) + "\n" : lines[i];
    return text;
  };
  const auto [st, report] = ExpectSame(Write("large_clean.jsonl", file(-1, 0)), {}, 2, "clean");
  EXPECT_EQ(report.records_read, kLines + 1);  // + the row the fixture adds
  EXPECT_EQ(report.records_skipped, 0);
  const auto within = ExpectSame(Write("large_dup_within.jsonl", file(kLines - 3, kLines - 9000)),
                                 {}, 2, "duplicate within the second range");
  EXPECT_EQ(within.second.skipped_by_category.at("duplicate request_id"), 1);
  const auto across = ExpectSame(Write("large_dup_across.jsonl", file(kLines - 2, 4)), {}, 2,
                                 "duplicate across ranges");
  EXPECT_EQ(across.second.skipped_by_category.at("duplicate request_id"), 1);
  const auto first = ExpectSame(Write("large_dup_first.jsonl", file(kLines / 3, 17)), {}, 3,
                                "duplicate within the first range, three threads");
  EXPECT_EQ(first.second.skipped_by_category.at("duplicate request_id"), 1);
}

TEST_F(ParallelReadTest, OtherInputsGoToReadSpans) {
  std::string csv = "request_id,ttft_s,arrival_s\n";
  for (int i = 0; i < 2000; ++i) csv += fmt::format("c{},0.5,{}\n", i, i);
  ExpectSame(Write("spans.csv", csv), {}, 2, "csv");
  ExpectSame(Write("tiny.jsonl", SpanLine(1, 1) + "\n"), {}, 2, "tiny");
  SpanTable t;
  ReadReport r;
  SpanReadOptions o;
  o.threads = 2;
  EXPECT_EQ(ReadSpanTable("/nonexistent/x.jsonl", o, t, r).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ttft
