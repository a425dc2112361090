// Prometheus HTTP API client (ttft/prometheus.h). Kept apart from prom_query.cc so that
// only programs that talk to a server need the cpp-httplib library.
// API: https://prometheus.io/docs/prometheus/latest/querying/api/
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "ttft/prometheus.h"
#include "ttft/promql.h"

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

// {__name__=~"f|f_bucket|f_sum|f_count|...",selector}
std::string SeriesExpr(std::span<const std::string> families, const std::string& selector) {
  std::string regex;
  for (const std::string& f : families) {
    if (!regex.empty()) regex += '|';
    regex.append(f).append("|").append(f).append("_bucket|").append(f).append("_sum|");
    regex.append(f).append("_count");
  }
  return fmt::format("{{__name__=~\"{}\"{}{}}}", regex, selector.empty() ? "" : ",", selector);
}

// A reason an operator can act on, for a request that got no HTTP response.
std::string DescribeError(httplib::Error e, double timeout_s) {
  switch (e) {
    case httplib::Error::Connection:
      return "cannot connect (connection refused or host unreachable)";
    case httplib::Error::ConnectionTimeout:
      return fmt::format("connect timed out after {} s", timeout_s);
    case httplib::Error::Read:
      return fmt::format("no response within {} s (read timed out or connection closed)",
                         timeout_s);
    case httplib::Error::Write: return "sending the request failed";
    default: return httplib::to_string(e);
  }
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

Status CheckPromClientOptions(const PromClientOptions& options) {
  // NaN or a huge value would reach a duration_cast to integer seconds (undefined).
  if (!(options.timeout_s > 0 && options.timeout_s <= 300)) {
    return Status::Invalid(
        fmt::format("--timeout {}: expected seconds in (0, 300]", options.timeout_s));
  }
  if (options.max_attempts < 1 || options.max_attempts > 10 ||
      !(options.initial_backoff_s >= 0 && options.initial_backoff_s <= 60)) {
    return Status::Invalid(
        fmt::format("Prometheus client: {} attempts, back-off {} s: expected "
                    "1 to 10 attempts and 0 to 60 s",
                    options.max_attempts, options.initial_backoff_s));
  }
  return Status::Ok();
}

Status CheckPromStep(double step_s) {
  // Infinite or huge steps would reach llround to int64 milliseconds (undefined).
  if (!(step_s >= 0.001) || !std::isfinite(step_s)) {
    return Status::Invalid(
        fmt::format("--step {}: expected a finite number of seconds, at least 0.001 (Prometheus's "
                    "resolution is 1 ms)",
                    step_s));
  }
  return Status::Ok();
}

Result<PromClient> PromClient::Create(const std::string& base_url, PromClientOptions options) {
  if (!base_url.starts_with("http://")) {
    return Status::Invalid(fmt::format("{}: Prometheus URL must start with http://", base_url));
  }
  TTFT_RETURN_IF_ERROR(CheckPromClientOptions(options));
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

namespace {

// Stops `client` (shuts its socket down) when `timeout_s` passes before Disarm():
// httplib's timeouts bound each read, so a server that sends a byte per second would
// otherwise hold a request forever.
class Watchdog {
 public:
  Watchdog(httplib::Client& client, double timeout_s)
      : thread_([this, &client, timeout_s] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                            [this] { return disarmed_; })) {
            fired_ = true;
            client.stop();
          }
        }) {}
  ~Watchdog() { Disarm(); }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  // Returns whether the deadline passed (and the request was stopped).
  bool Disarm() {
    {
      std::lock_guard lock(mu_);
      disarmed_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    return fired_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  bool fired_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace

Result<std::string> PromClient::Get(const std::string& path) {
  std::string last_error;
  double backoff = impl_->options.initial_backoff_s;
  const int attempts = std::max(1, impl_->options.max_attempts);
  const size_t max_bytes = impl_->options.max_response_bytes;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    std::string body;
    bool too_large = false;
    Watchdog watchdog(*impl_->client, impl_->options.timeout_s);
    auto res = impl_->client->Get(path, [&](const char* data, size_t n) {
      if (n > max_bytes - body.size()) {
        too_large = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    const bool timed_out = watchdog.Disarm();
    if (too_large) {
      return Status::Invalid(fmt::format(
          "Prometheus at {}: response larger than {} MiB (limit of one response): narrow "
          "--selector, shorten the window or use a longer --step",
          impl_->base_url, max_bytes >> 20));
    }
    if (timed_out) {
      last_error = fmt::format("no complete response within {} s", impl_->options.timeout_s);
    } else if (res) {
      // 400/422 carry Prometheus's JSON error: a bad query, not worth retrying.
      if (res->status == 200 || res->status == 400 || res->status == 422) {
        if (body.empty()) body = std::move(res->body);
        return body;
      }
      last_error = fmt::format("HTTP {}", res->status);
      if (res->status < 500 && res->status != 429) break;
    } else {
      last_error = DescribeError(res.error(), impl_->options.timeout_s);
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

Result<std::vector<MetricSnapshot>> FetchPromWindow(PromClient& client, std::string selector,
                                                    double from_s, double to_s, double max_step_s) {
  if (!(to_s > from_s) || !std::isfinite(from_s) || !std::isfinite(to_s)) {
    return Status::Invalid(
        fmt::format("Prometheus window [{}, {}]: --to must be after --from", from_s, to_s));
  }
  // Whole milliseconds below fit int64_t with room for the sums: |t| <= 1e15 s (the
  // year 31.7 million) keeps range_ms + max_step_ms under 2^63.
  constexpr double kMaxAbsTimeS = 1e15;
  if (!(std::abs(from_s) <= kMaxAbsTimeS && std::abs(to_s) <= kMaxAbsTimeS)) {
    return Status::Invalid(
        fmt::format("Prometheus window [{}, {}]: times must be within +-1e15 s of the Unix epoch",
                    from_s, to_s));
  }
  TTFT_RETURN_IF_ERROR(CheckPromStep(max_step_s));
  max_step_s = std::min(max_step_s, to_s - from_s);  // longer than the window: one interval
  // Checked here, before the first query: a typo is named locally (not as Prometheus's
  // bad_data, or a refused connection first), and a value cannot close the braces and
  // add series of another query. The target may be Prometheus 3: quoted UTF-8 names pass.
  const std::string_view inner = StripSelectorBraces(selector);
  TTFT_RETURN_IF_ERROR(CheckLabelMatchers(inner, "--selector", {.quoted_names = true}));
  selector = std::string(TrimLabelMatchers(inner));
  // A grid of whole milliseconds (Prometheus's resolution) from from_s, plus the end
  // point to_s when the range is not a whole number of steps.
  const int64_t from_ms = std::llround(from_s * 1000);
  const int64_t range_ms = std::max<int64_t>(1, std::llround(to_s * 1000) - from_ms);
  const int64_t to_ms = from_ms + range_ms;
  const int64_t max_step_ms = std::max<int64_t>(1, std::llround(max_step_s * 1000));
  const int64_t n = (range_ms + max_step_ms - 1) / max_step_ms;
  if (n >= 11000) {
    return Status::Invalid(
        fmt::format("Prometheus window of {} s at a step of {} s needs {} points, over "
                    "Prometheus's 11,000: use a longer step",
                    to_s - from_s, max_step_s, n + 1));
  }
  const int64_t step_ms = range_ms / n;
  const std::vector<std::string> families = CanonicalFamilyNames();
  const std::string expr = SeriesExpr(families, selector);
  auto ms = [](int64_t v) { return static_cast<double>(v) / 1000; };
  TTFT_ASSIGN_OR_RETURN(std::vector<PromSeries> series,
                        client.QueryRange(expr, ms(from_ms), ms(to_ms), ms(step_ms)));
  if (from_ms + n * step_ms != to_ms) {
    TTFT_ASSIGN_OR_RETURN(std::vector<PromSeries> last, client.Query(expr, ms(to_ms)));
    std::map<Labels, size_t> index;
    for (size_t i = 0; i < series.size(); ++i) index.emplace(series[i].labels, i);
    for (PromSeries& s : last) {
      auto it = index.find(s.labels);
      if (it == index.end()) {
        series.push_back(std::move(s));
      } else {
        series[it->second].points.insert(series[it->second].points.end(), s.points.begin(),
                                         s.points.end());
      }
    }
  }
  if (series.empty()) {
    return Status::NotFound(
        fmt::format("Prometheus: no series match {} in [{}, {}]", expr, ms(from_ms), ms(to_ms)));
  }
  return SnapshotsFromSeries(series);
}

}  // namespace ttft
