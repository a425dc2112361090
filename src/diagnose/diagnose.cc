// Diagnose(): builds the DiagnosisReport once (ttft/diagnose.h, docs/diagnosis.md).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "diagnose/gather.h"
#include "diagnose/parallel.h"
#include "ttft/diagnose.h"
#include "ttft/format.h"
#include "ttft/model.h"

namespace ttft {

using numfmt::Pct;
using numfmt::Ratio;
using numfmt::Secs;
using numfmt::X;

std::string_view ToString(Verdict v) {
  switch (v) {
    case Verdict::kRegression: return "regression";
    case Verdict::kNoRegression: return "no_regression";
    case Verdict::kInsufficientData: return "insufficient_data";
  }
  return "?";
}

std::string ToString(const LabelChange& c) {
  if (c.kind == LabelChange::Kind::kNew) {
    return fmt::format("{} {}: new in the incident ({} of requests)", c.dimension, c.value,
                       Pct(c.share));
  }
  return fmt::format("{} {}: gone in the incident (was {})", c.dimension, c.value, Pct(c.share));
}

const GroupSplit* Evidence::Split(std::string_view dimension) const {
  for (const GroupSplit& g : groups) {
    if (g.dimension == dimension) return &g;
  }
  return nullptr;
}

namespace {

constexpr std::array<SpanLabel, 6> kDimensions = {SpanLabel::kTenant, SpanLabel::kReplica,
                                                  SpanLabel::kRegion, SpanLabel::kTemplate,
                                                  SpanLabel::kModel,  SpanLabel::kDeploy};

std::vector<uint32_t> RowsIn(const SpanWindow& w) {
  std::vector<uint32_t> rows;
  if (w.table == nullptr) return rows;
  const auto arr = w.table->arrival_s();
  auto in = [&](double a) { return a >= w.from_s && a < w.to_s; };
  rows.reserve(static_cast<size_t>(std::count_if(arr.begin(), arr.end(), in)));  // no regrowth
  for (size_t i = 0; i < arr.size(); ++i) {
    if (in(arr[i])) rows.push_back(static_cast<uint32_t>(i));
  }
  return rows;
}

// TTFT of ok rows (NaN-free), systematically subsampled to at most `max_n`: of the m
// values in row order, those at floor(i * m / max_n) for i < max_n.
std::vector<double> TtftSample(const SpanTable& t, const std::vector<uint32_t>& rows,
                               int64_t max_n) {
  const auto ttft = t.ttft_s();
  const auto status = t.status();
  auto usable = [&](uint32_t r) { return status[r] == RequestStatus::kOk && !std::isnan(ttft[r]); };
  const auto m = static_cast<size_t>(std::count_if(rows.begin(), rows.end(), usable));
  std::vector<double> out;
  if (max_n <= 0 || m <= static_cast<size_t>(max_n)) {
    out.reserve(m);
    for (uint32_t r : rows) {
      if (usable(r)) out.push_back(ttft[r]);
    }
    return out;
  }
  // m > max_n: the step exceeds 1, so the picked indices strictly increase.
  const double step = static_cast<double>(m) / static_cast<double>(max_n);
  out.reserve(static_cast<size_t>(max_n));
  size_t k = 0;  // index among the usable values
  auto next = [&] { return static_cast<size_t>(static_cast<double>(out.size()) * step); };
  size_t want = next();
  for (uint32_t r : rows) {
    if (!usable(r)) continue;
    if (k++ != want) continue;
    out.push_back(ttft[r]);
    if (out.size() == static_cast<size_t>(max_n)) break;
    want = next();
  }
  return out;
}

struct TailMeans {
  double ttft = kMissing, fe = kMissing, queue = kMissing, prefill = kMissing;
};

TailMeans TailOf(const SpanTable& t, const std::vector<uint32_t>& rows, double threshold) {
  TailMeans m;
  if (!std::isfinite(threshold)) return m;
  double s_t = 0, s_f = 0, s_q = 0, s_p = 0;
  int64_t n = 0;
  for (uint32_t r : rows) {
    if (t.status()[r] != RequestStatus::kOk) continue;
    const float tt = t.ttft_s()[r];
    if (std::isnan(tt) || tt < threshold) continue;
    const float fe = t.front_end_s()[r], q = t.queue_s()[r], p = t.prefill_s()[r];
    s_t += tt;
    s_f += std::isnan(fe) ? 0 : fe;
    s_q += std::isnan(q) ? 0 : q;
    s_p += std::isnan(p) ? 0 : p;
    ++n;
  }
  if (n == 0) return m;
  const double dn = static_cast<double>(n);
  return {s_t / dn, s_f / dn, s_q / dn, s_p / dn};
}

Decomposition Decompose(const WindowStats& a, const WindowStats& b, const TailMeans& ta,
                        const TailMeans& tb) {
  Decomposition d;
  d.before_ttft = a.ttft_s;
  d.before_front_end = a.front_end_s;
  d.before_queue = a.queue_s;
  d.before_prefill = a.prefill_s;
  d.after_ttft = b.ttft_s;
  d.after_front_end = b.front_end_s;
  d.after_queue = b.queue_s;
  d.after_prefill = b.prefill_s;
  d.tail_before_ttft = ta.ttft;
  d.tail_before_front_end = ta.fe;
  d.tail_before_queue = ta.queue;
  d.tail_before_prefill = ta.prefill;
  d.tail_after_ttft = tb.ttft;
  d.tail_after_front_end = tb.fe;
  d.tail_after_queue = tb.queue;
  d.tail_after_prefill = tb.prefill;
  const double dq = tb.queue - ta.queue, dp = tb.prefill - ta.prefill, df = tb.fe - ta.fe;
  const double total = dq + dp + df;
  if (std::isfinite(total) && total > 0) {
    d.share_queue = dq / total;
    d.share_prefill = dp / total;
    d.share_front_end = df / total;
    if (d.share_queue >= d.share_prefill && d.share_queue >= d.share_front_end) {
      d.dominant = "queue";
    } else if (d.share_prefill >= d.share_front_end) {
      d.dominant = "prefill";
    } else {
      d.dominant = "front_end";
    }
  } else if (!a.from_metrics && !b.from_metrics) {
    d.dominant = "";
  }
  if (a.from_metrics || b.from_metrics) {
    // No per-request terms: attribute by the change of each term's p99.
    const double q = b.queue_s.p99 - a.queue_s.p99, p = b.prefill_s.p99 - a.prefill_s.p99;
    if (std::isfinite(q) && std::isfinite(p) && q + p > 0) {
      d.share_queue = std::max(0.0, q) / (std::max(0.0, q) + std::max(0.0, p));
      d.share_prefill = 1 - d.share_queue;
      d.dominant = d.share_queue >= d.share_prefill ? "queue" : "prefill";
    }
  }
  return d;
}

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

// The groups of one split: names, each label set's group, and per window each group's
// row count and the label set of its first row. No row lists: a split of 10 M rows
// would allocate (and page-fault in) 40 MB of them.
struct GroupIndex {
  std::vector<std::string> names;
  std::vector<int> group_of_set_a, group_of_set_b;  // label set -> group, per table
  std::vector<int64_t> count_a, count_b;            // rows per group, per window
  std::vector<uint32_t> first_set_a, first_set_b;   // label set of a group's first row
};

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

// The time series of the rows of window [from_s, to_s) in `buckets` buckets, for
// each of `groups` in one pass (group_of_set[label set] picks a row's group; an
// empty `groups` means one series of all the rows).
std::vector<std::vector<TimePoint>> SeriesOf(const SpanTable& t, const std::vector<uint32_t>& rows,
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

std::vector<TimePoint> Series(const SpanTable& t, const std::vector<uint32_t>& rows, double from_s,
                              double to_s, int buckets) {
  return std::move(SeriesOf(t, rows, from_s, to_s, buckets, {}, {}).front());
}

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

// Two-proportion z-test, one-sided (incident share above > baseline share above).
double TailTestP(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return kMissing;
  std::vector<double> pooled(a);
  pooled.insert(pooled.end(), b.begin(), b.end());
  const double thr = Quantile(pooled, 0.99);
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double xa =
      static_cast<double>(std::count_if(a.begin(), a.end(), [&](double v) { return v > thr; }));
  const double xb =
      static_cast<double>(std::count_if(b.begin(), b.end(), [&](double v) { return v > thr; }));
  const double p = (xa + xb) / (na + nb);
  const double se = std::sqrt(p * (1 - p) * (1 / na + 1 / nb));
  if (se <= 0) return 1;
  const double z = (xb / nb - xa / na) / se;
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

// The immediate mitigation for a change of this kind: undo it.
std::string UndoVerb(std::string_view kind) {
  if (kind == "drain_replica" || kind == "remove_replica") return "Undrain (or replace)";
  if (kind == "tenant_traffic") return "Rate-limit the traffic behind";
  return "Roll back";
}

std::string Owner(std::string_view kind) {
  if (kind == "deploy_template") return "app team";
  if (kind == "tenant_traffic") return "the tenant's client owner";
  return "serving team";
}

}  // namespace

// The magnitude section (magnitude.cc).
Magnitude EstimateMagnitude(const DiagnosisInput& in, const std::vector<uint32_t>& rows_a,
                            const std::vector<uint32_t>& rows_b, std::vector<std::string>& notes);

Result<DiagnosisReport> Diagnose(const DiagnosisInput& in) {
  const SpanWindow& A = in.baseline;
  const SpanWindow& B = in.incident;
  if (!(A.to_s > A.from_s) || !(B.to_s > B.from_s)) {
    return Status::Invalid(fmt::format("empty window: baseline [{}, {}), incident [{}, {})",
                                       A.from_s, A.to_s, B.from_s, B.to_s));
  }
  if (A.table != nullptr && A.table == B.table && A.from_s < B.to_s && B.from_s < A.to_s) {
    return Status::Invalid(fmt::format(
        "the baseline [{:.0f}, {:.0f}) s and incident [{:.0f}, {:.0f}) s windows overlap", A.from_s,
        A.to_s, B.from_s, B.to_s));
  }
  const bool has_spans = A.table != nullptr && B.table != nullptr;
  const bool has_metrics = in.baseline_snapshots.size() >= 2 && in.incident_snapshots.size() >= 2;
  if (!has_spans && !has_metrics) {
    return Status::Invalid("no data: each window needs spans or at least 2 metric snapshots");
  }
  DiagnosisReport rep;
  rep.sources = in.sources;
  rep.change_at_s = in.change_at_s;
  rep.annotations = in.annotations;
  const DiagnoseOptions& opt = in.options;

  std::vector<uint32_t> rows_a, rows_b;
  // Large windows are computed on two threads (one each), small ones in turn.
  const bool par =
      has_spans && opt.parallel &&
      A.table->size() + (B.table == A.table ? 0 : B.table->size()) >= diag::kParallelRows;
  // One arena per thread serves every pass of its window (in turn, one serves both).
  diag::GatherArena arena, arena_b;
  diag::GatherArena& ab = par ? arena_b : arena;
  if (has_spans) {
    diag::RunBoth(
        par,
        [&] {
          rows_a = RowsIn(A);
          rep.baseline = diag::ComputeWindowStats(*A.table, rows_a, A.from_s, A.to_s, arena);
        },
        [&] {
          rows_b = RowsIn(B);
          rep.incident = diag::ComputeWindowStats(*B.table, rows_b, B.from_s, B.to_s, ab);
        });
    if (has_metrics) {
      auto ma = WindowStatsFromMetrics(in.baseline_snapshots, A.from_s, A.to_s);
      auto mb = WindowStatsFromMetrics(in.incident_snapshots, B.from_s, B.to_s);
      if (ma.ok()) rep.baseline.kv_usage = ma->kv_usage;
      if (mb.ok()) rep.incident.kv_usage = mb->kv_usage;
    }
  } else {
    TTFT_ASSIGN_OR_RETURN(rep.baseline,
                          WindowStatsFromMetrics(in.baseline_snapshots, A.from_s, A.to_s));
    TTFT_ASSIGN_OR_RETURN(rep.incident,
                          WindowStatsFromMetrics(in.incident_snapshots, B.from_s, B.to_s));
    rep.fidelity_notes.push_back(
        "metrics only: quantiles come from histogram buckets (PromQL histogram_quantile); no "
        "per-request decomposition of the tail, no splits by tenant or template, no "
        "per-token prefill time, no output lengths; the bootstrap CI and Mann-Whitney test "
        "need per-request values and were not run");
  }
  if (!has_metrics && has_spans) {
    rep.fidelity_notes.push_back(
        "spans only: KV-cache usage (vllm:kv_cache_usage_perc) was not available; KV pressure "
        "is judged from per-request preemptions");
  }

  // Mismatched inputs: different models.
  if (has_spans && A.table != B.table) {
    auto models_of = [](const SpanTable& t, const std::vector<uint32_t>& rows) {
      std::set<std::string> m;
      std::vector<char> seen(t.num_label_sets(), 0);
      for (uint32_t r : rows) seen[t.label_set()[r]] = 1;
      for (size_t s = 0; s < seen.size(); ++s) {
        if (seen[s]) m.emplace(t.label_of_set(static_cast<uint32_t>(s), SpanLabel::kModel));
      }
      return m;
    };
    const auto ma = models_of(*A.table, rows_a), mb = models_of(*B.table, rows_b);
    if (!ma.empty() && !mb.empty() && ma != mb) {
      return Status::Invalid(
          fmt::format("the baseline and incident serve different models ({} vs {}): not comparable",
                      fmt::join(ma, ","), fmt::join(mb, ",")));
    }
  }

  // Significance and the verdict.
  std::vector<double> sa, sb;
  if (has_spans) {
    diag::RunBoth(
        par, [&] { sa = TtftSample(*A.table, rows_a, opt.max_test_samples); },
        [&] { sb = TtftSample(*B.table, rows_b, opt.max_test_samples); });
    rep.test_samples_baseline = static_cast<int64_t>(sa.size());
    rep.test_samples_incident = static_cast<int64_t>(sb.size());
  }
  const bool enough =
      rep.baseline.ok >= opt.min_ok_requests && rep.incident.ok >= opt.min_ok_requests;
  rep.p50_ratio = Ratio(rep.baseline.ttft_s.p50, rep.incident.ttft_s.p50);
  if (has_spans && enough) {
    BootstrapOptions bo;
    bo.resamples = opt.bootstrap_resamples;
    rep.p99_ratio = BootstrapQuantileRatioCI(sb, sa, 0.99, bo);
    const MannWhitneyResult mw = MannWhitney(sb, sa);
    rep.mann_whitney_p = mw.p_value;
    rep.hodges_lehmann_shift_s = mw.shift;
    rep.tail_test_p = TailTestP(sa, sb);
  } else {
    rep.p99_ratio.estimate = Ratio(rep.baseline.ttft_s.p99, rep.incident.ttft_s.p99);
  }
  if (!enough) {
    rep.verdict = Verdict::kInsufficientData;
    rep.verdict_reason = fmt::format(
        "insufficient data: {} ok requests in the baseline and {} in the incident; a p99 needs "
        "at least {} in each",
        rep.baseline.ok, rep.incident.ok, opt.min_ok_requests);
  } else if (has_spans) {
    const bool material = rep.p99_ratio.lower > opt.min_p99_ratio_lower;
    const bool mw_sig = rep.mann_whitney_p < opt.alpha_per_test && rep.hodges_lehmann_shift_s > 0;
    const bool tail_sig = rep.tail_test_p < opt.alpha_per_test;
    rep.verdict = material && (mw_sig || tail_sig) ? Verdict::kRegression : Verdict::kNoRegression;
    rep.verdict_reason = fmt::format(
        "p99 TTFT {} -> {} ({}, 95% bootstrap CI [{:.2f}, {:.2f}]; material if the lower bound "
        "> {:.2f}); Mann-Whitney p = {:.2g}, tail test p = {:.2g} (significant below {:.3g})",
        Secs(rep.baseline.ttft_s.p99), Secs(rep.incident.ttft_s.p99), X(rep.p99_ratio.estimate),
        rep.p99_ratio.lower, rep.p99_ratio.upper, opt.min_p99_ratio_lower, rep.mann_whitney_p,
        rep.tail_test_p, opt.alpha_per_test);
    if (rep.verdict == Verdict::kNoRegression && rep.p99_ratio.upper < 1) {
      rep.verdict_reason += "; the tail improved";
    }
  } else {
    // Metrics only: no resampling; a material ratio of bucket quantiles and enough counts.
    const double r = rep.p99_ratio.estimate;
    rep.verdict = std::isfinite(r) && r > opt.min_p99_ratio_lower * 1.25 ? Verdict::kRegression
                                                                         : Verdict::kNoRegression;
    rep.verdict_reason = fmt::format(
        "p99 TTFT from histogram buckets {} -> {} ({}); without per-request values the verdict "
        "needs a ratio above {:.2f}",
        Secs(rep.baseline.ttft_s.p99), Secs(rep.incident.ttft_s.p99), X(r),
        opt.min_p99_ratio_lower * 1.25);
  }

  // Decomposition.
  TailMeans ta, tb;
  if (has_spans) {
    ta = TailOf(*A.table, rows_a, rep.baseline.ttft_s.p99);
    tb = TailOf(*B.table, rows_b, rep.incident.ttft_s.p99);
  }
  rep.decomposition = Decompose(rep.baseline, rep.incident, ta, tb);

  // Where it lives.
  std::map<std::string, GroupIndex> kept;  // replica and tenant groups, for the charts
  if (has_spans) {
    const double thr = rep.baseline.ttft_s.p99;
    int64_t ok_a = 0;
    const int64_t above_a_all = CountAbove(*A.table, rows_a, thr, &ok_a);
    const double frac_all = ok_a > 0 ? static_cast<double>(above_a_all) / ok_a : 0.01;
    for (SpanLabel label : kDimensions) {
      GroupIndex g = SplitRows(A.table, rows_a, B.table, rows_b, label);
      // Every group's stats in one pass per window (not one strided gather per group).
      std::vector<diag::GroupStats> stats_a, stats_b;
      if (g.names.size() > 1) {
        diag::RunBoth(
            par,
            [&] {
              stats_a = diag::ComputeGroupStats(*A.table, rows_a, g.group_of_set_a, g.names.size(),
                                                A.from_s, A.to_s, thr, arena);
            },
            [&] {
              stats_b = diag::ComputeGroupStats(*B.table, rows_b, g.group_of_set_b, g.names.size(),
                                                B.from_s, B.to_s, thr, ab);
            });
      }
      GroupSplit split;
      split.dimension = std::string(ToString(label));
      double pos_excess = 0;
      for (size_t i = 0; i < g.names.size(); ++i) {
        if (g.count_a[i] == 0 && g.count_b[i] == 0) continue;
        GroupRow row;
        row.value = g.names[i];
        if (label == SpanLabel::kReplica) {
          // The region of the group's first row (in the incident if it has any).
          row.parent = std::string(
              g.count_b[i] > 0 ? B.table->label_of_set(g.first_set_b[i], SpanLabel::kRegion)
                               : A.table->label_of_set(g.first_set_a[i], SpanLabel::kRegion));
        }
        int64_t above_b = 0, above_a = 0;
        if (g.names.size() == 1) {  // the group is the whole window
          row.before = rep.baseline;
          row.after = rep.incident;
          int64_t ok_unused = 0;
          above_b = CountAbove(*A.table, rows_a, thr, &ok_unused);
          above_a = CountAbove(*B.table, rows_b, thr, &ok_unused);
        } else {
          row.before = std::move(stats_a[i].stats);
          row.after = std::move(stats_b[i].stats);
          above_b = stats_a[i].above;
          above_a = stats_b[i].above;
        }
        row.share_before = rep.baseline.requests > 0
                               ? static_cast<double>(row.before.requests) / rep.baseline.requests
                               : 0;
        row.share_after = rep.incident.requests > 0
                              ? static_cast<double>(row.after.requests) / rep.incident.requests
                              : 0;
        const int64_t okb = row.before.ok, oka = row.after.ok;
        const double frac = okb >= 20 ? static_cast<double>(above_b) / okb : frac_all;
        row.tail_excess = static_cast<double>(above_a) - static_cast<double>(oka) * frac;
        pos_excess += std::max(0.0, row.tail_excess);
        split.rows.push_back(std::move(row));
      }
      for (GroupRow& r : split.rows) {
        r.contribution = pos_excess > 0 ? std::max(0.0, r.tail_excess) / pos_excess : 0;
      }
      std::stable_sort(
          split.rows.begin(), split.rows.end(),
          [](const GroupRow& x, const GroupRow& y) { return x.contribution > y.contribution; });
      // Label values that appear or disappear between the windows.
      if (label == SpanLabel::kTemplate || label == SpanLabel::kDeploy ||
          label == SpanLabel::kTenant || label == SpanLabel::kModel) {
        for (const GroupRow& r : split.rows) {
          if (r.before.requests == 0 && r.share_after >= 0.01) {
            rep.label_changes.push_back(
                {split.dimension, r.value, LabelChange::Kind::kNew, r.share_after});
          } else if (r.after.requests == 0 && r.share_before >= 0.01) {
            rep.label_changes.push_back(
                {split.dimension, r.value, LabelChange::Kind::kGone, r.share_before});
          }
        }
      }
      if (label == SpanLabel::kReplica || label == SpanLabel::kTenant) {
        kept[split.dimension] = std::move(g);
      }
      rep.groups.push_back(std::move(split));
    }
    // Contribution sentences: the groups (with at least two values) that explain most.
    for (const GroupSplit& s : rep.groups) {
      if (s.rows.size() < 2 || s.rows.front().contribution < 0.3) continue;
      const GroupRow& r = s.rows.front();
      rep.contributions.push_back({s.dimension, r.value, r.before.prefix_cache_hit_rate,
                                   r.after.prefix_cache_hit_rate, r.before.ttft_s.p99,
                                   r.after.ttft_s.p99, r.share_after, r.contribution});
    }
  } else {
    rep.fidelity_notes.push_back(
        "no spans: splits by tenant, replica, region and template skipped");
  }

  // Hypotheses. Too few requests for a p99: no cause is assessable, so none is ranked
  // (nor a group credited with the increase); the report says why instead.
  Evidence ev{rep.baseline,      rep.incident, rep.decomposition, rep.groups,
              rep.label_changes, has_spans,    has_metrics};
  rep.hypotheses_assessed = enough;
  if (!enough) {
    rep.contributions.clear();
    rep.fidelity_notes.push_back(fmt::format(
        "hypotheses not assessed: {} and {} ok requests are too few for a p99 (need {} in each "
        "window); widen the windows or lower --min-requests knowingly",
        rep.baseline.ok, rep.incident.ok, opt.min_ok_requests));
  }
  std::vector<std::unique_ptr<HypothesisRule>> rules;
  if (enough) rules = DefaultRules();
  for (const auto& rule : rules) {
    Hypothesis h = rule->Evaluate(ev);
    h.id = std::string(rule->id());
    h.confidence = std::clamp(h.confidence, 0.0, 1.0);
    if (!h.runnable) {
      h.confidence = 0;
      rep.fidelity_notes.push_back(fmt::format("{}: not checked ({})", h.id, h.not_run_reason));
    }
    rep.hypotheses.push_back(std::move(h));
  }
  std::stable_sort(
      rep.hypotheses.begin(), rep.hypotheses.end(),
      [](const Hypothesis& x, const Hypothesis& y) { return x.confidence > y.confidence; });

  // Magnitude.
  if (has_spans) {
    rep.magnitude = EstimateMagnitude(in, rows_a, rows_b, rep.fidelity_notes);
  } else {
    rep.fidelity_notes.push_back(
        "no spans: the cost-model magnitude check needs prompt and cached "
        "tokens per request");
  }

  // Charts: a timeline, per-group small multiples, CDFs.
  if (has_spans) {
    const int nb = std::max(2, opt.time_buckets / 2);
    auto tl_a = Series(*A.table, rows_a, A.from_s, A.to_s, nb);
    auto tl_b = Series(*B.table, rows_b, B.from_s, B.to_s, nb);
    rep.timeline = tl_a;
    rep.timeline.insert(rep.timeline.end(), tl_b.begin(), tl_b.end());
    for (const TimePoint& p : tl_b) {
      if (p.requests >= 20 && p.ttft_p99_s > 1.5 * rep.baseline.ttft_s.p99) {
        rep.onset_s = p.t_s;
        break;
      }
    }
    for (const GroupSplit& s : rep.groups) {
      auto it = kept.find(s.dimension);
      if (it == kept.end() || s.rows.size() < 2) continue;
      const GroupIndex& g = it->second;
      std::vector<size_t> shown;  // the first 12 rows' groups
      for (const GroupRow& r : s.rows) {
        if (shown.size() >= 12) break;
        shown.push_back(static_cast<size_t>(std::find(g.names.begin(), g.names.end(), r.value) -
                                            g.names.begin()));
      }
      std::vector<std::vector<TimePoint>> pa, pb;
      diag::RunBoth(
          par,
          [&] { pa = SeriesOf(*A.table, rows_a, A.from_s, A.to_s, nb, g.group_of_set_a, shown); },
          [&] { pb = SeriesOf(*B.table, rows_b, B.from_s, B.to_s, nb, g.group_of_set_b, shown); });
      for (size_t k = 0; k < shown.size(); ++k) {
        GroupSeries gs;
        gs.dimension = s.dimension;
        gs.value = s.rows[k].value;
        gs.points = std::move(pa[k]);
        gs.points.insert(gs.points.end(), pb[k].begin(), pb[k].end());
        rep.group_series.push_back(std::move(gs));
      }
    }
    rep.cdf_before = Cdf(sa);
    rep.cdf_after = Cdf(sb);
  }

  // Changes near the onset (or the change time), closest first.
  const double pivot = std::isfinite(rep.onset_s)      ? rep.onset_s
                       : std::isfinite(in.change_at_s) ? in.change_at_s
                                                       : B.from_s;
  const double slack = std::max(60.0, 0.1 * (B.to_s - B.from_s));
  for (const Annotation& a : in.annotations) {
    if (a.at_s >= B.from_s - slack && a.at_s <= pivot + slack) rep.suspect_changes.push_back(a);
  }
  std::stable_sort(rep.suspect_changes.begin(), rep.suspect_changes.end(),
                   [&](const Annotation& x, const Annotation& y) {
                     return std::fabs(x.at_s - pivot) < std::fabs(y.at_s - pivot);
                   });

  // Actions: mitigate first, then fix, prevent.
  const Hypothesis* top = rep.hypotheses.empty() ? nullptr : &rep.hypotheses.front();
  if (rep.verdict == Verdict::kRegression) {
    // A change that another of the same kind already covers (the drain of "a,b" and
    // then of "a" and "b" one by one) is one action.
    auto covered = [&](const Annotation& a) {
      for (const Annotation& b : rep.suspect_changes) {
        if (&a == &b || a.kind != b.kind || a.target == b.target) continue;
        if (("," + b.target + ",").find("," + a.target + ",") != std::string::npos) return true;
      }
      return false;
    };
    for (const Annotation& a : rep.suspect_changes) {
      if (covered(a)) continue;
      rep.actions.push_back(
          {"mitigate",
           fmt::format("{} {} {} (t={:.0f} s{}){} now, before any analysis; confirm p99 "
                       "TTFT returns toward {}",
                       UndoVerb(a.kind), a.kind, a.target, a.at_s,
                       a.detail.empty() ? "" : ", " + a.detail,
                       UndoVerb(a.kind) == "Roll back" ? " or flip its flag" : "",
                       Secs(rep.baseline.ttft_s.p99)),
           Owner(a.kind), ActionSubject::kChange, a.kind, a.target});
    }
    // No change to undo and a tenant behind it: shed that tenant's load first. A
    // template that is new only because its tenant is new is not a rollback.
    const GroupSplit* shed = nullptr;
    if (rep.suspect_changes.empty() && top != nullptr && !top->shed_load_of.empty()) {
      for (const GroupSplit& g : rep.groups) {
        if (g.dimension == top->shed_load_of && !g.rows.empty()) shed = &g;
      }
    }
    if (shed != nullptr) {
      const GroupRow& grown = shed->rows.front();
      rep.actions.push_back(
          {"mitigate",
           fmt::format("No deploy to roll back: rate-limit {} {} (or move it to its own "
                       "pool) now; it holds {} of the p99 increase at {} of the requests",
                       shed->dimension, grown.value, Pct(grown.contribution),
                       Pct(grown.share_after)),
           "serving team", ActionSubject::kGroup, shed->dimension, grown.value});
    } else if (rep.suspect_changes.empty()) {
      for (const LabelChange& c : rep.label_changes) {
        if (c.dimension == "template" || c.dimension == "deploy") {
          rep.actions.push_back(
              {"mitigate",
               fmt::format("Roll back the change behind \"{}\" (or flip its flag) now, before any "
                           "analysis",
                           ToString(c)),
               c.dimension == "template" ? "app team" : "serving team", ActionSubject::kLabelChange,
               c.dimension, c.value});
        }
      }
    }
    if (top != nullptr) {
      rep.actions.push_back({"investigate",
                             fmt::format("Confirm {} with its splitting metric: {}. Next: {}",
                                         top->id, top->splitting_metric, top->next_check),
                             "", ActionSubject::kHypothesis, top->id});
      rep.actions.push_back({"fix", top->fix, top->owners, ActionSubject::kHypothesis, top->id});
      rep.actions.push_back(
          {"prevent", top->prevention, top->owners, ActionSubject::kHypothesis, top->id});
    }
    rep.actions.push_back(
        {"prevent",
         "Gate canaries on p99 TTFT and prefix-cache hit rate, not only on error rate; put the "
         "hit-rate metric on the dashboard the app and serving teams both watch",
         "serving team + app team"});
  }
  return rep;
}

}  // namespace ttft
