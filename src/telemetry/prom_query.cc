// Prometheus /api/v1/query(_range) response parsing (ttft/prometheus.h).
// API: https://prometheus.io/docs/prometheus/latest/querying/api/
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "telemetry/input_formats.h"
#include "ttft/prometheus.h"

namespace ttft {
namespace {

using json = nlohmann::json;

bool ParseSampleValue(const json& v, double& out) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "NaN") {
      out = std::numeric_limits<double>::quiet_NaN();
    } else if (s == "+Inf") {
      out = std::numeric_limits<double>::infinity();
    } else if (s == "-Inf") {
      out = -std::numeric_limits<double>::infinity();
    } else {
      auto r = std::from_chars(s.data(), s.data() + s.size(), out);
      return r.ec == std::errc();
    }
    return true;
  }
  if (v.is_number()) {
    out = v.get<double>();
    return true;
  }
  return false;
}

// obj[key] when it is a string, else `fallback`. json::value() would throw on a
// present key of another type (the prom_query fuzzer found {"status": {...}}).
std::string StringOr(const json& obj, const char* key, const std::string& fallback) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool ParsePoint(const json& p, std::pair<double, double>& out) {
  if (!p.is_array() || p.size() != 2 || !p[0].is_number()) return false;
  out.first = p[0].get<double>();
  return ParseSampleValue(p[1], out.second);
}

}  // namespace

// A saved query response: a JSON object with "resultType" near its start.
bool internal::DetectPromQueryJson(const internal::FormatProbe& probe) {
  return probe.json && probe.json_head.find("\"resultType\"") != std::string_view::npos;
}

Result<std::vector<PromSeries>> ParsePromQueryJson(std::string_view body) {
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::Invalid("Prometheus response: not a JSON object");
  }
  const std::string status = StringOr(doc, "status", "");
  if (status != "success") {
    return Status::Invalid(fmt::format("Prometheus query failed: {}: {}",
                                       StringOr(doc, "errorType", "error"),
                                       StringOr(doc, "error", "(no message)")));
  }
  if (!doc.contains("data") || !doc["data"].is_object()) {
    return Status::Invalid("Prometheus response: no data object");
  }
  const json& data = doc["data"];
  const std::string type = StringOr(data, "resultType", "");
  if (type != "matrix" && type != "vector") {
    return Status::Invalid(fmt::format("Prometheus response: resultType '{}' not supported", type));
  }
  if (!data.contains("result") || !data["result"].is_array()) {
    return Status::Invalid("Prometheus response: no result array");
  }
  std::vector<PromSeries> out;
  for (const json& r : data["result"]) {
    if (!r.is_object()) return Status::Invalid("Prometheus response: result entry not an object");
    PromSeries s;
    if (r.contains("metric") && r["metric"].is_object()) {
      for (const auto& [k, v] : r["metric"].items()) {
        if (v.is_string()) s.labels.emplace_back(k, v.get<std::string>());
      }
      std::sort(s.labels.begin(), s.labels.end());
    }
    std::pair<double, double> pt;
    if (type == "vector") {
      if (!r.contains("value") || !ParsePoint(r["value"], pt)) {
        return Status::Invalid("Prometheus response: bad vector sample");
      }
      s.points.push_back(pt);
    } else {
      if (!r.contains("values") || !r["values"].is_array()) {
        return Status::Invalid("Prometheus response: matrix series without values");
      }
      for (const json& p : r["values"]) {
        if (!ParsePoint(p, pt)) return Status::Invalid("Prometheus response: bad matrix sample");
        s.points.push_back(pt);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<MetricSnapshot> SnapshotsFromSeries(std::span<const PromSeries> series) {
  // Collect every timestamp, then build one exposition-like snapshot per timestamp.
  std::set<double> times;
  for (const PromSeries& s : series) {
    for (const auto& p : s.points) times.insert(p.first);
  }
  std::vector<MetricSnapshot> out;
  for (double t : times) {
    std::string text;
    std::set<std::string> histograms;
    for (const PromSeries& s : series) {
      std::string name;
      bool has_le = false;
      for (const auto& [k, v] : s.labels) {
        if (k == "__name__") name = v;
        if (k == "le") has_le = true;
      }
      if (name.empty()) continue;
      if (has_le && name.ends_with("_bucket")) histograms.insert(name.substr(0, name.size() - 7));
    }
    for (const std::string& h : histograms) text += fmt::format("# TYPE {} histogram\n", h);
    for (const PromSeries& s : series) {
      std::string name;
      std::string labels;
      for (const auto& [k, v] : s.labels) {
        if (k == "__name__") {
          name = v;
          continue;
        }
        std::string esc;
        for (char c : v) {
          if (c == '\\' || c == '"') esc.push_back('\\');
          if (c == '\n') {
            esc += "\\n";
            continue;
          }
          esc.push_back(c);
        }
        labels += fmt::format("{}{}=\"{}\"", labels.empty() ? "" : ",", k, esc);
      }
      if (name.empty()) continue;
      if (name.ends_with("_total") && !histograms.count(name)) {
        text += fmt::format("# TYPE {} counter\n", name);
      }
      for (const auto& [pt, v] : s.points) {
        if (pt != t) continue;
        text += fmt::format("{}{{{}}} {}\n", name, labels, FormatPromFloat(v));
      }
    }
    ReadReport ignored;
    ExpositionParseOptions opts;
    opts.source = "query_range";
    auto snap = ParseExposition(text, opts, ignored);
    if (snap.ok()) {
      snap->timestamp_s = t;
      out.push_back(std::move(*snap));
    }
  }
  return out;
}

}  // namespace ttft
