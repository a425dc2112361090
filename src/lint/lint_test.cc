#include "ttft/lint.h"

#include <gtest/gtest.h>

#include <string>

#include "lint/internal.h"

namespace ttft {
namespace {

std::vector<int32_t> Seq(int from, int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = from + i;
  return v;
}
std::vector<int32_t> Cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(PrefixCacheTest, HitsWholeBlocksOfTheSharedPrefix) {
  PrefixCacheOptions o;
  o.block_size = 4;
  // 10 shared tokens = 2 full blocks, then different suffixes.
  const auto shared = Seq(0, 10);
  auto p = PredictPrefixCache({Cat(shared, Seq(100, 5)), Cat(shared, Seq(200, 7))}, o);
  EXPECT_EQ(p.prompts, 2);
  EXPECT_EQ(p.prompt_tokens, 15 + 17);
  ASSERT_EQ(p.cached_tokens.size(), 2u);
  EXPECT_EQ(p.cached_tokens[0], 0);
  EXPECT_EQ(p.cached_tokens[1], 8);
  EXPECT_DOUBLE_EQ(p.hit_rate(), 8.0 / 32.0);
}

TEST(PrefixCacheTest, AnIdenticalPromptRecomputesItsLastToken) {
  PrefixCacheOptions o;
  o.block_size = 4;
  auto p = PredictPrefixCache({Seq(0, 8), Seq(0, 8)}, o);
  // vLLM caps the hit at num_tokens - 1: 7 tokens -> one full block.
  EXPECT_EQ(p.cached_tokens[1], 4);
}

TEST(PrefixCacheTest, HashesAreChainedFromTheFirstBlock) {
  PrefixCacheOptions o;
  o.block_size = 4;
  // Same second block after a different first block: no hit.
  auto p = PredictPrefixCache({Cat(Seq(0, 4), Seq(50, 5)), Cat(Seq(10, 4), Seq(50, 5))}, o);
  EXPECT_EQ(p.cached_tokens[1], 0);
}

TEST(PrefixCacheTest, LruEvictsTheLeastRecentlyUsedAndATailFirst) {
  PrefixCacheOptions o;
  o.block_size = 2;
  o.capacity_blocks = 3;
  const auto a = Seq(0, 9);    // 4 blocks: the capacity keeps its first 3
  const auto b = Seq(100, 5);  // 2 blocks
  auto p = PredictPrefixCache({a, b, a, b}, o);
  // a: 0 hits, its last block evicted at once. b: evicts two more of a's (tail first),
  // a's first block survives. a again: 1 block hit. b again: b's blocks were evicted by
  // a's second pass (a's 4 blocks need the room): 0 hits.
  EXPECT_EQ(p.cached_tokens[0], 0);
  EXPECT_EQ(p.cached_tokens[1], 0);
  EXPECT_EQ(p.cached_tokens[2], 2);
  EXPECT_EQ(p.cached_tokens[3], 0);
  EXPECT_LE(p.peak_cached_blocks, 3);
  EXPECT_GT(p.evicted_blocks, 0);
  // Unbounded, the repeats hit all but their last token's block.
  o.capacity_blocks = -1;
  auto u = PredictPrefixCache({a, b, a, b}, o);
  EXPECT_EQ(u.cached_tokens[2], 8);
  EXPECT_EQ(u.cached_tokens[3], 4);
}

TEST(PrefixCacheTest, DivergencesFindTheBranchingPrefix) {
  const auto shared = Seq(0, 32);
  std::vector<std::vector<int32_t>> ps;
  for (int i = 0; i < 5; ++i) ps.push_back(Cat(shared, Seq(1000 + 100 * (i % 2), 16)));
  auto d = FindDivergences(ps, 16, 3);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].shared_tokens, 32);
  EXPECT_EQ(d[0].prompts, 5);
  EXPECT_EQ(d[0].branches, 2);
  ASSERT_EQ(d[0].top_branches.size(), 2u);
  EXPECT_EQ(d[0].top_branches[0].second, 3);  // prompts 0, 2, 4
  EXPECT_EQ(d[0].top_branches[0].first, 0);
  EXPECT_EQ(d[0].top_branches[1].second, 2);
}

TEST(VarsFileTest, ParsesClassesSamplesAndPaths) {
  auto v = ParseVarsFile(R"(
messages:
  class: per_request
  sample: [{role: user, content: "hi"}]
messages[0].content: per_user
user_name: per_user
n: {class: static, sample: 3}
s: {class: static, sample: "3"}
)",
                         "v.yaml");
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_EQ(v->vars.size(), 5u);
  EXPECT_EQ(v->vars[0].cls, VarClass::kPerRequest);
  EXPECT_TRUE(v->vars[0].sample->is_list());
  EXPECT_EQ(v->vars[1].path, "messages[0].content");
  EXPECT_FALSE(v->vars[2].sample.has_value());
  EXPECT_EQ(v->vars[3].sample->kind(), Value::Kind::kInt);
  EXPECT_TRUE(v->vars[4].sample->is_string());  // quoted stays a string
  EXPECT_EQ(v->vars[4].line, 8);
}

