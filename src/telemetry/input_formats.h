// Internal: the input format registry. One row per format: its --input-format name, its
// detector and, for a span format, its parser factory. DetectFormat, ToString(InputFormat),
// ParseInputFormat and the span readers (span_readers.cc, span_readers_parallel.cc) go
// through it and name no format.
//
// Adding an input format: its InputFormat value (ttft/input.h); one file with its
// detector and line parser (span_<format>.cc, on RecordContext and LineParser from
// span_record.h); their two declarations below; one row in kFormats (input_formats.cc).
#ifndef TTFT_TELEMETRY_INPUT_FORMATS_H_
#define TTFT_TELEMETRY_INPUT_FORMATS_H_

#include <memory>
#include <span>
#include <string_view>

#include "ttft/core.h"
#include "ttft/input.h"

namespace ttft::internal {

class LineParser;
class RecordContext;

// What a detector sees of a file's first bytes (after gzip decompression).
struct FormatProbe {
  std::string_view head;        // as read
  std::string_view rest;        // after a UTF-8 byte order mark and leading whitespace
  std::string_view first_line;  // `rest` up to its first '\n'
  std::string_view json_head;   // `rest`'s first 4,096 bytes
  bool json = false;            // `rest` starts with '{' or '['
};

// A parser for one input, reporting through `ctx`. `fast_path`: the span JSONL fast
// path (differential tests turn it off; other formats ignore it).
using ParserFactory = std::unique_ptr<LineParser> (*)(RecordContext& ctx, bool fast_path);

struct InputFormatRow {
  InputFormat format;
  std::string_view name;                     // the --input-format name
  bool (*detect)(const FormatProbe& probe);  // true: the head looks like this format
  ParserFactory make_parser;                 // null: the format holds metrics, not spans
  // One line per span (after any header): readers size their tables from the lines of
  // the first chunk.
  bool line_per_span;
  // Every newline ends a record and there is no header: ReadSpanTable may cut the file
  // into byte ranges at newlines and parse them on threads.
  bool splittable;
};

// The rows in detection order: DetectFormat returns the format of the first row whose
// detector accepts the head (kSpanJsonl when none does). Specific JSON formats come
// before span JSONL, which takes any JSON object.
std::span<const InputFormatRow> InputFormats();

// The row of `format`; null for kAuto.
const InputFormatRow* FindInputFormat(InputFormat format);

// The row of a span format: InvalidArgument naming `source` for a format that holds
// metrics. REQUIRES: format != kAuto.
Result<const InputFormatRow*> SpanFormat(InputFormat format, std::string_view source);

// The formats' detectors and factories, by file.
bool DetectOtlp(const FormatProbe& probe);  // span_otlp.cc
std::unique_ptr<LineParser> MakeOtlpParser(RecordContext& ctx, bool fast_path);
bool DetectSpanSink(const FormatProbe& probe);  // span_sink.cc
std::unique_ptr<LineParser> MakeSpanSinkParser(RecordContext& ctx, bool fast_path);
bool DetectSpanJsonl(const FormatProbe& probe);  // span_jsonl.cc
std::unique_ptr<LineParser> MakeSpanJsonlParser(RecordContext& ctx, bool fast_path);
bool DetectCsv(const FormatProbe& probe);  // span_csv.cc
std::unique_ptr<LineParser> MakeCsvParser(RecordContext& ctx, bool fast_path);
bool DetectExposition(const FormatProbe& probe);     // exposition_parser.cc
bool DetectPromQueryJson(const FormatProbe& probe);  // prom_query.cc

}  // namespace ttft::internal

#endif  // TTFT_TELEMETRY_INPUT_FORMATS_H_
