// -----------------------------------------------------------------------------
// File: ttft/dataset.h
// -----------------------------------------------------------------------------
//
// The inputs of an analysis and the windows over them. A Dataset is what every
// analysing command (`stats`, `diagnose`, `gate`) starts from: the spans, the metric
// snapshots, the change annotations, the names of the sources and the data's time
// range, loaded from paths of any format the telemetry readers take, from a
// `ttft simulate` output folder, from an events file, or from a live Prometheus.
// A window chooser turns a change time, a window length or explicit ranges into the
// baseline and incident windows, or into an error that says what to give instead.
// Times on the command line (seconds or RFC 3339) are parsed here.
//
// Example:
//
//   ttft::LoadOptions options;                  // auto-detect every input's format
//   ttft::Dataset data;
//   for (const std::string& path : paths) TTFT_RETURN_IF_ERROR(ttft::LoadInput(path, options,
//   data)); ttft::FinishLoading(data);                  // sort scrapes, compute the time range
//   ttft::WindowRequest want;
//   TTFT_ASSIGN_OR_RETURN(want.change_at_s, ttft::ParseTime("2025-06-01T12:00:00Z"));
//   TTFT_ASSIGN_OR_RETURN(ttft::AnalysisWindows w, ttft::ChooseWindows(want, data));
//
// Thread safety: the functions are re-entrant; a Dataset is a value.

#ifndef TTFT_DATASET_H_
#define TTFT_DATASET_H_

#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/core.h"
#include "ttft/input.h"
#include "ttft/metrics.h"
#include "ttft/prometheus.h"
#include "ttft/spans.h"
#include "ttft/window_stats.h"

