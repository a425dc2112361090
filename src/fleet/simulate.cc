// The fleet's discrete-event loop (ttft/fleet.h).
//
// One priority queue of events in simulated time. At equal times events run in
// the order: timed scenario events, step ends, enqueues, arrivals, scrapes; then by
// insertion. That order is part of the determinism contract.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "ttft/fleet.h"

namespace ttft {

std::string_view ToString(RouterSpec::Kind k) {
  switch (k) {
    case RouterSpec::Kind::kRoundRobin: return "round_robin";
    case RouterSpec::Kind::kLeastOutstanding: return "least_outstanding";
    case RouterSpec::Kind::kPrefixAware: return "prefix_aware";
  }
  return "least_outstanding";
}

std::string_view ToString(EventKind k) {
  switch (k) {
    case EventKind::kDeployTemplate: return "deploy_template";
    case EventKind::kDeployConfig: return "deploy_config";
    case EventKind::kDrainReplica: return "drain_replica";
    case EventKind::kRestartReplica: return "restart_replica";
    case EventKind::kAddReplica: return "add_replica";
    case EventKind::kSlowReplica: return "slow_replica";
    case EventKind::kTenantTraffic: return "tenant_traffic";
  }
  return "deploy_template";
}

Result<EventKind> ParseEventKind(std::string_view s) {
  for (auto k : {EventKind::kDeployTemplate, EventKind::kDeployConfig, EventKind::kDrainReplica,
                 EventKind::kRestartReplica, EventKind::kAddReplica, EventKind::kSlowReplica,
                 EventKind::kTenantTraffic}) {
    if (ToString(k) == s) return k;
  }
  return Status::Invalid(
      fmt::format("unknown event kind '{}' (known: deploy_template, deploy_config, drain_replica, "
                  "restart_replica, add_replica, slow_replica, tenant_traffic)",
                  s));
}

Status ValidateScenario(const Scenario& sc) {
  if (sc.replicas.empty()) return Status::Invalid("replicas: at least one replica is needed");
  if (!(sc.duration_s > 0)) return Status::Invalid("duration_s: must be > 0");
  if (!(sc.scrape_interval_s > 0)) return Status::Invalid("scrape_interval_s: must be > 0");
  if (sc.duration_s > kMaxDurationS) {
    return Status::Invalid(fmt::format("duration_s: {:g} is above the limit of {:g} s (30 days)",
                                       sc.duration_s, kMaxDurationS));
  }
  if (!(sc.drain_limit_s >= 0) || sc.drain_limit_s > kMaxDurationS) {
    return Status::Invalid(fmt::format("drain_limit_s: must be in [0, {:g}] s, got {:g}",
                                       kMaxDurationS, sc.drain_limit_s));
  }
  if ((sc.duration_s + sc.drain_limit_s) / sc.scrape_interval_s > kMaxScrapes) {
    return Status::Invalid(
        fmt::format("scrape_interval_s: {:g} s gives {:.3g} scrapes over duration_s {:g} s and "
                    "drain_limit_s {:g} s, above the limit of {} per run",
                    sc.scrape_interval_s, (sc.duration_s + sc.drain_limit_s) / sc.scrape_interval_s,
                    sc.duration_s, sc.drain_limit_s, kMaxScrapes));
  }
  TTFT_RETURN_IF_ERROR(CheckWorkloadLimits(sc.workload));
  std::vector<std::string> names;
  for (const ReplicaSpec& r : sc.replicas) {
    TTFT_RETURN_IF_ERROR(r.engine.Validate().WithContext("replica " + r.name));
    TTFT_RETURN_IF_ERROR(r.engine.KvCapacityBlocks().status().WithContext("replica " + r.name));
    if (r.engine.block_size != sc.workload.block_size) {
      return Status::Invalid(fmt::format(
          "replica {}: block_size {} differs from the fleet's {} (prompt hashes are shared)",
          r.name, r.engine.block_size, sc.workload.block_size));
    }
    if (std::find(names.begin(), names.end(), r.name) != names.end()) {
      return Status::Invalid(fmt::format("replicas: duplicate name '{}'", r.name));
    }
    names.push_back(r.name);
  }
  for (const FleetEvent& e : sc.events) {
    if (e.kind == EventKind::kAddReplica) {
      names.push_back(e.new_replica.name);
      continue;
    }
    for (const std::string& target : e.replicas) {
      if (std::find(names.begin(), names.end(), target) == names.end()) {
        return Status::Invalid(fmt::format("events: {} at {} s names unknown replica '{}'",
                                           ToString(e.kind), e.at_s, target));
      }
    }
  }
  return Status::Ok();
}

namespace {

// At equal times: events, step ends, enqueues, client timeouts, arrivals, scrapes.
enum class EvType : uint8_t {
  kTimed = 0,
  kStepEnd = 1,
  kEnqueue = 2,
  kTimeout = 3,
  kArrival = 4,
  kScrape = 5
};

struct Ev {
  double t;
  EvType type;
  uint64_t order;
  int32_t idx;
  uint64_t gen;
};

struct EvLater {
  bool operator()(const Ev& a, const Ev& b) const {
    if (a.t != b.t) return a.t > b.t;
    if (a.type != b.type) return a.type > b.type;
    return a.order > b.order;
  }
};

struct Slot {
  ReplicaSpec spec;
  std::unique_ptr<Replica> engine;
  bool accepting = true;
  bool removed = false;
  enum class Pending : uint8_t { kNone, kDrain, kRestart } pending = Pending::kNone;
  EngineConfig restart_config;  // config to come back with after a restart
  uint64_t gen = 0;             // step-end events carry it; a stale one is ignored
  double process_start_s = 0;   // when its process (re)started: process_start_time_seconds
  int64_t in_front_end = 0;     // routed here, not yet enqueued
};

class Simulation {
 public:
  Simulation(const Scenario& sc, SimulationSink& sink, const SimulateOptions& opts)
      : sc_(sc), sink_(sink), opts_(opts) {}

