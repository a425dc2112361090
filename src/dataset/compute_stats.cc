// Per-group statistics of inputs for `ttft stats` (ttft/dataset.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "dataset/internal.h"
#include "ttft/dataset.h"
#include "ttft/format.h"
#include "ttft/window_stats.h"

namespace ttft {
namespace {

// Spans of every input in one table (or one sketch per quantity and group).
Status SummarizeSpanInputs(std::span<const std::string> paths, const StatsRequest& req,
                           StatsResult& out) {
  uint64_t total_bytes = 0;
  for (const std::string& in : paths) {
    std::error_code ec;
    if (in != "-") total_bytes += std::filesystem::file_size(in, ec);
  }
  if (req.stream || total_bytes > (uint64_t{2} << 30)) {
    SpanReadOptions read = req.load.read;
    read.detect_duplicates = false;  // bounded memory: O(sketches), not O(spans)
    TTFT_ASSIGN_OR_RETURN(auto summarizer, StreamingStats::Create(req.summary));
    for (const std::string& in : paths) {
      TTFT_RETURN_IF_ERROR(ReadSpans(in, read, *summarizer, out.report));
    }
    out.groups = summarizer->Finish();
    return Status::Ok();
  }
  SpanTable table;
  std::vector<size_t> end_rows;
  for (const std::string& in : paths) {
    TTFT_RETURN_IF_ERROR(ReadSpanTable(in, req.load.read, table, out.report));
    end_rows.push_back(table.size());
  }
  DropRequestsRepeatedAcrossFiles(table, end_rows, paths, out.report);
  table.ShrinkToFit();
  TTFT_ASSIGN_OR_RETURN(out.groups, SummarizeSpans(table, req.summary));
  return Status::Ok();
}

// --from/--to as a window; an open end reads as "before"/"from".
std::string WindowText(double from_s, double to_s) {
  if (std::isfinite(from_s) && std::isfinite(to_s)) return numfmt::Window(from_s, to_s);
  if (std::isfinite(from_s)) return "from " + numfmt::TimePoint(from_s);
  return "before " + numfmt::TimePoint(to_s);
}

// A folder argument stands for the files of a simulate folder, as LoadInput reads one:
// its spans.jsonl, else its metrics/*.prom in name order (or a folder of *.prom
// scrapes itself); the scrapes are ordered by time later. Any other folder is an error
// naming it (reading it as a file failed with "Is a directory").
Result<std::vector<std::string>> ExpandFolders(std::span<const std::string> paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    if (p == "-" || !fs::is_directory(p)) {
      out.push_back(p);
      continue;
    }
    if (fs::exists(fs::path(p) / "spans.jsonl")) {
      out.push_back((fs::path(p) / "spans.jsonl").string());
      continue;
    }
    std::vector<std::string> scrapes =
        dataset_internal::ScrapeFilesIn((fs::path(p) / "metrics").string());
    if (scrapes.empty()) scrapes = dataset_internal::ScrapeFilesIn(p);
    if (scrapes.empty()) {
      return Status::Invalid(
          fmt::format("{}: a folder without spans.jsonl, metrics/*.prom or *.prom", p));
    }
    out.insert(out.end(), scrapes.begin(), scrapes.end());
  }
  return out;
}

}  // namespace

