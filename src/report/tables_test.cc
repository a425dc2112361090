// The shared table cells (report/tables.h): quantiles from histogram buckets that the
// buckets do not resolve are shown as bounds, never as the interpolated figure.
#include "report/tables.h"

#include <gtest/gtest.h>

namespace ttft::report {
namespace {

// p50/p90/p99 from buckets: the first two in the first bucket (0, 0.3], p99 in (0.3, 0.5].
TermQuantiles FromBuckets() {
  TermQuantiles t;
  t.source = TermQuantiles::Source::kBuckets;
  t.count = 100;
  t.p50 = 0.15;
  t.p90 = 0.27;
  t.p99 = 0.45;
  t.buckets[0] = {0.15, 0, 0.3, true, false};
  t.buckets[1] = {0.27, 0, 0.3, true, false};
  t.buckets[2] = {0.45, 0.3, 0.5, false, false};
  return t;
}

TEST(QuantileText, BoundsForUnresolvedBucketsFiguresOtherwise) {
  TermQuantiles t = FromBuckets();
  EXPECT_EQ(QuantileText(t, 0), "<=300 ms");
  EXPECT_EQ(QuantileText(t, 2), "450 ms");
  EXPECT_EQ(Terms(t), "<=300 ms / <=300 ms / 450 ms");
  t.buckets[2] = {10, 10, kMissing, false, true};  // above the highest finite bound
  t.p99 = 10;
  EXPECT_EQ(QuantileText(t, 2), ">=10.00 s");
  t.buckets[2] = t.buckets[0];
  EXPECT_EQ(Terms(t), "all <=300 ms");
  // Exact quantiles (spans) print their figure whatever `buckets` holds.
  t.source = TermQuantiles::Source::kExact;
  EXPECT_EQ(Terms(t), "150 ms / 270 ms / 10.00 s");
}

TEST(Symptoms, NoChangeRatioBetweenUnresolvedQuantiles) {
  DiagnosisReport r;
  r.baseline.queue_s = FromBuckets();
  r.incident.queue_s = FromBuckets();
  r.incident.queue_s.buckets[2] = r.incident.queue_s.buckets[0];  // p99 in the first bucket
  r.baseline.prefill_s = r.incident.prefill_s = FromBuckets();
  for (const SymRow& row : Symptoms(r)) {
    if (row.name == "p99 queue") {
      EXPECT_EQ(row.before, "450 ms");
      EXPECT_EQ(row.after, "<=300 ms");
      EXPECT_EQ(row.change, "");
    }
    if (row.name == "p99 prefill") {
      EXPECT_EQ(row.change, "x1.00");
    }
  }
}

}  // namespace
}  // namespace ttft::report
