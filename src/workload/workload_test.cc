// Tests for distributions, block hashes, arrival processes and request content.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "ttft/workload.h"

namespace ttft {
namespace {

struct Moments {
  double mean = 0, cv = 0;
};
Moments Measure(const std::vector<double>& xs) {
  double s = 0, s2 = 0;
  for (double x : xs) s += x;
  const double m = s / static_cast<double>(xs.size());
  for (double x : xs) s2 += (x - m) * (x - m);
  return {m, std::sqrt(s2 / static_cast<double>(xs.size() - 1)) / m};
}

std::vector<double> Draw(const Distribution& d, int n, uint64_t seed = 42) {
  Rng rng(seed);
  std::vector<double> xs(n);
  for (auto& x : xs) x = d.Sample(rng);
  return xs;
}

TEST(DistributionTest, Fixed) {
  auto d = Distribution::Fixed(12);
  Rng rng(1);
  EXPECT_EQ(d.Sample(rng), 12);
  EXPECT_EQ(d.Mean(), 12);
}

TEST(DistributionTest, UniformMeanAndRange) {
  Distribution d;
  d.kind = Distribution::Kind::kUniform;
  d.min = 100;
  d.max = 300;
  auto xs = Draw(d, 100000);
  for (double x : xs) ASSERT_TRUE(x >= 100 && x <= 300) << x;
  auto m = Measure(xs);
  EXPECT_NEAR(m.mean, 200, 1.0);  // sd of the mean ~0.18
  EXPECT_EQ(d.Mean(), 200);
  // Uniform sd = (max - min) / sqrt(12).
  EXPECT_NEAR(m.cv * m.mean, 200 / std::sqrt(12.0), 1.0);
}

TEST(DistributionTest, LognormalMeanAndCv) {
  Distribution d;
  d.kind = Distribution::Kind::kLognormal;
  d.mean = 900;
  d.cv = 0.6;
  auto m = Measure(Draw(d, 400000));
  EXPECT_NEAR(m.mean, 900, 900 * 0.005);
  EXPECT_NEAR(m.cv, 0.6, 0.015);
  EXPECT_DOUBLE_EQ(d.Mean(), 900);
}

TEST(DistributionTest, LognormalClampedMeanMatchesAnalytic) {
  Distribution d;
  d.kind = Distribution::Kind::kLognormal;
  d.mean = 900;
  d.cv = 1.5;
  d.clamp_min = 200;
  d.clamp_max = 2000;
  auto xs = Draw(d, 400000);
  for (double x : xs) ASSERT_TRUE(x >= 200 && x <= 2000);
  EXPECT_NEAR(Measure(xs).mean, d.Mean(), d.Mean() * 0.005);
  EXPECT_LT(d.Mean(), 900);  // the upper clamp cuts a heavy tail
}

TEST(DistributionTest, EmpiricalWeights) {
  Distribution d;
  d.kind = Distribution::Kind::kEmpirical;
  d.values = {10, 20, 30};
  d.weights = {1, 0, 3};
  std::map<double, int> counts;
  for (double x : Draw(d, 40000)) ++counts[x];
  EXPECT_EQ(counts[20], 0);
  EXPECT_NEAR(counts[30] / 40000.0, 0.75, 0.01);
  EXPECT_DOUBLE_EQ(d.Mean(), (10 + 90) / 4.0);
  d.weights.clear();
  EXPECT_DOUBLE_EQ(d.Mean(), 20);
  std::map<double, int> c2;
  for (double x : Draw(d, 30000)) ++c2[x];
  for (double v : {10, 20, 30}) EXPECT_NEAR(c2[v] / 30000.0, 1 / 3.0, 0.015);
}

TEST(DistributionTest, SameSeedSameDraws) {
  Distribution d;
  d.kind = Distribution::Kind::kLognormal;
  d.mean = 50;
  d.cv = 1;
  EXPECT_EQ(Draw(d, 100, 7), Draw(d, 100, 7));
  EXPECT_NE(Draw(d, 100, 7), Draw(d, 100, 8));
}

// ---------------------------------------------------------------------------
// Block hashes

TEST(BlockHashTest, OnlyFullBlocks) {
  std::vector<uint64_t> h;
  ComputeBlockHashes({{1, 20}, {2, 13}}, 16, 0, h);
  EXPECT_EQ(h.size(), 2u);
  ComputeBlockHashes({{1, 15}}, 16, 0, h);
  EXPECT_TRUE(h.empty());
  ComputeBlockHashes({{1, 16}}, 16, 0, h);
  EXPECT_EQ(h.size(), 1u);
}

// The chained hash written plainly: the words of each block in a vector. The
// production code keeps them in an inline buffer; the bytes hashed must not change.
std::vector<uint64_t> ReferenceBlockHashes(const std::vector<PromptPiece>& pieces, int bs,
                                           uint64_t salt) {
  std::vector<uint64_t> out, words;
  uint64_t parent = 0x9e3779b97f4a7c15ULL;
  size_t piece = 0;
  int64_t offset = 0;
  for (int64_t j = 0;; ++j) {
    words = {parent};
    if (j == 0) words.push_back(salt);
    int64_t need = bs;
    for (; need > 0 && piece < pieces.size();) {
      if (offset >= pieces[piece].tokens) {
        ++piece;
        offset = 0;
        continue;
      }
      const int64_t take = std::min<int64_t>(need, pieces[piece].tokens - offset);
      words.insert(words.end(),
                   {pieces[piece].key, static_cast<uint64_t>(offset), static_cast<uint64_t>(take)});
      offset += take;
      need -= take;
    }
    if (need > 0) return out;
    parent = XXH3_64bits(words.data(), words.size() * sizeof(uint64_t));
    out.push_back(parent);
  }
}

TEST(BlockHashTest, ManyPiecesPerBlockMatchTheReference) {
  // 1-token pieces: a 64-token block overlaps 64 pieces (the buffer grows twice).
  std::vector<PromptPiece> pieces;
  for (uint64_t k = 0; k < 300; ++k) pieces.push_back({k * 7919 + 1, static_cast<int32_t>(k % 3)});
  for (int bs : {1, 16, 64}) {
    std::vector<uint64_t> h;
    ComputeBlockHashes(pieces, bs, 42, h);
    EXPECT_EQ(h, ReferenceBlockHashes(pieces, bs, 42)) << "block size " << bs;
    EXPECT_FALSE(h.empty());
  }
}

TEST(BlockHashTest, PrefixPropertyAndChaining) {
  std::vector<uint64_t> a, b, c;
  ComputeBlockHashes({{1, 100}, {2, 50}}, 16, 0, a);
  ComputeBlockHashes({{1, 100}, {3, 50}}, 16, 0, b);
  ASSERT_EQ(a.size(), 9u);
  ASSERT_EQ(b.size(), 9u);
  // Blocks 0..5 hold only key 1's tokens 0..95: shared; block 6 mixes in key 2 vs 3.
  for (int i = 0; i < 6; ++i) EXPECT_EQ(a[i], b[i]) << i;
  for (int i = 6; i < 9; ++i) EXPECT_NE(a[i], b[i]) << i;
  // A different first block changes every later hash (chaining), even with equal tokens.
  ComputeBlockHashes({{9, 16}, {1, 100}, {2, 50}}, 16, 0, c);
  std::set<uint64_t> sa(a.begin(), a.end());
  for (auto x : c) EXPECT_EQ(sa.count(x), 0u);
}

TEST(BlockHashTest, SameTokensDifferentSplitSameHashes) {
  std::vector<uint64_t> a, b, c;
  ComputeBlockHashes({{1, 40}, {2, 24}}, 16, 0, a);
  ComputeBlockHashes({{1, 40}, {7, 0}, {2, 24}, {5, 0}}, 16, 0, b);
  EXPECT_EQ(a, b);
  // A shorter piece with the same key is a prefix of the longer one (token i of key K
  // depends on (K, i) only), e.g. Mooncake's partial last block.
  ComputeBlockHashes({{1, 40}, {2, 8}}, 16, 0, c);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(std::vector<uint64_t>(a.begin(), a.begin() + 3), c);
}

TEST(BlockHashTest, SaltIsolatesAndBlockSizeMatters) {
  std::vector<uint64_t> a, b, c;
  ComputeBlockHashes({{1, 64}}, 16, 0, a);
  ComputeBlockHashes({{1, 64}}, 16, 77, b);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NE(a[i], b[i]);
  ComputeBlockHashes({{1, 64}}, 32, 0, c);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_NE(c[0], a[0]);
  ComputeBlockHashes({{1, 64}}, 0, 0, c);
  EXPECT_TRUE(c.empty());
}

// ---------------------------------------------------------------------------
// RequestSource

SegmentSpec Seg(std::string name, SegmentKind kind, double tokens, std::string content = "") {
  SegmentSpec s;
  s.name = std::move(name);
  s.kind = kind;
  s.content = std::move(content);
  s.tokens = Distribution::Fixed(tokens);
  return s;
}

TenantSpec Tenant(std::string name, double rate, std::string tmpl = "app",
                  std::string version = "v1") {
  TenantSpec t;
  t.name = std::move(name);
  t.arrivals.rate_rps = rate;
  t.template_name = std::move(tmpl);
  t.template_version = std::move(version);
  t.output_tokens = Distribution::Fixed(100);
  return t;
}

WorkloadSpec AppSpec() {
  WorkloadSpec w;
  TemplateSpec t;
  t.name = "app";
  t.versions.push_back({"v1",
                        {Seg("system_prompt", SegmentKind::kStatic, 5000),
                         Seg("timestamp", SegmentKind::kPerRequest, 12),
                         Seg("question", SegmentKind::kPerRequest, 900)}});
  // v2 moves the timestamp ahead of the system prompt.
  t.versions.push_back({"v2",
                        {Seg("timestamp", SegmentKind::kPerRequest, 12),
                         Seg("system_prompt", SegmentKind::kStatic, 5000),
                         Seg("question", SegmentKind::kPerRequest, 900)}});
  // v3 appends a tool schema after the (unchanged) system prompt.
  t.versions.push_back(
      {"v3",
       {Seg("system_prompt", SegmentKind::kStatic, 5000), Seg("tools", SegmentKind::kStatic, 800),
        Seg("question", SegmentKind::kPerRequest, 900)}});
  w.templates.push_back(t);
  w.tenants.push_back(Tenant("acme", 2));
  w.duration_s = 100;
  w.seed = 7;
  return w;
}

std::vector<Request> Drain(const WorkloadSpec& w) {
  auto src = RequestSource::Create(w);
  EXPECT_TRUE(src.ok()) << src.status().ToString();
  std::vector<Request> out;
  if (!src.ok()) return out;
  Request r;
  for (;;) {
    auto more = (*src)->Next(r);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    out.push_back(r);
  }
  return out;
}

size_t SharedPrefix(const Request& a, const Request& b) {
  size_t n = 0;
  while (n < a.block_hashes.size() && n < b.block_hashes.size() &&
         a.block_hashes[n] == b.block_hashes[n]) {
    ++n;
  }
  return n;
}

TEST(RequestSourceTest, DeterministicAndOrdered) {
  auto a = Drain(AppSpec());
  auto b = Drain(AppSpec());
  ASSERT_GT(a.size(), 100u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].seq, static_cast<int64_t>(i));
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].block_hashes, b[i].block_hashes);
    EXPECT_EQ(a[i].prompt_tokens, 5000 + 12 + 900);
    EXPECT_EQ(a[i].output_tokens, 100);
    EXPECT_EQ(a[i].block_hashes.size(), (5000u + 12 + 900) / 16);
    EXPECT_GE(a[i].arrival_s, 0);
    EXPECT_LT(a[i].arrival_s, 100);
    if (i > 0) {
      EXPECT_GE(a[i].arrival_s, a[i - 1].arrival_s);
    }
  }
  auto w = AppSpec();
  w.seed = 8;
  auto c = Drain(w);
  EXPECT_NE(a[0].arrival_s, c[0].arrival_s);
}