Result<StatsResult> ComputeStats(std::span<const std::string> given, const StatsRequest& req) {
  TTFT_ASSIGN_OR_RETURN(const std::vector<std::string> expanded, ExpandFolders(given));
  ReadReport repeated;  // warnings about the inputs: given twice, format guessed
  const std::vector<std::string> unique = DropRepeatedInputs(expanded, repeated);
  const std::span<const std::string> paths(unique);
  const bool live = !req.prometheus_url.empty();
  if (!live && paths.empty()) return Status::Invalid("give input files or --prometheus URL");
  if (live && !paths.empty()) {
    return Status::Invalid("give either input files or --prometheus URL, not both");
  }
  // The Prometheus flags are checked with or without --prometheus: a bad value is never
  // ignored, and a selector given with files (which are read whole) filters nothing.
  TTFT_RETURN_IF_ERROR(CheckPromClientOptions(req.client));
  TTFT_RETURN_IF_ERROR(CheckPromStep(req.step_s));
  if (!live && !req.selector.empty()) {
    return Status::Invalid(
        "--selector filters a live Prometheus's series: it needs --prometheus (files are read "
        "whole; split them by label with --by)");
  }
  if (live && (!std::isfinite(req.summary.from_s) || !std::isfinite(req.summary.to_s))) {
    return Status::Invalid("--prometheus: --from and --to (Unix seconds) are required");
  }
  const double from_s = req.summary.from_s, to_s = req.summary.to_s;
  const bool windowed = from_s != -INFINITY || to_s != INFINITY;
  TTFT_RETURN_IF_ERROR(CheckFromTo(from_s, to_s));
  // The first input decides between metrics and spans.
  InputFormat kind = req.load.read.format;
  if (live) {
    kind = InputFormat::kPromQueryJson;
  } else if (kind == InputFormat::kAuto) {
    std::string guess;
    TTFT_ASSIGN_OR_RETURN(kind, ProbeInputFormat(paths.front(), &guess));
    if (!guess.empty()) repeated.warnings.push_back(std::move(guess));
  }
  StatsResult out;
  if (kind != InputFormat::kProm && kind != InputFormat::kPromQueryJson) {
    TTFT_RETURN_IF_ERROR(SummarizeSpanInputs(paths, req, out));
    out.report.warnings.insert(out.report.warnings.begin(), repeated.warnings.begin(),
                               repeated.warnings.end());
    TTFT_RETURN_IF_ERROR(RequireUsableRecords(paths, out.report.records_read, out.report));
    if (windowed && out.groups.empty()) {
      return Status::Invalid(fmt::format("no span arrived in the window {} ({} records read)",
                                         WindowText(from_s, to_s), out.report.records_read));
    }
    return out;
  }
  Dataset data;
  data.report = std::move(repeated);
  if (live) {
    TTFT_RETURN_IF_ERROR(LoadPrometheus(req.prometheus_url, req.selector, req.summary.from_s,
                                        req.summary.to_s, req.step_s, req.client, data));
  }
  LoadOptions load = req.load;
  load.require_snapshot_times = false;
  for (const std::string& in : paths) TTFT_RETURN_IF_ERROR(LoadInput(in, load, data));
  FinishLoading(data);  // scrapes ordered by time, whatever the argument order
  if (!live) {
    TTFT_RETURN_IF_ERROR(RequireUsableRecords(paths, UsableRecords(data), data.report));
  }
  out.report = std::move(data.report);
  if (data.has_spans) {
    return Status::Invalid(
        "the inputs mix Prometheus scrapes and span files: give one kind (stats of spans and of "
        "metrics are not comparable)");
  }
  std::vector<MetricSnapshot>& snaps = data.snapshots;
  if (windowed && !live && !snaps.empty()) {
    // The scrapes covering the window, as the gate and the diagnosis take them.
    const double first_s = snaps.front().timestamp_s, last_s = snaps.back().timestamp_s;
    if (data.untimed_scrapes > 0) {
      return Status::Invalid(
          fmt::format("--from/--to: {} of the scrapes carry no time (no sample timestamps, no "
                      "t<seconds>.prom name), so a window cannot select them",
                      data.untimed_scrapes));
    }
    snaps = SnapshotsCovering(snaps, from_s, to_s);
    if (snaps.size() < 2) {
      return Status::Invalid(fmt::format(
          "the window {} is not covered by two scrapes (the scrapes run from {} to {}): its "
          "counts are the increase from the last scrape at or before its start to the last "
          "inside it",
          WindowText(from_s, to_s), numfmt::TimePoint(first_s), numfmt::TimePoint(last_s)));
    }
    out.report.warnings.push_back(fmt::format(
        "the window {} is read from the scrapes at {} and {} (the increase between them)",
        WindowText(from_s, to_s), numfmt::TimePoint(snaps.front().timestamp_s),
        numfmt::TimePoint(snaps.back().timestamp_s)));
  }
  MetricSnapshot window;
  if (snaps.size() >= 2) {
    TTFT_ASSIGN_OR_RETURN(window, WindowDelta(snaps, out.report));
  } else if (!snaps.empty()) {
    window = std::move(snaps.front());  // one scrape: totals since the process started
  }
  TTFT_ASSIGN_OR_RETURN(out.groups, SummarizeMetrics(window, req.summary));
  const bool timed = snaps.size() >= 2 && snaps.back().timestamp_s > snaps.front().timestamp_s;
  for (GroupSummary& g : out.groups) {
    if (snaps.empty()) continue;
    g.stats.from_s = snaps.front().timestamp_s;
    g.stats.to_s = snaps.back().timestamp_s;
    if (timed) {
      g.stats.request_rate_rps =
          static_cast<double>(g.stats.requests) / (g.stats.to_s - g.stats.from_s);
    }
  }
  return out;
}

}  // namespace ttft
