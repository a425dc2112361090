#include "ttft/attribution.h"

#include <gtest/gtest.h>

#include <cmath>
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

TEST(Attribution, TwoCausesShareTheIncreaseAndTheSharesAddUp) {
  Shape after;
  after.rate_rps = 12;
  after.cached = 0;  // and the prefix cache collapses
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
  Shape after;
  after.rate_rps = 12;
  after.cached = 0;
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

TEST(Replay, MoreLoadGivesAHigherP99) {
  attr::ReplayFleet fleet;
  fleet.regions = {"r"};
  fleet.names = {"a"};
  fleet.replica_region = {0};
  EngineConfig e;
  e.hardware = *MakeHardwareConfig("llama-3.3-70b", "h100-sxm", Dtype::kFp8, 2);
  fleet.engines = {e};
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

}  // namespace
}  // namespace ttft
