// Record-level checks shared by every span reader (telemetry/span_record.h,
// ttft/spans.h): span validation, column maps, JSON error reasons.
#include "telemetry/span_record.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace ttft {

std::string ValidateSpan(const SpanRecord& s) {
  const std::pair<std::string_view, double> durations[] = {
      {"queue_s", s.queue_s},       {"prefill_s", s.prefill_s}, {"front_end_s", s.front_end_s},
      {"ttft_s", s.ttft_s},         {"decode_s", s.decode_s},   {"e2e_s", s.e2e_s},
      {"itl_mean_s", s.itl_mean_s}, {"itl_max_s", s.itl_max_s}};
  for (const auto& [name, v] : durations) {
    if (std::isnan(v)) continue;  // missing
    if (std::isinf(v)) return fmt::format("{} is infinite", name);
    if (v < 0) return fmt::format("negative duration: {} = {}", name, v);
    if (v > 3600) {
      return fmt::format(
          "{} = {} s is over an hour: looks like milliseconds in a seconds field "
          "(use --columns {}=FIELD:ms)",
          name, v, name);
    }
  }
  if (std::isinf(s.arrival_s)) return "arrival_s is infinite";
  if (!std::isnan(s.ttft_s) && !std::isnan(s.queue_s) && s.ttft_s + 1e-6 < s.queue_s) {
    return fmt::format("ttft_s {} < queue_s {} (clock skew?)", s.ttft_s, s.queue_s);
  }
  if (s.prompt_tokens < -1 || s.cached_tokens < -1 || s.output_tokens < -1) {
    return "negative token count";
  }
  if (s.cached_tokens >= 0 && s.prompt_tokens >= 0 && s.cached_tokens > s.prompt_tokens) {
    return fmt::format("cached_tokens {} > prompt_tokens {}", s.cached_tokens, s.prompt_tokens);
  }
  return {};
}

Result<ColumnMap> ColumnMap::Parse(std::string_view spec) {
  auto is_field = [](std::string_view name) {
    return std::find(std::begin(internal::kFieldNames), std::end(internal::kFieldNames), name) !=
           std::end(internal::kFieldNames);
  };
  ColumnMap map;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) {
      return Status::Invalid(fmt::format("--columns: '{}': expected TARGET=SOURCE[:UNIT]", item));
    }
    Entry e;
    e.target = std::string(item.substr(0, eq));
    std::string_view source = item.substr(eq + 1);
    const size_t colon = source.rfind(':');
    if (colon != std::string_view::npos) {
      const std::string_view unit = source.substr(colon + 1);
      if (unit == "s") {
        e.scale = 1;
      } else if (unit == "ms") {
        e.scale = 1e-3;
      } else if (unit == "us") {
        e.scale = 1e-6;
      } else if (unit == "ns") {
        e.scale = 1e-9;
      } else {
        return Status::Invalid(
            fmt::format("--columns: '{}': unit must be s, ms, us or ns, got '{}'", item, unit));
      }
      source = source.substr(0, colon);
    }
    e.source = std::string(source);
    if (!is_field(e.target)) {
      return Status::Invalid(
          fmt::format("--columns: '{}': unknown span field '{}'", item, e.target));
    }
    if (e.scale != 1 && !e.target.ends_with("_s")) {
      return Status::Invalid(
          fmt::format("--columns: '{}': a unit applies to durations (*_s) only", item));
    }
    if (e.source.empty()) {
      return Status::Invalid(fmt::format("--columns: '{}': expected TARGET=SOURCE[:UNIT]", item));
    }
    map.entries.push_back(std::move(e));
  }
  // A reader looks each input key up once (FieldTable): one key feeds one span field.
  auto target_of = [&](std::string_view field) {
    return std::any_of(map.entries.begin(), map.entries.end(),
                       [&](const Entry& x) { return x.target == field; });
  };
  for (size_t i = 0; i < map.entries.size(); ++i) {
    const Entry& e = map.entries[i];
    for (size_t j = 0; j < i; ++j) {
      if (map.entries[j].target == e.target) {
        return Status::Invalid(fmt::format("--columns: {} is mapped twice", e.target));
      }
      if (map.entries[j].source == e.source) {
        return Status::Invalid(
            fmt::format("--columns: {} and {} both read '{}': one input field feeds one span field",
                        map.entries[j].target, e.target, e.source));
      }
    }
    if (is_field(e.source) && e.source != e.target && !target_of(e.source)) {
      return Status::Invalid(fmt::format(
          "--columns: {}={}: '{}' is read as the span field of that name; map it to another "
          "field as well (e.g. {}=OTHER) or pick another source",
          e.target, e.source, e.source, e.source));
    }
  }
  return map;
}

std::string internal::JsonErrorReason(const char* error, bool unterminated, std::string_view text) {
  std::string reason = unterminated
                           ? fmt::format("truncated record at end of input (no newline): {}", error)
                           : fmt::format("malformed JSON: {}", error);
  if (text.find("NaN") != std::string_view::npos ||
      text.find("Infinity") != std::string_view::npos) {
    reason += " (NaN/Infinity are not JSON; write null for a missing value)";
  }
  return reason;
}

}  // namespace ttft
