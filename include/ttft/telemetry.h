// -----------------------------------------------------------------------------
// File: ttft/telemetry.h
// -----------------------------------------------------------------------------
//
// Telemetry in and out: the span JSON Lines format (docs/spans.md) and the
// Prometheus text exposition format (version 0.0.4) with vLLM v1 metric names.
//
// The simulator writes through this module; real telemetry is read through it, so
// the diagnosis never knows whether its input was simulated. This module knows
// nothing of the engine's internals: it formats and parses plain data.
//
// Example:
//
//   ttft::SpanJsonlWriter w;
//   TTFT_RETURN_IF_ERROR(w.Open("out/spans.jsonl"));
//   TTFT_RETURN_IF_ERROR(w.Write(span));
//   TTFT_RETURN_IF_ERROR(w.Close());
//
// Thread safety: writers are not thread-safe; use one per thread.

#ifndef TTFT_TELEMETRY_H_
#define TTFT_TELEMETRY_H_

#include <array>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ttft/core.h"
#include "ttft/stats.h"

namespace ttft {

// -----------------------------------------------------------------------------
// Spans as JSON Lines
// -----------------------------------------------------------------------------

// Appends one span as a single JSON object (no trailing newline) to `out`.
// Field order is fixed and numbers are printed with the shortest round-trip form,
// so the same span always gives the same bytes. NaN durations are written as null.
void AppendSpanJson(const Span& span, std::string& out);

// Streams spans to a file, one JSON object per line, through a buffer.
class SpanJsonlWriter {
 public:
  SpanJsonlWriter() = default;
  ~SpanJsonlWriter();
  SpanJsonlWriter(const SpanJsonlWriter&) = delete;
  SpanJsonlWriter& operator=(const SpanJsonlWriter&) = delete;

  Status Open(const std::string& path);
  // REQUIRES: Open() succeeded.
  Status Write(const Span& span);
  // Flushes and closes; reports a failed write. Safe to call twice.
  Status Close();
  int64_t spans_written() const { return spans_written_; }

 private:
  Status Flush();
  std::FILE* file_ = nullptr;
  std::string path_;
  std::string buf_;
  int64_t spans_written_ = 0;
};

// Appends `spans` as one OTLP/JSON ExportTraceServiceRequest on one line (no trailing
// newline), as the OpenTelemetry Collector's file exporter writes it: one ResourceSpans
// per (replica, region) with `service.instance.id` and `cloud.region` resource
// attributes, and per span vLLM's `llm_request` span with its gen_ai.* attributes
// (vllm/tracing.py SpanAttributes): gen_ai.latency.{time_in_queue, time_to_first_token,
// time_in_model_prefill, time_in_model_decode, e2e}, gen_ai.usage.{prompt_tokens,
// completion_tokens, cache_read.input_tokens}, gen_ai.request.id, gen_ai.response.model.
// startTimeUnixNano is arrival_s in nanoseconds (a decimal string). Unknown values
// (NaN, -1) are left out. Errors and rejections get status code 2, aborts
// finish_reasons ["abort"]. front_end_s, itl_max_s, preemptions and the tenant,
// template and deploy labels have no vLLM attribute and are not written; the reader
// derives itl_mean_s from decode / (completion_tokens - 1).
void AppendOtlpJson(std::span<const Span> spans, std::string& out);

// -----------------------------------------------------------------------------
// Metrics: a plain model of one exposition snapshot
// -----------------------------------------------------------------------------

// Label pairs, kept sorted by name (the order prometheus_client prints).
using Labels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType : uint8_t { kCounter, kGauge, kHistogram, kSummary, kUntyped };
std::string_view ToString(MetricType t);

// A histogram series. `upper_bounds` are the finite `le` bounds in increasing
// order; `cumulative_counts[i]` counts observations <= upper_bounds[i];
// `count` is the +Inf bucket. Invariant: cumulative_counts is non-decreasing and
// <= count.
struct HistogramValue {
  std::vector<double> upper_bounds;
  std::vector<double> cumulative_counts;
  double count = 0;
  double sum = 0;
};

struct MetricSeries {
  Labels labels;
  double value = 0;          // counters and gauges
  HistogramValue histogram;  // histograms
  // Summaries: (quantile, value) pairs in exposition order; `histogram.count` and
  // `histogram.sum` carry _count and _sum.
  std::vector<std::pair<double, double>> summary_quantiles;
};

// A metric family as exposed. For counters `name` is the exposed sample name
// (with `_total`), for histograms the base name (samples add _bucket/_sum/_count).
struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kUntyped;
  std::vector<MetricSeries> series;
};

