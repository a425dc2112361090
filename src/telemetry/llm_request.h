// Internal: vLLM's llm_request span (vllm/tracing.py SpanAttributes) and the OTel GenAI
// attribute names mapped onto a SpanRecord (docs/telemetry.md), shared by the OTLP/JSON
// (span_otlp.cc) and span-sink (span_sink.cc) readers. DOM: their documents are nested
// and small.
#ifndef TTFT_TELEMETRY_LLM_REQUEST_H_
#define TTFT_TELEMETRY_LLM_REQUEST_H_

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "telemetry/span_record.h"
#include "ttft/core.h"

namespace ttft::internal {

// An attribute value, whatever its JSON spelling.
struct AttrValue {
  enum Kind { kNone, kString, kInt, kDouble, kBool } kind = kNone;
  std::string_view s;
  int64_t i = 0;
  double d = 0;
  bool b = false;
};

// The OTLP AnyValue object: {"stringValue": ..} | {"intValue": ..} | ... A bad number
// sets `err`.
AttrValue OtlpValue(simdjson::dom::element v, std::string& err);
// A flattened attribute value (span-sink lines): a JSON scalar.
AttrValue FlatValue(simdjson::dom::element el, std::string& err);
// Unix nanoseconds (string or number) -> seconds, keeping sub-microsecond precision.
// False when `el` is not a timestamp.
bool NanosToSeconds(simdjson::dom::element el, double& out);

// Mapping of vLLM llm_request attributes and OTel GenAI names (docs/telemetry.md).
struct RequestBuilder {
  SpanRecord r;
  bool is_request = false;
  bool ttft_present = false;
  int replica_rank = 99;  // lower wins: service.instance.id < k8s.pod.name < host.name
  std::string error;

  // Applies one attribute; the first bad value sets `error` and ends the span's
  // attributes. `resource`: an OTLP resource attribute (only replica and region apply).
  void Attribute(std::string_view key, const AttrValue& v, bool resource);
  // Derived fields once every attribute is in.
  void Finish();
};

// Emits the span `b` built from line `line`, or reports why it cannot: a bad
// attribute, or a request without a TTFT that finished normally.
Status EmitRequest(RecordContext& ctx, RequestBuilder& b, int64_t line);

}  // namespace ttft::internal

#endif  // TTFT_TELEMETRY_LLM_REQUEST_H_
