// Integration tests of `ttft lint`: the real binary on the real Llama 3.1 template, on the
// seed incident's template (a timestamp ahead of a 5,000-token static prefix) and its fix,
// SARIF checked structurally, GitHub annotations, and corpus mode on a generated corpus
// against the analytic hit rate.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_ttft.h"
#include "ttft/tokenizer.h"

namespace ttft {
namespace {

namespace fs = std::filesystem;
using testing::RunTtft;

class LintTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ttft_lint_it_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  // The seed incident's static prefix: a policy text of about 5,000 tokens.
  static std::string StaticPolicy() {
    std::string s = "You are the ACME support assistant. Follow the policy below.\n";
    for (int i = 0; i < 2500; ++i) s += (i % 40 == 39) ? "rule policy\n" : "rule policy ";
    return s;
  }
  fs::path dir_;
};

const char* kVarsIncident = R"(
messages:
  class: per_request
  sample:
    - {role: user, content: "Where is my parcel?"}
request_time: {class: per_request, sample: "2026-12-03T13:45:07Z"}
)";

TEST_F(LintTest, Llama31TodayDateFails) {
  const fs::path t =
      fs::path(TTFT_SHARED_DATA_DIR) / "chat-templates" / "tool_chat_template_llama3.1_json.jinja";
  if (!fs::exists(t)) GTEST_SKIP() << t << " is absent";
  const std::string vars = Write("vars.yaml", R"(
bos_token: {class: static, sample: "<|begin_of_text|>"}
messages:
  class: per_request
  sample:
    - {role: system, content: "You are a helpful assistant."}
    - {role: user, content: "Hi"}
messages[0].content: static
date_string: {class: per_request, sample: "03 Dec 2026"}
tools: {class: static, sample: null}
)");
  auto r = RunTtft("lint " + t.string() + " --vars " + vars + " --format json");
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["result"], "fail");
  EXPECT_EQ(j["first_non_static"]["source"], "date_string");
  EXPECT_EQ(j["first_non_static"]["class"], "per_request");
  // "Today Date: " + date_string is on line 42 of the template.
  EXPECT_EQ(j["first_non_static"]["line"], 42);
  EXPECT_LT(j["cacheable_prefix_tokens"].get<int>(), 64);
  EXPECT_EQ(j["findings"][0]["rule"], "TTFT-L001");

  // Without a date_string the template calls strftime_now(): the clock is the offender.
  const std::string vars2 = Write("vars2.yaml", R"(
bos_token: {class: static, sample: "<|begin_of_text|>"}
messages: {class: static, sample: [{role: user, content: "Hi"}]}
)");
  auto r2 = RunTtft("lint " + t.string() + " --vars " + vars2 + " --format json");
  ASSERT_EQ(r2.exit_code, 1) << r2.err;
  auto j2 = nlohmann::json::parse(r2.out);
  EXPECT_EQ(j2["first_non_static"]["source"], "strftime_now()");
  bool clock_warning = false;
  for (const auto& f : j2["findings"]) clock_warning |= f["rule"] == "TTFT-L003";
  EXPECT_TRUE(clock_warning);
}

TEST_F(LintTest, SeedIncidentTimestampAheadOfStaticPrefixFailsAndTheFixPasses) {
  const std::string policy = StaticPolicy();
  const std::string broken = Write(
      "broken.jinja", "<|begin_of_text|>Request time: {{ request_time }}\n" + policy +
                          "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}");
  const std::string fixed = Write(
      "fixed.jinja", "<|begin_of_text|>" + policy +
                         "Request time: {{ request_time }}\n{% for m in messages %}<|{{ m.role "
                         "}}|>{{ m.content }}{% endfor %}");
  const std::string vars = Write("vars.yaml", kVarsIncident);

  auto rb = RunTtft("lint " + broken + " --vars " + vars + " --format json");
  ASSERT_EQ(rb.exit_code, 1) << rb.err << rb.out;
  auto jb = nlohmann::json::parse(rb.out);
  EXPECT_EQ(jb["first_non_static"]["source"], "request_time");
  EXPECT_EQ(jb["first_non_static"]["line"], 1);
  EXPECT_EQ(jb["first_non_static"]["column"], 35);
  EXPECT_LT(jb["cacheable_prefix_tokens"].get<int>(), 16);

  auto rf = RunTtft("lint " + fixed + " --vars " + vars + " --format json");
  ASSERT_EQ(rf.exit_code, 0) << rf.err << rf.out;
  auto jf = nlohmann::json::parse(rf.out);
  EXPECT_EQ(jf["result"], "pass");
  const int tokens = jf["cacheable_prefix_tokens"];
  // The prefix is the BOS text plus the policy: count it with the same approximation.
  const int64_t expected =
      *Tokenizer::Approximate().Count("<|begin_of_text|>" + policy + "Request time: ");
  EXPECT_NEAR(tokens, expected, 2);
  EXPECT_NEAR(tokens, 5000, 100);
  EXPECT_EQ(jf["cacheable_prefix_blocks"], tokens / 16);
  EXPECT_EQ(jf["first_non_static"]["source"], "request_time");

  // Tightening --first-tokens past the prefix makes the fixed template fail too.
  auto rt = RunTtft("lint " + fixed + " --vars " + vars + " --first-tokens 6000");
  EXPECT_EQ(rt.exit_code, 1) << rt.out;
}