  Result<SimulationResult> Run();

 private:
  void Push(double t, EvType type, int32_t idx, uint64_t gen = 0) {
    queue_.push(Ev{t, type, order_++, idx, gen});
  }
  Status AddSlot(const ReplicaSpec& spec, double now);
  Result<bool> PullArrival();
  int32_t Route(const Request& req);
  void Kick(int32_t idx, double now);
  void OnStepEnd(int32_t idx, double now);
  void MaybeFinalizePending(int32_t idx, double now);
  Status ApplyEvent(const FleetEvent& e, double now);
  Status Scrape(double now);
  void EmitSpan(const FinishedRequest& f, const std::string& replica, const std::string& region,
                const std::string& deploy);
  void EmitSpan(const FinishedRequest& f, const Slot& slot) {
    EmitSpan(f, slot.spec.name, slot.spec.region, slot.engine->config().deploy);
  }
  // A request that never reached an engine (no replica, or the run's time limit).
  void EmitNotEnqueued(const Request& req, RequestStatus status, double now,
                       const std::string& replica);
  bool Done() const;

  const Scenario& sc_;
  SimulationSink& sink_;
  const SimulateOptions& opts_;
  std::unique_ptr<RequestSource> source_;
  std::priority_queue<Ev, std::vector<Ev>, EvLater> queue_;
  uint64_t order_ = 0;
  std::vector<Slot> slots_;
  std::unique_ptr<Request> next_request_;
  bool arrivals_done_ = false;
  std::map<uint64_t, std::unique_ptr<Request>> in_front_end_;  // ordered: deterministic
  uint64_t rr_counter_ = 0;
  // Requests whose client has a timeout, by Request::seq: the slot holding them, or
  // kInFrontEnd. Erased when their span is written.
  static constexpr int32_t kInFrontEnd = -1;
  absl::flat_hash_map<int64_t, int32_t> timed_requests_;
  absl::flat_hash_set<int64_t> timed_out_in_front_end_;
  std::string model_label_;
  Status sink_status_;
  SimulationResult result_;
  double last_scrape_ = -1;
  int64_t timed_pending_ = 0;  // scenario events at or before duration_s not yet applied
};

Status Simulation::AddSlot(const ReplicaSpec& spec, double now) {
  TTFT_ASSIGN_OR_RETURN(int64_t blocks, spec.engine.KvCapacityBlocks());
  Slot s;
  s.spec = spec;
  s.process_start_s = now;
  s.engine = std::make_unique<Replica>(spec.engine, blocks);
  slots_.push_back(std::move(s));
  return Status::Ok();
}

Result<bool> Simulation::PullArrival() {
  auto req = std::make_unique<Request>();
  TTFT_ASSIGN_OR_RETURN(bool more, source_->Next(*req));
  if (!more) {
    arrivals_done_ = true;
    return false;
  }
  Push(req->arrival_s, EvType::kArrival, 0);
  next_request_ = std::move(req);
  return true;
}

int32_t Simulation::Route(const Request& req) {
  const std::string& region = source_->tenant_regions()[static_cast<size_t>(req.tenant)];
  const std::string& pool = source_->tenant_pools()[static_cast<size_t>(req.tenant)];
  std::vector<int32_t> cand;
  for (int32_t i = 0; i < static_cast<int32_t>(slots_.size()); ++i) {
    const Slot& s = slots_[static_cast<size_t>(i)];
    if (!s.accepting || s.removed) continue;
    if (!region.empty() && s.spec.region != region) continue;
    if (!pool.empty() && s.spec.pool != pool) continue;
    cand.push_back(i);
  }
  if (cand.empty()) return -1;
  const size_t n = cand.size();
  const size_t start = static_cast<size_t>(rr_counter_++ % n);
  auto load = [&](int32_t i) {
    const Slot& s = slots_[static_cast<size_t>(i)];
    return s.engine->num_outstanding() + s.in_front_end;
  };
  switch (sc_.router.kind) {
    case RouterSpec::Kind::kRoundRobin: return cand[start];
    case RouterSpec::Kind::kLeastOutstanding: {
      int32_t best = cand[start];
      for (size_t k = 1; k < n; ++k) {
        const int32_t i = cand[(start + k) % n];
        if (load(i) < load(best)) best = i;
      }
      return best;
    }
    case RouterSpec::Kind::kPrefixAware: {
      int64_t max_load = 0;
      for (int32_t i : cand) max_load = std::max(max_load, load(i));
      const double blocks = std::max<double>(1.0, static_cast<double>(req.block_hashes.size()));
      int32_t best = -1;
      double best_score = -std::numeric_limits<double>::infinity();
      for (size_t k = 0; k < n; ++k) {
        const int32_t i = cand[(start + k) % n];
        const double hit =
            static_cast<double>(slots_[static_cast<size_t>(i)].engine->CachedPrefixBlocks(req)) /
            blocks;
        const double l = static_cast<double>(load(i)) / static_cast<double>(max_load + 1);
        const double score = sc_.router.prefix_weight * hit - sc_.router.load_weight * l;
        if (score > best_score) {
          best_score = score;
          best = i;
        }
      }
      return best;
    }
  }
  return cand[start];
}

// Starts a step on an idle replica, or cuts a planned decode run so the next step
// sees what just changed.
void Simulation::Kick(int32_t idx, double now) {
  Slot& s = slots_[static_cast<size_t>(idx)];
  if (s.engine->step_planned()) {
    const double end = s.engine->Interrupt(now);
    ++s.gen;
    Push(end, EvType::kStepEnd, idx, s.gen);
    return;
  }
  const double end = s.engine->StartStep(now);
  if (end >= 0) {
    ++s.gen;
    Push(end, EvType::kStepEnd, idx, s.gen);
  }
}

void Simulation::EmitNotEnqueued(const Request& req, RequestStatus status, double now,
                                 const std::string& replica) {
  FinishedRequest f;
  f.request = &req;
  f.status = status;
  f.queued_s = now;
  f.scheduled_s = -1;
  f.first_token_s = -1;
  f.last_token_s = now;
  EmitSpan(f, replica, "", "");
}

void Simulation::EmitSpan(const FinishedRequest& f, const std::string& replica,
                          const std::string& region, const std::string& deploy) {
  const Request& r = *f.request;
  if (r.client_timeout_s > 0) timed_requests_.erase(r.seq);
  Span sp;
  sp.request_id = fmt::format("req-{:09d}", r.seq);
  sp.arrival_s = r.arrival_s;
  sp.front_end_s = f.queued_s - r.arrival_s;
  sp.prompt_tokens = r.prompt_tokens;
  sp.cached_tokens = f.cached_tokens;
  sp.output_tokens = f.output_tokens;
  sp.preemptions = f.preemptions;
  sp.status = f.status;
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (f.status == RequestStatus::kOk) {
    sp.queue_s = f.scheduled_s - f.queued_s;
    sp.prefill_s = f.first_token_s - f.scheduled_s;
    sp.ttft_s = f.first_token_s - r.arrival_s;
    sp.decode_s = f.last_token_s - f.first_token_s;
    sp.e2e_s = f.last_token_s - r.arrival_s;
    sp.itl_mean_s =
        f.output_tokens > 1 ? f.itl_sum_s / static_cast<double>(f.output_tokens - 1) : kNaN;
    sp.itl_max_s = f.output_tokens > 1 ? f.itl_max_s : kNaN;
    ++result_.finished_ok;
  } else {
    sp.queue_s = f.scheduled_s >= 0 ? f.scheduled_s - f.queued_s : f.last_token_s - f.queued_s;
    sp.prefill_s = kNaN;
    sp.ttft_s = f.first_token_s >= 0 ? f.first_token_s - r.arrival_s : kNaN;
    sp.decode_s = kNaN;
    sp.e2e_s = f.last_token_s - r.arrival_s;
    sp.itl_mean_s = kNaN;
    sp.itl_max_s = kNaN;
    ++result_.errors;
  }
  sp.replica = replica;
  sp.region = region;
  sp.tenant = source_->tenant_names()[static_cast<size_t>(r.tenant)];
  sp.model = model_label_;
  sp.template_version = source_->template_labels()[static_cast<size_t>(r.template_label)];
  // A canary template switch labels its split (docs/scenarios.md, "Canaries").
  switch (r.canary) {
    case Request::CanaryArm::kNone: sp.deploy = deploy; break;
    case Request::CanaryArm::kBaseline: sp.deploy = "baseline"; break;
    case Request::CanaryArm::kCanary: sp.deploy = "canary"; break;
  }
  if (sink_status_.ok()) sink_status_ = sink_.OnSpan(sp);
}

void Simulation::MaybeFinalizePending(int32_t idx, double now) {
  Slot& s = slots_[static_cast<size_t>(idx)];
  if (s.pending == Slot::Pending::kNone || !s.engine->idle() || s.in_front_end > 0) return;
  if (s.pending == Slot::Pending::kDrain) {
    s.removed = true;
  } else {
    // A restarted process: new engine, empty prefix cache, counters from zero.
    s.spec.engine = s.restart_config;
    auto blocks = s.spec.engine.KvCapacityBlocks();
    s.engine = std::make_unique<Replica>(s.spec.engine, blocks.ok() ? *blocks : 1);
    s.accepting = true;
    s.process_start_s = now;
  }
  s.pending = Slot::Pending::kNone;
  result_.events.push_back({now, s.removed ? EventKind::kDrainReplica : EventKind::kRestartReplica,
                            s.spec.name, s.removed ? "drained" : "back with an empty cache"});
}

void Simulation::OnStepEnd(int32_t idx, double now) {
  Slot& s = slots_[static_cast<size_t>(idx)];
  s.engine->FinishStep(now, [&](const FinishedRequest& f) { EmitSpan(f, s); });
  const double end = s.engine->StartStep(now);
  if (end >= 0) {
    ++s.gen;
    Push(end, EvType::kStepEnd, idx, s.gen);
  } else {
    MaybeFinalizePending(idx, now);
  }
}

Status Simulation::ApplyEvent(const FleetEvent& e, double now) {
  auto find = [&](const std::string& name) -> int32_t {
    for (int32_t i = 0; i < static_cast<int32_t>(slots_.size()); ++i) {
      if (slots_[static_cast<size_t>(i)].spec.name == name &&
          !slots_[static_cast<size_t>(i)].removed) {
        return i;
      }
    }
    return -1;
  };
  std::vector<int32_t> targets;
  for (const std::string& name : e.replicas) {
    const int32_t i = find(name);
    if (i < 0) {
      return Status::Invalid(fmt::format("{} at {} s: replica '{}' is not in the fleet",
                                         ToString(e.kind), e.at_s, name));
    }
    targets.push_back(i);
  }
  if (targets.empty() && (e.kind == EventKind::kDeployConfig)) {
    for (int32_t i = 0; i < static_cast<int32_t>(slots_.size()); ++i) {
      if (!slots_[static_cast<size_t>(i)].removed) targets.push_back(i);
    }
  }
  std::string target_names;
  for (int32_t i : targets) {
    if (!target_names.empty()) target_names += ",";
    target_names += slots_[static_cast<size_t>(i)].spec.name;
  }
  std::string detail = e.note;
  switch (e.kind) {
    case EventKind::kDeployTemplate:
      // The workload switches templates itself; recorded here for the summary.
      result_.events.push_back(
          {now, e.kind, e.tenant.empty() ? "*" : e.tenant,
           e.canary_fraction > 0
               ? fmt::format("{}@{} canary {:g}", e.template_name, e.version, e.canary_fraction)
               : fmt::format("{}@{}", e.template_name, e.version)});
      return Status::Ok();
    case EventKind::kTenantTraffic:
      result_.events.push_back({now, e.kind, e.tenant, fmt::format("x{}", e.multiplier)});
      return Status::Ok();
    case EventKind::kDeployConfig:
      for (int32_t i : targets) {
        Slot& s = slots_[static_cast<size_t>(i)];
        EngineConfig cfg = e.engine_set ? e.engine : s.spec.engine;
        auto old_blocks = s.spec.engine.KvCapacityBlocks();
        auto new_blocks = cfg.KvCapacityBlocks();
        if (!new_blocks.ok())
          return new_blocks.status().WithContext("deploy_config " + s.spec.name);
        if (old_blocks.ok() && *old_blocks == *new_blocks &&
            cfg.hardware.tp == s.spec.engine.hardware.tp) {
          if (s.engine->step_planned()) Kick(i, now);
          s.engine->Reconfigure(cfg);
          s.spec.engine = cfg;
        } else {
          // KV capacity changes need a new process: drain, then restart.
          s.accepting = false;
          s.pending = Slot::Pending::kRestart;
          s.restart_config = cfg;
          MaybeFinalizePending(i, now);
        }
      }
      result_.events.push_back(
          {now, e.kind, target_names, detail.empty() ? e.engine.deploy : detail});
      return Status::Ok();
    case EventKind::kDrainReplica:
    case EventKind::kRestartReplica:
      for (int32_t i : targets) {
        Slot& s = slots_[static_cast<size_t>(i)];
        s.accepting = false;
        s.pending =
            e.kind == EventKind::kDrainReplica ? Slot::Pending::kDrain : Slot::Pending::kRestart;
        s.restart_config = s.spec.engine;
      }
      result_.events.push_back({now, e.kind, target_names, detail});
      for (int32_t i : targets) MaybeFinalizePending(i, now);
      return Status::Ok();
    case EventKind::kAddReplica:
      TTFT_RETURN_IF_ERROR(AddSlot(e.new_replica, now));
      result_.events.push_back({now, e.kind, e.new_replica.name, detail});
      return Status::Ok();
    case EventKind::kSlowReplica:
      for (int32_t i : targets) {
        Slot& s = slots_[static_cast<size_t>(i)];
        if (s.engine->step_planned()) Kick(i, now);
        s.engine->SetSlowdown(e.factor);
      }
      result_.events.push_back({now, e.kind, target_names, fmt::format("x{}", e.factor)});
      return Status::Ok();
  }
  return Status::Ok();
}

Status Simulation::Scrape(double now) {
  MetricSnapshot snap;
  snap.timestamp_s = now;
  for (int32_t i = 0; i < static_cast<int32_t>(slots_.size()); ++i) {
    Slot& s = slots_[static_cast<size_t>(i)];
    if (s.removed) continue;
    if (s.engine->step_planned()) Kick(i, now);  // commit decode steps finished by now
    AppendReplicaSeries(*s.engine, s.spec, model_label_, s.process_start_s, snap.families);
  }
  last_scrape_ = now;
  ++result_.snapshots;
  return sink_.OnSnapshot(snap);
}

bool Simulation::Done() const {
  if (!arrivals_done_ || !in_front_end_.empty() || timed_pending_ > 0) return false;
  for (const Slot& s : slots_) {
    if (!s.removed && !s.engine->idle()) return false;
  }
  return true;
}

Result<SimulationResult> Simulation::Run() {
  TTFT_RETURN_IF_ERROR(ValidateScenario(sc_));
  TTFT_ASSIGN_OR_RETURN(source_, RequestSource::Create(sc_.workload));
  model_label_ = sc_.model_label;
  if (model_label_.empty()) {
    const HardwareConfig& hw = sc_.replicas.front().engine.hardware;
    model_label_ = fmt::format("{}-{}", hw.model.name, ToString(hw.weight_dtype));
  }
  for (const ReplicaSpec& r : sc_.replicas) TTFT_RETURN_IF_ERROR(AddSlot(r, 0));
  for (int32_t i = 0; i < static_cast<int32_t>(sc_.events.size()); ++i) {
    Push(sc_.events[static_cast<size_t>(i)].at_s, EvType::kTimed, i);
    if (sc_.events[static_cast<size_t>(i)].at_s <= sc_.duration_s) ++timed_pending_;
  }
  Push(sc_.scrape_interval_s, EvType::kScrape, 0);
  TTFT_ASSIGN_OR_RETURN(bool any, PullArrival());
  (void)any;

  const double hard_stop = sc_.duration_s + sc_.drain_limit_s;
  double now = 0;
  int64_t n_events = 0;
  while (!queue_.empty()) {
    const Ev ev = queue_.top();
    if (ev.t > hard_stop) {
      now = hard_stop;
      break;
    }
    queue_.pop();
    now = ev.t;
    if (opts_.progress && (++n_events & 0xFFFF) == 0) {
      opts_.progress(now, std::min(1.0, now / sc_.duration_s));
    }
    switch (ev.type) {
      case EvType::kTimed:
        if (sc_.events[static_cast<size_t>(ev.idx)].at_s <= sc_.duration_s) --timed_pending_;
        TTFT_RETURN_IF_ERROR(ApplyEvent(sc_.events[static_cast<size_t>(ev.idx)], now));
        break;
      case EvType::kStepEnd: {
        Slot& s = slots_[static_cast<size_t>(ev.idx)];
        if (ev.gen != s.gen || !s.engine->step_planned()) break;
        OnStepEnd(ev.idx, now);
        break;
      }
      case EvType::kEnqueue: {
        auto it = in_front_end_.find(ev.gen);
        std::unique_ptr<Request> req = std::move(it->second);
        in_front_end_.erase(it);
        Slot& s = slots_[static_cast<size_t>(ev.idx)];
        --s.in_front_end;
        if (req->client_timeout_s > 0) {
          if (timed_out_in_front_end_.erase(req->seq) > 0) {
            // The client left before the engine saw the request: it never runs.
            EmitNotEnqueued(*req, RequestStatus::kAborted, now, s.spec.name);
            MaybeFinalizePending(ev.idx, now);
            break;
          }
          timed_requests_[req->seq] = ev.idx;
        }
        s.engine->Enqueue(std::move(req), now, [&](const FinishedRequest& f) { EmitSpan(f, s); });
        Kick(ev.idx, now);
        MaybeFinalizePending(ev.idx, now);
        break;
      }
      case EvType::kArrival: {
        std::unique_ptr<Request> req = std::move(next_request_);
        ++result_.requests;
        const int32_t idx = Route(*req);
        if (idx < 0) {
          // No replica can take it: the front end answers with an error at once.
          EmitNotEnqueued(*req, RequestStatus::kError, now, "");
        } else {
          Slot& s = slots_[static_cast<size_t>(idx)];
          ++s.in_front_end;
          const uint64_t key = order_;
          if (req->client_timeout_s > 0) {
            timed_requests_[req->seq] = kInFrontEnd;
            Push(now + req->client_timeout_s, EvType::kTimeout, 0, static_cast<uint64_t>(req->seq));
          }
          const double front_end_s = s.spec.engine.cost.FrontEndTime(req->prompt_tokens);
          in_front_end_[key] = std::move(req);
          Push(now + front_end_s, EvType::kEnqueue, idx, key);
        }
        TTFT_ASSIGN_OR_RETURN(bool more, PullArrival());
        (void)more;
        break;
      }
      case EvType::kTimeout: {
        const auto seq = static_cast<int64_t>(ev.gen);
        auto it = timed_requests_.find(seq);
        if (it == timed_requests_.end()) break;  // finished in time
        const int32_t idx = it->second;
        if (idx == kInFrontEnd) {
          timed_requests_.erase(it);
          timed_out_in_front_end_.insert(seq);
          break;
        }
        Slot& s = slots_[static_cast<size_t>(idx)];
        // Cut a planned decode run at the step in progress, where the abort applies.
        if (s.engine->step_planned()) Kick(idx, now);
        s.engine->Abort(seq, now, [&](const FinishedRequest& f) { EmitSpan(f, s); });
        if (!s.engine->step_planned()) Kick(idx, now);
        MaybeFinalizePending(idx, now);
        break;
      }
      case EvType::kScrape:
        TTFT_RETURN_IF_ERROR(Scrape(now));
        if (!Done()) Push(now + sc_.scrape_interval_s, EvType::kScrape, 0);
        break;
    }
    if (!sink_status_.ok()) return sink_status_;
    // Only scrapes, stale step ends and events past the end remain: the run is over.
    if (Done()) break;
  }
  // Past the drain limit: whatever is left is aborted and reported as such.
  for (Slot& s : slots_) {
    if (s.removed || s.engine->idle()) continue;
    result_.truncated = true;
    s.engine->AbortAll(now, [&](const FinishedRequest& f) { EmitSpan(f, s); });
  }
  for (auto& [key, req] : in_front_end_) {
    (void)key;
    result_.truncated = true;
    EmitNotEnqueued(*req, RequestStatus::kAborted, now, "");
  }
  if (now > last_scrape_) TTFT_RETURN_IF_ERROR(Scrape(now));
  if (!sink_status_.ok()) return sink_status_;
  result_.end_s = now;
  for (const Slot& s : slots_) result_.steps += s.engine->steps_executed();
  return result_;
}

}  // namespace

Result<SimulationResult> Simulate(const Scenario& scenario, SimulationSink& sink,
                                  const SimulateOptions& options) {
  Simulation sim(scenario, sink, options);
  return sim.Run();
}

}  // namespace ttft
