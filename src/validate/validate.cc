// Validation against real vLLM measurements (ttft/validate.h).
//
// The run is driven here, on one Replica, rather than through the fleet's event loop:
// inference-perf starts a stage only when the previous one has drained
// (../shared/data/vllm-h100/README.md 6.2), which a fleet scenario cannot express
// (its arrivals are generated before the engines run). The loop below is the fleet's
// for one replica: a request spends the front-end overhead, enters WAITING, and the
// replica is interrupted at the step in progress so the next step sees it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "ttft/csv.h"
#include "ttft/engine.h"
#include "ttft/format.h"
#include "ttft/input.h"
#include "ttft/parallel.h"
#include "ttft/stats.h"
#include "ttft/validate.h"

namespace ttft {
namespace {

constexpr double kOverloadTtftS = 10.0;  // a TTFT no stable config of these rows comes near
constexpr double kGrowthFactor = 3.0;

// Splits CSV text into records of fields (ttft/csv.h: RFC 4180 quoting, CRLF), skipping
// empty lines. Returns the 1-based line each record starts on.
Result<std::vector<std::pair<int, std::vector<std::string>>>> SplitCsv(const std::string& text,
                                                                       const std::string& name) {
  std::vector<std::pair<int, std::vector<std::string>>> out;
  CsvReader csv(text);
  std::vector<std::string> fields;
  while (csv.Next(fields)) {
    if (!fields.empty()) out.emplace_back(static_cast<int>(csv.record_line()), fields);
  }
  switch (csv.error()) {
    case CsvError::kNone: break;
    case CsvError::kUnterminatedQuote:
      return Status::Invalid(fmt::format("{}:{}: unterminated quoted field", name, csv.line()));
    case CsvError::kTextAfterQuote:
      return Status::Invalid(
          fmt::format("{}:{}: text after the closing quote of a quoted field", name, csv.line()));
  }
  return out;
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double Pct(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  return Quantile(std::span<double>(v), q);
}

double Ape(double sim, double meas) {
  if (!(std::abs(meas) > 0)) return std::numeric_limits<double>::quiet_NaN();
  return std::abs(sim - meas) / std::abs(meas);
}

// The metrics as a list, so that error and MAPE loops stay in one place.
std::vector<double StageMetrics::*> MetricFields() {
  return {&StageMetrics::ttft_mean_ms,        &StageMetrics::ttft_p50_ms,
          &StageMetrics::ttft_p90_ms,         &StageMetrics::ttft_p99_ms,
          &StageMetrics::e2e_mean_ms,         &StageMetrics::e2e_p99_ms,
          &StageMetrics::decode_ms_per_token, &StageMetrics::out_tok_s};
}
const char* const kMetricNames[] = {
    "ttft_mean",           "ttft_p50", "ttft_p90", "ttft_p99", "e2e_mean", "e2e_p99",
    "decode_ms_per_token", "out_tok_s"};

}  // namespace

CostParams VllmH100Calibration() {
  // `ttft calibrate calibration.csv calibration-7b.csv --max-evaluations 320 --seeds 5`
  // started from the 1-seed fit's values (2 to 3 significant digits); docs/calibration.md.
  CostParams c;
  c.decode_mbu = 0.743;
  c.kv_mbu = 0.917;
  c.seq_overhead_s = 2.3e-6;
  c.front_end_s = 0.0047;
  c.prefill_layer_overhead_s = 92e-6;
  return c;
}

void ApplyVllmDefaults(MeasurementRow& m, const std::vector<std::string>& empty) {
  auto is_empty = [&](const char* c) {
    return std::find(empty.begin(), empty.end(), c) != empty.end();
  };
  auto note = [&](const std::string& what) { m.defaults_used.push_back(what); };
  auto model = FindModel(m.model_hf_id);
  if (!model.ok()) {
    m.skip_reason = fmt::format("{}: model_hf_id: {}", m.source, model.status().message());
    return;
  }
  auto gpu = FindGpu(m.gpu);
  if (!gpu.ok()) {
    m.skip_reason = fmt::format("{}: gpu: {}", m.source, gpu.status().message());
    return;
  }
  if (is_empty("tp")) {
    m.tp = 1;
    note("tp=1 (vLLM default tensor_parallel_size)");
  }
  if (is_empty("dtype")) {
    m.dtype = "bf16";
    note("dtype=auto (vLLM default: the checkpoint's 16-bit dtype)");
  }
  if (is_empty("max_model_len")) {
    m.max_model_len = model->max_position_embeddings;
    note(fmt::format("max_model_len={} (vLLM default: the model's max_position_embeddings)",
                     m.max_model_len));
  }
  if (is_empty("prefix_caching")) {
    m.prefix_caching = true;
    note("prefix_caching=true (vLLM V1 default)");
  }
  if (is_empty("chunked_prefill")) {
    m.chunked_prefill = true;
    note("chunked_prefill=true (vLLM V1 default)");
  }
  if (is_empty("gpu_mem_util")) {
    m.gpu_mem_util = 0.9;
    note("gpu_mem_util=0.9 (vLLM default gpu_memory_utilization)");
  }
  if (is_empty("kv_block_size")) {
    m.kv_block_size = 16;
    note("kv_block_size=16 (vLLM default block_size on CUDA)");
  }
  // EngineArgs.get_batch_defaults: large defaults on GPUs of at least 70 GiB other
  // than the A100 (vLLM PR #17885), for the OpenAI-compatible server.
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const bool big = gpu->memory_gb * 1e9 >= 70 * kGiB && gpu->name.find("a100") == std::string::npos;
  const std::string why = big ? "on a GPU of >= 70 GiB that is not an A100" : "on this GPU";
  if (is_empty("max_num_batched_tokens")) {
    int64_t v = big ? 8192 : 2048;
    if (!m.chunked_prefill) v = std::max(v, m.max_model_len);
    const int64_t seqs = is_empty("max_num_seqs") ? (big ? 1024 : 256) : m.max_num_seqs;
    v = std::min(v, seqs * m.max_model_len);
    m.max_num_batched_tokens = v;
    note(fmt::format("max_num_batched_tokens={} (vLLM default for `vllm serve` {})", v, why));
  }
  if (is_empty("max_num_seqs")) {
    m.max_num_seqs = std::min<int64_t>(big ? 1024 : 256, m.max_num_batched_tokens);
    note(fmt::format("max_num_seqs={} (vLLM default for `vllm serve` {})", m.max_num_seqs, why));
  }
}

Result<std::vector<MeasurementRow>> ParseMeasurements(const std::string& text,
                                                      const std::string& name) {
  TTFT_ASSIGN_OR_RETURN(auto recs, SplitCsv(text, name));
  if (recs.empty())
    return Status::Invalid(fmt::format("{}:1: empty file, expected a header", name));
  const auto& header = recs[0].second;
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  const char* const required[] = {"experiment",         "stage",
                                  "model_hf_id",        "num_groups",
                                  "prompts_per_group",  "system_prompt_len",
                                  "question_len",       "output_len",
                                  "rate_rps",           "duration_s",
                                  "ttft_mean_ms",       "ttft_p50_ms",
                                  "ttft_p90_ms",        "ttft_p99_ms",
                                  "e2e_mean_ms",        "e2e_p99_ms",
                                  "decode_ms_per_token"};
  for (const char* c : required) {
    if (!col.count(c)) {
      return Status::Invalid(
          fmt::format("{}:{}: {}: required column missing", name, recs[0].first, c));
    }
  }
  std::vector<MeasurementRow> rows;
  for (size_t r = 1; r < recs.size(); ++r) {
    const int line = recs[r].first;
    const auto& f = recs[r].second;
    auto cell = [&](const std::string& c) -> std::string {
      auto it = col.find(c);
      if (it == col.end() || it->second >= f.size()) return "";
      return f[it->second];
    };
    auto err = [&](const std::string& c, const std::string& what) {
      return Status::Invalid(fmt::format("{}:{}: {}: {}", name, line, c, what));
    };
    auto num = [&](const std::string& c, bool optional, double dflt) -> Result<double> {
      const std::string s = cell(c);
      if (s.empty()) {
        if (optional) return dflt;
        return err(c, "empty, a number is required");
      }
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) {
        return err(c, fmt::format("'{}' is not a number", s));
      }
      return v;
    };
    auto integer = [&](const std::string& c, bool optional, int64_t dflt) -> Result<int64_t> {
      TTFT_ASSIGN_OR_RETURN(double v, num(c, optional, static_cast<double>(dflt)));
      if (v != std::floor(v) || std::abs(v) > 1e15) {
        return err(c, fmt::format("'{}' is not an integer", cell(c)));
      }
      return static_cast<int64_t>(v);
    };
    auto boolean = [&](const std::string& c) -> Result<bool> {
      std::string s = cell(c);
      std::transform(s.begin(), s.end(), s.begin(),
                     [](unsigned char ch) { return std::tolower(ch); });
      if (s == "true" || s == "1" || s == "yes") return true;
      if (s == "false" || s == "0" || s == "no") return false;
      return err(c, fmt::format("'{}' is not a boolean (true/false)", cell(c)));
    };
    MeasurementRow m;
    m.source = fmt::format("{}:{}", name, line);
    m.experiment = cell("experiment");
    std::vector<std::string> empty;  // engine settings left empty: vLLM's defaults
    auto parse_row = [&]() -> Status {
      // Names reach every report: a row that is not UTF-8 is left out, not mangled.
      for (size_t i = 0; i < f.size(); ++i) {
        if (!escape::IsValidUtf8(f[i])) {
          return err(i < header.size() ? header[i] : fmt::format("column {}", i + 1),
                     "not valid UTF-8");
        }
      }
      // Fewer cells than the header: a row cut short (a truncated file's last line),
      // whose missing settings would silently take vLLM's defaults.
      if (f.size() < header.size()) {
        return Status::Invalid(fmt::format("{}:{}: {} cells, the header has {} (a row cut short?)",
                                           name, line, f.size(), header.size()));
      }
      if (m.experiment.empty()) return err("experiment", "empty");
      TTFT_ASSIGN_OR_RETURN(int64_t stage, integer("stage", false, 0));
      m.stage = static_cast<int>(stage);
      m.model_hf_id = cell("model_hf_id");
      if (m.model_hf_id.empty()) return err("model_hf_id", "empty, a model is required");
      m.gpu = cell("gpu");
      if (m.gpu.empty()) return err("gpu", "empty, a GPU type is required");
      for (const char* c :
           {"tp", "dtype", "max_model_len", "max_num_batched_tokens", "max_num_seqs",
            "prefix_caching", "chunked_prefill", "gpu_mem_util", "kv_block_size"}) {
        if (cell(c).empty()) empty.push_back(c);
      }
      auto is_empty = [&](const char* c) {
        return std::find(empty.begin(), empty.end(), c) != empty.end();
      };
      if (!is_empty("tp")) {
        TTFT_ASSIGN_OR_RETURN(int64_t tp, integer("tp", false, 1));
        if (tp < 1 || tp > 64) return err("tp", "must be in 1..64");
        m.tp = static_cast<int>(tp);
      }
      if (!is_empty("dtype")) m.dtype = cell("dtype");
      if (!is_empty("max_model_len")) {
        TTFT_ASSIGN_OR_RETURN(m.max_model_len, integer("max_model_len", false, 0));
      }
      if (!is_empty("max_num_batched_tokens")) {
        TTFT_ASSIGN_OR_RETURN(m.max_num_batched_tokens,
                              integer("max_num_batched_tokens", false, 0));
      }
      if (!is_empty("max_num_seqs")) {
        TTFT_ASSIGN_OR_RETURN(m.max_num_seqs, integer("max_num_seqs", false, 0));
      }
      if (!is_empty("prefix_caching")) {
        TTFT_ASSIGN_OR_RETURN(m.prefix_caching, boolean("prefix_caching"));
      }
      if (!is_empty("chunked_prefill")) {
        TTFT_ASSIGN_OR_RETURN(m.chunked_prefill, boolean("chunked_prefill"));
      }
      if (!is_empty("gpu_mem_util")) {
        TTFT_ASSIGN_OR_RETURN(m.gpu_mem_util, num("gpu_mem_util", false, 0.9));
      }
      TTFT_ASSIGN_OR_RETURN(m.gpu_kv_cache_tokens, integer("gpu_kv_cache_tokens", true, 0));
      if (!cell("async_scheduling").empty()) {
        TTFT_ASSIGN_OR_RETURN(m.async_scheduling, boolean("async_scheduling"));
        m.async_scheduling_stated = true;
      }
      if (!is_empty("kv_block_size")) {
        TTFT_ASSIGN_OR_RETURN(int64_t bs, integer("kv_block_size", false, 16));
        m.kv_block_size = static_cast<int>(bs);
      }
      TTFT_ASSIGN_OR_RETURN(int64_t g, integer("num_groups", false, 0));
      TTFT_ASSIGN_OR_RETURN(int64_t p, integer("prompts_per_group", false, 0));
      TTFT_ASSIGN_OR_RETURN(int64_t sys, integer("system_prompt_len", false, 0));
      TTFT_ASSIGN_OR_RETURN(int64_t q, integer("question_len", false, 0));
      TTFT_ASSIGN_OR_RETURN(int64_t out, integer("output_len", false, 0));
      if (g < 1 || g > 100000) return err("num_groups", "must be in 1..100000");
      if (p < 1 || p > 100000) return err("prompts_per_group", "must be in 1..100000");
      if (sys < 0 || sys > 10'000'000) return err("system_prompt_len", "must be in 0..1e7");
      if (q < 1 || q > 10'000'000) return err("question_len", "must be in 1..1e7");
      if (out < 2 || out > 10'000'000) return err("output_len", "must be in 2..1e7");
      m.workload.tenant = m.experiment;
      m.workload.num_groups = static_cast<int>(g);
      m.workload.num_prompts_per_group = static_cast<int>(p);
      m.workload.system_prompt_len = static_cast<int>(sys);
      m.workload.question_len = static_cast<int>(q);
      m.workload.output_len = static_cast<int>(out);
      TTFT_ASSIGN_OR_RETURN(m.rate_rps, num("rate_rps", false, 0));
      TTFT_ASSIGN_OR_RETURN(m.duration_s, num("duration_s", false, 0));
      if (!(m.rate_rps > 0)) return err("rate_rps", "must be > 0");
      if (!(m.duration_s > 0)) return err("duration_s", "must be > 0");
      if (m.rate_rps * m.duration_s > 1e7) return err("rate_rps", "rate x duration above 1e7");
      TTFT_ASSIGN_OR_RETURN(m.n_failed, integer("n_failed", true, 0));
      StageMetrics& s = m.measured;
      TTFT_ASSIGN_OR_RETURN(s.ttft_mean_ms, num("ttft_mean_ms", false, 0));
      TTFT_ASSIGN_OR_RETURN(s.ttft_p50_ms, num("ttft_p50_ms", false, 0));
      TTFT_ASSIGN_OR_RETURN(s.ttft_p90_ms, num("ttft_p90_ms", false, 0));
      TTFT_ASSIGN_OR_RETURN(s.ttft_p99_ms, num("ttft_p99_ms", false, 0));
      TTFT_ASSIGN_OR_RETURN(s.e2e_mean_ms, num("e2e_mean_ms", false, 0));
      TTFT_ASSIGN_OR_RETURN(s.e2e_p99_ms, num("e2e_p99_ms", false, 0));
      TTFT_ASSIGN_OR_RETURN(s.decode_ms_per_token, num("decode_ms_per_token", false, 0));
      TTFT_ASSIGN_OR_RETURN(s.out_tok_s, num("out_tok_s", true, std::nan("")));
      // The table's out_tok_s counts the client's re-tokenised output text plus a BOS,
      // whose mean per request is output_tokens_mean (the data's README, column table and
      // limitation 4); the engine generated output_len tokens per request. Compared in
      // generated tokens: out_tok_s x output_len / output_tokens_mean (the 7B's
      // re-tokenised text is ~20 % shorter than what it generated).
      TTFT_ASSIGN_OR_RETURN(const double out_tokens_mean,
                            num("output_tokens_mean", true, std::nan("")));
      if (!std::isnan(out_tokens_mean)) {
        if (!(out_tokens_mean > 0)) return err("output_tokens_mean", "must be > 0");
        s.out_tok_s *= static_cast<double>(out) / out_tokens_mean;
        if (std::isinf(s.out_tok_s)) {
          return err("output_tokens_mean", "out_tok_s x output_len / output_tokens_mean overflows");
        }
      }
      for (const auto& [c, v] : {std::pair{"ttft_mean_ms", s.ttft_mean_ms},
                                 {"ttft_p50_ms", s.ttft_p50_ms},
                                 {"ttft_p90_ms", s.ttft_p90_ms},
                                 {"ttft_p99_ms", s.ttft_p99_ms},
                                 {"e2e_mean_ms", s.e2e_mean_ms},
                                 {"e2e_p99_ms", s.e2e_p99_ms},
                                 {"decode_ms_per_token", s.decode_ms_per_token},
                                 {"out_tok_s", s.out_tok_s}}) {
        if (v < 0) return err(c, fmt::format("{} is negative: a measurement is >= 0", v));
      }
      return Status::Ok();
    };
    if (Status st = parse_row(); !st.ok()) {
      m.skip_reason = st.message();
    } else {
      ApplyVllmDefaults(m, empty);
    }
    rows.push_back(std::move(m));
  }
  if (rows.empty()) return Status::Invalid(fmt::format("{}: no data rows", name));
  MarkRepeatedStages(rows);
  return rows;
}

void MarkRepeatedStages(std::vector<MeasurementRow>& rows) {
  std::map<std::pair<std::string, int>, std::string> first;  // (experiment, stage) -> source
  for (MeasurementRow& m : rows) {
    if (!m.skip_reason.empty()) continue;
    auto [it, fresh] = first.emplace(std::pair{m.experiment, m.stage}, m.source);
    if (!fresh) {
      m.skip_reason = fmt::format("{}: experiment {} stage {} repeats the row at {}", m.source,
                                  m.experiment, m.stage, it->second);
    }
  }
}

Result<std::vector<MeasurementRow>> ReadMeasurements(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::Invalid(fmt::format("{}: is a folder, expected a measurement table", path));
  }
  if (!std::filesystem::exists(path, ec)) {
    return Status::NotFound(fmt::format("{}: cannot open", path));
  }
  // Read whole: gzip decompressed, at most kMaxWholeFileBytes.
  TTFT_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path));
  return ParseMeasurements(text, path);
}

