// Change annotations from an events file (ttft/dataset.h).
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "dataset/internal.h"
#include "ttft/dataset.h"
#include "ttft/format.h"
#include "ttft/input.h"

namespace ttft {
namespace {

// o[key] when it is a string, else `fallback` (json::value() throws on other types).
std::string StringOr(const nlohmann::json& o, const char* key, const std::string& fallback) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// One event object; an error (without location) when it has no usable time.
Result<Annotation> EventFromJson(const nlohmann::json& e) {
  if (!e.is_object()) return Status::Invalid("not a JSON event object");
  Annotation a;
  const auto at = e.find("at_s");
  const auto time = e.find("time");
  if (at != e.end() && at->is_number()) {
    a.at_s = at->get<double>();
    if (!std::isfinite(a.at_s)) return Status::Invalid("at_s is not a finite number");
  } else if (time != e.end() && time->is_string()) {
    TTFT_ASSIGN_OR_RETURN(a.at_s, ParseTime(time->get<std::string>()));
  } else {
    return Status::Invalid("event needs at_s (seconds) or time (RFC 3339)");
  }
  a.kind = StringOr(e, "kind", "change");
  a.target = StringOr(e, "target", "");
  a.detail = StringOr(e, "detail", StringOr(e, "note", ""));
  return a;
}

}  // namespace

namespace dataset_internal {

std::vector<Annotation> EventsOfSummary(const nlohmann::json& j) {
  std::vector<Annotation> out;
  if (!j.is_object()) return out;
  const auto it = j.find("events");
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& e : *it) {
    auto a = EventFromJson(e);
    if (a.ok()) out.push_back(std::move(*a));
  }
  return out;
}

}  // namespace dataset_internal

Result<std::vector<Annotation>> ReadEvents(const std::string& path,
                                           std::vector<std::string>* warnings) {
  // An events file lists changes: 16 MiB is hundreds of thousands of them.
  constexpr size_t kMaxEventsBytes = size_t{16} << 20;
  TTFT_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, kMaxEventsBytes));
  return ParseEvents(text, path, warnings);
}

namespace {

// The events of a file and where each stands ("f:3", or "f: event 2" in an array).
Status ParseEventList(std::string_view text, const std::string& path, std::vector<Annotation>& out,
                      std::vector<std::string>& where) {
  auto whole = nlohmann::json::parse(text, nullptr, false);
  if (!whole.is_discarded()) {
    // One document: an array of events, {"events": [...]}, or a single event (a
    // one-line JSON Lines file).
    const nlohmann::json* arr = nullptr;
    if (whole.is_array()) {
      arr = &whole;
    } else if (whole.is_object() && whole.contains("events") && whole["events"].is_array()) {
      arr = &whole["events"];
    }
    if (arr == nullptr) {
      auto a = EventFromJson(whole);
      if (!a.ok()) return Status::Invalid(fmt::format("{}: {}", path, a.status().message()));
      out.push_back(std::move(*a));
      where.push_back(path);
      return Status::Ok();
    }
    for (size_t i = 0; i < arr->size(); ++i) {
      auto a = EventFromJson((*arr)[i]);
      if (!a.ok()) {
        return Status::Invalid(fmt::format("{}: event {}: {}", path, i, a.status().message()));
      }
      out.push_back(std::move(*a));
      where.push_back(fmt::format("{}: event {}", path, i));
    }
    return Status::Ok();
  }
  // JSON Lines.
  std::istringstream in{std::string(text)};
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (!escape::IsValidUtf8(line)) {
      return Status::Invalid(fmt::format("{}:{}: not valid UTF-8", path, n));
    }
    auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_discarded()) return Status::Invalid(fmt::format("{}:{}: not JSON", path, n));
    auto a = EventFromJson(e);
    if (!a.ok()) return Status::Invalid(fmt::format("{}:{}: {}", path, n, a.status().message()));
    out.push_back(std::move(*a));
    where.push_back(fmt::format("{}:{}", path, n));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<Annotation>> ParseEvents(std::string_view text, const std::string& path,
                                            std::vector<std::string>* warnings) {
  std::vector<Annotation> all;
  std::vector<std::string> where;
  TTFT_RETURN_IF_ERROR(ParseEventList(text, path, all, where));
  // Identical events are read once: a file concatenated with itself would cite every
  // change twice.
  std::map<std::tuple<double, std::string, std::string, std::string>, size_t> first;
  std::vector<Annotation> out;
  int64_t repeats = 0;
  std::string example;
  for (size_t i = 0; i < all.size(); ++i) {
    const Annotation& a = all[i];
    auto [it, fresh] = first.emplace(std::tuple{a.at_s, a.kind, a.target, a.detail}, i);
    if (fresh) {
      out.push_back(a);
    } else if (repeats++ == 0) {
      example = fmt::format("{}: the same event as {}", where[i], where[it->second]);
    }
  }
  if (warnings != nullptr) {
    if (repeats > 0) {
      warnings->push_back(fmt::format("{} repeated event{} read once (first: {})", repeats,
                                      repeats == 1 ? "" : "s", example));
    }
    if (all.empty()) warnings->push_back(fmt::format("{}: no events in the file", path));
  }
  return out;
}

}  // namespace ttft
