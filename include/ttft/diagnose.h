// -----------------------------------------------------------------------------
// File: ttft/diagnose.h
// -----------------------------------------------------------------------------
//
// The diagnosis of a TTFT regression. This first part is the symptom table the
// seed drill lists before anything else: p50 versus p99 TTFT, queue and prefill
// tails, inter-token latency, errors, replicas, prefix-cache hit rate, prompt
// lengths and preemptions, for a window before and a window after a change.
//
// Definitions (docs/diagnosis.md):
//   * A span belongs to a window by its arrival time, [from_s, to_s).
//   * Latency quantiles are over requests that finished ok; the error rate over all.
//   * itl_p50_s is the median of the per-request mean inter-token latency.
//   * prefix_cache_hit_rate is vLLM's, in tokens: sum(cached) / sum(prompt).
//   * replicas counts distinct replicas that served a request in the window.
//
// Example:
//
//   ttft::SymptomCollector c;
//   for (const ttft::Span& s : spans) c.Add(s);
//   ttft::WindowSymptoms before = c.Compute(300, 900);
//
// Thread safety: a SymptomCollector is single-threaded.

#ifndef TTFT_DIAGNOSE_H_
#define TTFT_DIAGNOSE_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ttft/core.h"

namespace ttft {

struct WindowSymptoms {
  double from_s = 0;
  double to_s = 0;
  int64_t requests = 0;
  int64_t ok = 0;
  double request_rate_rps = 0;
  double ttft_p50_s = 0, ttft_p90_s = 0, ttft_p99_s = 0;
  double queue_p50_s = 0, queue_p99_s = 0;
  double prefill_p50_s = 0, prefill_p99_s = 0;
  double itl_p50_s = 0;
  double error_rate = 0;
  int64_t replicas = 0;
  double prefix_cache_hit_rate = 0;
  double prompt_tokens_p50 = 0, prompt_tokens_p99 = 0;
  int64_t preemptions = 0;
};

// Keeps a compact record per span (about 40 bytes) and computes windows.
class SymptomCollector {
 public:
  void Add(const Span& span);
  // Quantiles are NaN when the window holds no ok request.
  WindowSymptoms Compute(double from_s, double to_s) const;
  int64_t size() const { return static_cast<int64_t>(records_.size()); }
  double max_arrival_s() const { return max_arrival_s_; }

 private:
  struct Record {
    double arrival_s;
    float ttft_s, queue_s, prefill_s, itl_mean_s;
    int32_t prompt_tokens, cached_tokens;
    int16_t preemptions;
    uint16_t replica;
    bool ok;
  };
  std::vector<Record> records_;
  std::unordered_map<std::string, uint16_t> replica_ids_;
  double max_arrival_s_ = 0;
};

}  // namespace ttft

#endif  // TTFT_DIAGNOSE_H_
