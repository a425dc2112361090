// Hypothesis `prefix_cache_collapse` (ttft/diagnose.h; the seed's reasoning in docs/diagnosis.md).
//
// Seed: "Queue time up with cache hit rate down -> (1)". Prefix caching needs a
// byte-identical prefix; a template that puts a timestamp or per-user field ahead of
// the static system prompt makes every block hash unique. The signal is WITHIN a
// tenant: cached tokens per request fall (the ratio alone also falls when prompts
// grow, so the rule reads the absolute cached tokens). A drop confined to one replica
// is a cold replica (bad_replica), not a template.
#include "diagnose/rule_helpers.h"

namespace ttft::diag {
namespace {

class PrefixCacheCollapseRule final : public HypothesisRule {
 public:
  std::string_view id() const override { return "prefix_cache_collapse"; }
  Hypothesis Evaluate(const Evidence& ev) const override {
    Hypothesis h;
    h.title = "Prefix-cache hit rate collapsed (dynamic content ahead of the static prefix)";
    h.splitting_metric =
        "prefix-cache hit rate per tenant (vllm:prefix_cache_hits / vllm:prefix_cache_queries; "
        "span cached_tokens / prompt_tokens), before vs after";
    h.next_check =
        "Diff the rendered prompt of the old and new template version: find the request-variable "
        "field that now precedes the static system prompt";
    h.fix =
        "Restore the static-first order: system prompt and tool schemas before anything "
        "per-request, timestamps and user fields last; roll back via the flag first";
    h.prevention =
        "A CI lint that fails when the first N tokens of the rendered template contain "
        "request-variable fields; template changes versioned and canaried as deploys, gated on hit "
        "rate and p99 TTFT";
    h.owners =
        "app team owns the template; serving team owns the cache; both watch the hit-rate metric "
        "on one dashboard";
    const GroupSplit* ten = ev.Split("tenant");
    const GroupRow* best = nullptr;
    double best_score = 0;
    auto consider = [&](const GroupRow& r) {
      if (r.before.ok < 20 || r.after.ok < 20) return;
      const double drop = 1 - Ratio(r.before.cached_tokens_mean, r.after.cached_tokens_mean);
      const double hit_drop = r.before.prefix_cache_hit_rate - r.after.prefix_cache_hit_rate;
      const double s = Ramp(drop, 0.2, 0.7) * Ramp(hit_drop, 0.05, 0.3) *
                       (0.6 + 0.4 * std::max(r.contribution, r.share_after));
      if (s > best_score) {
        best_score = s;
        best = &r;
      }
    };
    if (ten != nullptr) {
      for (const GroupRow& r : ten->rows) consider(r);
    }
    // Concentration of the lost cached tokens on one replica.
    double concentration = 0;
    if (const GroupSplit* rep = ev.Split("replica"); rep != nullptr && rep->rows.size() >= 3) {
      double total = 0, largest = 0;
      for (const GroupRow& r : rep->rows) {
        if (r.before.ok < 20 || r.after.ok < 1) continue;
        const double loss =
            std::max(0.0, r.before.cached_tokens_mean - r.after.cached_tokens_mean) *
            static_cast<double>(r.after.ok);
        total += loss;
        largest = std::max(largest, loss);
      }
      concentration = total > 0 ? Ramp(largest / total, 0.6, 0.9) : 0;
    }
    bool template_changed = false;
    for (const LabelChange& c : ev.label_changes) {
      if (c.dimension == "template") template_changed = true;
    }
    h.confidence = 0.9 * best_score * (1 - 0.8 * concentration) +
                   (template_changed && best_score > 0.2 ? 0.1 : 0);
    const WindowStats& a = ev.before;
    const WindowStats& b = ev.after;
    if (best != nullptr) {
      h.evidence.push_back(Line(
          "cached_tokens_mean", best->before.cached_tokens_mean, best->after.cached_tokens_mean,
          "tokens",
          fmt::format(
              "tenant {}: hit rate {} -> {}; cached tokens per request {} -> {}; {} of the p99 "
              "increase",
              LabelValueText(best->value), Pct1(best->before.prefix_cache_hit_rate),
              Pct1(best->after.prefix_cache_hit_rate), Num(best->before.cached_tokens_mean),
              Num(best->after.cached_tokens_mean), Pct(best->contribution))));
    }
    h.evidence.push_back(
        Line("prefix_cache_hit_rate", a.prefix_cache_hit_rate, b.prefix_cache_hit_rate, "fraction",
             fmt::format("fleet hit rate {} -> {}; p99 queue time {} -> {} ({})",
                         Pct1(a.prefix_cache_hit_rate), Pct1(b.prefix_cache_hit_rate),
                         QuantileText(a.queue_s, 2), QuantileText(b.queue_s, 2),
                         QuantileRatioText(a.queue_s, b.queue_s, 2))));
    // Whether the prompts grew: the hit rate also falls when prompts grow around an
    // intact prefix (the cached tokens per request above tell the two apart).
    const double prompt_x = Ratio(a.prompt_tokens.p99, b.prompt_tokens.p99);
    const char* prompts = "";
    switch (TrendOf(prompt_x, 1.15)) {
      case Trend::kFlat: prompts = ": the prompts did not grow"; break;
      case Trend::kUp: prompts = ": the prompts grew as well"; break;
      case Trend::kDown: prompts = ": the prompts got shorter"; break;
      case Trend::kUnknown: break;
    }
    h.evidence.push_back(
        Line("prompt_tokens_p99", a.prompt_tokens.p99, b.prompt_tokens.p99, "tokens",
             fmt::format("prompt tokens p99 {} -> {} ({}){}", Num(a.prompt_tokens.p99),
                         Num(b.prompt_tokens.p99), X(prompt_x), prompts)));
    if (concentration > 0) {
      h.evidence.push_back(
          Remark("the lost cache hits are concentrated on one replica (a cold replica?)"));
    }
    for (const LabelChange& c : ev.label_changes) {
      if (c.dimension == "template") h.evidence.push_back(ChangeLine(c));
    }
    if (!ev.has_spans) {
      // Metrics only: the fleet's hit rate fell and the wait or the prefill grew. A p99
      // the buckets give only as a bound (vLLM's first queue and prefill bucket is
      // (0, 0.3] s) is no figure to take a ratio of: the exact mean (_sum/_count) then.
      auto growth = [](const TermQuantiles& x, const TermQuantiles& y) {
        return Resolved(x, 2) && Resolved(y, 2) ? Ratio(x.p99, y.p99) : Ratio(x.mean, y.mean);
      };
      const double queue_x = growth(a.queue_s, b.queue_s);
      const double prefill_x = growth(a.prefill_s, b.prefill_s);
      // Cached tokens per request (prompt mean x hit rate) tell a lost prefix from
      // longer prompts around an intact one; unknown without a prompt histogram.
      const double cached_drop = 1 - Ratio(a.cached_tokens_mean, b.cached_tokens_mean);
      h.evidence.push_back(Remark(
          ten == nullptr || ten->rows.size() < 2
              ? fmt::format("metrics only: fleet-level hit rate, no per-tenant split; queue {}, "
                            "prefill {}, cached tokens per request {} -> {}",
                            X(queue_x), X(prefill_x), Num(a.cached_tokens_mean),
                            Num(b.cached_tokens_mean))
              : fmt::format("metrics only: queue {}, prefill {}", X(queue_x), X(prefill_x))));
      const double fleet = Ramp(a.prefix_cache_hit_rate - b.prefix_cache_hit_rate, 0.05, 0.3) *
                           Ramp(std::max(queue_x, prefill_x), 1.2, 3) *
                           (std::isfinite(cached_drop) ? Ramp(cached_drop, 0.2, 0.7) : 1.0);
      h.confidence = std::max(h.confidence, fleet);
    }
    return h;
  }
};

}  // namespace

std::unique_ptr<HypothesisRule> MakePrefixCacheCollapseRule() {
  return std::make_unique<PrefixCacheCollapseRule>();
}

}  // namespace ttft::diag
