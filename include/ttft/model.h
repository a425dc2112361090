// -----------------------------------------------------------------------------
// File: ttft/model.h
// -----------------------------------------------------------------------------
//
// Model and GPU presets, and the roofline cost model of one engine step.
//
// A step's time is
//
//   t = step_overhead_s + n_layers * layer_overhead_s + seqs * seq_overhead_s
//       + n_allreduce * (allreduce_latency_s + message_bytes * 2 (tp-1)/tp / allreduce_bus_bw)
//       + [a prefill chunk in the step] n_layers * prefill_layer_overhead_s
//       + max(flops / (tp * peak_flops * mfu(tokens)),
//             weight_bytes / (hbm_bw * decode_mbu) + kv_bytes / (hbm_bw * kv_mbu))
//   mfu(n) = prefill_mfu * n / (n + prefill_n_half_tokens)
//
// where flops counts the linear layers (2 * active params per token), the causal
// attention term (4 * layers * q_heads * head_dim per query-key pair, so it grows with
// cached context), and the LM head for each sequence that samples a token; bytes are
// per GPU: the weights read once per step (for a mixture of experts, only the experts
// the step's tokens are routed to: E * (1 - (1 - k/E)^tokens) of them per layer, in
// expectation under uniform routing) and the KV cache read by attention. mfu(n) is the
// GEMM efficiency curve: small steps cannot fill the tensor cores. The tensor-parallel
// all-reduces (2 per layer, of the step's activations in 16 bits) are a latency plus a
// ring all-reduce's bytes over the bus bandwidth, not overlapped with compute (as in
// vLLM). The values and their sources are in docs/cost-model.md and docs/calibration.md.
//
// Example:
//
//   auto cfg = ttft::MakeHardwareConfig("llama-3.3-70b", "h100-sxm", ttft::Dtype::kFp8, 2);
//   ttft::CostModel cm(*cfg, ttft::CostParams{});
//   double s = cm.PrefillTime(/*uncached_tokens=*/1000, /*cached_tokens=*/5000);  // ~0.08
//
// Thread safety: CostModel is immutable after construction.

#ifndef TTFT_MODEL_H_
#define TTFT_MODEL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/core.h"

namespace ttft {

enum class Dtype : uint8_t { kBf16, kFp8 };
std::string_view ToString(Dtype d);
Result<Dtype> ParseDtype(std::string_view s);
inline double BytesPerElement(Dtype d) { return d == Dtype::kFp8 ? 1.0 : 2.0; }

// A transformer's shape, from its published config.json.
struct ModelSpec {
  std::string name;   // preset key, e.g. "llama-3.3-70b"
  std::string hf_id;  // e.g. "meta-llama/Llama-3.3-70B-Instruct"
  int num_layers = 0;
  int hidden_size = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int intermediate_size = 0;
  int vocab_size = 0;
  bool tie_embeddings = false;
  // Mixture of experts: 0 experts means dense. FLOPs use the active experts per
  // token; weight reads use the experts the step's tokens touch (CostModel).
  int num_experts = 0;
  int experts_per_token = 0;
  int max_position_embeddings = 0;

  // Parameters in the per-layer linear maps and norms (all experts).
  double LayerParams() const;
  // Parameters of one expert's MLP in one layer (the whole MLP for a dense model).
  double ExpertParams() const { return 3.0 * hidden_size * static_cast<double>(intermediate_size); }
  // Linear parameters touched by one token (active experts only).
  double ActiveLayerParams() const;
  double EmbeddingParams() const;  // one vocab x hidden matrix
  double TotalParams() const;      // layers + embedding + LM head (unless tied)
  // K and V for one token over all layers, in elements.
  double KvElementsPerToken() const { return 2.0 * num_layers * num_kv_heads * head_dim; }
};

struct GpuSpec {
  std::string name;        // preset key, e.g. "h100-sxm"
  double bf16_tflops = 0;  // dense peak
  double fp8_tflops = 0;   // dense peak (0: no FP8 tensor cores)
  double hbm_tbs = 0;      // memory bandwidth, TB/s
  double memory_gb = 0;    // HBM capacity, GB (1e9 bytes)
};

// Known presets. Keys are lower-case; lookup is case-insensitive.
Result<ModelSpec> FindModel(std::string_view name_or_hf_id);
Result<GpuSpec> FindGpu(std::string_view name);
std::vector<std::string> ModelNames();
std::vector<std::string> GpuNames();

// A model on a GPU type with a tensor-parallel degree and dtypes.
struct HardwareConfig {
  ModelSpec model;
  GpuSpec gpu;
  int tp = 1;
  Dtype weight_dtype = Dtype::kBf16;
  Dtype kv_dtype = Dtype::kBf16;

