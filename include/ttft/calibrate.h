// -----------------------------------------------------------------------------
// File: ttft/calibrate.h
// -----------------------------------------------------------------------------
//
// `ttft calibrate`: fits the cost model's free parameters (docs/cost-model.md) to a
// team's own measurements of vLLM, simulated as `ttft validate` simulates them, and
// reports the fit's quality.
//
// Inputs: measurement tables (the CSV format of ../shared/data/vllm-h100, ttft/validate.h)
// and the result files of `vllm bench serve --save-result` (JSON; keys as written by
// vllm/benchmarks/serve.py: duration, completed, failed, total_input_tokens,
// total_output_tokens, request_rate, max_concurrency, num_prompts, model_id,
// mean/median/p99_ttft_ms, p90_ttft_ms when asked for, mean_tpot_ms, mean/p99_e2el_ms).
// A bench result does not record the engine: the model comes from --model or its
// model_id, the GPU and TP from flags, the engine settings are vLLM's defaults
// (ApplyVllmDefaults), and its workload is taken as `num_prompts` distinct prompts of the
// mean input length (no prefix reuse: vLLM's random dataset) with the mean output length,
// sent as a Poisson process at request_rate; each assumption is listed per row.
//
// Fit: NLopt's Subplex (a derivative-free simplex method) over the free parameters,
// each scaled by its start, to 0.3 % of that scale or an evaluation budget;
// objective = MAPE(TTFT mean) + MAPE(E2E mean) + MAPE(decode ms/token) over the rows not
// measured overloaded, each row's error capped at 100 % (a row the simulation overloads
// must not drown the others), each evaluation the mean of `seeds` seeds (deterministic).
// Quality: the in-sample MAPE, and leave-one-run-out (each run fitted without it,
// warm-started, then scored).
// Identifiability, by profile: a fitted parameter held 25 % off (either way) while the
// others are refitted, whose objective then rises by less than 0.5 percentage points, is
// not identified by the data (the others make up for it, or nothing sees it): it is
// warned about, with the parameter that made up for it, and keeps its sourced value;
// the others are refitted with it.
//
// Thread safety: functions are re-entrant.

#ifndef TTFT_CALIBRATE_H_
#define TTFT_CALIBRATE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/calibration.h"
#include "ttft/core.h"
#include "ttft/model.h"
#include "ttft/validate.h"

namespace ttft {

// What a bench result does not say, from the command line. Empty/0: unknown.
struct BenchAssumptions {
  std::string model;  // overrides the JSON's model_id
  std::string gpu;    // required for a bench result
  int tp = 0;         // 0: vLLM's default, 1
};

// One `vllm bench serve` result file as a measurement row (experiment = `name`).
// Errors name "name: field: what" (and the line of a JSON syntax error).
Result<MeasurementRow> ParseBenchServeJson(std::string_view json, const std::string& name,
                                           const BenchAssumptions& assume);

// Reads each path: *.json as a bench result, anything else as a measurement table.
Result<std::vector<MeasurementRow>> ReadCalibrationInputs(const std::vector<std::string>& paths,
                                                          const BenchAssumptions& assume);

struct CalibrateOptions {
  // Free parameters (CostParamFields names). The default set is the one the data of
  // docs/calibration.md identifies.
  std::vector<std::string> free = {"decode_mbu", "kv_mbu", "seq_overhead_s", "front_end_s",
                                   "prefill_layer_overhead_s"};
  CostParams start = VllmH100Calibration();  // the prior (kept when unidentified); the start
  uint64_t seed = 1;                         // the first seed of each evaluation
  // Seeds per evaluation (seed .. seed + seeds - 1, averaged as `ttft validate --seeds`
  // does): more seeds cost proportionally more and fit the realisation-averaged
  // simulation, not one realisation of arrivals and prompts.
  int seeds = 1;
  int max_evaluations = 150;
  bool leave_one_run_out = true;
};

struct FittedParam {
  std::string name;
  double value = 0;    // in the result
  double sourced = 0;  // the starting (sourced) value
  bool identified = true;
  // Objective rise (fraction) with the parameter held 25 % off (the larger of the two
  // directions) and the other free parameters refitted.
  double sensitivity = 0;
  // The parameter that moved most to make up for this one's move (when not identified).
  std::string traded_with;
};

struct CalibrationResult {
  CostParams cost;
  std::optional<bool> async_scheduling;  // the fitted rows' (unset when they differ)
  std::vector<FittedParam> params;
  // "file (N rows fitted, M left out)", then "source: assumed ..." per row for each
  // setting the input did not give (vLLM defaults, a bench result's workload).
  std::vector<std::string> data;
  std::vector<std::string> warnings;  // unidentified parameters, skipped rows
  StageMetrics in_sample;             // MAPE over the fitted rows (fractions)
  int rows = 0;
  StageMetrics leave_one_run_out;  // MAPE over the runs, each scored by a fit without it
  int runs = 0;
  int evaluations = 0;
  int seeds = 1;  // seeds averaged per evaluation (CalibrateOptions::seeds)
  double objective = 0;
};

// Fits `rows` (rows with a skip_reason and rows measured overloaded are left out and
// named in the warnings). Errors when no row can be fitted or a name is unknown.
Result<CalibrationResult> Calibrate(const std::vector<MeasurementRow>& rows,
                                    const CalibrateOptions& options);

// The profile file for a result (ttft/calibration.h), its `fit` section recording the
// data, the fitted and kept parameters, the errors and the warnings.
std::string CalibrationResultYaml(const CalibrationResult& result);
std::string CalibrationResultText(const CalibrationResult& result);

}  // namespace ttft

#endif  // TTFT_CALIBRATE_H_