Result<std::vector<StageResult>> SimulateRun(const std::vector<MeasurementRow>& in,
                                             const ValidateOptions& opt) {
  if (in.empty()) return std::vector<StageResult>{};
  std::vector<const MeasurementRow*> stages;
  stages.reserve(in.size());
  for (const auto& r : in) stages.push_back(&r);
  std::stable_sort(stages.begin(), stages.end(),
                   [](const auto* a, const auto* b) { return a->stage < b->stage; });
  const MeasurementRow& first = *stages.front();
  for (const auto* s : stages) {
    if (s->model_hf_id != first.model_hf_id || s->tp != first.tp || s->dtype != first.dtype ||
        s->max_num_seqs != first.max_num_seqs ||
        s->max_num_batched_tokens != first.max_num_batched_tokens ||
        s->workload.question_len != first.workload.question_len) {
      return Status::Invalid(
          fmt::format("{}: experiment {}: stages differ in configuration from {}", s->source,
                      s->experiment, first.source));
    }
  }
  auto dtype = ParseDtype(first.dtype);
  if (!dtype.ok()) return dtype.status().WithContext(first.source + ": dtype");
  auto hw = MakeHardwareConfig(first.model_hf_id, first.gpu, *dtype, first.tp);
  if (!hw.ok()) return hw.status().WithContext(first.source);
  EngineConfig ec;
  ec.hardware = *hw;
  ec.cost = opt.cost;
  ec.block_size = first.kv_block_size;
  ec.gpu_memory_utilization = first.gpu_mem_util;
  ec.max_num_batched_tokens = first.max_num_batched_tokens;
  ec.max_num_seqs = first.max_num_seqs;
  ec.max_model_len = first.max_model_len;
  ec.enable_chunked_prefill = first.chunked_prefill;
  ec.enable_prefix_caching = first.prefix_caching;
  ec.async_scheduling = first.async_scheduling_stated || !opt.async_scheduling.has_value()
                            ? first.async_scheduling
                            : *opt.async_scheduling;
  // vLLM's own log line gives the capacity when the table has it; otherwise memory.
  if (first.gpu_kv_cache_tokens > 0) ec.num_gpu_blocks = first.gpu_kv_cache_tokens / ec.block_size;
  TTFT_RETURN_IF_ERROR(ec.Validate().WithContext(first.source));
  TTFT_ASSIGN_OR_RETURN(int64_t blocks, ec.KvCapacityBlocks());
  Replica replica(ec, blocks);

  SharedPrefixSpec wl = first.workload;
  const std::vector<SharedPrefixPrompt> prompts = BuildSharedPrefixPrompts(wl, opt.seed);
  std::vector<std::vector<uint64_t>> hashes;
  for (const auto& p : prompts) {
    hashes.emplace_back();
    ComputeBlockHashes(p.pieces, ec.block_size, 0, hashes.back());
  }
  Rng arrival_rng(opt.seed * 0x9e3779b97f4a7c15ULL + 17);

  std::vector<StageResult> results;
  double stage_start = 0;
  double now = 0;
  double step_end = -1;
  int64_t seq = 0;
  for (const MeasurementRow* st : stages) {
    const std::vector<double> sends =
        ConstantLoadSendTimes(st->rate_rps, st->duration_s, stage_start, arrival_rng);
    const size_t n = sends.size();
    std::vector<double> ttft(n, -1), e2e(n, -1), waiting(n, 0);
    int64_t cached = 0, prompt_tokens = 0;
    double last_end = stage_start;
    size_t finished = 0;
    const int64_t seq0 = seq;
    std::vector<char> over(n, 0);  // finished, or aborted at the client timeout
    FinishFn on_finish = [&](const FinishedRequest& f) {
      const auto k = static_cast<size_t>(f.request->seq - seq0);
      ++finished;
      over[k] = 1;
      last_end = std::max(last_end, f.last_token_s);  // the stage's end: failures included
      // A request aborted at the client timeout: a first token it did get still counts
      // for the overload check (the thirds' mean TTFT), not for the statistics.
      if (f.output_tokens > 0) ttft[k] = f.first_token_s - f.request->arrival_s;
      if (f.status != RequestStatus::kOk) return;
      e2e[k] = f.last_token_s - f.request->arrival_s;
      cached += f.cached_tokens;
      prompt_tokens += f.request->prompt_tokens;
    };
    size_t next = 0;          // next request to enqueue (after the front end)
    size_t next_timeout = 0;  // requests before it are over
    while (finished < n) {
      const double enq_t =
          next < n ? sends[next] + opt.cost.FrontEndTime(prompts[next % prompts.size()].tokens)
                   : std::numeric_limits<double>::infinity();
      while (next_timeout < next && over[next_timeout]) ++next_timeout;
      const double timeout_t = next_timeout < next ? sends[next_timeout] + opt.client_timeout_s
                                                   : std::numeric_limits<double>::infinity();
      // The client gives up at its timeout and disconnects; vLLM aborts the request
      // (a waiting one at once, a running one when the step in progress ends).
      if (timeout_t < enq_t && (step_end < 0 || timeout_t < step_end)) {
        now = timeout_t;
        if (replica.step_planned()) step_end = replica.Interrupt(now);
        replica.Abort(seq0 + static_cast<int64_t>(next_timeout), now, on_finish);
        ++next_timeout;
        if (!replica.step_planned()) step_end = replica.StartStep(now);
        continue;
      }
      if (step_end >= 0 && step_end <= enq_t) {
        now = step_end;
        replica.FinishStep(now, on_finish);
        step_end = replica.StartStep(now);
        continue;
      }
      if (next >= n) {
        return Status::Internal(fmt::format("{}: the replica stopped with {} of {} requests open",
                                            st->source, n - finished, n));
      }
      now = enq_t;
      auto req = std::make_unique<Request>();
      req->seq = seq++;
      req->arrival_s = sends[next];
      const size_t pi = next % prompts.size();  // request k sends prompt k mod n
      req->prompt_tokens = prompts[pi].tokens;
      req->output_tokens = wl.output_len;
      req->block_hashes = hashes[pi];
      waiting[next] = static_cast<double>(replica.num_waiting());
      replica.Enqueue(std::move(req), now, on_finish);
      step_end = replica.step_planned() ? replica.Interrupt(now) : replica.StartStep(now);
      ++next;
    }
    // Drained: inference-perf sleeps `interval` (1 s), then starts the next stage.
    stage_start = std::max(now, last_end) + opt.stage_pause_s;

    StageResult res;
    res.experiment = st->experiment;
    res.stage = st->stage;
    res.rate_rps = st->rate_rps;
    res.sim_requests = static_cast<int64_t>(n);
    std::vector<double> ok_ttft, ok_e2e;
    double first_third_t = 0, last_third_t = 0, first_third_w = 0, last_third_w = 0;
    size_t n1 = 0, n3 = 0;
    for (size_t k = 0; k < n; ++k) {
      const bool third1 = k < n / 3, third3 = k >= n - n / 3;
      // TTFT of a request the client gave up on: at least the timeout.
      const double t = ttft[k] >= 0 ? ttft[k] : opt.client_timeout_s;
      if (third1) {
        first_third_t += t;
        first_third_w += waiting[k];
        ++n1;
      }
      if (third3) {
        last_third_t += t;
        last_third_w += waiting[k];
        ++n3;
      }
      if (e2e[k] < 0 || e2e[k] > opt.client_timeout_s) {
        ++res.sim_failed;
        continue;
      }
      ok_ttft.push_back(ttft[k] * 1e3);
      ok_e2e.push_back(e2e[k] * 1e3);
    }
    res.sim_ttft_first_third_s = n1 ? first_third_t / static_cast<double>(n1) : 0;
    res.sim_ttft_last_third_s = n3 ? last_third_t / static_cast<double>(n3) : 0;
    res.sim_waiting_first_third = n1 ? first_third_w / static_cast<double>(n1) : 0;
    res.sim_waiting_last_third = n3 ? last_third_w / static_cast<double>(n3) : 0;
    res.sim_prefix_hit_rate =
        prompt_tokens > 0 ? static_cast<double>(cached) / static_cast<double>(prompt_tokens) : 0;
    StageMetrics& s = res.simulated;
    s.ttft_mean_ms = Mean(ok_ttft);
    s.ttft_p50_ms = Pct(ok_ttft, 0.5);
    s.ttft_p90_ms = Pct(ok_ttft, 0.9);
    s.ttft_p99_ms = Pct(ok_ttft, 0.99);
    s.e2e_mean_ms = Mean(ok_e2e);
    s.e2e_p99_ms = Pct(ok_e2e, 0.99);
    s.decode_ms_per_token = (s.e2e_mean_ms - s.ttft_mean_ms) / (wl.output_len - 1);
    const double span = last_end - sends.front();
    s.out_tok_s = span > 0 ? static_cast<double>(ok_e2e.size()) * wl.output_len / span : 0;
    const bool growing =
        res.sim_ttft_last_third_s >= kGrowthFactor * res.sim_ttft_first_third_s ||
        res.sim_waiting_last_third >= kGrowthFactor * std::max(1.0, res.sim_waiting_first_third);
    res.simulated_overloaded =
        res.sim_failed > 0 || (growing && res.sim_ttft_last_third_s > kOverloadTtftS);
    results.push_back(std::move(res));
  }
  return results;
}

