// Tests for scenario parsing: the documented example round trip, and one test per
// error class asserting the exact file:line: field in the message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ttft/fleet.h"
#include "ttft/scenario.h"

namespace ttft {
namespace {

namespace fs = std::filesystem;

// The complete example in docs/scenarios.md, between the example markers.
std::string DocumentedExample() {
  std::ifstream in(std::string(TTFT_SOURCE_DIR) + "/docs/scenarios.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t begin = doc.find("<!-- example:begin -->\n```yaml\n");
  const size_t end = doc.find("```\n<!-- example:end -->");
  if (begin == std::string::npos || end == std::string::npos) return "";
  const size_t start = begin + std::string("<!-- example:begin -->\n```yaml\n").size();
  return doc.substr(start, end - start);
}

TEST(ScenarioTest, DocumentedExampleRoundTrip) {
  const std::string text = DocumentedExample();
  ASSERT_FALSE(text.empty()) << "example markers not found in docs/scenarios.md";
  auto sc = ParseScenario(text, "example.yaml", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  EXPECT_EQ(sc->name, "seed-drill");
  EXPECT_EQ(sc->source_path, "example.yaml");
  EXPECT_THAT(sc->description, testing::HasSubstr("least-outstanding"));
  EXPECT_EQ(sc->workload.seed, 7u);
  EXPECT_EQ(sc->duration_s, 1800);
  EXPECT_EQ(sc->workload.duration_s, 1800);
  EXPECT_EQ(sc->drain_limit_s, 600);
  EXPECT_EQ(sc->scrape_interval_s, 10);
  EXPECT_EQ(sc->model_label, "llama-3.3-70b-fp8");
  EXPECT_EQ(sc->router.kind, RouterSpec::Kind::kLeastOutstanding);

  ASSERT_EQ(sc->replicas.size(), 3u);
  EXPECT_EQ(sc->replicas[0].name, "rag-0");
  EXPECT_EQ(sc->replicas[1].name, "rag-1");
  EXPECT_EQ(sc->replicas[2].name, "batch");
  EXPECT_EQ(sc->replicas[0].region, "us-east");
  EXPECT_EQ(sc->replicas[0].pool, "rag");
  EXPECT_EQ(sc->replicas[2].region, "us-west");
  const EngineConfig& e = sc->replicas[0].engine;
  EXPECT_EQ(e.hardware.model.name, "llama-3.3-70b");
  EXPECT_EQ(e.hardware.gpu.name, "h100-sxm");
  EXPECT_EQ(e.hardware.tp, 2);
  EXPECT_EQ(e.hardware.weight_dtype, Dtype::kFp8);
  EXPECT_EQ(e.hardware.kv_dtype, Dtype::kFp8);
  EXPECT_EQ(e.block_size, 16);
  EXPECT_EQ(e.max_num_batched_tokens, 8192);
  EXPECT_EQ(e.max_num_seqs, 256);
  EXPECT_EQ(e.max_model_len, 16384);
  EXPECT_TRUE(e.enable_chunked_prefill);
  EXPECT_EQ(e.deploy, "v1");
  EXPECT_DOUBLE_EQ(e.cost.step_overhead_s, 0.0003);
  EXPECT_EQ(sc->replicas[2].engine.max_num_seqs, 64);  // the entry overrides defaults
  EXPECT_EQ(sc->workload.block_size, 16);

  ASSERT_EQ(sc->workload.templates.size(), 1u);
  const auto& t = sc->workload.templates[0];
  ASSERT_EQ(t.versions.size(), 2u);
  ASSERT_EQ(t.versions[0].segments.size(), 4u);
  EXPECT_EQ(t.versions[0].segments[0].kind, SegmentKind::kStatic);
  EXPECT_EQ(t.versions[0].segments[0].tokens.value, 5000);
  EXPECT_EQ(t.versions[0].segments[1].kind, SegmentKind::kPerUser);
  const auto& q = t.versions[0].segments[3].tokens;
  EXPECT_EQ(q.kind, Distribution::Kind::kLognormal);
  EXPECT_EQ(q.mean, 900);
  EXPECT_EQ(q.cv, 0.6);
  EXPECT_EQ(q.clamp_min, 16);
  EXPECT_EQ(q.clamp_max, 8000);
  EXPECT_EQ(t.versions[1].segments[0].name, "timestamp");

  ASSERT_EQ(sc->workload.tenants.size(), 2u);
  const auto& acme = sc->workload.tenants[0];
  EXPECT_EQ(acme.arrivals.kind, ArrivalSpec::Kind::kGamma);
  EXPECT_EQ(acme.arrivals.cv, 2);
  EXPECT_EQ(acme.arrivals.rate_rps, 1.5);
  EXPECT_EQ(acme.output_tokens.kind, Distribution::Kind::kUniform);
  EXPECT_EQ(acme.users, 5000);
  EXPECT_EQ(acme.pool, "rag");
  const auto& globex = sc->workload.tenants[1];
  EXPECT_EQ(globex.template_version, "v1");
  ASSERT_EQ(globex.arrivals.pieces.size(), 2u);
  EXPECT_EQ(globex.arrivals.pieces[1].from_s, 600);
  EXPECT_EQ(globex.arrivals.pieces[1].rate_rps, 1.0);
  EXPECT_EQ(globex.output_tokens.weights, (std::vector<double>{5, 3, 1}));
  EXPECT_EQ(globex.cache_salt, "globex");

  // Events sorted by at_s; deploy_template and tenant_traffic also feed the workload.
  ASSERT_EQ(sc->events.size(), 6u);
  EXPECT_EQ(sc->events[0].kind, EventKind::kSlowReplica);
  EXPECT_EQ(sc->events[0].factor, 1.5);
  EXPECT_EQ(sc->events[1].kind, EventKind::kDeployTemplate);
  EXPECT_EQ(sc->events[1].note, "PR 1234");
  EXPECT_EQ(sc->events[2].kind, EventKind::kDeployConfig);
  EXPECT_TRUE(sc->events[2].engine_set);
  EXPECT_EQ(sc->events[2].replicas, std::vector<std::string>{"rag-0"});
  EXPECT_EQ(sc->events[2].engine.max_num_batched_tokens, 16384);
  EXPECT_FALSE(sc->events[2].engine.enable_chunked_prefill);
  EXPECT_EQ(sc->events[2].engine.deploy, "v2");
  EXPECT_EQ(sc->events[2].engine.max_num_seqs, 256);  // the rest is the replica's own
  EXPECT_EQ(sc->events[2].engine.hardware.tp, 2);
  EXPECT_EQ(sc->events[3].kind, EventKind::kTenantTraffic);
  EXPECT_EQ(sc->events[4].kind, EventKind::kAddReplica);
  EXPECT_EQ(sc->events[4].new_replica.name, "rag-2");
  EXPECT_EQ(sc->events[4].new_replica.engine.hardware.tp, 2);
  EXPECT_EQ(sc->events[5].kind, EventKind::kDrainReplica);
  EXPECT_EQ(sc->events[5].replicas, std::vector<std::string>{"batch"});
  ASSERT_EQ(sc->workload.template_switches.size(), 1u);
  EXPECT_EQ(sc->workload.template_switches[0].version, "v2");
  EXPECT_EQ(sc->workload.template_switches[0].at_s, 900);
  ASSERT_EQ(sc->workload.traffic_changes.size(), 1u);
  EXPECT_EQ(sc->workload.traffic_changes[0].multiplier, 2);

  EXPECT_EQ(sc->analysis.change_at_s, 900);
  EXPECT_EQ(sc->analysis.window_s, 600);
  EXPECT_EQ(sc->analysis.warmup_s, 120);

  // The workload it describes generates requests.
  auto src = RequestSource::Create(sc->workload);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  Request r;
  auto more = (*src)->Next(r);
  ASSERT_TRUE(more.ok() && *more);
}

// A small valid scenario, edited by the error tests. Line numbers matter below.
constexpr const char* kBase = R"(name: t
duration_s: 60
defaults: {model: llama-3.1-8b, gpu: h100-sxm}
replicas:
  - {name: r, count: 2}
templates:
  - name: app
    versions:
      - version: v1
        segments:
          - {name: sys, kind: static, tokens: 100}
tenants:
  - {name: acme, template: app, rate_rps: 1}
)";

std::string ErrorOf(const std::string& text) {
  auto sc = ParseScenario(text, "s.yaml", ".");
  if (sc.ok()) return "(parsed fine)";
  return sc.status().message();
}

// The limits (ttft/workload.h, ttft/fleet.h): each is an error naming the file, the
// field, the value and the limit, before anything runs (issue 14: these ran forever
// or exhausted memory).
TEST(ScenarioTest, ValuesBeyondTheLimitsAreErrorsNamingFileAndField) {
  const std::string base = kBase;
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return ErrorOf(s.replace(at, from.size(), to));
  };
  EXPECT_EQ(edit("duration_s: 60", "duration_s: 1e308"),
            "s.yaml: duration_s: 1e+308 is above the limit of 2.592e+06 s (30 days)");
  EXPECT_THAT(edit("duration_s: 60", "duration_s: 60\nscrape_interval_s: 1e-6"),
              testing::HasSubstr("s.yaml: scrape_interval_s: 1e-06 s gives"));
  EXPECT_EQ(edit("tokens: 100}", "tokens: 2e9}"),
            "s.yaml: templates.app.versions.v1.segments.sys.tokens: 2e+09 is above the limit of "
            "2.09715e+06 tokens");
  EXPECT_THAT(edit("tokens: 100}", "tokens: {dist: lognormal, mean: 1e12, cv: 1}}"),
              testing::HasSubstr("segments.sys.tokens.mean: 1e+12 is above the limit"));
  EXPECT_THAT(edit("rate_rps: 1}", "rate_rps: 1e9}"),
              testing::HasSubstr("s.yaml: tenants[0] (acme).rate_rps (with its traffic changes): "
                                 "1e+09 is above the limit of 100000 requests/s"));
  EXPECT_THAT(edit("rate_rps: 1}", "rate_rps: 1, output_tokens: 3e6}"),
              testing::HasSubstr("tenants[0] (acme).output_tokens: 3e+06 is above the limit"));
  // Each field within its limit, but the run as a whole too large.
  std::string big = base;
  big.replace(big.find("duration_s: 60"), 14, "duration_s: 2000000");
  big.replace(big.find("rate_rps: 1}"), 12, "rate_rps: 90000}");
  EXPECT_THAT(ErrorOf(big),
              testing::HasSubstr("would send about 1.8e+11 requests, above the limit of 5e+07"));
  // At the limits' edge the same scenario parses.
  EXPECT_EQ(edit("duration_s: 60", "duration_s: 2592000"), "(parsed fine)");
  EXPECT_EQ(edit("tokens: 100}", "tokens: 2097152}"), "(parsed fine)");
}

TEST(ScenarioTest, BaseParses) {
  auto sc = ParseScenario(kBase, "s.yaml", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  EXPECT_EQ(sc->model_label, "llama-3.1-8b");
  EXPECT_EQ(sc->workload.tenants[0].output_tokens.value, 256);
  EXPECT_EQ(sc->replicas.size(), 2u);
}

// Tenants with weights share the top-level traffic (rate and pieces) in proportion.
TEST(ScenarioTest, TenantWeightsShareTheTraffic) {
  std::string text = kBase;
  text.replace(text.find("tenants:"), std::string::npos,
               "traffic: {rate_rps: [{from_s: 0, rate_rps: 10}, {from_s: 30, rate_rps: 20}],"
               " arrival: gamma, cv: 2}\n"
               "tenants:\n"
               "  - {name: a, template: app, weight: 3}\n"
               "  - {name: b, template: app, weight: 1, arrival: poisson}\n"
               "  - {name: c, template: app, rate_rps: 4}\n");
  auto sc = ParseScenario(text, "s.yaml", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  const auto& t = sc->workload.tenants;
  ASSERT_EQ(t.size(), 3u);
  ASSERT_EQ(t[0].arrivals.pieces.size(), 2u);
  EXPECT_DOUBLE_EQ(t[0].arrivals.pieces[0].rate_rps, 7.5);
  EXPECT_DOUBLE_EQ(t[0].arrivals.pieces[1].rate_rps, 15);
  EXPECT_DOUBLE_EQ(t[1].arrivals.pieces[1].rate_rps, 5);
  EXPECT_EQ(t[0].arrivals.kind, ArrivalSpec::Kind::kGamma);
  EXPECT_DOUBLE_EQ(t[0].arrivals.cv, 2);
  EXPECT_EQ(t[1].arrivals.kind, ArrivalSpec::Kind::kPoisson);
  EXPECT_DOUBLE_EQ(t[2].arrivals.rate_rps, 4);
  EXPECT_TRUE(t[2].arrivals.pieces.empty());

  std::string no_traffic = kBase;
  no_traffic.replace(no_traffic.find("rate_rps: 1"), 11, "weight: 1");
  EXPECT_THAT(ErrorOf(no_traffic), testing::HasSubstr("s.yaml:13: tenants[0].weight"));
  std::string both = kBase;
  both.replace(both.find("rate_rps: 1"), 11, "rate_rps: 1, weight: 2");
  EXPECT_THAT(ErrorOf(both), testing::HasSubstr("not both"));
}

// An override in one replica entry must not leak into the next one's defaults.
TEST(ScenarioTest, OverridesDoNotLeakBetweenReplicas) {
  auto sc = ParseScenario(
      std::string(kBase).replace(std::string(kBase).find("  - {name: r, count: 2}"), 23,
                                 "  - {name: a, max_num_seqs: 8}\n"
                                 "  - {name: b}"),
      "s.yaml", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  ASSERT_EQ(sc->replicas.size(), 2u);
  EXPECT_EQ(sc->replicas[0].engine.max_num_seqs, 8);
  EXPECT_EQ(sc->replicas[1].engine.max_num_seqs, 256);
}

TEST(ScenarioTest, UnknownKeysWithSuggestion) {
  EXPECT_EQ(ErrorOf(std::string(kBase) + "  - {name: b, template: app, rate_rsp: 1}\n"),
            "s.yaml:14: tenants[1].rate_rsp: unknown key; did you mean \"rate_rps\"?");
  EXPECT_EQ(ErrorOf(std::string(kBase) + "scrape_intervals: 5\n"),
            "s.yaml:14: scrape_intervals: unknown key; did you mean \"scrape_interval_s\"?");
  EXPECT_EQ(ErrorOf(std::string(kBase) + "zzz: 5\n"), "s.yaml:14: zzz: unknown key");
  EXPECT_EQ(ErrorOf(std::string(kBase) + "name: again\n"), "s.yaml:14: name: duplicate key");
}

TEST(ScenarioTest, BadValuesNameLineAndField) {
  std::string s = kBase;
  EXPECT_EQ(ErrorOf(std::string(kBase).replace(s.find("rate_rps: 1"), 11, "rate_rps: -1")),
            "s.yaml:13: tenants[0].rate_rps: must be > 0, got -1");
  EXPECT_EQ(ErrorOf(std::string(kBase).replace(s.find("rate_rps: 1"), 11, "rate_rps: 0")),
            "s.yaml:13: tenants[0].rate_rps: must be > 0, got 0");
  EXPECT_EQ(ErrorOf(std::string(kBase).replace(s.find("duration_s: 60"), 14, "duration_s: 0")),
            "s.yaml:2: duration_s: must be > 0, got 0");
  EXPECT_EQ(ErrorOf(std::string(kBase).replace(s.find("duration_s: 60"), 14, "duration_s: x")),
            "s.yaml:2: duration_s: expected a number, got x");
  EXPECT_EQ(ErrorOf(std::string(kBase).replace(s.find("tokens: 100"), 11,
                                               "tokens: {dist: lognormal, mean: 5}")),
            "s.yaml:11: templates[0].versions[0].segments[0].tokens.cv: missing");
  EXPECT_EQ(ErrorOf(std::string(kBase).replace(s.find("tokens: 100"), 11,
                                               "tokens: {dist: lognorm, mean: 5}")),
            "s.yaml:11: templates[0].versions[0].segments[0].tokens.dist: expected fixed, "
            "uniform, lognormal or empirical; did you mean \"lognormal\"?, got lognorm");
  EXPECT_EQ(ErrorOf(std::string(kBase).replace(s.find("kind: static"), 12, "kind: statik")),
            "s.yaml:11: templates[0].versions[0].segments[0].kind: expected static, per_tenant, "
            "per_user or per_request; did you mean \"static\"?, got statik");
  EXPECT_EQ(ErrorOf(std::string(kBase) + "  - {name: b, template: app, rate_rps: "
                                         "[{from_s: 0, rate_rps: 1}, {from_s: 0, rate_rps: 0}]}\n"),
            "s.yaml:14: tenants[1].rate_rps[1].from_s: must be greater than the previous "
            "piece's, got 0");
  EXPECT_EQ(ErrorOf(std::string(kBase) + "  - {name: b, template: app, rate_rps: "
                                         "[{from_s: 0, rate_rps: 0}, {from_s: 9, rate_rps: 2}]}\n"),
            "(parsed fine)");  // zero is allowed in a piece
}

// inference-perf shared_prefix traffic in YAML (docs/scenarios.md), alone or beside tenants.
TEST(ScenarioTest, SharedPrefixParsesAndGenerates) {
  const std::string text = std::string(kBase) + R"(shared_prefix:
  - tenant: ip
    num_groups: 2
    num_prompts_per_group: 3
    system_prompt_len: 64
    question_len: 32
    output_len: 8
    stages: [{rate_rps: 4, duration_s: 5}, {rate_rps: 8, duration_s: 5}]
    stage_gap_s: 0.5
)";
  auto sc = ParseScenario(text, "s.yaml", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  ASSERT_EQ(sc->workload.shared_prefix.size(), 1u);
  const SharedPrefixSpec& sp = sc->workload.shared_prefix[0];
  EXPECT_EQ(sp.tenant, "ip");
  EXPECT_EQ(sp.num_groups, 2);
  EXPECT_EQ(sp.num_prompts_per_group, 3);
  EXPECT_EQ(sp.system_prompt_len, 64);
  EXPECT_EQ(sp.question_len, 32);
  EXPECT_EQ(sp.output_len, 8);
  ASSERT_EQ(sp.stages.size(), 2u);
  EXPECT_EQ(sp.stages[1].rate_rps, 8);
  EXPECT_EQ(sp.stage_gap_s, 0.5);
  auto src = RequestSource::Create(sc->workload);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_THAT((*src)->tenant_names(), testing::Contains("ip"));
  int64_t from_ip = 0, n = 0;
  Request r;
  for (;;) {
    auto more = (*src)->Next(r);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    ++n;
    if ((*src)->tenant_names()[static_cast<size_t>(r.tenant)] == "ip") ++from_ip;
  }
  EXPECT_EQ(from_ip, 4 * 5 + 8 * 5);  // constant load: exactly rate x duration per stage
  EXPECT_GT(n, from_ip);              // acme's Poisson requests as well
}

TEST(ScenarioTest, SharedPrefixErrorsNameLineAndField) {
  const std::string base = std::string(kBase) + "shared_prefix:\n  - {tenant: ip, stages: ";
  EXPECT_EQ(ErrorOf(base + "[{rate_rps: 0, duration_s: 5}]}\n"),
            "s.yaml:15: shared_prefix[0].stages[0].rate_rps: must be > 0, got 0");
  EXPECT_EQ(ErrorOf(base + "[]}\n"),
            "s.yaml:15: shared_prefix[0].stages: expected a non-empty list, got a list");
  EXPECT_EQ(ErrorOf(base + "[{rate_rps: 1, duration_s: 5}], question_len: 0}\n"),
            "s.yaml:15: shared_prefix[0].question_len: must be 1..1000000, got 0");
  EXPECT_EQ(ErrorOf(base + "[{rate_rps: 1, duration_s: 5}], groups: 2}\n"),
            "s.yaml:15: shared_prefix[0].groups: unknown key");
  EXPECT_EQ(ErrorOf(std::string(kBase) +
                    "shared_prefix:\n  - {tenant: acme, stages: [{rate_rps: 1, duration_s: 1}]}\n"),
            "s.yaml:15: shared_prefix[0].tenant: \"acme\" is already a tenant's name");
  EXPECT_EQ(ErrorOf(base + "[{rate_rps: 1, duration_s: 5}], length_jitter: 1}\n"),
            "s.yaml:15: shared_prefix[0].length_jitter: must be in [0, 1), got 1");
}

TEST(ScenarioTest, TenantTimeout) {
  std::string s = kBase;
  s.replace(s.find("rate_rps: 1}"), 12, "rate_rps: 1, timeout_s: 30}");
  auto sc = ParseScenario(s, "s.yaml", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  EXPECT_EQ(sc->workload.tenants[0].timeout_s, 30);
  std::string bad = kBase;
  bad.replace(bad.find("rate_rps: 1}"), 12, "rate_rps: 1, timeout_s: -2}");
  EXPECT_EQ(ErrorOf(bad), "s.yaml:13: tenants[0].timeout_s: must be >= 0, got -2");
}

// Every cost-model parameter can be set from a scenario, and is range-checked.
TEST(ScenarioTest, AllCostParametersParse) {
  std::string s = kBase;
  s.replace(s.find("gpu: h100-sxm}"), 14,
            "gpu: h100-sxm, cost: {prefill_n_half_tokens: 40, seq_overhead_s: 0.00002, "
            "allreduce_bus_gbps: 200}}");
  auto sc = ParseScenario(s, "s.yaml", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  const CostParams& c = sc->replicas[0].engine.cost;
  EXPECT_EQ(c.prefill_n_half_tokens, 40);
  EXPECT_EQ(c.seq_overhead_s, 0.00002);
  EXPECT_EQ(c.allreduce_bus_gbps, 200);
  std::string bad = kBase;
  bad.replace(bad.find("gpu: h100-sxm}"), 14, "gpu: h100-sxm, cost: {allreduce_bus_gbps: 0}}");
  EXPECT_THAT(ErrorOf(bad),
              testing::HasSubstr("cost.allreduce_bus_gbps: 0 is outside 0.001..1000000"));
}

TEST(ScenarioTest, EngineErrorsPointAtTheSetting) {
  std::string s = kBase;
  EXPECT_EQ(ErrorOf(std::string(kBase).replace(s.find("count: 2}"), 9, "count: 2, tp: 3}")),
            "s.yaml:5: replicas[0].tp: 3 does not divide llama-3.1-8b's 32 attention heads");
  EXPECT_THAT(ErrorOf(std::string(kBase).replace(s.find("llama-3.1-8b"), 12, "llama-9")),
              testing::StartsWith("s.yaml:3: defaults.model: unknown model 'llama-9'"));
  EXPECT_THAT(ErrorOf(std::string(kBase).replace(s.find("h100-sxm"), 8, "h900")),
              testing::StartsWith("s.yaml:3: defaults.gpu: unknown GPU 'h900'"));
  // EngineConfig::Validate: chunked prefill off needs a budget >= max_model_len.
  EXPECT_EQ(ErrorOf(std::string(kBase).replace(
                s.find("count: 2}"), 9,
                "count: 2, enable_chunked_prefill: false,\n     max_num_batched_tokens: 2048}")),
            "s.yaml:6: replicas[0].max_num_batched_tokens: 2048 is smaller than max_model_len "
            "8192; with chunked prefill disabled every prompt must fit one step");
  // KvCapacityBlocks: too little memory for one max_model_len request.
  EXPECT_THAT(
      ErrorOf(std::string(kBase).replace(s.find("count: 2}"), 9, "count: 2, num_gpu_blocks: 10}")),
      testing::StartsWith("s.yaml:5: replicas[0].max_model_len: KV cache holds 10 blocks"));
  EXPECT_EQ(ErrorOf(std::string(kBase) + "events: [{at_s: 1, kind: add_replica, "
                                         "replica: {name: x, block_size: 32}}]\n"),
            "s.yaml:14: events[0].replica.block_size: 32 differs from replicas[0]'s 16; all "
            "replicas must share one block size");
}

TEST(ScenarioTest, EventErrors) {
  const std::string b = kBase;
  EXPECT_EQ(ErrorOf(b + "events:\n  - {at_s: 5, kind: drain_replica, replica: r-7}\n"),
            "s.yaml:15: events[0].replica: unknown replica \"r-7\"; did you mean \"r-0\"?");
  EXPECT_EQ(ErrorOf(b + "events:\n  - {at_s: 5, kind: tenant_traffic, tenant: nobody, "
                        "multiplier: 2}\n"),
            "s.yaml:15: events[0].tenant: unknown tenant \"nobody\"");
  EXPECT_EQ(ErrorOf(b + "events:\n  - {at_s: 5, kind: deploy_template, template: app, "
                        "version: v3}\n"),
            "s.yaml:15: events[0].version: template \"app\" has no version \"v3\"");
  EXPECT_EQ(ErrorOf(b + "events:\n  - {at_s: 5, kind: deploy_templat, template: app}\n"),
            "s.yaml:15: events[0].kind: unknown event kind; did you mean \"deploy_template\"?, "
            "got deploy_templat");
  EXPECT_EQ(ErrorOf(b + "events:\n  - {at_s: 5, kind: deploy_config, tp: 2}\n"),
            "s.yaml:15: events[0].tp: cannot change in deploy_config (it changes KV capacity or "
            "hardware; use add_replica)");
  EXPECT_EQ(ErrorOf(b + "events:\n  - {at_s: 5, kind: drain_replica, replica: x}\n"
                        "  - {at_s: 9, kind: add_replica, replica: {name: x}}\n"),
            "s.yaml:15: events[0].replica: replica \"x\" is added only at 9 s");
  EXPECT_EQ(ErrorOf(b + "events:\n  - {at_s: 5, kind: slow_replica, replica: r-0, factor: 0}\n"),
            "s.yaml:15: events[0].factor: must be > 0, got 0");
}

TEST(ScenarioTest, EventsSortedAndDeployConfigExpanded) {
  auto sc = ParseScenario(std::string(kBase) +
                              "events:\n"
                              "  - {at_s: 30, kind: deploy_config, max_num_seqs: 8}\n"
                              "  - {at_s: 10, kind: deploy_config, replicas: [r], deploy: v2}\n"
                              "  - {at_s: 30, kind: restart_replica, replica: r-1}\n",
                          "s.yaml", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  ASSERT_EQ(sc->events.size(), 5u);
  // The group name "r" targets r-0 and r-1, one event each.
  EXPECT_EQ(sc->events[0].at_s, 10);
  EXPECT_EQ(sc->events[0].replicas, std::vector<std::string>{"r-0"});
  EXPECT_EQ(sc->events[1].replicas, std::vector<std::string>{"r-1"});
  EXPECT_EQ(sc->events[1].engine.deploy, "v2");
  // At 30 s: all replicas; the second deploy_config builds on the first.
  EXPECT_EQ(sc->events[2].engine.max_num_seqs, 8);
  EXPECT_EQ(sc->events[2].engine.deploy, "v2");
  EXPECT_EQ(sc->events[4].kind, EventKind::kRestartReplica);  // stable at equal times
}

TEST(ScenarioTest, MalformedYamlReportsLine) {
  EXPECT_THAT(ErrorOf("name: t\nduration_s: [1, 2\n"),
              testing::StartsWith("s.yaml:3: invalid YAML"));
  EXPECT_THAT(ErrorOf("name: t\n  bad: indent\n"), testing::StartsWith("s.yaml:2: invalid YAML"));
  EXPECT_EQ(ErrorOf(""), "s.yaml:1: (top level): expected a map, got nothing");
  EXPECT_EQ(ErrorOf("- 1\n- 2\n"), "s.yaml:1: (top level): expected a map, got a list");
  EXPECT_EQ(ErrorOf("name: t\nx: " + std::string(200, '[')),
            "s.yaml:2: nested too deeply (more than 64 brackets or 256 columns of indentation)");
  EXPECT_EQ(ErrorOf("name: t\n"), "s.yaml:1: duration_s: missing");
}

TEST(ScenarioTest, TracesResolveRelativeToTheScenarioFile) {
  const fs::path dir =
      fs::temp_directory_path() / ("ttft_scenario_test_" + std::to_string(::getpid()));
  fs::create_directories(dir / "traces");
  std::ofstream(dir / "traces" / "t.jsonl")
      << R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]})"
      << "\n";
  const std::string yaml =
      std::string(kBase) + "traces:\n  - {format: mooncake, path: traces/t.jsonl, tenant: mc}\n";
  std::ofstream(dir / "s.yaml") << yaml;
  auto sc = LoadScenario((dir / "s.yaml").string());
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  ASSERT_EQ(sc->workload.traces.size(), 1u);
  EXPECT_EQ(sc->workload.traces[0].path, (dir / "traces" / "t.jsonl").string());
  auto src = RequestSource::Create(sc->workload);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ((*src)->tenant_names(), (std::vector<std::string>{"acme", "mc"}));

  std::ofstream(dir / "s.yaml") << std::string(kBase) +
                                       "traces:\n  - {format: mooncake, path: nope.jsonl}\n";
  sc = LoadScenario((dir / "s.yaml").string());
  ASSERT_FALSE(sc.ok());
  EXPECT_EQ(sc.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(sc.status().message(), (dir / "s.yaml").string() +
                                       ":15: traces[0].path: no such file \"" +
                                       (dir / "nope.jsonl").string() + "\"");
  fs::remove_all(dir);

  auto missing = LoadScenario((dir / "absent.yaml").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(ScenarioTest, BuiltinScenariosParse) {
  for (const auto& name : BuiltinScenarioNames()) {
    auto sc = BuiltinScenario(name);
    EXPECT_TRUE(sc.ok() || sc.status().code() == StatusCode::kNotFound)
        << name << ": " << sc.status().ToString();
  }
  EXPECT_EQ(BuiltinScenario("no-such-scenario").status().code(), StatusCode::kNotFound);
}

// A canary template switch (docs/scenarios.md, "Canaries"): canary_fraction of the
// tenant's requests after at_s take the new version and are labelled deploy=canary,
// the rest keep the old one and are labelled deploy=baseline; before at_s the
// replica's deploy label stays.
TEST(ScenarioTest, CanaryFractionSplitsAndLabelsRequests) {
  const std::string text = std::string(R"(name: t
duration_s: 400
defaults: {model: llama-3.1-8b, gpu: h100-sxm}
replicas:
  - {name: r, count: 2}
templates:
  - name: app
    versions:
      - version: v1
        segments:
          - {name: sys, kind: static, tokens: 100}
      - version: v2
        segments:
          - {name: sys2, kind: static, tokens: 300}
tenants:
  - {name: acme, template: app, rate_rps: 20}
events:
  - {at_s: 100, kind: deploy_template, template: app, version: v2, canary_fraction: 0.2}
)");
  auto sc = ParseScenario(text, "s.yaml", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  ASSERT_EQ(sc->workload.template_switches.size(), 1u);
  EXPECT_EQ(sc->workload.template_switches[0].canary_fraction, 0.2);

  struct Sink : SimulationSink {
    std::vector<Span> spans;
    Status OnSpan(const Span& s) override {
      spans.push_back(s);
      return Status::Ok();
    }
    Status OnSnapshot(const MetricSnapshot&) override { return Status::Ok(); }
  } sink;
  auto result = Simulate(*sc, sink, {});
  ASSERT_TRUE(result.ok()) << result.status().message();
  int before = 0, canary = 0, baseline = 0;
  for (const Span& s : sink.spans) {
    if (s.arrival_s < 100) {
      ++before;
      EXPECT_EQ(s.template_version, "app@v1");
      EXPECT_NE(s.deploy, "canary");
      EXPECT_NE(s.deploy, "baseline");
    } else if (s.deploy == "canary") {
      ++canary;
      EXPECT_EQ(s.template_version, "app@v2");
      EXPECT_EQ(s.prompt_tokens, 300);
    } else {
      ++baseline;
      EXPECT_EQ(s.deploy, "baseline");
      EXPECT_EQ(s.template_version, "app@v1");
      EXPECT_EQ(s.prompt_tokens, 100);
    }
  }
  EXPECT_GT(before, 1500);
  // ~6,000 requests after the switch, 20% canaries: 1,200 +- 4 sigma (~125).
  const double after = canary + baseline;
  EXPECT_NEAR(canary / after, 0.2, 4 * std::sqrt(0.2 * 0.8 / after));
  EXPECT_GT(after, 5000);

  EXPECT_EQ(ErrorOf(std::string(kBase) +
                    "events:\n  - {at_s: 5, kind: deploy_template, template: app, version: v1, "
                    "canary_fraction: 1.5}\n"),
            "s.yaml:15: events[0].canary_fraction: must be in (0, 1) (omit it for a full "
            "deploy), got 1.5");
}

}  // namespace
}  // namespace ttft