TEST_F(LintTest, SarifIsStructurallyValid) {
  const std::string t = Write("t.jinja",
                              "Now: {{ strftime_now('%H:%M') }} {{ user_name }}\n"
                              "{{ messages[0].content }}");
  const std::string vars = Write("vars.yaml",
                                 "user_name: per_user\nmessages:\n  class: per_request\n"
                                 "  sample: [{role: user, content: hi}]\n");
  auto r = RunTtft("lint " + t + " --vars " + vars + " --format sarif");
  ASSERT_EQ(r.exit_code, 1) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version"], "2.1.0");
  EXPECT_TRUE(j["$schema"].is_string());
  ASSERT_EQ(j["runs"].size(), 1u);
  const auto& driver = j["runs"][0]["tool"]["driver"];
  EXPECT_FALSE(driver["name"].get<std::string>().empty());
  std::set<std::string> rule_ids;
  for (const auto& rule : driver["rules"]) {
    rule_ids.insert(rule["id"].get<std::string>());
    for (const char* f : {"shortDescription", "fullDescription", "help"}) {
      EXPECT_FALSE(rule[f]["text"].get<std::string>().empty()) << rule["id"] << " " << f;
    }
  }
  const auto& results = j["runs"][0]["results"];
  ASSERT_GE(results.size(), 2u);
  for (const auto& res : results) {
    EXPECT_TRUE(rule_ids.count(res["ruleId"].get<std::string>()));
    EXPECT_EQ(driver["rules"][res["ruleIndex"].get<int>()]["id"], res["ruleId"]);
    EXPECT_TRUE(res["level"] == "error" || res["level"] == "warning" || res["level"] == "note");
    EXPECT_FALSE(res["message"]["text"].get<std::string>().empty());
    const auto& loc = res["locations"][0]["physicalLocation"];
    EXPECT_EQ(loc["artifactLocation"]["uri"], t);
    EXPECT_GE(loc["region"]["startLine"].get<int>(), 1);
    EXPECT_GE(loc["region"]["startColumn"].get<int>(), 1);
  }
  EXPECT_EQ(results[0]["ruleId"], "TTFT-L001");
  EXPECT_EQ(results[0]["locations"][0]["physicalLocation"]["region"]["startLine"], 1);

  auto g = RunTtft("lint " + t + " --vars " + vars + " --format github");
  EXPECT_EQ(g.exit_code, 1);
  EXPECT_EQ(g.out.rfind("::error file=" + t + ",line=1,col=", 0), 0u) << g.out;
}

TEST_F(LintTest, BadInputIsExit2WithFileLineColumn) {
  const std::string vars = Write("vars.yaml", "messages: per_request\n");
  const std::string bad =
      Write("bad.jinja", "ok\n{% for m in messages %}\n{{ m.content | bogus }}");
  auto r = RunTtft("lint " + bad + " --vars " + vars);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.jinja:3:16: unsupported filter 'bogus'"), std::string::npos) << r.err;

  const std::string t = Write("t.jinja", "{{ bos_token }}{{ messages[0].content }}");
  auto u = RunTtft("lint " + t + " --vars " + vars);
  EXPECT_EQ(u.exit_code, 2);
  EXPECT_NE(u.err.find("'bos_token' is undefined"), std::string::npos) << u.err;

  const std::string unknown = Write("unknown.yaml", "messages: per_request\nbos_tokn: static\n");
  auto k = RunTtft("lint " + t + " --vars " + unknown);
  EXPECT_EQ(k.exit_code, 2);
  EXPECT_NE(k.err.find("unknown.yaml:2: 'bos_tokn': the template never reads"), std::string::npos)
      << k.err;

  const std::string corpus =
      Write("c.jsonl", "{\"prompt\": \"fine\"}\n{\"prompt\": \"bad \xC3\x28\"}\n");
  auto c = RunTtft("lint --corpus " + corpus);
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("c.jsonl:2: invalid UTF-8"), std::string::npos) << c.err;

  const std::string tok = Write("tok.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": 3}}");
  auto tk = RunTtft("lint " + t + " --vars " + vars + " --tokenizer " + tok);
  EXPECT_EQ(tk.exit_code, 2);
  EXPECT_NE(tk.err.find("tok.json"), std::string::npos) << tk.err;
}

