// Tests for the span readers (ttft/spans.h).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ttft/spans.h"

namespace ttft {
namespace {

namespace fs = std::filesystem;

Span MakeSpan(int i) {
  Span s;
  s.request_id = "r" + std::to_string(i);
  s.arrival_s = 100 + i * 0.5;
  s.queue_s = 0.01 * (i % 7);
  s.prefill_s = 0.05;
  s.front_end_s = 0.002;
  s.ttft_s = s.front_end_s + s.queue_s + s.prefill_s;
  s.decode_s = 1.0;
  s.e2e_s = s.ttft_s + s.decode_s;
  s.itl_mean_s = 0.02;
  s.itl_max_s = 0.05;
  s.prompt_tokens = 1000 + i;
  s.cached_tokens = 500;
  s.output_tokens = 51;
  s.preemptions = i % 2;
  s.replica = i % 2 ? "r-1" : "r-0";
  s.region = "eu";
  s.tenant = "t\"x";
  s.model = "llama";
  s.template_version = "v2";
  s.deploy = "d1";
  return s;
}

std::string Jsonl(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    AppendSpanJson(MakeSpan(i), out);
    out += '\n';
  }
  return out;
}

std::string TempPath(const std::string& name) {
  return (fs::temp_directory_path() / ("ttft_tel_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(SpanJsonl, RoundTripsTheWriter) {
  SpanTable t;
  ReadReport r;
  ASSERT_TRUE(ParseSpans(Jsonl(50), "mem", {}, t, r).ok());
  ASSERT_EQ(t.size(), 50u);
  EXPECT_EQ(r.records_skipped, 0);
  const Span a = MakeSpan(7);
  const Span b = t.Get(7);
  EXPECT_DOUBLE_EQ(b.arrival_s, a.arrival_s);
  EXPECT_FLOAT_EQ(static_cast<float>(b.ttft_s), static_cast<float>(a.ttft_s));
  EXPECT_EQ(b.prompt_tokens, a.prompt_tokens);
  EXPECT_EQ(b.replica, "r-1");
  EXPECT_EQ(b.tenant, "t\"x");
  EXPECT_EQ(b.template_version, "v2");
  EXPECT_EQ(t.num_label_sets(), 2u);
  EXPECT_LE(t.bytes_per_span(), 64.0 + 40);  // small tables carry interning overhead
}

TEST(SpanJsonl, BadRecordsAreReportedWithLineAndReason) {
  std::string in = Jsonl(3);
  in += "{\"request_id\":\"neg\",\"arrival_s\":1,\"ttft_s\":-0.5}\n";              // 4
  in += "{\"request_id\":\"skew\",\"arrival_s\":1,\"queue_s\":2,\"ttft_s\":1}\n";  // 5
  in += "{\"request_id\":\"ms\",\"arrival_s\":1,\"ttft_s\":250000}\n";             // 6
  in += "{\"request_id\":\"nan\",\"arrival_s\":1,\"ttft_s\":NaN}\n";               // 7
  in += "{\"request_id\":\"nostr\",\"arrival_s\":1,\"ttft_s\":\"NaN\"}\n";         // 8
  in += "{\"request_id\":\"miss\",\"arrival_s\":1}\n";                             // 9
  in += "{\"request_id\":\"r1\",\"arrival_s\":1,\"ttft_s\":0.1}\n";                // 10 duplicate
  in += "\n";                                                                      // 11 blank
  in += "{\"request_id\":\"cut\",\"arrival_s\":1,\"tt";                            // 12 truncated
  SpanTable t;
  ReadReport r;
  ASSERT_TRUE(ParseSpans(in, "f.jsonl", {}, t, r).ok());
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(r.records_skipped, 8);
  ASSERT_EQ(r.issues.size(), 8u);
  EXPECT_EQ(r.issues[0].line, 4);
  EXPECT_NE(r.issues[0].reason.find("negative duration"), std::string::npos);
  EXPECT_NE(r.issues[1].reason.find("clock skew"), std::string::npos);
  EXPECT_NE(r.issues[2].reason.find("milliseconds"), std::string::npos);
  EXPECT_NE(r.issues[3].reason.find("NaN"), std::string::npos);
  EXPECT_NE(r.issues[4].reason.find("NaN"), std::string::npos);
  EXPECT_NE(r.issues[5].reason.find("missing field ttft_s"), std::string::npos);
  EXPECT_NE(r.issues[6].reason.find("duplicate request_id"), std::string::npos);
  EXPECT_EQ(r.issues[7].line, 12);
  EXPECT_NE(r.issues[7].reason.find("truncated"), std::string::npos);
  EXPECT_NE(r.Summary().find("f.jsonl:12:"), std::string::npos);
}

TEST(SpanJsonl, StrictStopsWithDataError) {
  std::string in = Jsonl(2) + "{\"request_id\":\"x\",\"ttft_s\":-1}\n" + Jsonl(1);
  SpanTable t;
  ReadReport r;
  SpanReadOptions o;
  o.strict = true;
  Status st = ParseSpans(in, "s.jsonl", o, t, r);
  EXPECT_EQ(st.code(), StatusCode::kDataError);
  EXPECT_EQ(ExitCodeFor(st), 65);
  EXPECT_NE(st.message().find("s.jsonl:3:"), std::string::npos);
}

TEST(SpanJsonl, NullIsMissingAndMillisecondFilesWarn) {
  Span s = MakeSpan(1);
  s.itl_mean_s = std::nan("");
  std::string in;
  AppendSpanJson(s, in);
  SpanTable t;
  ReadReport r;
  ASSERT_TRUE(ParseSpans(in, "m", {}, t, r).ok());  // no trailing newline: still fine
  ASSERT_EQ(t.size(), 1u);
  EXPECT_TRUE(std::isnan(t.itl_mean_s()[0]));
  std::string ms;
  for (int i = 0; i < 5; ++i)
    ms += "{\"request_id\":\"" + std::to_string(i) + "\",\"ttft_s\":120}\n";
  ReadReport r2;
  SpanTable t2;
  ASSERT_TRUE(ParseSpans(ms, "ms", {}, t2, r2).ok());
  ASSERT_EQ(r2.warnings.size(), 1u);
  EXPECT_NE(r2.warnings[0].find("milliseconds"), std::string::npos);
}

TEST(SpanJsonl, ColumnMapRenamesAndScales) {
  auto map = ColumnMap::Parse("ttft_s=ttft_ms:ms,request_id=id,replica=pod");
  ASSERT_TRUE(map.ok());
  SpanReadOptions o;
  o.columns = *map;
  SpanTable t;
  ReadReport r;
  ASSERT_TRUE(ParseSpans("{\"id\":\"a\",\"ttft_ms\":250,\"pod\":\"p1\"}\n", "c", o, t, r).ok());
  ASSERT_EQ(t.size(), 1u);
  EXPECT_FLOAT_EQ(t.ttft_s()[0], 0.25f);
  EXPECT_EQ(t.label(0, SpanLabel::kReplica), "p1");
  EXPECT_FALSE(ColumnMap::Parse("ttft_s=x:hours").ok());
  EXPECT_FALSE(ColumnMap::Parse("nope=x").ok());
  // A record without the mapped field names that field, not the span key.
  SpanTable t3;
  ReadReport r3;
  ASSERT_TRUE(ParseSpans("{\"id\":\"b\",\"ttft_s\":0.5}\n", "c", o, t3, r3).ok());
  ASSERT_EQ(r3.issues.size(), 1u);
  EXPECT_EQ(r3.issues[0].reason, "missing field ttft_ms (ttft_s by --columns)");
}

// One input field feeds one span field (a reader looks each key up once): a map that
// would feed two, or read a field that keeps its own meaning, is an error; before, the
// second mapping silently read nothing ("missing field ttft_s" for every record).
TEST(SpanJsonl, ColumnMapsThatCannotBeReadAreErrors) {
  auto error_of = [](std::string_view spec) {
    auto m = ColumnMap::Parse(spec);
    return m.ok() ? std::string("ok") : m.status().message();
  };
  EXPECT_EQ(error_of("ttft_s=a,ttft_s=b"), "--columns: ttft_s is mapped twice");
  EXPECT_EQ(error_of("ttft_s=x,queue_s=x"),
            "--columns: ttft_s and queue_s both read 'x': one input field feeds one span field");
  EXPECT_EQ(error_of("ttft_s=arrival_s")
                .rfind("--columns: ttft_s=arrival_s: 'arrival_s' is read "
                       "as the span field of that name",
                       0),
            0u);
  EXPECT_EQ(error_of("ttft_s=:ms"), "--columns: 'ttft_s=:ms': expected TARGET=SOURCE[:UNIT]");
  EXPECT_EQ(error_of("ttft_s=e2e_s,e2e_s=ttft_s"), "ok");  // a swap reads both
  SpanReadOptions o;
  o.columns = *ColumnMap::Parse("ttft_s=e2e_s,e2e_s=ttft_s");
  SpanTable t;
  ReadReport r;
  ASSERT_TRUE(ParseSpans("{\"ttft_s\":2.0,\"e2e_s\":0.5}\n", "c", o, t, r).ok());
  ASSERT_EQ(t.size(), 1u);
  EXPECT_FLOAT_EQ(t.ttft_s()[0], 0.5f);
}

TEST(SpanCsv, HeaderColumnsQuotesAndErrors) {
  const std::string csv =
      "request_id,ttft_s,queue_s,prompt_tokens,replica\n"
      "a,0.5,0.1,100,\"r,1\"\n"
      "b,0.7,,200,r2\n"
      "c,oops,0.1,1,r2\n"
      "d,0.2,0.1\n"
      "e,nan,0.1,1,r2\n";
  SpanTable t;
  ReadReport r;
  ASSERT_TRUE(ParseSpans(csv, "x.csv", {}, t, r).ok());
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.label(0, SpanLabel::kReplica), "r,1");
  EXPECT_TRUE(std::isnan(t.queue_s()[1]));
  EXPECT_EQ(r.records_skipped, 3);
  EXPECT_EQ(r.issues[0].line, 4);
}

TEST(SpanFiles, GzipAndChunkBoundaries) {
  const std::string data = Jsonl(2000);
  const std::string path = TempPath("spans.jsonl.gz");
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, data.data(), static_cast<unsigned>(data.size())),
            static_cast<int>(data.size()));
  gzclose(gz);
  SpanReadOptions o;
  o.chunk_bytes = 4096;  // many chunks, lines cut across them
  SpanTable t;
  ReadReport r;
  ASSERT_TRUE(ReadSpans(path, o, t, r).ok()) << r.Summary();
  EXPECT_EQ(t.size(), 2000u);
  EXPECT_EQ(r.records_skipped, 0);
  // Truncated gzip is an I/O error, not a crash.
  {
    std::ifstream f(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), {});
    std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  SpanTable t2;
  ReadReport r2;
  EXPECT_FALSE(ReadSpans(path, o, t2, r2).ok());
  fs::remove(path);
  EXPECT_EQ(ReadSpans("/nonexistent/x.jsonl", o, t2, r2).code(), StatusCode::kNotFound);
}

