// The input format registry (telemetry/input_formats.h) and the public functions on
// formats (ttft/input.h): DetectFormat, ToString(InputFormat), ParseInputFormat.
#include "telemetry/input_formats.h"

#include <fmt/format.h>

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

InputFormat DetectFormatOf(std::string_view path, std::string_view head, std::string* guess_note) {
  if (guess_note != nullptr) guess_note->clear();
  if (path.ends_with(".prom") || path.ends_with(".prom.gz")) return InputFormat::kProm;
  const InputFormat found = DetectFormat(head);
  if (guess_note == nullptr) return found;
  std::string_view name = path;
  if (name.ends_with(".gz")) name.remove_suffix(3);
  // Span JSONL is both a detected format (JSON lines) and the fallback: it was a guess
  // when the head is not JSON at all.
  std::string_view rest = head;
  if (rest.starts_with("\xEF\xBB\xBF")) rest.remove_prefix(3);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) {
    rest.remove_prefix(1);
  }
  const bool json = rest.starts_with('{') || rest.starts_with('[');
  if (found == InputFormat::kSpanJsonl && !json && !rest.empty()) {
    *guess_note = fmt::format(
        "{}: no input format recognised in its first bytes: read as span JSONL (choose one with "
        "--input-format)",
        path);
  } else if ((name.ends_with(".csv") && found != InputFormat::kCsv) ||
             ((name.ends_with(".jsonl") || name.ends_with(".json")) &&
              found == InputFormat::kCsv)) {
    *guess_note = fmt::format("{}: the name says {} but the content reads as {}: read as {}", path,
                              name.substr(name.rfind('.') + 1), ToString(found), ToString(found));
  }
  return found;
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
