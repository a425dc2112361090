// Span JSON Lines writer (ttft/spans.h, docs/spans.md).
//
// Hand-written rather than through nlohmann::json: the simulator emits millions of
// spans and this path must stay well under a microsecond per span; the field set is
// fixed, so a direct formatter is simple and exact.
#include <fmt/format.h>

#include <xxhash.h>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>

#include "ttft/spans.h"

namespace ttft {
namespace {

void AppendEscaped(std::string_view s, std::string& out) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

// Shortest round-trip decimal; null for NaN or infinity (JSON has neither).
void AppendDouble(double v, std::string& out) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

void AppendInt(int64_t v, std::string& out) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

}  // namespace

void AppendSpanJson(const Span& s, std::string& out) {
  out += "{\"request_id\":";
  AppendEscaped(s.request_id, out);
  out += ",\"arrival_s\":";
  AppendDouble(s.arrival_s, out);
  out += ",\"queue_s\":";
  AppendDouble(s.queue_s, out);
  out += ",\"prefill_s\":";
  AppendDouble(s.prefill_s, out);
  out += ",\"front_end_s\":";
  AppendDouble(s.front_end_s, out);
  out += ",\"ttft_s\":";
  AppendDouble(s.ttft_s, out);
  out += ",\"decode_s\":";
  AppendDouble(s.decode_s, out);
  out += ",\"e2e_s\":";
  AppendDouble(s.e2e_s, out);
  out += ",\"itl_mean_s\":";
  AppendDouble(s.itl_mean_s, out);
  out += ",\"itl_max_s\":";
  AppendDouble(s.itl_max_s, out);
  out += ",\"prompt_tokens\":";
  AppendInt(s.prompt_tokens, out);
  out += ",\"cached_tokens\":";
  AppendInt(s.cached_tokens, out);
  out += ",\"output_tokens\":";
  AppendInt(s.output_tokens, out);
  out += ",\"preemptions\":";
  AppendInt(s.preemptions, out);
  out += ",\"status\":";
  AppendEscaped(ToString(s.status), out);
  out += ",\"replica\":";
  AppendEscaped(s.replica, out);
  out += ",\"region\":";
  AppendEscaped(s.region, out);
  out += ",\"tenant\":";
  AppendEscaped(s.tenant, out);
  out += ",\"model\":";
  AppendEscaped(s.model, out);
  out += ",\"template\":";
  AppendEscaped(s.template_version, out);
  out += ",\"deploy\":";
  AppendEscaped(s.deploy, out);
  out.push_back('}');
}

SpanJsonlWriter::~SpanJsonlWriter() { (void)Close(); }

Status SpanJsonlWriter::Open(const std::string& path) {
  path_ = path;
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) {
    return Status::IoError(
        fmt::format("{}: cannot open for writing: {}", path, std::strerror(errno)));
  }
  buf_.reserve(1 << 20);
  return Status::Ok();
}

Status SpanJsonlWriter::Flush() {
  if (buf_.empty()) return Status::Ok();
  if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
    return Status::IoError(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
  }
  buf_.clear();
  return Status::Ok();
}

Status SpanJsonlWriter::Write(const Span& span) {
  AppendSpanJson(span, buf_);
  buf_.push_back('\n');
  ++spans_written_;
  if (buf_.size() >= (1 << 20)) return Flush();
  return Status::Ok();
}

Status SpanJsonlWriter::Close() {
  if (file_ == nullptr) return Status::Ok();
  Status st = Flush();
  if (std::fclose(file_) != 0 && st.ok()) {
    st = Status::IoError(fmt::format("{}: close failed: {}", path_, std::strerror(errno)));
  }
  file_ = nullptr;
  return st;
}

