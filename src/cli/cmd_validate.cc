// `ttft validate DATA.csv`: measured versus simulated TTFT, E2E, decode time per output
// token and throughput for every row of a vLLM measurement table (ttft/validate.h).
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "ttft/calibration.h"
#include "ttft/validate.h"

namespace ttft::cli {

Runner RegisterValidate(CLI::App& app) {
  struct Opts {
    std::string path, format = "text", calibration;
    uint64_t seed = 1;
    double timeout_s = 300;
    int seeds = ValidateOptions{}.repeats;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("DATA", o->path,
                 "Measurement table (CSV, columns of ../shared/data/vllm-h100/calibration.csv)")
      ->required();
  app.add_option("--format", o->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--seed", o->seed, "Seed for prompts and arrivals")
      ->check(Integer<uint64_t>())
      ->capture_default_str();
  app.add_option("--seeds", o->seeds, "Simulations per row (seeds seed..seed+N-1), averaged")
      ->check(Integer(1, 1000))
      ->capture_default_str();
  app.add_option("--client-timeout", o->timeout_s, "Client timeout of the load tool, s")
      ->capture_default_str();
  app.add_option("--calibration", o->calibration,
                 "Calibration profile (ttft calibrate) to validate instead of the defaults");
  return [o]() -> Status {
    TTFT_ASSIGN_OR_RETURN(auto rows, ReadMeasurements(o->path));
    ValidateOptions opt;
    if (!o->calibration.empty()) {
      TTFT_ASSIGN_OR_RETURN(CalibrationProfile prof, ReadCalibrationProfile(o->calibration));
      for (const std::string& k : prof.set) {  // unset keys keep VllmH100Calibration()'s
        const CostParamField* f = FindCostParamField(k);
        opt.cost.*(f->field) = prof.cost.*(f->field);
      }
      opt.async_scheduling = prof.async_scheduling;  // rows that leave it empty take it
    }
    opt.seed = o->seed;
    opt.client_timeout_s = o->timeout_s;
    opt.repeats = o->seeds;
    TTFT_ASSIGN_OR_RETURN(ValidationReport rep, RunValidation(rows, opt));
    if (o->format == "json") {
      // Cells quoted in skip reasons may be invalid UTF-8: replaced, not thrown on.
      std::cout << ValidationJson(rep).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    } else {
      std::cout << ValidationText(rep);
    }
    return Status::Ok();
  };
}

}  // namespace ttft::cli
