// -----------------------------------------------------------------------------
// File: ttft/calibration.h
// -----------------------------------------------------------------------------
//
// A calibration profile: the cost model's parameters fitted to a team's own
// measurements (written by `ttft calibrate`, read by `simulate`, `validate`, `lint
// --diff --scenario` and the scenario key `calibration:`), with what it was fitted on
// and how well. The file is YAML:
//
//   ttft_calibration_profile: 1
//   cost:                       # any CostParams field by name; absent = the default
//     decode_mbu: 0.71
//     kv_mbu: 0.93
//     front_end_s: 0.014
//   engine:                     # optional: the scheduling the fit assumed
//     async_scheduling: true
//   fit:                        # informational; read back as text, not interpreted
//     data: [calibration-7b.csv (5 rows)]
//     ...
//
// Only `cost` changes what is simulated. A parameter the profile leaves out keeps its
// default (the sourced value of docs/cost-model.md).
//
// Thread safety: functions are re-entrant.

#ifndef TTFT_CALIBRATION_H_
#define TTFT_CALIBRATION_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/core.h"
#include "ttft/model.h"

namespace ttft {

// One CostParams field by name, with the range a profile may set it in.
struct CostParamField {
  const char* name;
  double CostParams::*field;
  double min, max;                   // inclusive
  const char* zero_means = nullptr;  // what a 0 stands for, when not a value
  // Whether `x` lies in [min, max] (NaN does not): the one range test of a profile's
  // value and of EngineConfig::Validate.
  bool Admits(double x) const { return x >= min && x <= max; }
};
// Every fittable field (slowdown excluded: it is an incident, not a calibration).
const std::vector<CostParamField>& CostParamFields();
const CostParamField* FindCostParamField(std::string_view name);

struct CalibrationProfile {
  CostParams cost;
  std::vector<std::string> set;  // the `cost` keys the file sets, in file order
  // engine: {async_scheduling: BOOL}: the scheduling the parameters were fitted under
  // (EngineConfig::async_scheduling); applying the profile applies it too.
  std::optional<bool> async_scheduling;
  std::string fit_yaml;  // the `fit` section as written (informational)
};

// Parses a profile. Errors name "name:line: field: what" (unknown keys, values that
// are not finite numbers or out of their range, a missing or unknown version).
Result<CalibrationProfile> ParseCalibrationProfile(std::string_view yaml, const std::string& name);
Result<CalibrationProfile> ReadCalibrationProfile(const std::string& path);

// The profile's YAML: every CostParamFields() value of `cost` (so the file is
// complete on its own), then `fit_yaml` under `fit:` when non-empty (already YAML,
// indented by the caller's emitter or left as given).
std::string CalibrationProfileYaml(const CostParams& cost, std::optional<bool> async_scheduling,
                                   const std::string& fit_yaml);

}  // namespace ttft

#endif  // TTFT_CALIBRATION_H_
