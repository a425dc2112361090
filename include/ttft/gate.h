// -----------------------------------------------------------------------------
// File: ttft/gate.h
// -----------------------------------------------------------------------------
//
// The canary gate (`ttft gate`, docs/gate.md): is a canary's serving latency worse
// than its baseline's, judged statistically rather than by comparing two numbers?
//
// A GateArm is one side of the comparison (the baseline or the canary): its window's
// WindowStats (ttft/window_stats.h, every figure the gate prints) and the values of its
// requests (spans) or the histogram deltas of its series (metrics) that the tests use. JudgeGate
// judges every criterion of a GateConfig the way Kayenta's NetflixACAJudge does (spinnaker/kayenta
// MannWhitneyClassifier.scala; summary in
// ../shared/reference/canary-sketches-and-style.md A1): a criterion is High (Low)
// when the change is both statistically significant at the configured confidence
// AND at least the criterion's threshold (Kayenta's effect-size check), NoData when
// an arm has fewer than the minimum samples, Pass otherwise. The verdict is Fail
// when a critical criterion (or two non-critical ones) is High/Low in its harmful
// direction, Inconclusive when a critical criterion has no data, else Pass.
//
// Repeated looks (`--every`, `--state`) use SequentialGate: a mixture sequential
// probability ratio test per tail indicator whose false-fail probability stays
// below alpha however often it is looked at (Ville's inequality; Johari et al.,
// "Always Valid Inference", arXiv:1512.04922; Howard et al., arXiv:1810.08240).
//
// Example:
//
//   ttft::GateConfig config = ttft::DefaultGateConfig();
//   ttft::GateArm baseline = ttft::ArmFromSpans(table, baseline_rows);
//   ttft::GateArm canary = ttft::ArmFromSpans(table, canary_rows);
//   ttft::GateResult r = ttft::JudgeGate(config, baseline, canary);
//   if (r.verdict == ttft::GateVerdict::kFail) ...
//
// `ttft gate` is LoadGateArms (inputs, selectors or a live Prometheus into arms) and
// RunGate (one look, a look with a state file, or looks every N seconds on a
// GateClock) with a rendering.
//
// Thread safety: the functions are re-entrant; the types are values; SystemGateClock
// is shared and stateless.

#ifndef TTFT_GATE_H_
#define TTFT_GATE_H_

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ttft/core.h"
#include "ttft/dataset.h"
#include "ttft/stats.h"
#include "ttft/window_stats.h"

