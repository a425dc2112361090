// Prometheus text exposition format 0.0.4 parser, canonical metric names and window
// deltas (ttft/metrics.h). Format reference: prometheus/docs
// content/docs/instrumenting/exposition_formats.md ("Text-based format").
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "telemetry/input_formats.h"
#include "ttft/metrics.h"

namespace ttft {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Sample {
  std::string name;
  Labels labels;  // sorted by name
  double value = 0;
  int64_t line = 0;
};

bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

// Whether a sample can be a count of events (a counter, a bucket, a _count): finite
// and >= 0, so not NaN.
bool IsCount(double v) { return v >= 0 && !std::isinf(v); }

// Parses a Go/Python float: NaN, +Inf, -Inf, Inf, or a decimal / exponent number.
bool ParsePromFloat(std::string_view s, double& out) {
  if (s == "NaN" || s == "nan") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (s == "+Inf" || s == "Inf" || s == "+inf" || s == "inf") {
    out = kInf;
    return true;
  }
  if (s == "-Inf" || s == "-inf") {
    out = -kInf;
    return true;
  }
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto res = std::from_chars(s.data(), s.data() + s.size(), out);
  return res.ec == std::errc() && res.ptr == s.data() + s.size();
}

// One sample line: name{l="v",...} value [timestamp]. Returns an error reason.
std::string ParseSampleLine(std::string_view s, Sample& out) {
  size_t i = 0;
  if (i >= s.size() || !IsNameStart(s[i])) return "not a sample line (expected a metric name)";
  while (i < s.size() && IsNameChar(s[i])) ++i;
  out.name.assign(s.substr(0, i));
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  if (i < s.size() && s[i] == '{') {
    ++i;
    for (;;) {
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
      if (i >= s.size()) return "unterminated label set";
      if (s[i] == '}') {
        ++i;
        break;
      }
      const size_t name_start = i;
      if (!IsNameStart(s[i]) || s[i] == ':') return "bad label name";
      while (i < s.size() && IsNameChar(s[i]) && s[i] != ':') ++i;
      std::string label(s.substr(name_start, i - name_start));
      while (i < s.size() && s[i] == ' ') ++i;
      if (i >= s.size() || s[i] != '=') return fmt::format("label {}: expected '='", label);
      ++i;
      while (i < s.size() && s[i] == ' ') ++i;
      if (i >= s.size() || s[i] != '"') return fmt::format("label {}: expected '\"'", label);
      ++i;
      std::string value;
      bool closed = false;
      while (i < s.size()) {
        const char c = s[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\' && i < s.size()) {
          const char e = s[i++];
          value.push_back(e == 'n' ? '\n' : e);  // \\ \" \n; others kept as the character
        } else {
          value.push_back(c);
        }
      }
      if (!closed) return fmt::format("label {}: unterminated value", label);
      out.labels.emplace_back(std::move(label), std::move(value));
      while (i < s.size() && s[i] == ' ') ++i;
      if (i < s.size() && s[i] == ',') {
        ++i;
      } else if (i < s.size() && s[i] != '}') {
        return "expected ',' or '}' in label set";
      }
    }
  }
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  size_t end = i;
  while (end < s.size() && s[end] != ' ' && s[end] != '\t') ++end;
  if (end == i) return "missing value";
  if (!ParsePromFloat(s.substr(i, end - i), out.value)) {
    return fmt::format("bad value '{}'", s.substr(i, end - i));
  }
  i = end;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  if (i < s.size()) {
    end = i;
    while (end < s.size() && s[end] != ' ' && s[end] != '\t') ++end;
    int64_t ts;
    auto res = std::from_chars(s.data() + i, s.data() + end, ts);
    if (res.ec != std::errc() || res.ptr != s.data() + end) {
      return fmt::format("bad timestamp '{}'", s.substr(i, end - i));
    }
    i = end;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    if (i < s.size()) return "trailing characters after the timestamp";
  }
  // Repeated names are found after sorting: O(L log L) for L labels (a scan per label
  // was quadratic on adversarial lines with many labels).
  std::sort(out.labels.begin(), out.labels.end());
  const auto rep =
      std::adjacent_find(out.labels.begin(), out.labels.end(),
                         [](const auto& a, const auto& b) { return a.first == b.first; });
  if (rep != out.labels.end()) return fmt::format("label {} repeated", rep->first);
  return {};
}

std::optional<MetricType> ParseType(std::string_view t) {
  if (t == "counter") return MetricType::kCounter;
  if (t == "gauge") return MetricType::kGauge;
  if (t == "histogram") return MetricType::kHistogram;
  if (t == "summary") return MetricType::kSummary;
  if (t == "untyped" || t == "unknown") return MetricType::kUntyped;
  return std::nullopt;
}

std::string_view StripSuffix(std::string_view s, std::string_view suffix) {
  return s.ends_with(suffix) ? s.substr(0, s.size() - suffix.size()) : std::string_view();
}

Labels Without(const Labels& labels, std::string_view name) {
  Labels out;
  for (const auto& kv : labels) {
    if (kv.first != name) out.push_back(kv);
  }
  return out;
}

std::string SeriesKey(const Labels& labels) {
  std::string key;
  for (const auto& [k, v] : labels) {
    key += k;
    key += '\x1f';
    key += v;
    key += '\x1e';
  }
  return key;
}

}  // namespace

