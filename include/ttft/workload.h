// -----------------------------------------------------------------------------
// File: ttft/workload.h
// -----------------------------------------------------------------------------
//
// Traffic: who sends what, and when.
//
// A prompt is an ordered list of segments (system prompt, tool schemas, a user's
// profile, a timestamp, retrieved chunks...). Each segment has a *content key*: two
// segments with the same key hold the same tokens. What a segment's key depends on
// is its kind:
//
//   static       the same for every request (key = the segment's content id)
//   per_tenant   one per tenant
//   per_user     one per (tenant, user); users are drawn from the tenant's population
//   per_request  unique to each request (a timestamp, a request id, retrieved text)
//
// Tokens are synthetic but exact: token i of a segment with key K is a pure function
// of (K, i), so the KV block hashes computed from them chain exactly as vLLM's do
// (hash(parent, block tokens, extra keys), full blocks only). Moving a per_request
// segment ahead of a static one therefore changes every later block hash, as it
// does in a real engine.
//
// Thread safety: a RequestSource is single-threaded; specs are values.

#ifndef TTFT_WORKLOAD_H_
#define TTFT_WORKLOAD_H_

#include <climits>
#include <cstdint>
#include <istream>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/core.h"

namespace ttft {

// The simulator's random source: xoshiro256** (Blackman & Vigna, "Scrambled
// linear pseudorandom number generators", 2018), seeded through SplitMix64 as its
// authors recommend. A fixed algorithm, so the same seed gives the same run on every
// platform and library version; and cheap to construct, which matters because a
// per-user segment's length is drawn from a generator seeded by the user's key on
// every request (mt19937_64 fills a 2.5 KB state per construction).
class Rng {
 public:
  using result_type = uint64_t;
  explicit Rng(uint64_t seed = 1) { this->seed(seed); }
  void seed(uint64_t seed) {
    for (uint64_t& w : s_) {
      seed += 0x9e3779b97f4a7c15ULL;  // SplitMix64
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      w = z ^ (z >> 31);
    }
  }
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// A distribution of non-negative values (token counts, lengths).
struct Distribution {
  enum class Kind : uint8_t { kFixed, kUniform, kLognormal, kEmpirical };
  Kind kind = Kind::kFixed;
  double value = 0;                     // kFixed
  double min = 0, max = 0;              // kUniform (inclusive)
  double mean = 0, cv = 0;              // kLognormal: mean and coefficient of variation
  double clamp_min = 0, clamp_max = 0;  // kLognormal: 0 = no clamp
  std::vector<double> values;           // kEmpirical: sampled uniformly (or by weights)
  std::vector<double> weights;          // kEmpirical: optional, same length as values

