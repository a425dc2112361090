// Diagnose() stage: the decomposition of TTFT into front end, queue and prefill, and
// each term's share of the tail increase (diagnose/stages.h, docs/diagnosis.md).
#include <algorithm>
#include <cmath>

#include "diagnose/stages.h"

namespace ttft::diag {

TailMeans TailOf(const SpanTable& t, std::span<const uint32_t> rows, double threshold) {
  TailMeans m;
  if (!std::isfinite(threshold)) return m;
  double s_t = 0, s_f = 0, s_q = 0, s_p = 0;
  int64_t n = 0;
  for (uint32_t r : rows) {
    if (t.status()[r] != RequestStatus::kOk) continue;
    const float tt = t.ttft_s()[r];
    if (std::isnan(tt) || tt < threshold) continue;
    const float fe = t.front_end_s()[r], q = t.queue_s()[r], p = t.prefill_s()[r];
    s_t += tt;
    s_f += std::isnan(fe) ? 0 : fe;
    s_q += std::isnan(q) ? 0 : q;
    s_p += std::isnan(p) ? 0 : p;
    ++n;
  }
  if (n == 0) return m;
  const double dn = static_cast<double>(n);
  return {s_t / dn, s_f / dn, s_q / dn, s_p / dn};
}

Decomposition DecomposeTail(const WindowStats& a, const WindowStats& b, const TailMeans& ta,
                            const TailMeans& tb) {
  Decomposition d;
  d.before_ttft = a.ttft_s;
  d.before_front_end = a.front_end_s;
  d.before_queue = a.queue_s;
  d.before_prefill = a.prefill_s;
  d.after_ttft = b.ttft_s;
  d.after_front_end = b.front_end_s;
  d.after_queue = b.queue_s;
  d.after_prefill = b.prefill_s;
  d.tail_before_ttft = ta.ttft;
  d.tail_before_front_end = ta.fe;
  d.tail_before_queue = ta.queue;
  d.tail_before_prefill = ta.prefill;
  d.tail_after_ttft = tb.ttft;
  d.tail_after_front_end = tb.fe;
  d.tail_after_queue = tb.queue;
  d.tail_after_prefill = tb.prefill;
  const double dq = tb.queue - ta.queue, dp = tb.prefill - ta.prefill, df = tb.fe - ta.fe;
  const double total = dq + dp + df;
  if (std::isfinite(total) && total > 0) {
    d.share_queue = dq / total;
    d.share_prefill = dp / total;
    d.share_front_end = df / total;
    if (d.share_queue >= d.share_prefill && d.share_queue >= d.share_front_end) {
      d.dominant = "queue";
    } else if (d.share_prefill >= d.share_front_end) {
      d.dominant = "prefill";
    } else {
      d.dominant = "front_end";
    }
  } else if (!a.from_metrics && !b.from_metrics) {
    d.dominant = "";
  }
  if (a.from_metrics || b.from_metrics) {
    // No per-request terms: attribute by the change of each term's p99.
    const double q = b.queue_s.p99 - a.queue_s.p99, p = b.prefill_s.p99 - a.prefill_s.p99;
    if (std::isfinite(q) && std::isfinite(p) && q + p > 0) {
      d.share_queue = std::max(0.0, q) / (std::max(0.0, q) + std::max(0.0, p));
      d.share_prefill = 1 - d.share_queue;
      d.dominant = d.share_queue >= d.share_prefill ? "queue" : "prefill";
    }
  }
  return d;
}

}  // namespace ttft::diag
