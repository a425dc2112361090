// Span JSON Lines writer (ttft/telemetry.h, docs/spans.md).
//
// Hand-written rather than through nlohmann::json: the simulator emits millions of
// spans and this path must stay well under a microsecond per span; the field set is
// fixed, so a direct formatter is simple and exact.
#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "ttft/telemetry.h"

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

}  // namespace ttft
