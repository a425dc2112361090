// `ttft cost`: the cost model's view of one configuration, with the seed's two
// reference numbers (prefill of 1,000 uncached tokens after a 5,000-token cached
// prefix ~0.07 s; 6,000 uncached ~0.42 s) for the seed configuration.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <iostream>

#include "cli/commands.h"
#include "ttft/engine.h"
#include "ttft/model.h"

namespace ttft::cli {

Runner RegisterCost(CLI::App& app) {
  struct Opts {
    std::string model = "llama-3.3-70b", gpu = "h100-sxm", dtype = "fp8", format = "text";
    int tp = 2;
    double mfu = CostParams{}.prefill_mfu;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--model", o->model, "Model preset or Hugging Face id")->capture_default_str();
  app.add_option("--gpu", o->gpu, "GPU preset")->capture_default_str();
  app.add_option("--dtype", o->dtype, "bf16 or fp8")->capture_default_str();
  app.add_option("--tp", o->tp, "Tensor-parallel degree")->capture_default_str();
  app.add_option("--prefill-mfu", o->mfu, "Effective prefill MFU")->capture_default_str();
  app.add_option("--format", o->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return [o]() -> Status {
    TTFT_ASSIGN_OR_RETURN(Dtype dtype, ParseDtype(o->dtype));
    TTFT_ASSIGN_OR_RETURN(HardwareConfig hw, MakeHardwareConfig(o->model, o->gpu, dtype, o->tp));
    CostParams params;
    params.prefill_mfu = o->mfu;
    EngineConfig ec;
    ec.hardware = hw;
    ec.cost = params;
    ec.max_model_len = 8192;
    TTFT_RETURN_IF_ERROR(ec.Validate().WithContext("--prefill-mfu"));
    CostModel cm(hw, params);
    auto blocks = ec.KvCapacityBlocks();
    const double cached = cm.PrefillTime(1000, 5000);
    const double cold = cm.PrefillTime(6000, 0);
    const double eff_pflops = hw.tp * hw.PeakFlopsPerGpu() * params.prefill_mfu / 1e15;
    if (o->format == "json") {
      nlohmann::json j{
          {"model", hw.model.name},
          {"gpu", hw.gpu.name},
          {"dtype", std::string(ToString(dtype))},
          {"tp", hw.tp},
          {"effective_prefill_pflops", eff_pflops},
          {"weights_gb_per_gpu", hw.WeightBytes() / hw.tp / 1e9},
          {"kv_bytes_per_token", hw.KvBytesPerToken()},
          {"kv_capacity_tokens", blocks.ok() ? nlohmann::json(*blocks * 16) : nlohmann::json()},
          {"prefill_1000_after_5000_cached_s", cached},
          {"prefill_6000_uncached_s", cold},
          {"decode_step_batch1_ctx1000_s", cm.DecodeStepTime(1, 1000)},
          {"decode_step_batch32_ctx2000_s", cm.DecodeStepTime(32, 2000)},
      };
      std::cout << j.dump(2) << "\n";
      return Status::Ok();
    }
    std::cout << fmt::format(
        "{} {} on {} x{} (TP{}): {:.2f} PFLOP/s effective prefill (MFU {:.2f}), "
        "{:.1f} GB weights per GPU, {:.0f} KiB KV per token\n",
        hw.model.name, ToString(dtype), hw.gpu.name, hw.tp, hw.tp, eff_pflops, params.prefill_mfu,
        hw.WeightBytes() / hw.tp / 1e9, hw.KvBytesPerToken() / 1024);
    if (blocks.ok()) {
      std::cout << fmt::format("KV cache at gpu_memory_utilization 0.9: {} tokens\n", *blocks * 16);
    } else {
      std::cout << "KV cache: " << blocks.status().message() << "\n";
    }
    std::cout << fmt::format(
        "prefill 1,000 uncached tokens after a 5,000-token cached prefix: {:.3f} s "
        "(seed: ~0.07 s)\n"
        "prefill 6,000 uncached tokens:                                   {:.3f} s "
        "(seed: ~0.42 s)\n"
        "decode step, 1 sequence at 1,000 tokens of context:             {:.1f} ms\n"
        "decode step, 32 sequences at 2,000 tokens of context:           {:.1f} ms\n",
        cached, cold, cm.DecodeStepTime(1, 1000) * 1e3, cm.DecodeStepTime(32, 2000) * 1e3);
    return Status::Ok();
  };
}

}  // namespace ttft::cli
