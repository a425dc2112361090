// `ttft calibrate MEASUREMENTS... --out profile.yaml`: fits the cost model's free
// parameters to measurement tables and `vllm bench serve` results (ttft/calibrate.h)
// and writes a calibration profile (ttft/calibration.h).
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "ttft/calibrate.h"
#include "ttft/dataset.h"
#include "ttft/format.h"
#include "ttft/input.h"

namespace ttft::cli {

Runner RegisterCalibrate(CLI::App& app) {
  struct Opts {
    std::vector<std::string> inputs, free;
    std::string out, format = "text", model, gpu, prior = "joint";
    int tp = 0;
    uint64_t seed = 1;
    int seeds = CalibrateOptions{}.seeds;
    int max_evaluations = CalibrateOptions{}.max_evaluations;
    bool no_loo = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("MEASUREMENTS", o->inputs,
                 "Measurement tables (CSV, columns of ../shared/data/vllm-h100) and `vllm bench "
                 "serve --save-result` files (*.json)")
      ->required();
  app.add_option("--out", o->out, "Write the calibration profile (YAML) here")->required();
  app.add_option("--free", o->free,
                 "Parameters to fit (default: decode_mbu,kv_mbu,seq_overhead_s,front_end_s,"
                 "prefill_layer_overhead_s)")
      ->delimiter(',');
  app.add_option("--model", o->model, "Bench results: the model (default: their model_id)");
  app.add_option("--gpu", o->gpu, "Bench results: the GPU (not recorded by vllm bench serve)");
  app.add_option("--tp", o->tp, "Bench results: the tensor-parallel degree (default: 1)")
      ->check(Integer(1, 64));
  app.add_option("--seed", o->seed, "Seed of the simulations")
      ->check(Integer<uint64_t>())
      ->capture_default_str();
  app.add_option("--seeds", o->seeds,
                 "Seeds averaged per evaluation (as ttft validate --seeds); the cost grows with it")
      ->check(Integer(1, 100))
      ->capture_default_str();
  app.add_option("--max-evaluations", o->max_evaluations, "Simulation budget of the main fit")
      ->check(Integer(1, 100000))
      ->capture_default_str();
  app.add_flag("--no-leave-one-out", o->no_loo, "Skip the leave-one-run-out error (faster)");
  app.add_option("--prior", o->prior,
                 "Start (and value kept when unidentified): joint (the H100 joint calibration) "
                 "or fleet (the fleet's defaults, fitted on no data of a second model: for a "
                 "fair hold-out)")
      ->check(CLI::IsMember({"joint", "fleet"}))
      ->capture_default_str();
  app.add_option("--format", o->format, "Report on standard output: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return [o]() -> Status {
    BenchAssumptions a;
    a.model = o->model;
    a.gpu = o->gpu;
    a.tp = o->tp;
    // A file given twice (or a byte-identical copy) is read once, with a warning: its
    // rows would otherwise all be reported as repeating themselves.
    ReadReport repeated;
    const std::vector<std::string> inputs = DropRepeatedInputs(o->inputs, repeated);
    for (const std::string& w : repeated.warnings)
      std::fprintf(stderr, "ttft calibrate: warning: %s\n", escape::Terminal(w).c_str());
    TTFT_ASSIGN_OR_RETURN(auto rows, ReadCalibrationInputs(inputs, a));
    CalibrateOptions opt;
    if (!o->free.empty()) opt.free = o->free;
    opt.seed = o->seed;
    opt.seeds = o->seeds;
    opt.max_evaluations = o->max_evaluations;
    opt.leave_one_run_out = !o->no_loo;
    if (o->prior == "fleet") opt.start = CostParams{};
    TTFT_ASSIGN_OR_RETURN(CalibrationResult res, Calibrate(rows, opt));
    TTFT_RETURN_IF_ERROR(WriteOutput(CalibrationResultYaml(res), o->out));
    if (o->format == "json") {
      nlohmann::json params = nlohmann::json::object();
      for (const auto& p : res.params) {
        params[p.name] = {{"value", p.value},
                          {"sourced", p.sourced},
                          {"identified", p.identified},
                          {"sensitivity", p.sensitivity},
                          {"traded_with", p.traded_with}};
      }
      auto m = [](const StageMetrics& s) {
        return nlohmann::json{{"ttft_mean", s.ttft_mean_ms},
                              {"ttft_p90", s.ttft_p90_ms},
                              {"e2e_mean", s.e2e_mean_ms},
                              {"decode_ms_per_token", s.decode_ms_per_token}};
      };
      nlohmann::json j{
          {"profile", o->out},       {"data", res.data},
          {"params", params},        {"in_sample_mape", m(res.in_sample)},
          {"rows", res.rows},        {"leave_one_run_out_mape", m(res.leave_one_run_out)},
          {"runs", res.runs},        {"evaluations", res.evaluations},
          {"warnings", res.warnings}};
      std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::cout << CalibrationResultText(res) << "wrote " << o->out << "\n";
    }
    return Status::Ok();
  };
}

}  // namespace ttft::cli
