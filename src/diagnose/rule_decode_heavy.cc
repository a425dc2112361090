// Hypothesis `decode_heavy` (ttft/diagnose.h; the seed's reasoning in docs/diagnosis.md).
//
// Output lengths up and more sequences in flight (Little's law: sum of e2e time
// over the window): decodes hold batch slots and KV blocks longer, so new prefills
// wait and the ITL rises.
#include "diagnose/rule_helpers.h"

namespace ttft::diag {
namespace {

class DecodeHeavyRule final : public HypothesisRule {
 public:
  std::string_view id() const override { return "decode_heavy"; }
  Hypothesis Evaluate(const Evidence& ev) const override {
    Hypothesis h;
    h.title = "Decode-heavy traffic: longer outputs, more concurrent sequences, KV pressure";
    h.splitting_metric =
        "output tokens per request and concurrent sequences (vllm:num_requests_running), before vs "
        "after";
    h.next_check =
        "Which tenant or route asks for longer outputs (max_tokens, a prompt change asking for "
        "more), and KV usage per replica";
    h.fix =
        "Restore or cap max_tokens for the route that grew; add decode capacity (replicas) if the "
        "longer outputs are intended";
    h.prevention =
        "Per-route budgets on max_tokens; alerts on output-token p99 and running sequences; "
        "capacity plans that count decode time";
    h.owners = "app team (max_tokens) with the serving team (capacity)";
    const WindowStats& a = ev.before;
    const WindowStats& b = ev.after;
    const double out_x = Ratio(a.output_tokens_mean, b.output_tokens_mean);
    const double conc_x = Ratio(a.concurrency, b.concurrency);
    h.confidence = Ramp(out_x, 1.2, 2.0) * Ramp(conc_x, 1.1, 1.6);
    h.evidence.push_back(
        Line("output_tokens_mean", a.output_tokens_mean, b.output_tokens_mean, "tokens",
             fmt::format("output tokens mean {} -> {} ({}), p99 {} -> {}",
                         Num(a.output_tokens_mean), Num(b.output_tokens_mean), X(out_x),
                         Num(a.output_tokens_p99), Num(b.output_tokens_p99))));
    h.evidence.push_back(Line(
        "concurrency", a.concurrency, b.concurrency, "count",
        fmt::format("concurrent sequences (Little's law) {} -> {} ({})",
                    numfmt::Fixed(a.concurrency, 1), numfmt::Fixed(b.concurrency, 1), X(conc_x))));
    h.evidence.push_back(
        Line("itl_p50_s", a.itl_s.p50, b.itl_s.p50, "s",
             fmt::format("median ITL {} -> {}; preemptions per request {} -> {}", Secs(a.itl_s.p50),
                         Secs(b.itl_s.p50), numfmt::Fixed(a.preemptions_per_request, 3),
                         numfmt::Fixed(b.preemptions_per_request, 3))));
    if (!ev.has_spans) {
      h.runnable = false;
      h.not_run_reason = "needs output tokens and e2e time per request (spans)";
    }
    return h;
  }
};

}  // namespace

std::unique_ptr<HypothesisRule> MakeDecodeHeavyRule() {
  return std::make_unique<DecodeHeavyRule>();
}

}  // namespace ttft::diag
