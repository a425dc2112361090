// Streaming trace readers (workload/trace_reader.h).
#include "ttft/workload.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

namespace ttft {

namespace {

std::string Excerpt(std::string_view s) {
  constexpr size_t kMax = 40;
  if (s.size() <= kMax) return std::string(s);
  return std::string(s.substr(0, kMax)) + "...";
}

bool ParseInt(std::string_view s, int64_t& v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant, "chrono-Compatible
// Low-Level Date Algorithms", days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// "YYYY-MM-DD HH:MM:SS[.fraction]" (a 'T' separator is accepted too) into whole
// seconds since the Unix epoch and a fraction in [0, 1).
bool ParseTimestamp(std::string_view s, int64_t& whole, double& frac) {
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
      s[13] != ':' || s[16] != ':') {
    return false;
  }
  int64_t y, mo, d, h, mi, se;
  if (!ParseInt(s.substr(0, 4), y) || !ParseInt(s.substr(5, 2), mo) ||
      !ParseInt(s.substr(8, 2), d) || !ParseInt(s.substr(11, 2), h) ||
      !ParseInt(s.substr(14, 2), mi) || !ParseInt(s.substr(17, 2), se)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 || y < 0 || h < 0 ||
      mi < 0 || se < 0) {
    return false;
  }
  frac = 0;
  std::string_view rest = s.substr(19);
  if (!rest.empty()) {
    if (rest[0] != '.' || rest.size() < 2 || rest.size() > 16) return false;
    double scale = 0.1;
    for (char c : rest.substr(1)) {
      if (c < '0' || c > '9') return false;
      frac += (c - '0') * scale;
      scale /= 10;
    }
  }
  whole = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
  return true;
}

}  // namespace

Result<std::unique_ptr<TraceReader>> TraceReader::Open(TraceSpec::Format format,
                                                       const std::string& path) {
  auto in = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!in->is_open()) return Status::NotFound(fmt::format("{}: cannot open trace file", path));
  return std::make_unique<TraceReader>(format, std::move(in), path);
}

TraceReader::TraceReader(TraceSpec::Format format, std::unique_ptr<std::istream> in,
                         std::string name)
    : format_(format), in_(std::move(in)), name_(std::move(name)) {}

Status TraceReader::Error(std::string_view field, std::string_view what) const {
  return Status::DataError(
      fmt::format("{}:{}: {}{}{}", name_, line_no_, field, field.empty() ? "" : ": ", what));
}

Result<bool> TraceReader::Next(TraceRecord& rec) {
  for (;;) {
    if (!std::getline(*in_, line_)) {
      if (in_->bad()) return Status::IoError(fmt::format("{}: read failed", name_));
      return false;
    }
    ++line_no_;
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (format_ == TraceSpec::Format::kAzure && !header_done_) {
      header_done_ = true;
      std::string_view h = line_;
      if (h.size() >= 3 && h.substr(0, 3) == "\xEF\xBB\xBF") h.remove_prefix(3);  // BOM
      if (h != "TIMESTAMP,ContextTokens,GeneratedTokens") {
        return Error("header", fmt::format("expected \"TIMESTAMP,ContextTokens,GeneratedTokens\", "
                                           "got \"{}\"",
                                           Excerpt(h)));
      }
      continue;
    }
    if (line_.find_first_not_of(" \t") == std::string::npos) continue;
    rec.hash_ids.clear();
    TTFT_RETURN_IF_ERROR(format_ == TraceSpec::Format::kMooncake ? ParseMooncake(line_, rec)
                                                                 : ParseAzure(line_, rec));
    return true;
  }
}

