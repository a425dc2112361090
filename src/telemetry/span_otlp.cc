// The OTLP/JSON traces reader: ExportTraceServiceRequest objects one per line, as the
// OpenTelemetry Collector's file exporter writes them, or one pretty-printed document;
// vLLM's llm_request spans become span records (telemetry/llm_request.h).
#include <simdjson.h>

#include <memory>
#include <string>
#include <string_view>

#include "telemetry/input_formats.h"
#include "telemetry/llm_request.h"
#include "telemetry/span_record.h"

namespace ttft::internal {
namespace {

class OtlpParser final : public LineParser {
 public:
  explicit OtlpParser(RecordContext& ctx) : ctx_(ctx) {}

  Status ParseLine(const char* p, size_t len, size_t, int64_t line, bool unterminated) override {
    std::string_view text(p, len);
    if (whole_document_) {
      document_.append(text);
      document_.push_back('\n');
      return Status::Ok();
    }
    if (IsBlank(text)) return Status::Ok();
    simdjson::dom::element doc;
    auto e = parser_.parse(p, len).get(doc);
    if (e) {
      // A pretty-printed document (the TracesData example) spans many lines: the
      // first line alone does not parse, so read the rest as one document.
      if (first_line_ && !unterminated) {
        whole_document_ = true;
        document_line_ = line;
        document_.assign(text);
        document_.push_back('\n');
        return Status::Ok();
      }
      return ctx_.Bad(line, unterminated ? "truncated record" : "malformed json",
                      JsonErrorReason(simdjson::error_message(e), unterminated, text));
    }
    first_line_ = false;
    return Document(doc, line);
  }

  Status Finish() override {
    if (whole_document_) {
      simdjson::dom::element doc;
      auto e = parser_.parse(document_).get(doc);
      if (e) {
        TTFT_RETURN_IF_ERROR(
            ctx_.Bad(document_line_, "malformed json",
                     JsonErrorReason(simdjson::error_message(e), false, document_)));
      } else {
        TTFT_RETURN_IF_ERROR(Document(doc, document_line_));
      }
    }
    return ctx_.Finish();
  }

 private:
  // {"resourceSpans":[{"resource":{"attributes":[..]},"scopeSpans":[{"spans":[..]}]}]}
  Status Document(simdjson::dom::element doc, int64_t line) {
    simdjson::dom::array resource_spans;
    if (doc["resourceSpans"].get(resource_spans) && doc["resource_spans"].get(resource_spans)) {
      return ctx_.Bad(line, "not otlp", "not an OTLP traces object (no resourceSpans array)");
    }
    for (simdjson::dom::element rs : resource_spans) {
      RequestBuilder resource;
      simdjson::dom::array attrs;
      if (!rs["resource"]["attributes"].get(attrs)) {
        ApplyOtlpAttributes(attrs, resource, /*resource=*/true);
      }
      for (std::string_view scope_key :
           {"scopeSpans", "instrumentationLibrarySpans", "scope_spans"}) {
        simdjson::dom::array scopes;
        if (rs[scope_key].get(scopes)) continue;
        for (simdjson::dom::element scope : scopes) {
          simdjson::dom::array spans;
          if (scope["spans"].get(spans)) continue;
          for (simdjson::dom::element span : spans) {
            TTFT_RETURN_IF_ERROR(OtlpSpan(span, resource, line));
          }
        }
      }
    }
    return Status::Ok();
  }

  void ApplyOtlpAttributes(simdjson::dom::array attrs, RequestBuilder& b, bool resource) {
    for (simdjson::dom::element kv : attrs) {
      std::string_view key;
      simdjson::dom::element value;
      if (kv["key"].get(key) || kv["value"].get(value)) continue;
      std::string err;
      AttrValue v = OtlpValue(value, err);
      if (!err.empty() && b.error.empty()) b.error = fmt::format("{}: {}", key, err);
      b.Attribute(key, v, resource);
    }
  }

  Status OtlpSpan(simdjson::dom::element span, const RequestBuilder& resource, int64_t line) {
    RequestBuilder b = resource;
    std::string_view name;
    if (span["name"].get(name)) name = {};
    b.is_request = name == "llm_request";
    simdjson::dom::array attrs;
    if (!span["attributes"].get(attrs)) ApplyOtlpAttributes(attrs, b, false);
    if (!b.is_request) {
      ctx_.Ignore();
      return Status::Ok();
    }
    simdjson::dom::element start;
    if (!span["startTimeUnixNano"].get(start) && !NanosToSeconds(start, b.r.arrival_s)) {
      return ctx_.Bad(line, "invalid value", "startTimeUnixNano: not a timestamp");
    }
    simdjson::dom::element code;
    if (!span["status"]["code"].get(code)) {
      if ((code.is_int64() && code.get_int64().value_unsafe() == 2) ||
          (code.is_string() && code.get_string().value_unsafe() == "STATUS_CODE_ERROR")) {
        if (b.r.status == RequestStatus::kOk) b.r.status = RequestStatus::kError;
      }
    }
    return EmitRequest(ctx_, b, line);
  }

  RecordContext& ctx_;
  simdjson::dom::parser parser_;
  bool first_line_ = true;
  bool whole_document_ = false;
  int64_t document_line_ = 1;
  std::string document_;
};

}  // namespace

bool DetectOtlp(const FormatProbe& probe) {
  return probe.json && (probe.json_head.find("\"resourceSpans\"") != std::string_view::npos ||
                        probe.json_head.find("\"resource_spans\"") != std::string_view::npos);
}

std::unique_ptr<LineParser> MakeOtlpParser(RecordContext& ctx, bool) {
  return std::make_unique<OtlpParser>(ctx);
}

}  // namespace ttft::internal
