// The input format registry (telemetry/input_formats.h) and the public functions on
// formats (ttft/input.h): DetectFormat, ToString(InputFormat), ParseInputFormat.
#include "telemetry/input_formats.h"

#include <array>
#include <cctype>

namespace ttft {
namespace internal {
namespace {

// Detection order (docs/telemetry.md "Detection"): the JSON formats that carry a
// telling key first, span JSONL for any other JSON; then exposition text before CSV, so
// that a HELP/TYPE comment wins over a comma in the first line.
constexpr std::array<InputFormatRow, 6> kFormats = {{
    {InputFormat::kOtlp, "otlp", DetectOtlp, MakeOtlpParser, false, false},
    {InputFormat::kPromQueryJson, "prom-json", DetectPromQueryJson, nullptr, false, false},
    {InputFormat::kSpanSink, "span-sink", DetectSpanSink, MakeSpanSinkParser, false, false},
    {InputFormat::kSpanJsonl, "jsonl", DetectSpanJsonl, MakeSpanJsonlParser, true, true},
    {InputFormat::kProm, "prom", DetectExposition, nullptr, false, false},
    {InputFormat::kCsv, "csv", DetectCsv, MakeCsvParser, true, false},
}};

}  // namespace

std::span<const InputFormatRow> InputFormats() { return kFormats; }

const InputFormatRow* FindInputFormat(InputFormat format) {
  for (const InputFormatRow& row : kFormats) {
    if (row.format == format) return &row;
  }
  return nullptr;
}

}  // namespace internal

InputFormat DetectFormatOf(std::string_view path, std::string_view head) {
  if (path.ends_with(".prom") || path.ends_with(".prom.gz")) return InputFormat::kProm;
  return DetectFormat(head);
}

InputFormat DetectFormat(std::string_view head) {
  internal::FormatProbe probe;
  probe.head = head;
  size_t i = 0;
  if (head.starts_with("\xEF\xBB\xBF")) i = 3;
  while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  probe.rest = head.substr(i);
  probe.first_line = probe.rest.substr(0, probe.rest.find('\n'));
  probe.json = probe.rest.starts_with("{") || probe.rest.starts_with("[");
  probe.json_head = probe.rest.substr(0, 4096);
  for (const internal::InputFormatRow& row : internal::InputFormats()) {
    if (row.detect(probe)) return row.format;
  }
  return InputFormat::kSpanJsonl;
}

std::string_view ToString(InputFormat f) {
  if (f == InputFormat::kAuto) return "auto";
  const internal::InputFormatRow* row = internal::FindInputFormat(f);
  return row != nullptr ? row->name : "?";
}

std::optional<InputFormat> ParseInputFormat(std::string_view s) {
  if (s == "auto") return InputFormat::kAuto;
  for (const internal::InputFormatRow& row : internal::InputFormats()) {
    if (row.name == s) return row.format;
  }
  return std::nullopt;
}

}  // namespace ttft
