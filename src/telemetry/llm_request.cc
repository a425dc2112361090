// vLLM llm_request attributes onto span records (telemetry/llm_request.h).
#include "telemetry/llm_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace ttft::internal {
namespace {

// Numbers may arrive as JSON numbers or decimal strings (OTLP int64 rule).
bool ElementToDouble(simdjson::dom::element el, double& out, std::string& err) {
  if (el.is_string()) {
    std::string_view s = el.get_string().value_unsafe();
    if (LooksNonFinite(s)) {
      err = fmt::format("NaN/Infinity (\"{}\")", s);
      return false;
    }
    if (std::from_chars(s.data(), s.data() + s.size(), out).ec != std::errc()) {
      err = fmt::format("expected a number, got \"{}\"", s);
      return false;
    }
    return true;
  }
  if (el.is_number()) {
    double d;
    if (el.get_double().get(d) == simdjson::SUCCESS) {
      out = d;
      return true;
    }
  }
  err = "expected a number";
  return false;
}

bool ElementToInt(simdjson::dom::element el, int64_t& out, std::string& err) {
  if (el.is_int64()) {
    out = el.get_int64().value_unsafe();
    return true;
  }
  if (el.is_uint64()) {
    out = static_cast<int64_t>(std::min<uint64_t>(el.get_uint64().value_unsafe(), INT64_MAX));
    return true;
  }
  double d;
  if (!ElementToDouble(el, d, err)) return false;
  if (d != std::floor(d) || std::fabs(d) > kCountLimit) {
    err = fmt::format("expected an integer, got {}", d);
    return false;
  }
  out = static_cast<int64_t>(d);
  return true;
}

bool AsDouble(const AttrValue& v, double& d) {
  if (v.kind == AttrValue::kDouble) {
    d = v.d;
  } else if (v.kind == AttrValue::kInt) {
    d = static_cast<double>(v.i);
  } else if (v.kind == AttrValue::kString) {
    if (LooksNonFinite(v.s)) return false;
    return std::from_chars(v.s.data(), v.s.data() + v.s.size(), d).ec == std::errc();
  } else {
    return false;
  }
  return true;
}
bool AsInt(const AttrValue& v, int64_t& i) {
  double d;
  if (v.kind == AttrValue::kInt) {
    i = v.i;
    return true;
  }
  if (!AsDouble(v, d) || d != std::floor(d)) return false;
  i = static_cast<int64_t>(d);
  return true;
}

}  // namespace

// Unix nanoseconds (string or number) -> seconds, keeping sub-microsecond precision.
bool NanosToSeconds(simdjson::dom::element el, double& out) {
  uint64_t ns = 0;
  if (el.is_string()) {
    std::string_view s = el.get_string().value_unsafe();
    if (std::from_chars(s.data(), s.data() + s.size(), ns).ec != std::errc()) return false;
  } else if (el.is_uint64()) {
    ns = el.get_uint64().value_unsafe();
  } else if (el.is_int64()) {
    const int64_t v = el.get_int64().value_unsafe();
    if (v < 0) return false;
    ns = static_cast<uint64_t>(v);
  } else if (el.is_double()) {
    const double d = el.get_double().value_unsafe();
    if (!(d >= 0) || d > 1.8e19) return false;
    out = d / 1e9;
    return true;
  } else {
    return false;
  }
  // Whole seconds and the nanoseconds apart keep the precision a double of the full
  // nanosecond count would lose.
  out = static_cast<double>(ns / 1000000000ULL) +  // NOLINT(bugprone-integer-division)
        static_cast<double>(ns % 1000000000ULL) / 1e9;
  return true;
}

// The OTLP AnyValue object: {"stringValue": ..} | {"intValue": ..} | ...
AttrValue OtlpValue(simdjson::dom::element v, std::string& err) {
  AttrValue out;
  simdjson::dom::object obj;
  if (v.get_object().get(obj)) return out;
  for (auto [k, el] : obj) {
    if (k == "stringValue" && el.is_string()) {
      out.kind = AttrValue::kString;
      out.s = el.get_string().value_unsafe();
    } else if (k == "intValue") {
      if (ElementToInt(el, out.i, err)) out.kind = AttrValue::kInt;
    } else if (k == "doubleValue") {
      if (ElementToDouble(el, out.d, err)) out.kind = AttrValue::kDouble;
    } else if (k == "boolValue" && el.is_bool()) {
      out.kind = AttrValue::kBool;
      out.b = el.get_bool().value_unsafe();
    }
  }
  return out;
}

