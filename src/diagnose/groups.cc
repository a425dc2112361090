// Diagnose() stage: where it lives. The splits of both windows by every label, each
// group's share of the requests and contribution to the tail increase, and the label
// values that appear or disappear (diagnose/stages.h, docs/diagnosis.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/parallel.h"
#include "diagnose/stages.h"

namespace ttft::diag {
namespace {

constexpr std::array<SpanLabel, 6> kDimensions = {SpanLabel::kTenant, SpanLabel::kReplica,
                                                  SpanLabel::kRegion, SpanLabel::kTemplate,
                                                  SpanLabel::kModel,  SpanLabel::kDeploy};

// Group index of every label set of `t` for `label`, through `ids` (value -> index).
std::vector<int> GroupOfSet(const SpanTable& t, SpanLabel label, std::map<std::string, int>& ids,
                            std::vector<std::string>& names) {
  std::vector<int> out(t.num_label_sets());
  for (size_t s = 0; s < out.size(); ++s) {
    std::string v(t.label_of_set(static_cast<uint32_t>(s), label));
    auto [it, inserted] = ids.emplace(v, static_cast<int>(names.size()));
    if (inserted) names.push_back(v);
    out[s] = it->second;
  }
  return out;
}

GroupIndex SplitRows(const SpanTable* ta, const std::vector<uint32_t>& rows_a, const SpanTable* tb,
                     const std::vector<uint32_t>& rows_b, SpanLabel label) {
  GroupIndex g;
  std::map<std::string, int> ids;
  if (ta) g.group_of_set_a = GroupOfSet(*ta, label, ids, g.names);
  if (tb) g.group_of_set_b = tb == ta ? g.group_of_set_a : GroupOfSet(*tb, label, ids, g.names);
  auto count = [&](const SpanTable* t, const std::vector<uint32_t>& rows,
                   const std::vector<int>& group_of_set, std::vector<int64_t>& n,
                   std::vector<uint32_t>& first) {
    n.assign(g.names.size(), 0);
    first.assign(g.names.size(), UINT32_MAX);
    if (t == nullptr) return;
    const auto sets = t->label_set();
    for (uint32_t r : rows) {
      const auto gi = static_cast<size_t>(group_of_set[sets[r]]);
      if (n[gi]++ == 0) first[gi] = sets[r];
    }
  };
  count(ta, rows_a, g.group_of_set_a, g.count_a, g.first_set_a);
  count(tb, rows_b, g.group_of_set_b, g.count_b, g.first_set_b);
  return g;
}

int64_t CountAbove(const SpanTable& t, const std::vector<uint32_t>& rows, double threshold,
                   int64_t* ok) {
  int64_t n = 0;
  *ok = 0;
  for (uint32_t r : rows) {
    if (t.status()[r] != RequestStatus::kOk) continue;
    ++*ok;
    if (t.ttft_s()[r] > threshold) ++n;
  }
  return n;
}

}  // namespace

// A row's request shares and its tail excess: the incident's requests above the
// baseline p99 (`above_after`) beyond what the row's own baseline fraction above it
// predicts (the fleet's, `frac_all`, when the row had under 20 ok requests before).
void FinishRow(const Windows& w, double above_before, double above_after, double frac_all,
               GroupRow& row) {
  row.share_before =
      w.baseline.requests > 0 ? static_cast<double>(row.before.requests) / w.baseline.requests : 0;
  row.share_after =
      w.incident.requests > 0 ? static_cast<double>(row.after.requests) / w.incident.requests : 0;
  const int64_t okb = row.before.ok, oka = row.after.ok;
  const double frac = okb >= 20 ? above_before / static_cast<double>(okb) : frac_all;
  row.tail_excess = above_after - static_cast<double>(oka) * frac;
}

void RankByContribution(std::vector<GroupRow>& rows) {
  double pos_excess = 0;
  for (const GroupRow& r : rows) pos_excess += std::max(0.0, r.tail_excess);
  for (GroupRow& r : rows) {
    r.contribution = pos_excess > 0 ? std::max(0.0, r.tail_excess) / pos_excess : 0;
  }
  std::stable_sort(rows.begin(), rows.end(), [](const GroupRow& x, const GroupRow& y) {
    return x.contribution > y.contribution;
  });
}

std::vector<LabelChange> LabelChangesOf(const GroupSplit& split) {
  std::vector<LabelChange> out;
  for (const GroupRow& r : split.rows) {
    if (r.before.requests == 0 && r.share_after >= 0.01) {
      out.push_back({split.dimension, r.value, LabelChange::Kind::kNew, r.share_after});
    } else if (r.after.requests == 0 && r.share_before >= 0.01) {
      out.push_back({split.dimension, r.value, LabelChange::Kind::kGone, r.share_before});
    }
  }
  return out;
}

std::vector<Contribution> ContributionsOf(std::span<const GroupSplit> splits) {
  std::vector<Contribution> out;
  for (const GroupSplit& s : splits) {
    if (s.rows.size() < 2 || s.rows.front().contribution < 0.3) continue;
    const GroupRow& r = s.rows.front();
    out.push_back({s.dimension, r.value, r.before.prefix_cache_hit_rate,
                   r.after.prefix_cache_hit_rate, r.before.ttft_s.p99, r.after.ttft_s.p99,
                   r.share_after, r.contribution});
  }
  return out;
}

Groups SplitGroups(const DiagnosisInput& in, const Windows& w, Workspace& ws) {
  const SpanWindow& A = in.baseline;
  const SpanWindow& B = in.incident;
  const std::vector<uint32_t>& rows_a = w.rows_a;
  const std::vector<uint32_t>& rows_b = w.rows_b;
  Groups out;
  const double thr = w.baseline.ttft_s.p99;
  int64_t ok_a = 0;
  const int64_t above_a_all = CountAbove(*A.table, rows_a, thr, &ok_a);
  const double frac_all = ok_a > 0 ? static_cast<double>(above_a_all) / ok_a : 0.01;
  for (SpanLabel label : kDimensions) {
    GroupIndex g = SplitRows(A.table, rows_a, B.table, rows_b, label);
    // Every group's stats in one pass per window (not one strided gather per group).
    std::vector<GroupWindowStats> stats_a, stats_b;
    if (g.names.size() > 1) {
      RunBoth(
          ws.parallel(),
          [&] {
            stats_a = ComputeGroupWindowStats(*A.table, rows_a, g.group_of_set_a, g.names.size(),
                                              A.from_s, A.to_s, thr, ws.baseline());
          },
          [&] {
            stats_b = ComputeGroupWindowStats(*B.table, rows_b, g.group_of_set_b, g.names.size(),
                                              B.from_s, B.to_s, thr, ws.incident());
          });
    }
    GroupSplit split;
    split.dimension = std::string(ToString(label));
    for (size_t i = 0; i < g.names.size(); ++i) {
      if (g.count_a[i] == 0 && g.count_b[i] == 0) continue;
      GroupRow row;
      row.value = g.names[i];
      if (label == SpanLabel::kReplica) {
        // The region of the group's first row (in the incident if it has any).
        row.parent = std::string(g.count_b[i] > 0
                                     ? B.table->label_of_set(g.first_set_b[i], SpanLabel::kRegion)
                                     : A.table->label_of_set(g.first_set_a[i], SpanLabel::kRegion));
      }
      int64_t above_b = 0, above_a = 0;
      if (g.names.size() == 1) {  // the group is the whole window
        row.before = w.baseline;
        row.after = w.incident;
        int64_t ok_unused = 0;
        above_b = CountAbove(*A.table, rows_a, thr, &ok_unused);
        above_a = CountAbove(*B.table, rows_b, thr, &ok_unused);
      } else {
        row.before = std::move(stats_a[i].stats);
        row.after = std::move(stats_b[i].stats);
        above_b = stats_a[i].above;
        above_a = stats_b[i].above;
      }
      FinishRow(w, static_cast<double>(above_b), static_cast<double>(above_a), frac_all, row);
      split.rows.push_back(std::move(row));
    }
    RankByContribution(split.rows);
    // Label values that appear or disappear between the windows.
    if (label == SpanLabel::kTemplate || label == SpanLabel::kDeploy ||
        label == SpanLabel::kTenant || label == SpanLabel::kModel) {
      for (LabelChange& c : LabelChangesOf(split)) out.label_changes.push_back(std::move(c));
    }
    if (label == SpanLabel::kReplica || label == SpanLabel::kTenant) {
      out.kept[split.dimension] = std::move(g);
    }
    out.splits.push_back(std::move(split));
  }
  return out;
}

Result<Groups> SplitGroupsFromMetrics(const DiagnosisInput& in, const Windows& w,
                                      std::vector<std::string>& notes) {
  struct Dimension {
    const char* name;
    std::vector<std::string> labels;
  };
  const std::vector<Dimension> dims = {
      {"tenant", {"tenant"}},
      {"replica", {"replica", "pod", "instance"}},
      {"region", {"region"}},
      {"template", {"template"}},
      {"model", {"model_name", "model"}},
      {"deploy", {"deploy"}},
  };
  const std::vector<std::string> region_labels = {"region"};
  const double thr = w.baseline.ttft_s.p99;
  Groups out;
  std::vector<std::string> split, missing;
  for (const Dimension& dim : dims) {
    const bool replica = std::string_view(dim.name) == "replica";
    const std::span<const std::string> parents =
        replica ? std::span<const std::string>(region_labels) : std::span<const std::string>();
    TTFT_ASSIGN_OR_RETURN(auto ga,
                          GroupWindowStatsFromMetrics(in.baseline_snapshots, w.baseline.from_s,
                                                      w.baseline.to_s, dim.labels, parents, thr));
    TTFT_ASSIGN_OR_RETURN(auto gb,
                          GroupWindowStatsFromMetrics(in.incident_snapshots, w.incident.from_s,
                                                      w.incident.to_s, dim.labels, parents, thr));
    if (ga.empty() && gb.empty()) {
      missing.emplace_back(dim.name);
      continue;
    }
    split.emplace_back(dim.name);
    // The baseline's share of requests above its p99 (~1%, up to the interpolation),
    // for groups too small for their own.
    double above_all = 0, ok_all = 0;
    for (const MetricGroupWindowStats& g : ga) {
      above_all += g.above;
      ok_all += static_cast<double>(g.stats.ok);
    }
    const double frac_all = ok_all > 0 ? above_all / ok_all : 0.01;
    std::map<std::string, GroupRow> rows;
    std::map<std::string, double> above_b, above_a;
    for (MetricGroupWindowStats& g : ga) {
      GroupRow& r = rows[g.value];
      r.value = g.value;
      r.parent = g.parent;
      r.before = std::move(g.stats);
      above_b[g.value] = g.above;
    }
    for (MetricGroupWindowStats& g : gb) {
      GroupRow& r = rows[g.value];
      r.value = g.value;
      if (!g.parent.empty()) r.parent = g.parent;  // the incident's, as with spans
      r.after = std::move(g.stats);
      above_a[g.value] = g.above;
    }
    GroupSplit s;
    s.dimension = dim.name;
    for (auto& [value, row] : rows) {
      FinishRow(w, above_b[value], above_a[value], frac_all, row);
      s.rows.push_back(std::move(row));
    }
    RankByContribution(s.rows);
    if (s.dimension == "template" || s.dimension == "deploy" || s.dimension == "tenant" ||
        s.dimension == "model") {
      for (LabelChange& c : LabelChangesOf(s)) out.label_changes.push_back(std::move(c));
    }
    out.splits.push_back(std::move(s));
  }
  if (split.empty()) {
    notes.push_back(
        fmt::format("metrics only: no split by {}: no TTFT series carries any of these labels",
                    fmt::join(missing, ", ")));
  } else {
    notes.push_back(fmt::format(
        "metrics only: splits by {} from the series' labels (quantiles from each group's "
        "histogram buckets){}",
        fmt::join(split, ", "),
        missing.empty() ? std::string()
                        : fmt::format("; no split by {}: no TTFT series carries the label",
                                      fmt::join(missing, ", "))));
  }
  return out;
}

}  // namespace ttft::diag