Result<ValidationReport> RunValidation(const std::vector<MeasurementRow>& rows,
                                       const ValidateOptions& opt) {
  // Runs in order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::vector<MeasurementRow>> runs;
  ValidationReport rep;
  for (const auto& r : rows) {
    if (!r.skip_reason.empty()) {
      rep.skipped.push_back({r.source, r.experiment, r.stage, r.skip_reason});
      continue;
    }
    if (!runs.count(r.experiment)) order.push_back(r.experiment);
    runs[r.experiment].push_back(r);
  }
  rep.repeats = std::max(1, opt.repeats);
  const int repeats = rep.repeats;
  // Every (run, seed) simulation is independent: they run on all cores, each into its
  // own slot, and are summed in run and seed order, so the report does not depend on
  // the thread count.
  std::vector<std::optional<Result<std::vector<StageResult>>>> sims(order.size() *
                                                                    static_cast<size_t>(repeats));
  ParallelFor(sims.size(), 0, [&](size_t j) {
    ValidateOptions o = opt;
    o.seed = opt.seed + static_cast<uint64_t>(j % static_cast<size_t>(repeats));
    sims[j].emplace(SimulateRun(runs.at(order[j / static_cast<size_t>(repeats)]), o));
  });
  const auto fields = MetricFields();
  std::vector<double> sum(fields.size(), 0);
  for (size_t run_i = 0; run_i < order.size(); ++run_i) {
    const auto& stages = runs[order[run_i]];
    auto sim = [&](int rep_i) -> Result<std::vector<StageResult>>& {
      return *sims[run_i * static_cast<size_t>(repeats) + static_cast<size_t>(rep_i)];
    };
    auto& first_run = sim(0);
    if (!first_run.ok()) {
      // A configuration the simulator (or vLLM) rejects: the run's rows are skipped.
      for (const auto& s : stages) {
        rep.skipped.push_back({s.source, s.experiment, s.stage, first_run.status().message()});
      }
      continue;
    }
    std::vector<StageResult> res = std::move(*first_run);
    for (StageResult& r : res) r.sim_seed_min = r.sim_seed_max = r.simulated;
    for (int rep_i = 1; rep_i < repeats; ++rep_i) {
      TTFT_ASSIGN_OR_RETURN(std::vector<StageResult> more, std::move(sim(rep_i)));
      for (size_t k = 0; k < res.size(); ++k) {
        for (auto f : fields) {
          res[k].simulated.*f += more[k].simulated.*f;
          res[k].sim_seed_min.*f = std::fmin(res[k].sim_seed_min.*f, more[k].simulated.*f);
          res[k].sim_seed_max.*f = std::fmax(res[k].sim_seed_max.*f, more[k].simulated.*f);
        }
        res[k].sim_requests += more[k].sim_requests;
        res[k].sim_failed += more[k].sim_failed;
        res[k].sim_ttft_first_third_s += more[k].sim_ttft_first_third_s;
        res[k].sim_ttft_last_third_s += more[k].sim_ttft_last_third_s;
        res[k].sim_waiting_first_third += more[k].sim_waiting_first_third;
        res[k].sim_waiting_last_third += more[k].sim_waiting_last_third;
        res[k].sim_prefix_hit_rate += more[k].sim_prefix_hit_rate;
        res[k].simulated_overloaded = res[k].simulated_overloaded || more[k].simulated_overloaded;
      }
    }
    for (StageResult& r : res) {
      const double n = repeats;
      for (auto f : fields) r.simulated.*f /= n;
      r.sim_requests = static_cast<int64_t>(std::llround(r.sim_requests / n));
      r.sim_failed = static_cast<int64_t>(std::llround(r.sim_failed / n));
      r.sim_ttft_first_third_s /= n;
      r.sim_ttft_last_third_s /= n;
      r.sim_waiting_first_third /= n;
      r.sim_waiting_last_third /= n;
      r.sim_prefix_hit_rate /= n;
    }
    for (StageResult& r : res) {
      const MeasurementRow* m = nullptr;
      for (const auto& s : stages) {
        if (s.stage == r.stage) m = &s;
      }
      r.measured = m->measured;
      r.source = m->source;
      r.defaults_used = m->defaults_used;
      r.measured_overloaded = m->n_failed > 0 || m->measured.ttft_mean_ms > kOverloadTtftS * 1e3;
      for (size_t i = 0; i < fields.size(); ++i) {
        r.error.*fields[i] = Ape(r.simulated.*fields[i], r.measured.*fields[i]);
        if (!r.measured_overloaded && std::isfinite(r.error.*fields[i])) {
          sum[i] += r.error.*fields[i];
          rep.mape_count.*fields[i] += 1;
          const double meas = r.measured.*fields[i];
          if (meas >= r.sim_seed_min.*fields[i] && meas <= r.sim_seed_max.*fields[i]) {
            rep.in_seed_range.*fields[i] += 1;
          }
        }
      }
      if (!r.measured_overloaded) ++rep.mape_rows;
      rep.rows.push_back(std::move(r));
    }
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    const double n = rep.mape_count.*fields[i];
    rep.mape.*fields[i] = n > 0 ? sum[i] / n : std::numeric_limits<double>::quiet_NaN();
  }
  return rep;
}

