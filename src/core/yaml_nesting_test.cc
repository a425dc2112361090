// The YAML nesting bound (ttft/core.h).
#include <gtest/gtest.h>

#include <string>

#include "ttft/core.h"

namespace ttft {
namespace {

TEST(YamlNestingExceededAt, FlowBracketsCountAcrossLines) {
  EXPECT_EQ(YamlNestingExceededAt("a: [[[1]]]", 2, 64), 1);
  EXPECT_EQ(YamlNestingExceededAt("a: [[[1]]]", 3, 64), 0);
  EXPECT_EQ(YamlNestingExceededAt("a: [\n  {\n   b: [1]}]", 2, 64), 3);
  EXPECT_EQ(YamlNestingExceededAt("a: [1]\nb: [2]\nc: [3]", 1, 64), 0);  // closed each line
  EXPECT_EQ(YamlNestingExceededAt("]]]] [[", 2, 64), 0);  // a stray close does not go below 0
}

TEST(YamlNestingExceededAt, BlockIndentationAndIndicators) {
  EXPECT_EQ(YamlNestingExceededAt("a:\n  b:\n    c: 1", 8, 4), 0);
  EXPECT_EQ(YamlNestingExceededAt("a:\n  b:\n    c:\n      d: 1", 8, 4), 4);
  // "- " indicators nest sequences on one line: two columns each.
  EXPECT_EQ(YamlNestingExceededAt("- - - x", 8, 6), 0);
  EXPECT_EQ(YamlNestingExceededAt("- - - - x", 8, 6), 1);
  EXPECT_EQ(YamlNestingExceededAt("-x: 1\n--- \n", 8, 0), 0);  // not indicators
}

TEST(YamlNestingExceededAt, HostileDepthIsFoundWithoutRecursion) {
  const std::string deep = "a: " + std::string(1'000'000, '[');
  EXPECT_EQ(YamlNestingExceededAt(deep, 64, 256), 1);
  std::string lines;
  for (int i = 0; i < 300; ++i) lines += std::string(i, ' ') + "k:\n";
  EXPECT_EQ(YamlNestingExceededAt(lines, 64, 256), 258);  // indented by 257 columns
  EXPECT_EQ(YamlNestingExceededAt("", 0, 0), 0);
}

}  // namespace
}  // namespace ttft
