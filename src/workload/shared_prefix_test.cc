// The inference-perf shared_prefix generator and constant load timer (shared_prefix.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "ttft/workload.h"

namespace ttft {
namespace {

SharedPrefixSpec General() {
  SharedPrefixSpec s;
  s.tenant = "general";
  s.system_prompt_len = 100;
  s.question_len = 447;
  s.output_len = 248;
  s.stages = {{8.0, 600}, {20.0, 600}};
  return s;
}

TEST(SharedPrefix, HundredDistinctPromptsTenSharedSystemPrompts) {
  const auto prompts = BuildSharedPrefixPrompts(General(), 1);
  ASSERT_EQ(prompts.size(), 100u);
  std::set<uint64_t> systems, questions;
  std::vector<int> per_group(10, 0);
  double mean = 0;
  int lo = 1 << 30, hi = 0;
  for (const auto& p : prompts) {
    ASSERT_EQ(p.pieces.size(), 3u);  // BOS, system, question
    EXPECT_EQ(p.pieces[0].tokens, 1);
    systems.insert(p.pieces[1].key);
    questions.insert(p.pieces[2].key);
    ++per_group[static_cast<size_t>(p.group)];
    EXPECT_EQ(p.tokens, p.pieces[0].tokens + p.pieces[1].tokens + p.pieces[2].tokens);
    EXPECT_EQ(p.shared_tokens, 1 + p.pieces[1].tokens);
    mean += p.tokens / 100.0;
    lo = std::min(lo, p.tokens);
    hi = std::max(hi, p.tokens);
  }
  EXPECT_EQ(systems.size(), 10u);
  EXPECT_EQ(questions.size(), 100u);
  for (int n : per_group) EXPECT_EQ(n, 10);
  // Measured for this profile: 574.91 tokens on average, range 559-589 (README 4.2).
  EXPECT_NEAR(mean, 574.91, 574.91 * 0.01);
  EXPECT_GT(lo, 545);
  EXPECT_LT(hi, 605);
  // Shuffled: consecutive prompts are not all of the same group.
  int same = 0;
  for (size_t i = 1; i < prompts.size(); ++i) same += prompts[i].group == prompts[i - 1].group;
  EXPECT_LT(same, 50);
}

TEST(SharedPrefix, PromptsSharingAGroupShareTheirSystemBlocks) {
  const auto prompts = BuildSharedPrefixPrompts(General(), 3);
  const auto* a = &prompts[0];
  const SharedPrefixPrompt* b = nullptr;
  const SharedPrefixPrompt* c = nullptr;
  for (const auto& p : prompts) {
    if (&p != a && p.group == a->group && !b) b = &p;
    if (p.group != a->group && !c) c = &p;
  }
  ASSERT_TRUE(b && c);
  std::vector<uint64_t> ha, hb, hc;
  ComputeBlockHashes(a->pieces, 16, 0, ha);
  ComputeBlockHashes(b->pieces, 16, 0, hb);
  ComputeBlockHashes(c->pieces, 16, 0, hc);
  const size_t shared_blocks = static_cast<size_t>(a->shared_tokens / 16);
  ASSERT_GT(shared_blocks, 3u);
  for (size_t i = 0; i < shared_blocks; ++i) EXPECT_EQ(ha[i], hb[i]) << i;
  EXPECT_NE(ha[shared_blocks], hb[shared_blocks]);  // the block where the questions begin
  EXPECT_NE(ha[0], hc[0]);                          // other group: nothing shared
}

TEST(SharedPrefix, ConstantLoadTimerFillsTheStageExactly) {
  Rng rng(5);
  const auto t = ConstantLoadSendTimes(8.0, 600, 100.0, rng);
  ASSERT_EQ(t.size(), 4800u);
  EXPECT_DOUBLE_EQ(t.back(), 100.0 + 1.0 + 600.0);
  EXPECT_GT(t.front(), 101.0);
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  // Gaps are exponential (CV ~ 1), not evenly spaced.
  double m = 0, v = 0;
  for (size_t i = 1; i < t.size(); ++i) m += (t[i] - t[i - 1]) / (t.size() - 1);
  for (size_t i = 1; i < t.size(); ++i) v += std::pow(t[i] - t[i - 1] - m, 2) / (t.size() - 2);
  EXPECT_NEAR(m, 0.125, 0.002);
  EXPECT_NEAR(std::sqrt(v) / m, 1.0, 0.08);
  // int(rate * duration) requests.
  Rng r2(1);
  EXPECT_EQ(ConstantLoadSendTimes(6.5, 3.0, 0, r2).size(), 19u);
}

TEST(SharedPrefix, SourceSendsPromptKModNCyclicallyAcrossStages) {
  WorkloadSpec w;
  SharedPrefixSpec s = General();
  s.stages = {{8.0, 50}, {20.0, 20}};
  s.stage_gap_s = 5;
  w.shared_prefix.push_back(s);
  auto src = RequestSource::Create(w);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  std::vector<Request> reqs;
  Request r;
  while (true) {
    auto more = (*src)->Next(r);
    ASSERT_TRUE(more.ok());
    if (!*more) break;
    reqs.push_back(r);
  }
  ASSERT_EQ(reqs.size(), 400u + 400u);
  for (size_t k = 0; k < 400; ++k) {
    EXPECT_EQ(reqs[k].block_hashes, reqs[k % 100].block_hashes);
    EXPECT_EQ(reqs[k].output_tokens, 248);
  }
  // Request numbers restart at 0 in the next stage: its request 0 is prompt 0 again.
  EXPECT_EQ(reqs[400].block_hashes, reqs[0].block_hashes);
  EXPECT_EQ(reqs[450].block_hashes, reqs[50].block_hashes);
  // The next stage starts stage_gap_s after the last send, then its timer's 1 s.
  EXPECT_DOUBLE_EQ(reqs[399].arrival_s, 51.0);
  EXPECT_GT(reqs[400].arrival_s, 51.0 + 5.0 + 1.0);
  EXPECT_DOUBLE_EQ(reqs.back().arrival_s, 51.0 + 5.0 + 1.0 + 20.0);
  EXPECT_EQ((*src)->tenant_names().back(), "general");
}

TEST(SharedPrefix, ValidationNamesTheField) {
  WorkloadSpec w;
  SharedPrefixSpec s = General();
  s.question_len = 0;
  w.shared_prefix.push_back(s);
  auto src = RequestSource::Create(w);
  ASSERT_FALSE(src.ok());
  EXPECT_NE(src.status().message().find("shared_prefix[0].question_len"), std::string::npos)
      << src.status().message();
  s = General();
  s.stages.clear();
  EXPECT_FALSE(ValidateSharedPrefix(s, "x").ok());
  s = General();
  s.stages[1].rate_rps = -1;
  auto st = ValidateSharedPrefix(s, "x");
  EXPECT_NE(st.message().find("x.stages[1].rate_rps"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ttft
