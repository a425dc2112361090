// -----------------------------------------------------------------------------
// File: ttft/prometheus.h
// -----------------------------------------------------------------------------
//
// The Prometheus HTTP API (/api/v1/query, /api/v1/query_range): a minimal client,
// the parser of its JSON responses (live or saved to a file), and the conversion of
// raw series into MetricSnapshots ready for WindowDelta (ttft/metrics.h).
//
// Example:
//
//   TTFT_ASSIGN_OR_RETURN(auto client, ttft::PromClient::Create("http://127.0.0.1:9090"));
//   TTFT_ASSIGN_OR_RETURN(auto snaps, ttft::FetchPromWindow(client, "", from_s, to_s));
//
// Thread safety: a PromClient is not thread-safe; the free functions are re-entrant.

#ifndef TTFT_PROMETHEUS_H_
#define TTFT_PROMETHEUS_H_

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ttft/core.h"
#include "ttft/metrics.h"

namespace ttft {

// -----------------------------------------------------------------------------
// Prometheus HTTP API (/api/v1/query, /api/v1/query_range)
// -----------------------------------------------------------------------------

// One series of a query result: its labels (with __name__ when present) and
// (time_s, value) points; an instant query gives one point.
struct PromSeries {
  Labels labels;
  std::vector<std::pair<double, double>> points;
};

// Parses a /api/v1/query or /api/v1/query_range response body ("matrix" or
// "vector"). An "error" status becomes InvalidArgument with Prometheus's message.
Result<std::vector<PromSeries>> ParsePromQueryJson(std::string_view body);

// Turns raw series (name_bucket{le}, name_sum, name_count, counters, gauges) into one
// snapshot per distinct timestamp, ordered in time, typed by name: *_bucket with le
// (and its _sum/_count) is a histogram, *_total a counter, anything else a gauge.
std::vector<MetricSnapshot> SnapshotsFromSeries(std::span<const PromSeries> series);

// The most bytes one HTTP response may have: a larger (or endless) body is an error,
// not an out-of-memory. A query_range over 11,000 points of every canonical family of
// a 100-replica fleet is about 200 MB of JSON.
inline constexpr size_t kMaxPromResponseBytes = size_t{512} << 20;

struct PromClientOptions {
  double timeout_s = 5;            // bounds each attempt as a whole: connect, request, headers
                                   // and the last byte of the body (a slow-drip server times out)
  int max_attempts = 3;            // 1 + retries, for connection errors, timeouts and 5xx / 429
  double initial_backoff_s = 0.2;  // doubled after each failed attempt
  size_t max_response_bytes = kMaxPromResponseBytes;  // over it: InvalidArgument, no retry
};

// timeout_s in (0, 300], 1 to 10 attempts, a back-off of 0 to 60 s; else InvalidArgument
// naming the value. PromClient::Create checks its options with it; so do the commands
// that take --timeout before they know whether they will query a server.
Status CheckPromClientOptions(const PromClientOptions& options);

// A query_range step (`--step`) finite and at least 1 ms, Prometheus's resolution; else
// InvalidArgument naming --step and the value. FetchPromWindow checks it; so do the
// commands that take --step before they know whether they will query a server.
Status CheckPromStep(double step_s);

// A minimal client for the Prometheus HTTP API. Errors: Unavailable when the
// server cannot be reached or does not answer within timeout_s after every attempt
// (the message names the URL and the last error), InvalidArgument for a rejected
// query or a response over max_response_bytes, NotFound when a fetch finds no series.
// Not thread-safe.
class PromClient {
 public:
  // `base_url` like "http://127.0.0.1:9090" (http only).
  static Result<PromClient> Create(const std::string& base_url, PromClientOptions options = {});
  PromClient(PromClient&&) noexcept;
  PromClient& operator=(PromClient&&) noexcept;
  ~PromClient();

  Result<std::vector<PromSeries>> Query(const std::string& expr, double time_s);
  Result<std::vector<PromSeries>> QueryRange(const std::string& expr, double start_s, double end_s,
                                             double step_s);

 private:
  struct Impl;
  explicit PromClient(std::unique_ptr<Impl> impl);
  Result<std::string> Get(const std::string& path);
  std::unique_ptr<Impl> impl_;
};

// Pulls the window [from_s, to_s] (Unix seconds, whole milliseconds) of every canonical
// family matching `selector` (label matchers with or without the braces, e.g.
// `{model_name="m"}`; may be empty) as snapshots ready for WindowDelta: a query_range
// grid from from_s with a step of at most max_step_s, plus an instant query at to_s when
// the grid does not end there, so the first and last snapshots are exactly the window's
// edges. Each grid point holds the latest sample at or before it (PromQL instant-vector
// semantics), so a counter reset is seen unless the counter regrows past its old value
// before the next grid point: use a step no longer than the scrape interval to see every
// reset. Errors, all InvalidArgument ones before any query: InvalidArgument for an
// empty window or one beyond +-1e15 s, a step CheckPromStep refuses, a selector
// CheckLabelMatchers (ttft/promql.h) refuses (quoted UTF-8 label names allowed; the
// message names --selector), and 11,000 grid points or more (Prometheus's limit);
// NotFound when no series match; PromClient's errors.
Result<std::vector<MetricSnapshot>> FetchPromWindow(PromClient& client, std::string selector,
                                                    double from_s, double to_s,
                                                    double max_step_s = 15);

}  // namespace ttft

#endif  // TTFT_PROMETHEUS_H_
