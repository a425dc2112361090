// Hypothesis `load_surge` (ttft/diagnose.h; the seed's reasoning in docs/diagnosis.md).
//
// The request rate rose. The queue grows because utilisation rose (rho / (1 - rho)).
// Everything per request staying flat (uncached tokens, output lengths, hit rate)
// strengthens the case; a change there halves it at most, since another cause may
// have moved it at the same time.
#include "diagnose/rule_helpers.h"

namespace ttft::diag {
namespace {

class LoadSurgeRule final : public HypothesisRule {
 public:
  std::string_view id() const override { return "load_surge"; }
  Hypothesis Evaluate(const Evidence& ev) const override {
    Hypothesis h;
    h.title = "Load surge: more requests, each one the same";
    h.splitting_metric =
        "request rate against per-request work (uncached tokens, output tokens) and hit rate";
    h.next_check =
        "Find where the extra requests come from (tenant, client, retry storm) and the utilisation "
        "of the busiest pool";
    h.fix =
        "Add replicas to the saturated pool or shed / rate-limit the surplus (retries with "
        "backoff)";
    h.prevention =
        "Autoscaling on queue time or utilisation with headroom; per-tenant rate limits; capacity "
        "alerts before p99 TTFT moves";
    h.owners = "serving team (capacity)";
    const WindowStats& a = ev.before;
    const WindowStats& b = ev.after;
    const double rate_x = Ratio(a.request_rate_rps, b.request_rate_rps);
    const double uncached_x = Ratio(a.uncached_tokens_mean, b.uncached_tokens_mean);
    const double output_x = Ratio(a.output_tokens_mean, b.output_tokens_mean);
    const double hit_flat =
        1 - Ramp(std::fabs(a.prefix_cache_hit_rate - b.prefix_cache_hit_rate), 0.05, 0.2);
    // Heavier requests or a lower hit rate weaken the case (another cause may explain
    // the queue) but never cancel it: more requests load the fleet whatever else moved
    // (issue 13: a template collapse during a surge zeroed this rule).
    const double flat = Flat(uncached_x, 1.12) * Flat(output_x, 1.12) * hit_flat;
    h.confidence = Ramp(rate_x, 1.1, 1.5) * AtMostHalves(flat);
    h.evidence.push_back(
        Line("request_rate_rps", a.request_rate_rps, b.request_rate_rps, "rps",
             fmt::format("request rate {} -> {} rps ({})", numfmt::Fixed(a.request_rate_rps, 2),
                         numfmt::Fixed(b.request_rate_rps, 2), X(rate_x))));
    h.evidence.push_back(
        Line("uncached_tokens_mean", a.uncached_tokens_mean, b.uncached_tokens_mean, "tokens",
             fmt::format("per request: uncached tokens {} -> {} ({}), output tokens {} -> {} ({}), "
                         "hit rate {} -> "
                         "{}",
                         Num(a.uncached_tokens_mean), Num(b.uncached_tokens_mean), X(uncached_x),
                         Num(a.output_tokens_mean), Num(b.output_tokens_mean), X(output_x),
                         Pct1(a.prefix_cache_hit_rate), Pct1(b.prefix_cache_hit_rate))));
    return h;
  }
};

}  // namespace

std::unique_ptr<HypothesisRule> MakeLoadSurgeRule() { return std::make_unique<LoadSurgeRule>(); }

}  // namespace ttft::diag
