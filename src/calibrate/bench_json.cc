// `vllm bench serve` result files as measurement rows (ttft/calibrate.h).
//
// Keys read (vllm/benchmarks/serve.py, `benchmark()`'s result dict and main()'s
// additions to result_json): duration, completed, failed, total_input_tokens,
// total_output_tokens, request_rate ("inf" or a number), max_concurrency, num_prompts,
// model_id, mean_ttft_ms, median_ttft_ms, p90_ttft_ms and p99_ttft_ms (percentiles as
// selected by --metric-percentiles, default 99), mean_tpot_ms (per request
// (latency - ttft) / (output_len - 1), then the mean), mean_e2el_ms and p99_e2el_ms
// (when e2el is among --percentile-metrics).
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ttft/calibrate.h"

namespace ttft {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Result<std::string> Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("{}: cannot open", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<MeasurementRow> ParseBenchServeJson(std::string_view text, const std::string& name,
                                           const BenchAssumptions& assume) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    const size_t at = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
    return Status::Invalid(
        fmt::format("{}:{}: not JSON (a vllm bench serve result): {}", name, line, e.what()));
  } catch (const nlohmann::json::exception& e) {  // e.g. a number beyond a double (8e500)
    return Status::Invalid(
        fmt::format("{}: not a usable vllm bench serve result: {}", name, e.what()));
  }
  if (!j.is_object()) {
    return Status::Invalid(
        fmt::format("{}:1: expected a JSON object (vllm bench serve result)", name));
  }
  auto err = [&](const std::string& field, const std::string& what) {
    return Status::Invalid(fmt::format("{}: {}: {}", name, field, what));
  };
  // A finite number, or NaN when absent (required: an error).
  auto num = [&](const char* key, bool required) -> Result<double> {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (required) return err(key, "missing (a vllm bench serve result has it)");
      return kNaN;
    }
    if (!it->is_number()) return err(key, "not a number");
    const double v = it->get<double>();
    if (!std::isfinite(v) || v < 0) return err(key, "must be a finite number >= 0");
    return v;
  };
  MeasurementRow m;
  m.source = name;
  m.experiment = std::filesystem::path(name).filename().string();
  m.stage = 0;
  std::vector<std::string> assumed;
  // Model, GPU, TP.
  if (!assume.model.empty()) {
    m.model_hf_id = assume.model;
  } else if (auto it = j.find("model_id"); it != j.end() && it->is_string()) {
    m.model_hf_id = it->get<std::string>();
  } else {
    return err("model_id", "missing; pass --model");
  }
  if (assume.gpu.empty()) return err("gpu", "not recorded by vllm bench serve; pass --gpu");
  m.gpu = assume.gpu;
  std::vector<std::string> empty = {"dtype",        "max_model_len",  "max_num_batched_tokens",
                                    "max_num_seqs", "prefix_caching", "chunked_prefill",
                                    "gpu_mem_util", "kv_block_size"};
  if (assume.tp > 0) {
    m.tp = assume.tp;
  } else {
    empty.push_back("tp");
  }
  // Load.
  auto rate_it = j.find("request_rate");
  if (rate_it == j.end()) return err("request_rate", "missing");
  if (rate_it->is_string()) {
    return err("request_rate",
               fmt::format("'{}': a closed loop (all requests at once, max_concurrency) is not "
                           "simulated; calibrate on runs with a finite --request-rate",
                           rate_it->get<std::string>()));
  }
  TTFT_ASSIGN_OR_RETURN(m.rate_rps, num("request_rate", true));
  if (!(m.rate_rps > 0)) return err("request_rate", "must be > 0");
  if (auto mc = j.find("max_concurrency"); mc != j.end() && !mc->is_null()) {
    return err(
        "max_concurrency",
        "a client concurrency cap is not simulated; calibrate on runs without --max-concurrency");
  }
  TTFT_ASSIGN_OR_RETURN(double completed, num("completed", true));
  TTFT_ASSIGN_OR_RETURN(double failed, num("failed", false));
  if (std::isnan(failed)) failed = 0;
  TTFT_ASSIGN_OR_RETURN(double num_prompts, num("num_prompts", false));
  const double n = std::isnan(num_prompts) ? completed + failed : num_prompts;
  if (!(completed >= 1)) return err("completed", "no completed requests");
  if (n > 1e7) return err("num_prompts", "above 1e7");
  m.n_failed = static_cast<int64_t>(failed);
  m.duration_s = n / m.rate_rps;
  assumed.push_back(
      "async_scheduling=true (vLLM's default from about v0.12; the result does not record the "
      "version)");
  assumed.push_back(
      fmt::format("arrivals: {} requests as a Poisson process at {} req/s over {:.1f} s", n,
                  m.rate_rps, m.duration_s));
  // Workload: distinct prompts of the mean lengths.
  TTFT_ASSIGN_OR_RETURN(double in_tok, num("total_input_tokens", true));
  TTFT_ASSIGN_OR_RETURN(double out_tok, num("total_output_tokens", true));
  const double in_mean = in_tok / completed, out_mean = out_tok / completed;
  if (!(in_mean >= 1) || in_mean > 1e7)
    return err("total_input_tokens", "mean prompt outside 1..1e7");
  if (!(out_mean >= 2) || out_mean > 1e7)
    return err("total_output_tokens", "mean output outside 2..1e7");
  SharedPrefixSpec& w = m.workload;
  w.tenant = m.experiment;
  w.num_groups = static_cast<int>(std::clamp(n, 1.0, 100000.0));
  w.num_prompts_per_group = 1;
  w.system_prompt_len = 0;
  w.question_len = static_cast<int>(std::lround(in_mean));
  w.output_len = static_cast<int>(std::lround(out_mean));
  w.token_inflation = 1.0;
  w.length_jitter = 0.0;
  w.bos = false;
  assumed.push_back(fmt::format(
      "workload: {} distinct prompts of {} tokens (the mean; no prefix reuse), {} output tokens "
      "each (the mean)",
      w.num_groups, w.question_len, w.output_len));
  // Metrics.
  StageMetrics& s = m.measured;
  TTFT_ASSIGN_OR_RETURN(s.ttft_mean_ms, num("mean_ttft_ms", true));
  TTFT_ASSIGN_OR_RETURN(s.ttft_p50_ms, num("median_ttft_ms", false));
  TTFT_ASSIGN_OR_RETURN(s.ttft_p90_ms, num("p90_ttft_ms", false));
  TTFT_ASSIGN_OR_RETURN(s.ttft_p99_ms, num("p99_ttft_ms", false));
  TTFT_ASSIGN_OR_RETURN(s.decode_ms_per_token, num("mean_tpot_ms", true));
  TTFT_ASSIGN_OR_RETURN(s.e2e_mean_ms, num("mean_e2el_ms", false));
  TTFT_ASSIGN_OR_RETURN(s.e2e_p99_ms, num("p99_e2el_ms", false));
  if (std::isnan(s.e2e_mean_ms)) {
    s.e2e_mean_ms = s.ttft_mean_ms + s.decode_ms_per_token * (w.output_len - 1);
    assumed.push_back("e2e_mean: mean_ttft_ms + mean_tpot_ms x (output - 1) (no mean_e2el_ms)");
  }
  TTFT_ASSIGN_OR_RETURN(double dur, num("duration", false));
  s.out_tok_s = dur > 0 ? out_tok / dur : kNaN;
  ApplyVllmDefaults(m, empty);
  for (auto& a : assumed) m.defaults_used.push_back(std::move(a));
  return m;
}

Result<std::vector<MeasurementRow>> ReadCalibrationInputs(const std::vector<std::string>& paths,
                                                          const BenchAssumptions& assume) {
  std::vector<MeasurementRow> rows;
  for (const std::string& p : paths) {
    if (std::filesystem::path(p).extension() == ".json") {
      TTFT_ASSIGN_OR_RETURN(std::string text, Slurp(p));
      TTFT_ASSIGN_OR_RETURN(MeasurementRow r, ParseBenchServeJson(text, p, assume));
      rows.push_back(std::move(r));
    } else {
      TTFT_ASSIGN_OR_RETURN(std::vector<MeasurementRow> t, ReadMeasurements(p));
      for (auto& r : t) rows.push_back(std::move(r));
    }
  }
  MarkRepeatedStages(rows);  // a file given twice, or tables that overlap
  return rows;
}

}  // namespace ttft