TEST(Otlp, VllmLlmRequestWithStringInts) {
  const std::string line =
      R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"vllm"}},)"
      R"({"key":"host.name","value":{"stringValue":"h1"}},{"key":"k8s.pod.name","value":{"stringValue":"pod-7"}},)"
      R"({"key":"cloud.region","value":{"stringValue":"us-east-1"}}]},)"
      R"("instrumentationLibrarySpans":[{"spans":[{"traceId":"AB","spanId":"CD","name":"llm_request","kind":"SPAN_KIND_SERVER",)"
      R"("startTimeUnixNano":"1712000000123456789","endTimeUnixNano":1712000001000000000,"attributes":[)"
      R"({"key":"gen_ai.latency.time_to_first_token","value":{"doubleValue":0.184}},)"
      R"({"key":"gen_ai.latency.time_in_queue","value":{"doubleValue":"0.05"}},)"
      R"({"key":"gen_ai.latency.time_in_model_prefill","value":{"doubleValue":0.1}},)"
      R"({"key":"gen_ai.latency.time_in_model_decode","value":{"doubleValue":1.0}},)"
      R"({"key":"gen_ai.usage.input_tokens","value":{"intValue":"1532"}},)"
      R"({"key":"gen_ai.usage.cache_read.input_tokens","value":{"intValue":512}},)"
      R"({"key":"gen_ai.usage.completion_tokens","value":{"intValue":"101"}},)"
      R"({"key":"gen_ai.request.id","value":{"stringValue":"cmpl-1"}},)"
      R"({"key":"unknown.thing","value":{"arrayValue":{"values":[]}}}]},)"
      R"({"name":"other","startTimeUnixNano":"1","attributes":[]}]}]}]})"
      "\n";
  SpanTable t;
  ReadReport r;
  ASSERT_TRUE(ParseSpans(line, "o.jsonl", {}, t, r).ok()) << r.Summary();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(r.records_ignored, 1);
  const Span s = t.Get(0);
  EXPECT_NEAR(s.arrival_s, 1712000000.123456789, 1e-6);
  EXPECT_FLOAT_EQ(static_cast<float>(s.ttft_s), 0.184f);
  EXPECT_FLOAT_EQ(static_cast<float>(s.queue_s), 0.05f);
  EXPECT_EQ(s.prompt_tokens, 1532);
  EXPECT_EQ(s.cached_tokens, 512);
  EXPECT_EQ(s.replica, "pod-7");  // k8s.pod.name beats host.name
  EXPECT_EQ(s.region, "us-east-1");
  EXPECT_NEAR(s.itl_mean_s, 1.0 / 100, 1e-7);
  // NaN as a string (the Collector's writer) is a bad record.
  std::string nan_line = line;
  nan_line.replace(nan_line.find("0.184"), 5, "\"NaN\"");
  SpanTable t2;
  ReadReport r2;
  ASSERT_TRUE(ParseSpans(nan_line, "o2", {}, t2, r2).ok());
  EXPECT_EQ(t2.size(), 0u);
  EXPECT_EQ(r2.records_skipped, 1);
}

