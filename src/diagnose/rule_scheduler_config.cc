// Hypothesis `scheduler_config` (ttft/diagnose.h; the seed's reasoning in docs/diagnosis.md).
//
// Seed: "(2) a scheduler change -- max_num_batched_tokens or chunked prefill
// disabled -- lets long prefills block the queue". Two signatures: (a) stalls: the
// p99 of each request's longest inter-token gap jumps while the median ITL does not
// (a whole prefill ran in one step), with the hit rate and the prompt lengths flat;
// (b) a smaller token budget: prefill time per uncached token up while the decode ITL
// is flat or down -- the GPU is not slower, the schedule is (a change in the work per
// request at the same time weakens it by half at most).
#include <fmt/ranges.h>

#include "diagnose/rule_helpers.h"

namespace ttft::diag {
namespace {

class SchedulerConfigRule final : public HypothesisRule {
 public:
  std::string_view id() const override { return "scheduler_config"; }
  Hypothesis Evaluate(const Evidence& ev) const override {
    Hypothesis h;
    h.title =
        "Scheduler change: long prefills block the queue (chunked prefill, max_num_batched_tokens)";
    h.splitting_metric =
        "p99 of per-request max inter-token latency against median ITL, and prefill time per "
        "uncached token against ITL (scheduler vs GPU), with hit rate and prompt p99 flat";
    h.next_check =
        "Diff the engine config of the deploy: enable_chunked_prefill, max_num_batched_tokens, "
        "long_prefill_token_threshold";
    h.fix =
        "Restore the previous scheduler settings (chunked prefill on, the previous "
        "max_num_batched_tokens); roll back the config deploy first";
    h.prevention =
        "Treat engine-config changes as deploys: canary with a p99 TTFT and max-ITL gate; keep a "
        "load test with long prompts in CI for scheduler changes";
    h.owners = "serving team owns the engine config";
    const WindowStats& a = ev.before;
    const WindowStats& b = ev.after;
    const double itl_x = Ratio(a.itl_s.p50, b.itl_s.p50);
    const double stall_x = Ratio(a.itl_max_p99_s, b.itl_max_p99_s);
    const double per_tok_x = Ratio(a.prefill_s_per_1k_uncached, b.prefill_s_per_1k_uncached);
    const double spike = std::isfinite(itl_x) && itl_x > 0 ? stall_x / itl_x : stall_x;
    const double stalls = Ramp(stall_x, 1.3, 2.5) * Ramp(spike, 1.2, 2.0);
    const double budget = Ramp(per_tok_x, 1.2, 1.8) * (1 - Ramp(itl_x, 1.05, 1.25));
    const double hit_flat =
        1 - Ramp(std::fabs(a.prefix_cache_hit_rate - b.prefix_cache_hit_rate), 0.05, 0.2);
    const double prompt_flat = Flat(Ratio(a.prompt_tokens.p99, b.prompt_tokens.p99), 1.15) *
                               Flat(Ratio(a.prompt_tokens.mean, b.prompt_tokens.mean), 1.1) *
                               Flat(Ratio(a.output_tokens_mean, b.output_tokens_mean), 1.2);
    const double queued = Ramp(Ratio(a.ttft_s.p99, b.ttft_s.p99), 1.1, 1.5);
    bool deploy_changed = false;
    for (const LabelChange& c : ev.label_changes) {
      if (c.dimension == "deploy") deploy_changed = true;
    }
    // A config deploy reaches every replica: the stalls must not sit on one replica.
    int n = 0, stalled = 0;
    if (const GroupSplit* rep = ev.Split("replica")) {
      for (const GroupRow& r : rep->rows) {
        if (r.before.ok < 20 || r.after.ok < 20) continue;
        ++n;
        const double sx = Ratio(r.before.itl_max_p99_s, r.after.itl_max_p99_s);
        const double px =
            Ratio(r.before.prefill_s_per_1k_uncached, r.after.prefill_s_per_1k_uncached);
        if (sx >= 1.3 || px >= 1.2) ++stalled;
      }
    }
    const double breadth = n > 0 ? Ramp(static_cast<double>(stalled) / n, 0.3, 0.7) : 1;
    // More uncached work per request (a hit-rate collapse, longer prompts) lengthens the
    // longest steps by itself, so stalls count only with the work flat. The budget
    // signature is per uncached token already: a work change weakens it, never cancels it
    // (issue 13: a template change in the same deploy zeroed this rule).
    const double work_flat = hit_flat * prompt_flat;
    const double core =
        std::max(stalls * work_flat, budget * AtMostHalves(work_flat)) * queued * breadth;
    h.confidence = 0.9 * core + (deploy_changed && core > 0.2 ? 0.1 : 0);
    h.evidence.push_back(
        Line("itl_max_p99_s", a.itl_max_p99_s, b.itl_max_p99_s, "s",
             fmt::format("p99 of per-request max ITL {} -> {} ({}) while median ITL {} -> {} ({})",
                         Secs(a.itl_max_p99_s), Secs(b.itl_max_p99_s), X(stall_x),
                         Secs(a.itl_s.p50), Secs(b.itl_s.p50), X(itl_x))));
    h.evidence.push_back(Line("prefill_s_per_1k_uncached", a.prefill_s_per_1k_uncached,
                              b.prefill_s_per_1k_uncached, "s",
                              fmt::format("prefill time per 1k uncached tokens {} -> {} ({})",
                                          Secs(a.prefill_s_per_1k_uncached),
                                          Secs(b.prefill_s_per_1k_uncached), X(per_tok_x))));
    // Whether the work per request changed, by the bands the confidence uses (hit rate
    // within 5 points, prompt p99 within x1.15).
    std::vector<std::string> moved;
    bool known = true;
    const double hit_delta = b.prefix_cache_hit_rate - a.prefix_cache_hit_rate;
    if (!std::isfinite(hit_delta)) {
      known = false;
    } else if (std::fabs(hit_delta) >= 0.05) {
      moved.push_back(hit_delta < 0 ? "the hit rate fell" : "the hit rate rose");
    }
    switch (TrendOf(Ratio(a.prompt_tokens.p99, b.prompt_tokens.p99), 1.15)) {
      case Trend::kUp: moved.push_back("the prompts grew"); break;
      case Trend::kDown: moved.push_back("the prompts got shorter"); break;
      case Trend::kUnknown: known = false; break;
      case Trend::kFlat: break;
    }
    std::string work;
    if (!moved.empty()) {
      work = fmt::format(": the work per request changed ({})", fmt::join(moved, ", "));
    } else if (known) {
      work = ": the work per request did not change";
    }
    h.evidence.push_back(
        Line("prompt_tokens_p99", a.prompt_tokens.p99, b.prompt_tokens.p99, "tokens",
             fmt::format("hit rate {} -> {}, prompt p99 {} -> {}{}", Pct1(a.prefix_cache_hit_rate),
                         Pct1(b.prefix_cache_hit_rate), Num(a.prompt_tokens.p99),
                         Num(b.prompt_tokens.p99), work)));
    for (const LabelChange& c : ev.label_changes) {
      if (c.dimension == "deploy") h.evidence.push_back(ChangeLine(c));
    }
    if (!ev.has_spans) {
      h.runnable = false;
      h.not_run_reason = "needs per-request max ITL and prefill per token (spans)";
    }
    return h;
  }
};

}  // namespace

std::unique_ptr<HypothesisRule> MakeSchedulerConfigRule() {
  return std::make_unique<SchedulerConfigRule>();
}

}  // namespace ttft::diag