Status TraceReader::ParseMooncake(const std::string& line, TraceRecord& rec) {
  using nlohmann::json;
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Error("", fmt::format("expected a JSON object, got \"{}\"", Excerpt(line)));
  }
  auto get_int = [&](const char* field, int64_t min, int64_t& out) -> Status {
    auto it = j.find(field);
    if (it == j.end()) return Error(field, "missing");
    const char* what = min > 0 ? "expected a positive integer" : "expected an integer >= 0";
    if (!it->is_number_integer())
      return Error(field, fmt::format("{}, got {}", what, Excerpt(it->dump())));
    if (it->is_number_unsigned()) {
      const auto u = it->get<uint64_t>();
      if (u > static_cast<uint64_t>(kMaxTraceTokens)) {
        return Error(field, fmt::format("{} <= {}, got {}", what, kMaxTraceTokens, u));
      }
      out = static_cast<int64_t>(u);
    } else {
      out = it->get<int64_t>();
    }
    if (out < min || out > kMaxTraceTokens) {
      return Error(field, fmt::format("{}, got {}", what, out));
    }
    return Status::Ok();
  };
  // timestamp: milliseconds, non-negative, non-decreasing.
  auto ts = j.find("timestamp");
  if (ts == j.end()) return Error("timestamp", "missing");
  if (!ts->is_number() || !std::isfinite(ts->get<double>()) || ts->get<double>() < 0 ||
      ts->get<double>() > 1e15) {
    return Error("timestamp",
                 fmt::format("expected milliseconds >= 0, got {}", Excerpt(ts->dump())));
  }
  const double ms = ts->get<double>();
  TTFT_RETURN_IF_ERROR(get_int("input_length", 1, rec.input_tokens));
  TTFT_RETURN_IF_ERROR(get_int("output_length", 0, rec.output_tokens));
  auto ids = j.find("hash_ids");
  if (ids == j.end()) return Error("hash_ids", "missing");
  if (!ids->is_array()) {
    return Error("hash_ids",
                 fmt::format("expected a list of integers, got {}", Excerpt(ids->dump())));
  }
  const int64_t want = (rec.input_tokens + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
  if (static_cast<int64_t>(ids->size()) != want) {
    return Error("hash_ids", fmt::format("expected ceil(input_length / 512) = {} ids, got {}", want,
                                         ids->size()));
  }
  rec.hash_ids.reserve(ids->size());
  for (size_t i = 0; i < ids->size(); ++i) {
    const auto& v = (*ids)[i];
    if (!v.is_number_unsigned()) {
      return Error(fmt::format("hash_ids[{}]", i),
                   fmt::format("expected an integer >= 0, got {}", Excerpt(v.dump())));
    }
    rec.hash_ids.push_back(v.get<uint64_t>());
  }
  const int64_t whole = static_cast<int64_t>(std::floor(ms / 1000));
  const double frac = ms / 1000 - static_cast<double>(whole);
  if (!have_origin_) {
    have_origin_ = true;
    origin_whole_s_ = whole;
    origin_frac_s_ = frac;
  }
  rec.t_s = static_cast<double>(whole - origin_whole_s_) + (frac - origin_frac_s_);
  if (rec.t_s < last_t_s_) {
    return Error("timestamp", fmt::format("decreases: {} ms after a later record", ms));
  }
  last_t_s_ = rec.t_s;
  return Status::Ok();
}

Status TraceReader::ParseAzure(const std::string& line, TraceRecord& rec) {
  std::string_view s = line;
  const size_t c1 = s.find(',');
  const size_t c2 = c1 == std::string_view::npos ? c1 : s.find(',', c1 + 1);
  if (c2 == std::string_view::npos || s.find(',', c2 + 1) != std::string_view::npos) {
    return Error("", fmt::format("expected 3 fields TIMESTAMP,ContextTokens,GeneratedTokens, "
                                 "got \"{}\"",
                                 Excerpt(s)));
  }
  const std::string_view f_ts = s.substr(0, c1), f_in = s.substr(c1 + 1, c2 - c1 - 1),
                         f_out = s.substr(c2 + 1);
  int64_t whole;
  double frac;
  if (!ParseTimestamp(f_ts, whole, frac)) {
    return Error("TIMESTAMP", fmt::format("expected \"YYYY-MM-DD HH:MM:SS.fffffff\", got \"{}\"",
                                          Excerpt(f_ts)));
  }
  if (!ParseInt(f_in, rec.input_tokens) || rec.input_tokens < 1 ||
      rec.input_tokens > kMaxTraceTokens) {
    return Error("ContextTokens",
                 fmt::format("expected a positive integer, got \"{}\"", Excerpt(f_in)));
  }
  if (!ParseInt(f_out, rec.output_tokens) || rec.output_tokens < 0 ||
      rec.output_tokens > kMaxTraceTokens) {
    return Error("GeneratedTokens",
                 fmt::format("expected an integer >= 0, got \"{}\"", Excerpt(f_out)));
  }
  if (!have_origin_) {
    have_origin_ = true;
    origin_whole_s_ = whole;
    origin_frac_s_ = frac;
  }
  rec.t_s = static_cast<double>(whole - origin_whole_s_) + (frac - origin_frac_s_);
  if (rec.t_s < last_t_s_) {
    return Error("TIMESTAMP",
                 fmt::format("decreases: \"{}\" is before the previous record", Excerpt(f_ts)));
  }
  last_t_s_ = rec.t_s;
  return Status::Ok();
}

}  // namespace ttft