struct MetricSnapshot {
  double timestamp_s = 0;  // scrape time, in the run's time base
  std::vector<MetricFamily> families;
};

// Renders a snapshot in the Prometheus text exposition format 0.0.4, as
// prometheus_client does: "# HELP", "# TYPE", then samples; `le` formatted like
// Python's float repr ("0.001", "1.0", "1e+06"), "+Inf" last.
std::string FormatExposition(const MetricSnapshot& snapshot);

// Formats a double like prometheus_client's floatToGoString: "+Inf", "-Inf", "NaN",
// integers with ".0", Go-style exponents ("1e+06") at and above 1e6 for
// integral values.
std::string FormatPromFloat(double v);

// =============================================================================
// Reading telemetry (docs/telemetry.md)
// =============================================================================
//
// Readers never throw and never crash on bad input. A malformed record is reported
// with file, line and reason; by default it is skipped and counted, and the
// ReadReport summarises what was skipped. With `strict`, the first bad record stops
// the read with Status::DataError (exit 65).

// One bad (skipped) record.
struct RecordIssue {
  std::string file;
  int64_t line = 0;  // 1-based; 0 when not known
  std::string reason;
};

// What a read did. Readers append to a report, so one report can cover many files.
struct ReadReport {
  static constexpr size_t kMaxIssues = 100;  // issues kept verbatim; all are counted
  int64_t records_read = 0;                  // accepted records (spans, samples)
  int64_t records_skipped = 0;               // rejected records
  int64_t records_ignored = 0;  // well-formed but not request records (e.g. start-up spans)
  std::vector<RecordIssue> issues;
  std::map<std::string, int64_t> skipped_by_category;
  std::vector<std::string> warnings;  // file-level doubts (e.g. units), not skipped records

  // Records a skipped record. `category` is a short stable key ("malformed json").
  void Skip(std::string_view file, int64_t line, std::string_view category, std::string reason);
  // "N records skipped: 3 malformed json, 1 duplicate request_id; first: f:12: ..."
  // Empty when nothing was skipped and there are no warnings.
  std::string Summary() const;
};

// Input kinds. kAuto detects from content (docs/telemetry.md "Detection").
enum class InputFormat : uint8_t {
  kAuto,
  kSpanJsonl,      // ttft's span JSON Lines (docs/spans.md)
  kCsv,            // a header row, then one span per row
  kOtlp,           // OTLP/JSON traces, one ExportTraceServiceRequest per line or one document
  kSpanSink,       // flattened span lines {"name","start_unix_ns","attributes":{..}}
  kProm,           // Prometheus text exposition 0.0.4
  kPromQueryJson,  // a saved /api/v1/query_range (or query) response
};
std::string_view ToString(InputFormat f);
std::optional<InputFormat> ParseInputFormat(std::string_view s);  // "auto", "jsonl", ...

// Maps source field names onto span fields, with a unit for durations, e.g.
//   "ttft_s=ttft_ms:ms,queue_s=queue_time:s,request_id=id"
// Targets are the span JSON keys of docs/spans.md. Units: s, ms, us, ns.
struct ColumnMap {
  struct Entry {
    std::string target;  // span key, e.g. "ttft_s"
    std::string source;  // field name in the input
    double scale = 1;    // multiply the source value by this to get the target unit
  };
  std::vector<Entry> entries;
  bool empty() const { return entries.empty(); }
  // Parses the textual form above. InvalidArgument names the bad entry.
  static Result<ColumnMap> Parse(std::string_view spec);
};

struct SpanReadOptions {
  InputFormat format = InputFormat::kAuto;
  bool strict = false;
  ColumnMap columns;
  // Detect duplicate request ids (8 bytes of memory per span while reading).
  bool detect_duplicates = true;
  // Read buffer; memory stays O(chunk_bytes + longest line) whatever the file size.
  size_t chunk_bytes = size_t{8} << 20;
  // ReadSpanTable only: threads for one file (0: one per core), and the smallest file
  // it splits.
  int threads = 0;
  uint64_t parallel_min_bytes = uint64_t{64} << 20;
};

