// Prometheus HTTP API client and query-response parsing (ttft/telemetry.h).
// API: https://prometheus.io/docs/prometheus/latest/querying/api/
#include <fmt/format.h>
#include <httplib.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "ttft/telemetry.h"

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

bool ParsePoint(const json& p, std::pair<double, double>& out) {
  if (!p.is_array() || p.size() != 2 || !p[0].is_number()) return false;
  out.first = p[0].get<double>();
  return ParseSampleValue(p[1], out.second);
}

// Percent-encodes a query-string value (RFC 3986 unreserved characters pass).
std::string Encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace

Result<std::vector<PromSeries>> ParsePromQueryJson(std::string_view body) {
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::Invalid("Prometheus response: not a JSON object");
  }
  const std::string status = doc.value("status", std::string());
  if (status != "success") {
    return Status::Invalid(fmt::format("Prometheus query failed: {}: {}",
                                       doc.value("errorType", std::string("error")),
                                       doc.value("error", std::string("(no message)"))));
  }
  if (!doc.contains("data") || !doc["data"].is_object()) {
    return Status::Invalid("Prometheus response: no data object");
  }
  const json& data = doc["data"];
  const std::string type = data.value("resultType", std::string());
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

struct PromClient::Impl {
  std::string base_url;
  PromClientOptions options;
  std::unique_ptr<httplib::Client> client;
};

PromClient::PromClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PromClient::PromClient(PromClient&&) noexcept = default;
PromClient& PromClient::operator=(PromClient&&) noexcept = default;
PromClient::~PromClient() = default;

Result<PromClient> PromClient::Create(const std::string& base_url, PromClientOptions options) {
  if (!base_url.starts_with("http://")) {
    return Status::Invalid(fmt::format("{}: Prometheus URL must start with http://", base_url));
  }
  auto impl = std::make_unique<Impl>();
  impl->base_url = base_url;
  while (!impl->base_url.empty() && impl->base_url.back() == '/') impl->base_url.pop_back();
  impl->options = options;
  impl->client = std::make_unique<httplib::Client>(impl->base_url);
  const auto timeout = std::chrono::duration<double>(options.timeout_s);
  const auto sec = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const auto usec = std::chrono::duration_cast<std::chrono::microseconds>(timeout - sec);
  impl->client->set_connection_timeout(sec.count(), usec.count());
  impl->client->set_read_timeout(sec.count(), usec.count());
  impl->client->set_write_timeout(sec.count(), usec.count());
  if (!impl->client->is_valid()) return Status::Invalid(fmt::format("{}: bad URL", base_url));
  return PromClient(std::move(impl));
}

Result<std::string> PromClient::Get(const std::string& path) {
  std::string last_error;
  double backoff = impl_->options.initial_backoff_s;
  const int attempts = std::max(1, impl_->options.max_attempts);
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    auto res = impl_->client->Get(path);
    if (res) {
      // 400/422 carry Prometheus's JSON error: a bad query, not worth retrying.
      if (res->status == 200 || res->status == 400 || res->status == 422) return res->body;
      last_error = fmt::format("HTTP {}", res->status);
      if (res->status < 500 && res->status != 429) break;
    } else {
      last_error = httplib::to_string(res.error());
    }
    if (attempt < attempts) {
      std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
      backoff *= 2;
    }
  }
  return Status::Unavailable(fmt::format("Prometheus at {} unavailable after {} attempt{}: {}",
                                         impl_->base_url, attempts, attempts == 1 ? "" : "s",
                                         last_error));
}

Result<std::vector<PromSeries>> PromClient::Query(const std::string& expr, double time_s) {
  TTFT_ASSIGN_OR_RETURN(std::string body, Get(fmt::format("/api/v1/query?query={}&time={:.3f}",
                                                          Encode(expr), time_s)));
  return ParsePromQueryJson(body);
}

Result<std::vector<PromSeries>> PromClient::QueryRange(const std::string& expr, double start_s,
                                                       double end_s, double step_s) {
  TTFT_ASSIGN_OR_RETURN(
      std::string body,
      Get(fmt::format("/api/v1/query_range?query={}&start={:.3f}&end={:.3f}&step={}", Encode(expr),
                      start_s, end_s, step_s)));
  return ParsePromQueryJson(body);
}

Result<std::vector<MetricSnapshot>> PromClient::FetchSnapshots(
    std::span<const std::string> families, const std::string& selector, double start_s,
    double end_s, double step_s) {
  std::string regex;
  for (const std::string& f : families) {
    if (!regex.empty()) regex += '|';
    regex += f + "|" + f + "_bucket|" + f + "_sum|" + f + "_count";
  }
  const std::string expr =
      fmt::format("{{__name__=~\"{}\"{}{}}}", regex, selector.empty() ? "" : ",", selector);
  TTFT_ASSIGN_OR_RETURN(auto series, QueryRange(expr, start_s, end_s, step_s));
  if (series.empty()) {
    return Status::NotFound(fmt::format("Prometheus at {}: no series match {} in [{}, {}]",
                                        impl_->base_url, expr, start_s, end_s));
  }
  return SnapshotsFromSeries(series);
}

}  // namespace ttft
