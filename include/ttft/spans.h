// -----------------------------------------------------------------------------
// File: ttft/spans.h
// -----------------------------------------------------------------------------
//
// Spans in and out: the span JSON Lines writer (docs/spans.md) and the OTLP/JSON
// writer; the readers of every span format (span JSONL, CSV, OTLP/JSON traces,
// span-sink lines; docs/telemetry.md) into a SpanSink; and the columnar SpanTable
// that holds what they read.
//
// The simulator writes through this header; real telemetry is read through it, so
// the diagnosis never knows whether its input was simulated.
//
// Example:
//
//   ttft::SpanJsonlWriter w;
//   TTFT_RETURN_IF_ERROR(w.Open("out/spans.jsonl"));
//   TTFT_RETURN_IF_ERROR(w.Write(span));
//   TTFT_RETURN_IF_ERROR(w.Close());
//
//   ttft::SpanTable table;
//   ttft::ReadReport report;
//   TTFT_RETURN_IF_ERROR(ttft::ReadSpanTable("spans.jsonl.gz", {}, table, report));
//
// Thread safety: writers are not thread-safe (one per thread); see SpanTable.

#ifndef TTFT_SPANS_H_
#define TTFT_SPANS_H_

#include <array>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/core.h"
#include "ttft/input.h"

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
// Reading spans: records, sinks, options
// -----------------------------------------------------------------------------

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

// -----------------------------------------------------------------------------
// The readers (a format per file in src/telemetry/, behind the registry of
// src/telemetry/span_formats.cc)
// -----------------------------------------------------------------------------

// The longest line a streaming reader accepts: 256 MiB (a span is about 1 KB; an OTLP
// export batch on one line a few MB). Longer is an error naming the file and line, not
// a buffer that grows until memory runs out (a gzip bomb of one endless line).
inline constexpr size_t kMaxLineBytes = size_t{256} << 20;

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

}  // namespace ttft

#endif  // TTFT_SPANS_H_
