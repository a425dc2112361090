// Each hypothesis rule (src/diagnose/rule_*.cc) on hand-built evidence: it fires when
// its signal is there, stays quiet when the signal is absent, and says it cannot run
// when the input lacks what it reads. The end-to-end incident suite is
// incident_suite_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "diagnose/rule_helpers.h"
#include "ttft/diagnose.h"

namespace ttft::diag {
namespace {

using ::testing::HasSubstr;

// A steady window: every figure a rule reads, at ordinary values.
WindowStats Steady() {
  WindowStats w;
  w.from_s = 0;
  w.to_s = 600;
  w.requests = w.ok = 6000;
  w.request_rate_rps = 10;
  w.error_rate = 0;
  w.ttft_s = {0.2, 0.3, 0.5};
  w.queue_s = {0.02, 0.05, 0.2};
  w.prefill_s = {0.1, 0.15, 0.25};
  w.front_end_s = {0.005, 0.008, 0.01};
  w.itl_s.p50 = 0.02;
  w.itl_max_p99_s = 0.05;
  w.prefix_cache_hit_rate = 0.8;
  w.cached_tokens_mean = 2400;
  w.uncached_tokens_mean = 600;
  w.prompt_tokens.p50 = 2900;
  w.prompt_tokens.p99 = 4000;
  w.prompt_tokens.mean = 3000;
  w.output_tokens_mean = 200;
  w.output_tokens_p99 = 500;
  w.preemptions_per_request = 0.001;
  w.prefill_s_per_1k_uncached = 0.1;
  w.concurrency = 20;
  w.replicas = 4;
  return w;
}

GroupRow Group(std::string value, const WindowStats& before, const WindowStats& after,
               double contribution, double share_before, double share_after,
               std::string parent = "") {
  GroupRow r;
  r.value = std::move(value);
  r.parent = std::move(parent);
  r.before = before;
  r.after = after;
  r.contribution = contribution;
  r.share_before = share_before;
  r.share_after = share_after;
  return r;
}

// The evidence a rule reads, owning what ttft::Evidence refers to.
struct Case {
  WindowStats before = Steady(), after = Steady();
  Decomposition decomposition;
  std::vector<GroupSplit> groups;
  std::vector<LabelChange> label_changes;
  bool has_spans = true, has_metrics = false;

