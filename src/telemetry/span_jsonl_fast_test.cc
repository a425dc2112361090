// Differential tests of the span JSONL fast path (span_readers.cc): for every input
// the read with the fast scanner must equal the read with simdjson alone, span for
// span (bit for bit), issue for issue.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "telemetry/span_readers_internal.h"
#include "ttft/spans.h"

namespace ttft {
namespace {

struct Read {
  std::string spans;
  std::string report;
  std::string status;
};

Read ReadWith(std::string_view data, bool fast, const SpanReadOptions& options) {
  internal::RecordingSink sink;
  ReadReport report;
  const Status st = internal::ParseSpansWithFastPath(data, "mem", options, sink, report, fast);
  return {sink.text(), internal::ReportText(report), st.ToString()};
}

void ExpectSame(std::string_view data, const SpanReadOptions& options = {}) {
  SpanReadOptions o = options;
  o.format = InputFormat::kSpanJsonl;
  const Read slow = ReadWith(data, false, o);
  const Read fast = ReadWith(data, true, o);
  EXPECT_EQ(fast.spans, slow.spans) << "input: " << data;
  EXPECT_EQ(fast.report, slow.report) << "input: " << data;
  EXPECT_EQ(fast.status, slow.status) << "input: " << data;
}

Span FullSpan() {
  Span s;
  s.request_id = "req-00000042";
  s.arrival_s = 1712000000.042;
  s.queue_s = 0.0123456789;
  s.prefill_s = 0.23456789012345678;
  s.front_end_s = 0.003;
  s.ttft_s = s.front_end_s + s.queue_s + s.prefill_s;
  s.decode_s = 3.5;
  s.e2e_s = s.ttft_s + s.decode_s;
  s.itl_mean_s = 0.02;
  s.itl_max_s = 0.08;
  s.prompt_tokens = 1234;
  s.cached_tokens = 617;
  s.output_tokens = 200;
  s.preemptions = 1;
  s.replica = "vllm-3";
  s.region = "us-east-1";
  s.tenant = "tenant-2";
  s.model = "llama-3.1-8b";
  s.template_version = "v3";
  s.deploy = "2024-04-01";
  return s;
}

std::string Line(const Span& s) {
  std::string out;
  AppendSpanJson(s, out);
  return out;
}

// Replaces the value of `key` in a writer line with `value` (raw JSON text).
std::string WithValue(std::string line, const std::string& key, const std::string& value) {
  const std::string k = "\"" + key + "\":";
  const size_t at = line.find(k);
  if (at == std::string::npos) return line;
  const size_t start = at + k.size();
  size_t end = start;
  if (line[end] == '"') {
    end = line.find('"', end + 1) + 1;
  } else {
    while (end < line.size() && line[end] != ',' && line[end] != '}') ++end;
  }
  return line.replace(start, end - start, value);
}

TEST(SpanJsonlFastPath, WriterLinesGiveIdenticalSpans) {
  std::string data;
  std::mt19937_64 rng(1);
  std::lognormal_distribution<double> lat(-2.0, 1.5);
  for (int i = 0; i < 2000; ++i) {
    Span s = FullSpan();
    s.request_id = "req-" + std::to_string(i);
    s.arrival_s = 1712000000.0 + i * 0.001;
    s.queue_s = lat(rng) * 0.3;
    s.prefill_s = lat(rng);
    s.ttft_s = s.queue_s + s.prefill_s + s.front_end_s;
    s.decode_s = lat(rng) * 10;
    s.e2e_s = s.ttft_s + s.decode_s;
    if (i % 7 == 0) s.itl_max_s = NAN;  // written as null
    if (i % 11 == 0) s.cached_tokens = -1;
    data += Line(s) + "\n";
  }
  ExpectSame(data);
  // Every writer line takes the fast path (else the speed is gone, not the result).
  internal::RecordingSink sink;
  ReadReport report;
  int64_t fast_lines = -1;
  ASSERT_TRUE(
      internal::ParseSpansWithFastPath(data, "mem", {}, sink, report, true, &fast_lines).ok());
  EXPECT_EQ(fast_lines, 2000);
  EXPECT_EQ(report.records_read, 2000);
}

TEST(SpanJsonlFastPath, NumbersRoundExactlyAsSimdjson) {
  const std::string base = Line(FullSpan());
  std::vector<std::string> numbers = {"0",
                                      "-0",
                                      "0.0",
                                      "-0.0",
                                      "1",
                                      "0.1",
                                      "0.2",
                                      "0.30000000000000004",
                                      "1e22",
                                      "1e23",
                                      "1E-5",
                                      "1.5e+2",
                                      "123456789012345678",
                                      "1234567890123456789",
                                      "12345678901234567890",
                                      "9007199254740992",
                                      "9007199254740993",
                                      "4.35",
                                      "0.000000000000000000000001",
                                      "1.7976931348623157e308",
                                      "2.2250738585072014e-308",
                                      "4.9406564584124654e-324",
                                      "2e308",
                                      "1e-400",
                                      "1e99999999999",
                                      "3599.9999999999995",
                                      "3600",
                                      "3600.0000000000005",
                                      "0.1e1",
                                      "100e-2",
                                      "01",
                                      "1.",
                                      ".5",
                                      "-",
                                      "1e",
                                      "1e+",
                                      "+1",
                                      "0x10",
                                      "1.2.3",
                                      "--1",
                                      "1e5.5",
                                      "0.44444444444444444444",
                                      "44444444444444444444",
                                      "0.12345678901234567890123",
                                      "4.4444444444444444444e-3",
                                      "Infinity",
                                      "NaN",
                                      "\"0.5\"",
                                      "\"NaN\"",
                                      "true",
                                      "null",
                                      "[]",
                                      "{}",
                                      "1 ",
                                      " 1",
                                      "1\t"};
  // Random doubles in every printed form: shortest, 17 digits, fewer digits.
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> exponent(-8, 4);
  for (int i = 0; i < 3000; ++i) {
    const double v = std::pow(10.0, exponent(rng));
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v);
    numbers.emplace_back(buf, res.ptr);
    std::snprintf(buf, sizeof buf, "%.*g", 1 + static_cast<int>(rng() % 19), v);
    numbers.emplace_back(buf);
    std::snprintf(buf, sizeof buf, "%.*e", static_cast<int>(rng() % 20), v);
    numbers.emplace_back(buf);
  }
  std::string data;
  for (const std::string& n : numbers) {
    for (const char* key : {"ttft_s", "arrival_s", "prompt_tokens", "preemptions"}) {
      data += WithValue(base, key, n) + "\n";
    }
  }
  SpanReadOptions o;
  o.detect_duplicates = false;  // every line has the same request_id
  ExpectSame(data, o);
}

// The fast path's numbers against std::from_chars (correctly rounded, ties to even) on
// the 16-18 digit decimals that take its extended-precision route, and on integers
// that lie exactly halfway between two doubles (where that route must decline).
TEST(SpanJsonlFastPath, ExtendedPrecisionNumbersEqualFromChars) {
  std::mt19937_64 rng(5);
  std::vector<std::string> tokens;
  for (int i = 0; i < 400000; ++i) {
    const int digits = 16 + static_cast<int>(rng() % 3);
    std::string t = std::to_string(rng() % 9 + 1);
    while (static_cast<int>(t.size()) < digits) t += static_cast<char>('0' + rng() % 10);
    const auto point = 1 + static_cast<size_t>(rng() % static_cast<uint64_t>(digits));
    if (rng() % 3 == 0) {
      t.insert(0, "0.0000");  // leading zeros count as digits: 20+ take from_chars
    } else if (point < t.size()) {
      t.insert(point, ".");
    }
    if (rng() % 4 == 0) t += "e" + std::to_string(static_cast<int>(rng() % 19) - 9);
    if (rng() % 5 == 0) t.insert(0, "-");
    tokens.push_back(std::move(t));
  }
  for (int shift = 53; shift <= 62; ++shift) {  // halfway integers: odd multiples of ulp / 2
    const uint64_t half_ulp = uint64_t{1} << (shift - 53);
    for (int i = 0; i < 2000; ++i) {
      const uint64_t base = (uint64_t{1} << shift) + (rng() % (uint64_t{1} << (shift - 1)));
      const uint64_t m = (base & ~(2 * half_ulp - 1)) | half_ulp;
      if (m < 1000000000000000000ULL) tokens.push_back(std::to_string(m));
    }
  }
  int checked = 0;
  for (const std::string& t : tokens) {
    double want = 0, got = 0;
    const auto res = std::from_chars(t.data(), t.data() + t.size(), want);
    ASSERT_TRUE(res.ec == std::errc() && res.ptr == t.data() + t.size()) << t;
    ASSERT_TRUE(internal::FastJsonDouble(t, got)) << t;
    ASSERT_EQ(std::signbit(got), std::signbit(want)) << t;
    ASSERT_EQ(got, want) << t;
    ++checked;
  }
  EXPECT_GT(checked, 400000);
}

// simdjson 3.0.1's On-Demand get_double reads "0.44444444444444444444" as 0.0755 (the
// differential fuzzer found it); both paths must give the correctly rounded value.
TEST(SpanJsonlFastPath, LongNumbersAreReadCorrectlyOnBothPaths) {
  for (bool fast : {false, true}) {
    SpanTable t;
    ReadReport r;
    ASSERT_TRUE(internal::ParseSpansWithFastPath(
                    "{\"ttft_s\":0.44444444444444444444,\"arrival_s\":0.44444444444444444444}\n",
                    "mem", {}, t, r, fast)
                    .ok());
    ASSERT_EQ(t.size(), 1u) << r.Summary();
    EXPECT_EQ(t.arrival_s()[0], 0.4444444444444444) << "fast path " << fast;
    EXPECT_EQ(t.ttft_s()[0], 0.4444444444444444f) << "fast path " << fast;
  }
}

TEST(SpanJsonlFastPath, UnusualButValidAndInvalidObjects) {
  const std::string base = Line(FullSpan());
  const std::vector<std::string> lines = {
      base,
      "  " + base + "  ",
      "\t" + base + "\r",
      base + " x",
      base + "}",
      base + ",",
      "{}",
      "{ }",
      "[]",
      "{\"ttft_s\":0.5}",
      "{\"ttft_s\" : 0.5 , \"status\" : \"ok\" }",
      "{\"ttft_s\":0.5,}",
      "{\"ttft_s\":0.5",
      "{\"ttft_s\":0.5,\"ttft_s\":null}",
      "{\"ttft_s\":null,\"ttft_s\":0.25}",
      "{\"ttft_s\":0.5,\"extra\":{\"a\":[1,2,{\"b\":null}]},\"more\":[true,false]}",
      "{\"ttft_s\":0.5,\"extra\":tru}",
      "{\"ttft_s\":0.5,\"extra\":nul}",
      "{\"ttft_s\":0.5,\"extra\":\"caf\xc3\xa9\"}",
      "{\"ttft_s\":0.5,\"extra\":\"bad \xff utf8\"}",
      "{\"ttft_s\":0.5,\"replica\":\"a\\\"b\"}",
      "{\"ttft_s\":0.5,\"replica\":\"tab\there\"}",
      "{\"ttft_s\":0.5,\"repl\\u0069ca\":\"x\"}",
      "{\"ttft_s\":0.5,\"status\":\"aborted\"}",
      "{\"ttft_s\":null,\"status\":\"error\"}",
      "{\"ttft_s\":null}",
      "{\"ttft_s\":0.5,\"status\":\"weird\"}",
      "{\"ttft_s\":0.5,\"status\":3}",
      "{\"ttft_s\":0.5,\"replica\":7}",
      "{\"ttft_s\":0.5,\"prompt_tokens\":10.0}",
      "{\"ttft_s\":0.5,\"prompt_tokens\":1e3}",
      "{\"ttft_s\":0.5,\"prompt_tokens\":\"10\"}",
      "{\"ttft_s\":true}",
      "{\"ttft_s\":\"0.5\"}",
      "{\"ttft_s\":-0.5}",
      "{\"ttft_s\":5000}",
      "{\"ttft_s\":0.1,\"queue_s\":0.2}",
      "{\"ttft_s\":0.5,\"cached_tokens\":20,\"prompt_tokens\":10}",
      "{\"request_id\":\"a\",\"ttft_s\":0.5}",
      "{\"request_id\":\"a\",\"ttft_s\":0.5}",
      "{\"ttft_s\":0.5}{\"ttft_s\":0.6}",
      "\"just a string\"",
      "42",
      "{\"ttft_s\":0.5,\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6}",
  };
  std::string data;
  for (const std::string& l : lines) data += l + "\n";
  ExpectSame(data);
  data.pop_back();  // an unterminated last line
  ExpectSame(data);
  ExpectSame(data + "\n\n   \n");
  // With a column map: renamed fields and scaled units.
  SpanReadOptions o;
  auto map = ColumnMap::Parse("ttft_s=ttft_ms:ms,request_id=id,replica=pod");
  ASSERT_TRUE(map.ok());
  o.columns = *map;
  ExpectSame(
      "{\"id\":\"x\",\"ttft_ms\":123.4,\"pod\":\"p-1\"}\n{\"id\":\"y\",\"ttft_ms\":0.3,"
      "\"ttft_s\":9}\n{\"ttft_ms\":null,\"status\":\"aborted\"}\n",
      o);
  o.strict = true;
  ExpectSame(data, o);
}

// Random byte edits of writer lines: the two paths agree on every one.
TEST(SpanJsonlFastPath, MutatedLinesAgree) {
  const std::string base = Line(FullSpan());
  const std::string alphabet = "{}[]\":,.-+eE0123456789 \t\\ntrufalsx\x01\x80\xc3";
  std::mt19937_64 rng(3);
  for (int round = 0; round < 20; ++round) {
    std::string data;
    for (int i = 0; i < 500; ++i) {
      std::string l = base;
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        const size_t at = rng() % l.size();
        const char c = alphabet[rng() % alphabet.size()];
        switch (rng() % 3) {
          case 0: l[at] = c; break;
          case 1: l.insert(l.begin() + static_cast<std::ptrdiff_t>(at), c); break;
          default: l.erase(at, 1 + rng() % 4);
        }
      }
      data += l + "\n";
    }
    SpanReadOptions o;
    o.detect_duplicates = false;  // every line has the same request_id
    ExpectSame(data, o);
  }
}

}  // namespace
}  // namespace ttft