// A span as a reader hands it over: the fields of ttft::Span with labels as views
// into the reader's buffer (valid only during SpanSink::Add).
struct SpanRecord {
  std::string_view request_id;
  double arrival_s = std::numeric_limits<double>::quiet_NaN();
  double queue_s = std::numeric_limits<double>::quiet_NaN();
  double prefill_s = std::numeric_limits<double>::quiet_NaN();
  double front_end_s = std::numeric_limits<double>::quiet_NaN();
  double ttft_s = std::numeric_limits<double>::quiet_NaN();
  double decode_s = std::numeric_limits<double>::quiet_NaN();
  double e2e_s = std::numeric_limits<double>::quiet_NaN();
  double itl_mean_s = std::numeric_limits<double>::quiet_NaN();
  double itl_max_s = std::numeric_limits<double>::quiet_NaN();
  int64_t prompt_tokens = -1;
  int64_t cached_tokens = -1;
  int64_t output_tokens = -1;
  int32_t preemptions = -1;
  RequestStatus status = RequestStatus::kOk;
  std::array<std::string_view, 6> labels;  // indexed by SpanLabel
};

// The labels a span carries, in SpanRecord::labels order.
enum class SpanLabel : uint8_t { kReplica, kRegion, kTenant, kModel, kTemplate, kDeploy };
inline constexpr int kNumSpanLabels = 6;
std::string_view ToString(SpanLabel l);                       // "replica", ..., "template"
std::optional<SpanLabel> ParseSpanLabel(std::string_view s);  // the inverse

// Receives accepted spans from a reader.
class SpanSink {
 public:
  virtual ~SpanSink() = default;
  virtual void Add(const SpanRecord& span) = 0;
  // A hint from a reader that about `n` more spans are coming (estimated from the
  // file size and the first lines). Sinks may reserve; the default ignores it.
  virtual void ExpectMore(size_t n) { (void)n; }
};

// Checks one span for the record-level problems every reader rejects: negative or
// infinite durations, ttft_s < queue_s (clock skew), a duration above one hour in a
// seconds field (looks like milliseconds), cached_tokens > prompt_tokens. Returns
// the reason, or an empty string when the span is acceptable.
std::string ValidateSpan(const SpanRecord& span);

// -----------------------------------------------------------------------------
// The columnar span table
// -----------------------------------------------------------------------------

// Spans as a struct of arrays: arrival time as double (Unix seconds need it),
// durations as float (7 significant digits: 0.1 us at 1 s), token counts as int32,
// and the six labels interned as one 32-bit label-set code: 59 bytes of column data
// per span. bytes_per_span() reports the real heap figure including vector capacity
// and interning; after ShrinkToFit() it is 59 plus the label dictionaries (under 64 for
// tables of more than a few thousand spans). Missing durations are NaN, missing counts
// -1. Request ids are not stored (duplicates are caught while reading).
//
// Thread safety: const methods may be called concurrently; Add needs exclusive use.
class SpanTable : public SpanSink {
 public:
  void Add(const SpanRecord& span) override;
  // Reserves room for size() + n spans (readers call it with their estimate).
  void ExpectMore(size_t n) override { Reserve(size() + n); }
  size_t size() const { return arrival_s_.size(); }
  void Reserve(size_t n);
  // Releases the columns' unused capacity (call once a load is complete).
  void ShrinkToFit();
  // Appends rows [0, min(end_row, other.size())) of `other` except `skip_rows`
  // (ascending), re-interning their labels: the same table, label ids included, as
  // Add()ing those rows in order. With threads > 1 a large append without skipped
  // rows copies its columns on two threads.
  void Append(const SpanTable& other, std::span<const size_t> skip_rows = {},
              size_t end_row = SIZE_MAX, int threads = 1);
  // Keeps rows [0, n): the same table, label ids included, as Add()ing only those.
  void Truncate(size_t n);

  std::span<const double> arrival_s() const { return arrival_s_; }
  std::span<const float> queue_s() const { return queue_s_; }
  std::span<const float> prefill_s() const { return prefill_s_; }
  std::span<const float> front_end_s() const { return front_end_s_; }
  std::span<const float> ttft_s() const { return ttft_s_; }
  std::span<const float> decode_s() const { return decode_s_; }
  std::span<const float> e2e_s() const { return e2e_s_; }
  std::span<const float> itl_mean_s() const { return itl_mean_s_; }
  std::span<const float> itl_max_s() const { return itl_max_s_; }
  std::span<const int32_t> prompt_tokens() const { return prompt_tokens_; }
  std::span<const int32_t> cached_tokens() const { return cached_tokens_; }
  std::span<const int32_t> output_tokens() const { return output_tokens_; }
  std::span<const int16_t> preemptions() const { return preemptions_; }
  std::span<const RequestStatus> status() const { return status_; }
  std::span<const uint32_t> label_set() const { return label_set_; }

  // The value of `label` for row `row`. REQUIRES: row < size().
  std::string_view label(size_t row, SpanLabel label) const;
  // Number of distinct label sets, and the label of a label set.
  size_t num_label_sets() const { return label_sets_.size(); }
  std::string_view label_of_set(uint32_t set, SpanLabel label) const;

