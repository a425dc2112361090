// The arms of a canary comparison: from spans (one value per request) or from the
// increase of metric series over a window (ttft/gate.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ttft/gate.h"

namespace ttft {
namespace {

// Adds the matching series of histogram family `m` of `delta` into `out`. Series with
// other bucket bounds than the first are an error (their sum has no meaning).
Status SumHistogram(const MetricSnapshot& delta, CanonicalMetric m,
                    std::span<const std::pair<std::string, std::string>> match,
                    GateHistogram& out) {
  const MetricFamily* f = FindCanonical(delta, m);
  if (f == nullptr || f->type != MetricType::kHistogram) return Status::Ok();
  for (const MetricSeries& s : f->series) {
    if (!MatchesSelector(s.labels, match)) continue;
    const HistogramValue& h = s.histogram;
    if (out.upper_bounds.empty() && out.count == 0) {
      out.upper_bounds = h.upper_bounds;
      out.cumulative_counts.assign(h.upper_bounds.size(), 0);
    }
    if (out.upper_bounds != h.upper_bounds) {
      return Status::Invalid(fmt::format(
          "{}: {} bucket bound(s) where the first matching series has {}: series with different "
          "bucket bounds cannot be summed (a bucket layout changed between scrapes or replicas)",
          SeriesText(f->name, s.labels), h.upper_bounds.size(), out.upper_bounds.size()));
    }
    for (size_t i = 0; i < h.cumulative_counts.size(); ++i) {
      out.cumulative_counts[i] += h.cumulative_counts[i];
    }
    out.count += h.count;
  }
  return Status::Ok();
}

// Blanks around a selector's name or value. By hand: absl::StripAsciiWhitespace takes
// Debian's absl::string_view, a type of its own (ABSL_OPTION_USE_STD_STRING_VIEW 0).
std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

GateArm ArmFromSpans(const SpanTable& t, std::span<const uint32_t> rows) {
  GateArm a;
  bool model_set = false, model_mixed = false;
  double first_s = 0, last_s = 0;
  for (uint32_t r : rows) {
    const double at = t.arrival_s()[r];
    if (a.request_arrival_s.empty()) first_s = last_s = at;
    first_s = std::min(first_s, at);
    last_s = std::max(last_s, at);
    a.request_arrival_s.push_back(at);
    std::string_view model = t.label(r, SpanLabel::kModel);
    if (!model_set) {
      a.model = std::string(model);
      model_set = true;
    } else if (model != a.model) {
      model_mixed = true;
    }
    // The samples, by WindowStats' definitions (window_stats.h): preemptions over
    // every request, the rest over ok requests.
    const int16_t pre = t.preemptions()[r];
    if (pre >= 0) a.preemptions.push_back(pre);
    if (t.status()[r] != RequestStatus::kOk) {
      a.error_arrival_s.push_back(at);
      continue;
    }
    const float ttft = t.ttft_s()[r], queue = t.queue_s()[r], itl = t.itl_mean_s()[r];
    if (!std::isnan(ttft)) {
      a.ttft_s.push_back(ttft);
      a.ttft_arrival_s.push_back(at);
    }
    if (!std::isnan(queue)) {
      a.queue_s.push_back(queue);
      a.queue_arrival_s.push_back(at);
    }
    if (!std::isnan(itl)) a.itl_s.push_back(itl);
    const int32_t prompt = t.prompt_tokens()[r], cached = t.cached_tokens()[r];
    if (prompt >= 0 && cached >= 0) {
      a.prompt_tokens.push_back(prompt);
      a.cached_tokens.push_back(cached);
    }
  }
  if (model_mixed) a.model.clear();
  std::sort(a.request_arrival_s.begin(), a.request_arrival_s.end());
  std::sort(a.error_arrival_s.begin(), a.error_arrival_s.end());
  a.stats = ComputeWindowStats(t, rows, first_s, last_s, StatsDetail::kFull);
  return a;
}

Result<GateArm> ArmFromMetrics(std::span<const MetricSnapshot> snapshots,
                               std::span<const std::pair<std::string, std::string>> match) {
  if (snapshots.size() < 2) {
    return Status::Invalid(fmt::format(
        "metrics give a window only between two scrapes; got {} in the window", snapshots.size()));
  }
  ReadReport report;
  TTFT_ASSIGN_OR_RETURN(MetricSnapshot delta, WindowDelta(snapshots, report));
  GateArm a;
  a.from_metrics = true;
  TTFT_RETURN_IF_ERROR(SumHistogram(delta, CanonicalMetric::kTtft, match, a.ttft_hist));
  TTFT_RETURN_IF_ERROR(SumHistogram(delta, CanonicalMetric::kQueue, match, a.queue_hist));
  TTFT_RETURN_IF_ERROR(SumHistogram(delta, CanonicalMetric::kItl, match, a.itl_hist));
  if (a.ttft_hist.upper_bounds.empty() && a.ttft_hist.count == 0) {
    std::string sel;
    for (const auto& [n, v] : match) {
      if (!sel.empty()) sel += ",";
      sel.append(n).append("=").append(v);
    }
    return Status::NotFound(
        fmt::format("no TTFT histogram series{}", sel.empty() ? "" : " matching " + sel));
  }
  TTFT_ASSIGN_OR_RETURN(a.stats, WindowStatsFromMetrics(snapshots, snapshots.front().timestamp_s,
                                                        snapshots.back().timestamp_s, match));
  // The model label of the matching TTFT series, when they agree.
  if (const MetricFamily* f = FindCanonical(delta, CanonicalMetric::kTtft)) {
    bool first = true;
    for (const MetricSeries& s : f->series) {
      if (!MatchesSelector(s.labels, match)) continue;
      std::string model;
      for (const auto& [n, v] : s.labels) {
        if (n == "model_name" || n == "model") model = v;
      }
      if (first) {
        a.model = model;
        first = false;
      } else if (model != a.model) {
        a.model.clear();
        break;
      }
    }
  }
  return a;
}

Result<std::vector<std::pair<std::string, std::string>>> ParseSelector(std::string_view text,
                                                                       std::string_view flag) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    const size_t eq = item.find('=');
    std::string name(eq == std::string_view::npos ? std::string_view() : Trim(item.substr(0, eq)));
    if (name.empty()) {
      return Status::Invalid(
          fmt::format("{} '{}': expected name=value[,name=value...]", flag, text));
    }
    std::string value(Trim(item.substr(eq + 1)));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    // A span or series carries one value per label: a second matcher on the same label
    // would select nothing, silently.
    for (const auto& [seen, seen_value] : out) {
      if (seen == name) {
        return Status::Invalid(fmt::format(
            "{} '{}': label '{}' given twice ('{}' and '{}'): a request carries one value per "
            "label, so both together select nothing",
            flag, text, name, seen_value, value));
      }
    }
    out.emplace_back(std::move(name), std::move(value));
    start = end + 1;
  }
  return out;
}

Result<std::vector<uint32_t>> SelectRows(
    const SpanTable& table, std::span<const std::pair<std::string, std::string>> match) {
  std::vector<std::pair<SpanLabel, std::string>> want;
  for (const auto& [name, value] : match) {
    std::optional<SpanLabel> l = ParseSpanLabel(name);
    if (!l) {
      return Status::Invalid(fmt::format(
          "selector label '{}': spans carry tenant, replica, region, template, model, deploy",
          name));
    }
    want.emplace_back(*l, value);
  }
  // Decide per label set once.
  std::vector<uint8_t> keep(table.num_label_sets(), 0);
  for (uint32_t s = 0; s < keep.size(); ++s) {
    bool ok = true;
    for (const auto& [l, v] : want) ok = ok && table.label_of_set(s, l) == v;
    keep[s] = ok;
  }
  std::vector<uint32_t> rows;
  auto sets = table.label_set();
  for (uint32_t r = 0; r < table.size(); ++r) {
    if (keep[sets[r]]) rows.push_back(r);
  }
  return rows;
}

}  // namespace ttft
