// Prometheus HTTP API client (ttft/telemetry.h). Kept apart from prom_query.cc so that
// only programs that talk to a server need the cpp-httplib library.
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