TEST(RequestSourceTest, StaticPrefixSharedPerRequestNot) {
  auto rs = Drain(AppSpec());
  ASSERT_GE(rs.size(), 3u);
  // 5000 static tokens = 312 full blocks, then the timestamp differs.
  EXPECT_EQ(SharedPrefix(rs[0], rs[1]), 5000u / 16);
  EXPECT_EQ(SharedPrefix(rs[1], rs[2]), 5000u / 16);
}

TEST(RequestSourceTest, TemplateSwitchBreaksOrKeepsPrefix) {
  auto w = AppSpec();
  w.template_switches.push_back({50, "", "app", "v2"});
  auto rs = Drain(w);
  const Request* before = nullptr;
  const Request* after1 = nullptr;
  const Request* after2 = nullptr;
  for (const auto& r : rs) {
    if (r.arrival_s < 50) before = &r;
    if (r.arrival_s >= 50 && !after1) {
      after1 = &r;
    } else if (r.arrival_s >= 50 && !after2) {
      after2 = &r;
    }
  }
  ASSERT_TRUE(before && after1 && after2);
  EXPECT_EQ(before->template_label, 0);
  EXPECT_EQ(after1->template_label, 1);
  // The timestamp first: nothing is shared, not even between v2 requests.
  EXPECT_EQ(SharedPrefix(*before, *after1), 0u);
  EXPECT_EQ(SharedPrefix(*after1, *after2), 0u);

  // v3 keeps the system prompt in front: its blocks stay shared across the switch,
  // since a static key depends on the content, not the version.
  w = AppSpec();
  w.template_switches.push_back({50, "acme", "app", "v3"});
  rs = Drain(w);
  const Request* b = nullptr;
  const Request* a = nullptr;
  for (const auto& r : rs) {
    if (r.arrival_s < 50) b = &r;
    if (r.arrival_s >= 50 && !a) a = &r;
  }
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->template_label, 2);
  EXPECT_EQ(SharedPrefix(*a, *b), 5000u / 16);
}

