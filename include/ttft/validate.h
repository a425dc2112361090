// -----------------------------------------------------------------------------
// File: ttft/validate.h
// -----------------------------------------------------------------------------
//
// Simulator fidelity against real vLLM measurements: reads a table in the format of
// ../shared/data/vllm-h100/calibration.csv (columns by header name, one row per load
// stage), rebuilds each run (model, TP, dtype, engine limits, the inference-perf
// shared_prefix workload, its constant-rate stages run back to back with a drain and
// a 1 s pause), simulates it on one replica, and compares measured with simulated
// TTFT, E2E, decode time per output token and output throughput.
//
// What is compared, and how it is measured on each side:
//   * TTFT = first token - send time; E2E = last token - send time (client side;
//     the simulated front-end overhead stands for HTTP, tokenisation, IPC, streaming).
//   * decode_ms_per_token = (E2E mean - TTFT mean) / (output_len - 1), the
//     calibration file's definition (its README, section 6.4).
//   * out_tok_s = generated output tokens of successful requests / (last end - first
//     send). A table's out_tok_s counts the client's re-tokenised text (the calibration
//     data's README): when it has output_tokens_mean, the reader rescales it by
//     output_len / output_tokens_mean.
//   * Percentiles: linear interpolation (numpy's default, which inference-perf uses).
//
// Overload: a row is *measured* overloaded when it has failed requests (client
// timeouts) or a mean TTFT above 10 s; a stage is *simulated* overloaded when its
// queue grows through the run (mean TTFT or waiting count of the last third of the
// sends at least 3x the first third's, and TTFT above 10 s). Overloaded rows are left
// out of the mean absolute percentage errors and reported on their own. Measured
// statistics of an overloaded run cover only the requests that beat the client's
// timeout (300 s in the calibration data), so they are censored; the simulated ones
// are censored the same way: a request still open at its send time + the timeout is
// aborted there (vLLM aborts a request whose client has gone) and counts as failed.
//
// Example:
//
//   auto rows = ttft::ReadMeasurements("calibration.csv");
//   auto report = ttft::RunValidation(*rows, ttft::ValidateOptions{});
//   std::cout << ttft::ValidationText(*report);
//
// Thread safety: functions are re-entrant.

#ifndef TTFT_VALIDATE_H_
#define TTFT_VALIDATE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ttft/core.h"
#include "ttft/fleet.h"
#include "ttft/model.h"
#include "ttft/workload.h"

