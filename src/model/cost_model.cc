// The roofline cost model of one engine step (ttft/model.h, docs/cost-model.md,
// docs/calibration.md).
#include <algorithm>
#include <cmath>

#include "ttft/model.h"

namespace ttft {

CostModel::CostModel(HardwareConfig hw, CostParams params) : hw_(std::move(hw)), params_(params) {
  const ModelSpec& m = hw_.model;
  flops_per_token_ = 2.0 * m.num_layers * m.ActiveLayerParams();
  // QK^T and PV: 2 matmuls x 2 FLOP per multiply-add, per query-key pair, per head.
  flops_per_pair_ = 4.0 * m.num_layers * m.num_heads * m.head_dim;
  flops_per_logit_seq_ = 2.0 * m.EmbeddingParams();
  const double bytes_per_weight = BytesPerElement(hw_.weight_dtype);
  expert_bytes_per_gpu_ =
      m.num_experts > 0 ? m.num_layers * m.ExpertParams() * bytes_per_weight / hw_.tp : 0.0;
  dense_weight_bytes_per_gpu_ =
      hw_.WeightBytes() / hw_.tp - expert_bytes_per_gpu_ * std::max(0, m.num_experts);
  kv_bytes_per_token_per_gpu_ = hw_.KvBytesPerToken() / hw_.tp;
  peak_rate_ = hw_.tp * hw_.PeakFlopsPerGpu();
  const double bw = hw_.gpu.hbm_tbs * 1e12;
  bw_rate_ = bw * params_.decode_mbu;
  // KV bytes priced in weight-stream bytes, read at the attention kind's efficiency.
  const bool gqa = m.num_kv_heads > 0 && m.num_kv_heads < m.num_heads;
  kv_weight_ratio_ = params_.decode_mbu / params_.KvMbu(gqa);
  const double n_allreduce = hw_.tp > 1 ? 2.0 * m.num_layers : 0.0;
  // Ring all-reduce: each GPU sends and receives 2 (tp - 1) / tp of the message; the
  // activations are 16-bit whatever the weights' dtype.
  allreduce_s_per_token_ = n_allreduce * m.hidden_size * 2.0 * 2.0 * (hw_.tp - 1) / hw_.tp /
                           (params_.allreduce_bus_gbps * 1e9);
  fixed_s_ = params_.step_overhead_s + m.num_layers * params_.layer_overhead_s +
             n_allreduce * params_.allreduce_latency_s;
}

void CostModel::AddSequence(StepShape& shape, int64_t context_tokens, int64_t new_tokens,
                            bool samples, int64_t copies) {
  shape.tokens += copies * new_tokens;
  // Causal attention: query j (0-based) of the chunk sees context + j + 1 keys.
  const double n = static_cast<double>(new_tokens);
  shape.attention_pairs +=
      static_cast<double>(copies) * (n * static_cast<double>(context_tokens) + n * (n + 1) / 2);
  shape.kv_tokens_read += copies * (context_tokens + new_tokens);
  shape.logit_seqs += samples ? copies : 0;
  shape.seqs += copies;
  shape.prefill_seqs += new_tokens > 1 ? copies : 0;
}

double CostModel::StepFlops(const StepShape& s) const {
  return flops_per_token_ * static_cast<double>(s.tokens) + flops_per_pair_ * s.attention_pairs +
         flops_per_logit_seq_ * static_cast<double>(s.logit_seqs);
}

double CostModel::Mfu(int64_t tokens) const {
  const double n = static_cast<double>(std::max<int64_t>(tokens, 1));
  return params_.prefill_mfu * n / (n + params_.prefill_n_half_tokens);
}

double CostModel::WeightBytesPerGpu(int64_t tokens) const {
  const ModelSpec& m = hw_.model;
  if (m.num_experts <= 0) return dense_weight_bytes_per_gpu_;
  // Expected distinct experts per layer when `tokens` tokens each pick k of E
  // (uniform routing, independent tokens): E * (1 - (1 - k/E)^tokens).
  const double e = m.num_experts;
  const double k = std::min<double>(m.experts_per_token, e);
  const double n = static_cast<double>(std::max<int64_t>(tokens, 1));
  const double touched = e * (1.0 - std::pow(1.0 - k / e, n));
  return dense_weight_bytes_per_gpu_ + expert_bytes_per_gpu_ * touched;
}

double CostModel::AllReduceTime(int64_t tokens) const {
  if (hw_.tp <= 1) return 0.0;
  const double n_allreduce = 2.0 * hw_.model.num_layers;
  return n_allreduce * params_.allreduce_latency_s +
         allreduce_s_per_token_ * static_cast<double>(tokens);
}

double CostModel::StepTime(const StepShape& s) const {
  const double flops = StepFlops(s);
  const double compute_s = flops > 0 ? flops / (peak_rate_ * Mfu(s.tokens)) : 0.0;
  const double memory_s =
      (WeightBytesPerGpu(s.tokens) +
       kv_weight_ratio_ * kv_bytes_per_token_per_gpu_ * static_cast<double>(s.kv_tokens_read)) /
      bw_rate_;
  const double comm_s = allreduce_s_per_token_ * static_cast<double>(s.tokens);
  const double seqs_s = params_.seq_overhead_s * static_cast<double>(s.seqs);
  const double mixed_s =
      s.prefill_seqs > 0 ? hw_.model.num_layers * params_.prefill_layer_overhead_s : 0.0;
  return (fixed_s_ + seqs_s + comm_s + mixed_s + std::max(compute_s, memory_s)) * params_.slowdown;
}

double CostModel::PrefillTime(int64_t uncached, int64_t cached) const {
  StepShape s;
  AddSequence(s, cached, uncached, true);
  return StepTime(s);
}

double CostModel::DecodeStepTime(int64_t batch, int64_t context) const {
  // All `batch` sequences in one AddSequence: the diagnosis prices Little's-law
  // batches, which a window far shorter than its requests makes huge (a loop over
  // them hung `ttft diagnose`).
  StepShape s;
  AddSequence(s, context, 1, true, std::max<int64_t>(batch, 0));
  return StepTime(s);
}

}  // namespace ttft
