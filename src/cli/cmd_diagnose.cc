// `ttft diagnose`: decompose a TTFT regression, rank its causes with evidence, and
// report it (docs/diagnosis.md). Flags in, a DiagnosisReport built by the library,
// one renderer out.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>

#include "cli/commands.h"
#include "cli/sim_output.h"
#include "ttft/diagnose.h"
#include "ttft/input.h"
#include "ttft/metrics.h"
#include "ttft/prometheus.h"
#include "ttft/report.h"
#include "ttft/spans.h"

namespace ttft::cli {
namespace fs = std::filesystem;

// Parses seconds ("1200", "1200.5") or an RFC 3339 time ("2025-06-01T12:00:00Z",
// "2025-06-01T12:00:00.250+02:00") into seconds in the spans' time base (Unix
// seconds for RFC 3339).
Result<double> ParseTimeArg(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(v)) return v;
  static const std::regex re(
      R"(^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$)");
  std::smatch m;
  if (!std::regex_match(s, m, re)) {
    return Status::Invalid(fmt::format(
        "time \"{}\": expected seconds or an RFC 3339 time like 2025-06-01T12:00:00Z", s));
  }
  std::tm tm{};
  tm.tm_year = std::stoi(m[1]) - 1900;
  tm.tm_mon = std::stoi(m[2]) - 1;
  tm.tm_mday = std::stoi(m[3]);
  tm.tm_hour = std::stoi(m[4]);
  tm.tm_min = std::stoi(m[5]);
  tm.tm_sec = std::stoi(m[6]);
  // timegm normalises out-of-range fields (month 13 becomes next January): refuse them.
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const int year = tm.tm_year + 1900;
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  const bool tz_ok = m[8].str().size() == 1 || (std::stoi(m[8].str().substr(1, 2)) < 24 &&
                                                std::stoi(m[8].str().substr(4, 2)) < 60);
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 ||
      tm.tm_mday > kDays[tm.tm_mon] - (tm.tm_mon == 1 && !leap ? 1 : 0) || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60 || !tz_ok) {
    return Status::Invalid(
        fmt::format("time \"{}\": a field is out of range (RFC 3339: month 01-12, day of the "
                    "month, hour 00-23, minute 00-59, second 00-60)",
                    s));
  }
  double t = static_cast<double>(timegm(&tm));
  if (m[7].matched) t += std::stod("0" + m[7].str());
  const std::string tz = m[8];
  if (tz != "Z" && tz != "z") {
    const int sign = tz[0] == '-' ? -1 : 1;
    t -= sign * (std::stoi(tz.substr(1, 2)) * 3600 + std::stoi(tz.substr(4, 2)) * 60);
  }
  return t;
}

namespace {

struct Loaded {
  SpanTable spans;
  bool has_spans = false;
  std::vector<MetricSnapshot> snapshots;
  std::vector<Annotation> annotations;
  std::vector<std::string> sources;
  // Every file's skipped records and warnings; summarised on standard error.
  ReadReport report;
  // From a simulate folder's summary.json.
  double change_at_s = kMissing;
  double base_from = kMissing, base_to = kMissing, inc_from = kMissing, inc_to = kMissing;
  double min_arrival = INFINITY, max_arrival = -INFINITY;
};

// o[key] when it is a string, else `fallback` (json::value() throws on other types).
std::string StringOr(const nlohmann::json& o, const char* key, const std::string& fallback) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::vector<Annotation> AnnotationsFromJson(const nlohmann::json& j) {
  std::vector<Annotation> out;
  const nlohmann::json* arr = &j;
  if (j.is_object() && j.contains("events")) arr = &j["events"];
  if (!arr->is_array()) return out;
  for (const auto& e : *arr) {
    if (!e.is_object()) continue;
    Annotation a;
    if (e.contains("at_s") && e["at_s"].is_number()) {
      a.at_s = e["at_s"].get<double>();
    } else if (e.contains("time") && e["time"].is_string()) {
      auto t = ParseTimeArg(e["time"].get<std::string>());
      if (!t.ok()) continue;
      a.at_s = *t;
    } else {
      continue;
    }
    a.kind = StringOr(e, "kind", "change");
    a.target = StringOr(e, "target", "");
    a.detail = StringOr(e, "detail", StringOr(e, "note", ""));
    out.push_back(a);
  }
  return out;
}

Result<std::vector<Annotation>> ReadEvents(const std::string& path) {
  TTFT_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path));
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_discarded()) return AnnotationsFromJson(j);
  // JSON Lines.
  std::vector<Annotation> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_discarded() || !e.is_object()) {
      return Status::Invalid(fmt::format("{}:{}: not a JSON event object", path, n));
    }
    auto one = AnnotationsFromJson(nlohmann::json::array({e}));
    if (one.empty())
      return Status::Invalid(fmt::format("{}:{}: event needs at_s or time", path, n));
    out.push_back(one.front());
  }
  return out;
}

