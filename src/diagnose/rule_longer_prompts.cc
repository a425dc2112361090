// Hypothesis `longer_prompts` (ttft/diagnose.h; the seed's reasoning in docs/diagnosis.md).
//
// Seed: "Prefill time up per token with hit rate flat -> (2) or (4); check
// prompt-token p99". Here: prompt-token p99 (or mean) up within the tenants that were
// already there, prefill time per uncached token flat (the GPU is as fast), the
// cached prefix intact (not a cache collapse) and no surge of preemptions (that is
// kv_pressure). A slower prefill or a collapse at the same time halves the case at
// most; a surge of preemptions takes up to 60% of it.
#include "diagnose/rule_helpers.h"

namespace ttft::diag {
namespace {

class LongerPromptsRule final : public HypothesisRule {
 public:
  std::string_view id() const override { return "longer_prompts"; }
  Hypothesis Evaluate(const Evidence& ev) const override {
    Hypothesis h;
    h.title = "Prompts got longer (retrieval depth, tool schemas)";
    h.splitting_metric = "prompt-token p99 per tenant, with prefill time per uncached token flat";
    h.next_check =
        "Compare the rendered prompts of the slow requests before and after: retrieval depth "
        "(top-k), tool schemas, conversation history kept";
    h.fix =
        "Cap or restore the retrieval depth / history length that grew; move growing content after "
        "the cached prefix";
    h.prevention =
        "A canary gate on prompt-token p99 per tenant and on p99 TTFT; a budget for prompt tokens "
        "per route in the app";
    h.owners = "app team owns the prompt contents; serving team sizes capacity for them";
    const WindowStats& a = ev.before;
    const WindowStats& b = ev.after;
    double growth = 0;
    const GroupRow* who = nullptr;
    double collapse = 0;
    if (const GroupSplit* ten = ev.Split("tenant")) {
      for (const GroupRow& r : ten->rows) {
        if (r.before.ok < 20 || r.after.ok < 20 || r.share_after < 0.05) continue;
        const double g = std::max(Ratio(r.before.prompt_tokens.p99, r.after.prompt_tokens.p99),
                                  Ratio(r.before.prompt_tokens.mean, r.after.prompt_tokens.mean));
        const double s = Ramp(g, 1.15, 1.6) * (0.5 + 0.5 * std::max(r.contribution, r.share_after));
        if (s > growth) {
          growth = s;
          who = &r;
          collapse =
              Ramp(1 - Ratio(r.before.cached_tokens_mean, r.after.cached_tokens_mean), 0.3, 0.7);
        }
      }
    }
    const double per_tok_x = Ratio(a.prefill_s_per_1k_uncached, b.prefill_s_per_1k_uncached);
    const double pa = std::isfinite(a.preemptions_per_request) ? a.preemptions_per_request : 0;
    const double pb = std::isfinite(b.preemptions_per_request) ? b.preemptions_per_request : 0;
    // Longer prompts that used to be rejected as too long are a raised max_model_len
    // (the seed files that under KV pressure), not a change in what clients send.
    const bool admitted =
        a.rejected_too_long >= 10 && b.rejected_too_long * 2 < a.rejected_too_long;
    // A slower prefill per token (the GPU or the schedule) or a tenant's cache collapse
    // at the same time weaken the case; neither cancels the longer prompts.
    h.confidence = growth * AtMostHalves(Flat(per_tok_x, 1.3)) * AtMostHalves(1 - collapse) *
                   (1 - 0.6 * Ramp(pb - pa, 0.01, 0.08)) * (admitted ? 0.5 : 1.0);
    if (admitted) {
      h.evidence.push_back(Line(
          "rejected_too_long", static_cast<double>(a.rejected_too_long),
          static_cast<double>(b.rejected_too_long), "count",
          fmt::format(
              "requests rejected as too long {} -> {}: the longer prompts were rejected before",
              a.rejected_too_long, b.rejected_too_long)));
    }
    if (who != nullptr) {
      h.evidence.push_back(Line(
          "prompt_tokens_p99", who->before.prompt_tokens.p99, who->after.prompt_tokens.p99,
          "tokens",
          fmt::format(
              "tenant {}: prompt tokens p99 {} -> {}, mean {} -> {}; cached per request {} -> {}",
              LabelValueText(who->value), Num(who->before.prompt_tokens.p99),
              Num(who->after.prompt_tokens.p99), Num(who->before.prompt_tokens.mean),
              Num(who->after.prompt_tokens.mean), Num(who->before.cached_tokens_mean),
              Num(who->after.cached_tokens_mean))));
    }
    h.evidence.push_back(Line(
        "prompt_tokens_p99", a.prompt_tokens.p99, b.prompt_tokens.p99, "tokens",
        fmt::format("fleet prompt tokens p99 {} -> {} ({})", Num(a.prompt_tokens.p99),
                    Num(b.prompt_tokens.p99), X(Ratio(a.prompt_tokens.p99, b.prompt_tokens.p99)))));
    // Flat by the band the confidence uses (x1.3).
    const char* per_tok = "";
    switch (TrendOf(per_tok_x, 1.3)) {
      case Trend::kFlat: per_tok = ": flat, the GPU is not slower"; break;
      case Trend::kUp: per_tok = ": up, each token is slower too (not only longer prompts)"; break;
      case Trend::kDown: per_tok = ": down, each token is faster"; break;
      case Trend::kUnknown: break;
    }
    h.evidence.push_back(Line(
        "prefill_s_per_1k_uncached", a.prefill_s_per_1k_uncached, b.prefill_s_per_1k_uncached, "s",
        fmt::format("prefill time per 1k uncached tokens {} -> {} ({}){}",
                    Secs(a.prefill_s_per_1k_uncached), Secs(b.prefill_s_per_1k_uncached),
                    X(per_tok_x), per_tok)));
    if (!ev.has_spans) {
      h.confidence = Ramp(Ratio(a.prompt_tokens.p99, b.prompt_tokens.p99), 1.15, 1.6) * 0.7;
      h.evidence.push_back(
          Remark("metrics only: fleet prompt-token histogram, no per-tenant split"));
    }
    return h;
  }
};

}  // namespace

std::unique_ptr<HypothesisRule> MakeLongerPromptsRule() {
  return std::make_unique<LongerPromptsRule>();
}

}  // namespace ttft::diag
