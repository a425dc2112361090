#include "ttft/attribution.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attribution/replay.h"

namespace ttft {
namespace {

struct Shape {
  double rate_rps = 8;
  int32_t prompt = 3000, cached = 2400, output = 100;
  double slow_replica = 1;  // prefill time per token of replica r0, relative
};

// Synthetic spans of one window: Poisson arrivals (fixed seed) over four replicas of
// one region, tenant acme.
void Fill(SpanTable& t, double from_s, double to_s, const Shape& s, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  auto u = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return static_cast<double>(x >> 11) * 0x1.0p-53;
  };
  int i = 0;
  for (double at = from_s - std::log(1 - u()) / s.rate_rps; at < to_s;
       at -= std::log(1 - u()) / s.rate_rps, ++i) {
    SpanRecord r;
    r.arrival_s = at;
    r.prompt_tokens = s.prompt;
    r.cached_tokens = s.cached;
    r.output_tokens = s.output;
    const std::string rep = "r" + std::to_string(i % 4);
    r.prefill_s = 1e-4 * (s.prompt - s.cached) * (i % 4 == 0 ? s.slow_replica : 1.0);
    r.queue_s = 0.01;
    r.front_end_s = 0.002;
    r.ttft_s = r.queue_s + r.prefill_s + r.front_end_s + 0.05 * u();
    r.labels = {rep, "us-east", "acme", "llama-3.3-70b", "app@v1", "v1"};
    t.Add(r);
  }
}

std::vector<uint32_t> Rows(const SpanTable& t, double from_s, double to_s) {
  std::vector<uint32_t> rows;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.arrival_s()[i] >= from_s && t.arrival_s()[i] < to_s)
      rows.push_back(static_cast<uint32_t>(i));
  }
  return rows;
}

Attribution RunPair(const Shape& before, const Shape& after, AttributionOptions opt = {}) {
  static SpanTable t;  // kept alive for the spans of the result
  t = SpanTable();
  Fill(t, 0, 300, before, 1);
  Fill(t, 300, 600, after, 2);
  const auto ra = Rows(t, 0, 300), rb = Rows(t, 300, 600);
  static std::vector<uint32_t> keep_a, keep_b;
  keep_a = ra;
  keep_b = rb;
  return Attribute({&t, keep_a, 0, 300}, {&t, keep_b, 300, 600}, opt);
}

// Two causes at once: a 1.5x surge while the prefix cache collapses.
Shape SurgeAndCollapse() {
  Shape s;
  s.rate_rps = 12;
  s.cached = 0;
  return s;
}

TEST(Attribution, NothingMovedIsNotRun) {
  const Attribution a = RunPair(Shape{}, Shape{});
  EXPECT_FALSE(a.run);
  EXPECT_NE(a.not_run_reason.find("no factor"), std::string::npos) << a.not_run_reason;
}

TEST(Attribution, AMissingFieldIsNamed) {
  SpanTable t;
  Fill(t, 0, 600, Shape{}, 3);
  SpanTable u;
  for (size_t i = 0; i < t.size(); ++i) {
    Span s = t.Get(i);
    SpanRecord r;
    r.arrival_s = s.arrival_s;
    r.prompt_tokens = s.prompt_tokens;
    r.cached_tokens = s.arrival_s >= 300 ? -1 : s.cached_tokens;  // missing in the incident
    r.output_tokens = s.output_tokens;
    r.ttft_s = s.ttft_s;
    r.labels = {"r0", "us-east", "acme", "", "", ""};
    u.Add(r);
  }
  const auto ra = Rows(u, 0, 300), rb = Rows(u, 300, 600);
  const Attribution a = Attribute({&u, ra, 0, 300}, {&u, rb, 300, 600}, {});
  EXPECT_FALSE(a.run);
  EXPECT_NE(a.not_run_reason.find("cached_tokens missing"), std::string::npos) << a.not_run_reason;
  EXPECT_NE(a.not_run_reason.find("incident"), std::string::npos) << a.not_run_reason;
  EXPECT_NE(Headline(a).find("not run"), std::string::npos);
}

