// inference-perf's shared_prefix generator and constant load timer (ttft/workload.h).
//
// Sources (kubernetes-sigs/inference-perf at e8e0aa99c57f2ffa0912df7ba1fbd2a8a596a041, as
// read and described in ../shared/data/vllm-h100/README.md sections 6.1, 6.2 and 7):
// inference_perf/datagen/shared_prefix_datagen.py (prompts), inference_perf/loadgen/
// load_timer.py (ConstantLoadTimer), inference_perf/loadgen/load_generator.py (stages,
// request k -> prompt k mod n).
//
// Tokens are synthetic (content keys, ttft/workload.h): what matters for the engine is
// which prompts share which blocks, and the lengths. The real prompt is
// BOS + system text + " " + question text; the space merges into the question's first
// token, so the shared part is BOS + the system text's tokens.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ttft/workload.h"
#include "workload/random.h"

namespace ttft {

using workload_internal::Combine;
using workload_internal::Exp1;
using workload_internal::HashStr;
using workload_internal::HashU64;
using workload_internal::Uniform01;

namespace {

int32_t Inflate(int nominal, const SharedPrefixSpec& spec, Rng& rng) {
  const double f = spec.token_inflation * (1.0 + spec.length_jitter * (2.0 * Uniform01(rng) - 1.0));
  return static_cast<int32_t>(std::max(1.0, std::round(nominal * f)));
}

}  // namespace

Status ValidateSharedPrefix(const SharedPrefixSpec& s, const std::string& path) {
  auto bad = [&](std::string_view field, auto value, std::string_view rule) {
    return Status::Invalid(fmt::format("{}.{}: {}, got {}", path, field, rule, value));
  };
  if (s.num_groups < 1) return bad("num_groups", s.num_groups, "must be >= 1");
  if (s.num_prompts_per_group < 1) {
    return bad("num_prompts_per_group", s.num_prompts_per_group, "must be >= 1");
  }
  if (s.system_prompt_len < 0) return bad("system_prompt_len", s.system_prompt_len, "must be >= 0");
  if (s.question_len < 1) return bad("question_len", s.question_len, "must be >= 1");
  if (s.output_len < 1) return bad("output_len", s.output_len, "must be >= 1");
  if (!(s.token_inflation > 0) || s.token_inflation > 4) {
    return bad("token_inflation", s.token_inflation, "must be in (0, 4]");
  }
  if (!(s.length_jitter >= 0) || s.length_jitter >= 1) {
    return bad("length_jitter", s.length_jitter, "must be in [0, 1)");
  }
  if (!(s.stage_gap_s >= 0) || std::isinf(s.stage_gap_s)) {
    return bad("stage_gap_s", s.stage_gap_s, "must be >= 0");
  }
  if (s.stages.empty()) return Status::Invalid(fmt::format("{}.stages: at least one stage", path));
  for (size_t i = 0; i < s.stages.size(); ++i) {
    const LoadStage& st = s.stages[i];
    if (!(st.rate_rps > 0) || std::isinf(st.rate_rps)) {
      return bad(fmt::format("stages[{}].rate_rps", i), st.rate_rps, "must be > 0");
    }
    if (!(st.duration_s > 0) || std::isinf(st.duration_s)) {
      return bad(fmt::format("stages[{}].duration_s", i), st.duration_s, "must be > 0");
    }
    if (st.rate_rps * st.duration_s > 1e8) {
      return bad(fmt::format("stages[{}]", i), st.rate_rps * st.duration_s,
                 "more than 1e8 requests in one stage");
    }
  }
  return Status::Ok();
}

std::vector<SharedPrefixPrompt> BuildSharedPrefixPrompts(const SharedPrefixSpec& spec,
                                                         uint64_t seed) {
  const uint64_t base = Combine(HashU64(seed, 0x5348415245ULL), spec.tenant);
  Rng rng(Combine(base, "lengths"));
  const uint64_t bos_key = HashStr("bos", 0x424f53);
  std::vector<SharedPrefixPrompt> prompts;
  prompts.reserve(static_cast<size_t>(spec.num_groups) *
                  static_cast<size_t>(spec.num_prompts_per_group));
  for (int g = 0; g < spec.num_groups; ++g) {
    const uint64_t sys_key = Combine(Combine(base, "system"), static_cast<uint64_t>(g));
    const int32_t sys_tokens =
        spec.system_prompt_len > 0 ? Inflate(spec.system_prompt_len, spec, rng) : 0;
    for (int q = 0; q < spec.num_prompts_per_group; ++q) {
      SharedPrefixPrompt p;
      p.group = g;
      if (spec.bos) p.pieces.push_back({bos_key, 1});
      if (sys_tokens > 0) p.pieces.push_back({sys_key, sys_tokens});
      p.shared_tokens = (spec.bos ? 1 : 0) + sys_tokens;
      const uint64_t q_key = Combine(Combine(sys_key, "question"), static_cast<uint64_t>(q));
      const int32_t q_tokens = Inflate(spec.question_len, spec, rng);
      p.pieces.push_back({q_key, q_tokens});
      p.tokens = p.shared_tokens + q_tokens;
      prompts.push_back(std::move(p));
    }
  }
  // random.shuffle: Fisher-Yates.
  Rng shuffle_rng(Combine(base, "shuffle"));
  for (size_t i = prompts.size(); i > 1; --i) {
    auto j = static_cast<size_t>(Uniform01(shuffle_rng) * static_cast<double>(i));
    j = std::min(j, i - 1);
    std::swap(prompts[i - 1], prompts[j]);
  }
  return prompts;
}

std::vector<double> ConstantLoadSendTimes(double rate_rps, double duration_s, double start_s,
                                          Rng& rng) {
  // ConstantLoadTimer: n exponential gaps of mean 1/rate, rescaled to sum to duration.
  const auto n = static_cast<int64_t>(rate_rps * duration_s);
  std::vector<double> times;
  if (n <= 0) return times;
  times.reserve(static_cast<size_t>(n));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += Exp1(rng);
    times.push_back(sum);
  }
  const double scale = duration_s / sum;
  for (double& t : times) t = start_s + 1.0 + t * scale;
  times.back() = start_s + 1.0 + duration_s;  // exact, whatever the rounding
  return times;
}

}  // namespace ttft