namespace ttft {

// -----------------------------------------------------------------------------
// Times
// -----------------------------------------------------------------------------

// Parses seconds ("1200", "1200.5") or an RFC 3339 time ("2025-06-01T12:00:00Z",
// "2025-06-01T12:00:00.250+02:00") into seconds in the spans' time base (Unix seconds
// for RFC 3339). Fractions beyond nanoseconds are accepted and ignored. Errors
// (InvalidArgument) name the text and what was expected.
Result<double> ParseTime(std::string_view text);

// [from_s, to_s): a span belongs to it by its arrival time.
struct TimeRange {
  double from_s = std::numeric_limits<double>::quiet_NaN();
  double to_s = std::numeric_limits<double>::quiet_NaN();
  // True when both ends are finite and from_s < to_s.
  bool valid() const { return std::isfinite(from_s) && std::isfinite(to_s) && from_s < to_s; }
};

// Parses "FROM:TO" (each as ParseTime), FROM < TO. `flag` names the option in errors.
Result<TimeRange> ParseTimeRange(std::string_view text, std::string_view flag);

// The --from/--to window check of `ttft stats` and `ttft gate`: InvalidArgument unless
// from_s < to_s (either may be infinite: open on that side; NaN is no window).
Status CheckFromTo(double from_s, double to_s);

// -----------------------------------------------------------------------------
// Change annotations (the events file)
// -----------------------------------------------------------------------------

// A timestamped change (deploy, flag flip, drain) cited by the report.
struct Annotation {
  double at_s = 0;
  std::string kind;    // e.g. "deploy_template"
  std::string target;  // e.g. "app" or "rag-0"
  std::string detail;  // free text, e.g. "app -> v2"
};

// Reads an events file: a JSON array, an object with an "events" array (as a simulate
// folder's summary.json), or JSON Lines; each event {at_s | time, kind, target,
// detail | note}. Errors name the file and line of a bad event (a line that is not
// UTF-8 says so). With `warnings`: an event identical to an earlier one is read once,
// and a file without an event is said, each with the file (and line).
Result<std::vector<Annotation>> ReadEvents(const std::string& path,
                                           std::vector<std::string>* warnings = nullptr);
// The same from the text of an events file; errors name `source` (and the line).
Result<std::vector<Annotation>> ParseEvents(std::string_view text, const std::string& source,
                                            std::vector<std::string>* warnings = nullptr);

// -----------------------------------------------------------------------------
// Loading
// -----------------------------------------------------------------------------

struct LoadOptions {
  // Format, strictness and column mapping of span inputs (`--input-format`,
  // `--strict`, `--columns`). A format other than auto applies to every file input.
  SpanReadOptions read;
  // A scrape without sample timestamps takes its time from its file name
  // ("t<seconds>.prom"); when neither gives one it is an error if this is set, else
  // its time stays 0 (a single cumulative scrape needs none).
  bool require_snapshot_times = true;
};

// Everything the inputs held. Spans of all span inputs go into one table.
struct Dataset {
  SpanTable spans;
  bool has_spans = false;
  std::vector<MetricSnapshot> snapshots;  // sorted by timestamp_s after FinishLoading
  int64_t untimed_scrapes = 0;  // scrapes loaded with no time (require_snapshot_times off)
  std::vector<Annotation> annotations;
  std::vector<std::string> sources;  // input names, in the order given
  ReadReport report;                 // every input's skipped records and warnings
  // A `ttft simulate` folder's summary.json: its change time and analysis windows.
  double recorded_change_at_s = std::numeric_limits<double>::quiet_NaN();
  TimeRange recorded_baseline, recorded_incident;
  // The data's time range: the spans' arrivals, else the snapshots' times. Set by
  // FinishLoading; first_s > last_s when the data holds no times.
  double first_s = std::numeric_limits<double>::infinity();
  double last_s = -std::numeric_limits<double>::infinity();
  // [first_s, the next double after last_s): every arrival inside.
  TimeRange range() const;
};

// Adds one input to `data`: a span file (JSONL, CSV, OTLP, span sink; gzip ok; "-" is
// standard input, read as spans unless `options.read.format` says otherwise), a
// Prometheus scrape (.prom text) or saved query_range JSON, or a `ttft simulate`
// output folder (spans.jsonl, metrics/*.prom, summary.json), or a folder of *.prom
// scrapes. A simulate folder's spans.jsonl given alone also brings its summary's
// events; its metrics/ folder given alone brings its summary's events and windows
// (the same windows as the whole folder's). Errors: NotFound for a
// missing path, InvalidArgument for a folder with nothing to read or a scrape with no
// time, and whatever the readers return (with file:line).
Status LoadInput(const std::string& path, const LoadOptions& options, Dataset& data);

// Adds the window [from_s, to_s] of a live Prometheus server (base URL) as snapshots
// at `step_s`; `selector` as FetchPromWindow takes it.
Status LoadPrometheus(const std::string& url, const std::string& selector, double from_s,
                      double to_s, double step_s, const PromClientOptions& client_options,
                      Dataset& data);

// Sorts the snapshots by time and sets the time range. Call once after the last
// LoadInput/LoadPrometheus. Scrapes that all carry no time are put in the one order in
// which every counter and histogram count grows, when their counters give one
// (OrderScrapesByCounters); otherwise they stay in the order given, with a warning.
void FinishLoading(Dataset& data);

// Orders `snaps` (scrapes of the same targets with no time) by their counters: sorted by
// the sum of every counter and histogram count, kept when in that order no series
// decreases (a warning names the reordering when it differs from the order given);
// otherwise left as given, with a warning that decreases will be read as resets.
void OrderScrapesByCounters(std::vector<MetricSnapshot>& snaps, ReadReport& report);

// LoadInput over DropRepeatedInputs(paths) in order, then FinishLoading. An error when
// `paths` is not empty and `data` then holds no span and no scrape
// (RequireUsableRecords).
Status LoadDataset(std::span<const std::string> paths, const LoadOptions& options, Dataset& data);

// `paths` without the inputs given twice: a file named again (the same file by device
// and inode, whatever the path) or a file with the same bytes as an earlier one (a
// copy; compared by size, then XXH3-128, only between files of equal size). Each one
// dropped is named in `report.warnings` with the earlier input it repeats, so the
// same requests or scrapes are never counted twice. Standard input ("-") and paths
// that do not exist are kept (their readers report them).
std::vector<std::string> DropRepeatedInputs(std::span<const std::string> paths, ReadReport& report);

// Removes from `table` the rows of a later file that repeat a row of an earlier one:
// the same request given twice in two files (an overlapping export, the same spans as
// CSV and JSONL). `file_end_rows[k]` is the table size after file k, `files[k]` its name.
// A repeat is a row equal in arrival time (exactly), every duration, every token count,
// status and every label; each one removed is counted in `report` (category
// "duplicate request (in two files)", records_read decreased) with the file that
// repeats it. Within one file the readers catch duplicate request ids instead.
// REQUIRES: file_end_rows non-decreasing, the last equal to table.size().
void DropRequestsRepeatedAcrossFiles(SpanTable& table, std::span<const size_t> file_end_rows,
                                     std::span<const std::string> files, ReadReport& report);

// The spans and metric series (of all scrapes) in `data`: what LoadDataset requires
// to be > 0.
int64_t UsableRecords(const Dataset& data);

// An error naming `paths` when they gave nothing to analyse (`used` == 0: empty files,
// every record skipped or ignored), with the read report's counts and first issue. A
// run that used nothing must not exit 0 (docs/telemetry.md, "Bad input").
Status RequireUsableRecords(std::span<const std::string> paths, int64_t used,
                            const ReadReport& report);

// The snapshots covering [from_s, to_s]: those inside, plus the last one before
// `from_s` (the counters' starting point) unless one lies exactly at `from_s`.
// REQUIRES: `all` sorted by time.
std::vector<MetricSnapshot> SnapshotsCovering(std::span<const MetricSnapshot> all, double from_s,
                                              double to_s);

// -----------------------------------------------------------------------------
// Per-group statistics of inputs (`ttft stats`)
// -----------------------------------------------------------------------------

struct StatsRequest {
  LoadOptions load;
  SummaryOptions summary;  // --by, --from, --to
  // Bounded memory: DDSketch quantiles, no table. Automatic above 2 GB of span input.
  bool stream = false;
  // A live Prometheus instead of files: the window [summary.from_s, summary.to_s].
  std::string prometheus_url;
  std::string selector;
  double step_s = 15;
  PromClientOptions client;
};

struct StatsResult {
  std::vector<GroupSummary> groups;  // sorted by key
  ReadReport report;
};

// Spans give exact quantiles (or sketch ones when streaming); scrapes give histogram
// quantiles with the bucket bounds they fall between, over the window between the
// first and the last scrape (one scrape: totals since the process started). The
// first input's format decides between spans and metrics; an input of the other
// kind is an error. InvalidArgument: no inputs and no Prometheus, both, --prometheus
// without a finite --from and --to, a client option or step CheckPromClientOptions or
// CheckPromStep refuses (with or without --prometheus), or a selector without it.
Result<StatsResult> ComputeStats(std::span<const std::string> paths, const StatsRequest& request);

// -----------------------------------------------------------------------------
// Windows
// -----------------------------------------------------------------------------

// The baseline and incident windows of an analysis.
struct AnalysisWindows {
  double change_at_s = std::numeric_limits<double>::quiet_NaN();  // NaN: none
  TimeRange baseline, incident;
};

// The one window policy around a change: baseline [max(lo, change - window_s),
// change), incident [change, min(hi, change + window_s)).
// REQUIRES: window_s > 0.
AnalysisWindows WindowsAround(double change_at_s, double window_s, TimeRange data);

// What the user asked for; every field optional.
struct WindowRequest {
  double change_at_s = std::numeric_limits<double>::quiet_NaN();  // --change-at
  double window_s = 0;  // --window; 0: as wide as the data allows on both sides
  std::optional<TimeRange> baseline, incident;  // --baseline-window, --incident-window
};

// Chooses the windows over `data`, in this order: explicit ranges (both, not
// overlapping); a simulate folder's recorded windows when nothing else was asked;
// otherwise WindowsAround the change (given, else the recorded one) with the given
// window, else the widest symmetric one. Errors (InvalidArgument) say what is missing
// or wrong: no times in the data, one explicit range without the other, overlapping
// ranges, an explicit range that holds none of the arrivals, no change time, a change
// outside the data, a negative or non-finite window. Explicit ranges may come in either
// order (an incident before a recovered baseline is a comparison too).
Result<AnalysisWindows> ChooseWindows(const WindowRequest& request, const Dataset& data);

}  // namespace ttft

#endif  // TTFT_DATASET_H_