#ifdef TTFT_SHARED_DATA_DIR
std::string RealTelemetryFile(const std::string& name) {
  return std::string(TTFT_SHARED_DATA_DIR) + "/real-telemetry/" + name;
}
#define SKIP_WITHOUT(path) \
  if (!fs::exists(path)) GTEST_SKIP() << "shared data absent: " << path << " (../shared/data)"

TEST(RealTelemetry, VllmSpansFromStormlogSink) {
  const std::string p = RealTelemetryFile("vllm_0.30.0_llm_request_spans_stormlog-sink.jsonl");
  SKIP_WITHOUT(p);
  SpanTable t;
  ReadReport r;
  ASSERT_TRUE(ReadSpans(p, {}, t, r).ok()) << r.Summary();
  EXPECT_EQ(t.size(), 12u);
  EXPECT_EQ(r.records_ignored, 4);
  EXPECT_EQ(r.records_skipped, 0) << r.Summary();
  EXPECT_FLOAT_EQ(t.ttft_s()[0], 0.04058551788330078f);
  EXPECT_EQ(t.prompt_tokens()[0], 512);
  EXPECT_EQ(t.cached_tokens()[0], -1);  // not in the capture: unknown, not 0
}

TEST(RealTelemetry, OtlpExamplesParseCleanly) {
  for (const char* name : {"otlp_json_shape_proto_examples_trace.json",
                           "otlp_jsonl_shape_spec_file_exporter_traces.jsonl"}) {
    const std::string p = RealTelemetryFile(name);
    SKIP_WITHOUT(p);
    SpanTable t;
    ReadReport r;
    ASSERT_TRUE(ReadSpans(p, {}, t, r).ok()) << name << r.Summary();
    EXPECT_EQ(r.records_skipped, 0) << name << r.Summary();
    EXPECT_EQ(t.size(), 0u) << name;  // none is an llm_request
    EXPECT_GT(r.records_ignored, 0) << name;
  }
}
#endif

}  // namespace
}  // namespace ttft