// ---------------------------------------------------------------------------
// OTLP/JSON (ExportTraceServiceRequest), vLLM's llm_request spans
// ---------------------------------------------------------------------------
namespace {

// Opens attribute `key` of a list (a comma unless `first`), up to its value's type.
void OtlpAttrStart(std::string_view key, std::string_view type, bool& first, std::string& out) {
  out += first ? "{\"key\":" : ",{\"key\":";
  first = false;
  AppendEscaped(key, out);
  out += ",\"value\":{\"";
  out += type;
  out += "\":";
}
void OtlpStringAttr(std::string_view key, std::string_view v, bool& first, std::string& out) {
  OtlpAttrStart(key, "stringValue", first, out);
  AppendEscaped(v, out);
  out += "}}";
}
void OtlpDoubleAttr(std::string_view key, double v, bool& first, std::string& out) {
  if (!std::isfinite(v)) return;  // unknown: the attribute is absent
  OtlpAttrStart(key, "doubleValue", first, out);
  AppendDouble(v, out);
  out += "}}";
}
// OTLP/JSON writes 64-bit integers as decimal strings (protobuf JSON mapping).
void OtlpIntAttr(std::string_view key, int64_t v, bool& first, std::string& out) {
  if (v < 0) return;  // unknown
  OtlpAttrStart(key, "intValue", first, out);
  out += '"';
  AppendInt(v, out);
  out += "\"}}";
}
void AppendNanos(double seconds, std::string& out) {
  out.push_back('"');
  // 0 when unknown; saturated in the year 2261 (kCountLimit ns), not an unspecified value.
  AppendInt(std::isfinite(seconds) ? SaturatingCount(seconds * 1e9) : 0, out);
  out.push_back('"');
}

}  // namespace

void AppendOtlpJson(std::span<const Span> spans, std::string& out) {
  // One ResourceSpans per (replica, region), in order of first appearance.
  std::map<std::pair<std::string_view, std::string_view>, std::vector<size_t>> by_resource;
  std::vector<std::pair<std::string_view, std::string_view>> order;
  for (size_t i = 0; i < spans.size(); ++i) {
    auto key =
        std::make_pair(std::string_view(spans[i].replica), std::string_view(spans[i].region));
    auto [it, inserted] = by_resource.try_emplace(key);
    if (inserted) order.push_back(key);
    it->second.push_back(i);
  }
  out += "{\"resourceSpans\":[";
  for (size_t r = 0; r < order.size(); ++r) {
    if (r > 0) out.push_back(',');
    out += "{\"resource\":{\"attributes\":[";
    bool first = true;
    OtlpStringAttr("service.name", "vllm", first, out);
    if (!order[r].first.empty()) OtlpStringAttr("service.instance.id", order[r].first, first, out);
    if (!order[r].second.empty()) OtlpStringAttr("cloud.region", order[r].second, first, out);
    out += "]},\"scopeSpans\":[{\"scope\":{\"name\":\"vllm.llm_engine\"},\"spans\":[";
    bool first_span = true;
    for (size_t i : by_resource[order[r]]) {
      const Span& s = spans[i];
      if (!first_span) out.push_back(',');
      first_span = false;
      const uint64_t h = XXH3_64bits(s.request_id.data(), s.request_id.size());
      out += fmt::format("{{\"traceId\":\"{:016x}{:016x}\",\"spanId\":\"{:016x}\",", h, ~h, h);
      out += "\"name\":\"llm_request\",\"kind\":3,\"startTimeUnixNano\":";
      AppendNanos(s.arrival_s, out);
      out += ",\"endTimeUnixNano\":";
      AppendNanos(s.arrival_s + (std::isfinite(s.e2e_s) ? s.e2e_s : 0), out);
      out += ",\"attributes\":[";
      bool a = true;
      OtlpStringAttr("gen_ai.request.id", s.request_id, a, out);
      if (!s.model.empty()) OtlpStringAttr("gen_ai.response.model", s.model, a, out);
      OtlpIntAttr("gen_ai.usage.prompt_tokens", s.prompt_tokens, a, out);
      OtlpIntAttr("gen_ai.usage.completion_tokens", s.output_tokens, a, out);
      OtlpIntAttr("gen_ai.usage.cache_read.input_tokens", s.cached_tokens, a, out);
      OtlpDoubleAttr("gen_ai.latency.time_in_queue", s.queue_s, a, out);
      OtlpDoubleAttr("gen_ai.latency.time_to_first_token", s.ttft_s, a, out);
      OtlpDoubleAttr("gen_ai.latency.time_in_model_prefill", s.prefill_s, a, out);
      OtlpDoubleAttr("gen_ai.latency.time_in_model_decode", s.decode_s, a, out);
      OtlpDoubleAttr("gen_ai.latency.e2e", s.e2e_s, a, out);
      if (s.status == RequestStatus::kAborted) {
        OtlpStringAttr("gen_ai.response.finish_reasons", "[\"abort\"]", a, out);
      }
      out += "]";
      if (s.status == RequestStatus::kError || s.status == RequestStatus::kRejectedTooLong) {
        out += ",\"status\":{\"code\":2}";
      }
      out += "}";
    }
    out += "]}]}";
  }
  out += "]}";
}

}  // namespace ttft
