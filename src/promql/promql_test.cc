// Tests of ttft/promql.h. The grammar's agreement with Prometheus itself is checked
// against promtool in tests/rules_test.cc (RulesPromtool.SelectorCheckAgreesWithPromtool);
// these pin the contract: the flag and the character in every message, the two syntaxes,
// and the trimming.
#include "ttft/promql.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ttft {
namespace {

using ::testing::HasSubstr;

TEST(LabelMatchers, MessagesNameTheFlagTheTextAndTheCharacter) {
  const Status st = CheckLabelMatchers(R"(job="vllm",ns=~"prod-(a|b")", "--selector");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("--selector 'job=\"vllm\",ns=~\"prod-(a|b\"'"));
  EXPECT_THAT(st.message(), HasSubstr("the regex of label 'ns' does not compile"));
  EXPECT_THAT(st.message(), HasSubstr("at character 16"));
  EXPECT_THAT(CheckLabelMatchers("a=\"\xff\"", "--x").message(), HasSubstr("--x: not valid UTF-8"));
  EXPECT_THAT(CheckLabelMatchers("a=\"x\"\nb=\"y\"", "--x").message(), HasSubstr("a line break"));
}

// A value cannot close the braces and append a query: the check stops at the '}'.
TEST(LabelMatchers, AValueCannotCloseTheBracesAndAddAQuery) {
  for (const LabelMatchersSyntax syntax : {LabelMatchersSyntax{}, LabelMatchersSyntax{true}}) {
    for (const char* bad : {R"(a="b"} or up{c="d")", R"(a="b"}[5m])", R"(a="b"} offset 1h)",
                            R"(a="b"},b="c")", R"(a="b"})", "}", R"(a="b" or up)"}) {
      const Status st = CheckLabelMatchers(bad, "--selector", syntax);
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
      EXPECT_THAT(st.message(), HasSubstr("--selector")) << bad;
    }
  }
  EXPECT_THAT(CheckLabelMatchers(R"(a="b"} or up{c="d")", "--selector").message(),
              HasSubstr("expected ',' between matchers at character 6"));
}

TEST(LabelMatchers, QuotedNamesOnlyWhereTheTargetTakesThem) {
  const LabelMatchersSyntax utf8{.quoted_names = true};
  for (const char* ok : {R"("service.name"="vllm")", R"('k8s.pod'=~"a.*", job="x")",
                         R"(`raw.name`!="x")", R"("\u00e9t\u00e9"="x")", R"(job="x")", ""}) {
    EXPECT_TRUE(CheckLabelMatchers(ok, "--selector", utf8).ok())
        << ok << ": " << CheckLabelMatchers(ok, "--selector", utf8).message();
  }
  // Prometheus 2.x (and so the generated rules' promtool) refuses them.
  EXPECT_THAT(CheckLabelMatchers(R"("service.name"="vllm")", "--selector").message(),
              HasSubstr("no label name at character 1"));
  // A quoted name still needs an operator and a value: a bare string is a metric name.
  for (const char* bad : {R"("service.name")", R"(""="x")", R"("a"=x)", R"("unterminated=")",
                          R"("a\q"="x")", "\"\\xff\"=\"x\""}) {
    EXPECT_EQ(CheckLabelMatchers(bad, "--selector", utf8).code(), StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(LabelMatchers, TrimmedReadyToJoinOtherMatchers) {
  EXPECT_EQ(TrimLabelMatchers("  a=\"x\" ,  "), "a=\"x\"");
  EXPECT_EQ(TrimLabelMatchers("\ta=\"x\",b=\"y\"\t"), "a=\"x\",b=\"y\"");
  EXPECT_EQ(TrimLabelMatchers(" , "), "");
  EXPECT_EQ(TrimLabelMatchers(""), "");
  EXPECT_EQ(StripSelectorBraces(" {a=\"x\",}\t"), "a=\"x\",");
  EXPECT_EQ(StripSelectorBraces("a=\"x\""), "a=\"x\"");
  // A comma outside the braces is not the matchers' trailing comma: it stays, and is refused.
  EXPECT_EQ(StripSelectorBraces("{a=\"x\"},"), "{a=\"x\"},");
  EXPECT_FALSE(CheckLabelMatchers(StripSelectorBraces("{a=\"x\"},"), "--selector").ok());
  EXPECT_TRUE(IsLabelName("_a1"));
  EXPECT_FALSE(IsLabelName("1a"));
  EXPECT_FALSE(IsLabelName("a.b"));
  EXPECT_FALSE(IsLabelName(""));
}

}  // namespace
}  // namespace ttft
