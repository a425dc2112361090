// The tables the renderers share (report/tables.h).
#include "report/tables.h"

#include <fmt/format.h>

#include "ttft/format.h"

namespace ttft::report {

using numfmt::Num;
using numfmt::Pct;
using numfmt::Pct1;
using numfmt::Ratio;
using numfmt::Secs;
using numfmt::X;

std::vector<SymRow> Symptoms(const DiagnosisReport& r) {
  const WindowStats& a = r.baseline;
  const WindowStats& b = r.incident;
  return {
      {"window", fmt::format("[{:.0f},{:.0f}) s", a.from_s, a.to_s),
       fmt::format("[{:.0f},{:.0f}) s", b.from_s, b.to_s), ""},
      {"requests (ok)", fmt::format("{} ({})", a.requests, a.ok),
       fmt::format("{} ({})", b.requests, b.ok), ""},
      {"request rate", fmt::format("{:.2f} rps", a.request_rate_rps),
       fmt::format("{:.2f} rps", b.request_rate_rps),
       X(Ratio(a.request_rate_rps, b.request_rate_rps))},
      {"p50 TTFT", Secs(a.ttft_s.p50), Secs(b.ttft_s.p50), X(Ratio(a.ttft_s.p50, b.ttft_s.p50))},
      {"p99 TTFT", Secs(a.ttft_s.p99), Secs(b.ttft_s.p99), X(Ratio(a.ttft_s.p99, b.ttft_s.p99))},
      {"p99 queue", Secs(a.queue_s.p99), Secs(b.queue_s.p99),
       X(Ratio(a.queue_s.p99, b.queue_s.p99))},
      {"p99 prefill", Secs(a.prefill_s.p99), Secs(b.prefill_s.p99),
       X(Ratio(a.prefill_s.p99, b.prefill_s.p99))},
      {"ITL p50", Secs(a.itl_s.p50), Secs(b.itl_s.p50), X(Ratio(a.itl_s.p50, b.itl_s.p50))},
      {"max ITL p99", Secs(a.itl_max_p99_s), Secs(b.itl_max_p99_s),
       X(Ratio(a.itl_max_p99_s, b.itl_max_p99_s))},
      {"error rate", Pct1(a.error_rate), Pct1(b.error_rate), ""},
      {"replicas", fmt::format("{}", a.replicas), fmt::format("{}", b.replicas), ""},
      {"prefix-cache hit rate", Pct1(a.prefix_cache_hit_rate), Pct1(b.prefix_cache_hit_rate), ""},
      {"prompt tokens p99", Num(a.prompt_tokens.p99), Num(b.prompt_tokens.p99),
       X(Ratio(a.prompt_tokens.p99, b.prompt_tokens.p99))},
      {"output tokens mean", Num(a.output_tokens_mean), Num(b.output_tokens_mean),
       X(Ratio(a.output_tokens_mean, b.output_tokens_mean))},
      {"preemptions / request", fmt::format("{:.3f}", a.preemptions_per_request),
       fmt::format("{:.3f}", b.preemptions_per_request), ""},
  };
}

std::string Terms(const TermQuantiles& t) {
  return fmt::format("{} / {} / {}", Secs(t.p50), Secs(t.p90), Secs(t.p99));
}

std::string Sentence(const Contribution& c) {
  return fmt::format(
      "{} {}: hit rate {} to {}, p99 TTFT {} to {}, {} of the requests, {} of the p99 increase",
      c.dimension, c.value, Pct(c.hit_rate_before), Pct(c.hit_rate_after),
      Secs(c.ttft_p99_before_s), Secs(c.ttft_p99_after_s), Pct(c.share_of_requests),
      Pct(c.share_of_increase));
}

}  // namespace ttft::report