TEST(VarsFileTest, ErrorsNameFileLineAndKey) {
  EXPECT_EQ(ParseVarsFile("a: per_second\n", "v.yaml").status().message(),
            "v.yaml:1: a: unknown class 'per_second' (static, per_tenant, per_user, per_request)");
  EXPECT_EQ(ParseVarsFile("a: static\nb: {clas: static}\n", "v.yaml").status().message(),
            "v.yaml:2: b: unknown field 'clas' (expected class, sample)");
  EXPECT_EQ(ParseVarsFile("a[x]: static\n", "v.yaml").status().message(),
            "v.yaml:1: a[x]: 'a[x]': expected [index] or ['key']");
  EXPECT_EQ(ParseVarsFile("a: static\na: static\n", "v.yaml").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseVarsFile("a: [unclosed\n", "v.yaml").ok());
  // Inside a sample too (the vars fuzzer found an error naming neither file nor line).
  EXPECT_EQ(ParseVarsFile("a: static\nt:\n  class: static\n  sample: {f: {[1]: 2}}\n", "v.yaml")
                .status()
                .message(),
            "v.yaml:4: t.sample.f: map keys must be strings");
  EXPECT_EQ(ParseVarsFile("m[99999999999999999999].content: static\n", "v.yaml").status().message(),
            "v.yaml:1: m[99999999999999999999].content: 'm[99999999999999999999].content': index "
            "beyond 2^63");  // was an uncaught std::out_of_range: "internal error: stoll"
  // yaml-cpp stops deep nesting with the message "bad file" (at the column its scanner
  // reached): say what it is.
  const std::string deep =
      ParseVarsFile("q: " + std::string(1000, '[') + std::string(1000, ']') + "\n", "v.yaml")
          .status()
          .message();
  EXPECT_EQ(deep.rfind("v.yaml:1:", 0), 0u) << deep;
  EXPECT_TRUE(deep.ends_with(": nested deeper than 500 levels")) << deep;
}

TEST(CorpusTest, ReaderNamesFileAndLine) {
  auto ok = ReadCorpus("{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n", "c.jsonl", nullptr, nullptr);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->prompts.size(), 2u);
  EXPECT_EQ(ok->lines[1], 2);
  EXPECT_EQ(ReadCorpus("{\"prompt\": \"a\"}\n\n{\"prompt\": 1}", "c.jsonl", nullptr, nullptr)
                .status()
                .message()
                .rfind("c.jsonl:2: empty line", 0),
            0u);
  EXPECT_EQ(ReadCorpus("{\"prompt\": 1}", "c.jsonl", nullptr, nullptr).status().message(),
            "c.jsonl:1: prompt: expected a string");
  EXPECT_EQ(
      ReadCorpus("{\"prompt\": \"x\", \"id\": 1}", "c.jsonl", nullptr, nullptr).status().message(),
      "c.jsonl:1: unknown field 'id' (expected prompt or messages)");
  EXPECT_EQ(
      ReadCorpus("{\"prompt\": \"\xE2\x82\"}", "c.jsonl", nullptr, nullptr).status().message(),
      "c.jsonl:1: invalid UTF-8 at byte 13 of the line");
  EXPECT_EQ(ReadCorpus("{\"prompt\": " + std::string(200, '[') + "}", "c.jsonl", nullptr, nullptr)
                .status()
                .message(),
            "c.jsonl:1: JSON nested deeper than 128");
  EXPECT_EQ(lint::FirstInvalidUtf8("ok \xED\xA0\x80"), 3);  // a surrogate
  EXPECT_EQ(lint::FirstInvalidUtf8("ok é 🚀"), -1);
}

TEST(TemplateLintTest, FindsTheFirstNonStaticSourceAndCountsBlocks) {
  std::string prefix;
  for (int i = 0; i < 100; ++i) prefix += " word";
  auto t = Template::Parse("SYS" + prefix + "\nUser {{ user_name }}: {{ messages[0].content }}",
                           "t.jinja");
  ASSERT_TRUE(t.ok());
  auto vars = ParseVarsFile(R"(
user_name: per_user
messages: {class: per_request, sample: [{role: user, content: hello}]}
)",
                            "v.yaml");
  ASSERT_TRUE(vars.ok());
  LintOptions o;
  o.first_tokens = 50;
  auto r = LintTemplate(*t, "", *vars, Tokenizer::Approximate(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->violation());  // 100+ static tokens before the first variable
  EXPECT_EQ(r->offender, "user_name");
  EXPECT_EQ(r->offender_class, "per_user");
  EXPECT_EQ(r->offender_pos.line, 2);
  EXPECT_EQ(r->offender_pos.column, 9);
  EXPECT_EQ(r->cacheable_prefix_tokens, 103);  // "SYS", 100 words, "\n", "User"
  EXPECT_EQ(r->cacheable_prefix_blocks, 103 / 16);
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes[0].find("32-byte placeholder"), std::string::npos);
  o.first_tokens = 1024;
  auto r2 = LintTemplate(*t, "", *vars, Tokenizer::Approximate(), o);
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(r2->violation());
  EXPECT_EQ(r2->findings[0].rule_id, "TTFT-L001");
}

