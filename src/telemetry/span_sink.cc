// The span-sink reader: flattened span lines {"name", "start_unix_ns", "end_unix_ns",
// "attributes": {flat}}, one per line; vLLM's llm_request spans become span records
// (telemetry/llm_request.h).
#include <simdjson.h>

#include <memory>
#include <string_view>

#include "telemetry/input_formats.h"
#include "telemetry/llm_request.h"
#include "telemetry/span_record.h"

namespace ttft::internal {
namespace {

class SpanSinkParser final : public LineParser {
 public:
  explicit SpanSinkParser(RecordContext& ctx) : ctx_(ctx) {}

  Status ParseLine(const char* p, size_t len, size_t, int64_t line, bool unterminated) override {
    std::string_view text(p, len);
    if (IsBlank(text)) return Status::Ok();
    simdjson::dom::element doc;
    auto e = parser_.parse(p, len).get(doc);
    if (e) {
      return ctx_.Bad(line, unterminated ? "truncated record" : "malformed json",
                      JsonErrorReason(simdjson::error_message(e), unterminated, text));
    }
    return SinkLine(doc, line);
  }

  Status Finish() override { return ctx_.Finish(); }

 private:
  // {"name": .., "start_unix_ns": .., "end_unix_ns": .., "attributes": {flat}}
  Status SinkLine(simdjson::dom::element doc, int64_t line) {
    RequestBuilder b;
    std::string_view name;
    if (doc["name"].get(name)) name = {};
    b.is_request = name == "llm_request";
    simdjson::dom::object attrs;
    if (!doc["attributes"].get(attrs)) {
      for (auto [k, el] : attrs) {
        std::string err;
        AttrValue v = FlatValue(el, err);
        if (!err.empty() && b.error.empty()) b.error = fmt::format("{}: {}", k, err);
        b.Attribute(k, v, false);
      }
    }
    if (!b.is_request) {
      ctx_.Ignore();
      return Status::Ok();
    }
    simdjson::dom::element start;
    if (!doc["start_unix_ns"].get(start) && !NanosToSeconds(start, b.r.arrival_s)) {
      return ctx_.Bad(line, "invalid value", "start_unix_ns: not a timestamp");
    }
    return EmitRequest(ctx_, b, line);
  }

  RecordContext& ctx_;
  simdjson::dom::parser parser_;
};

}  // namespace

bool DetectSpanSink(const FormatProbe& probe) {
  return probe.json && probe.json_head.find("\"start_unix_ns\"") != std::string_view::npos;
}

std::unique_ptr<LineParser> MakeSpanSinkParser(RecordContext& ctx, bool) {
  return std::make_unique<SpanSinkParser>(ctx);
}

}  // namespace ttft::internal
