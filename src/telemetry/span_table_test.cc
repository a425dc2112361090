// SpanTable's Truncate and Append (the merge of ReadSpanTable's ranges): the same
// table, label ids included, as Add()ing the rows in order.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ttft/spans.h"

namespace ttft {
namespace {

SpanRecord Row(int i) {
  SpanRecord r;
  r.arrival_s = 1000 + i * 0.25;
  r.queue_s = 0.001 * (i % 97);
  r.prefill_s = 0.01 * (i % 13);
  r.front_end_s = 0.003;
  r.ttft_s = r.queue_s + r.prefill_s + r.front_end_s;
  r.decode_s = 1.5;
  r.e2e_s = r.ttft_s + r.decode_s;
  r.itl_mean_s = 0.02;
  r.itl_max_s = 0.05 + 0.001 * (i % 7);
  r.prompt_tokens = 100 + i % 977;
  r.cached_tokens = i % 100;
  r.output_tokens = 80 + i % 5;
  r.preemptions = i % 3;
  r.status = i % 50 == 0 ? RequestStatus::kRejectedTooLong : RequestStatus::kOk;
  static const std::string kReplicas[] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6"};
  static const std::string kTenants[] = {"acme", "globex", "initech"};
  r.labels = {kReplicas[(i * 7 / 5) % 7],
              i % 2 ? "eu" : "us",
              kTenants[i % 3],
              "m",
              i < 1000 ? "tpl@v1" : "tpl@v2",
              "d1"};
  return r;
}

void ExpectSameTable(const SpanTable& a, const SpanTable& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.num_label_sets(), b.num_label_sets());
  for (uint32_t s = 0; s < a.num_label_sets(); ++s) {
    for (int l = 0; l < kNumSpanLabels; ++l) {
      ASSERT_EQ(a.label_of_set(s, static_cast<SpanLabel>(l)),
                b.label_of_set(s, static_cast<SpanLabel>(l)));
    }
  }
  auto same_bytes = [](auto x, auto y) {
    // memcmp's pointers must be non-null even for zero bytes; an empty column has none.
    return x.size() == y.size() &&
           (x.empty() || std::memcmp(x.data(), y.data(), x.size_bytes()) == 0);
  };
  EXPECT_TRUE(same_bytes(a.arrival_s(), b.arrival_s()));
  EXPECT_TRUE(same_bytes(a.queue_s(), b.queue_s()));
  EXPECT_TRUE(same_bytes(a.prefill_s(), b.prefill_s()));
  EXPECT_TRUE(same_bytes(a.front_end_s(), b.front_end_s()));
  EXPECT_TRUE(same_bytes(a.ttft_s(), b.ttft_s()));
  EXPECT_TRUE(same_bytes(a.decode_s(), b.decode_s()));
  EXPECT_TRUE(same_bytes(a.e2e_s(), b.e2e_s()));
  EXPECT_TRUE(same_bytes(a.itl_mean_s(), b.itl_mean_s()));
  EXPECT_TRUE(same_bytes(a.itl_max_s(), b.itl_max_s()));
  EXPECT_TRUE(same_bytes(a.prompt_tokens(), b.prompt_tokens()));
  EXPECT_TRUE(same_bytes(a.cached_tokens(), b.cached_tokens()));
  EXPECT_TRUE(same_bytes(a.output_tokens(), b.output_tokens()));
  EXPECT_TRUE(same_bytes(a.preemptions(), b.preemptions()));
  EXPECT_TRUE(same_bytes(a.status(), b.status()));
  EXPECT_TRUE(same_bytes(a.label_set(), b.label_set()));
}

TEST(SpanTable, TruncateIsAddingOnlyThoseRows) {
  for (size_t keep : {0u, 1u, 5u, 999u, 1000u, 1500u}) {
    SCOPED_TRACE(keep);
    SpanTable cut, fresh;
    for (int i = 0; i < 2000; ++i) cut.Add(Row(i));
    cut.Truncate(keep);
    for (size_t i = 0; i < keep; ++i) fresh.Add(Row(static_cast<int>(i)));
    ExpectSameTable(cut, fresh);
    // And both go on alike, new labels included.
    for (int i = 3000; i < 3100; ++i) {
      SpanRecord r = Row(i);
      if (i % 10 == 0) r.labels[0] = "r-late";
      cut.Add(r);
      fresh.Add(r);
    }
    ExpectSameTable(cut, fresh);
  }
  SpanTable t;
  t.Add(Row(1));
  t.Truncate(5);  // longer than the table: no change
  EXPECT_EQ(t.size(), 1u);
}

TEST(SpanTable, AppendOnTwoThreadsIsAddingInOrder) {
  // Over the 2^20 rows the two-thread copy needs; `head` already has rows and labels.
  constexpr int kRows = (1 << 20) + 1234;
  SpanTable head, tail, added;
  for (int i = 0; i < 500; ++i) {
    head.Add(Row(i + 5000));
    added.Add(Row(i + 5000));
  }
  for (int i = 0; i < kRows; ++i) {
    SpanRecord r = Row(i);
    if (i == kRows - 1) r.labels[2] = "late-tenant";
    tail.Add(r);
    added.Add(r);
  }
  SpanTable one = head;
  one.Append(tail, {}, SIZE_MAX, /*threads=*/1);
  head.Append(tail, {}, SIZE_MAX, /*threads=*/2);
  ExpectSameTable(one, added);
  ExpectSameTable(head, added);
  head.Add(Row(7));
  added.Add(Row(7));
  ExpectSameTable(head, added);
}

}  // namespace
}  // namespace ttft