TEST(RequestSourceTest, CacheSaltIsolatesTenants) {
  auto w = AppSpec();
  w.tenants.push_back(Tenant("globex", 2));
  auto rs = Drain(w);
  auto first_of = [&](int tenant) {
    for (const auto& r : rs) {
      if (r.tenant == tenant) return r;
    }
    return Request{};
  };
  EXPECT_EQ(SharedPrefix(first_of(0), first_of(1)), 312u);
  w.tenants[1].cache_salt = "globex-secret";
  rs = Drain(w);
  EXPECT_EQ(SharedPrefix(first_of(0), first_of(1)), 0u);
}

TEST(RequestSourceTest, PerUserAndPerTenantSegments) {
  WorkloadSpec w;
  TemplateSpec t;
  t.name = "chat";
  t.versions.push_back(
      {"v1",
       {Seg("sys", SegmentKind::kStatic, 64), Seg("profile", SegmentKind::kPerTenant, 64),
        Seg("history", SegmentKind::kPerUser, 160), Seg("q", SegmentKind::kPerRequest, 40)}});
  w.templates.push_back(t);
  w.tenants.push_back(Tenant("a", 20, "chat"));
  w.tenants[0].users = 3;
  w.tenants.push_back(Tenant("b", 20, "chat"));
  w.tenants[1].users = 3;
  w.duration_s = 10;
  auto rs = Drain(w);
  ASSERT_GT(rs.size(), 100u);
  // Within a tenant, a request shares 4 blocks (sys) + 4 (profile) and, with the
  // same user, 10 more (history). Across tenants only sys is shared.
  std::map<size_t, int> within, across;
  for (size_t i = 1; i < rs.size(); ++i) {
    size_t n = SharedPrefix(rs[i - 1], rs[i]);
    (rs[i - 1].tenant == rs[i].tenant ? within : across)[n]++;
  }
  for (auto& [n, c] : within) EXPECT_TRUE(n == 8 || n == 18) << n;
  for (auto& [n, c] : across) EXPECT_EQ(n, 4u);
  EXPECT_GT(within[18], 0);
  EXPECT_GT(within[8], 0);
}

