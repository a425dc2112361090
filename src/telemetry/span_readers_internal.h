// Internal: hooks into the span readers for differential tests and fuzzing.
#ifndef TTFT_TELEMETRY_SPAN_READERS_INTERNAL_H_
#define TTFT_TELEMETRY_SPAN_READERS_INTERNAL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "ttft/spans.h"

namespace ttft::internal {

// ParseSpans with the span JSONL fast path (the flat-object scanner in front of
// simdjson) on or off. Both must give the same spans, issues and report. When
// `fast_lines` is not null it receives the number of lines the fast path accepted.
Status ParseSpansWithFastPath(std::string_view data, std::string_view source,
                              const SpanReadOptions& options, SpanSink& sink, ReadReport& report,
                              bool fast_path, int64_t* fast_lines = nullptr);

// The span JSONL fast path's number reader on one JSON number token: true with the
// correctly rounded double, false for anything it declines (not a JSON number, out of
// range). For tests against std::from_chars.
bool FastJsonDouble(std::string_view token, double& out);

// A sink that records every field of every span exactly (doubles by their bits, so
// NaN equals NaN and -0 differs from 0), for comparing two reads.
class RecordingSink final : public SpanSink {
 public:
  void Add(const SpanRecord& s) override {
    auto bits = [this](double d) {
      uint64_t u;
      std::memcpy(&u, &d, sizeof u);
      out_ += std::to_string(u);
      out_ += ',';
    };
    out_ += std::string(s.request_id) + '|';
    for (double d : {s.arrival_s, s.queue_s, s.prefill_s, s.front_end_s, s.ttft_s, s.decode_s,
                     s.e2e_s, s.itl_mean_s, s.itl_max_s}) {
      bits(d);
    }
    for (int64_t i : {s.prompt_tokens, s.cached_tokens, s.output_tokens,
                      static_cast<int64_t>(s.preemptions), static_cast<int64_t>(s.status)}) {
      out_ += std::to_string(i) + ',';
    }
    for (std::string_view l : s.labels) out_ += std::string(l) + '|';
    out_ += '\n';
  }
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

// Everything a read reported, as text.
inline std::string ReportText(const ReadReport& r) {
  std::string out = std::to_string(r.records_read) + " read, " + std::to_string(r.records_skipped) +
                    " skipped, " + std::to_string(r.records_ignored) + " ignored\n";
  for (const RecordIssue& i : r.issues) {
    out += i.file + ":" + std::to_string(i.line) + ": " + i.reason + "\n";
  }
  for (const std::string& w : r.warnings) out += "warning: " + w + "\n";
  return out;
}

}  // namespace ttft::internal

#endif  // TTFT_TELEMETRY_SPAN_READERS_INTERNAL_H_