namespace ttft {

// -----------------------------------------------------------------------------
// Criteria
// -----------------------------------------------------------------------------

// What a criterion compares. Quantile metrics compare canary / baseline (a ratio);
// the others compare canary - baseline (an absolute difference).
enum class GateMetric : uint8_t {
  kTtftP99,                // ratio of p99 TTFT
  kQueueP99,               // ratio of p99 queue time
  kPrefixCacheHitRate,     // difference of vLLM's token hit rate (a drop is harmful)
  kErrorRate,              // difference of the error rate
  kTtftP50,                // ratio of p50 TTFT
  kItlP99,                 // ratio of p99 per-request mean inter-token latency
  kPreemptionsPerRequest,  // difference of the mean preemptions per request
};
inline constexpr int kNumGateMetrics = 7;
// "ttft_p99", "queue_p99", "prefix_cache_hit_rate", "error_rate", "ttft_p50",
// "itl_p99", "preemptions_per_request".
std::string_view ToString(GateMetric m);
std::optional<GateMetric> ParseGateMetric(std::string_view name);
// True for the quantile metrics (judged on a ratio).
bool IsRatioMetric(GateMetric m);

// The harmful direction of a change.
enum class GateDirection : uint8_t { kIncrease, kDecrease, kEither };
std::string_view ToString(GateDirection d);  // "increase", "decrease", "either"

struct GateCriterion {
  GateMetric metric = GateMetric::kTtftP99;
  GateDirection direction = GateDirection::kIncrease;
  // The smallest harmful change: a ratio (> 1; a decrease is judged against
  // 1 / threshold) for quantile metrics, an absolute difference (> 0) otherwise.
  double threshold = 1.5;
  // Fewer samples than this in either arm (requests for quantiles and rates, ok
  // requests with prompt tokens for the hit rate): NoData.
  int64_t min_samples = 100;
  // A critical criterion fails the gate alone; NoData on it makes it Inconclusive.
  bool critical = true;
};

struct GateConfig {
  std::vector<GateCriterion> criteria;
  // Two-sided confidence of every interval (Kayenta's judge uses 0.98).
  double confidence = 0.98;
  int bootstrap_resamples = 1000;
  // Repeated looks: the family-wise false-fail probability over all looks.
  double sequential_alpha = 0.01;
};

// The defaults (docs/gate.md), all critical with at least 100 samples per arm: p99
// TTFT ratio 1.5, p99 queue-time ratio 2.0, prefix-cache hit-rate drop 0.10,
// error-rate increase 0.02.
GateConfig DefaultGateConfig();

// Reads a gate config (YAML):
//   confidence: 0.98          # optional, in (0.5, 1)
//   bootstrap_resamples: 1000 # optional, >= 100
//   sequential_alpha: 0.01    # optional, in (0, 0.5)
//   criteria:                 # optional: replaces the defaults
//     - {metric: ttft_p99, direction: increase, threshold: 1.5, min_samples: 100,
//        critical: true}
// Unknown keys, unknown metrics or directions, and impossible thresholds (a ratio
// <= 1, a difference <= 0 or >= 1 for rates, min_samples < 1) are InvalidArgument
// naming "file:line".
Result<GateConfig> LoadGateConfig(const std::string& path);
// The same from text; `name` stands for the file in messages.
Result<GateConfig> ParseGateConfig(std::string_view text, const std::string& name);

// -----------------------------------------------------------------------------
// Arms
// -----------------------------------------------------------------------------

// One cumulative histogram (the sum of an arm's series over its window).
struct GateHistogram {
  std::vector<double> upper_bounds;       // finite `le` bounds, increasing
  std::vector<double> cumulative_counts;  // observations <= upper_bounds[i]
  double count = 0;                       // all observations (+Inf)
  bool empty() const { return count <= 0; }
};

// One side of the comparison: its window statistics and the samples the statistical
// tests need. ArmFromSpans and ArmFromMetrics are the one place both are extracted,
// with the same definitions (ttft/window_stats.h), so the samples agree with the
// figures: the mean of `preemptions` is stats.preemptions_per_request, the type-7
// p99 of `ttft_s` is stats.ttft_s.p99, and so on.
struct GateArm {
  bool from_metrics = false;
  std::string model;  // the arm's model label ("" when unknown or mixed)
  // The point figures: every baseline and canary value the gate prints or compares
  // (quantiles, hit rate, error rate, preemptions per request, sample counts) is read
  // here, the figures `ttft stats` and `ttft diagnose` print for the same window.
  WindowStats stats;
  // Spans: one value per request, as WindowStats defines them. Latencies over ok
  // requests with the value known.
  std::vector<double> ttft_s, queue_s, itl_s;
  std::vector<double> ttft_arrival_s;     // parallel to ttft_s
  std::vector<double> queue_arrival_s;    // parallel to queue_s
  std::vector<double> request_arrival_s;  // every request, sorted
  std::vector<double> cached_tokens;      // ok requests with prompt and cached tokens known
  std::vector<double> prompt_tokens;      // parallel to cached_tokens
  std::vector<double> preemptions;        // every request with the count known
  std::vector<double> error_arrival_s;    // arrivals of failed requests, sorted
  // Metrics: the histograms' increase over the window (the bucket test's counts).
  GateHistogram ttft_hist, queue_hist, itl_hist;
};

// The arm of `rows` of `table` (the samples, and ComputeWindowStats with
// StatsDetail::kFull over [first arrival, last arrival]). `model` is set when every row
// has the same model label.
GateArm ArmFromSpans(const SpanTable& table, std::span<const uint32_t> rows);

// The arm of the metric snapshots' increase over their window, keeping only the
// series whose labels match every (name, value) of `match` (empty: all): the
// histograms, and WindowStatsFromMetrics over the same series. Errors: fewer than 2
// snapshots (InvalidArgument), no TTFT histogram series matching (NotFound), matching
// series with different bucket bounds (InvalidArgument).
Result<GateArm> ArmFromMetrics(std::span<const MetricSnapshot> snapshots,
                               std::span<const std::pair<std::string, std::string>> match);

// Parses a selector "name=value[,name=value...]" (blanks around names and values
// ignored, a value may be quoted). InvalidArgument names `flag`; a label given twice is
// one (it would select nothing).
Result<std::vector<std::pair<std::string, std::string>>> ParseSelector(std::string_view text,
                                                                       std::string_view flag);

// Rows of `table` whose span labels match every (name, value) of `match`; names must
// be span labels (tenant, replica, region, template, model, deploy), else
// InvalidArgument.
Result<std::vector<uint32_t>> SelectRows(
    const SpanTable& table, std::span<const std::pair<std::string, std::string>> match);

// -----------------------------------------------------------------------------
// The judge
// -----------------------------------------------------------------------------

enum class GateLabel : uint8_t { kPass, kHigh, kLow, kNoData };
std::string_view ToString(GateLabel l);  // "Pass", "High", "Low", "NoData"

enum class GateVerdict : uint8_t { kPass, kFail, kInconclusive };
std::string_view ToString(GateVerdict v);  // "Pass", "Fail", "Inconclusive"
// 0 Pass, 1 Fail, 3 Inconclusive.
int GateExitCode(GateVerdict v);

struct CriterionResult {
  GateCriterion criterion;
  GateLabel label = GateLabel::kNoData;
  bool harmful = false;  // High or Low in the criterion's harmful direction
  double baseline = kMissing, canary = kMissing;
  // From histogram buckets: "<=" when the quantile lies in the first bucket (the value is
  // that bucket's bound), ">=" above the last finite bound (the value is that bound),
  // "" when the buckets resolve it (or from spans).
  std::string baseline_bound, canary_bound;
  // canary / baseline (ratio metrics) or canary - baseline, and its interval: from
  // spans a bootstrap interval; from buckets with a bound above, the interval of the
  // ratio the buckets allow (QuantileRatio, ttft/window_stats.h).
  double effect = kMissing, effect_lower = kMissing, effect_upper = kMissing;
  int64_t baseline_n = 0, canary_n = 0;
  // Mann-Whitney U of canary against baseline (spans, quantile metrics): two-sided
  // p and the Hodges-Lehmann shift (canary - baseline) with its interval.
  double mw_p = kMissing, hl_shift = kMissing, hl_lower = kMissing, hl_upper = kMissing;
  std::string method;  // how the interval was obtained
  std::string rule;    // the rule that decided the label, in words
};

// nlohmann::json's implicit special members are not all noexcept; a GateResult is never
// moved in a noexcept context.
struct GateResult {  // NOLINT(bugprone-exception-escape)
  GateVerdict verdict = GateVerdict::kInconclusive;
  std::string reason;  // why, in one sentence
  std::vector<CriterionResult> criteria;
  double confidence = 0.98;
  // Repeated looks: the sequential test's state after this look (null otherwise).
  nlohmann::json sequential;
};

// Judges every criterion and decides the verdict. Never Pass when a critical
// criterion has no data. Deterministic.
GateResult JudgeGate(const GateConfig& config, const GateArm& baseline, const GateArm& canary);

// -----------------------------------------------------------------------------
// Repeated looks: a mixture SPRT per tail indicator
// -----------------------------------------------------------------------------

// The test for one indicator stream x_i in {0, 1} of canary requests (TTFT above the
// baseline's p99, queue time above the baseline's p99, error). H0: P(x = 1) <= p0,
// with p0 the baseline's own exceedance rate, taken at the upper end of its Wilson
// interval so that its estimation error does not count against the canary.
// Statistic: the mixture likelihood ratio
//   L_n = (1/J) sum_j (theta_j / p0)^k ((1 - theta_j) / (1 - p0))^(n - k),
// theta_j = p0 * r_j, r_j in kSequentialRatios. Each term is a nonnegative
// supermartingale under H0 (theta_j >= p0 >= P(x = 1)), so is their mean, and Ville's
// inequality gives P(exists n: L_n >= 1 / alpha) <= alpha for any number of looks and
// any stopping rule (Robbins' method of mixtures; Johari et al. arXiv:1512.04922 use
// a normal mixture, Howard et al. arXiv:1810.08240 section 3 the general form).
// Assumes independent requests; bursts make indicators positively correlated.
struct SequentialStream {
  static constexpr double kRatios[] = {1.5, 2.0, 3.0, 5.0, 10.0, 20.0};
  std::string name;                    // "ttft_p99", "queue_p99", "error_rate"
  double bound = kMissing;             // the baseline value an indicator exceeds (s)
  double p0 = kMissing;                // H0's exceedance probability
  int64_t n = 0, k = 0;                // canary requests seen and indicators set
  std::vector<double> log_components;  // log of each mixture term
  double log_lr = 0;                   // log L_n
  bool rejected = false;
  // Adds `n_new` canary observations of which `k_new` exceed, and updates log_lr.
  // REQUIRES: p0 in (0, 1).
  void Add(int64_t n_new, int64_t k_new);
  // The threshold log(streams / alpha) that log_lr must reach.
  static double LogThreshold(double alpha, size_t streams);
};

// The state of a gate over repeated looks (saved in --state files as JSON).
struct SequentialGate {
  double alpha = 0.01;  // split evenly over the streams
  int looks = 0;
  double last_canary_arrival_s = -std::numeric_limits<double>::infinity();
  std::vector<SequentialStream> streams;  // empty until the first look with data
  nlohmann::json ToJson() const;
  static Result<SequentialGate> FromJson(const nlohmann::json& j, const std::string& name);
};

// One look: on the first look with at least max(500, min_samples) baseline requests
// fixes each stream's bound (the baseline p99: exact for spans, its bucket's upper
// bound for metrics) and p0; then adds the canary's new observations: for spans the
// requests of `canary` that arrived after the previous look; for metrics the counts
// of `canary_increase` (the canary's increase since the previous look; null: all of
// `canary`). Returns the fixed-horizon judgement of `canary` against `baseline`
// with the verdict replaced by the sequential one: Fail as soon as a stream
// rejects; on the `final_look`, Pass unless the fixed judge fails a critical
// criterion no stream covers or lacks data for a critical one; else Inconclusive.
GateResult LookSequential(const GateConfig& config, const GateArm& baseline, const GateArm& canary,
                          const GateArm* canary_increase, bool final_look, SequentialGate& state);

// -----------------------------------------------------------------------------
// Running the gate: the arms from inputs, one look, looks with a state file,
// repeated looks (what `ttft gate` does; src/gate/run.cc)
// -----------------------------------------------------------------------------

// Where the arms come from, one of: two input sets (`baseline` and `canary`); one input
// set (`inputs`) split by the selectors; a live Prometheus (`prometheus_url`) split by
// the selectors. An input is anything LoadInput reads.
struct GateSource {
  std::vector<std::string> inputs;
  std::vector<std::string> baseline, canary;
  std::string prometheus_url;  // http://HOST:PORT
  double step_s = 15;          // Prometheus: the longest query_range step
  PromClientOptions client;    // Prometheus: timeout per attempt, attempts
  // Selectors "name=value[,name=value...]" (ParseSelector) of span labels (tenant,
  // replica, region, template, model, deploy) or series labels; with two input sets
  // they further select within each ("": everything).
  std::string baseline_selector, canary_selector;
  LoadOptions load;  // reader options of file inputs
  // Called with each input set's read report (skipped records, warnings) after it is
  // loaded, at every look; may be empty.
  std::function<void(const ReadReport&)> on_read;
};

// Usage errors of a source (InvalidArgument, each saying what to give, in this
// order): not exactly one kind; one of --baseline/--canary without the other;
// selectors missing when one set is split; a Prometheus URL that is not
// http://HOST:PORT; a timeout outside (0, 300] s or a step <= 0; a selector that does
// not parse; selectors selecting the same data.
Status CheckGateSource(const GateSource& source);

// The arms of one look.
struct GateArms {
  GateArm baseline, canary;
  // Metrics, when an increase start was given: the canary's increase since then.
  std::optional<GateArm> canary_increase;
  // Why the data could not be had: a Prometheus that is down or answers garbage, or a
  // selection matching no series. An Inconclusive verdict, not an error.
  std::optional<std::string> unavailable;
};

// Loads the arms over the window [from_s, to_s) (spans by arrival; metrics: the
// scrapes covering it, SnapshotsCovering; an infinite end: the data's) and, for
// metrics when `increase_from_s` is finite, the canary's increase over
// [increase_from_s, to_s]. REQUIRES: CheckGateSource(source) is Ok; a Prometheus
// source needs a finite from_s and to_s. Errors: the loaders' (file:line), a selector
// naming no span label, inputs holding neither spans nor two scrapes, spans against
// metrics, and a baseline and canary serving different models (InvalidArgument).
Result<GateArms> LoadGateArms(const GateSource& source, double from_s, double to_s,
                              double increase_from_s);

// Loads one look's arms: LoadGateArms bound to a source, or a fake in tests.
using GateArmLoader =
    std::function<Result<GateArms>(double from_s, double to_s, double increase_from_s)>;

// The time of a gate run: the wall clock for a live window's end, a monotonic one for
// the look schedule, and waiting. A fake in tests.
class GateClock {
 public:
  virtual ~GateClock() = default;
  virtual double UnixNowS() = 0;                    // seconds since the Unix epoch
  virtual double MonotonicS() = 0;                  // seconds from any fixed origin
  virtual void SleepUntil(double monotonic_s) = 0;  // returns at once if past
};
// std::chrono::system_clock, steady_clock and std::this_thread::sleep_until.
GateClock& SystemGateClock();

struct GateRunOptions {
  GateConfig config;
  double from_s = -std::numeric_limits<double>::infinity();
  double to_s = std::numeric_limits<double>::infinity();
  // A live source (Prometheus) without a finite to_s: each look's window ends at
  // clock.UnixNowS().
  bool live = false;
  // Repeated looks in one process: a look every `every_s` for `for_s` (both > 0,
  // every_s <= for_s; ParseGateDuration); 0: none.
  double every_s = 0, for_s = 0;
  // One sequential look per run, its state kept in this file (JSON; absent: the
  // first look); `final_look`: the rollout's last look, where Pass is possible.
  std::string state_path;
  bool final_look = false;
};

// "90", "90s", "5m", "1h" -> seconds. InvalidArgument naming `flag` for anything
// else, and for a duration that is not positive and finite.
Result<double> ParseGateDuration(std::string_view text, std::string_view flag);

// The sequential state in `path`: a fresh state when the file does not exist,
// InvalidArgument naming the file when it is not a state; WriteGateState replaces the
// file atomically (write then rename), IoError naming it on failure.
Result<SequentialGate> ReadGateState(const std::string& path);
Status WriteGateState(const std::string& path, const SequentialGate& state);

// Runs the gate as `options` say: one fixed-horizon judgement (JudgeGate); or one
// sequential look with options.state_path (LookSequential; the state read, then
// written back); or looks every options.every_s until a Fail or until options.for_s
// has passed (the last look is the final one), sleeping between them on `clock`, the
// sequential state in memory. Arms that cannot be had give an Inconclusive result
// with the reason (under repeated looks that look only: the next one may succeed).
// `on_look`, when set, gets one line per repeated look ("look 2: Inconclusive
// (reason)"). Errors: a from_s not before to_s (CheckFromTo), the loader's, a state
// file that cannot be read or written, and metrics under a state file without a window
// end for every look.
// REQUIRES: every_s and for_s both 0, or 0 < every_s <= for_s; not both repeated
// looks and a state file; final_look only with a state file.
Result<GateResult> RunGate(const GateRunOptions& options, const GateArmLoader& load,
                           GateClock& clock,
                           const std::function<void(const std::string&)>& on_look = {});

// -----------------------------------------------------------------------------
// Rendering
// -----------------------------------------------------------------------------

// `format`: text, json, junit, github, markdown (InvalidArgument otherwise).
Result<std::string> RenderGate(const GateResult& result, std::string_view format);

}  // namespace ttft

#endif  // TTFT_GATE_H_