  double WeightBytes() const;      // whole model, all ranks
  double KvBytesPerToken() const;  // all ranks
  double PeakFlopsPerGpu() const;  // for weight_dtype
};

// Validates and builds a HardwareConfig: TP must divide the attention heads and be
// 1..8; the GPU must support the dtype. kv_dtype defaults to the weight dtype.
Result<HardwareConfig> MakeHardwareConfig(std::string_view model, std::string_view gpu, Dtype dtype,
                                          int tp);

// Efficiencies and fixed overheads. The defaults are the calibrated values
// (docs/calibration.md gives each value's source and fit; docs/cost-model.md the model).
struct CostParams {
  double prefill_mfu = 0.62;          // plateau of mfu(n): large GEMMs, fraction of dense peak
  double prefill_n_half_tokens = 80;  // tokens in a step at which mfu(n) is half the plateau
  double decode_mbu = 0.69;           // weight streaming: fraction of peak HBM bandwidth
  double kv_mbu = 0.69;               // attention's KV-cache reads: fraction of peak HBM bw
  // The same under grouped-query attention (num_kv_heads < num_heads, MQA included),
  // where one KV head serves several query heads and a GPU holds fewer KV heads to
  // spread over its SMs (decode attention's parallelism is batch x KV heads x splits:
  // Dao et al., "Flash-Decoding for long-context inference", 2023). 0 ties it to
  // kv_mbu, the default: freed in the joint fit of an MHA and a GQA model it lands at
  // 0.914 against MHA's 0.917 (docs/calibration.md), and tied, a fit on one kind
  // transfers to the other. A team with runs of both kinds can free it.
  double gqa_kv_mbu = 0;
  double step_overhead_s = 0.3e-3;  // scheduler + launch per engine step
  double layer_overhead_s = 0.0;    // per layer per step
  // Per layer, on a step that carries a prefill chunk (a sequence computing more than
  // one token): such a mixed batch does not replay the full-step CUDA graph that pure
  // decode batches use (vLLM V1's FULL_AND_PIECEWISE mode), attention runs between
  // graph pieces.
  double prefill_layer_overhead_s = 0.0;
  double seq_overhead_s = 12e-6;       // per sequence per step: input prep, sampling, output
  double allreduce_latency_s = 12e-6;  // per all-reduce call when tp > 1 (2 per layer)
  double allreduce_bus_gbps = 320;     // NCCL ring bus bandwidth, GB/s (1e9 bytes)
  double front_end_s = 0.026;          // per request: HTTP, IPC, first-token streaming
  // Per prompt token, on top of front_end_s: the API server's tokenisation.
  double front_end_s_per_prompt_token = 0.0;
  double slowdown = 1.0;  // multiplies the whole step (a throttled GPU)

  // The KV-read efficiency of an attention kind (`gqa`: num_kv_heads < num_heads).
  double KvMbu(bool gqa) const { return gqa && gqa_kv_mbu > 0 ? gqa_kv_mbu : kv_mbu; }

  // The front end's time for one request (client send to engine queue, plus the
  // first token's way back): front_end_s + prompt_tokens * front_end_s_per_prompt_token.
  double FrontEndTime(int64_t prompt_tokens) const {
    return front_end_s + static_cast<double>(prompt_tokens) * front_end_s_per_prompt_token;
  }
};

// What one engine step computes. Built by the engine's scheduler.
struct StepShape {
  int64_t tokens = 0;          // tokens computed this step (prefill chunks + decodes)
  double attention_pairs = 0;  // sum over sequences of query-key pairs (causal)
  int64_t kv_tokens_read = 0;  // sum over sequences of context attended to
  int64_t logit_seqs = 0;      // sequences that sample a token this step
  int64_t seqs = 0;            // sequences in the batch
  int64_t prefill_seqs = 0;    // sequences computing more than one token (prefill chunks)
};

class CostModel {
 public:
  CostModel(HardwareConfig hw, CostParams params);

  // Seconds for one engine step. REQUIRES: shape.seqs > 0.
  double StepTime(const StepShape& shape) const;

  // Adds the contribution of `copies` alike sequences (one by default) to `shape`:
  // each computes `new_tokens` after `context_tokens` already in the KV cache, and
  // `samples` when it emits a token. O(1) in `copies`; the same shape as `copies`
  // calls while the sums stay below 2^53. REQUIRES: copies >= 0.
  static void AddSequence(StepShape& shape, int64_t context_tokens, int64_t new_tokens,
                          bool samples, int64_t copies = 1);

  // A lone prefill of `uncached` tokens after `cached` cached ones, in one step.
  double PrefillTime(int64_t uncached, int64_t cached) const;
  // One decode step of `batch` sequences with `context` tokens each, in O(1).
  // REQUIRES: batch >= 1, context >= 0, batch * (context + 1) < 2^63.
  double DecodeStepTime(int64_t batch, int64_t context) const;

  // FLOPs of a step (for reporting).
  double StepFlops(const StepShape& shape) const;
  // mfu(n) for a step of n tokens.
  double Mfu(int64_t tokens) const;
  // Weight bytes one GPU reads in a step of `tokens` tokens (MoE: experts touched).
  double WeightBytesPerGpu(int64_t tokens) const;
  // The tensor-parallel all-reduces of a step of `tokens` tokens (0 at tp = 1).
  double AllReduceTime(int64_t tokens) const;

  const HardwareConfig& hardware() const { return hw_; }
  const CostParams& params() const { return params_; }
  void set_slowdown(double factor) { params_.slowdown = factor; }

 private:
  HardwareConfig hw_;
  CostParams params_;
  double flops_per_token_;             // 2 * active linear params
  double flops_per_pair_;              // 4 * layers * heads * head_dim
  double flops_per_logit_seq_;         // 2 * vocab * hidden
  double dense_weight_bytes_per_gpu_;  // everything but the experts' MLPs (all of a dense model)
  double expert_bytes_per_gpu_;        // one expert in every layer (MoE only)
  double kv_bytes_per_token_per_gpu_;
  double peak_rate_;              // FLOP/s across the TP group at 100%
  double bw_rate_;                // bytes/s per GPU, at decode_mbu (weights)
  double kv_weight_ratio_;        // decode_mbu / (gqa_)kv_mbu: a KV byte's cost in weight bytes
  double allreduce_s_per_token_;  // bandwidth part of one step's all-reduces, per token
  double fixed_s_;
};

}  // namespace ttft

#endif  // TTFT_MODEL_H_
