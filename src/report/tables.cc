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

namespace {

// The change of quantile i: "" when the buckets resolve either side only as a bound
// (a ratio of interpolated figures there is noise).
std::string ChangeCell(const TermQuantiles& a, const TermQuantiles& b, size_t i) {
  auto bound = [i](const TermQuantiles& t) {
    return t.source == TermQuantiles::Source::kBuckets &&
           (t.buckets[i].in_first_bucket || t.buckets[i].in_inf_bucket);
  };
  if (bound(a) || bound(b)) return "";
  return X(Ratio(a.at(i), b.at(i)));
}

}  // namespace

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
      {"p50 TTFT", QuantileCell(a.ttft_s, 0), QuantileCell(b.ttft_s, 0),
       ChangeCell(a.ttft_s, b.ttft_s, 0)},
      {"p99 TTFT", QuantileCell(a.ttft_s, 2), QuantileCell(b.ttft_s, 2),
       ChangeCell(a.ttft_s, b.ttft_s, 2)},
      {"p99 queue", QuantileCell(a.queue_s, 2), QuantileCell(b.queue_s, 2),
       ChangeCell(a.queue_s, b.queue_s, 2)},
      {"p99 prefill", QuantileCell(a.prefill_s, 2), QuantileCell(b.prefill_s, 2),
       ChangeCell(a.prefill_s, b.prefill_s, 2)},
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

std::string QuantileCell(const TermQuantiles& t, size_t i) {
  if (t.source == TermQuantiles::Source::kBuckets) {
    const BucketQuantile& b = t.buckets[i];
    if (b.in_first_bucket) return "<=" + Secs(b.upper_bound);
    if (b.in_inf_bucket) return ">=" + Secs(b.value);
  }
  return Secs(t.at(i));
}

std::string Terms(const TermQuantiles& t) {
  const std::string p50 = QuantileCell(t, 0), p90 = QuantileCell(t, 1), p99 = QuantileCell(t, 2);
  // Three bounds alike ("<=300 ms" each) say it once, and fit the tables' columns.
  if (p50 == p90 && p90 == p99 && (p50.starts_with("<=") || p50.starts_with(">="))) {
    return "all " + p50;
  }
  return fmt::format("{} / {} / {}", p50, p90, p99);
}

std::string Sentence(const Contribution& c) {
  return fmt::format(
      "{} {}: hit rate {} to {}, p99 TTFT {} to {}, {} of the requests, {} of the p99 increase",
      c.dimension, c.value, Pct(c.hit_rate_before), Pct(c.hit_rate_after),
      Secs(c.ttft_p99_before_s), Secs(c.ttft_p99_after_s), Pct(c.share_of_requests),
      Pct(c.share_of_increase));
}

}  // namespace ttft::report