  // The row as a Span (request_id empty).
  Span Get(size_t row) const;
  // Heap bytes held by the columns divided by size() (0 when empty).
  double bytes_per_span() const;

 private:
  uint32_t Intern(std::string_view s);
  uint32_t InternSet(const std::array<uint32_t, kNumSpanLabels>& ids);
  // The columns but label_set_, as a tuple of references (span_table.cc only).
  auto DataColumns();
  auto DataColumns() const;
  // Columns on huge pages (LargeVector): a 10 M-span table is ~600 MB.
  LargeVector<double> arrival_s_;
  LargeVector<float> queue_s_, prefill_s_, front_end_s_, ttft_s_, decode_s_, e2e_s_, itl_mean_s_,
      itl_max_s_;
  LargeVector<int32_t> prompt_tokens_, cached_tokens_, output_tokens_;
  LargeVector<int16_t> preemptions_;
  LargeVector<RequestStatus> status_;
  LargeVector<uint32_t> label_set_;
  // Interning: strings and label sets, each with an open-addressing index of ids
  // (UINT32_MAX = empty slot, power-of-two size, at most half full) keyed by the
  // XXH3 hash of the string or of the label set's ids.
  std::deque<std::string> strings_;  // a deque: views into it stay valid as it grows
  std::vector<uint64_t> string_hashes_;
  std::vector<uint32_t> string_slots_;
  std::vector<std::array<uint32_t, kNumSpanLabels>> label_sets_;
  std::vector<uint64_t> label_set_hashes_;
  std::vector<uint32_t> label_set_slots_;
  std::array<uint32_t, kNumSpanLabels> last_ids_{};  // the previous span's label ids
  uint32_t last_set_ = UINT32_MAX;
};

// Detects the format of a file from its first bytes (after gzip decompression).
InputFormat DetectFormat(std::string_view head);

// Reads spans from `path` ("-" is standard input; gzip is detected by its magic
// bytes) into `sink`, streaming in chunks of options.chunk_bytes. Formats: span
// JSONL, CSV, OTLP/JSON, span-sink lines. Errors: NotFound / IoError for the file,
// InvalidArgument for a format that holds no spans (e.g. Prometheus text), DataError
// for the first bad record under `strict`.
Status ReadSpans(const std::string& path, const SpanReadOptions& options, SpanSink& sink,
                 ReadReport& report);

// ReadSpans into a table, on options.threads threads for a plain (not gzip, not
// stdin) span JSONL file of at least options.parallel_min_bytes: the file is parsed
// in byte ranges split at newlines, each into its own table, then merged in file
// order. The table (rows, label ids), the report (issues with file:line in file order,
// duplicate ids across ranges, counts by category, warnings) and the status (under
// strict, the first bad record in file order) are those of ReadSpans. Other inputs
// go to ReadSpans. Memory: the spans of the ranges after the first are held twice
// while they are merged.
Status ReadSpanTable(const std::string& path, const SpanReadOptions& options, SpanTable& table,
                     ReadReport& report);

// Parses spans from an in-memory buffer (tests, fuzzing). `source` names it in issues.
Status ParseSpans(std::string_view data, std::string_view source, const SpanReadOptions& options,
                  SpanSink& sink, ReadReport& report);

// Reads a whole file ("-" for stdin, gzip detected) into memory.
Result<std::string> ReadInputFile(const std::string& path);
// Reads at most the first `max_bytes` bytes (after gzip decompression) of a file, e.g.
// for DetectFormat. Not for "-": what it reads from standard input is consumed.
Result<std::string> ReadInputHead(const std::string& path, size_t max_bytes);

// -----------------------------------------------------------------------------
// Prometheus text exposition format 0.0.4: parsing
// -----------------------------------------------------------------------------

struct ExpositionParseOptions {
  bool strict = false;
  std::string source = "<exposition>";  // file name for issues
};

// Parses one scrape. Accepts any label order, escapes (\\, \", \n) in label values,
// optional HELP/TYPE lines and timestamps, `le`/`quantile` as numbers ("1e+06",
// "+Inf"), NaN/+Inf/-Inf values. `_created` samples and the `*_created` gauge
// families prometheus_client emits beside counters and histograms are dropped.
// Samples without a TYPE are untyped families, except that *_bucket (with le),
// *_sum and *_count siblings are assembled into a histogram. A last line without a
// newline is reported as a scrape cut mid-line and dropped. Bad lines are skipped
// and reported (DataError at the first under strict).
Result<MetricSnapshot> ParseExposition(std::string_view text, const ExpositionParseOptions& options,
                                       ReadReport& report);

