// Hypothesis `region_capacity` (ttft/diagnose.h; the seed's reasoning in docs/diagnosis.md).
//
// Seed follow-up 2: "Region-local cause: a smaller pool after a node drain, a
// different GPU SKU, or a regional cache warm-up after restart. Compare replica
// counts and the per-replica hit rate in that region against the others." The
// region holding most of the tail increase, spread over its replicas (not one
// replica), or with fewer replicas than before.
#include "diagnose/rule_helpers.h"

namespace ttft::diag {
namespace {

class RegionCapacityRule final : public HypothesisRule {
 public:
  std::string_view id() const override { return "region_capacity"; }
  Hypothesis Evaluate(const Evidence& ev) const override {
    Hypothesis h;
    h.title =
        "One region only (smaller pool after a drain, different GPU SKU, regional cache warm-up)";
    h.splitting_metric =
        "replica count and p99 TTFT per region, and per-replica hit rate in the affected region "
        "against the others";
    h.next_check =
        "List the replicas of the region before and after (drains, restarts, SKU), and their hit "
        "rate since the change";
    h.fix =
        "Restore the capacity of the region (undrain or add replicas) or shift its traffic to "
        "other regions until it is back";
    h.prevention =
        "Capacity alerts per region on utilisation and p99 TTFT; drains gated on the headroom of "
        "the remaining pool; warm-up before full traffic after regional restarts";
    h.owners = "serving team (capacity and routing)";
    const GroupSplit* reg = ev.Split("region");
    if (reg == nullptr || reg->rows.size() < 2) {
      h.evidence.push_back(Remark("one region only: nothing to compare"));
      if (!ev.has_spans) {
        h.runnable = false;
        h.not_run_reason = "needs per-region data (spans, or metrics with a region label)";
      }
      return h;
    }
    const GroupRow& top = reg->rows.front();
    // Breadth: the share of the region's replicas whose p99 rose by half or more.
    int in_region = 0, slow = 0;
    if (const GroupSplit* rep = ev.Split("replica")) {
      for (const GroupRow& r : rep->rows) {
        if (r.parent != top.value || r.after.ok < 20 || r.before.ok < 20) continue;
        ++in_region;
        if (Ratio(r.before.ttft_s.p99, r.after.ttft_s.p99) >= 1.5) ++slow;
      }
    }
    const double breadth = in_region > 0 ? static_cast<double>(slow) / in_region : 0;
    const double lost = top.after.replicas < top.before.replicas ? 1.0 : 0.0;
    std::vector<double> others;
    for (const GroupRow& r : reg->rows) {
      if (&r != &top && r.before.ok >= 20 && r.after.ok >= 20) {
        others.push_back(Ratio(r.before.ttft_s.p99, r.after.ttft_s.p99));
      }
    }
    const double divergence =
        others.empty()
            ? kMissing
            : Ratio(Quantile(others, 0.5), Ratio(top.before.ttft_s.p99, top.after.ttft_s.p99));
    // A region-local cause: fewer replicas (a drain), a slower compute path (a
    // different SKU), or a cache warm-up (cached tokens per request down) at an
    // unchanged request rate. A region that only got more traffic is a mix shift.
    const double sku = Ramp(
        Ratio(top.before.prefill_s_per_1k_uncached, top.after.prefill_s_per_1k_uncached), 1.2, 1.6);
    const double warm =
        Ramp(1 - Ratio(top.before.cached_tokens_mean, top.after.cached_tokens_mean), 0.3, 0.6) *
        Flat(Ratio(top.before.request_rate_rps, top.after.request_rate_rps), 1.1);
    // ... with the same requests: heavier requests in the region are a mix or a prompt
    // change, not capacity.
    const double same_work =
        Flat(Ratio(top.before.output_tokens_mean, top.after.output_tokens_mean), 1.2) *
        Flat(Ratio(top.before.uncached_tokens_mean, top.after.uncached_tokens_mean), 1.2);
    // Lost replicas are this cause's own evidence: heavier requests weaken it (another
    // cause may add to the region's load) but never cancel it. A slower or colder
    // region with heavier requests is read as the heavier requests.
    h.confidence = Ramp(top.contribution, 0.5, 0.85) * Ramp(divergence, 1.3, 2.5) *
                   std::max(lost * AtMostHalves(same_work),
                            std::max(sku, warm) * Ramp(breadth, 0.4, 0.8) * same_work);
    h.evidence.push_back(Line(
        "ttft_p99_s", top.before.ttft_s.p99, top.after.ttft_s.p99, "s",
        fmt::format(
            "region {}: p99 TTFT {} -> {} ({} the other regions' change), {} of the p99 increase",
            LabelValueText(top.value), QuantileText(top.before.ttft_s, 2),
            QuantileText(top.after.ttft_s, 2), X(divergence), Pct(top.contribution))));
    h.evidence.push_back(Line("replicas", static_cast<double>(top.before.replicas),
                              static_cast<double>(top.after.replicas), "count",
                              fmt::format("region {}: replicas {} -> {}; {} of {} replicas slower",
                                          LabelValueText(top.value), top.before.replicas,
                                          top.after.replicas, slow, in_region)));
    h.evidence.push_back(Line("prefix_cache_hit_rate", top.before.prefix_cache_hit_rate,
                              top.after.prefix_cache_hit_rate, "fraction",
                              fmt::format("region {}: hit rate {} -> {}", LabelValueText(top.value),
                                          Pct1(top.before.prefix_cache_hit_rate),
                                          Pct1(top.after.prefix_cache_hit_rate))));
    // The splitting metric: replica counts by region, and per-replica hit rate in each
    // region (a drained replica shows as gone).
    std::string counts;
    for (const GroupRow& r : reg->rows) {
      counts += fmt::format("{}{} {} -> {}", counts.empty() ? "" : "; ", LabelValueText(r.value),
                            r.before.replicas, r.after.replicas);
    }
    h.evidence.push_back(Remark("replicas by region (before -> after): " + counts));
    if (const GroupSplit* rep = ev.Split("replica")) {
      for (const GroupRow& g : reg->rows) {
        std::string per;
        for (const GroupRow& r : rep->rows) {
          if (r.parent != g.value) continue;
          per += fmt::format("{}{} ", per.empty() ? "" : "; ", LabelValueText(r.value));
          per += r.after.requests == 0
                     ? fmt::format("{} -> gone", Pct1(r.before.prefix_cache_hit_rate))
                     : fmt::format("{} -> {}", Pct1(r.before.prefix_cache_hit_rate),
                                   Pct1(r.after.prefix_cache_hit_rate));
        }
        if (!per.empty()) {
          h.evidence.push_back(
              Remark(fmt::format("per-replica hit rate in {}: {}", LabelValueText(g.value), per)));
        }
      }
    }
    return h;
  }
};

}  // namespace

std::unique_ptr<HypothesisRule> MakeRegionCapacityRule() {
  return std::make_unique<RegionCapacityRule>();
}

}  // namespace ttft::diag
