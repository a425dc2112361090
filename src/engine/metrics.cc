// vLLM v1 bucket boundaries and the fixed-bucket histogram (ttft/engine.h).
#include <algorithm>

#include "ttft/engine.h"

namespace ttft {

// vllm/v1/metrics/loggers.py (commits 005a810b, 3168f587) and buckets.py.
const std::vector<double>& TtftBuckets() {
  static const std::vector<double> k = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                        0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                        20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
  return k;
}

const std::vector<double>& ItlBuckets() {
  static const std::vector<double> k = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                        0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
  return k;
}

const std::vector<double>& RequestLatencyBuckets() {
  static const std::vector<double> k = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                        5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                        60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  return k;
}

const std::vector<double>& IterationTokenBuckets() {
  static const std::vector<double> k = {1,   8,    16,   32,   64,   128,  256,
                                        512, 1024, 2048, 4096, 8192, 16384};
  return k;
}

std::vector<double> Build125Buckets(int64_t max_value) {
  std::vector<double> out;
  for (double exp = 1;; exp *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      double v = m * exp;
      if (v > static_cast<double>(max_value)) return out;
      out.push_back(v);
    }
  }
}

void Histogram::Observe(double v, uint64_t n) {
  // Buckets are few (<= 22): a linear scan beats a binary search here.
  size_t i = 0;
  const size_t nb = bounds->size();
  while (i < nb && v > (*bounds)[i]) ++i;
  counts[i] += n;
  sum += v * static_cast<double>(n);
  count += n;
}

EngineMetrics::EngineMetrics(int64_t max_model_len)
    : token_buckets(Build125Buckets(max_model_len)),
      ttft(&TtftBuckets()),
      itl(&ItlBuckets()),
      e2e(&RequestLatencyBuckets()),
      queue(&RequestLatencyBuckets()),
      prefill(&RequestLatencyBuckets()),
      decode(&RequestLatencyBuckets()),
      inference(&RequestLatencyBuckets()),
      tpot(&ItlBuckets()),
      prompt_len(nullptr),
      generation_len(nullptr),
      iteration_tokens(&IterationTokenBuckets()),
      prefill_kv_computed(nullptr) {
  prompt_len = Histogram(&token_buckets);
  generation_len = Histogram(&token_buckets);
  prefill_kv_computed = Histogram(&token_buckets);
}

}  // namespace ttft