  GroupSplit& Split(const std::string& dimension) {
    for (GroupSplit& g : groups) {
      if (g.dimension == dimension) return g;
    }
    groups.push_back({dimension, {}});
    return groups.back();
  }
  Hypothesis Run(const HypothesisRule& rule) const {
    const Evidence ev{before, after, decomposition, groups, label_changes, has_spans, has_metrics};
    return rule.Evaluate(ev);
  }
};

std::string Sentences(const Hypothesis& h) {
  std::string s;
  for (const EvidenceLine& e : h.evidence) s += e.sentence + "\n";
  return s;
}

const EvidenceLine* LineAbout(const Hypothesis& h, std::string_view metric) {
  for (const EvidenceLine& e : h.evidence) {
    if (e.metric == metric) return &e;
  }
  return nullptr;
}

// Two tenants, steady, each half of the traffic.
void TwoSteadyTenants(Case& c) {
  GroupSplit& t = c.Split("tenant");
  t.rows = {Group("acme", Steady(), Steady(), 0.5, 0.5, 0.5),
            Group("globex", Steady(), Steady(), 0.5, 0.5, 0.5)};
}

// Four replicas in two regions, steady.
void SteadyReplicas(Case& c) {
  GroupSplit& r = c.Split("replica");
  for (int i = 0; i < 4; ++i) {
    r.rows.push_back(Group("r-" + std::to_string(i), Steady(), Steady(), 0.25, 0.25, 0.25,
                           i < 2 ? "east" : "west"));
  }
  GroupSplit& g = c.Split("region");
  WindowStats two = Steady();
  two.replicas = 2;
  g.rows = {Group("east", two, two, 0.5, 0.5, 0.5), Group("west", two, two, 0.5, 0.5, 0.5)};
}

// --- prefix_cache_collapse ---------------------------------------------------------

TEST(PrefixCacheCollapseRule, FiresWhenATenantLosesItsCachedPrefix) {
  Case c;
  TwoSteadyTenants(c);
  WindowStats lost = Steady();
  lost.cached_tokens_mean = 100;
  lost.prefix_cache_hit_rate = 0.03;
  c.Split("tenant").rows[0] = Group("acme", Steady(), lost, 0.9, 0.5, 0.5);
  c.after.prefix_cache_hit_rate = 0.4;
  c.after.queue_s.p99 = 1.5;
  c.label_changes.push_back({"template", "app@v2", LabelChange::Kind::kNew, 0.5});
  const Hypothesis h = c.Run(*MakePrefixCacheCollapseRule());
  EXPECT_GT(h.confidence, 0.8);
  EXPECT_TRUE(h.runnable);
  const EvidenceLine* cached = LineAbout(h, "cached_tokens_mean");
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ(cached->before, 2400);
  EXPECT_EQ(cached->after, 100);
  EXPECT_THAT(cached->sentence, HasSubstr("tenant acme: hit rate 80.0% -> 3.0%"));
  EXPECT_THAT(Sentences(h), HasSubstr("template app@v2: new in the incident"));
}

TEST(PrefixCacheCollapseRule, QuietWhileTheCacheHolds) {
  Case c;
  TwoSteadyTenants(c);
  c.after.queue_s.p99 = 1.5;
  EXPECT_EQ(c.Run(*MakePrefixCacheCollapseRule()).confidence, 0);
}

TEST(PrefixCacheCollapseRule, AColdReplicaIsNotATemplate) {
  Case c;
  TwoSteadyTenants(c);
  WindowStats lost = Steady();
  lost.cached_tokens_mean = 100;
  lost.prefix_cache_hit_rate = 0.03;
  c.Split("tenant").rows[0] = Group("acme", Steady(), lost, 0.9, 0.5, 0.5);
  const double spread = c.Run(*MakePrefixCacheCollapseRule()).confidence;
  SteadyReplicas(c);
  WindowStats cold = Steady();
  cold.cached_tokens_mean = 0;
  c.Split("replica").rows[0].after = cold;  // all the lost hits on r-0
  EXPECT_LT(c.Run(*MakePrefixCacheCollapseRule()).confidence, 0.3 * spread);
}

TEST(PrefixCacheCollapseRule, MetricsOnlyReadsTheFleetHitRate) {
  Case c;
  c.has_spans = false;
  c.has_metrics = true;
  c.after.prefix_cache_hit_rate = 0.2;
  c.after.cached_tokens_mean = 600;  // prompt mean 3000 x hit rate 0.2
  c.after.queue_s.p99 = 1.0;
  const Hypothesis h = c.Run(*MakePrefixCacheCollapseRule());
  EXPECT_GT(h.confidence, 0.9);
  EXPECT_THAT(Sentences(h), HasSubstr("metrics only"));
  // The hit rate fell but the cached tokens per request did not: longer prompts around
  // an intact prefix, not a collapse.
  Case longer = c;
  longer.after.cached_tokens_mean = 2400;
  EXPECT_LT(longer.Run(*MakePrefixCacheCollapseRule()).confidence, 0.05);
}

// A queue and prefill p99 inside the first bucket are bounds, not figures: their
// ratio is not read; the exact means' growth is.
TEST(PrefixCacheCollapseRule, MetricsOnlyReadsTheMeansWhenTheP99IsOnlyABound) {
  Case c;
  c.has_spans = false;
  c.has_metrics = true;
  c.after.prefix_cache_hit_rate = 0.0;
  c.after.cached_tokens_mean = 0;
  for (WindowStats* w : {&c.before, &c.after}) {
    for (TermQuantiles* t : {&w->queue_s, &w->prefill_s}) {
      t->source = TermQuantiles::Source::kBuckets;
      t->p99 = 0.297;  // interpolated inside (0, 0.3]: unchanged
      t->buckets[2] = {0.297, 0, 0.3, true, false};
      t->mean = 0.01;
    }
  }
  EXPECT_LT(c.Run(*MakePrefixCacheCollapseRule()).confidence, 0.05);  // nothing grew
  c.after.prefill_s.mean = 0.05;                                      // x5: exact, from _sum/_count
  const Hypothesis h = c.Run(*MakePrefixCacheCollapseRule());
  EXPECT_GT(h.confidence, 0.9);
  EXPECT_THAT(Sentences(h), HasSubstr("prefill x5.00"));
}

// --- scheduler_config ---------------------------------------------------------------

TEST(SchedulerConfigRule, FiresOnStallsWithTheWorkUnchanged) {
  Case c;
  c.after.itl_max_p99_s = 0.5;  // x10 while the median ITL is flat
  c.after.ttft_s.p99 = 2.0;
  c.label_changes.push_back({"deploy", "d2", LabelChange::Kind::kNew, 1.0});
  const Hypothesis h = c.Run(*MakeSchedulerConfigRule());
  EXPECT_GT(h.confidence, 0.9);
  EXPECT_THAT(Sentences(h), HasSubstr("deploy d2: new in the incident"));
}

TEST(SchedulerConfigRule, QuietWhenThePromptsGrewInstead) {
  Case c;
  c.after.itl_max_p99_s = 0.5;
  c.after.ttft_s.p99 = 2.0;
  c.after.prompt_tokens.p99 = 8000;
  c.after.prompt_tokens.mean = 6000;
  EXPECT_EQ(c.Run(*MakeSchedulerConfigRule()).confidence, 0);
}

TEST(SchedulerConfigRule, NotRunnableWithoutSpans) {
  Case c;
  c.has_spans = false;
  const Hypothesis h = c.Run(*MakeSchedulerConfigRule());
  EXPECT_FALSE(h.runnable);
  EXPECT_THAT(h.not_run_reason, HasSubstr("spans"));
}

// --- kv_pressure ---------------------------------------------------------------------

TEST(KvPressureRule, FiresOnPreemptionsWithTheHitRateFlat) {
  Case c;
  c.after.preemptions_per_request = 0.1;
  c.after.kv_usage = 0.98;
  c.before.kv_usage = 0.7;
  const Hypothesis h = c.Run(*MakeKvPressureRule());
  EXPECT_GT(h.confidence, 0.9);
  const EvidenceLine* kv = LineAbout(h, "kv_usage");
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(kv->sentence, "mean KV-cache usage 70% -> 98%");
}

TEST(KvPressureRule, QuietWithoutPreemptions) {
  Case c;
  c.after.kv_usage = 0.98;
  EXPECT_EQ(c.Run(*MakeKvPressureRule()).confidence, 0);
}

TEST(KvPressureRule, LongerOutputsAreDecodeHeavyInstead) {
  Case c;
  c.after.preemptions_per_request = 0.1;
  const double alone = c.Run(*MakeKvPressureRule()).confidence;
  c.after.output_tokens_mean = 600;
  EXPECT_LT(c.Run(*MakeKvPressureRule()).confidence, 0.5 * alone);
}

// --- longer_prompts ------------------------------------------------------------------

TEST(LongerPromptsRule, FiresWhenATenantsPromptsGrowAtTheSameSpeedPerToken) {
  Case c;
  TwoSteadyTenants(c);
  WindowStats longer = Steady();
  longer.prompt_tokens.p99 = 8000;
  longer.prompt_tokens.mean = 6000;
  c.Split("tenant").rows[0] = Group("acme", Steady(), longer, 0.9, 0.5, 0.5);
  c.after.prompt_tokens.p99 = 7000;
  const Hypothesis h = c.Run(*MakeLongerPromptsRule());
  EXPECT_GT(h.confidence, 0.9);
  EXPECT_THAT(Sentences(h), HasSubstr("tenant acme: prompt tokens p99 4000 -> 8000"));
}

TEST(LongerPromptsRule, QuietWhenThePromptsDidNotGrow) {
  Case c;
  TwoSteadyTenants(c);
  EXPECT_EQ(c.Run(*MakeLongerPromptsRule()).confidence, 0);
}

TEST(LongerPromptsRule, MetricsOnlyReadsTheFleetHistogram) {
  Case c;
  c.has_spans = false;
  c.after.prompt_tokens.p99 = 8000;
  const Hypothesis h = c.Run(*MakeLongerPromptsRule());
  EXPECT_NEAR(h.confidence, 0.7, 1e-9);
  EXPECT_THAT(Sentences(h), HasSubstr("metrics only"));
}

// --- bad_replica -----------------------------------------------------------------------

TEST(BadReplicaRule, FiresWhenOneReplicaDivergesAlone) {
  Case c;
  SteadyReplicas(c);
  WindowStats slow = Steady();
  slow.ttft_s.p99 = 3.0;
  auto& rows = c.Split("replica").rows;
  rows[0] = Group("r-0", Steady(), slow, 0.9, 0.25, 0.25, "east");
  rows[1].contribution = 0.05;
  const Hypothesis h = c.Run(*MakeBadReplicaRule());
  EXPECT_GT(h.confidence, 0.9);
  const EvidenceLine* p99 = LineAbout(h, "ttft_p99_s");
  ASSERT_NE(p99, nullptr);
  EXPECT_THAT(p99->sentence, HasSubstr("replica r-0: p99 TTFT 500 ms -> 3.00 s"));
}

// Issue 13: under a surge least-outstanding routing starves a throttled replica of
// requests; it holds 32% of the excess slow requests from 3% of the traffic. Judged
// against its traffic it stands out; a replica whose share of the excess is its share
// of the traffic does not.
TEST(BadReplicaRule, AReplicaIsJudgedAgainstItsShareOfTheTraffic) {
  auto fleet = [](double top_contribution, double top_share, double top_p99_after) {
    Case c;
    GroupSplit& r = c.Split("replica");
    WindowStats slow = Steady(), busy = Steady();
    slow.ttft_s.p99 = top_p99_after;
    busy.ttft_s.p99 = 1.0;
    r.rows.push_back(Group("r-0", Steady(), slow, top_contribution, 0.1, top_share, "east"));
    for (int i = 1; i < 10; ++i) {
      r.rows.push_back(Group("r-" + std::to_string(i), Steady(), busy, (1 - top_contribution) / 9,
                             0.1, (1 - top_share) / 9, i < 5 ? "east" : "west"));
    }
    WindowStats five = Steady();
    five.replicas = 5;
    c.Split("region").rows = {Group("east", five, five, 0.5, 0.5, 0.5),
                              Group("west", five, five, 0.5, 0.5, 0.5)};
    return c;
  };
  const Hypothesis starved = fleet(0.32, 0.03, 3.0).Run(*MakeBadReplicaRule());
  EXPECT_GT(starved.confidence, 0.9);
  EXPECT_THAT(Sentences(starved), HasSubstr("3% of the requests and 32% of the p99 increase"));
  EXPECT_EQ(fleet(0.30, 0.30, 3.0).Run(*MakeBadReplicaRule()).confidence, 0);
}

TEST(BadReplicaRule, QuietWhenTheReplicasMoveTogether) {
  Case c;
  SteadyReplicas(c);
  EXPECT_EQ(c.Run(*MakeBadReplicaRule()).confidence, 0);
}

TEST(BadReplicaRule, ARegionThatLostReplicasIsNotOneReplica) {
  Case c;
  SteadyReplicas(c);
  WindowStats slow = Steady();
  slow.ttft_s.p99 = 3.0;
  auto& rows = c.Split("replica").rows;
  rows[0] = Group("r-0", Steady(), slow, 0.9, 0.25, 0.25, "east");
  rows[1].contribution = 0.05;
  c.Split("region").rows[0].after.replicas = 1;
  EXPECT_EQ(c.Run(*MakeBadReplicaRule()).confidence, 0);
}

TEST(BadReplicaRule, NotRunnableWithoutPerReplicaData) {
  Case c;
  c.has_spans = false;
  const Hypothesis h = c.Run(*MakeBadReplicaRule());
  EXPECT_FALSE(h.runnable);
}

// --- region_capacity -------------------------------------------------------------------

TEST(RegionCapacityRule, FiresWhenTheRegionThatLostReplicasHoldsTheIncrease) {
  Case c;
  SteadyReplicas(c);
  WindowStats before = Steady(), after = Steady();
  before.replicas = 2;
  after.replicas = 1;
  after.ttft_s.p99 = 4.0;
  c.Split("region").rows[0] = Group("east", before, after, 0.95, 0.5, 0.5);
  c.Split("region").rows[1].contribution = 0.05;
  const Hypothesis h = c.Run(*MakeRegionCapacityRule());
  EXPECT_GT(h.confidence, 0.9);
  EXPECT_THAT(Sentences(h), HasSubstr("replicas by region (before -> after): east 2 -> 1"));
}

TEST(RegionCapacityRule, QuietWhenTheRegionsMoveTogether) {
  Case c;
  SteadyReplicas(c);
  EXPECT_EQ(c.Run(*MakeRegionCapacityRule()).confidence, 0);
}

TEST(RegionCapacityRule, NotRunnableWithoutPerRegionData) {
  Case c;
  c.has_spans = false;
  const Hypothesis h = c.Run(*MakeRegionCapacityRule());
  EXPECT_FALSE(h.runnable);
}

// --- traffic_mix -----------------------------------------------------------------------

TEST(TrafficMixRule, FiresWhenATenantWithHeavyRequestsGrows) {
  Case c;
  TwoSteadyTenants(c);
  WindowStats heavy = Steady();
  heavy.uncached_tokens_mean = 3000;
  c.Split("tenant").rows.push_back(Group("newco", WindowStats{}, heavy, 0.8, 0, 0.3));
  c.after.uncached_tokens_mean = 1300;
  c.label_changes.push_back({"tenant", "newco", LabelChange::Kind::kNew, 0.3});
  const Hypothesis h = c.Run(*MakeTrafficMixRule());
  EXPECT_GT(h.confidence, 0.9);
  EXPECT_EQ(h.shed_load_of, "tenant");
  const EvidenceLine* share = LineAbout(h, "share_of_requests");
  ASSERT_NE(share, nullptr);
  EXPECT_THAT(share->sentence, HasSubstr("tenant newco: share of requests 0% -> 30%"));
  EXPECT_THAT(Sentences(h), HasSubstr("tenant newco: new in the incident (30% of requests)"));
}

TEST(TrafficMixRule, QuietWhenTheMixHolds) {
  Case c;
  TwoSteadyTenants(c);
  EXPECT_EQ(c.Run(*MakeTrafficMixRule()).confidence, 0);
}

TEST(TrafficMixRule, NotRunnableWithoutPerTenantData) {
  Case c;
  c.has_spans = false;
  const Hypothesis h = c.Run(*MakeTrafficMixRule());
  EXPECT_FALSE(h.runnable);
}

// --- load_surge --------------------------------------------------------------------------

TEST(LoadSurgeRule, FiresWhenTheRateRisesAndEachRequestIsTheSame) {
  Case c;
  c.after.request_rate_rps = 16;
  const Hypothesis h = c.Run(*MakeLoadSurgeRule());
  EXPECT_EQ(h.confidence, 1.0);
  const EvidenceLine* rate = LineAbout(h, "request_rate_rps");
  ASSERT_NE(rate, nullptr);
  EXPECT_EQ(rate->sentence, "request rate 10.00 -> 16.00 rps (x1.60)");
}

// Issue 13: heavier requests (say a template collapse at the same time) weaken the case
// for a surge but never veto it.
TEST(LoadSurgeRule, WeakerButNotVetoedWhenTheRequestsAlsoGotHeavier) {
  Case heavy;
  heavy.after.request_rate_rps = 16;
  heavy.after.uncached_tokens_mean = 1500;
  Case same;
  same.after.request_rate_rps = 16;
  const double h = heavy.Run(*MakeLoadSurgeRule()).confidence;
  const double s = same.Run(*MakeLoadSurgeRule()).confidence;
  EXPECT_GT(h, 0);
  EXPECT_DOUBLE_EQ(h, 0.5 * s);
  Case flat;
  EXPECT_EQ(flat.Run(*MakeLoadSurgeRule()).confidence, 0);
}

// --- compute_slowdown --------------------------------------------------------------------

TEST(ComputeSlowdownRule, FiresWhenEveryReplicaIsSlowerPerToken) {
  Case c;
  SteadyReplicas(c);
  WindowStats slow = Steady();
  slow.prefill_s_per_1k_uncached = 0.2;
  slow.itl_s.p50 = 0.03;
  for (GroupRow& r : c.Split("replica").rows) r.after = slow;
  c.after.prefill_s_per_1k_uncached = 0.2;
  c.after.itl_s.p50 = 0.03;
  const Hypothesis h = c.Run(*MakeComputeSlowdownRule());
  EXPECT_EQ(h.confidence, 1.0);
  EXPECT_THAT(Sentences(h), HasSubstr("4 of 4 replicas slower per token"));
}

TEST(ComputeSlowdownRule, QuietWhenTheDecodeIsAsFast) {
  Case c;
  SteadyReplicas(c);
  WindowStats slow = Steady();
  slow.prefill_s_per_1k_uncached = 0.2;
  for (GroupRow& r : c.Split("replica").rows) r.after = slow;
  c.after.prefill_s_per_1k_uncached = 0.2;
  EXPECT_EQ(c.Run(*MakeComputeSlowdownRule()).confidence, 0);
}

TEST(ComputeSlowdownRule, NotRunnableWithoutSpans) {
  Case c;
  c.has_spans = false;
  EXPECT_FALSE(c.Run(*MakeComputeSlowdownRule()).runnable);
}

// --- decode_heavy ------------------------------------------------------------------------

TEST(DecodeHeavyRule, FiresOnLongerOutputsAndMoreSequencesInFlight) {
  Case c;
  c.after.output_tokens_mean = 500;
  c.after.concurrency = 40;
  const Hypothesis h = c.Run(*MakeDecodeHeavyRule());
  EXPECT_EQ(h.confidence, 1.0);
  const EvidenceLine* out = LineAbout(h, "output_tokens_mean");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->before, 200);
  EXPECT_EQ(out->after, 500);
  EXPECT_EQ(out->unit, "tokens");
}

TEST(DecodeHeavyRule, QuietWhenTheOutputsKeepTheirLength) {
  Case c;
  c.after.concurrency = 40;
  EXPECT_EQ(c.Run(*MakeDecodeHeavyRule()).confidence, 0);
}

TEST(DecodeHeavyRule, NotRunnableWithoutSpans) {
  Case c;
  c.has_spans = false;
  EXPECT_FALSE(c.Run(*MakeDecodeHeavyRule()).runnable);
}

// --- evidence states what the numbers say ------------------------------------------

TEST(EvidenceSentences, FollowTheNumbersNotAFixedClaim) {
  Case flat;
  const Hypothesis pc_flat = flat.Run(*MakePrefixCacheCollapseRule());
  ASSERT_NE(LineAbout(pc_flat, "prompt_tokens_p99"), nullptr);
  EXPECT_THAT(LineAbout(pc_flat, "prompt_tokens_p99")->sentence,
              HasSubstr("(x1.00): the prompts did not grow"));
  const Hypothesis sc_flat = flat.Run(*MakeSchedulerConfigRule());
  EXPECT_THAT(LineAbout(sc_flat, "prompt_tokens_p99")->sentence,
              HasSubstr(": the work per request did not change"));

  Case grew;  // the drill's case: a prompt p99 of x1.71 and the hit rate down
  grew.after.prompt_tokens.p99 = 6840;
  grew.after.prefix_cache_hit_rate = 0.48;
  const Hypothesis pc = grew.Run(*MakePrefixCacheCollapseRule());
  EXPECT_EQ(LineAbout(pc, "prompt_tokens_p99")->sentence,
            "prompt tokens p99 4000 -> 6840 (x1.71): the prompts grew as well");
  const Hypothesis sc = grew.Run(*MakeSchedulerConfigRule());
  EXPECT_EQ(LineAbout(sc, "prompt_tokens_p99")->sentence,
            "hit rate 80.0% -> 48.0%, prompt p99 4000 -> 6840: the work per request changed (the "
            "hit rate fell, the prompts grew)");
  const Hypothesis kv = grew.Run(*MakeKvPressureRule());
  EXPECT_EQ(LineAbout(kv, "prefix_cache_hit_rate")->sentence,
            "hit rate 80.0% -> 48.0% (down by 32 points; this cause expects it flat)");

  Case slower;
  slower.after.prefill_s_per_1k_uncached = 0.2;
  EXPECT_THAT(
      LineAbout(slower.Run(*MakeLongerPromptsRule()), "prefill_s_per_1k_uncached")->sentence,
      HasSubstr("(x2.00): up, each token is slower too"));
  EXPECT_THAT(LineAbout(flat.Run(*MakeLongerPromptsRule()), "prefill_s_per_1k_uncached")->sentence,
              HasSubstr("(x1.00): flat, the GPU is not slower"));

  Case unknown;  // no figures: no claim either way
  unknown.before.prompt_tokens.p99 = kMissing;
  EXPECT_EQ(LineAbout(unknown.Run(*MakePrefixCacheCollapseRule()), "prompt_tokens_p99")->sentence,
            "prompt tokens p99 n/a -> 4000 (n/a)");
}

// --- the registry --------------------------------------------------------------------------

TEST(DefaultRules, TenRulesWithDistinctIds) {
  const auto rules = DefaultRules();
  ASSERT_EQ(rules.size(), 10u);
  std::vector<std::string> ids;
  for (const auto& r : rules) ids.emplace_back(r->id());
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
}

}  // namespace
}  // namespace ttft::diag
