// The roofline cost model of one engine step (ttft/model.h, docs/cost-model.md).
#include <algorithm>

#include "ttft/model.h"

namespace ttft {

CostModel::CostModel(HardwareConfig hw, CostParams params) : hw_(std::move(hw)), params_(params) {
  const ModelSpec& m = hw_.model;
  flops_per_token_ = 2.0 * m.num_layers * m.ActiveLayerParams();
  // QK^T and PV: 2 matmuls x 2 FLOP per multiply-add, per query-key pair, per head.
  flops_per_pair_ = 4.0 * m.num_layers * m.num_heads * m.head_dim;
  flops_per_logit_seq_ = 2.0 * m.EmbeddingParams();
  weight_bytes_per_gpu_ = hw_.WeightBytes() / hw_.tp;
  kv_bytes_per_token_per_gpu_ = hw_.KvBytesPerToken() / hw_.tp;
  compute_rate_ = hw_.tp * hw_.PeakFlopsPerGpu() * params_.prefill_mfu;
  bandwidth_rate_ = hw_.gpu.hbm_tbs * 1e12 * params_.decode_mbu;
  const double n_allreduce = hw_.tp > 1 ? 2.0 * m.num_layers : 0.0;
  fixed_s_ = params_.step_overhead_s + m.num_layers * params_.layer_overhead_s +
             n_allreduce * params_.allreduce_latency_s;
}

void CostModel::AddSequence(StepShape& shape, int64_t context_tokens, int64_t new_tokens,
                            bool samples) {
  shape.tokens += new_tokens;
  // Causal attention: query j (0-based) of the chunk sees context + j + 1 keys.
  const double n = static_cast<double>(new_tokens);
  shape.attention_pairs += n * static_cast<double>(context_tokens) + n * (n + 1) / 2;
  shape.kv_tokens_read += context_tokens + new_tokens;
  shape.logit_seqs += samples ? 1 : 0;
  shape.seqs += 1;
}

double CostModel::StepFlops(const StepShape& s) const {
  return flops_per_token_ * static_cast<double>(s.tokens) + flops_per_pair_ * s.attention_pairs +
         flops_per_logit_seq_ * static_cast<double>(s.logit_seqs);
}

double CostModel::StepTime(const StepShape& s) const {
  const double compute_s = StepFlops(s) / compute_rate_;
  const double bytes =
      weight_bytes_per_gpu_ + kv_bytes_per_token_per_gpu_ * static_cast<double>(s.kv_tokens_read);
  const double memory_s = bytes / bandwidth_rate_;
  return (fixed_s_ + std::max(compute_s, memory_s)) * params_.slowdown;
}

double CostModel::PrefillTime(int64_t uncached, int64_t cached) const {
  StepShape s;
  AddSequence(s, cached, uncached, true);
  return StepTime(s);
}

double CostModel::DecodeStepTime(int64_t batch, int64_t context) const {
  StepShape s;
  for (int64_t i = 0; i < batch; ++i) AddSequence(s, context, 1, true);
  return StepTime(s);
}

}  // namespace ttft
