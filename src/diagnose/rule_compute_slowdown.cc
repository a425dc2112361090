// Hypothesis `compute_slowdown` (ttft/diagnose.h; the seed's reasoning in docs/diagnosis.md).
//
// Prefill time per uncached token up on (nearly) every replica AND the decode ITL
// up with it, at an unchanged request rate: every step is slower, so the GPU path
// is (thermal or power throttling, a different SKU, a TP degree or kernel
// regression). A slower prefill with a flat ITL is the scheduler, not the GPU.
#include "diagnose/rule_helpers.h"

namespace ttft::diag {
namespace {

class ComputeSlowdownRule final : public HypothesisRule {
 public:
  std::string_view id() const override { return "compute_slowdown"; }
  Hypothesis Evaluate(const Evidence& ev) const override {
    Hypothesis h;
    h.title = "Compute slowdown everywhere (throttling, wrong SKU, TP misconfiguration)";
    h.splitting_metric =
        "prefill time per uncached token and median ITL, per replica, before vs after";
    h.next_check =
        "GPU clocks, power and temperature (DCGM), the SKU and TP degree of each replica, driver "
        "and kernel versions of the deploy";
    h.fix =
        "Replace throttled nodes or roll back the image / TP setting that slowed the compute path";
    h.prevention =
        "Alert on prefill time per token and ITL per replica against a baseline; pin driver/kernel "
        "versions in deploys; a perf canary per image";
    h.owners = "serving team (fleet hardware and images)";
    const WindowStats& a = ev.before;
    const WindowStats& b = ev.after;
    const double per_tok_x = Ratio(a.prefill_s_per_1k_uncached, b.prefill_s_per_1k_uncached);
    const double itl_x = Ratio(a.itl_s.p50, b.itl_s.p50);
    int n = 0, slow = 0;
    if (const GroupSplit* rep = ev.Split("replica")) {
      for (const GroupRow& r : rep->rows) {
        if (r.before.ok < 20 || r.after.ok < 20) continue;
        ++n;
        if (Ratio(r.before.prefill_s_per_1k_uncached, r.after.prefill_s_per_1k_uncached) >= 1.15)
          ++slow;
      }
    }
    const double breadth = n > 0 ? static_cast<double>(slow) / n : 0;
    const double rate_x = Ratio(a.request_rate_rps, b.request_rate_rps);
    h.confidence = Ramp(per_tok_x, 1.1, 1.5) * Ramp(itl_x, 1.05, 1.3) * Ramp(breadth, 0.5, 0.9) *
                   (1 - 0.6 * Ramp(rate_x, 1.1, 1.4));
    h.evidence.push_back(Line("prefill_s_per_1k_uncached", a.prefill_s_per_1k_uncached,
                              b.prefill_s_per_1k_uncached, "s",
                              fmt::format("prefill time per 1k uncached tokens {} -> {} ({})",
                                          Secs(a.prefill_s_per_1k_uncached),
                                          Secs(b.prefill_s_per_1k_uncached), X(per_tok_x))));
    h.evidence.push_back(Line(
        "itl_p50_s", a.itl_s.p50, b.itl_s.p50, "s",
        fmt::format("median ITL {} -> {} ({})", Secs(a.itl_s.p50), Secs(b.itl_s.p50), X(itl_x))));
    h.evidence.push_back(Line(
        "replicas_slower_per_token", kMissing, static_cast<double>(slow), "count",
        fmt::format("{} of {} replicas slower per token; request rate {}", slow, n, X(rate_x))));
    if (!ev.has_spans) {
      h.runnable = false;
      h.not_run_reason = "needs prefill time and uncached tokens per request (spans)";
    }
    return h;
  }
};

}  // namespace

std::unique_ptr<HypothesisRule> MakeComputeSlowdownRule() {
  return std::make_unique<ComputeSlowdownRule>();
}

}  // namespace ttft::diag
