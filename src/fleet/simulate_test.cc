#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "ttft/fleet.h"
#include "ttft/spans.h"

namespace ttft {
namespace {

class CollectSink : public SimulationSink {
 public:
  Status OnSpan(const Span& s) override {
    spans.push_back(s);
    return Status::Ok();
  }
  Status OnSnapshot(const MetricSnapshot& snap) override {
    snapshots.push_back(FormatExposition(snap));
    times.push_back(snap.timestamp_s);
    return Status::Ok();
  }
  std::vector<Span> spans;
  std::vector<std::string> snapshots;
  std::vector<double> times;
};

EngineConfig Engine8B() {
  EngineConfig e;
  e.hardware = *MakeHardwareConfig("llama-3.1-8b", "h100-sxm", Dtype::kBf16, 1);
  e.max_model_len = 8192;
  return e;
}

// Two tenants sharing a static prefix, on `replicas` replicas.
Scenario SmallScenario(uint64_t seed, int replicas, double rate, RouterSpec::Kind router) {
  Scenario sc;
  sc.name = "small";
  sc.duration_s = 60;
  sc.scrape_interval_s = 5;
  sc.router.kind = router;
  for (int i = 0; i < replicas; ++i) {
    ReplicaSpec r;
    r.name = "r" + std::to_string(i);
    r.region = i % 2 == 0 ? "east" : "west";
    r.engine = Engine8B();
    sc.replicas.push_back(r);
  }
  TemplateSpec t;
  t.name = "app";
  TemplateVersion v1;
  v1.version = "v1";
  v1.segments = {{"system", SegmentKind::kStatic, "system", Distribution::Fixed(2000)},
                 {"ts", SegmentKind::kPerRequest, "", Distribution::Fixed(10)},
                 {"q", SegmentKind::kPerRequest, "", Distribution::Fixed(300)}};
  TemplateVersion v2 = v1;
  v2.version = "v2";
  std::swap(v2.segments[0], v2.segments[1]);
  t.versions = {v1, v2};
  sc.workload.templates = {t};
  for (int k = 0; k < 2; ++k) {
    TenantSpec ten;
    ten.name = k == 0 ? "acme" : "globex";
    ten.template_name = "app";
    ten.template_version = "v1";
    ten.arrivals.rate_rps = rate / 2;
    ten.output_tokens = Distribution::Fixed(50 + 30 * k);
    sc.workload.tenants.push_back(ten);
  }
  sc.workload.duration_s = sc.duration_s;
  sc.workload.seed = seed;
  return sc;
}

void CheckSpanProperties(const std::vector<Span>& spans, int64_t requests) {
  ASSERT_EQ(static_cast<int64_t>(spans.size()), requests);
  std::set<std::string> ids;
  for (const Span& s : spans) {
    EXPECT_TRUE(ids.insert(s.request_id).second) << "request ended twice: " << s.request_id;
    EXPECT_LE(s.cached_tokens, s.prompt_tokens);
    EXPECT_GE(s.cached_tokens, 0);
    if (s.status != RequestStatus::kOk) continue;
    EXPECT_GE(s.queue_s, 0);
    EXPECT_GE(s.prefill_s, 0);
    EXPECT_GE(s.decode_s, 0);
    EXPECT_GE(s.front_end_s, 0);
    EXPECT_GE(s.ttft_s, s.queue_s);
    EXPECT_NEAR(s.ttft_s, s.front_end_s + s.queue_s + s.prefill_s, 1e-9);
    EXPECT_NEAR(s.e2e_s, s.ttft_s + s.decode_s, 1e-9);
    if (s.output_tokens > 1) {
      EXPECT_GT(s.itl_mean_s, 0);
      EXPECT_GE(s.itl_max_s, s.itl_mean_s - 1e-12);
    }
  }
}

TEST(Simulate, EveryRequestEndsOnceWithConsistentTimes) {
  for (auto router : {RouterSpec::Kind::kRoundRobin, RouterSpec::Kind::kLeastOutstanding,
                      RouterSpec::Kind::kPrefixAware}) {
    Scenario sc = SmallScenario(3, 3, 20, router);
    CollectSink sink;
    auto r = Simulate(sc, sink, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_GT(r->requests, 900);
    EXPECT_FALSE(r->truncated);
    CheckSpanProperties(sink.spans, r->requests);
    // Scrapes every 5 s until the end, then one final snapshot.
    ASSERT_GE(sink.times.size(), 12u);
    EXPECT_DOUBLE_EQ(sink.times[0], 5.0);
  }
}

TEST(Simulate, SameSeedSameBytes) {
  Scenario sc = SmallScenario(11, 2, 15, RouterSpec::Kind::kPrefixAware);
  CollectSink a, b;
  ASSERT_TRUE(Simulate(sc, a, {}).ok());
  ASSERT_TRUE(Simulate(sc, b, {}).ok());
  ASSERT_EQ(a.spans.size(), b.spans.size());
  std::string ja, jb;
  for (const Span& s : a.spans) AppendSpanJson(s, ja);
  for (const Span& s : b.spans) AppendSpanJson(s, jb);
  EXPECT_EQ(ja, jb);
  EXPECT_EQ(a.snapshots, b.snapshots);
  sc.workload.seed = 12;
  CollectSink c;
  ASSERT_TRUE(Simulate(sc, c, {}).ok());
  std::string jc;
  for (const Span& s : c.spans) AppendSpanJson(s, jc);
  EXPECT_NE(ja, jc);
}

TEST(Simulate, TemplateDeployCollapsesHitRate) {
  Scenario sc = SmallScenario(5, 2, 10, RouterSpec::Kind::kLeastOutstanding);
  FleetEvent e;
  e.at_s = 30;
  e.kind = EventKind::kDeployTemplate;
  e.template_name = "app";
  e.version = "v2";
  sc.events.push_back(e);
  sc.workload.template_switches.push_back({30, "", "app", "v2"});
  CollectSink sink;
  auto r = Simulate(sc, sink, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  double before_hit = 0, before_prompt = 0, after_hit = 0, after_prompt = 0;
  for (const Span& s : sink.spans) {
    if (s.arrival_s < 5) continue;  // cold start
    (s.arrival_s < 30 ? before_hit : after_hit) += static_cast<double>(s.cached_tokens);
    (s.arrival_s < 30 ? before_prompt : after_prompt) += static_cast<double>(s.prompt_tokens);
    EXPECT_EQ(s.template_version, s.arrival_s < 30 ? "app@v1" : "app@v2");
  }
  // 2000 static of 2310 tokens, block aligned and capped: ~86% before; after the
  // timestamp leads, nothing can hit.
  EXPECT_GT(before_hit / before_prompt, 0.8);
  EXPECT_EQ(after_hit, 0);
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->events[0].kind, EventKind::kDeployTemplate);
}

TEST(Simulate, DrainAndRestartAndSlowReplica) {
  Scenario sc = SmallScenario(9, 3, 24, RouterSpec::Kind::kLeastOutstanding);
  FleetEvent drain;
  drain.at_s = 10;
  drain.kind = EventKind::kDrainReplica;
  drain.replicas = {"r0"};
  FleetEvent restart;
  restart.at_s = 20;
  restart.kind = EventKind::kRestartReplica;
  restart.replicas = {"r1"};
  FleetEvent slow;
  slow.at_s = 30;
  slow.kind = EventKind::kSlowReplica;
  slow.replicas = {"r2"};
  slow.factor = 3;
  sc.events = {drain, restart, slow};
  CollectSink sink;
  auto r = Simulate(sc, sink, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  CheckSpanProperties(sink.spans, r->requests);
  // Nothing arriving after the drain (plus the front end's delay) lands on r0.
  for (const Span& s : sink.spans) {
    if (s.arrival_s > 10.0) {
      EXPECT_NE(s.replica, "r0") << s.request_id;
    }
  }
  // r1's first requests after its restart find an empty cache.
  bool saw_cold = false;
  for (const Span& s : sink.spans) {
    if (s.replica == "r1" && s.arrival_s > 20 && s.arrival_s < 21 && s.cached_tokens == 0) {
      saw_cold = true;
    }
  }
  EXPECT_TRUE(saw_cold);
  // The scrapes say so as vLLM's do: r1's process_start_time_seconds moves to its
  // restart (after the drain before it, so at 20 s or later), the others' stay at 0.
  ASSERT_FALSE(sink.snapshots.empty());
  const std::string& last = sink.snapshots.back();
  EXPECT_NE(last.find("process_start_time_seconds{region=\"east\",replica=\"r2\"} 0.0\n"),
            std::string::npos)
      << last.substr(0, 600);
  const std::string r1 = "process_start_time_seconds{region=\"west\",replica=\"r1\"} ";
  const size_t at = last.find(r1);
  ASSERT_NE(at, std::string::npos) << last.substr(0, 600);
  const double r1_start_s = std::stod(last.substr(at + r1.size()));
  EXPECT_GE(r1_start_s, 20);
  EXPECT_LE(r1_start_s, sink.times.back());
  EXPECT_NE(sink.snapshots.front().find(r1 + "0.0\n"), std::string::npos);
  // r2's prefill slows three-fold.
  std::vector<double> before, after;
  for (const Span& s : sink.spans) {
    if (s.replica != "r2" || s.status != RequestStatus::kOk) continue;
    (s.arrival_s < 30 ? before : after).push_back(s.e2e_s);
  }
  ASSERT_FALSE(before.empty());
  ASSERT_FALSE(after.empty());
  double mb = 0, ma = 0;
  for (double v : before) mb += v;
  for (double v : after) ma += v;
  EXPECT_GT(ma / static_cast<double>(after.size()), 2.0 * mb / static_cast<double>(before.size()));
}

// Property test over random scenarios: random fleets (sizes, GPUs, TP, budgets,
// chunking, tight KV caches), random templates and tenants, random events. Every
// request ends exactly once, no duration is negative, ttft >= queue, cached tokens
// never exceed prompt tokens.
TEST(Simulate, PropertiesHoldOnRandomScenarios) {
  for (uint64_t seed = 100; seed < 112; ++seed) {
    Rng rng(seed);
    auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
    Scenario sc;
    sc.name = "random";
    sc.duration_s = 20 + static_cast<double>(pick(40));
    sc.scrape_interval_s = 3;
    sc.router.kind = static_cast<RouterSpec::Kind>(pick(3));
    const int64_t n_rep = 1 + pick(4);
    for (int64_t i = 0; i < n_rep; ++i) {
      ReplicaSpec r;
      r.name = "r" + std::to_string(i);
      r.region = pick(2) == 0 ? "a" : "b";
      r.engine.hardware = *MakeHardwareConfig("llama-3.1-8b", pick(2) == 0 ? "h100-sxm" : "a100",
                                              Dtype::kBf16, 1 << pick(3));
      r.engine.max_model_len = 4096;
      r.engine.enable_chunked_prefill = pick(3) != 0;
      r.engine.max_num_batched_tokens = r.engine.enable_chunked_prefill ? 256 << pick(5) : 4096;
      r.engine.max_num_seqs = 4 << pick(5);
      r.engine.num_gpu_blocks = pick(2) == 0 ? 0 : 256 + pick(2000);  // often tight: preemption
      r.engine.long_prefill_token_threshold = pick(4) == 0 ? 512 : 0;
      sc.replicas.push_back(r);
    }
    TemplateSpec t;
    t.name = "app";
    for (int v = 0; v < 2; ++v) {
      TemplateVersion tv;
      tv.version = "v" + std::to_string(v + 1);
      tv.segments = {
          {"system", SegmentKind::kStatic, "system", Distribution::Fixed(16 + pick(1500))},
          {"user", SegmentKind::kPerUser, "", Distribution::Fixed(pick(300))},
          {"q", SegmentKind::kPerRequest, "", Distribution::Fixed(1 + pick(800))}};
      if (v == 1) std::swap(tv.segments[0], tv.segments[2]);
      t.versions.push_back(tv);
    }
    sc.workload.templates = {t};
    const int64_t n_ten = 1 + pick(3);
    for (int64_t k = 0; k < n_ten; ++k) {
      TenantSpec ten;
      ten.name = "t" + std::to_string(k);
      ten.template_name = "app";
      ten.template_version = "v1";
      ten.arrivals.kind = pick(2) == 0 ? ArrivalSpec::Kind::kPoisson : ArrivalSpec::Kind::kGamma;
      ten.arrivals.cv = 0.5 + static_cast<double>(pick(4));
      ten.arrivals.rate_rps = 1 + static_cast<double>(pick(30));
      ten.output_tokens = Distribution::Fixed(1 + pick(400));
      ten.users = 1 + pick(50);
      sc.workload.tenants.push_back(ten);
    }
    sc.workload.duration_s = sc.duration_s;
    sc.workload.seed = seed;
    sc.drain_limit_s = 120;
    const double at = sc.duration_s / 2;
    FleetEvent e;
    e.at_s = at;
    switch (pick(4)) {
      case 0:
        e.kind = EventKind::kDeployTemplate;
        e.template_name = "app";
        e.version = "v2";
        sc.workload.template_switches.push_back({at, "", "app", "v2"});
        break;
      case 1:
        e.kind = EventKind::kRestartReplica;
        e.replicas = {"r0"};
        break;
      case 2:
        e.kind = EventKind::kSlowReplica;
        e.replicas = {"r0"};
        e.factor = 2.5;
        break;
      default:
        e.kind = EventKind::kDrainReplica;
        e.replicas = {"r0"};
        break;
    }
    sc.events.push_back(e);
    CollectSink sink;
    auto r = Simulate(sc, sink, {});
    ASSERT_TRUE(r.ok()) << "seed " << seed << ": " << r.status().ToString();
    SCOPED_TRACE(seed);
    CheckSpanProperties(sink.spans, r->requests);
  }
}

TEST(Simulate, UnknownReplicaInEventIsAnError) {
  Scenario sc = SmallScenario(1, 1, 5, RouterSpec::Kind::kRoundRobin);
  FleetEvent e;
  e.kind = EventKind::kDrainReplica;
  e.at_s = 1;
  e.replicas = {"nope"};
  sc.events.push_back(e);
  CollectSink sink;
  auto r = Simulate(sc, sink, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nope"), std::string::npos);
}

TEST(Simulate, SnapshotsUseVllmNamesAndCountEveryRequest) {
  Scenario sc = SmallScenario(2, 2, 10, RouterSpec::Kind::kRoundRobin);
  CollectSink sink;
  auto r = Simulate(sc, sink, {});
  ASSERT_TRUE(r.ok());
  const std::string& last = sink.snapshots.back();
  for (const char* name :
       {"# TYPE vllm:time_to_first_token_seconds histogram", "vllm:prefix_cache_hits_total{",
        "vllm:request_queue_time_seconds_bucket{engine=\"0\",le=\"0.3\"",
        "vllm:num_requests_running{", "vllm:kv_cache_usage_perc{",
        "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\""}) {
    EXPECT_NE(last.find(name), std::string::npos) << name;
  }
  // The final snapshot's TTFT counts sum to the ok requests.
  double total = 0;
  size_t pos = 0;
  const std::string key = "vllm:time_to_first_token_seconds_count{";
  while ((pos = last.find(key, pos)) != std::string::npos) {
    size_t sp = last.find(' ', last.find('}', pos));
    total += std::stod(last.substr(sp + 1));
    pos = sp;
  }
  EXPECT_EQ(static_cast<int64_t>(total), r->finished_ok);
}

TEST(Simulate, OverloadTruncatesAtDrainLimitAndReportsAborts) {
  Scenario sc = SmallScenario(4, 1, 200, RouterSpec::Kind::kRoundRobin);
  sc.duration_s = 20;
  sc.workload.duration_s = 20;
  sc.drain_limit_s = 5;
  CollectSink sink;
  auto r = Simulate(sc, sink, {});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->truncated);
  CheckSpanProperties(sink.spans, r->requests);
  int64_t aborted = 0;
  for (const Span& s : sink.spans) aborted += s.status == RequestStatus::kAborted;
  EXPECT_GT(aborted, 0);
}

// Clients with a timeout: under overload the ones that wait too long disconnect and
// vLLM aborts their requests. Each ends once, no later than its timeout plus one
// engine step, and the abort counter matches the spans. A timeout nobody reaches
// changes nothing.
TEST(Simulate, ClientTimeoutsAbortRequestsUnderOverload) {
  constexpr double kTimeout = 4.0;
  Scenario sc = SmallScenario(4, 1, 200, RouterSpec::Kind::kRoundRobin);
  sc.duration_s = sc.workload.duration_s = 20;
  for (TenantSpec& t : sc.workload.tenants) t.timeout_s = kTimeout;
  CollectSink sink;
  auto r = Simulate(sc, sink, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->truncated);
  CheckSpanProperties(sink.spans, r->requests);
  int64_t aborted = 0, ok = 0;
  for (const Span& s : sink.spans) {
    if (s.status == RequestStatus::kOk) {
      ++ok;
      EXPECT_LE(s.e2e_s, kTimeout + 0.5) << s.request_id;
    } else {
      ASSERT_EQ(s.status, RequestStatus::kAborted) << s.request_id;
      ++aborted;
      EXPECT_GE(s.e2e_s, kTimeout - 1e-9) << s.request_id;
      EXPECT_LE(s.e2e_s, kTimeout + 0.5) << s.request_id;  // one step at most
    }
  }
  EXPECT_GT(aborted, 0);
  EXPECT_GT(ok, 0);
  // The last snapshot counts every abort as finished_reason="abort".
  const std::string& last = sink.snapshots.back();
  const std::string key = "finished_reason=\"abort\"";
  double counted = 0;
  for (size_t pos = last.find(key); pos != std::string::npos; pos = last.find(key, pos + 1)) {
    const size_t eol = last.find('\n', pos);
    const size_t sp = last.rfind(' ', eol);
    counted += std::stod(last.substr(sp + 1, eol - sp - 1));
  }
  EXPECT_EQ(counted, static_cast<double>(aborted));

  // A timeout no request reaches gives the same spans as no timeout at all.
  Scenario calm = SmallScenario(5, 2, 10, RouterSpec::Kind::kLeastOutstanding);
  CollectSink plain, with_timeout;
  ASSERT_TRUE(Simulate(calm, plain, {}).ok());
  for (TenantSpec& t : calm.workload.tenants) t.timeout_s = 600;
  ASSERT_TRUE(Simulate(calm, with_timeout, {}).ok());
  ASSERT_EQ(plain.spans.size(), with_timeout.spans.size());
  for (size_t i = 0; i < plain.spans.size(); ++i) {
    EXPECT_EQ(plain.spans[i].request_id, with_timeout.spans[i].request_id);
    EXPECT_EQ(plain.spans[i].e2e_s, with_timeout.spans[i].e2e_s);
  }
}

}  // namespace
}  // namespace ttft
