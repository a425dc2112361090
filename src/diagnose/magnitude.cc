// Why the magnitude fits: the cost model applied to the observed requests and a
// queueing estimate of the wait (ttft/diagnose.h, docs/diagnosis.md).
//
// Per replica r in a window of length L: lambda_r = requests_r / L; the service
// demand of a request is its prefill compute, CostModel::PrefillTime(uncached,
// cached), plus its share of the decode steps it rides in, output_tokens *
// (DecodeStepTime(B_r + 1, context) - DecodeStepTime(B_r, context)), the marginal
// cost of one more sequence in the replica's decode batch of B_r sequences (its mean
// number in flight, by Little's law). rho_r = lambda_r * E[S_r].
//
// The wait of the busiest replica is estimated two ways:
//   * Kingman (1961), "The single server queue in heavy traffic", the G/G/1
//     approximation W ~ rho / (1 - rho) * (ca^2 + cs^2) / 2 * E[S], with ca the
//     coefficient of variation of the replica's inter-arrival gaps and cs that of S;
//   * Pollaczek-Khinchine (M/G/1): W = lambda E[S^2] / (2 (1 - rho)).
// Both are infinite at rho >= 1 (the queue grows through the window). A continuous-
// batching engine is not a single FIFO server, so these are magnitudes, not
// predictions: the check is whether the observed change is of the size the
// compute per request implies.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "diagnose/parallel.h"
#include "diagnose/stages.h"
#include "ttft/diagnose.h"
#include "ttft/format.h"
#include "ttft/model.h"