std::string ValidationText(const ValidationReport& rep) {
  std::string out;
  const auto fields = MetricFields();
  auto line = [&](const char* label, const StageMetrics& m, bool pct) {
    out += fmt::format("  {:<10}", label);
    for (auto f : fields) {
      const double v = m.*f;
      out += pct ? fmt::format(" {:>9.1f}%", v * 100) : fmt::format(" {:>10.1f}", v);
    }
    out += "\n";
  };
  std::string head = fmt::format("  {:<10}", "");
  for (const char* n : kMetricNames) head += fmt::format(" {:>10.10}", n);
  for (const StageResult& r : rep.rows) {
    out += fmt::format("{} stage {} ({} req/s){}\n", r.experiment, r.stage, r.rate_rps,
                       r.measured_overloaded || r.simulated_overloaded ? "  ** OVERLOADED **" : "");
    out += head + "\n";
    line("measured", r.measured, false);
    line("simulated", r.simulated, false);
    if (rep.repeats > 1) {
      line("seed min", r.sim_seed_min, false);
      line("seed max", r.sim_seed_max, false);
    }
    line("abs err", r.error, true);
    for (const std::string& d : r.defaults_used) out += "  engine setting left empty: " + d + "\n";
    out += fmt::format(
        "  simulated prefix-cache hit rate {:.1f}%; mean TTFT first/last third of sends "
        "{:.3f}/{:.3f} s; mean waiting {:.1f}/{:.1f}; {} of {} slower than the client "
        "timeout\n",
        r.sim_prefix_hit_rate * 100, r.sim_ttft_first_third_s, r.sim_ttft_last_third_s,
        r.sim_waiting_first_third, r.sim_waiting_last_third, r.sim_failed, r.sim_requests);
    if (r.measured_overloaded) {
      out += fmt::format(
          "  overloaded in the measurement ({}) and {} in the simulation: TTFT in minutes, a "
          "queue that grows through the run; measured statistics cover only requests that beat "
          "the 300 s client timeout (censored). Left out of the MAPE.\n",
          "client timeouts / TTFT above 10 s", r.simulated_overloaded ? "flagged" : "NOT flagged");
    } else if (r.simulated_overloaded) {
      out += "  the simulation is overloaded where the measurement is not: a model error.\n";
    }
    out += "\n";
  }
  for (const SkippedRow& k : rep.skipped) {
    out += fmt::format("{} stage {}: SKIPPED, not simulated: {}\n", escape::Terminal(k.experiment),
                       k.stage, escape::Terminal(k.reason));
  }
  if (!rep.skipped.empty()) out += "\n";
  out += fmt::format(
      "MAPE over {} row{} not measured overloaded (simulated: {})\n", rep.mape_rows,
      rep.mape_rows == 1 ? "" : "s",
      rep.repeats == 1 ? std::string("one seed") : fmt::format("mean of {} seeds", rep.repeats));
  out += head + "\n";
  line("MAPE", rep.mape, true);
  if (rep.repeats > 1) {
    out += fmt::format("  {:<10}", "in range");
    for (auto f : fields) {
      out += fmt::format(" {:>10}",
                         fmt::format("{:.0f}/{:.0f}", rep.in_seed_range.*f, rep.mape_count.*f));
    }
    out += fmt::format(
        "\n  in range: rows whose measured value lies within the {} seeds' lowest to highest "
        "simulated value (outside it, random prompts and arrivals alone do not explain the "
        "error)\n",
        rep.repeats);
  }
  out +=
      "  out_tok_s: generated tokens per second (a table's re-tokenised out_tok_s is "
      "rescaled by output_len / output_tokens_mean)\n";
  return out;
}