TEST_F(LintTest, CorpusHitRateMatchesTheAnalyticValue) {
  // 1,000 prompts sharing a 2,000-token prefix, each with its own suffix. With the
  // approximation, " word" is one token, so the prefix is 2,000 tokens = 125 blocks.
  std::string prefix;
  for (int i = 0; i < 2000; ++i) prefix += " rule";
  const Tokenizer approx = Tokenizer::Approximate();
  ASSERT_EQ(*approx.Count(prefix), 2000);
  std::string jsonl;
  int64_t total = 0, expected_hits = 0, expected_small_hits = 0;
  for (int i = 0; i < 1000; ++i) {
    // The suffix starts with the prompt's own id, so no two prompts share a block past
    // the prefix.
    std::string p = prefix + " id" + std::to_string(i);
    const int extra = 10 + (i * 37) % 300;
    for (int k = 0; k < extra; ++k)
      p += " q" + std::string(1, static_cast<char>('a' + (i + k) % 26));
    const int64_t n = *approx.Count(p);
    total += n;
    if (i > 0) {
      expected_hits += std::min<int64_t>(2000, (n - 1) / 16 * 16);
      // A 100-block LRU cache keeps the head of the previous prompt (a prompt's last
      // blocks are evicted first): 100 blocks hit.
      expected_small_hits += std::min<int64_t>(1600, (n - 1) / 16 * 16);
    }
    jsonl += nlohmann::json({{"prompt", p}}).dump() + "\n";
  }
  const std::string corpus = Write("corpus.jsonl", jsonl);
  auto r = RunTtft("lint --corpus " + corpus + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const double analytic = static_cast<double>(expected_hits) / static_cast<double>(total);
  EXPECT_EQ(j["prompt_tokens"], total);
  EXPECT_NEAR(j["hit_rate"].get<double>(), analytic, 0.01) << "analytic " << analytic;
  ASSERT_FALSE(j["splits"].empty());
  EXPECT_EQ(j["splits"][0]["shared_tokens"], 2000);
  EXPECT_EQ(j["splits"][0]["prompts"], 1000);

  // A cache of 100 blocks cannot hold the 125-block prefix.
  auto small = RunTtft("lint --corpus " + corpus +
                       " --format json --cache-blocks 100 "
                       "--min-hit-rate 0.8");
  ASSERT_EQ(small.exit_code, 1) << small.err;
  auto js = nlohmann::json::parse(small.out);
  EXPECT_NEAR(js["hit_rate"].get<double>(),
              static_cast<double>(expected_small_hits) / static_cast<double>(total), 0.01);
  EXPECT_GT(js["evicted_blocks"].get<int64_t>(), 0);
  EXPECT_EQ(js["findings"][0]["rule"], "TTFT-L005");

  // Chat messages rendered with a template.
  const std::string tmpl = Write("chatml.jinja",
                                 "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content "
                                 "}}<|im_end|>\n{% endfor %}<|im_start|>assistant\n");
  const std::string chat = Write(
      "chat.jsonl",
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "a"}]}
{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "b"}]}
)");
  auto rc = RunTtft("lint --corpus " + chat + " --template " + tmpl + " --format json");
  ASSERT_EQ(rc.exit_code, 0) << rc.err;
  EXPECT_EQ(nlohmann::json::parse(rc.out)["prompts"], 2);
  auto no_tmpl = RunTtft("lint --corpus " + chat);
  EXPECT_EQ(no_tmpl.exit_code, 2);
  EXPECT_NE(no_tmpl.err.find("chat.jsonl:1: chat messages need --template"), std::string::npos);
}

}  // namespace
}  // namespace ttft