namespace ttft::diag {

using numfmt::Ratio;
using numfmt::Secs;
using numfmt::X;

namespace {

struct ReplicaLoad {
  std::string name;
  double rho = 0;
  double mean_s = 0;
  double kingman_s = kMissing;
  double pk_s = kMissing;
  double queue_mean_s = kMissing;
  double lambda = 0;
};

// Per-replica load of a window. `cm` prices requests. Sets *compute_mean_s to the mean
// prefill compute per request and *e2e_mean_s to the ok requests' mean E2E (NaN if none).
std::vector<ReplicaLoad> Loads(const SpanTable& t, const std::vector<uint32_t>& rows, double len_s,
                               const CostModel& cm, double* compute_mean_s, double* e2e_mean_s) {
  // Rows by replica, through the label sets (a string lookup per row was 10% of a
  // 10-million-span diagnosis); replicas in name order, as before.
  std::map<std::string_view, uint32_t> ids;
  for (size_t s = 0; s < t.num_label_sets(); ++s) {
    ids.emplace(t.label_of_set(static_cast<uint32_t>(s), SpanLabel::kReplica), 0);
  }
  std::vector<std::string_view> names;
  for (auto& [name, id] : ids) {
    id = static_cast<uint32_t>(names.size());
    names.push_back(name);
  }
  std::vector<uint32_t> replica_of_set(t.num_label_sets());
  for (size_t s = 0; s < replica_of_set.size(); ++s) {
    replica_of_set[s] = ids[t.label_of_set(static_cast<uint32_t>(s), SpanLabel::kReplica)];
  }
  // One pass in row order: each replica's rows, arrival times and ok-request sums (the
  // same values in the same order as a pass over each replica's rows).
  // Replica i's rows and arrivals are [begin, end) of two flat arrays (a counting
  // sort: one allocation for all replicas, not two growing vectors each).
  struct PerReplica {
    size_t begin = 0, end = 0;
    double e2e_sum = 0, q_sum = 0;
    int64_t e2e_n = 0, q_n = 0;
  };
  std::vector<PerReplica> by(names.size());
  const auto sets = t.label_set();
  {
    std::vector<size_t> n(names.size(), 0);
    for (uint32_t r : rows) ++n[replica_of_set[sets[r]]];
    size_t at = 0;
    for (size_t i = 0; i < by.size(); ++i) {
      by[i].begin = by[i].end = at;
      at += n[i];
    }
  }
  LargeVector<uint32_t> flat_rows(rows.size());
  LargeVector<double> flat_arrivals(rows.size());
  const auto status = t.status();
  const auto e2e = t.e2e_s();
  const auto queue = t.queue_s();
  const auto arrival = t.arrival_s();
  for (uint32_t r : rows) {
    PerReplica& p = by[replica_of_set[sets[r]]];
    flat_rows[p.end] = r;
    flat_arrivals[p.end] = arrival[r];
    ++p.end;
    if (status[r] != RequestStatus::kOk) continue;
    if (!std::isnan(e2e[r])) {
      p.e2e_sum += e2e[r];
      ++p.e2e_n;
    }
    if (!std::isnan(queue[r])) {
      p.q_sum += queue[r];
      ++p.q_n;
    }
  }
  std::vector<ReplicaLoad> out;
  double total_compute = 0;
  int64_t total_n = 0;
  for (size_t id = 0; id < by.size(); ++id) {
    const std::span<const uint32_t> rs(flat_rows.data() + by[id].begin, by[id].end - by[id].begin);
    if (rs.empty()) continue;
    const std::string_view name = names[id];
    ReplicaLoad l;
    l.name = std::string(name);
    l.lambda = static_cast<double>(rs.size()) / len_s;
    const double e2e_sum = by[id].e2e_sum, q_sum = by[id].q_sum;
    const int64_t q_n = by[id].q_n;
    const double batch = std::max(1.0, e2e_sum / len_s);
    l.queue_mean_s = q_n > 0 ? q_sum / static_cast<double>(q_n) : kMissing;
    // Price a systematic sample of at most 2 x 4,096 requests per replica (every one
    // below 8,192): the cost model per request was a fifth of a 10-million-span
    // diagnosis, and a mean over thousands of requests is precise enough.
    const size_t step = std::max<size_t>(1, rs.size() / 4096);
    double s1 = 0, s2 = 0, p1 = 0;
    int64_t n = 0;
    for (size_t i = 0; i < rs.size(); i += step) {
      const uint32_t r = rs[i];
      const int64_t prompt = t.prompt_tokens()[r];
      if (t.status()[r] != RequestStatus::kOk || prompt < 0) continue;
      const int64_t cached = std::clamp<int64_t>(t.cached_tokens()[r], 0, prompt);
      const double prefill = cm.PrefillTime(std::max<int64_t>(1, prompt - cached), cached);
      double s = prefill;
      const int64_t out_tokens = t.output_tokens()[r];
      if (out_tokens > 1) {
        const int64_t ctx = prompt + out_tokens / 2;
        // Capped at 2^20 sequences (ttft cost's --batch range), far above any engine's
        // max_num_seqs: a larger Little's-law batch comes from a window much shorter
        // than its requests, and the marginal cost is flat in B there; DecodeStepTime
        // needs b * (ctx + 1) < 2^63 (ctx < 2^32 from the int32 columns).
        const int64_t b = SaturatingCount(std::min(batch, double{1 << 20}));
        // The marginal cost of one more sequence in a decode step: decode steps are
        // shared, so a request occupies the engine only for what it adds to them.
        s += static_cast<double>(out_tokens - 1) *
             std::max(0.0, cm.DecodeStepTime(b + 1, ctx) - cm.DecodeStepTime(b, ctx));
      }
      s1 += s;
      s2 += s * s;
      p1 += prefill;
      ++n;
    }
    if (n == 0) continue;
    const double dn = static_cast<double>(n);
    l.mean_s = s1 / dn;
    const double es2 = s2 / dn;
    const double cs2 = std::max(0.0, es2 / (l.mean_s * l.mean_s) - 1);
    total_compute += p1 / dn * static_cast<double>(rs.size());
    total_n += static_cast<int64_t>(rs.size());
    l.rho = l.lambda * l.mean_s;
    // Inter-arrival variability of this replica.
    const std::span<double> arr(flat_arrivals.data() + by[id].begin, by[id].end - by[id].begin);
    if (!std::is_sorted(arr.begin(), arr.end())) std::sort(arr.begin(), arr.end());
    double g1 = 0, g2 = 0;
    for (size_t i = 1; i < arr.size(); ++i) {
      const double g = arr[i] - arr[i - 1];
      g1 += g;
      g2 += g * g;
    }
    const double ng = static_cast<double>(arr.size() > 1 ? arr.size() - 1 : 1);
    const double gm = g1 / ng;
    const double ca2 = gm > 0 ? std::max(0.0, (g2 / ng) / (gm * gm) - 1) : 1;
    if (l.rho < 1) {
      l.kingman_s = l.rho / (1 - l.rho) * (ca2 + cs2) / 2 * l.mean_s;
      l.pk_s = l.lambda * es2 / (2 * (1 - l.rho));
    } else {
      l.kingman_s = l.pk_s = std::numeric_limits<double>::infinity();
    }
    out.push_back(l);
  }
  *compute_mean_s = total_n > 0 ? total_compute / static_cast<double>(total_n) : kMissing;
  double e2e_sum = 0;
  int64_t e2e_n = 0;
  for (const PerReplica& p : by) e2e_sum += p.e2e_sum, e2e_n += p.e2e_n;
  *e2e_mean_s = e2e_n > 0 ? e2e_sum / static_cast<double>(e2e_n) : kMissing;
  return out;
}

std::string MostCommonModel(const SpanTable& t, const std::vector<uint32_t>& rows) {
  std::vector<int64_t> per_set(t.num_label_sets(), 0);
  for (uint32_t r : rows) ++per_set[t.label_set()[r]];
  std::map<std::string_view, int64_t> n;
  for (size_t s = 0; s < per_set.size(); ++s) {
    if (per_set[s] > 0)
      n[t.label_of_set(static_cast<uint32_t>(s), SpanLabel::kModel)] += per_set[s];
  }
  std::string best;
  int64_t bn = -1;
  for (const auto& [k, v] : n) {
    if (v > bn) {
      bn = v;
      best = std::string(k);
    }
  }
  return best;
}

std::string Wait(double w) {
  if (std::isinf(w)) return "unbounded (rho >= 1)";
  return Secs(w);
}

}  // namespace

Magnitude EstimateMagnitude(const DiagnosisInput& in, const std::vector<uint32_t>& rows_a,
                            const std::vector<uint32_t>& rows_b, std::vector<std::string>& notes) {
  Magnitude m;
  const DiagnoseOptions& o = in.options;
  // An explicit model is a preset (ValidateInput); the spans' label may not be.
  std::string model = o.model;
  std::string unknown_model;  // the spans' model label when no preset prices it
  if (model.empty()) {
    model = MostCommonModel(*in.incident.table, rows_b);
    if (!model.empty() && !FindModel(model).ok()) {
      unknown_model = model;
      notes.push_back(fmt::format(
          "the spans' model label \"{}\" is unknown (not a cost-model preset): the magnitude "
          "check priced the requests as the default llama-3.3-70b; give --model to choose",
          model));
      model.clear();
    }
  }
  if (model.empty()) model = "llama-3.3-70b";
  const std::string gpu = o.gpu.empty() ? "h100-sxm" : o.gpu;
  auto dtype = ParseDtype(o.dtype.empty() ? "fp8" : o.dtype);
  const int tp = o.tp > 0 ? o.tp : 2;
  if (!dtype.ok()) {
    notes.push_back("magnitude not estimated: " + dtype.status().message());
    return m;
  }
  auto hw = MakeHardwareConfig(model, gpu, *dtype, tp);
  if (!hw.ok()) {
    notes.push_back("magnitude not estimated: " + hw.status().message());
    return m;
  }
  const CostModel cm(*hw, o.cost);
  m.cost_model = fmt::format("{} {} tp{} {}", hw->model.name, ToString(hw->weight_dtype), hw->tp,
                             hw->gpu.name);
  if (!o.cost_source.empty()) m.cost_model += ", calibration " + o.cost_source;
  const std::string priced = m.cost_model;  // the sentence names the unknown model itself
  if (!unknown_model.empty()) {
    m.cost_model += fmt::format(", standing in for the unknown model \"{}\"", unknown_model);
  }
  const double la = in.baseline.to_s - in.baseline.from_s;
  const double lb = in.incident.to_s - in.incident.from_s;
  std::vector<ReplicaLoad> loads_a, loads_b;
  double e2e_a = kMissing, e2e_b = kMissing;
  RunBoth(
      o.parallel && rows_a.size() + rows_b.size() >= kParallelRows,
      [&] {
        loads_a = Loads(*in.baseline.table, rows_a, la, cm, &m.prefill_compute_before_s, &e2e_a);
      },
      [&] {
        loads_b = Loads(*in.incident.table, rows_b, lb, cm, &m.prefill_compute_after_s, &e2e_b);
      });
  if (loads_a.empty() || loads_b.empty()) return m;
  // Little's law (requests in flight = rate x time in system) and the utilisation need
  // a window longer than its requests: in a shorter one, more would be in flight than
  // the window holds, and rates measure the window's length, not the load.
  for (const auto& [name, len, e2e] :
       {std::tuple{"baseline", la, e2e_a}, {"incident", lb, e2e_b}}) {
    if (e2e > len) {
      notes.push_back(fmt::format(
          "magnitude not estimated: the {} window ({:.3g} s) is shorter than its requests' mean "
          "end-to-end time ({}), so rates and utilisation over it do not measure the load",
          name, len, Secs(e2e)));
      return m;
    }
  }
  auto busiest = [](const std::vector<ReplicaLoad>& v) {
    return *std::max_element(v.begin(), v.end(), [](const ReplicaLoad& x, const ReplicaLoad& y) {
      return x.rho < y.rho;
    });
  };
  const ReplicaLoad b = busiest(loads_b);
  // The same replica before (when it existed), else the busiest before.
  ReplicaLoad a = busiest(loads_a);
  for (const ReplicaLoad& l : loads_a) {
    if (l.name == b.name) a = l;
  }
  m.available = true;
  m.utilisation_before = a.rho;
  m.utilisation_after = b.rho;
  m.busiest_replica_before = a.name;
  m.busiest_replica_after = b.name;
  m.kingman_wait_before_s = a.kingman_s;
  m.kingman_wait_after_s = b.kingman_s;
  m.pk_wait_before_s = a.pk_s;
  m.pk_wait_after_s = b.pk_s;
  m.observed_queue_mean_before_s = a.queue_mean_s;
  m.observed_queue_mean_after_s = b.queue_mean_s;

  const double obs = Ratio(a.queue_mean_s, b.queue_mean_s);
  const double pred = std::isinf(b.kingman_s) ? std::numeric_limits<double>::infinity()
                                              : Ratio(a.kingman_s, b.kingman_s);
  const double compute_x = Ratio(m.prefill_compute_before_s, m.prefill_compute_after_s);
  if (!std::isfinite(obs) || obs < 1.5) {
    m.verdict = (std::isfinite(pred) && pred < 1.5) || !std::isfinite(obs) ? "explained"
                                                                           : "partly explained";
  } else if (b.rho >= 1 || (std::isfinite(pred) && pred >= 1.5 &&
                            std::fabs(std::log(pred / obs)) <= std::log(3.0))) {
    m.verdict = "explained";
  } else if (std::isfinite(pred) && pred < 1.25) {
    m.verdict = "not explained";
  } else {
    m.verdict = "partly explained";
  }
  std::string why;
  if (m.verdict == "not explained") {
    why =
        "the compute per request and the arrival rate do not account for the longer queue: look "
        "at the compute path's speed (prefill time per token), scheduling (long prefills "
        "blocking, chunked prefill) or KV-cache preemptions";
  } else if (b.rho >= 1) {
    why = fmt::format(
        "at rho {:.2f} the replica is past saturation, so the queue grows through the window and "
        "the tail is far worse than the {} change in compute per request alone",
        b.rho, X(compute_x));
  } else if (m.verdict == "explained" && (!std::isfinite(obs) || obs < 1.25) &&
             (!std::isfinite(pred) || pred < 1.25)) {
    why.clear();  // nothing moved: no change to explain (below)
  } else if (m.verdict == "explained") {
    why = "the observed change is of the size the compute per request and the load imply";
  } else {
    why =
        "the estimate and the observation differ by more than 3x: the compute per request is "
        "part of the story, not all of it";
  }
  m.sentence = fmt::format(
      "{}Prefill compute per request ({}): {} before, {} after ({}). Busiest replica {}: "
      "utilisation {} -> {}. Kingman's G/G/1 wait {} -> {} (Pollaczek-Khinchine M/G/1 "
      "{} -> {}); observed mean queue wait {} -> {} ({}). ",
      unknown_model.empty()
          ? ""
          : fmt::format("The spans' model \"{}\" is unknown (not a cost-model preset; give "
                        "--model): the figures below price its requests as {}, not as {}. ",
                        unknown_model, hw->model.name, unknown_model),
      priced, Secs(m.prefill_compute_before_s), Secs(m.prefill_compute_after_s), X(compute_x),
      b.name, numfmt::Fixed(a.rho, 2), numfmt::Fixed(b.rho, 2), Wait(a.kingman_s),
      Wait(b.kingman_s), Wait(a.pk_s), Wait(b.pk_s), Secs(a.queue_mean_s), Secs(b.queue_mean_s),
      X(obs));
  m.sentence += why.empty() ? fmt::format(
                                  "Neither the observed wait ({}) nor the estimate ({}) grew "
                                  "materially: there is no change here for the load to explain.",
                                  X(obs), X(pred))
                            : fmt::format("The change is {}: {}.", m.verdict, why);
  return m;
}

}  // namespace ttft::diag