namespace ttft {

// Latency, decode interval and throughput of one load stage.
struct StageMetrics {
  double ttft_mean_ms = 0, ttft_p50_ms = 0, ttft_p90_ms = 0, ttft_p99_ms = 0;
  double e2e_mean_ms = 0, e2e_p99_ms = 0;
  double decode_ms_per_token = 0;
  double out_tok_s = 0;
};

// One row of a measurement table: the run's configuration and one stage's numbers.
struct MeasurementRow {
  std::string source;  // "file:line", for messages
  std::string experiment;
  int stage = 0;
  std::string model_hf_id;
  int tp = 1;
  std::string dtype = "bf16";
  std::string gpu = "h100-sxm";
  int64_t max_model_len = 4096;
  int64_t max_num_batched_tokens = 2048;
  int64_t max_num_seqs = 128;
  bool prefix_caching = true;
  bool chunked_prefill = true;
  double gpu_mem_util = 0.9;
  int64_t gpu_kv_cache_tokens = 0;  // 0: unknown (derived from memory)
  int kv_block_size = 16;
  // vLLM's async scheduling (EngineConfig::async_scheduling): column async_scheduling,
  // else on, v0.15.1's default (vllm#27614), or ValidateOptions::async_scheduling.
  bool async_scheduling = true;
  bool async_scheduling_stated = false;  // the table's column had a value for this row
  SharedPrefixSpec workload;             // groups, prompts, lengths; stages filled per run
  double rate_rps = 0;
  double duration_s = 0;
  int64_t n_failed = 0;
  StageMetrics measured;
  // Engine settings the table left empty, each filled with vLLM's default and named
  // here for the output, e.g. "max_num_seqs=1024 (vLLM default: ...)".
  std::vector<std::string> defaults_used;
  // Non-empty: the row cannot be simulated ("file:line: column: what"); it is reported
  // as skipped and the rest of the table goes on.
  std::string skip_reason;
};

// vLLM's engine defaults (v0.15.1, V1 engine, `vllm serve`), for the settings a table
// leaves empty. Source: vllm/engine/arg_utils.py (EngineArgs.get_batch_defaults and
// _set_default_max_num_seqs_and_batched_tokens_args; config/cache.py, config/model.py):
//   max_model_len          the model's max_position_embeddings
//   max_num_batched_tokens 8192 on a GPU of >= 70 GiB that is not an A100, else 2048
//                          (OPENAI_API_SERVER); without chunked prefill at least
//                          max_model_len; at most max_num_seqs * max_model_len
//   max_num_seqs           1024 on such a GPU, else 256; at most max_num_batched_tokens
//   gpu_memory_utilization 0.9; block size 16; tensor_parallel_size 1;
//   prefix caching and chunked prefill on (V1, decoder-only models); dtype "auto"
//   (the checkpoint's 16-bit dtype).
// Fills the empty settings of `row` (`empty` names them) and records each in
// row.defaults_used; sets row.skip_reason when the model or GPU is unknown.
void ApplyVllmDefaults(MeasurementRow& row, const std::vector<std::string>& empty);

// Reads a measurement CSV (RFC 4180 quoting). Columns are found by header name; the
// run, workload and ttft_mean_ms .. decode_ms_per_token columns are required; the
// engine settings (tp, dtype, max_model_len, max_num_batched_tokens, max_num_seqs,
// prefix_caching, chunked_prefill, gpu_mem_util, kv_block_size) may be absent or empty
// and then take vLLM's defaults (ApplyVllmDefaults); out_tok_s, output_tokens_mean,
// n_failed and gpu_kv_cache_tokens are optional. A file-level problem (CSV syntax, a missing
// required column, no rows) is an error; a row whose cells are invalid is returned
// with skip_reason set. Messages name "file:line: column: what".
Result<std::vector<MeasurementRow>> ReadMeasurements(const std::string& path);
Result<std::vector<MeasurementRow>> ParseMeasurements(const std::string& text,
                                                      const std::string& name);
// Marks a row skipped (skip_reason "... repeats the row at file:line") when an earlier
// usable row has its experiment and stage: the same stage twice, from a table pasted
// twice or given twice, would be simulated and scored twice. ParseMeasurements applies
// it within a file; readers of several files apply it across them.
void MarkRepeatedStages(std::vector<MeasurementRow>& rows);

// The cost model fitted jointly on both vLLM v0.15.1 H100 tables of
// ../shared/data/vllm-h100 (Llama-2-70B TP4 and Llama-2-7B TP1), simulated with async
// scheduling as that vLLM runs (`ttft calibrate calibration.csv calibration-7b.csv`;
// docs/calibration.md gives the fit and its errors). It differs from CostParams{}, the
// fleet's defaults, which were fitted without async scheduling (its missing step sits
// in their 26 ms front end).
CostParams VllmH100Calibration();

struct ValidateOptions {
  CostParams cost = VllmH100Calibration();  // the cost model to validate
  uint64_t seed = 1;                        // prompts and arrivals (inference-perf's were unseeded)
  double client_timeout_s = 300;            // aiohttp's default total timeout (README 6.5)
  double stage_pause_s = 1.0;               // inference-perf's interval between stages
  // Runs per row, seeds seed .. seed + repeats - 1; the simulated metrics are their
  // means. The measurement is one realisation of random prompts and arrivals, and a
  // tail near a limit (max_num_seqs) moves a lot between realisations.
  int repeats = 5;
  // A calibration profile's engine.async_scheduling (the scheduling it was fitted
  // under): rows whose table leaves async_scheduling empty take it; a stated cell wins.
  std::optional<bool> async_scheduling;
};

struct StageResult {
  std::string source;  // the row's "file:line"
  std::string experiment;
  int stage = 0;
  double rate_rps = 0;
  bool measured_overloaded = false;
  bool simulated_overloaded = false;
  StageMetrics measured, simulated;
  // The lowest and highest value each simulated metric took over the seeds (equal to
  // `simulated` with one seed): outside this range, the random prompts and arrivals
  // alone do not explain the error (the measurement has run-to-run noise of its own).
  StageMetrics sim_seed_min, sim_seed_max;
  StageMetrics error;                        // |sim - measured| / measured, per metric
  int64_t sim_requests = 0, sim_failed = 0;  // failed: slower than the client timeout
  // Overload evidence: simulated mean TTFT and mean waiting count over the first and
  // last thirds of the stage's sends.
  double sim_ttft_first_third_s = 0, sim_ttft_last_third_s = 0;
  double sim_waiting_first_third = 0, sim_waiting_last_third = 0;
  double sim_prefix_hit_rate = 0;          // cached / prompt tokens over the stage
  std::vector<std::string> defaults_used;  // the row's, see MeasurementRow
};

// A row that was not simulated, and why.
struct SkippedRow {
  std::string source;  // "file:line"
  std::string experiment;
  int stage = 0;
  std::string reason;
};

struct ValidationReport {
  std::vector<StageResult> rows;
  std::vector<SkippedRow> skipped;
  // Mean absolute percentage error (fraction) over the rows not measured overloaded.
  StageMetrics mape;
  int mape_rows = 0;
  int repeats = 1;  // seeds averaged per row
  // Per metric: the rows the MAPE averages (mape_rows less those whose error is not
  // finite), and how many of them have the measured value within [sim_seed_min,
  // sim_seed_max] (meaningful when repeats > 1).
  StageMetrics mape_count, in_seed_range;
};

// Simulates every run of `rows` (rows sharing `experiment` are one run's stages, run
// in stage order on one replica) and compares. Rows with a skip_reason, and the rows
// of a run that cannot be simulated (unknown model, an engine configuration vLLM
// would reject), go to `skipped` with the reason; the other runs go on. The (run,
// seed) simulations run on all cores; the report does not depend on how many.
Result<ValidationReport> RunValidation(const std::vector<MeasurementRow>& rows,
                                       const ValidateOptions& options);

// Simulates one run's stages (all rows of one experiment, any order); the results
// are in stage order without the comparison filled in.
Result<std::vector<StageResult>> SimulateRun(const std::vector<MeasurementRow>& stages,
                                             const ValidateOptions& options);

// Prefix reuse of a trace: prompt tokens served from the prefix cache over all prompt
// tokens, with vLLM's semantics (full `block_size` blocks only, matched from the
// start of the prompt, the last prompt token always computed).
struct TraceReuse {
  int64_t requests = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t blocks_needed = 0;  // upper bound of the blocks a replay can allocate
  int64_t max_prompt_tokens = 0;
  double ratio() const {
    return prompt_tokens > 0 ? static_cast<double>(cached_tokens) / prompt_tokens : 0.0;
  }
};

// The reuse an unlimited cache would see, computed from a Mooncake trace's block ids
// alone (no simulator): request r's cached tokens are the full `block_size` blocks of
// its longest prefix whose Mooncake id chain, and the tokens within the chain's last
// 512-token block, appeared in an earlier request, capped at (prompt - 1) rounded
// down to a block. `block_size` must divide 512. max_requests 0 = all.
Result<TraceReuse> MooncakeReuseFromIds(const std::string& path, int64_t max_requests,
                                        int block_size);

// Replays a Mooncake trace through the fleet simulator and sums its spans' cached and
// prompt tokens.
struct TraceReplayOptions {
  std::string path;
  int64_t max_requests = 0;
  double time_scale = 1.0;
  int replicas = 1;
  RouterSpec::Kind router = RouterSpec::Kind::kRoundRobin;
  int64_t blocks_per_replica = 0;  // KV capacity; 0 = from GPU memory
  int block_size = 16;
  std::string model = "llama-3.1-8b", gpu = "h100-sxm";
  int tp = 1;
  int64_t max_model_len = 262144;
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
};
Result<TraceReuse> SimulateTraceReuse(const TraceReplayOptions& options);

std::string ValidationText(const ValidationReport& report);
nlohmann::json ValidationJson(const ValidationReport& report);

}  // namespace ttft

#endif  // TTFT_VALIDATE_H_
