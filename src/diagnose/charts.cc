// Diagnose() stage: the charts of the HTML report: a timeline with the onset, small
// multiples per replica and tenant, TTFT CDFs (diagnose/stages.h).
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "diagnose/parallel.h"
#include "diagnose/stages.h"
#include "ttft/stats.h"

namespace ttft::diag {
namespace {

// The time series of the rows of window [from_s, to_s) in `buckets` buckets, for
// each of `groups` in one pass (group_of_set[label set] picks a row's group; an
// empty `groups` means one series of all the rows).
std::vector<std::vector<TimePoint>> SeriesOf(const SpanTable& t, std::span<const uint32_t> rows,
                                             double from_s, double to_s, int buckets,
                                             std::span<const int> group_of_set,
                                             std::span<const size_t> groups) {
  const size_t nseries = groups.empty() ? 1 : groups.size();
  std::vector<std::vector<TimePoint>> out(nseries);
  if (buckets <= 0 || to_s <= from_s) return out;
  // Label set -> series, or -1 for rows of no wanted group.
  std::vector<int> slot_of_set(t.num_label_sets(), groups.empty() ? 0 : -1);
  for (size_t s = 0; s < slot_of_set.size() && !groups.empty(); ++s) {
    const auto it = std::find(groups.begin(), groups.end(), static_cast<size_t>(group_of_set[s]));
    if (it != groups.end()) slot_of_set[s] = static_cast<int>(it - groups.begin());
  }
  const double width = (to_s - from_s) / buckets;
  const auto nb = static_cast<size_t>(buckets);
  const auto sets = t.label_set();
  // Series k's bucket b is cell k * nb + b, or none for rows of no wanted group.
  auto cell = [&](uint32_t r) -> std::optional<size_t> {
    const int slot = slot_of_set[sets[r]];
    if (slot < 0) return std::nullopt;
    const int b = std::clamp(static_cast<int>((t.arrival_s()[r] - from_s) / width), 0, buckets - 1);
    return static_cast<size_t>(slot) * nb + static_cast<size_t>(b);
  };
  auto has_ttft = [&](uint32_t r) {
    return t.status()[r] == RequestStatus::kOk && !std::isnan(t.ttft_s()[r]);
  };
  // The cells' TTFT values, in row order, are [first[c], first[c + 1]) of one array.
  std::vector<size_t> first(nseries * nb + 1, 0);
  for (uint32_t r : rows) {
    const auto c = cell(r);
    if (c && has_ttft(r)) ++first[*c + 1];
  }
  for (size_t c = 0; c + 1 < first.size(); ++c) first[c + 1] += first[c];
  LargeVector<double> ttft(first.back());
  std::vector<size_t> fill(first.begin(), first.end() - 1);
  std::vector<double> prompt(nseries * nb, 0), cached(nseries * nb, 0);
  std::vector<int64_t> n(nseries * nb, 0);
  for (uint32_t r : rows) {
    const auto c = cell(r);
    if (!c) continue;
    const size_t ub = *c;
    ++n[ub];
    if (t.status()[r] != RequestStatus::kOk) continue;
    if (has_ttft(r)) ttft[fill[ub]++] = t.ttft_s()[r];
    if (t.prompt_tokens()[r] > 0 && t.cached_tokens()[r] >= 0) {
      prompt[ub] += t.prompt_tokens()[r];
      cached[ub] += t.cached_tokens()[r];
    }
  }
  for (size_t k = 0; k < nseries; ++k) {
    for (size_t b = 0; b < nb; ++b) {
      const size_t ub = k * nb + b;
      TimePoint p;
      p.t_s = from_s + (static_cast<double>(b) + 0.5) * width;
      p.requests = n[ub];
      p.ttft_p99_s =
          Quantile(std::span<double>(ttft.data() + first[ub], ttft.data() + first[ub + 1]), 0.99);
      p.hit_rate = prompt[ub] > 0 ? cached[ub] / prompt[ub] : kMissing;
      out[k].push_back(p);
    }
  }
  return out;
}

std::vector<TimePoint> Series(const SpanTable& t, std::span<const uint32_t> rows, double from_s,
                              double to_s, int buckets) {
  return std::move(SeriesOf(t, rows, from_s, to_s, buckets, {}, {}).front());
}

}  // namespace

std::vector<std::pair<double, double>> Cdf(std::vector<double> v) {
  std::vector<std::pair<double, double>> out;
  if (v.empty()) return out;
  std::sort(v.begin(), v.end());
  auto at = [&](double p) {
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
    return v[i];
  };
  for (int i = 1; i <= 98; ++i) out.emplace_back(at(i / 100.0), i / 100.0);
  for (double p : {0.99, 0.995, 0.999}) out.emplace_back(at(p), p);
  return out;
}

Charts BuildCharts(const DiagnosisInput& in, const Windows& w, const Groups& groups,
                   std::span<const GroupSplit> splits, std::vector<double> sa,
                   std::vector<double> sb, Workspace& ws) {
  const SpanWindow& A = in.baseline;
  const SpanWindow& B = in.incident;
  Charts c;
  const int nb = std::max(2, in.options.time_buckets / 2);
  auto tl_a = Series(*A.table, w.rows_a, A.from_s, A.to_s, nb);
  auto tl_b = Series(*B.table, w.rows_b, B.from_s, B.to_s, nb);
  c.timeline = tl_a;
  c.timeline.insert(c.timeline.end(), tl_b.begin(), tl_b.end());
  for (const TimePoint& p : tl_b) {
    if (p.requests >= 20 && p.ttft_p99_s > 1.5 * w.baseline.ttft_s.p99) {
      c.onset_s = p.t_s;
      break;
    }
  }
  for (const GroupSplit& s : splits) {
    auto it = groups.kept.find(s.dimension);
    if (it == groups.kept.end() || s.rows.size() < 2) continue;
    const GroupIndex& g = it->second;
    std::vector<size_t> shown;  // the first 12 rows' groups
    for (const GroupRow& r : s.rows) {
      if (shown.size() >= 12) break;
      shown.push_back(static_cast<size_t>(std::find(g.names.begin(), g.names.end(), r.value) -
                                          g.names.begin()));
    }
    std::vector<std::vector<TimePoint>> pa, pb;
    RunBoth(
        ws.parallel(),
        [&] { pa = SeriesOf(*A.table, w.rows_a, A.from_s, A.to_s, nb, g.group_of_set_a, shown); },
        [&] { pb = SeriesOf(*B.table, w.rows_b, B.from_s, B.to_s, nb, g.group_of_set_b, shown); });
    for (size_t k = 0; k < shown.size(); ++k) {
      GroupSeries gs;
      gs.dimension = s.dimension;
      gs.value = s.rows[k].value;
      gs.points = std::move(pa[k]);
      gs.points.insert(gs.points.end(), pb[k].begin(), pb[k].end());
      c.group_series.push_back(std::move(gs));
    }
  }
  c.cdf_before = Cdf(std::move(sa));
  c.cdf_after = Cdf(std::move(sb));
  return c;
}

}  // namespace ttft::diag
