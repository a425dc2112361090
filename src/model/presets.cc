// Model and GPU presets (ttft/model.h).
//
// Model shapes are copied from each model's published config.json (Hugging Face
// hub; also mirrored in inference-sim/inference-sim model_configs/ and Vidur's
// vidur/config/model_config.py). GPU figures are dense peaks from NVIDIA's data
// sheets (H100 SXM: 2430615; the sparse figures some pages quote are 2x these).
// `memory_gb` is what the driver reports as total (torch.cuda.mem_get_info):
// 81,559 MiB on an H100 80GB HBM3, 81,920 MiB on an A100 80GB, 143,771 MiB on an
// H200; vLLM's gpu_memory_utilization is a fraction of that figure.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "ttft/model.h"

namespace ttft {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

const std::vector<ModelSpec>& Models() {
  // name, hf_id, layers, hidden, heads, kv_heads, head_dim, ffn, vocab, tied,
  // experts, experts_per_token, max_position_embeddings
  static const std::vector<ModelSpec> kModels = {
      {"llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct", 80, 8192, 64, 8, 128, 28672, 128256,
       false, 0, 0, 131072},
      {"llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct", 80, 8192, 64, 8, 128, 28672, 128256,
       false, 0, 0, 131072},
      {"llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", 32, 4096, 32, 8, 128, 14336, 128256,
       false, 0, 0, 131072},
      {"llama-2-70b", "meta-llama/Llama-2-70b-hf", 80, 8192, 64, 8, 128, 28672, 32000, false, 0, 0,
       4096},
      {"llama-2-7b", "meta-llama/Llama-2-7b-hf", 32, 4096, 32, 32, 128, 11008, 32000, false, 0, 0,
       4096},
      {"codellama-34b", "codellama/CodeLlama-34b-Instruct-hf", 48, 8192, 64, 8, 128, 22016, 32000,
       false, 0, 0, 16384},
      {"mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", 32, 4096, 32, 8, 128, 14336, 32000, false, 8,
       2, 32768},
      {"qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct", 28, 3584, 28, 4, 128, 18944, 152064, false, 0, 0,
       32768},
  };
  return kModels;
}

const std::vector<GpuSpec>& Gpus() {
  static const std::vector<GpuSpec> kGpus = {
      {"h100-sxm", 989.5, 1979.0, 3.35, 81559 * kMiB / 1e9},
      {"h200-sxm", 989.5, 1979.0, 4.8, 143771 * kMiB / 1e9},
      {"a100-80gb", 312.0, 0.0, 2.039, 81920 * kMiB / 1e9},
  };
  return kGpus;
}

}  // namespace

std::string_view ToString(Dtype d) { return d == Dtype::kFp8 ? "fp8" : "bf16"; }

Result<Dtype> ParseDtype(std::string_view s) {
  std::string l = Lower(s);
  if (l == "bf16" || l == "bfloat16" || l == "fp16" || l == "float16" || l == "half") {
    return Dtype::kBf16;
  }
  if (l == "fp8" || l == "float8" || l == "fp8_e4m3") return Dtype::kFp8;
  return Status::Invalid(fmt::format("unknown dtype '{}' (known: bf16, fp16, fp8)", s));
}

double ModelSpec::LayerParams() const {
  const double h = hidden_size;
  const double attn = h * num_heads * head_dim + 2.0 * h * num_kv_heads * head_dim +
                      static_cast<double>(num_heads) * head_dim * h;
  const double experts = num_experts > 0 ? num_experts : 1;
  const double mlp = 3.0 * h * intermediate_size * experts;
  const double router = num_experts > 0 ? h * num_experts : 0;
  return attn + mlp + router + 2.0 * h;
}

