// The symptom table of a window (ttft/diagnose.h).
#include <cmath>
#include <limits>
#include <unordered_set>

#include "ttft/diagnose.h"
#include "ttft/stats.h"

namespace ttft {

void SymptomCollector::Add(const Span& s) {
  auto [it, inserted] = replica_ids_.emplace(s.replica, static_cast<uint16_t>(replica_ids_.size()));
  (void)inserted;
  Record r;
  r.arrival_s = s.arrival_s;
  r.ttft_s = static_cast<float>(s.ttft_s);
  r.queue_s = static_cast<float>(s.queue_s);
  r.prefill_s = static_cast<float>(s.prefill_s);
  r.itl_mean_s = static_cast<float>(s.itl_mean_s);
  r.prompt_tokens = static_cast<int32_t>(s.prompt_tokens);
  r.cached_tokens = static_cast<int32_t>(s.cached_tokens);
  r.preemptions = static_cast<int16_t>(s.preemptions);
  r.replica = it->second;
  r.ok = s.status == RequestStatus::kOk;
  records_.push_back(r);
  max_arrival_s_ = std::max(max_arrival_s_, s.arrival_s);
}

WindowSymptoms SymptomCollector::Compute(double from_s, double to_s) const {
  WindowSymptoms w;
  w.from_s = from_s;
  w.to_s = to_s;
  std::vector<double> ttft, queue, prefill, itl, prompt;
  std::unordered_set<uint16_t> replicas;
  int64_t errors = 0;
  double prompt_sum = 0, cached_sum = 0;
  for (const Record& r : records_) {
    if (r.arrival_s < from_s || r.arrival_s >= to_s) continue;
    ++w.requests;
    w.preemptions += r.preemptions;
    if (!r.ok) {
      ++errors;
      continue;
    }
    ++w.ok;
    replicas.insert(r.replica);
    ttft.push_back(r.ttft_s);
    queue.push_back(r.queue_s);
    prefill.push_back(r.prefill_s);
    if (!std::isnan(r.itl_mean_s)) itl.push_back(r.itl_mean_s);
    prompt.push_back(r.prompt_tokens);
    prompt_sum += r.prompt_tokens;
    cached_sum += r.cached_tokens;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  w.request_rate_rps = to_s > from_s ? static_cast<double>(w.requests) / (to_s - from_s) : nan;
  w.ttft_p50_s = Quantile(ttft, 0.50);
  w.ttft_p90_s = Quantile(ttft, 0.90);
  w.ttft_p99_s = Quantile(ttft, 0.99);
  w.queue_p50_s = Quantile(queue, 0.50);
  w.queue_p99_s = Quantile(queue, 0.99);
  w.prefill_p50_s = Quantile(prefill, 0.50);
  w.prefill_p99_s = Quantile(prefill, 0.99);
  w.itl_p50_s = Quantile(itl, 0.50);
  w.prompt_tokens_p50 = Quantile(prompt, 0.50);
  w.prompt_tokens_p99 = Quantile(prompt, 0.99);
  w.error_rate =
      w.requests > 0 ? static_cast<double>(errors) / static_cast<double>(w.requests) : nan;
  w.replicas = static_cast<int64_t>(replicas.size());
  w.prefix_cache_hit_rate = prompt_sum > 0 ? cached_sum / prompt_sum : nan;
  return w;
}

}  // namespace ttft
