// `ttft cost`: the cost model's view of one configuration, with the seed's two
// reference numbers (prefill of 1,000 uncached tokens after a 5,000-token cached
// prefix ~0.07 s; 6,000 uncached ~0.42 s) for the seed configuration.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <iostream>

#include "cli/commands.h"
#include "ttft/calibration.h"
#include "ttft/engine.h"
#include "ttft/format.h"
#include "ttft/model.h"

namespace ttft::cli {

Runner RegisterCost(CLI::App& app) {
  struct Opts {
    std::string model = "llama-3.3-70b", gpu = "h100-sxm", dtype = "fp8", format = "text";
    std::string calibration;
    int tp = 2;
    double mfu = CostParams{}.prefill_mfu;
    int64_t batch = 0, context_tokens = 1000;  // a decode step of this shape, when given
    bool list = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--model", o->model, "Model preset or Hugging Face id")->capture_default_str();
  app.add_option("--gpu", o->gpu, "GPU preset")->capture_default_str();
  app.add_option("--dtype", o->dtype, "bf16 or fp8")->capture_default_str();
  app.add_option("--tp", o->tp, "Tensor-parallel degree")
      ->check(Integer<int>())
      ->capture_default_str();
  CLI::Option* mfu =
      app.add_option("--prefill-mfu", o->mfu, "Effective prefill MFU")->capture_default_str();
  app.add_option("--calibration", o->calibration,
                 "Calibration profile (ttft calibrate): its cost parameters instead of the "
                 "fleet's defaults (--prefill-mfu, when given, still wins)");
  app.add_option("--batch", o->batch, "Also price a decode step of this many sequences")
      ->check(Integer(1, uint64_t{1} << 20));
  app.add_option("--context", o->context_tokens, "... each with this many tokens of context")
      ->check(Integer(0, uint64_t{1} << 24))
      ->capture_default_str();
  app.add_flag("--list", o->list, "List the model and GPU presets and exit");
  app.add_option("--format", o->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return [o, mfu]() -> Status {
    if (o->list) {
      if (o->format == "json") {
        std::cout << nlohmann::json{{"models", ModelNames()}, {"gpus", GpuNames()}}.dump(2) << "\n";
        return Status::Ok();
      }
      std::cout << "models (a preset name or its Hugging Face id):\n";
      for (const std::string& m : ModelNames()) {
        TTFT_ASSIGN_OR_RETURN(ModelSpec spec, FindModel(m));
        std::cout << fmt::format("  {:<22} {}\n", m, spec.hf_id);
      }
      std::cout << "gpus:\n";
      for (const std::string& g : GpuNames()) std::cout << "  " << g << "\n";
      return Status::Ok();
    }
    TTFT_ASSIGN_OR_RETURN(Dtype dtype, ParseDtype(o->dtype));
    TTFT_ASSIGN_OR_RETURN(HardwareConfig hw, MakeHardwareConfig(o->model, o->gpu, dtype, o->tp));
    CostParams params;
    if (!o->calibration.empty()) {
      TTFT_ASSIGN_OR_RETURN(CalibrationProfile prof, ReadCalibrationProfile(o->calibration));
      params = prof.cost;
    }
    if (mfu->count() > 0 || o->calibration.empty()) params.prefill_mfu = o->mfu;
    EngineConfig ec;
    ec.hardware = hw;
    ec.cost = params;
    ec.max_model_len = 8192;
    TTFT_RETURN_IF_ERROR(
        ec.Validate().WithContext(o->calibration.empty() ? "--prefill-mfu" : o->calibration));
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
          {"calibration",
           o->calibration.empty() ? nlohmann::json() : nlohmann::json(o->calibration)},
      };
      if (o->batch > 0) {
        j["decode_step"] = {{"batch", o->batch},
                            {"context_tokens", o->context_tokens},
                            {"step_s", cm.DecodeStepTime(o->batch, o->context_tokens)}};
      }
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
        "prefill 1,000 uncached tokens after a 5,000-token cached prefix: {} s "
        "(seed: ~0.07 s)\n"
        "prefill 6,000 uncached tokens:                                   {} s "
        "(seed: ~0.42 s)\n"
        "decode step, 1 sequence at 1,000 tokens of context:             {} ms\n"
        "decode step, 32 sequences at 2,000 tokens of context:           {} ms\n",
        numfmt::Fixed(cached, 3), numfmt::Fixed(cold, 3),
        numfmt::Fixed(cm.DecodeStepTime(1, 1000) * 1e3, 1),
        numfmt::Fixed(cm.DecodeStepTime(32, 2000) * 1e3, 1));
    if (o->batch > 0) {
      std::cout << fmt::format(
          "decode step, {} sequences at {} tokens of context: {} ms\n", o->batch, o->context_tokens,
          numfmt::Fixed(cm.DecodeStepTime(o->batch, o->context_tokens) * 1e3, 1));
    }
    std::cout << (o->calibration.empty()
                      ? std::string("cost parameters: the fleet's defaults (docs/cost-model.md)\n")
                      : "cost parameters: " + escape::Terminal(o->calibration) + "\n");
    return Status::Ok();
  };
}

}  // namespace ttft::cli