std::vector<double> Gaps(const std::vector<Request>& rs, double from, double to) {
  std::vector<double> g;
  double last = -1;
  for (const auto& r : rs) {
    if (r.arrival_s < from || r.arrival_s >= to) continue;
    if (last >= 0) g.push_back(r.arrival_s - last);
    last = r.arrival_s;
  }
  return g;
}

WorkloadSpec RateSpec(double rate, ArrivalSpec::Kind kind, double cv, double duration) {
  WorkloadSpec w;
  TemplateSpec t;
  t.name = "x";
  t.versions.push_back({"v1", {Seg("q", SegmentKind::kPerRequest, 1)}});
  w.templates.push_back(t);
  w.tenants.push_back(Tenant("t", rate, "x"));
  w.tenants[0].arrivals.kind = kind;
  w.tenants[0].arrivals.cv = cv;
  w.duration_s = duration;
  return w;
}

TEST(ArrivalTest, PoissonRateAndCv) {
  auto rs = Drain(RateSpec(50, ArrivalSpec::Kind::kPoisson, 1, 2000));
  // 100000 expected; sd ~316.
  EXPECT_NEAR(static_cast<double>(rs.size()), 100000, 1500);
  auto m = Measure(Gaps(rs, 0, 2000));
  EXPECT_NEAR(m.mean, 0.02, 0.0004);
  EXPECT_NEAR(m.cv, 1.0, 0.02);
}