nlohmann::json ValidationJson(const ValidationReport& rep) {
  const auto fields = MetricFields();
  auto obj = [&](const StageMetrics& m) {
    nlohmann::json j = nlohmann::json::object();
    for (size_t i = 0; i < fields.size(); ++i) {
      const double v = m.*fields[i];
      j[kMetricNames[i]] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
    }
    return j;
  };
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json overloaded = nlohmann::json::array();
  for (const StageResult& r : rep.rows) {
    nlohmann::json j{{"experiment", r.experiment},
                     {"stage", r.stage},
                     {"rate_rps", r.rate_rps},
                     {"overloaded", r.measured_overloaded || r.simulated_overloaded},
                     {"measured_overloaded", r.measured_overloaded},
                     {"simulated_overloaded", r.simulated_overloaded},
                     {"measured", obj(r.measured)},
                     {"simulated", obj(r.simulated)},
                     {"simulated_seed_min", obj(r.sim_seed_min)},
                     {"simulated_seed_max", obj(r.sim_seed_max)},
                     {"error", obj(r.error)},
                     {"simulation",
                      {{"requests", r.sim_requests},
                       {"slower_than_client_timeout", r.sim_failed},
                       {"prefix_hit_rate", r.sim_prefix_hit_rate},
                       {"ttft_first_third_s", r.sim_ttft_first_third_s},
                       {"ttft_last_third_s", r.sim_ttft_last_third_s},
                       {"waiting_first_third", r.sim_waiting_first_third},
                       {"waiting_last_third", r.sim_waiting_last_third}}},
                     {"source", r.source},
                     {"engine_defaults_used", r.defaults_used}};
    if (r.measured_overloaded) overloaded.push_back(fmt::format("{}/{}", r.experiment, r.stage));
    rows.push_back(std::move(j));
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const SkippedRow& k : rep.skipped) {
    skipped.push_back({{"source", k.source},
                       {"experiment", k.experiment},
                       {"stage", k.stage},
                       {"reason", k.reason}});
  }
  return {{"rows", rows},
          {"skipped", skipped},
          {"mape", obj(rep.mape)},
          {"seeds", rep.repeats},
          {"mape_rows", rep.mape_rows},
          {"mape_count", obj(rep.mape_count)},
          {"in_seed_range", obj(rep.in_seed_range)},
          {"overloaded_rows_excluded", overloaded}};
}

}  // namespace ttft