// Reads and parses a file ("-" for stdin, gzip detected).
Result<MetricSnapshot> ReadExpositionFile(const std::string& path, bool strict, ReadReport& report);

// Quantities that tell TTFT regressions apart, whatever the engine calls them.
enum class CanonicalMetric : uint8_t {
  kTtft,                // histogram, s
  kQueue,               // histogram, s
  kPrefill,             // histogram, s
  kDecode,              // histogram, s
  kE2e,                 // histogram, s
  kItl,                 // histogram, s
  kPromptTokensHist,    // histogram, tokens per request
  kPrefixCacheHits,     // counter, tokens (blocks in early V1)
  kPrefixCacheQueries,  // counter, tokens (blocks in early V1)
  kPreemptions,         // counter
  kPromptTokens,        // counter, tokens
  kCachedPromptTokens,  // counter, tokens
  kKvCacheUsage,        // gauge, fraction 0..1
  kRunning,             // gauge, requests
  kWaiting,             // gauge, requests
  kRequestsFinished,    // counter, requests
};
std::string_view ToString(CanonicalMetric m);  // "ttft", "queue", ...

// The exposed family names that carry `m`, in order of preference: vLLM V1, vLLM V0
// / deprecated names, SGLang (docs/telemetry.md has the table).
std::span<const std::string_view> FamilyNamesFor(CanonicalMetric m);

// The first family of `snapshot` that carries `m`, or nullptr.
const MetricFamily* FindCanonical(const MetricSnapshot& snapshot, CanonicalMetric m);

// Window increase between snapshots ordered in time, per series (family + labels),
// like PromQL's increase() WITHOUT extrapolation: the sum of positive differences
// between consecutive snapshots, where a decrease is a counter reset and the new
// value counts from zero. For histograms a reset is detected on _count and applies
// to the whole series (buckets, _sum, _count). Gauges take the last value. Series
// missing from the first snapshot count from zero (created in the window); series
// whose bucket bounds change are skipped and reported. REQUIRES: >= 2 snapshots.
Result<MetricSnapshot> WindowDelta(std::span<const MetricSnapshot> snapshots, ReadReport& report);

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

struct PromClientOptions {
  double timeout_s = 5;            // connect and read timeout per attempt
  int max_attempts = 3;            // 1 + retries, for connection errors and 5xx / 429
  double initial_backoff_s = 0.2;  // doubled after each failed attempt
};

// A minimal client for the Prometheus HTTP API. Errors: Unavailable when the
// server cannot be reached after every attempt (the message names the URL and the
// last error), InvalidArgument for a rejected query, NotFound when a fetch finds no
// series. Not thread-safe.
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
  // Pulls the raw series of `families` (histogram bases or counter/gauge names)
  // matching `selector` (e.g. `model_name="x"`, may be empty) over [start_s, end_s]
  // at `step_s`, as snapshots ready for WindowDelta.
  Result<std::vector<MetricSnapshot>> FetchSnapshots(std::span<const std::string> families,
                                                     const std::string& selector, double start_s,
                                                     double end_s, double step_s);

 private:
  struct Impl;
  explicit PromClient(std::unique_ptr<Impl> impl);
  Result<std::string> Get(const std::string& path);
  std::unique_ptr<Impl> impl_;
};

// Every exposed family name of every CanonicalMetric (all spellings of FamilyNamesFor).
std::vector<std::string> CanonicalFamilyNames();

// Pulls the window [from_s, to_s] (Unix seconds, whole milliseconds) of every canonical
// family matching `selector` (label matchers with or without the braces, e.g.
// `{model_name="m"}`; may be empty) as snapshots ready for WindowDelta: a query_range
// grid from from_s with a step of at most max_step_s, plus an instant query at to_s when
// the grid does not end there, so the first and last snapshots are exactly the window's
// edges. Each grid point holds the latest sample at or before it (PromQL instant-vector
// semantics), so a counter reset is seen unless the counter regrows past its old value
// before the next grid point: use a step no longer than the scrape interval to see every
// reset. Errors: InvalidArgument for an empty window or 11,000 grid points or more
// (Prometheus's limit), NotFound when no series match, and PromClient's errors.
Result<std::vector<MetricSnapshot>> FetchPromWindow(PromClient& client, std::string selector,
                                                    double from_s, double to_s,
                                                    double max_step_s = 15);

// =============================================================================
// Per-group summaries for `ttft stats` (docs/telemetry.md)
// =============================================================================

}  // namespace ttft

#endif  // TTFT_TELEMETRY_H_
