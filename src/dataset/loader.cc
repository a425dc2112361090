// Loading inputs into a Dataset (ttft/dataset.h).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "dataset/internal.h"
#include "ttft/dataset.h"

namespace ttft {
namespace fs = std::filesystem;
namespace {

// The scrape time of a snapshot file: its samples' time, else "t<seconds>.prom" (or
// "<seconds>.prom"); NaN when neither gives one.
double SnapshotTime(const std::string& path, const MetricSnapshot& s) {
  if (s.timestamp_s > 0) return s.timestamp_s;
  std::string name = fs::path(path).filename().string();
  if (name.size() < 6 || name.compare(name.size() - 5, 5, ".prom") != 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  name.resize(name.size() - 5);
  // The longest tail of digits and at most one dot, optionally after a 't'.
  size_t start = name.size();
  bool dot = false;
  while (start > 0) {
    const char c = name[start - 1];
    if (c >= '0' && c <= '9') {
      --start;
    } else if (c == '.' && !dot) {
      dot = true;
      --start;
    } else {
      break;
    }
  }
  while (start < name.size() && name[start] == '.') ++start;  // "x.12" -> "12"
  double t = 0;
  const char* first = name.data() + start;
  const char* last = name.data() + name.size();
  const auto [ptr, ec] = std::from_chars(first, last, t);
  if (first == last || ec != std::errc() || ptr != last || !std::isfinite(t)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return t;
}

// Reads a simulate folder's summary.json: its events, change time and windows.
void ReadSummary(const fs::path& path, bool windows_too, Dataset& data) {
  std::ifstream f(path);
  auto j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  for (Annotation& a : dataset_internal::EventsOfSummary(j)) data.annotations.push_back(a);
  if (!windows_too) return;
  if (j.contains("change_at_s") && j["change_at_s"].is_number()) {
    data.recorded_change_at_s = j["change_at_s"].get<double>();
  }
  const auto s = j.find("symptoms");
  if (s == j.end() || !s->is_object() || !s->contains("baseline") || !s->contains("incident")) {
    return;
  }
  auto num = [](const nlohmann::json& x, const char* k) {
    return x.is_object() && x.contains(k) && x[k].is_number()
               ? x[k].get<double>()
               : std::numeric_limits<double>::quiet_NaN();
  };
  data.recorded_baseline = {num((*s)["baseline"], "from_s"), num((*s)["baseline"], "to_s")};
  data.recorded_incident = {num((*s)["incident"], "from_s"), num((*s)["incident"], "to_s")};
}

Status AddScrape(const std::string& path, MetricSnapshot s, const LoadOptions& options,
                 Dataset& data) {
  // A scrape without one sample (an empty file, or only comments: a scrape cut off or
  // an exporter that was down) is counted and named, not read as every series vanishing.
  const bool empty = std::all_of(s.families.begin(), s.families.end(),
                                 [](const MetricFamily& f) { return f.series.empty(); });
  if (empty) {
    data.report.Skip(path, 1, "empty scrape", "no samples: the scrape is left out");
    return Status::Ok();
  }
  const double t = SnapshotTime(path, s);
  if (std::isfinite(t)) {
    s.timestamp_s = t;
  } else if (options.require_snapshot_times) {
    return Status::Invalid(fmt::format(
        "{}: cannot tell the scrape time (no sample timestamps; name it t<seconds>.prom)", path));
  } else {
    ++data.untimed_scrapes;
  }
  data.snapshots.push_back(std::move(s));
  return Status::Ok();
}

}  // namespace

namespace dataset_internal {

std::vector<std::string> ScrapeFilesIn(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".prom" && !it->is_directory(ec)) {
      files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace dataset_internal

namespace {

Status LoadFolder(const std::string& in, const LoadOptions& options, Dataset& data) {
  const fs::path d(in);
  bool any = false;
  // The folder's files are ttft's own formats whatever --input-format says.
  LoadOptions own = options;
  own.read.format = InputFormat::kAuto;
  if (fs::exists(d / "spans.jsonl")) {
    TTFT_RETURN_IF_ERROR(
        ReadSpanTable((d / "spans.jsonl").string(), own.read, data.spans, data.report));
    data.has_spans = any = true;
  }
  {
    const std::vector<std::string> files =
        dataset_internal::ScrapeFilesIn((d / "metrics").string());
    for (const std::string& f : files) TTFT_RETURN_IF_ERROR(LoadInput(f, own, data));
    any = any || !files.empty();
  }
  if (fs::exists(d / "summary.json")) ReadSummary(d / "summary.json", /*windows_too=*/true, data);
  // A folder of scrapes (a simulate folder's metrics/ given alone, or any directory
  // of *.prom files): its scrapes, and the simulate folder's events and windows when
  // its parent holds a summary.json (so `diagnose FOLDER/metrics` diagnoses the same
  // windows as `diagnose FOLDER`).
  if (!any) {
    const std::vector<std::string> files = dataset_internal::ScrapeFilesIn(in);
    for (const std::string& f : files) TTFT_RETURN_IF_ERROR(LoadInput(f, own, data));
    any = !files.empty();
    fs::path abs = fs::absolute(d).lexically_normal();
    if (!abs.has_filename()) abs = abs.parent_path();  // "x/metrics/" -> "x/metrics"
    const fs::path parent_summary = abs.parent_path() / "summary.json";
    if (any && fs::exists(parent_summary)) {
      ReadSummary(parent_summary, /*windows_too=*/true, data);
    }
  }
  if (!any) {
    return Status::Invalid(
        fmt::format("{}: a folder without spans.jsonl, metrics/*.prom or *.prom", in));
  }
  data.sources.push_back(in);
  return Status::Ok();
}

}  // namespace

TimeRange Dataset::range() const {
  return {first_s, std::nextafter(last_s, std::numeric_limits<double>::infinity())};
}

Status LoadInput(const std::string& in, const LoadOptions& options, Dataset& data) {
  if (in != "-" && fs::is_directory(in)) return LoadFolder(in, options, data);
  if (in != "-" && !fs::exists(in)) return Status::NotFound(fmt::format("{}: no such file", in));
  InputFormat kind = options.read.format;
  if (kind == InputFormat::kAuto) {
    std::string guess;
    TTFT_ASSIGN_OR_RETURN(kind, ProbeInputFormat(in, &guess));
    if (!guess.empty()) data.report.warnings.push_back(std::move(guess));
  }
  if (kind == InputFormat::kProm) {
    TTFT_ASSIGN_OR_RETURN(MetricSnapshot s,
                          ReadExpositionFile(in, options.read.strict, data.report));
    TTFT_RETURN_IF_ERROR(AddScrape(in, std::move(s), options, data));
  } else if (kind == InputFormat::kPromQueryJson) {
    TTFT_ASSIGN_OR_RETURN(std::string body, ReadInputFile(in));
    TTFT_ASSIGN_OR_RETURN(auto series, ParsePromQueryJson(body));
    for (auto& s : SnapshotsFromSeries(series)) data.snapshots.push_back(std::move(s));
  } else {
    TTFT_RETURN_IF_ERROR(ReadSpanTable(in, options.read, data.spans, data.report));
    data.has_spans = true;
    // A simulate folder's spans given alone: take its summary's events too.
    if (in != "-" && fs::path(in).filename() == "spans.jsonl") {
      const fs::path summary = fs::path(in).parent_path() / "summary.json";
      if (fs::exists(summary)) ReadSummary(summary, /*windows_too=*/false, data);
    }
  }
  data.sources.push_back(in);
  return Status::Ok();
}

Status LoadPrometheus(const std::string& url, const std::string& selector, double from_s,
                      double to_s, double step_s, const PromClientOptions& client_options,
                      Dataset& data) {
  TTFT_ASSIGN_OR_RETURN(PromClient client, PromClient::Create(url, client_options));
  TTFT_ASSIGN_OR_RETURN(auto snaps, FetchPromWindow(client, selector, from_s, to_s, step_s));
  for (auto& s : snaps) data.snapshots.push_back(std::move(s));
  data.sources.push_back(url);
  return Status::Ok();
}

void FinishLoading(Dataset& data) {
  data.first_s = std::numeric_limits<double>::infinity();
  data.last_s = -std::numeric_limits<double>::infinity();
  for (double a : data.spans.arrival_s()) {
    data.first_s = std::min(data.first_s, a);
    data.last_s = std::max(data.last_s, a);
  }
  if (!data.has_spans) {
    for (const MetricSnapshot& s : data.snapshots) {
      data.first_s = std::min(data.first_s, s.timestamp_s);
      data.last_s = std::max(data.last_s, s.timestamp_s);
    }
  }
  std::stable_sort(data.snapshots.begin(), data.snapshots.end(),
                   [](const MetricSnapshot& a, const MetricSnapshot& b) {
                     return a.timestamp_s < b.timestamp_s;
                   });
  const auto n = static_cast<int64_t>(data.snapshots.size());
  if (n >= 2 && data.untimed_scrapes == n) OrderScrapesByCounters(data.snapshots, data.report);
}

void OrderScrapesByCounters(std::vector<MetricSnapshot>& snaps, ReadReport& report) {
  // Per scrape: every counter value and histogram/summary count, by series.
  std::vector<std::unordered_map<std::string, double>> counts(snaps.size());
  std::vector<double> total(snaps.size(), 0);
  for (size_t i = 0; i < snaps.size(); ++i) {
    for (const MetricFamily& f : snaps[i].families) {
      const bool counter = f.type == MetricType::kCounter;
      if (!counter && f.type != MetricType::kHistogram && f.type != MetricType::kSummary) continue;
      for (const MetricSeries& s : f.series) {
        std::string key = f.name;
        for (const auto& [k, v] : s.labels) key.append("\x1f").append(k).append("\x1e").append(v);
        const double v = counter ? s.value : s.histogram.count;
        counts[i][key] = v;
        total[i] += v;
      }
    }
  }
  std::vector<size_t> order(snaps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return total[a] < total[b]; });
  bool grows = true;
  for (size_t k = 1; k < order.size() && grows; ++k) {
    const auto& before = counts[order[k - 1]];
    for (const auto& [key, v] : counts[order[k]]) {
      auto it = before.find(key);
      if (it != before.end() && v < it->second) {
        grows = false;
        break;
      }
    }
  }
  if (!grows) {
    report.warnings.push_back(fmt::format(
        "{} scrapes carry no time (no sample timestamps, not named t<seconds>.prom) and no order "
        "of them makes every counter grow: read in the order given, a decrease as a counter "
        "reset",
        snaps.size()));
    return;
  }
  bool same = true;
  for (size_t i = 0; i < order.size(); ++i) same = same && order[i] == i;
  if (same) return;
  std::vector<MetricSnapshot> sorted;
  sorted.reserve(snaps.size());
  for (size_t i : order) sorted.push_back(std::move(snaps[i]));
  snaps = std::move(sorted);
  report.warnings.push_back(fmt::format(
      "{} scrapes carry no time (no sample timestamps, not named t<seconds>.prom): ordered by "
      "their counters (the order in which every counter grows), not as given",
      snaps.size()));
}

Status LoadDataset(std::span<const std::string> paths, const LoadOptions& options, Dataset& data) {
  const std::vector<std::string> unique = DropRepeatedInputs(paths, data.report);
  std::vector<size_t> end_rows;
  for (const std::string& p : unique) {
    TTFT_RETURN_IF_ERROR(LoadInput(p, options, data));
    end_rows.push_back(data.spans.size());
  }
  DropRequestsRepeatedAcrossFiles(data.spans, end_rows, unique, data.report);
  FinishLoading(data);
  if (paths.empty()) return Status::Ok();
  return RequireUsableRecords(paths, UsableRecords(data), data.report);
}

int64_t UsableRecords(const Dataset& data) {
  int64_t n = static_cast<int64_t>(data.spans.size());
  for (const MetricSnapshot& s : data.snapshots) {
    for (const MetricFamily& f : s.families) n += static_cast<int64_t>(f.series.size());
  }
  return n;
}

Status RequireUsableRecords(std::span<const std::string> paths, int64_t used,
                            const ReadReport& report) {
  if (used > 0) return Status::Ok();
  std::string why;
  if (report.records_skipped > 0) {
    std::vector<std::string> parts;
    for (const auto& [category, n] : report.skipped_by_category) {
      parts.push_back(fmt::format("{} {}", n, category));
    }
    why = fmt::format("{} record{} skipped ({})", report.records_skipped,
                      report.records_skipped == 1 ? "" : "s", fmt::join(parts, ", "));
  }
  if (report.records_ignored > 0) {
    why += fmt::format("{}{} ignored (not request records)", why.empty() ? "" : ", ",
                       report.records_ignored);
  }
  if (why.empty()) why = "no records at all";
  if (!report.issues.empty()) {
    const RecordIssue& first = report.issues.front();
    why += fmt::format("; first: {}:{}: {}", first.file, first.line, first.reason);
  }
  return Status::Invalid(fmt::format("{}: nothing usable: {}", fmt::join(paths, ", "), why));
}

std::vector<MetricSnapshot> SnapshotsCovering(std::span<const MetricSnapshot> all, double from,
                                              double to) {
  std::vector<MetricSnapshot> out;
  const MetricSnapshot* before = nullptr;
  for (const MetricSnapshot& s : all) {
    if (s.timestamp_s < from) before = &s;
    if (s.timestamp_s >= from && s.timestamp_s <= to) out.push_back(s);
  }
  // A scrape exactly at `from` is the starting point; an earlier one would add the
  // previous interval's requests to the window.
  if (before != nullptr && (out.empty() || out.front().timestamp_s > from)) {
    out.insert(out.begin(), *before);
  }
  return out;
}

}  // namespace ttft
