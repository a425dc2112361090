// -----------------------------------------------------------------------------
// File: ttft/scenario.h
// -----------------------------------------------------------------------------
//
// Scenario files (YAML; docs/scenarios.md) parsed and validated into a typed
// `Scenario` at the edge. Nothing downstream reads YAML.
//
// Every error names the file, the line and the field path:
//   "scenarios/x.yaml:14: replicas[0].tp: 3 does not divide llama-3.3-70b's 64 heads"
//
// Example:
//
//   auto sc = ttft::LoadScenario("scenarios/seed-drill.yaml");
//   if (!sc.ok()) return sc.status();
//
// The built-in scenarios (compiled in from scenarios/) are available by name:
//   auto drill = ttft::BuiltinScenario("seed-drill");

#ifndef TTFT_SCENARIO_H_
#define TTFT_SCENARIO_H_

#include <string>
#include <string_view>
#include <vector>

#include "ttft/calibration.h"
#include "ttft/core.h"
#include "ttft/fleet.h"

namespace ttft {

// Reads and validates a scenario file. Relative trace paths resolve against the
// scenario file's folder.
// Sets the cost parameters `profile` sets (ttft/calibration.h) on every replica, on
// deploy_config's engines and on added replicas, over what the scenario says
// (`--calibration FILE`). In a scenario file the engine key `calibration: FILE`
// (relative to the scenario's folder) does the same, and cost.* keys beside it win.
void ApplyCalibration(Scenario& sc, const CalibrationProfile& profile);

Result<Scenario> LoadScenario(const std::string& path);

// Parses scenario text; `source_name` is used in messages and `base_dir` resolves
// relative trace paths.
Result<Scenario> ParseScenario(std::string_view yaml_text, const std::string& source_name,
                               const std::string& base_dir);

// Scenarios compiled into the binary (from scenarios/*.yaml), by name.
Result<Scenario> BuiltinScenario(std::string_view name);
std::vector<std::string> BuiltinScenarioNames();

}  // namespace ttft

#endif  // TTFT_SCENARIO_H_