// A flattened attribute value (span-sink lines): a JSON scalar.
AttrValue FlatValue(simdjson::dom::element el, std::string& err) {
  AttrValue out;
  if (el.is_string()) {
    out.kind = AttrValue::kString;
    out.s = el.get_string().value_unsafe();
  } else if (el.is_int64() || el.is_uint64()) {
    if (ElementToInt(el, out.i, err)) out.kind = AttrValue::kInt;
  } else if (el.is_double()) {
    out.kind = AttrValue::kDouble;
    out.d = el.get_double().value_unsafe();
  } else if (el.is_bool()) {
    out.kind = AttrValue::kBool;
    out.b = el.get_bool().value_unsafe();
  }
  return out;
}

void RequestBuilder::Attribute(std::string_view key, const AttrValue& v, bool resource) {
  if (!error.empty() || v.kind == AttrValue::kNone) return;
  if (key == "service.instance.id" || key == "k8s.pod.name" || key == "host.name") {
    const int rank = key == "service.instance.id" ? 0 : key == "k8s.pod.name" ? 1 : 2;
    if (v.kind == AttrValue::kString && rank < replica_rank) {
      replica_rank = rank;
      r.labels[static_cast<size_t>(SpanLabel::kReplica)] = v.s;
    }
    return;
  }
  if (key == "cloud.region") {
    if (v.kind == AttrValue::kString) r.labels[static_cast<size_t>(SpanLabel::kRegion)] = v.s;
    return;
  }
  if (resource || !key.starts_with("gen_ai.")) return;
  double* slot = nullptr;
  if (key == "gen_ai.latency.time_to_first_token") {
    slot = &r.ttft_s;
    ttft_present = true;
  } else if (key == "gen_ai.latency.time_in_queue") {
    slot = &r.queue_s;
  } else if (key == "gen_ai.latency.time_in_model_prefill") {
    slot = &r.prefill_s;
  } else if (key == "gen_ai.latency.time_in_model_decode") {
    slot = &r.decode_s;
  } else if (key == "gen_ai.latency.e2e") {
    slot = &r.e2e_s;
  }
  if (key.starts_with("gen_ai.latency.")) is_request = true;
  if (slot != nullptr) {
    if (!AsDouble(v, *slot)) error = fmt::format("{}: not a finite number", key);
    return;
  }
  int64_t* islot = nullptr;
  if (key == "gen_ai.usage.prompt_tokens" || key == "gen_ai.usage.input_tokens") {
    islot = &r.prompt_tokens;
  } else if (key == "gen_ai.usage.completion_tokens" || key == "gen_ai.usage.output_tokens") {
    islot = &r.output_tokens;
  } else if (key == "gen_ai.usage.cache_read.input_tokens" || key == "gen_ai.usage.cached_tokens") {
    islot = &r.cached_tokens;
  }
  if (islot != nullptr) {
    if (!AsInt(v, *islot)) error = fmt::format("{}: not an integer", key);
    return;
  }
  if (v.kind != AttrValue::kString) return;
  if (key == "gen_ai.request.id") {
    r.request_id = v.s;
  } else if (key == "gen_ai.response.model" ||
             (key == "gen_ai.request.model" && r.labels[3].empty())) {
    r.labels[static_cast<size_t>(SpanLabel::kModel)] = v.s;
  } else if (key == "gen_ai.response.finish_reasons") {
    if (v.s.find("abort") != std::string_view::npos) {
      r.status = RequestStatus::kAborted;
    } else if (v.s.find("error") != std::string_view::npos) {
      r.status = RequestStatus::kError;
    }
  }
}

// Derived fields: vLLM's mean TPOT = decode / (output_tokens - 1).
void RequestBuilder::Finish() {
  if (std::isnan(r.itl_mean_s) && !std::isnan(r.decode_s) && r.output_tokens >= 2) {
    r.itl_mean_s = r.decode_s / static_cast<double>(r.output_tokens - 1);
  }
}

Status EmitRequest(RecordContext& ctx, RequestBuilder& b, int64_t line) {
  if (!b.error.empty()) return ctx.Bad(line, "invalid value", b.error);
  b.Finish();
  if (!b.ttft_present && b.r.status == RequestStatus::kOk) {
    return ctx.Bad(line, "missing field",
                   "llm_request span without gen_ai.latency.time_to_first_token");
  }
  return ctx.Emit(b.r, line, true);
}

}  // namespace ttft::internal
