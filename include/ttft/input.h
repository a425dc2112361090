// -----------------------------------------------------------------------------
// File: ttft/input.h
// -----------------------------------------------------------------------------
//
// Telemetry inputs: what a file holds (InputFormat, detected from its first bytes
// through the format registry in src/telemetry/span_formats.cc), how its bytes are read
// (standard input, gzip), and what a read reported (ReadReport). Shared by the span
// readers (ttft/spans.h) and the metric readers (ttft/metrics.h, ttft/prometheus.h).
//
// Readers never throw and never crash on bad input. A malformed record is reported
// with file, line and reason; by default it is skipped and counted, and the
// ReadReport summarises what was skipped. With `strict`, the first bad record stops
// the read with Status::DataError (exit 65). docs/telemetry.md has the formats.
//
// Thread safety: the functions are re-entrant; a ReadReport is not thread-safe.

#ifndef TTFT_INPUT_H_
#define TTFT_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/core.h"

namespace ttft {

// One bad (skipped) record.
struct RecordIssue {
  std::string file;
  int64_t line = 0;  // 1-based; 0 when not known
  std::string reason;
};

// What a read did. Readers append to a report, so one report can cover many files.
struct ReadReport {
  static constexpr size_t kMaxIssues = 100;  // issues kept verbatim; all are counted
  int64_t records_read = 0;                  // accepted records (spans, samples)
  int64_t records_skipped = 0;               // rejected records
  int64_t records_ignored = 0;  // well-formed but not request records (e.g. start-up spans)
  std::vector<RecordIssue> issues;
  std::map<std::string, int64_t> skipped_by_category;
  std::vector<std::string> warnings;  // file-level doubts (e.g. units), not skipped records

  // Records a skipped record. `category` is a short stable key ("malformed json"). The
  // file and reason kept are valid UTF-8 (other bytes become visible \xNN escapes).
  void Skip(std::string_view file, int64_t line, std::string_view category, std::string reason);
  // "N records skipped: 3 malformed json, 1 duplicate request_id; first: f:12: ..."
  // Empty when nothing was skipped and there are no warnings. Valid UTF-8.
  std::string Summary() const;
};

// Input kinds. kAuto detects from content (docs/telemetry.md "Inputs and detection").
// Every other value has a row (name, detector, span parser or none) in the format
// registry, src/telemetry/input_formats.cc.
enum class InputFormat : uint8_t {
  kAuto,
  kSpanJsonl,      // ttft's span JSON Lines (docs/spans.md)
  kCsv,            // a header row, then one span per row
  kOtlp,           // OTLP/JSON traces, one ExportTraceServiceRequest per line or one document
  kSpanSink,       // flattened span lines {"name","start_unix_ns","attributes":{..}}
  kProm,           // Prometheus text exposition 0.0.4
  kPromQueryJson,  // a saved /api/v1/query_range (or query) response
};
std::string_view ToString(InputFormat f);
// The --input-format names: "auto", "jsonl", "csv", "otlp", "span-sink", "prom",
// "prom-json"; ToString of a value outside the registry is "?".
std::optional<InputFormat> ParseInputFormat(std::string_view s);

// Detects the format of a file from its first bytes (after gzip decompression): the
// first registry row whose detector accepts them, else kSpanJsonl. Never kAuto.
InputFormat DetectFormat(std::string_view head);
// DetectFormat with the file's name: a ".prom" or ".prom.gz" file is Prometheus text
// whatever its first bytes (a scrape without HELP and TYPE lines looked like CSV and
// had every line skipped); any other name is detected from `head`. With `guess_note`,
// says what it chose when it had to guess: no format recognised in `head` (read as span
// JSONL), or content that contradicts a .csv/.jsonl/.json name ("named .csv, reads as
// jsonl"); empty otherwise.
InputFormat DetectFormatOf(std::string_view path, std::string_view head,
                           std::string* guess_note = nullptr);
// The format of input `path` under --input-format auto: standard input ("-") is span
// JSONL (nothing can be read ahead of the reader); a file is detected by DetectFormatOf
// from its name and its first 64 KiB after decompression, `guess_note` as there. An
// error naming the file when it does not exist or cannot be read.
Result<InputFormat> ProbeInputFormat(const std::string& path, std::string* guess_note = nullptr);

// Files read whole (a Prometheus scrape, a query result, an events file): at most
// 1 GiB after decompression. Span files stream and have no size limit; their lines
// are bounded by kMaxLineBytes (ttft/spans.h).
inline constexpr size_t kMaxWholeFileBytes = size_t{1} << 30;

// Reads a whole file ("-" for stdin, gzip detected) into memory. An error naming the
// file when it holds more than `max_bytes` bytes after decompression (a gzip bomb, or
// a file that is not what it claims to be), before more than that is held.
Result<std::string> ReadInputFile(const std::string& path, size_t max_bytes = kMaxWholeFileBytes);
// Reads at most the first `max_bytes` bytes (after gzip decompression) of a file, e.g.
// for DetectFormat. Not for "-": what it reads from standard input is consumed.
Result<std::string> ReadInputHead(const std::string& path, size_t max_bytes);

}  // namespace ttft

#endif  // TTFT_INPUT_H_
