// The span readers' drivers: ParseSpans on a buffer and ReadSpans on a file (streamed
// in chunks, gzip and standard input through InputStream), each resolving the format
// through the registry (telemetry/input_formats.h) and feeding lines to its parser.
// ReadSpanTable's parallel read is span_readers_parallel.cc; the formats are
// span_jsonl.cc, span_csv.cc, span_otlp.cc and span_sink.cc.
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include "telemetry/input_formats.h"
#include "telemetry/input_stream.h"
#include "telemetry/line_driver.h"
#include "telemetry/span_readers_internal.h"
#include "telemetry/span_record.h"
#include "ttft/spans.h"

namespace ttft {

Result<const internal::InputFormatRow*> internal::SpanFormat(InputFormat format,
                                                             std::string_view source) {
  const InputFormatRow* row = FindInputFormat(format);
  if (row == nullptr || row->make_parser == nullptr) {
    return Status::Invalid(
        fmt::format("{}: holds {} metrics, not spans", source, ToString(format)));
  }
  return row;
}

Status ParseSpans(std::string_view data, std::string_view source, const SpanReadOptions& options,
                  SpanSink& sink, ReadReport& report) {
  return internal::ParseSpansWithFastPath(data, source, options, sink, report, true, nullptr);
}

Status internal::ParseSpansWithFastPath(std::string_view data, std::string_view source,
                                        const SpanReadOptions& options, SpanSink& sink,
                                        ReadReport& report, bool fast_path, int64_t* fast_lines) {
  InputFormat format = options.format == InputFormat::kAuto ? DetectFormat(data) : options.format;
  TTFT_ASSIGN_OR_RETURN(const InputFormatRow* row, SpanFormat(format, source));
  // Copy into a padded buffer (simdjson reads up to SIMDJSON_PADDING past the end).
  std::vector<char> buf(data.size() + simdjson::SIMDJSON_PADDING + 1, '\0');
  if (!data.empty()) std::memcpy(buf.data(), data.data(), data.size());  // data() may be null
  RecordContext ctx(source, options, sink, report);
  auto parser = row->make_parser(ctx, fast_path);
  auto parse = [&]() -> Status {
    int64_t line_no = 1;
    TTFT_ASSIGN_OR_RETURN(size_t rest,
                          FeedLines(*parser, buf.data(), data.size(), buf.size() - 1, line_no));
    if (rest < data.size()) {
      size_t len = data.size() - rest;
      if (buf[rest + len - 1] == '\r') --len;
      TTFT_RETURN_IF_ERROR(
          parser->ParseLine(buf.data() + rest, len, buf.size() - 1 - rest, line_no, true));
    }
    return parser->Finish();
  };
  Status st = parse();
  if (fast_lines != nullptr) *fast_lines = parser->fast_lines();
  return st;
}

Status ReadSpans(const std::string& path, const SpanReadOptions& options, SpanSink& sink,
                 ReadReport& report) {
  TTFT_ASSIGN_OR_RETURN(auto in, internal::InputStream::Open(path));
  const size_t padding = simdjson::SIMDJSON_PADDING;
  size_t data_cap = std::max<size_t>(options.chunk_bytes, 4096);
  std::vector<char> buf(data_cap + padding, '\0');
  size_t filled = 0;
  bool eof = false;
  // Fill the first chunk, detect the format from it.
  while (filled < data_cap && !eof) {
    TTFT_ASSIGN_OR_RETURN(size_t n, in->Read(buf.data() + filled, data_cap - filled));
    eof = n == 0;
    filled += n;
  }
  InputFormat format = options.format == InputFormat::kAuto
                           ? DetectFormat(std::string_view(buf.data(), filled))
                           : options.format;
  TTFT_ASSIGN_OR_RETURN(const internal::InputFormatRow* row,
                        internal::SpanFormat(format, in->name()));
  internal::RecordContext ctx(in->name(), options, sink, report);
  // One line is one span in JSONL and CSV: estimate the count from the file size and
  // the first chunk's lines, 2% high so that the columns are allocated once.
  if (row->line_per_span && !in->gzip() && path != "-" && filled > 0) {
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(path, ec);
    const size_t lines = static_cast<size_t>(std::count(buf.data(), buf.data() + filled, '\n'));
    if (!ec && lines > 0) ctx.ExpectMore(internal::EstimateSpans(lines, filled, size));
  }
  auto parser = row->make_parser(ctx, true);
  int64_t line_no = 1;
  TTFT_RETURN_IF_ERROR(internal::ParseStream([&](char* dst, size_t n) { return in->Read(dst, n); },
                                             *parser, buf, data_cap, filled, eof, line_no, nullptr,
                                             path));
  return parser->Finish();
}

}  // namespace ttft
