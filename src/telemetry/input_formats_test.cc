// Tests for the input format registry (telemetry/input_formats.h): detection order,
// names, and the span readers' refusal of metric formats.
#include "telemetry/input_formats.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ttft/input.h"
#include "ttft/spans.h"

namespace ttft {
namespace {

TEST(InputFormats, DetectsEachFormat) {
  EXPECT_EQ(DetectFormat(R"({"request_id":"a","ttft_s":0.1})"), InputFormat::kSpanJsonl);
  EXPECT_EQ(DetectFormat("\xEF\xBB\xBF  \n[1]"), InputFormat::kSpanJsonl);  // BOM, space
  EXPECT_EQ(DetectFormat(R"({"resourceSpans":[]})"), InputFormat::kOtlp);
  EXPECT_EQ(DetectFormat(R"({"resource_spans":[]})"), InputFormat::kOtlp);
  EXPECT_EQ(DetectFormat(R"({"status":"success","data":{"resultType":"matrix"}})"),
            InputFormat::kPromQueryJson);
  EXPECT_EQ(DetectFormat(R"({"name":"llm_request","start_unix_ns":1})"), InputFormat::kSpanSink);
  EXPECT_EQ(DetectFormat("# HELP x y\n# TYPE x counter\nx 1\n"), InputFormat::kProm);
  EXPECT_EQ(DetectFormat("vllm:num_requests_running{a=\"b\"} 3\n"), InputFormat::kProm);
  EXPECT_EQ(DetectFormat("_x 3\n"), InputFormat::kProm);
  EXPECT_EQ(DetectFormat("request_id,ttft_s\na,0.1\n"), InputFormat::kCsv);
  EXPECT_EQ(DetectFormat(""), InputFormat::kSpanJsonl);  // nothing matches: span JSONL
  EXPECT_EQ(DetectFormat("12 34\n"), InputFormat::kSpanJsonl);
}

TEST(InputFormats, DetectionOrder) {
  // OTLP before prom-json and span-sink, which come before plain JSON.
  EXPECT_EQ(DetectFormat(R"({"resourceSpans":[],"resultType":1,"start_unix_ns":1})"),
            InputFormat::kOtlp);
  EXPECT_EQ(DetectFormat(R"({"resultType":1,"start_unix_ns":1})"), InputFormat::kPromQueryJson);
  // JSON keys count only near the start.
  EXPECT_EQ(DetectFormat("{" + std::string(5000, ' ') + R"("resourceSpans":[]})"),
            InputFormat::kSpanJsonl);
  // JSON wins over exposition comments; exposition comments win over a comma.
  EXPECT_EQ(DetectFormat("{\"a\":1}\n# TYPE x counter\n"), InputFormat::kSpanJsonl);
  EXPECT_EQ(DetectFormat("a,b 1\n# HELP x y\n"), InputFormat::kProm);
  // A sample-looking first line with a comma is CSV.
  EXPECT_EQ(DetectFormat("request_id,ttft s\n"), InputFormat::kCsv);
}

// Detection says what it chose when it guessed: nothing recognised (the span JSONL
// fallback), or content that contradicts the name; nothing when name and content agree.
TEST(InputFormats, DetectionSaysWhenItGuessed) {
  std::string note;
  EXPECT_EQ(DetectFormatOf("x.bin", "\x01\x02garbage", &note), InputFormat::kSpanJsonl);
  EXPECT_NE(note.find("x.bin: no input format recognised"), std::string::npos) << note;
  EXPECT_NE(note.find("--input-format"), std::string::npos) << note;
  EXPECT_EQ(DetectFormatOf("spans.csv", "{\"request_id\":\"a\"}\n", &note),
            InputFormat::kSpanJsonl);
  EXPECT_EQ(note, "spans.csv: the name says csv but the content reads as jsonl: read as jsonl");
  EXPECT_EQ(DetectFormatOf("spans.jsonl.gz", "{\"request_id\":\"a\"}\n", &note),
            InputFormat::kSpanJsonl);
  EXPECT_EQ(note, "");
  EXPECT_EQ(DetectFormatOf("t.csv", "request_id,ttft_s\na,0.1\n", &note), InputFormat::kCsv);
  EXPECT_EQ(note, "");
  EXPECT_EQ(DetectFormatOf("empty.jsonl", "", &note), InputFormat::kSpanJsonl);
  EXPECT_EQ(note, "");  // empty: nothing to guess about (reported as nothing usable)
  note = "stale";
  EXPECT_EQ(DetectFormatOf("a.prom", "request_id,ttft_s\n", &note), InputFormat::kProm);
  EXPECT_EQ(note, "");
}

TEST(InputFormats, NamesRoundTrip) {
  std::set<std::string_view> names;
  for (const internal::InputFormatRow& row : internal::InputFormats()) {
    EXPECT_EQ(ToString(row.format), row.name);
    EXPECT_EQ(ParseInputFormat(row.name), row.format);
    EXPECT_EQ(internal::FindInputFormat(row.format), &row);
    EXPECT_NE(row.detect, nullptr) << row.name;
    EXPECT_TRUE(names.insert(row.name).second) << "duplicate name " << row.name;
    EXPECT_FALSE(row.splittable && row.make_parser == nullptr) << row.name;
  }
  EXPECT_EQ(names.size(), 6u);
  EXPECT_EQ(ToString(InputFormat::kAuto), "auto");
  EXPECT_EQ(ParseInputFormat("auto"), InputFormat::kAuto);
  EXPECT_EQ(ParseInputFormat("JSONL"), std::nullopt);
  EXPECT_EQ(internal::FindInputFormat(InputFormat::kAuto), nullptr);
}

// The span readers take the formats with a parser and name the others.
TEST(InputFormats, SpanReadersRefuseMetricFormats) {
  class CountSink final : public SpanSink {
   public:
    void Add(const SpanRecord&) override { ++n; }
    int n = 0;
  };
  for (InputFormat f : {InputFormat::kProm, InputFormat::kPromQueryJson}) {
    SpanReadOptions o;
    o.format = f;
    CountSink sink;
    ReadReport report;
    Status st = ParseSpans("x 1\n", "m.prom", o, sink, report);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message(), "m.prom: holds " + std::string(ToString(f)) + " metrics, not spans");
  }
  CountSink sink;
  ReadReport report;
  EXPECT_TRUE(ParseSpans("# TYPE x counter\nx 1\n", "auto.prom", {}, sink, report)
                  .message()
                  .starts_with("auto.prom: holds prom metrics"));
  EXPECT_TRUE(ParseSpans("request_id,ttft_s\na,0.5\n", "s.csv", {}, sink, report).ok());
  EXPECT_EQ(sink.n, 1);
}

// A label that is not UTF-8 (a CSV cell; found by span_csv_fuzz) rejects its record with
// the line, in every reader, so no label reaches the JSON writers unreadable.
TEST(InputFormats, LabelsThatAreNotUtf8RejectTheRecord) {
  SpanTable table;
  ReadReport report;
  ASSERT_TRUE(
      ParseSpans("request_id,ttft_s,replica\na,0.5,r\xd6\nb,0.5,r2\n", "s.csv", {}, table, report)
          .ok());
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(report.skipped_by_category["invalid utf-8"], 1);
  ASSERT_EQ(report.issues.size(), 1u);
  EXPECT_EQ(report.issues[0].line, 2);
  EXPECT_EQ(report.issues[0].reason, "label replica is not valid UTF-8");
}

}  // namespace
}  // namespace ttft
