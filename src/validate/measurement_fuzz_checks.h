// Properties the measurement-table and bench-result fuzz targets check on every row
// they accept for simulation: the ranges ParseMeasurements promises (ttft/validate.h)
// hold, every number a run is simulated from is finite, and no measured figure is
// negative or infinite (the MAPE divides by it). A violation traps, so libFuzzer keeps
// the input.
#ifndef TTFT_VALIDATE_MEASUREMENT_FUZZ_CHECKS_H_
#define TTFT_VALIDATE_MEASUREMENT_FUZZ_CHECKS_H_

#include <cmath>

#include "ttft/validate.h"

namespace ttft::internal {

inline void CheckMeasurementRow(const MeasurementRow& m) {
  if (m.source.empty()) __builtin_trap();
  if (!m.skip_reason.empty()) return;  // reported as skipped, never simulated
  if (m.experiment.empty() || m.model_hf_id.empty() || m.gpu.empty()) __builtin_trap();
  if (m.tp < 1 || m.tp > 64) __builtin_trap();
  if (!(m.rate_rps > 0) || !std::isfinite(m.rate_rps)) __builtin_trap();
  if (!(m.duration_s > 0) || !std::isfinite(m.duration_s)) __builtin_trap();
  if (m.rate_rps * m.duration_s > 1e7) __builtin_trap();
  const SharedPrefixSpec& w = m.workload;
  if (w.num_groups < 1 || w.num_prompts_per_group < 1 || w.system_prompt_len < 0 ||
      w.question_len < 1 || w.output_len < 2) {
    __builtin_trap();
  }
  if (!std::isfinite(m.gpu_mem_util)) __builtin_trap();
  const StageMetrics& s = m.measured;
  // NaN is "not measured" (a bench result without that figure); never Inf or negative.
  for (double v : {s.ttft_mean_ms, s.ttft_p50_ms, s.ttft_p90_ms, s.ttft_p99_ms, s.e2e_mean_ms,
                   s.e2e_p99_ms, s.decode_ms_per_token, s.out_tok_s}) {
    if (std::isinf(v) || v < 0) __builtin_trap();
  }
}

}  // namespace ttft::internal

#endif  // TTFT_VALIDATE_MEASUREMENT_FUZZ_CHECKS_H_