double ModelSpec::ActiveLayerParams() const {
  if (num_experts == 0) return LayerParams();
  const double h = hidden_size;
  const double attn = h * num_heads * head_dim + 2.0 * h * num_kv_heads * head_dim +
                      static_cast<double>(num_heads) * head_dim * h;
  return attn + 3.0 * h * intermediate_size * experts_per_token + h * num_experts + 2.0 * h;
}

double ModelSpec::EmbeddingParams() const { return static_cast<double>(vocab_size) * hidden_size; }

double ModelSpec::TotalParams() const {
  return num_layers * LayerParams() + EmbeddingParams() * (tie_embeddings ? 1 : 2) + hidden_size;
}

Result<ModelSpec> FindModel(std::string_view name) {
  std::string l = Lower(name);
  for (const ModelSpec& m : Models()) {
    if (l == m.name || l == Lower(m.hf_id)) return m;
  }
  // Accept the HF ids of checkpoints that share a preset's shape.
  if (l.find("llama-3.3-70b") != std::string::npos) return *FindModel("llama-3.3-70b");
  if (l.find("llama-3.1-70b") != std::string::npos) return *FindModel("llama-3.1-70b");
  if (l.find("llama-3.1-8b") != std::string::npos) return *FindModel("llama-3.1-8b");
  return Status::NotFound(
      fmt::format("unknown model '{}' (known: {})", name, fmt::join(ModelNames(), ", ")));
}

Result<GpuSpec> FindGpu(std::string_view name) {
  std::string l = Lower(name);
  if (l == "h100" || l == "h100-sxm-80gb-hbm3" || l == "h100-sxm-80gb") l = "h100-sxm";
  if (l == "h200" || l == "h200-sxm-141gb") l = "h200-sxm";
  if (l == "a100" || l == "a100-sxm-80gb" || l == "a100-80g") l = "a100-80gb";
  for (const GpuSpec& g : Gpus()) {
    if (l == g.name) return g;
  }
  return Status::NotFound(
      fmt::format("unknown GPU '{}' (known: {})", name, fmt::join(GpuNames(), ", ")));
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> out;
  for (const auto& m : Models()) out.push_back(m.name);
  return out;
}

std::vector<std::string> GpuNames() {
  std::vector<std::string> out;
  for (const auto& g : Gpus()) out.push_back(g.name);
  return out;
}

double HardwareConfig::WeightBytes() const {
  // Quantised checkpoints keep embeddings and the LM head in 16 bits.
  const double layer = model.num_layers * model.LayerParams() * BytesPerElement(weight_dtype);
  const double emb = model.EmbeddingParams() * (model.tie_embeddings ? 1 : 2) * 2.0;
  return layer + emb;
}

double HardwareConfig::KvBytesPerToken() const {
  return model.KvElementsPerToken() * BytesPerElement(kv_dtype);
}

double HardwareConfig::PeakFlopsPerGpu() const {
  return (weight_dtype == Dtype::kFp8 ? gpu.fp8_tflops : gpu.bf16_tflops) * 1e12;
}

Result<HardwareConfig> MakeHardwareConfig(std::string_view model, std::string_view gpu, Dtype dtype,
                                          int tp) {
  HardwareConfig hw;
  TTFT_ASSIGN_OR_RETURN(hw.model, FindModel(model));
  TTFT_ASSIGN_OR_RETURN(hw.gpu, FindGpu(gpu));
  if (tp < 1 || tp > 8) return Status::Invalid(fmt::format("tp: must be 1..8, got {}", tp));
  if (hw.model.num_heads % tp != 0) {
    return Status::Invalid(fmt::format("tp: {} does not divide {}'s {} attention heads", tp,
                                       hw.model.name, hw.model.num_heads));
  }
  if (dtype == Dtype::kFp8 && hw.gpu.fp8_tflops <= 0) {
    return Status::Invalid(fmt::format("dtype: {} has no FP8 tensor cores", hw.gpu.name));
  }
  hw.tp = tp;
  hw.weight_dtype = dtype;
  hw.kv_dtype = dtype;
  return hw;
}

}  // namespace ttft