TEST(ArrivalTest, GammaRateAndCv) {
  for (double cv : {0.5, 2.0}) {
    auto rs = Drain(RateSpec(50, ArrivalSpec::Kind::kGamma, cv, 2000));
    EXPECT_NEAR(static_cast<double>(rs.size()), 100000, 100000 * cv * 0.03) << cv;
    auto m = Measure(Gaps(rs, 0, 2000));
    EXPECT_NEAR(m.cv, cv, cv * 0.05) << cv;
  }
}

TEST(ArrivalTest, PiecewiseRatesAndZeroPieces) {
  auto w = RateSpec(0, ArrivalSpec::Kind::kPoisson, 1, 3000);
  w.tenants[0].arrivals.pieces = {{0, 20}, {1000, 0}, {2000, 60}};
  auto rs = Drain(w);
  int n0 = 0, n1 = 0, n2 = 0;
  for (const auto& r : rs) (r.arrival_s < 1000 ? n0 : r.arrival_s < 2000 ? n1 : n2)++;
  EXPECT_NEAR(n0, 20000, 600);
  EXPECT_EQ(n1, 0);
  EXPECT_NEAR(n2, 60000, 1000);
  EXPECT_NEAR(Measure(Gaps(rs, 2000, 3000)).cv, 1.0, 0.03);
}

TEST(ArrivalTest, TrafficChangeMultipliesFromAtS) {
  auto w = RateSpec(20, ArrivalSpec::Kind::kGamma, 1.5, 2000);
  w.traffic_changes.push_back({1000, "t", 3});
  auto rs = Drain(w);
  int n0 = 0, n1 = 0;
  for (const auto& r : rs) (r.arrival_s < 1000 ? n0 : n1)++;
  EXPECT_NEAR(n0, 20000, 1000);
  EXPECT_NEAR(n1, 60000, 2500);
  // A later change replaces the multiplier (relative to the configured rate).
  w.traffic_changes.push_back({1500, "t", 1});
  rs = Drain(w);
  int n2 = 0;
  for (const auto& r : rs) n2 += r.arrival_s >= 1500;
  EXPECT_NEAR(n2, 10000, 800);
}

TEST(ArrivalTest, AddingATenantDoesNotPerturbOthers) {
  auto w = AppSpec();
  auto a = Drain(w);
  w.tenants.insert(w.tenants.begin(), Tenant("zeta", 5));
  auto b = Drain(w);
  std::vector<double> ta, tb;
  for (const auto& r : a) ta.push_back(r.arrival_s);
  for (const auto& r : b) {
    if (r.tenant == 1) tb.push_back(r.arrival_s);
  }
  EXPECT_EQ(ta, tb);
  // Changing the template does not move arrivals either.
  w = AppSpec();
  w.template_switches.push_back({10, "", "app", "v2"});
  auto c = Drain(w);
  ASSERT_EQ(a.size(), c.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].arrival_s, c[i].arrival_s);
}

TEST(RequestSourceTest, Labels) {
  auto w = AppSpec();
  auto src = RequestSource::Create(w);
  ASSERT_TRUE(src.ok());
  EXPECT_THAT((*src)->template_labels(), testing::ElementsAre("app@v1", "app@v2", "app@v3"));
  EXPECT_THAT((*src)->tenant_names(), testing::ElementsAre("acme"));
}

TEST(RequestSourceTest, ValidationErrors) {
  auto w = AppSpec();
  w.tenants[0].template_version = "v9";
  auto s = RequestSource::Create(w);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "tenants[0].version: template \"app\" has no version \"v9\"");
  w = AppSpec();
  w.tenants[0].arrivals.rate_rps = 0;
  EXPECT_FALSE(RequestSource::Create(w).ok());
  w = AppSpec();
  w.template_switches.push_back({1, "nobody", "app", "v2"});
  s = RequestSource::Create(w);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "template_switches[0].tenant: unknown tenant \"nobody\"");
}

}  // namespace
}  // namespace ttft
