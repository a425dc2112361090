// -----------------------------------------------------------------------------
// File: ttft/fleet.h
// -----------------------------------------------------------------------------
//
// A fleet of replicas in regions and pools, a router in front, timed events, and
// the discrete-event loop that runs a scenario in simulated time.
//
// Data flows one way: the workload's requests enter the router; replicas step;
// finished requests leave as Spans and scrapes leave as MetricSnapshots through a
// SimulationSink. The loop holds only active state, so memory does not grow with
// the run's length.
//
// Determinism: the same Scenario (including its seed) gives the same spans and
// snapshots, byte for byte. Events at equal times are ordered by kind, then by
// insertion.
//
// Example:
//
//   ttft::Scenario sc = ...;            // usually ttft::LoadScenario(path)
//   MySink sink;                        // implements SimulationSink
//   auto result = ttft::Simulate(sc, sink, {});
//   if (!result.ok()) return result.status();
//
// Thread safety: Simulate is re-entrant; it shares nothing between calls.

#ifndef TTFT_FLEET_H_
#define TTFT_FLEET_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ttft/core.h"
#include "ttft/engine.h"
#include "ttft/metrics.h"
#include "ttft/workload.h"

namespace ttft {

struct ReplicaSpec {
  std::string name;    // unique, e.g. "us-east-0"
  std::string region;  // e.g. "us-east"
  std::string pool;    // routes serve tenants of the same pool ("" = shared)
  EngineConfig engine;
};

struct RouterSpec {
  enum class Kind : uint8_t { kRoundRobin, kLeastOutstanding, kPrefixAware };
  Kind kind = Kind::kLeastOutstanding;
  // kPrefixAware: score = prefix_weight * cached_fraction - load_weight * load,
  // where load = outstanding / (max outstanding among candidates + 1).
  double prefix_weight = 1.0;
  double load_weight = 1.0;
};
std::string_view ToString(RouterSpec::Kind k);

enum class EventKind : uint8_t {
  kDeployTemplate,  // a tenant's (or every tenant's) template switches version
  kDeployConfig,    // engine settings change on some replicas
  kDrainReplica,    // stop routing to a replica; it finishes what it holds
  kRestartReplica,  // drain, then come back with an empty prefix cache
  kAddReplica,      // a new (cold) replica joins
  kSlowReplica,     // a replica's steps take `factor` times longer
  kTenantTraffic,   // a tenant's rate is multiplied by `multiplier`
};
std::string_view ToString(EventKind k);
Result<EventKind> ParseEventKind(std::string_view s);

struct FleetEvent {
  double at_s = 0;
  EventKind kind = EventKind::kDeployTemplate;
  std::string tenant;                 // deploy_template (optional), tenant_traffic
  std::string template_name;          // deploy_template
  std::string version;                // deploy_template: the new version
  double canary_fraction = 0;         // deploy_template: TemplateSwitch::canary_fraction
  std::vector<std::string> replicas;  // targets ("" list = all, for deploy_config)
  EngineConfig engine;                // deploy_config: the replica's new settings
  bool engine_set = false;
  double factor = 1;        // slow_replica
  double multiplier = 1;    // tenant_traffic
  ReplicaSpec new_replica;  // add_replica
  std::string note;         // free text, cited in outputs
};

// What `ttft simulate` / `ttft drill` compare: a window before and after a change.
struct AnalysisSpec {
  double change_at_s = -1;  // < 0: the first event's time, or none
  double window_s = 0;      // 0: from the start / to the end
  double warmup_s = 0;      // excluded from the baseline window
};

struct Scenario {
  std::string name;
  std::string description;
  std::string source_path;  // for messages
  WorkloadSpec workload;
  std::vector<ReplicaSpec> replicas;
  RouterSpec router;
  std::vector<FleetEvent> events;  // sorted by at_s
  double duration_s = 0;           // arrivals stop at duration_s; the run drains after
  double drain_limit_s = 600;      // stop waiting for stragglers after this
  double scrape_interval_s = 10;
  std::string model_label;  // the span `model` label
  AnalysisSpec analysis;
};

class SimulationSink {
 public:
  virtual ~SimulationSink() = default;
  virtual Status OnSpan(const Span& span) = 0;
  virtual Status OnSnapshot(const MetricSnapshot& snapshot) = 0;
};

struct AppliedEvent {
  double at_s = 0;
  EventKind kind{};
  std::string target;  // tenant or replica names
  std::string detail;
};

struct SimulationResult {
  int64_t requests = 0;
  int64_t finished_ok = 0;
  int64_t errors = 0;
  int64_t steps = 0;
  int64_t snapshots = 0;
  double end_s = 0;
  bool truncated = false;  // drain_limit_s hit: stragglers reported as aborted
  std::vector<AppliedEvent> events;
};

struct SimulateOptions {
  // Called now and then with simulated time and the fraction done (for progress).
  std::function<void(double sim_s, double fraction)> progress;
};

// Runs a scenario to completion. Errors: invalid references (unknown replica in an
// event), a sink's error. REQUIRES: the scenario came from LoadScenario or passed
// ValidateScenario.
Result<SimulationResult> Simulate(const Scenario& scenario, SimulationSink& sink,
                                  const SimulateOptions& options);

// Scrapes of one run (each writes one file per replica): 300,000, enough for the
// longest run (kMaxDurationS) at the default 10 s interval. A smaller
// scrape_interval_s for the run's length is an error.
inline constexpr int64_t kMaxScrapes = 300000;

// Cross-field validation of a hand-built scenario, and the limits: duration_s at
// most kMaxDurationS, drain_limit_s in [0, kMaxDurationS], at most kMaxScrapes
// scrapes, and the workload's limits (CheckWorkloadLimits, ttft/workload.h).
Status ValidateScenario(const Scenario& scenario);

// Adds one replica's series to `families` (creating each family on first use, in
// vLLM's order) with vLLM v1 names and buckets, labels `engine="0"` and
// `model_name`, plus the target labels `region` and `replica` that a Prometheus
// scrape of the fleet attaches. First its process's `process_start_time_seconds`
// (prometheus_client's process collector, which vLLM's /metrics carries), with the
// target labels only: `process_start_s`, when the replica's process (re)started.
void AppendReplicaSeries(const Replica& replica, const ReplicaSpec& spec,
                         const std::string& model_name, double process_start_s,
                         std::vector<MetricFamily>& families);

}  // namespace ttft

#endif  // TTFT_FLEET_H_