TEST(TemplateLintTest, AStaticPathInsideANonStaticVariableIsStatic) {
  auto t =
      Template::Parse("{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}", "t");
  ASSERT_TRUE(t.ok());
  auto vars = ParseVarsFile(R"(
messages:
  class: per_request
  sample: [{role: system, content: "Fixed system prompt."}, {role: user, content: "hi"}]
messages[0].content: static
)",
                            "v.yaml");
  ASSERT_TRUE(vars.ok());
  auto r = LintTemplate(*t, "", *vars, Tokenizer::Approximate(), {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  // "<system>Fixed system prompt.\n<user>" is static; the user's content is not.
  EXPECT_EQ(r->first_non_static_byte, 35);
  EXPECT_EQ(r->offender, "messages");
  // Declared per_user instead, the system content is the first offender.
  auto vars2 = ParseVarsFile(R"(
messages:
  class: static
  sample: [{role: system, content: "Fixed system prompt."}, {role: user, content: "hi"}]
messages[0].content: per_user
)",
                             "v.yaml");
  auto r2 = LintTemplate(*t, "", *vars2, Tokenizer::Approximate(), {});
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  EXPECT_EQ(r2->first_non_static_byte, 8);
  EXPECT_EQ(r2->offender, "messages[0].content");
  EXPECT_EQ(r2->offender_class, "per_user");
}

TEST(TemplateLintTest, ControlFlowOnAVariableIsCaughtByTheSecondRender) {
  auto t = Template::Parse("{% if n > 3 %}big{% else %}small{% endif %} static tail", "t");
  ASSERT_TRUE(t.ok());
  auto vars = ParseVarsFile("n: {class: per_request, sample: 3}\n", "v.yaml");
  auto r = LintTemplate(*t, "", *vars, Tokenizer::Approximate(), {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->first_non_static_byte, 0);
  EXPECT_EQ(r->offender, "(control flow)");
  EXPECT_TRUE(r->violation());
}

TEST(TemplateLintTest, VolatileLiteralsAndUnorderedDicts) {
  const std::string src =
      "Build 2024-05-01 id 123e4567-e89b-12d3-a456-426614174000\n{{ tools | tojson }}";
  auto t = Template::Parse(src, "t");
  ASSERT_TRUE(t.ok());
  auto vars = ParseVarsFile("tools: {class: per_request, sample: [{name: a, b: 1}]}\n", "v.yaml");
  auto r = LintTemplate(*t, src, *vars, Tokenizer::Approximate(), {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  int volatile_literals = 0, dicts = 0;
  for (const Finding& f : r->findings) {
    volatile_literals += f.rule_id == "TTFT-L002";
    if (f.rule_id == "TTFT-L004") {
      ++dicts;
      EXPECT_EQ(f.pos.line, 2);
    }
  }
  EXPECT_EQ(volatile_literals, 2);  // the date and the UUID
  EXPECT_EQ(dicts, 1);
}

TEST(TemplateLintTest, VarsMustMatchTheTemplate) {
  auto t = Template::Parse("{{ a }}{{ b }}", "t");
  auto unknown = ParseVarsFile("a: static\nb: static\nc: per_user\n", "v.yaml");
  EXPECT_EQ(LintTemplate(*t, "", *unknown, Tokenizer::Approximate(), {}).status().message(),
            "v.yaml:3: 'c': the template never reads variable 'c' (a misspelling?)");
  auto missing = ParseVarsFile("a: static\n", "v.yaml");
  EXPECT_EQ(LintTemplate(*t, "", *missing, Tokenizer::Approximate(), {}).status().message(),
            "t:1:11: 'b' is undefined (declare it in v.yaml)");
  auto bad_path =
      ParseVarsFile("a: {class: static, sample: [1]}\na[3]: per_user\nb: static\n", "v.yaml");
  EXPECT_EQ(LintTemplate(*t, "", *bad_path, Tokenizer::Approximate(), {}).status().message(),
            "v.yaml:2: a[3]: no element [3] in the sample");
}

}  // namespace
}  // namespace ttft