TEST(Attribution, WithoutReplicaLabelsTheFleetIsUnknown) {
  SpanTable t;
  Fill(t, 0, 300, Shape{}, 1);
  Shape after;
  after.rate_rps = 24;
  Fill(t, 300, 600, after, 2);
  SpanTable u;
  for (size_t i = 0; i < t.size(); ++i) {
    const Span s = t.Get(i);
    SpanRecord r;
    r.arrival_s = s.arrival_s;
    r.prompt_tokens = s.prompt_tokens;
    r.cached_tokens = s.cached_tokens;
    r.output_tokens = s.output_tokens;
    r.ttft_s = s.ttft_s;
    r.labels = {"", "us-east", "acme", "", "", ""};
    u.Add(r);
  }
  const auto ra = Rows(u, 0, 300), rb = Rows(u, 300, 600);
  const Attribution a = Attribute({&u, ra, 0, 300}, {&u, rb, 300, 600}, {});
  EXPECT_FALSE(a.run);
  EXPECT_NE(a.not_run_reason.find("replica label missing"), std::string::npos) << a.not_run_reason;
}

TEST(Attribution, OneCauseTakesTheWholeIncrease) {
  Shape after;
  after.rate_rps = 24;  // 3x the requests, each the same
  const Attribution a = RunPair(Shape{}, after);
  ASSERT_TRUE(a.run) << a.not_run_reason;
  ASSERT_EQ(a.factors.size(), 1u);
  EXPECT_EQ(a.factors[0].factor, ReplayFactor::kArrivals);
  EXPECT_NEAR(a.factors[0].share, 1.0, 1e-9);  // one player: the whole v(all)
  EXPECT_GT(a.replay_none_p99_s, a.replay_all_p99_s);
  EXPECT_NE(Headline(a).find("One cause: the traffic surge explains 100%"), std::string::npos)
      << Headline(a);
}

