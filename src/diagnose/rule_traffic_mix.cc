// Hypothesis `traffic_mix` (ttft/diagnose.h; the seed's reasoning in docs/diagnosis.md).
//
// Seed follow-up 1: "the same symptom with no deploy: look for traffic mix shift: a
// new tenant with very long prompts, or a client sending unique per-user preambles.
// Per-tenant prompt-length p99 and per-tenant cache hit rate split it." A tenant
// whose share of requests rose and whose uncached tokens per request are well above
// the fleet's baseline, so the fleet's work per request rose while each tenant's
// own requests stayed the same.
#include "diagnose/rule_helpers.h"

namespace ttft::diag {
namespace {

class TrafficMixRule final : public HypothesisRule {
 public:
  std::string_view id() const override { return "traffic_mix"; }
  Hypothesis Evaluate(const Evidence& ev) const override {
    Hypothesis h;
    h.title = "Traffic mix shift: a tenant appeared or grew with long prompts or unique preambles";
    h.splitting_metric =
        "per-tenant request share, prompt-length p99 and hit rate, before vs after";
    h.next_check =
        "Identify the client behind the growing tenant (API key, user agent) and whether its "
        "prompts carry per-user preambles ahead of shared content";
    h.fix =
        "Rate-limit or isolate the tenant (its own pool), and have it put shared content first so "
        "its prompts hit the cache";
    h.prevention =
        "Per-tenant dashboards of share, prompt-length p99 and hit rate; admission quotas per "
        "tenant; onboarding review for new high-volume clients";
    h.owners = "serving team (quotas, isolation) with the app owner of the tenant";
    // With no change to undo, shedding the top tenant's load is the mitigation.
    h.shed_load_of = "tenant";
    const GroupSplit* ten = ev.Split("tenant");
    const WindowStats& a = ev.before;
    const WindowStats& b = ev.after;
    if (ten == nullptr || ten->rows.size() < 2) {
      h.evidence.push_back(Remark("one tenant only: no mix to shift"));
      if (!ev.has_spans) {
        h.runnable = false;
        h.not_run_reason = "needs per-tenant data (spans)";
      }
      return h;
    }
    const GroupRow* who = nullptr;
    double best = 0;
    const double fleet_uncached = a.uncached_tokens_mean;
    for (const GroupRow& r : ten->rows) {
      const double grew = r.share_after - r.share_before;
      const double work = Ratio(fleet_uncached, r.after.uncached_tokens_mean);
      const double s = Ramp(grew, 0.02, 0.1) * Ramp(work, 1.3, 3.0);
      if (s > best) {
        best = s;
        who = &r;
      }
    }
    const double fleet_work = Ramp(Ratio(a.uncached_tokens_mean, b.uncached_tokens_mean), 1.1, 1.5);
    h.confidence = best * (0.5 + 0.5 * fleet_work) *
                   (who != nullptr ? 0.8 + 0.2 * Ramp(who->contribution, 0.2, 0.6) : 1);
    if (who != nullptr) {
      h.evidence.push_back(
          Line("share_of_requests", who->share_before, who->share_after, "fraction",
               fmt::format("tenant {}: share of requests {} -> {}; uncached tokens per request {} "
                           "(fleet baseline "
                           "{}); prompt p99 {}; hit rate {}; {} of the p99 increase",
                           LabelValueText(who->value), Pct(who->share_before),
                           Pct(who->share_after), Num(who->after.uncached_tokens_mean),
                           Num(fleet_uncached), Num(who->after.prompt_tokens.p99),
                           Pct1(who->after.prefix_cache_hit_rate), Pct(who->contribution))));
    }
    // The splitting metric itself: per-tenant prompt p99 and hit rate, before -> after,
    // for the tenants holding most of the tail increase.
    std::string per_tenant;
    int listed = 0;
    for (const GroupRow& r : ten->rows) {
      if (listed == 4) break;
      per_tenant +=
          fmt::format("{}{} {} -> {}, {} -> {}", listed == 0 ? "" : "; ", r.value,
                      Num(r.before.prompt_tokens.p99), Num(r.after.prompt_tokens.p99),
                      Pct1(r.before.prefix_cache_hit_rate), Pct1(r.after.prefix_cache_hit_rate));
      ++listed;
    }
    h.evidence.push_back(
        Remark("per-tenant prompt p99 and hit rate (before -> after): " + per_tenant));
    h.evidence.push_back(
        Line("uncached_tokens_mean", a.uncached_tokens_mean, b.uncached_tokens_mean, "tokens",
             fmt::format("fleet uncached tokens per request {} -> {} ({})",
                         Num(a.uncached_tokens_mean), Num(b.uncached_tokens_mean),
                         X(Ratio(a.uncached_tokens_mean, b.uncached_tokens_mean)))));
    for (const LabelChange& c : ev.label_changes) {
      if (c.dimension == "tenant") h.evidence.push_back(ChangeLine(c));
    }
    return h;
  }
};

}  // namespace

std::unique_ptr<HypothesisRule> MakeTrafficMixRule() { return std::make_unique<TrafficMixRule>(); }

}  // namespace ttft::diag