std::string SeriesText(std::string_view name, const Labels& labels) {
  std::string text;
  for (const auto& [k, v] : labels)
    text += fmt::format("{}{}=\"{}\"", text.empty() ? "" : ",", k, v);
  return fmt::format("{}{{{}}}", name, text);
}

// Exposition text: HELP/TYPE comments anywhere in the head, or a first line that reads
// as a `name{...} value` sample (a name start and a space, no comma: CSV has commas).
bool internal::DetectExposition(const internal::FormatProbe& probe) {
  if (probe.head.find("# TYPE ") != std::string_view::npos ||
      probe.head.find("# HELP ") != std::string_view::npos) {
    return true;
  }
  const std::string_view line = probe.first_line;
  return !line.empty() && line.find(',') == std::string_view::npos &&
         (std::isalpha(static_cast<unsigned char>(line[0])) || line[0] == '_') &&
         line.find(' ') != std::string_view::npos;
}

Result<MetricSnapshot> ParseExposition(std::string_view text, const ExpositionParseOptions& options,
                                       ReadReport& report) {
  auto bad = [&](int64_t line, std::string_view category, std::string reason) -> Status {
    report.Skip(options.source, line, category, reason);
    if (options.strict) {
      return Status::DataError(fmt::format("{}:{}: {}", options.source, line, reason));
    }
    return Status::Ok();
  };
  std::unordered_map<std::string, MetricType> types;
  std::unordered_map<std::string, std::string> helps;
  std::vector<Sample> samples;
  int64_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const bool blank = line.find_first_not_of(" \t") == std::string_view::npos;
    // A last line without a newline: if it does not parse, the scrape was cut mid-line;
    // if it does, it is kept with a warning (a cut inside a number cannot be seen).
    const bool unterminated = nl == std::string_view::npos && !blank;
    if (unterminated && line.find_first_not_of(" \t") != std::string_view::npos &&
        line[line.find_first_not_of(" \t")] != '#') {
      Sample probe;
      if (!ParseSampleLine(line.substr(line.find_first_not_of(" \t")), probe).empty()) {
        TTFT_RETURN_IF_ERROR(bad(line_no, "truncated scrape",
                                 "scrape cut mid-line (last line has no newline); line dropped"));
        break;
      }
      report.warnings.push_back(fmt::format(
          "{}:{}: last line has no newline; kept (a scrape cut inside a number cannot be detected)",
          options.source, line_no));
    }
    if (blank) continue;
    // The text format is UTF-8 (label values and HELP may hold any UTF-8): a line that
    // is not would reach the JSON outputs, which must stay valid.
    if (!simdjson::validate_utf8(line.data(), line.size())) {
      TTFT_RETURN_IF_ERROR(bad(line_no, "invalid utf-8", "the line is not valid UTF-8"));
      continue;
    }
    const size_t first = line.find_first_not_of(" \t");
    line.remove_prefix(first);
    if (line[0] == '#') {
      std::string_view rest = line.substr(1);
      while (!rest.empty() && rest[0] == ' ') rest.remove_prefix(1);
      const bool is_help = rest.starts_with("HELP ");
      const bool is_type = rest.starts_with("TYPE ");
      if (!is_help && !is_type) continue;  // a plain comment
      rest.remove_prefix(5);
      while (!rest.empty() && rest[0] == ' ') rest.remove_prefix(1);
      const size_t sp = rest.find(' ');
      std::string name(rest.substr(0, sp));
      std::string_view arg =
          sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
      if (is_type) {
        while (!arg.empty() && arg.back() == ' ') arg.remove_suffix(1);
        auto t = ParseType(arg);
        if (!t) {
          TTFT_RETURN_IF_ERROR(
              bad(line_no, "bad type", fmt::format("unknown TYPE '{}' for {}", arg, name)));
          continue;
        }
        types[name] = *t;
      } else {
        helps[name] = std::string(arg);
      }
      continue;
    }
    Sample s;
    s.line = line_no;
    std::string why = ParseSampleLine(line, s);
    if (!why.empty()) {
      TTFT_RETURN_IF_ERROR(bad(line_no, "malformed line", std::move(why)));
      continue;
    }
    samples.push_back(std::move(s));
  }

  // Which family does each sample belong to? Histograms without a TYPE are
  // recognised by *_bucket samples carrying `le`.
  std::unordered_map<std::string, MetricType> inferred;
  for (const Sample& s : samples) {
    std::string_view base = StripSuffix(s.name, "_bucket");
    if (!base.empty() && !types.count(s.name) && !types.count(std::string(base))) {
      for (const auto& kv : s.labels) {
        if (kv.first == "le") inferred[std::string(base)] = MetricType::kHistogram;
      }
    }
  }
  auto type_of = [&](const std::string& n) -> std::optional<MetricType> {
    if (auto it = types.find(n); it != types.end()) return it->second;
    if (auto it = inferred.find(n); it != inferred.end()) return it->second;
    return std::nullopt;
  };
  // Families declared as `X_created gauge` beside a counter X_total or a histogram /
  // summary X are prometheus_client's creation timestamps: dropped.
  auto is_created_family = [&](std::string_view n) {
    std::string_view base = StripSuffix(n, "_created");
    if (base.empty()) return false;
    auto t1 = type_of(std::string(base) + "_total");
    auto t2 = type_of(std::string(base));
    return (t1 && *t1 == MetricType::kCounter) ||
           (t2 && (*t2 == MetricType::kHistogram || *t2 == MetricType::kSummary ||
                   *t2 == MetricType::kCounter));
  };

  MetricSnapshot snap;
  std::unordered_map<std::string, size_t> family_index;
  struct HistBuild {
    std::vector<std::pair<double, double>> buckets;
    double sum = std::numeric_limits<double>::quiet_NaN();
    double count = std::numeric_limits<double>::quiet_NaN();
    std::vector<std::pair<double, double>> quantiles;
    int64_t line = 0;
  };
  // family index -> series key -> (labels, build)
  std::vector<std::map<std::string, std::pair<Labels, HistBuild>>> builds;
  std::vector<std::map<std::string, size_t>> scalar_series;

  auto family_for = [&](const std::string& name, MetricType type) -> size_t {
    auto it = family_index.find(name);
    if (it != family_index.end()) return it->second;
    MetricFamily f;
    f.name = name;
    f.type = type;
    if (auto h = helps.find(name); h != helps.end()) f.help = h->second;
    if (type == MetricType::kCounter && f.help.empty()) {
      if (auto h = helps.find(std::string(StripSuffix(name, "_total"))); h != helps.end()) {
        f.help = h->second;
      }
    }
    snap.families.push_back(std::move(f));
    builds.emplace_back();
    scalar_series.emplace_back();
    family_index.emplace(name, snap.families.size() - 1);
    return snap.families.size() - 1;
  };

  for (Sample& s : samples) {
    if (is_created_family(s.name)) continue;
    // Histogram / summary parts.
    std::string base;
    std::string_view part;
    for (std::string_view suffix : {"_bucket", "_sum", "_count", "_created"}) {
      std::string_view b = StripSuffix(s.name, suffix);
      if (b.empty()) continue;
      auto t = type_of(std::string(b));
      if (t && (*t == MetricType::kHistogram || *t == MetricType::kSummary)) {
        base = std::string(b);
        part = suffix;
        break;
      }
    }
    auto whole_type = type_of(s.name);
    if (base.empty() && whole_type && *whole_type == MetricType::kSummary) {
      base = s.name;
      part = "";
    }
    if (!base.empty()) {
      if (part == "_created") continue;
      const MetricType t = *type_of(base);
      const size_t fi = family_for(base, t);
      Labels key_labels = s.labels;
      double le = 0;
      if (part == "_bucket" || (t == MetricType::kSummary && part.empty())) {
        const std::string_view lname = part == "_bucket" ? "le" : "quantile";
        auto it = std::find_if(s.labels.begin(), s.labels.end(),
                               [&](const auto& kv) { return kv.first == lname; });
        if (it == s.labels.end() || !ParsePromFloat(it->second, le) || std::isnan(le)) {
          TTFT_RETURN_IF_ERROR(bad(s.line, "malformed line",
                                   fmt::format("{}: missing or bad '{}' label", s.name, lname)));
          continue;
        }
        key_labels = Without(s.labels, lname);
      }
      auto& entry = builds[fi][SeriesKey(key_labels)];
      if (entry.second.line == 0) {
        entry.first = key_labels;
        entry.second.line = s.line;
      }
      HistBuild& hb = entry.second;
      // A repeated bucket, _sum or _count of one series: the first is kept and the
      // repeat reported (it used to win silently).
      const bool repeated = part == "_bucket"
                                ? std::any_of(hb.buckets.begin(), hb.buckets.end(),
                                              [&](const auto& b) { return b.first == le; })
                                : (part == "_sum" && !std::isnan(hb.sum)) ||
                                      (part == "_count" && !std::isnan(hb.count));
      if (repeated) {
        TTFT_RETURN_IF_ERROR(bad(s.line, "duplicate sample",
                                 fmt::format("{}{}: duplicate series", s.name,
                                             part == "_bucket" ? fmt::format(" le={}", le) : "")));
        continue;
      }
      if (part == "_bucket") {
        hb.buckets.emplace_back(le, s.value);
      } else if (part == "_sum") {
        hb.sum = s.value;
      } else if (part == "_count") {
        hb.count = s.value;
      } else {
        hb.quantiles.emplace_back(le, s.value);
      }
      continue;
    }
    // Counters (TYPE X_total or TYPE X with sample X_total), gauges, untyped.
    MetricType t = MetricType::kUntyped;
    if (whole_type) {
      t = *whole_type;
    } else if (auto b = StripSuffix(s.name, "_total"); !b.empty()) {
      if (auto bt = type_of(std::string(b)); bt && *bt == MetricType::kCounter) t = *bt;
    }
    // OpenMetrics 1.0, Counter: a Total is non-NaN and non-decreasing from 0. A
    // negative, infinite or NaN one is no count; kept, it would turn the window's
    // increase and every rate over it into NaN or Inf.
    if (t == MetricType::kCounter && !IsCount(s.value)) {
      TTFT_RETURN_IF_ERROR(bad(s.line, "bad value",
                               fmt::format("{}: a counter is negative, infinite or NaN", s.name)));
      continue;
    }
    const size_t fi = family_for(s.name, t);
    auto [it, inserted] = scalar_series[fi].emplace(SeriesKey(s.labels), 0);
    if (!inserted) {
      TTFT_RETURN_IF_ERROR(
          bad(s.line, "duplicate sample", fmt::format("{}: duplicate series", s.name)));
      continue;
    }
    MetricSeries series;
    series.labels = std::move(s.labels);
    series.value = s.value;
    snap.families[fi].series.push_back(std::move(series));
    ++report.records_read;
  }

  // Assemble histograms and summaries.
  for (size_t fi = 0; fi < snap.families.size(); ++fi) {
    MetricFamily& f = snap.families[fi];
    for (auto& [key, entry] : builds[fi]) {
      auto& [labels, hb] = entry;
      MetricSeries series;
      series.labels = labels;
      series.histogram.sum = std::isnan(hb.sum) ? 0 : hb.sum;
      if (f.type == MetricType::kSummary) {
        series.summary_quantiles = hb.quantiles;
        series.histogram.count = std::isnan(hb.count) ? 0 : hb.count;
        f.series.push_back(std::move(series));
        ++report.records_read;
        continue;
      }
      // Checked before sorting: NaN has no order.
      if (std::any_of(hb.buckets.begin(), hb.buckets.end(),
                      [](const auto& b) { return std::isnan(b.first) || b.first == -kInf; })) {
        TTFT_RETURN_IF_ERROR(bad(hb.line, "bad bucket bound",
                                 fmt::format("{}: a bucket's le is -Inf or NaN (a bound must be "
                                             "a finite number or +Inf)",
                                             f.name)));
        continue;
      }
      if ((!std::isnan(hb.count) && !IsCount(hb.count)) ||
          std::any_of(hb.buckets.begin(), hb.buckets.end(),
                      [](const auto& b) { return !IsCount(b.second); })) {
        TTFT_RETURN_IF_ERROR(bad(hb.line, "bad value",
                                 fmt::format("{}: a bucket count or _count is negative, infinite "
                                             "or NaN",
                                             f.name)));
        continue;
      }
      std::sort(hb.buckets.begin(), hb.buckets.end());
      double inf_count = std::numeric_limits<double>::quiet_NaN();
      bool monotonic = true;
      double prev = -kInf;
      for (auto [le, c] : hb.buckets) {
        // A count below the one of a smaller bound is raised to it, as PromQL's
        // histogram_quantile does (ensureMonotonic in promql/quantile.go), so no bucket
        // holds a negative number of observations.
        if (c < prev) {
          monotonic = false;
          c = prev;
        }
        prev = c;
        if (std::isinf(le) && le > 0) {
          inf_count = c;
        } else {
          series.histogram.upper_bounds.push_back(le);
          series.histogram.cumulative_counts.push_back(c);
        }
      }
      if (std::isnan(inf_count) && std::isnan(hb.count)) {
        TTFT_RETURN_IF_ERROR(
            bad(hb.line, "incomplete histogram",
                fmt::format("{}: histogram without +Inf bucket or _count", f.name)));
        continue;
      }
      series.histogram.count = std::isnan(inf_count) ? hb.count : inf_count;
      const auto& cum = series.histogram.cumulative_counts;
      if (!cum.empty() && series.histogram.count < cum.back()) {  // a _count below a bucket
        monotonic = false;
        series.histogram.count = cum.back();
      }
      if (!monotonic) {
        report.warnings.push_back(fmt::format(
            "{}:{}: {}: bucket counts decrease with le: each raised to the count of the bound "
            "below it, as histogram_quantile does",
            options.source, hb.line, f.name));
      }
      f.series.push_back(std::move(series));
      ++report.records_read;
    }
  }
  std::erase_if(snap.families, [](const MetricFamily& f) { return f.series.empty(); });
  return snap;
}