  static Distribution Fixed(double v) {
    Distribution d;
    d.value = v;
    return d;
  }
  // Draws one value. Hand-rolled transforms (not std::*_distribution) so results
  // do not depend on the standard library's implementation.
  double Sample(Rng& rng) const;
  double Mean() const;
};

enum class SegmentKind : uint8_t { kStatic, kPerTenant, kPerUser, kPerRequest };
std::string_view ToString(SegmentKind k);

struct SegmentSpec {
  std::string name;  // e.g. "system_prompt", "timestamp"
  SegmentKind kind = SegmentKind::kStatic;
  std::string content;  // static: the content id (defaults to `name`)
  Distribution tokens;  // static: sampled once; per_user: once per user
};

// One version of a prompt template: its segments in order.
struct TemplateVersion {
  std::string version;  // e.g. "v1"
  std::vector<SegmentSpec> segments;
};

struct TemplateSpec {
  std::string name;  // e.g. "support-chat"
  std::vector<TemplateVersion> versions;
};

// A piecewise-constant change of a rate: from `from_s` on, the rate is `rate_rps`.
struct RatePiece {
  double from_s = 0;
  double rate_rps = 0;
};

struct ArrivalSpec {
  enum class Kind : uint8_t { kPoisson, kGamma };
  Kind kind = Kind::kPoisson;
  double rate_rps = 0;            // REQUIRES: > 0 unless pieces set the rate
  double cv = 1;                  // kGamma: coefficient of variation of the gaps
  std::vector<RatePiece> pieces;  // sorted by from_s; overrides rate_rps from from_s
};

struct TenantSpec {
  std::string name;
  ArrivalSpec arrivals;
  std::string template_name;
  std::string template_version;  // active at t = 0
  Distribution output_tokens;
  int64_t users = 1000;    // population for per_user segments
  std::string region;      // "" = any region
  std::string pool;        // "" = any pool
  std::string cache_salt;  // vLLM cache_salt: isolates this tenant's cache
  // The client disconnects this long after sending if the request has not
  // finished (0: never); the server then aborts it, as vLLM does on disconnect.
  double timeout_s = 0;
};

// A trace to replay (../shared/data/traces/README.md describes both formats).
struct TraceSpec {
  enum class Format : uint8_t { kMooncake, kAzure };
  Format format = Format::kMooncake;
  std::string path;
  std::string tenant = "trace";  // label for its requests
  double time_scale = 1.0;       // multiply inter-arrival times (0.5 = twice the rate)
  int64_t max_requests = 0;      // 0 = all
  std::string region, pool;
};

// A request as it enters the fleet.
struct Request {
  int64_t seq = 0;  // dense id in arrival order
  double arrival_s = 0;
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;  // tokens to generate (ignore_eos semantics)
  // Hashes of the prompt's full KV blocks, chained (block i depends on 0..i).
  std::vector<uint64_t> block_hashes;
  // Blocks at index >= unique_from_block hold content unique to this request (their
  // chain passes through a per_request segment), so no other request can share
  // them. A hint the engine uses to keep them out of its shared hash map; it
  // changes no result.
  int32_t unique_from_block = INT32_MAX;
  int32_t tenant = 0;           // index into WorkloadSpec::tenant names
  int32_t template_label = 0;   // index into RequestSource::template_labels()
  double client_timeout_s = 0;  // TenantSpec::timeout_s (0: the client waits forever)
  // Under a canary template switch (TemplateSwitch::canary_fraction): which side of
  // the split the request fell on. kNone otherwise.
  enum class CanaryArm : uint8_t { kNone, kBaseline, kCanary };
  CanaryArm canary = CanaryArm::kNone;
};

// A tenant's template switches to `version` at `at_s` (a deploy_template event).
struct TemplateSwitch {
  double at_s = 0;
  std::string tenant;  // "" = every tenant using `template_name`
  std::string template_name;
  std::string version;
  // A canary: in (0, 1), only this fraction of the tenant's requests from `at_s` on
  // (drawn independently per request from the tenant's own canary generator, so the
  // other draws are unchanged) use `version`; the rest keep the previous version.
  // Both are marked (Request::canary). 0: every request switches.
  double canary_fraction = 0;
};

// A tenant's rate is multiplied by `multiplier` from `at_s` on (tenant_traffic).
struct TrafficChange {
  double at_s = 0;
  std::string tenant;
  double multiplier = 1;
};

// Hashes full blocks of a prompt given as (content key, length) pieces, chained as
// vLLM's hash_request_tokens does: h_i = H(h_{i-1}, tokens of block i, extra) with
// the salt as the first block's extra key. Only full blocks are hashed.
struct PromptPiece {
  uint64_t key = 0;
  int32_t tokens = 0;
};
void ComputeBlockHashes(const std::vector<PromptPiece>& pieces, int block_size, uint64_t salt,
                        std::vector<uint64_t>& out);

// One constant-rate load stage of inference-perf: `rate_rps` for `duration_s`.
struct LoadStage {
  double rate_rps = 0;
  double duration_s = 0;
};

// The `shared_prefix` data generator and `constant` load type of the load tool
// kubernetes-sigs/inference-perf at commit e8e0aa9, which produced the vLLM
// measurements in ../shared/data/vllm-h100 (its README, sections 6 and 7):
//
//   * num_groups system prompts of system_prompt_len random token ids, and per
//     group num_prompts_per_group questions of question_len random ids; prompt =
//     system + " " + question: num_groups x num_prompts_per_group distinct prompts,
//     shuffled once. Random ids are decoded and re-encoded, so real token counts are
//     about `token_inflation` times the nominal ones (with +-`length_jitter` spread
//     per text), plus one BOS token shared by every prompt.
//   * Request k of a stage sends prompt k mod (groups x prompts), single turn, with
//     exactly output_len output tokens (ignore_eos).
//   * A stage draws N = int(rate_rps * duration_s) exponential gaps, rescales them
//     to sum to duration_s, and sends at stage_start + 1 s + the cumulative sums.
//     Stages run back to back: the next starts when every request of the previous
//     one has finished (the server drains) and after a 1 s pause.
//
// In a fleet scenario (WorkloadSpec::shared_prefix) the drain cannot be awaited,
// since the source does not see the engines: stage k+1 starts `stage_gap_s` after
// stage k's last send. ttft validate (ttft/validate.h) drives the stages itself
// and waits for the drain, as inference-perf did.
struct SharedPrefixSpec {
  std::string tenant = "shared-prefix";
  int num_groups = 10;
  int num_prompts_per_group = 10;
  int system_prompt_len = 100;
  int question_len = 100;
  int output_len = 100;
  // Tokens per nominal token after decode/re-encode of random ids. 1.048 is the mean
  // of the four Llama-2 runs: (prompt_tokens_mean - 1 BOS) / (system + question) is
  // 573.91/547, 592.49/566, 786.43/750, 1081.93/1034 (../shared/data/vllm-h100).
  double token_inflation = 1.048;
  // Each system text and question is inflated by token_inflation * (1 + U(-j, j)):
  // j = 0.03 reproduces the measured prompt-length ranges (general: 559-589).
  double length_jitter = 0.03;
  bool bos = true;
  std::vector<LoadStage> stages;
  double stage_gap_s = 1.0;  // fleet scenarios only: last send of a stage -> next stage start
  std::string region, pool;
};

// One of the generator's prompts, after the shuffle.
struct SharedPrefixPrompt {
  int32_t group = 0;
  int32_t tokens = 0;         // including BOS
  int32_t shared_tokens = 0;  // BOS + the group's system text
  std::vector<PromptPiece> pieces;
};

// The shuffled prompts of `spec`, drawn from `seed`. Prompts with the same group
// share their BOS + system pieces (equal keys), so they share KV blocks.
std::vector<SharedPrefixPrompt> BuildSharedPrefixPrompts(const SharedPrefixSpec& spec,
                                                         uint64_t seed);

// inference-perf's ConstantLoadTimer: N = int(rate_rps * duration_s) send times in
// (start_s + 1, start_s + 1 + duration_s], the last exactly at the end.
std::vector<double> ConstantLoadSendTimes(double rate_rps, double duration_s, double start_s,
                                          Rng& rng);

// Checks a SharedPrefixSpec; errors name the field ("shared_prefix[i].question_len: ...").
Status ValidateSharedPrefix(const SharedPrefixSpec& spec, const std::string& path);

struct WorkloadSpec {
  std::vector<TemplateSpec> templates;
  std::vector<TenantSpec> tenants;
  std::vector<TraceSpec> traces;
  std::vector<TemplateSwitch> template_switches;
  std::vector<TrafficChange> traffic_changes;
  int block_size = 16;
  double duration_s = 0;  // arrivals in [0, duration_s)
  uint64_t seed = 1;
  std::vector<SharedPrefixSpec> shared_prefix;  // inference-perf shared_prefix sources
};

// ---------------------------------------------------------------------------
// Limits (docs/scenarios.md, "Limits"): a workload beyond them is an error before
// anything runs, never a run that does not end or that exhausts memory.
// ---------------------------------------------------------------------------

// Simulated time of one run: 30 days.
inline constexpr double kMaxDurationS = 30 * 86400.0;
// Arrival rate of one tenant or load stage (any rate piece, times its traffic
// changes): 100,000 requests/s, about 100 times a large fleet's peak.
inline constexpr double kMaxRateRps = 1e5;
// Expected arrivals of a run: the sum over tenants and stages of peak rate x
// duration. 50 M requests take about 8 minutes to simulate (the seed drill's 38,900
// requests take 0.35 s: about 110,000 requests/s).
inline constexpr double kMaxExpectedRequests = 5e7;
// Tokens of one prompt segment or of one request's output: 2^21 = 2,097,152, twice
// the longest context window served today (1 M tokens). A distribution without a
// max is clamped here when sampled; a fixed value, mean or max above it is an error.
inline constexpr int32_t kMaxSegmentTokens = 1 << 21;

// Checks `spec` against the limits above. Errors name the field, the value and the
// limit ("tenants[2].rate_rps: 1e+09 is above the limit of 100000 requests/s").
// RequestSource::Create calls it.
Status CheckWorkloadLimits(const WorkloadSpec& spec);

// Generates requests in arrival order from tenants and traces. Streams: memory is
// bounded by the number of tenants and traces, not the run length.
class RequestSource {
 public:
  // Validates cross references (template names and versions, tenants named by
  // switches) and opens traces. Errors name the offending field.
  static Result<std::unique_ptr<RequestSource>> Create(const WorkloadSpec& spec);
  virtual ~RequestSource() = default;