// The scrape time of a snapshot file: its samples' time, else "t<seconds>.prom".
Result<double> SnapshotTime(const std::string& path, const MetricSnapshot& s) {
  if (s.timestamp_s > 0) return s.timestamp_s;
  static const std::regex re(R"(t?(\d+(\.\d+)?)\.prom$)");
  std::smatch m;
  const std::string name = fs::path(path).filename().string();
  if (std::regex_search(name, m, re)) return std::stod(m[1]);
  return Status::Invalid(fmt::format(
      "{}: cannot tell the scrape time (no sample timestamps; name it t<seconds>.prom)", path));
}

Status LoadOne(const std::string& in, Loaded& out) {
  ReadReport& report = out.report;
  if (fs::is_directory(in)) {
    const fs::path d(in);
    bool any = false;
    if (fs::exists(d / "spans.jsonl")) {
      TTFT_RETURN_IF_ERROR(ReadSpanTable((d / "spans.jsonl").string(), {}, out.spans, report));
      out.has_spans = any = true;
    }
    if (fs::is_directory(d / "metrics")) {
      std::vector<std::string> files;
      for (const auto& e : fs::directory_iterator(d / "metrics")) {
        if (e.path().extension() == ".prom") files.push_back(e.path().string());
      }
      std::sort(files.begin(), files.end());
      for (const std::string& f : files) TTFT_RETURN_IF_ERROR(LoadOne(f, out));
      any = any || !files.empty();
    }
    if (fs::exists(d / "summary.json")) {
      std::ifstream f(d / "summary.json");
      auto j = nlohmann::json::parse(f, nullptr, false);
      if (!j.is_discarded() && j.is_object()) {
        for (Annotation& a : AnnotationsFromJson(j)) out.annotations.push_back(a);
        if (j.contains("change_at_s") && j["change_at_s"].is_number()) {
          out.change_at_s = j["change_at_s"].get<double>();
        }
        const auto& s = j.value("symptoms", nlohmann::json::object());
        if (s.contains("baseline") && s.contains("incident")) {
          auto num = [](const nlohmann::json& x, const char* k) {
            return x.contains(k) && x[k].is_number() ? x[k].get<double>() : kMissing;
          };
          out.base_from = num(s["baseline"], "from_s");
          out.base_to = num(s["baseline"], "to_s");
          out.inc_from = num(s["incident"], "from_s");
          out.inc_to = num(s["incident"], "to_s");
        }
      }
    }
    if (!any) {
      return Status::Invalid(fmt::format("{}: a folder without spans.jsonl or metrics/*.prom", in));
    }
    out.sources.push_back(in);
    return Status::Ok();
  }
  if (!fs::exists(in) && in != "-") return Status::NotFound(fmt::format("{}: no such file", in));
  InputFormat kind = InputFormat::kSpanJsonl;
  if (in != "-") {
    // The first 64 KB tell the format; reading the whole file here would hold a
    // multi-GB span file in memory twice.
    TTFT_ASSIGN_OR_RETURN(std::string head, ReadInputHead(in, 1 << 16));
    kind = DetectFormat(head);
  }
  if (kind == InputFormat::kProm) {
    TTFT_ASSIGN_OR_RETURN(MetricSnapshot s, ReadExpositionFile(in, false, report));
    TTFT_ASSIGN_OR_RETURN(s.timestamp_s, SnapshotTime(in, s));
    out.snapshots.push_back(std::move(s));
  } else if (kind == InputFormat::kPromQueryJson) {
    TTFT_ASSIGN_OR_RETURN(std::string body, ReadInputFile(in));
    TTFT_ASSIGN_OR_RETURN(auto series, ParsePromQueryJson(body));
    for (auto& s : SnapshotsFromSeries(series)) out.snapshots.push_back(std::move(s));
  } else {
    TTFT_RETURN_IF_ERROR(ReadSpanTable(in, {}, out.spans, report));
    out.has_spans = true;
    if (std::string(fs::path(in).filename()) == "spans.jsonl") {
      // A simulate folder's spans: take its summary's events too.
      const fs::path summary = fs::path(in).parent_path() / "summary.json";
      if (fs::exists(summary)) {
        std::ifstream f(summary);
        auto j = nlohmann::json::parse(f, nullptr, false);
        if (!j.is_discarded()) {
          for (Annotation& a : AnnotationsFromJson(j)) out.annotations.push_back(a);
        }
      }
    }
  }
  out.sources.push_back(in);
  return Status::Ok();
}

