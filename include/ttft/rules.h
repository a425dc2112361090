// -----------------------------------------------------------------------------
// File: ttft/rules.h
// -----------------------------------------------------------------------------
//
// Generators of what a serving team loads into its monitoring stack to watch tail
// TTFT and the prefix cache (issue 10, `ttft rules`; docs/rules.md):
//
//   * Prometheus recording rules: p50/p99 TTFT, queue time and prefill time from the
//     engine's histograms (histogram_quantile over the rate of _bucket), prefix-cache
//     hit rate from the counters, preemption rate and KV-cache usage, per model and per
//     model and replica.
//   * Prometheus alerting rules (also valid for vmalert): the TTFT SLO burn rate over
//     two windows (Google SRE workbook, "Alerting on SLOs", Table 5-8: 1h/5m at 14.4x,
//     6h/30m at 6x), the prefix-cache hit rate against the hour before (offset 1h) and
//     a day ago (offset 1d), and queue-time p99 above a threshold.
//   * A Grafana dashboard (JSON model, schemaVersion 39 as vLLM's example dashboard):
//     TTFT p50/p99, queue versus prefill, hit rate, KV usage, preemptions, per replica,
//     and deploy annotations from a configurable PromQL query.
//
// Metric names are vLLM v1's (vllm/v1/metrics/loggers.py) or SGLang's
// (sglang/srt/metrics/collector.py). Where SGLang exports no series for a quantity
// (prefill time), its rules and panels are left out and the generated files say so.
//
// Every expression reads the engine's raw series (none reads another rule's output), so
// the alerting file stands alone: it can be loaded without the recording file.
//
// Example:
//
//   ttft::RulesOptions o;
//   o.selector = R"(job="vllm")";
//   TTFT_RETURN_IF_ERROR(ttft::ValidateRulesOptions(o));
//   TTFT_ASSIGN_OR_RETURN(std::string yml, ttft::RecordingRulesYaml(o));
//
// Thread safety: the functions are pure; call them from any thread.

#ifndef TTFT_RULES_H_
#define TTFT_RULES_H_

#include <string>
#include <utility>
#include <vector>

#include "ttft/core.h"

namespace ttft {

enum class RulesEngine { kVllm, kSglang };

// "vllm" or "sglang".
const char* RulesEngineName(RulesEngine engine);
// Parses "vllm" / "sglang"; anything else is InvalidArgument naming the choices.
Result<RulesEngine> ParseRulesEngine(const std::string& name);

struct RulesOptions {
  RulesEngine engine = RulesEngine::kVllm;
  // Label matchers added to every selector, without braces: `job="vllm"`,
  // `job="vllm",namespace=~"prod-.*"`. Empty: none.
  std::string selector;
  // The label that tells replicas apart. Prometheus adds `instance` to every scraped
  // target; a fleet that relabels may use e.g. `pod`.
  std::string replica_label = "instance";
  // The TTFT SLO: a fraction `slo_objective` of requests have TTFT <= slo_ttft_s.
  // The threshold must be a bucket bound of the TTFT histogram (the good count is the
  // bucket at that `le`). 1 s is the TTFT SLO default of vLLM's generated dashboards
  // (tools/generate_grafana_dashboards.py) and a bound of vLLM's and SGLang's buckets.
  double slo_ttft_s = 1.0;
  double slo_objective = 0.99;
  // Queue-time p99 above this many seconds for 10 minutes alerts.
  double queue_p99_s = 1.0;
  // A prefix-cache hit-rate drop of at least this much (absolute, 0.2 = 20 points)
  // against the hour before or a day ago alerts.
  double hit_rate_drop = 0.2;
  // The Grafana annotation query that marks deploys (a point where it is > 0). Empty:
  // DefaultDeployAnnotationExpr(selector).
  std::string deploy_annotation_expr;
};

// A replica restart as the deploy marker: `changes(process_start_time_seconds{SEL}[2m]) > 0`
// (prometheus_client's process collector, exported by vLLM and SGLang outside
// multi-process mode).
std::string DefaultDeployAnnotationExpr(const std::string& selector);

// OK, or InvalidArgument naming the field: selector not a list of `name op "value"`
// matchers; replica_label not a label name; a threshold not finite or not > 0;
// slo_objective not in (0, 1), or so low that the fast burn threshold 14.4 * (1 - SLO)
// is >= 1 (the alert could never fire); slo_ttft_s not a bound of the engine's
// default TTFT buckets; hit_rate_drop not in (0, 1).
Status ValidateRulesOptions(const RulesOptions& o);

// The engine's default TTFT bucket bounds that slo_ttft_s may take (vLLM v1
// TIME_TO_FIRST_TOKEN_BUCKETS; SGLang: the union of the sets its versions used).
std::vector<double> TtftBucketBounds(RulesEngine engine);

// One Prometheus rule: a recording rule (`record` set) or an alerting rule (`alert`
// set, with `for_`, labels and annotations).
struct PromRule {
  std::string record;
  std::string alert;
  std::string expr;
  std::string for_;  // "" or a duration ("10m")
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::pair<std::string, std::string>> annotations;
};

struct PromRuleGroup {
  std::string name;
  std::string interval;  // "" or a duration
  std::vector<PromRule> rules;
};

// The rule groups. REQUIRES: ValidateRulesOptions(o).ok() (else InvalidArgument).
Result<std::vector<PromRuleGroup>> RecordingRules(const RulesOptions& o);
Result<std::vector<PromRuleGroup>> AlertingRules(const RulesOptions& o);

// A dashboard panel's queries, for tests and for callers that lint them.
struct DashboardQuery {
  std::string panel_title;
  std::string expr;  // with Grafana's $model_name, $replica and $__rate_interval
};
Result<std::vector<DashboardQuery>> DashboardQueries(const RulesOptions& o);

// The files `ttft rules` writes: ttft-recording.rules.yml, ttft-alerts.rules.yml (the
// Prometheus rule-file format, with a comment header stating the engine, the selector
// and what is left out), and ttft-dashboard.json (Grafana's dashboard JSON model).
Result<std::string> RecordingRulesYaml(const RulesOptions& o);
Result<std::string> AlertingRulesYaml(const RulesOptions& o);
Result<std::string> DashboardJson(const RulesOptions& o);

}  // namespace ttft

#endif  // TTFT_RULES_H_
