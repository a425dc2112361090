// Hypothesis `bad_replica` (ttft/diagnose.h; the seed's reasoning in docs/diagnosis.md).
//
// Seed: "One replica's TTFT diverging -> (5)". The replica that holds most of the
// tail increase, whose p99 ratio (after / before) is far above the median ratio of
// the other replicas. When that replica's region lost replicas it is the region's
// capacity (region_capacity), not the replica.
#include "diagnose/rule_helpers.h"

namespace ttft::diag {
namespace {

class BadReplicaRule final : public HypothesisRule {
 public:
  std::string_view id() const override { return "bad_replica"; }
  Hypothesis Evaluate(const Evidence& ev) const override {
    Hypothesis h;
    h.title = "One replica diverges (cold cache after restart, mis-sized, slow GPU)";
    h.splitting_metric =
        "p99 TTFT per replica (and its hit rate and prefill time per token) against the other "
        "replicas";
    h.next_check =
        "On the diverging replica: its restart time, GPU clocks and errors (nvidia-smi, DCGM), its "
        "engine config and its hit rate since the restart";
    h.fix =
        "Take the replica out of rotation (drain it) and replace or restart it; fix its config if "
        "mis-sized";
    h.prevention =
        "Per-replica outlier alerts on p99 TTFT and hit rate; warm caches (or prefix-aware routing "
        "ramp-up) after restarts before full traffic";
    h.owners = "serving team owns replicas and routing";
    const GroupSplit* rep = ev.Split("replica");
    if (rep == nullptr || rep->rows.size() < 2) {
      h.evidence.push_back(Remark("fewer than two replicas: nothing to compare"));
      if (!ev.has_spans) {
        h.runnable = false;
        h.not_run_reason = "needs per-replica TTFT (spans, or metrics with a replica label)";
      }
      return h;
    }
    const GroupRow& top = rep->rows.front();
    std::vector<double> others;
    std::vector<double> others_after;
    for (const GroupRow& r : rep->rows) {
      if (&r == &top || r.after.ok < 20) continue;
      others_after.push_back(r.after.ttft_s.p99);
      if (r.before.ok >= 20) others.push_back(Ratio(r.before.ttft_s.p99, r.after.ttft_s.p99));
    }
    double divergence = kMissing;
    if (top.before.ok >= 20 && top.after.ok >= 20 && !others.empty()) {
      divergence = Ratio(Quantile(others, 0.5), Ratio(top.before.ttft_s.p99, top.after.ttft_s.p99));
    } else if (top.after.ok >= 20 && !others_after.empty()) {
      divergence = Ratio(Quantile(others_after, 0.5), top.after.ttft_s.p99);
    }
    // Did the replica's region lose replicas?
    double region_loss = 0;
    if (const GroupSplit* reg = ev.Split("region")) {
      for (const GroupRow& r : reg->rows) {
        if (r.value == top.parent && r.after.replicas < r.before.replicas) region_loss = 1;
      }
    }
    // A replica's share of the slow requests is judged against its share of the
    // traffic (issue 13): under a surge a throttled replica that least-outstanding
    // routing starves of requests holds a modest share of the excess, many times its
    // share of the requests. `over` is that ratio.
    auto over = [](const GroupRow& r) {
      return r.share_after > 0 ? r.contribution / r.share_after : 0.0;
    };
    const double holds = std::max(Ramp(top.contribution, 0.35, 0.7),
                                  Ramp(over(top), 2, 4) * Ramp(top.contribution, 0.1, 0.25));
    // One replica, not a pool: the top replica must stand out from the next one, each
    // measured against its traffic.
    double second = 0;
    for (size_t i = 1; i < rep->rows.size(); ++i) second = std::max(second, over(rep->rows[i]));
    const double alone = over(top) + second > 0 ? over(top) / (over(top) + second) : 0;
    h.confidence = holds * Ramp(divergence, 1.4, 2.5) * Ramp(alone, 0.6, 0.8) * (1 - region_loss);
    h.evidence.push_back(
        Line("ttft_p99_s", top.before.ttft_s.p99, top.after.ttft_s.p99, "s",
             fmt::format(
                 "replica {}: p99 TTFT {} -> {}, {} of the requests and {} of the p99 increase, {} "
                 "the median replica's change",
                 LabelValueText(top.value), QuantileText(top.before.ttft_s, 2),
                 QuantileText(top.after.ttft_s, 2), Pct(top.share_after), Pct(top.contribution),
                 X(divergence))));
    h.evidence.push_back(
        Line("prefix_cache_hit_rate", top.before.prefix_cache_hit_rate,
             top.after.prefix_cache_hit_rate, "fraction",
             fmt::format("replica {}: hit rate {} -> {}, prefill per 1k uncached tokens {} -> {}",
                         LabelValueText(top.value), Pct1(top.before.prefix_cache_hit_rate),
                         Pct1(top.after.prefix_cache_hit_rate),
                         Secs(top.before.prefill_s_per_1k_uncached),
                         Secs(top.after.prefill_s_per_1k_uncached))));
    return h;
  }
};

}  // namespace

std::unique_ptr<HypothesisRule> MakeBadReplicaRule() { return std::make_unique<BadReplicaRule>(); }

}  // namespace ttft::diag