  // The next request, or false when the run's arrivals are exhausted.
  virtual Result<bool> Next(Request& out) = 0;
  // Names behind Request::tenant and Request::template_label ("name@version").
  virtual const std::vector<std::string>& tenant_names() const = 0;
  virtual const std::vector<std::string>& template_labels() const = 0;
  virtual const std::vector<std::string>& tenant_regions() const = 0;
  virtual const std::vector<std::string>& tenant_pools() const = 0;
};

// -----------------------------------------------------------------------------
// Trace files (Mooncake JSONL, Azure CSV), read one record at a time
// -----------------------------------------------------------------------------

// Mooncake: one id per 512-token block of the prompt.
inline constexpr int64_t kMooncakeBlockTokens = 512;
// Prompt and output lengths above this are rejected (Request holds int32 counts).
inline constexpr int64_t kMaxTraceTokens = 100'000'000;

struct TraceRecord {
  double t_s = 0;  // seconds after the trace's first record (time_scale not applied)
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;       // >= 0 as read; callers use max(1, .)
  std::vector<uint64_t> hash_ids;  // Mooncake only: ceil(input_tokens / 512) ids
};

// Reads one trace record per line, streaming. Every malformed line is an error
// naming "name:line: field: ..."; blank lines are skipped. Timestamps must not
// decrease.
class TraceReader {
 public:
  // Opens `path`; NotFound naming it when it cannot be opened.
  static Result<std::unique_ptr<TraceReader>> Open(TraceSpec::Format format,
                                                   const std::string& path);
  // Reads from `in`; `name` stands for the file in messages.
  TraceReader(TraceSpec::Format format, std::unique_ptr<std::istream> in, std::string name);

  // The next record; false at the end of the trace.
  Result<bool> Next(TraceRecord& rec);

 private:
  Status ParseMooncake(const std::string& line, TraceRecord& rec);
  Status ParseAzure(const std::string& line, TraceRecord& rec);
  Status Error(std::string_view field, std::string_view what) const;

  TraceSpec::Format format_;
  std::unique_ptr<std::istream> in_;
  std::string name_;
  int64_t line_no_ = 0;
  bool header_done_ = false;
  bool have_origin_ = false;
  // Origin of the time axis: the first record's time, split to keep precision for
  // Unix-epoch Azure timestamps.
  int64_t origin_whole_s_ = 0;
  double origin_frac_s_ = 0;
  double last_t_s_ = 0;
  std::string line_;
};

}  // namespace ttft

#endif  // TTFT_WORKLOAD_H_