Status LoadAll(const std::vector<std::string>& inputs, Loaded& out) {
  for (const std::string& in : inputs) TTFT_RETURN_IF_ERROR(LoadOne(in, out));
  for (double a : out.spans.arrival_s()) {
    out.min_arrival = std::min(out.min_arrival, a);
    out.max_arrival = std::max(out.max_arrival, a);
  }
  for (const MetricSnapshot& s : out.snapshots) {
    if (!out.has_spans) {
      out.min_arrival = std::min(out.min_arrival, s.timestamp_s);
      out.max_arrival = std::max(out.max_arrival, s.timestamp_s);
    }
  }
  std::sort(out.snapshots.begin(), out.snapshots.end(),
            [](const MetricSnapshot& a, const MetricSnapshot& b) {
              return a.timestamp_s < b.timestamp_s;
            });
  // Skipped records are never lost silently: "N records skipped: ...; first: f:12: ...".
  if (const std::string summary = out.report.Summary(); !summary.empty()) {
    fmt::print(stderr, "{}\n", summary);
  }
  return Status::Ok();
}

Result<std::pair<double, double>> ParseRange(const std::string& s, const char* flag) {
  const size_t colon = s.find(':');
  if (colon == std::string::npos) {
    return Status::Invalid(fmt::format("{} \"{}\": expected FROM:TO", flag, s));
  }
  TTFT_ASSIGN_OR_RETURN(double a, ParseTimeArg(s.substr(0, colon)));
  TTFT_ASSIGN_OR_RETURN(double b, ParseTimeArg(s.substr(colon + 1)));
  return std::make_pair(a, b);
}

}  // namespace