TEST(Attribution, AProfilesAsyncSchedulingRunsTheAssumedEngines) {
  Shape after;
  after.rate_rps = 24;
  const Attribution sync = RunPair(Shape{}, after);
  AttributionOptions opt;
  opt.async_scheduling = true;  // a request joins the step after the next: TTFT longer
  const Attribution async = RunPair(Shape{}, after, opt);
  ASSERT_TRUE(sync.run && async.run) << sync.not_run_reason << async.not_run_reason;
  EXPECT_GT(async.replay_none_p99_s, sync.replay_none_p99_s);
  auto says_async = [](const Attribution& a) {
    for (const std::string& s : a.assumptions) {
      if (s.find("async scheduling") != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(says_async(async));
  EXPECT_FALSE(says_async(sync));
}

TEST(Attribution, TwoCausesShareTheIncreaseAndTheSharesAddUp) {
  const Shape after = SurgeAndCollapse();
  AttributionOptions opt;
  opt.seeds = 3;
  const Attribution a = RunPair(Shape{}, after, opt);
  ASSERT_TRUE(a.run) << a.not_run_reason;
  ASSERT_EQ(a.factors.size(), 2u);
  double sum = 0;
  for (const FactorShare& f : a.factors) {
    sum += f.share;
    EXPECT_GT(f.share, 0.02) << ToString(f.factor);
    EXPECT_LE(f.share_lo, f.share);
    EXPECT_GE(f.share_hi, f.share);
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);  // Shapley efficiency, per seed and so on average
  // The interaction is what the single effects leave: single shares + interaction = 1.
  EXPECT_NEAR(a.factors[0].single_share + a.factors[1].single_share + a.interaction, 1.0, 1e-6);
  EXPECT_GE(a.factors[0].share, a.factors[1].share);  // largest first
  const std::string h = Headline(a);
  EXPECT_EQ(h.rfind("Two causes: ", 0), 0u) << h;
  EXPECT_NE(h.find("interaction"), std::string::npos) << h;
}

// With two factors, permutation sampling's antithetic pair (an order and its reverse)
// covers both orders: it must give the exact Shapley values.
TEST(Attribution, PermutationSamplingMatchesTheExactValuesForTwoFactors) {
  const Shape after = SurgeAndCollapse();
  AttributionOptions exact;
  exact.seeds = 2;
  AttributionOptions sampled = exact;
  sampled.max_exact_factors = 1;
  const Attribution e = RunPair(Shape{}, after, exact);
  const Attribution s = RunPair(Shape{}, after, sampled);
  ASSERT_TRUE(e.run && s.run);
  ASSERT_EQ(e.factors.size(), 2u);
  ASSERT_EQ(s.factors.size(), 2u);
  EXPECT_NE(e.method.find("exact"), std::string::npos);
  EXPECT_NE(s.method.find("permutation"), std::string::npos);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(e.factors[i].factor, s.factors[i].factor);
    EXPECT_NEAR(e.factors[i].share, s.factors[i].share, 1e-9);
  }
}

// The Shapley pass's replays run on up to two threads; each is deterministic, so the
// shares must be bit for bit those of one thread.
TEST(Attribution, TheThreadCountDoesNotChangeTheResult) {
  const Shape after = SurgeAndCollapse();
  AttributionOptions one;
  one.seeds = 3;
  one.threads = 1;
  AttributionOptions two = one;
  two.threads = 2;
  const Attribution a = RunPair(Shape{}, after, one);
  const Attribution b = RunPair(Shape{}, after, two);
  ASSERT_TRUE(a.run && b.run);
  EXPECT_EQ(a.replays, b.replays);
  EXPECT_EQ(a.replay_none_p99_s, b.replay_none_p99_s);
  EXPECT_EQ(a.replay_all_p99_s, b.replay_all_p99_s);
  EXPECT_EQ(a.interaction, b.interaction);
  ASSERT_EQ(a.factors.size(), b.factors.size());
  for (size_t i = 0; i < a.factors.size(); ++i) {
    EXPECT_EQ(a.factors[i].factor, b.factors[i].factor);
    EXPECT_EQ(a.factors[i].share, b.factors[i].share);
    EXPECT_EQ(a.factors[i].share_lo, b.factors[i].share_lo);
    EXPECT_EQ(a.factors[i].share_hi, b.factors[i].share_hi);
  }
}

// A window above max_requests is replayed on its middle max_requests in arrival order,
// whatever the order of its rows.
TEST(Attribution, ALargeWindowIsReplayedOnItsMiddleSliceInArrivalOrder) {
  Shape after;
  after.rate_rps = 24;
  SpanTable t;
  Fill(t, 0, 300, Shape{}, 1);
  Fill(t, 300, 600, after, 2);
  std::vector<uint32_t> ra = Rows(t, 0, 300), rb = Rows(t, 300, 600);
  std::mt19937 g(7);
  std::shuffle(rb.begin(), rb.end(), g);
  AttributionOptions opt;
  opt.seeds = 1;
  opt.max_requests = 1001;
  ASSERT_GT(rb.size(), 3000u);
  const Attribution a = Attribute({&t, ra, 0, 300}, {&t, rb, 300, 600}, opt);
  ASSERT_TRUE(a.run) << a.not_run_reason;
  std::vector<double> arrivals;
  for (uint32_t r : rb) arrivals.push_back(t.arrival_s()[r]);
  std::sort(arrivals.begin(), arrivals.end());
  const size_t start = (arrivals.size() - 1001) / 2;
  EXPECT_EQ(a.requests_incident, 1001);
  EXPECT_EQ(a.slice_from_s, arrivals[start]);
  EXPECT_EQ(a.slice_to_s, arrivals[start + 1000]);
}

TEST(Attribution, TheTimeBudgetCutsTheSeedsAndSaysSo) {
  Shape after;
  after.rate_rps = 24;
  AttributionOptions opt;
  opt.seeds = 3;
  opt.budget_s = 1e-9;
  const Attribution a = RunPair(Shape{}, after, opt);
  ASSERT_TRUE(a.run) << a.not_run_reason;
  EXPECT_EQ(a.seeds, 1);
  bool said = false;
  for (const std::string& s : a.assumptions)
    said |= s.find("seeds cut from 3 to 1") != std::string::npos;
  EXPECT_TRUE(said);
  opt.budget_s = 100;
  EXPECT_EQ(RunPair(Shape{}, after, opt).seeds, 3);
}

TEST(Attribution, ASlowReplicaIsInferredFromItsPrefillTimePerToken) {
  Shape after;
  after.slow_replica = 3;
  after.rate_rps = 12;
  const Attribution a = RunPair(Shape{}, after);
  ASSERT_TRUE(a.run) << a.not_run_reason;
  bool speed = false;
  for (const FactorShare& f : a.factors) speed |= f.factor == ReplayFactor::kSpeed;
  EXPECT_TRUE(speed);
}

// One replica "a" in region "r": Llama-3.3-70B FP8 on two H100s.
attr::ReplayFleet OneReplicaFleet() {
  attr::ReplayFleet fleet;
  fleet.regions = {"r"};
  fleet.names = {"a"};
  fleet.replica_region = {0};
  EngineConfig e;
  e.hardware = *MakeHardwareConfig("llama-3.3-70b", "h100-sxm", Dtype::kFp8, 2);
  fleet.engines = {e};
  return fleet;
}

TEST(Replay, MoreLoadGivesAHigherP99) {
  const attr::ReplayFleet fleet = OneReplicaFleet();
  attr::FleetState st{{true}, {1.0}};
  auto reqs = [](double rate) {
    std::vector<attr::ReplayRequest> v;
    for (int i = 0; i < 2000; ++i) {
      attr::ReplayRequest q;
      q.arrival_s = i / rate;
      q.prompt_tokens = 2000;
      q.cached_tokens = 1600;
      q.output_tokens = 100;
      v.push_back(q);
    }
    return v;
  };
  const double light = attr::ReplayP99(reqs(2), fleet, st, RouterSpec::Kind::kLeastOutstanding);
  const double heavy = attr::ReplayP99(reqs(40), fleet, st, RouterSpec::Kind::kLeastOutstanding);
  EXPECT_GT(light, 0);
  EXPECT_GT(heavy, light);
  st.slowdown = {2.0};
  EXPECT_GT(attr::ReplayP99(reqs(2), fleet, st, RouterSpec::Kind::kLeastOutstanding), light);
}

// A span claiming 2e9 prompt tokens is rejected as too long, as every replica would
// reject it, before its blocks are hashed (that took 2 GB and seconds): the p99 is that
// of the other requests, and the process' peak RSS barely moves.
TEST(Replay, ARequestLongerThanAnyReplicaAcceptsIsRejectedWithoutHashingIt) {
  const attr::ReplayFleet fleet = OneReplicaFleet();
  attr::FleetState st{{true}, {1.0}};
  std::vector<attr::ReplayRequest> v;
  for (int i = 0; i < 500; ++i) {
    attr::ReplayRequest q;
    q.arrival_s = i / 4.0;
    q.prompt_tokens = 2000;
    q.cached_tokens = 0;
    q.output_tokens = 50;
    v.push_back(q);
  }
  const double p99 = attr::ReplayP99(v, fleet, st, RouterSpec::Kind::kLeastOutstanding);
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  v[250].prompt_tokens = 2'000'000'000;
  const double with_huge = attr::ReplayP99(v, fleet, st, RouterSpec::Kind::kLeastOutstanding);
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_GT(with_huge, 0);
  EXPECT_LE(with_huge, p99 * 1.05);  // one request fewer: no more load
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 200 * 1024) << "KB";
}

// The event loop's choice of the next step end: the first smallest finite end, as the
// linear scan it replaced found it, under random changes with many ties, NaN and
// infinity, on fleet sizes around powers of two.
TEST(Replay, NextStepPicksAsTheLinearScanDid) {
  const double kInf = std::numeric_limits<double>::infinity();
  for (size_t n : {1, 2, 3, 7, 8, 9, 192}) {
    std::mt19937_64 rng(n);
    attr::NextStep tree(n);
    std::vector<double> ends(n, kInf);
    for (int k = 0; k < 4000; ++k) {
      const size_t i = rng() % n;
      const uint64_t pick = rng() % 10;
      const double v = pick == 0   ? kInf
                       : pick == 1 ? std::numeric_limits<double>::quiet_NaN()
                                   : static_cast<double>(rng() % 6);  // ties
      tree.Set(i, v);
      ends[i] = v;
      size_t si = n;
      double te = kInf;
      for (size_t j = 0; j < n; ++j) {
        if (ends[j] < te) {
          te = ends[j];
          si = j;
        }
      }
      ASSERT_EQ(tree.First(), si) << "n " << n << " change " << k;
      if (si < n) {
        ASSERT_EQ(tree.end_s(si), te);
      }
    }
  }
}

// A fleet of 12 replicas in 3 regions, half of them with a 700-block KV pool (the
// replay evicts, wraps the free queue and preempts there), one inactive, two slowed;
// 3,000 requests on 7 shared-prefix chains.
struct GoldenCase {
  attr::ReplayFleet fleet;
  attr::FleetState state;
  std::vector<attr::ReplayRequest> requests;
};
GoldenCase MakeGoldenCase() {
  GoldenCase g;
  uint64_t x = 88172645463325252ULL;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  g.fleet.regions = {"a", "b", "c"};
  EngineConfig e;
  e.hardware = *MakeHardwareConfig("llama-3.3-70b", "h100-sxm", Dtype::kFp8, 2);
  EngineConfig tight = e;
  tight.num_gpu_blocks = 700;
  for (int i = 0; i < 12; ++i) {
    g.fleet.names.push_back("r" + std::to_string(i));
    g.fleet.replica_region.push_back(i % 3);
    g.fleet.engines.push_back(i % 2 == 0 ? tight : e);
    g.state.active.push_back(i != 3);
    g.state.slowdown.push_back(i % 5 == 0 ? 1.7 : 1.0);
  }
  g.fleet.route_sets = {{0, 1, 2}, {3, 4, 5, 6, 7}};
  double t = 0;
  for (int k = 0; k < 3000; ++k) {
    t += -std::log(1 - static_cast<double>(next() >> 11) * 0x1.0p-53) / 6.0;
    attr::ReplayRequest q;
    q.arrival_s = t;
    q.front_end_s = 0.001 * static_cast<double>(next() % 5);
    q.prompt_tokens = 100 + static_cast<int32_t>(next() % 6000);
    q.cached_tokens = static_cast<int32_t>(next() % static_cast<uint64_t>(q.prompt_tokens));
    q.output_tokens = 1 + static_cast<int32_t>(next() % 400);
    q.chain = static_cast<int32_t>(next() % 7);
    q.region = static_cast<int32_t>(next() % 3);
    q.route = static_cast<int32_t>(next() % 4);
    g.requests.push_back(q);
  }
  return g;
}

// The replay's results are exactly those of the engine before its KV block pools were
// materialised lazily and the next step was found by a tree (values printed with %a by
// the code of commit 9cf56a4), and replaying the same window again gives them again.
TEST(Replay, ResultsAreBitIdenticalToTheEagerPoolEngine) {
  const GoldenCase g = MakeGoldenCase();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> want_pt = {
      0x1.fac18cbdc26ecp-14, 0x1.2f7848d32fc7bp-14, 0x1.2456560064b3p-14,  nan,
      0x1.234a37c1fbfc7p-14, 0x1.014427035f712p-13, 0x1.269a2ba7b20acp-14, 0x1.347454ecbb64ap-14,
      0x1.202d18c6aafbfp-14, 0x1.2fbe1a4313d02p-14, 0x1.ec8e4cd0bc1fap-14, 0x1.2f57939b688a5p-14};
  for (int run = 0; run < 2; ++run) {
    std::vector<double> pt;
    EXPECT_EQ(
        attr::ReplayP99(g.requests, g.fleet, g.state, RouterSpec::Kind::kLeastOutstanding, &pt),
        0x1.361c08ab2f97bp+3);
    ASSERT_EQ(pt.size(), want_pt.size());
    for (size_t i = 0; i < pt.size(); ++i) {
      if (std::isnan(want_pt[i]))
        EXPECT_TRUE(std::isnan(pt[i])) << i;
      else
        EXPECT_EQ(pt[i], want_pt[i]) << i;
    }
    EXPECT_EQ(attr::ReplayP99(g.requests, g.fleet, g.state, RouterSpec::Kind::kPrefixAware),
              0x1.2760cd5e8efccp+2);
    EXPECT_EQ(attr::ReplayP99(g.requests, g.fleet, g.state, RouterSpec::Kind::kRoundRobin),
              0x1.f2542641ceffap+8);
  }
}

}  // namespace
}  // namespace ttft
