// Hypothesis `kv_pressure` (ttft/diagnose.h; the seed's reasoning in docs/diagnosis.md).
//
// Seed: "Queue time up with hit rate flat and preemptions up -> (3)". When the KV
// cache cannot hold the running batch, vLLM preempts the newest request and
// recomputes it later: preemptions per request and KV usage rise. Output lengths
// up as well is decode_heavy; a moved hit rate halves the case at most.
#include "diagnose/rule_helpers.h"

namespace ttft::diag {
namespace {

class KvPressureRule final : public HypothesisRule {
 public:
  std::string_view id() const override { return "kv_pressure"; }
  Hypothesis Evaluate(const Evidence& ev) const override {
    Hypothesis h;
    h.title =
        "KV-cache pressure: preemptions and recomputation (raised max_model_len, longer contexts)";
    h.splitting_metric =
        "preemptions per request (vllm:num_preemptions_total / requests) and KV-cache usage "
        "(vllm:kv_cache_usage_perc), with hit rate flat";
    h.next_check =
        "Check the deploy for a raised max_model_len or max_num_seqs, and the KV-usage gauge per "
        "replica over time";
    h.fix =
        "Restore max_model_len / max_num_seqs, or give the KV cache more room (more replicas, "
        "gpu_memory_utilization, FP8 KV)";
    h.prevention =
        "Alert on preemptions per request and KV usage above 90%; load-test config changes that "
        "raise max_model_len with the longest contexts allowed";
    h.owners = "serving team owns the engine config and capacity";
    const WindowStats& a = ev.before;
    const WindowStats& b = ev.after;
    const double pa = std::isfinite(a.preemptions_per_request) ? a.preemptions_per_request : 0;
    const double pb = std::isfinite(b.preemptions_per_request) ? b.preemptions_per_request : 0;
    const double preempt = Ramp(pb - pa, 0.005, 0.05) * Ramp(pb / std::max(pa, 1e-3), 1.5, 3);
    const double hit_flat =
        1 - Ramp(std::fabs(a.prefix_cache_hit_rate - b.prefix_cache_hit_rate), 0.1, 0.3);
    const double out_up = Ramp(Ratio(a.output_tokens_mean, b.output_tokens_mean), 1.2, 2.0);
    double kv = 0;
    if (std::isfinite(b.kv_usage)) kv = Ramp(b.kv_usage, 0.85, 0.97);
    // A moved hit rate (a template change, longer prompts diluting it) weakens the case
    // but does not cancel it: preemptions are this cause's own signal.
    h.confidence =
        std::max(preempt, 0.5 * kv * preempt) * AtMostHalves(hit_flat) * (1 - 0.6 * out_up);
    h.evidence.push_back(Line("preemptions_per_request", pa, pb, "count",
                              fmt::format("preemptions per request {} -> {}", numfmt::Fixed(pa, 3),
                                          numfmt::Fixed(pb, 3))));
    if (std::isfinite(a.kv_usage) || std::isfinite(b.kv_usage)) {
      h.evidence.push_back(
          Line("kv_usage", a.kv_usage, b.kv_usage, "fraction",
               fmt::format("mean KV-cache usage {} -> {}", Pct(a.kv_usage), Pct(b.kv_usage))));
    }
    // Flat by the band the confidence uses (within 10 points).
    const double hit_delta = b.prefix_cache_hit_rate - a.prefix_cache_hit_rate;
    std::string hit_reads;
    if (std::isfinite(hit_delta)) {
      hit_reads = std::fabs(hit_delta) < 0.1
                      ? " (flat, as this cause expects)"
                      : fmt::format(" ({} by {:.0f} points; this cause expects it flat)",
                                    hit_delta < 0 ? "down" : "up", std::fabs(hit_delta) * 100);
    }
    h.evidence.push_back(Line("prefix_cache_hit_rate", a.prefix_cache_hit_rate,
                              b.prefix_cache_hit_rate, "fraction",
                              fmt::format("hit rate {} -> {}{}", Pct1(a.prefix_cache_hit_rate),
                                          Pct1(b.prefix_cache_hit_rate), hit_reads)));
    if (a.rejected_too_long > b.rejected_too_long) {
      h.evidence.push_back(Line("rejected_too_long", static_cast<double>(a.rejected_too_long),
                                static_cast<double>(b.rejected_too_long), "count",
                                fmt::format("requests rejected as too long {} -> {}: max_model_len "
                                            "was raised, longer contexts now "
                                            "admitted",
                                            a.rejected_too_long, b.rejected_too_long)));
      h.confidence = std::min(1.0, h.confidence + 0.1 * (preempt > 0.2));
    }
    h.evidence.push_back(Line("output_tokens_mean", a.output_tokens_mean, b.output_tokens_mean,
                              "tokens",
                              fmt::format("output tokens mean {} -> {}", Num(a.output_tokens_mean),
                                          Num(b.output_tokens_mean))));
    return h;
  }
};

}  // namespace

std::unique_ptr<HypothesisRule> MakeKvPressureRule() { return std::make_unique<KvPressureRule>(); }

}  // namespace ttft::diag