Runner RegisterDiagnose(CLI::App& app) {
  struct Opts {
    std::vector<std::string> inputs, baseline, incident;
    std::string change_at, events, prometheus, selector, format = "text", out, model, gpu, dtype;
    std::string baseline_window, incident_window;
    double window_s = 0;
    int tp = 0;
    int64_t min_requests = 100;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("inputs", o->inputs,
                 "Span files (JSONL/CSV/OTLP), Prometheus snapshots (.prom), or a `ttft simulate` "
                 "output folder");
  app.add_option("--baseline", o->baseline, "Inputs of the baseline window")->expected(1, -1);
  app.add_option("--incident", o->incident, "Inputs of the incident window")->expected(1, -1);
  app.add_option("--change-at", o->change_at,
                 "The change time: seconds in the spans' time base, or RFC 3339");
  app.add_option("--window", o->window_s, "Window length on either side of --change-at, s");
  app.add_option("--baseline-window", o->baseline_window, "Explicit baseline window FROM:TO");
  app.add_option("--incident-window", o->incident_window, "Explicit incident window FROM:TO");
  app.add_option("--events", o->events,
                 "Change annotations: JSON/JSONL {at_s|time, kind, target, detail}");
  app.add_option("--prometheus", o->prometheus,
                 "Prometheus base URL (needs --change-at, --window)");
  app.add_option("--selector", o->selector, "Prometheus label selector, e.g. model_name=\"x\"");
  app.add_option("--format", o->format, "text, markdown, json or html")
      ->check(CLI::IsMember({"text", "markdown", "json", "html"}))
      ->capture_default_str();
  app.add_option("--out", o->out, "Write the report to this file instead of standard output");
  app.add_option("--model", o->model, "Cost-model preset (default: the spans' model label)");
  app.add_option("--gpu", o->gpu, "GPU preset for the cost model (default h100-sxm)");
  app.add_option("--dtype", o->dtype, "fp8 or bf16 (default fp8)");
  app.add_option("--tp", o->tp, "Tensor-parallel degree (default 2)");
  app.add_option("--min-requests", o->min_requests, "Ok requests a window needs for a p99")
      ->capture_default_str();
  return [o]() -> Status {
    DiagnosisInput in;
    in.options.model = o->model;
    in.options.gpu = o->gpu;
    in.options.dtype = o->dtype;
    in.options.tp = o->tp;
    in.options.min_ok_requests = o->min_requests;
    const bool split = !o->baseline.empty() || !o->incident.empty();
    if (split && (o->baseline.empty() || o->incident.empty())) {
      return Status::Invalid("give both --baseline and --incident inputs");
    }
    if (split && !o->inputs.empty()) {
      return Status::Invalid("give either INPUT... or --baseline/--incident, not both");
    }
    if (!split && o->inputs.empty() && o->prometheus.empty()) {
      return Status::Invalid("give INPUT..., --baseline/--incident, or --prometheus URL");
    }
    double change = kMissing;
    if (!o->change_at.empty()) {
      TTFT_ASSIGN_OR_RETURN(change, ParseTimeArg(o->change_at));
    }
    if (o->window_s < 0) return Status::Invalid("--window must be > 0");
    auto base = std::make_unique<Loaded>();
    auto inc = std::make_unique<Loaded>();
    std::vector<Annotation> extra;
    if (!o->events.empty()) {
      TTFT_ASSIGN_OR_RETURN(extra, ReadEvents(o->events));
    }
    if (split) {
      TTFT_RETURN_IF_ERROR(LoadAll(o->baseline, *base));
      TTFT_RETURN_IF_ERROR(LoadAll(o->incident, *inc));
      if (base->has_spans != inc->has_spans) {
        return Status::Invalid(
            "the baseline and incident inputs differ in kind (spans vs metrics)");
      }
      in.baseline = {base->has_spans ? &base->spans : nullptr, base->min_arrival,
                     std::nextafter(base->max_arrival, INFINITY)};
      in.incident = {inc->has_spans ? &inc->spans : nullptr, inc->min_arrival,
                     std::nextafter(inc->max_arrival, INFINITY)};
      in.baseline_snapshots = base->snapshots;
      in.incident_snapshots = inc->snapshots;
      in.annotations = inc->annotations;
      in.sources = base->sources;
      for (const auto& s : inc->sources) in.sources.push_back(s);
    } else {
      if (!o->prometheus.empty()) {
        if (!std::isfinite(change) || o->window_s <= 0) {
          return Status::Invalid("--prometheus needs --change-at and --window");
        }
        TTFT_ASSIGN_OR_RETURN(PromClient client, PromClient::Create(o->prometheus));
        TTFT_ASSIGN_OR_RETURN(auto snaps, FetchPromWindow(client, o->selector, change - o->window_s,
                                                          change + o->window_s, 15));
        for (auto& s : snaps) base->snapshots.push_back(std::move(s));
        base->sources.push_back(o->prometheus);
      }
      TTFT_RETURN_IF_ERROR(LoadAll(o->inputs, *base));
      const Loaded& L = *base;
      const double lo = L.min_arrival, hi = L.max_arrival;
      if (!(hi > lo)) return Status::Invalid("the input holds no spans or snapshots with times");
      double bf, bt, itf, itt;
      if (!o->baseline_window.empty() || !o->incident_window.empty()) {
        if (o->baseline_window.empty() || o->incident_window.empty()) {
          return Status::Invalid("give both --baseline-window and --incident-window");
        }
        TTFT_ASSIGN_OR_RETURN(auto bw, ParseRange(o->baseline_window, "--baseline-window"));
        TTFT_ASSIGN_OR_RETURN(auto iw, ParseRange(o->incident_window, "--incident-window"));
        std::tie(bf, bt) = bw;
        std::tie(itf, itt) = iw;
        if (bf < iw.second && iw.first < bt) {
          return Status::Invalid(fmt::format(
              "the baseline [{}, {}) and incident [{}, {}) windows overlap", bf, bt, itf, itt));
        }
      } else {
        if (!std::isfinite(change) && std::isfinite(L.change_at_s) && o->window_s <= 0 &&
            std::isfinite(L.base_from)) {
          change = L.change_at_s;
          bf = L.base_from;
          bt = L.base_to;
          itf = L.inc_from;
          itt = L.inc_to;
        } else {
          if (!std::isfinite(change)) change = L.change_at_s;
          if (!std::isfinite(change)) {
            return Status::Invalid(
                "no change time: give --change-at T (or --baseline/--incident inputs)");
          }
          if (change <= lo || change >= hi) {
            return Status::Invalid(fmt::format(
                "--change-at {:.3f} is outside the data, whose arrivals span [{:.3f}, {:.3f}] "
                "(check the time base: seconds of the run vs Unix time)",
                change, lo, hi));
          }
          const double w = o->window_s > 0 ? o->window_s : std::min(change - lo, hi - change);
          bf = std::max(lo, change - w);
          bt = change;
          itf = change;
          itt = std::min(std::nextafter(hi, INFINITY), change + w);
        }
      }
      in.change_at_s = change;
      const SpanTable* t = L.has_spans ? &L.spans : nullptr;
      in.baseline = {t, bf, bt};
      in.incident = {t, itf, itt};
      in.baseline_snapshots = SnapshotsCovering(L.snapshots, bf, bt);
      in.incident_snapshots = SnapshotsCovering(L.snapshots, itf, itt);
      in.annotations = L.annotations;
      in.sources = L.sources;
    }
    for (const Annotation& a : extra) in.annotations.push_back(a);
    TTFT_ASSIGN_OR_RETURN(DiagnosisReport rep, Diagnose(in));
    std::string text;
    if (o->format == "json") {
      text = RenderJson(rep);
    } else if (o->format == "markdown") {
      text = RenderMarkdown(rep);
    } else if (o->format == "html") {
      text = RenderHtml(rep);
    } else {
      const bool colour = o->out.empty() && StdoutIsTty() && std::getenv("NO_COLOR") == nullptr;
      text = RenderText(rep, colour);
    }
    if (o->out.empty()) {
      std::cout << text;
      return Status::Ok();
    }
    std::ofstream f(o->out, std::ios::binary);
    f << text;
    if (!f.good()) return Status::IoError(o->out + ": write failed");
    return Status::Ok();
  };
}

}  // namespace ttft::cli