Result<MetricSnapshot> ReadExpositionFile(const std::string& path, bool strict,
                                          ReadReport& report) {
  // One scrape of one server: a large vLLM /metrics is about 1 MB; 256 MiB is far
  // beyond any real one and keeps a gzip bomb's peak memory under 1 GB.
  constexpr size_t kMaxScrapeBytes = size_t{256} << 20;
  TTFT_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, kMaxScrapeBytes));
  ExpositionParseOptions options;
  options.strict = strict;
  options.source = path == "-" ? "<stdin>" : path;
  return ParseExposition(text, options, report);
}

// ---------------------------------------------------------------------------
// Canonical names
// ---------------------------------------------------------------------------

namespace {
using Names = std::vector<std::string_view>;
const std::array<Names, 16>& CanonicalTable() {
  static const std::array<Names, 16> table = {
      Names{"vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"},
      Names{"vllm:request_queue_time_seconds", "vllm:time_in_queue_requests",
            "sglang:queue_time_seconds", "sglang:waiting_request_latency_seconds"},
      Names{"vllm:request_prefill_time_seconds"},
      Names{"vllm:request_decode_time_seconds"},
      Names{"vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds"},
      Names{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
            "sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"},
      Names{"vllm:request_prompt_tokens", "sglang:request_prompt_tokens"},
      Names{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"},
      Names{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"},
      Names{"vllm:num_preemptions_total"},
      Names{"vllm:prompt_tokens_total", "sglang:prompt_tokens_total"},
      Names{"vllm:prompt_tokens_cached_total", "sglang:cached_tokens_total"},
      Names{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"},
      Names{"vllm:num_requests_running", "sglang:num_running_reqs", "sglang:num_requests_running"},
      Names{"vllm:num_requests_waiting", "sglang:num_queue_reqs", "sglang:num_requests_waiting"},
      Names{"vllm:request_success_total", "sglang:num_requests_total"},
  };
  return table;
}
}  // namespace

std::string_view ToString(CanonicalMetric m) {
  static constexpr std::string_view kNames[] = {"ttft",
                                                "queue",
                                                "prefill",
                                                "decode",
                                                "e2e",
                                                "itl",
                                                "prompt_tokens_per_request",
                                                "prefix_cache_hits",
                                                "prefix_cache_queries",
                                                "preemptions",
                                                "prompt_tokens",
                                                "cached_prompt_tokens",
                                                "kv_cache_usage",
                                                "running",
                                                "waiting",
                                                "requests_finished"};
  return kNames[static_cast<size_t>(m)];
}

std::span<const std::string_view> FamilyNamesFor(CanonicalMetric m) {
  return CanonicalTable()[static_cast<size_t>(m)];
}

std::vector<std::string> CanonicalFamilyNames() {
  std::vector<std::string> out;
  for (int m = 0; m <= static_cast<int>(CanonicalMetric::kRequestsFinished); ++m) {
    for (std::string_view name : FamilyNamesFor(static_cast<CanonicalMetric>(m))) {
      if (std::find(out.begin(), out.end(), name) == out.end()) out.emplace_back(name);
    }
  }
  return out;
}

const MetricFamily* FindCanonical(const MetricSnapshot& snapshot, CanonicalMetric m) {
  for (std::string_view name : FamilyNamesFor(m)) {
    for (const MetricFamily& f : snapshot.families) {
      if (f.name == name) return &f;
    }
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Window deltas
// ---------------------------------------------------------------------------

namespace {

// Counter resets WindowDelta read, for its warning.
struct ResetNotes {
  int64_t series = 0;  // series with at least one reset
  std::string first;   // one of them, with the scrape time
  void Add(const MetricFamily& f, const MetricSeries& s, double at_s) {
    if (series++ == 0) first = fmt::format("{} at t={}", SeriesText(f.name, s.labels), at_s);
  }
};

// The window delta of one series (family `f`, latest appearance `last`) over
// `snapshots`, with `index` as WindowDelta builds it; nullopt when the series is
// skipped (bucket bounds change; reported). A reset is noted in `resets`.
std::optional<MetricSeries> SeriesDelta(
    std::span<const MetricSnapshot> snapshots,
    const std::vector<std::unordered_map<std::string, const MetricSeries*>>& index,
    const MetricFamily& f, const MetricSeries& last, const std::string& key, ReadReport& report,
    ResetNotes& resets) {
  bool reset_seen = false;
  MetricSeries d;
  d.labels = last.labels;
  if (f.type == MetricType::kGauge || f.type == MetricType::kUntyped) {
    d.value = last.value;
    return d;
  }
  if (f.type == MetricType::kCounter) {
    const MetricSeries* prev = nullptr;
    for (size_t i = 0; i < snapshots.size(); ++i) {
      auto it = index[i].find(key);
      if (it == index[i].end()) continue;
      const double v = it->second->value;
      if (prev == nullptr) {
        if (i > 0) d.value += v;  // created inside the window: counts from zero
      } else {
        d.value += v >= prev->value ? v - prev->value : v;  // a drop is a reset
        if (v < prev->value && !std::exchange(reset_seen, true)) {
          resets.Add(f, last, snapshots[i].timestamp_s);
        }
      }
      prev = it->second;
    }
    return d;
  }
  // Histograms and summaries: reset detected on _count.
  d.histogram.upper_bounds = last.histogram.upper_bounds;
  d.histogram.cumulative_counts.assign(last.histogram.upper_bounds.size(), 0);
  d.summary_quantiles = last.summary_quantiles;
  const MetricSeries* prev = nullptr;
  for (size_t i = 0; i < snapshots.size(); ++i) {
    auto it = index[i].find(key);
    if (it == index[i].end()) continue;
    const HistogramValue& h = it->second->histogram;
    const bool has_buckets = f.type == MetricType::kHistogram;
    if (has_buckets && h.upper_bounds != last.histogram.upper_bounds) {
      report.warnings.push_back(
          fmt::format("{}: bucket bounds change between snapshots; series skipped", f.name));
      return std::nullopt;
    }
    const bool reset = prev != nullptr && h.count < prev->histogram.count;
    if (reset && !std::exchange(reset_seen, true)) resets.Add(f, last, snapshots[i].timestamp_s);
    const bool from_zero = prev == nullptr ? i > 0 : reset;
    if (prev == nullptr && !from_zero) {
      prev = it->second;
      continue;
    }
    const HistogramValue* base = from_zero ? nullptr : &prev->histogram;
    d.histogram.count += h.count - (base ? base->count : 0);
    d.histogram.sum += h.sum - (base ? base->sum : 0);
    if (has_buckets) {
      for (size_t b = 0; b < h.cumulative_counts.size(); ++b) {
        d.histogram.cumulative_counts[b] +=
            h.cumulative_counts[b] - (base ? base->cumulative_counts[b] : 0);
      }
    }
    prev = it->second;
  }
  return d;
}

}  // namespace

Result<MetricSnapshot> WindowDelta(std::span<const MetricSnapshot> snapshots, ReadReport& report) {
  if (snapshots.size() < 2) {
    return Status::Invalid("a window needs at least two snapshots");
  }
  // Index every snapshot: family name + series key -> series.
  std::vector<std::unordered_map<std::string, const MetricSeries*>> index(snapshots.size());
  for (size_t i = 0; i < snapshots.size(); ++i) {
    for (const MetricFamily& f : snapshots[i].families) {
      for (const MetricSeries& s : f.series) index[i][f.name + '\x1d' + SeriesKey(s.labels)] = &s;
    }
  }
  MetricSnapshot out;
  out.timestamp_s = snapshots.back().timestamp_s;
  // Every series of any snapshot, at its latest appearance: the last snapshot's series
  // first (in its order), then those that vanished before the end (a replica scaled
  // down, a process that died), newest first. A vanished counter or histogram keeps
  // its increase up to its last scrape (left out when that is zero); a vanished gauge
  // has no current value.
  std::unordered_map<std::string, size_t> family_at;  // name -> index in out.families
  std::unordered_set<std::string> seen;
  int64_t vanished = 0;
  std::string first_vanished;
  ResetNotes resets;
  for (size_t k = snapshots.size(); k-- > 0;) {
    for (const MetricFamily& f : snapshots[k].families) {
      for (const MetricSeries& last : f.series) {
        const std::string key = f.name + '\x1d' + SeriesKey(last.labels);
        if (!seen.insert(key).second) continue;
        const bool gauge = f.type == MetricType::kGauge || f.type == MetricType::kUntyped;
        const bool gone = k + 1 < snapshots.size();
        if (gone && gauge) continue;
        std::optional<MetricSeries> d =
            SeriesDelta(snapshots.first(k + 1), index, f, last, key, report, resets);
        if (!d) continue;
        if (gone) {
          // Gone with no increase (e.g. drained before the window): nothing to keep.
          if (d->value == 0 && d->histogram.count == 0) continue;
          if (vanished++ == 0) {
            first_vanished = fmt::format("{} last scraped at t={}", SeriesText(f.name, last.labels),
                                         snapshots[k].timestamp_s);
          }
        }
        auto [pos, fresh] = family_at.emplace(f.name, out.families.size());
        if (fresh) {
          MetricFamily df;
          df.name = f.name;
          df.help = f.help;
          df.type = f.type;
          out.families.push_back(std::move(df));
        }
        out.families[pos->second].series.push_back(std::move(*d));
      }
    }
  }
  std::erase_if(out.families, [](const MetricFamily& f) { return f.series.empty(); });
  if (vanished > 0) {
    report.warnings.push_back(fmt::format(
        "{} counter or histogram series vanish before the window's end (e.g. {}): their "
        "increase up to their last scrape is counted",
        vanished, first_vanished));
  }
  if (resets.series > 0) {
    report.warnings.push_back(fmt::format(
        "{} counter or histogram series decrease between scrapes (e.g. {}): read as counter "
        "resets (a restart), each counting from zero; if the scrapes were given out of order, "
        "give them with sample timestamps or named t<seconds>.prom",
        resets.series, resets.first));
  }
  return out;
}

}  // namespace ttft
