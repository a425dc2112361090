// The stages of Diagnose() (diagnose/stages.h), each on hand-built inputs.
#include "diagnose/stages.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace ttft::diag {
namespace {

using ::testing::HasSubstr;

Span MakeSpan(int i, double arrival_s, double ttft_s, std::string tenant = "acme") {
  Span s;
  s.request_id = "r" + std::to_string(i);
  s.arrival_s = arrival_s;
  s.tenant = std::move(tenant);
  s.replica = "r-0";
  s.region = "east";
  s.model = "llama-3.3-70b";
  s.template_version = "app@v1";
  s.deploy = "d1";
  s.prompt_tokens = 1000;
  s.cached_tokens = 500;
  s.output_tokens = 10;
  s.front_end_s = 0.01;
  s.queue_s = ttft_s * 0.5;
  s.prefill_s = ttft_s * 0.5 - 0.01;
  s.ttft_s = ttft_s;
  s.itl_mean_s = s.itl_max_s = 0.02;
  s.decode_s = 0.2;
  s.e2e_s = ttft_s + 0.2;
  return s;
}

// A diagnosis of `t` with the baseline [0, 100) s and the incident [100, 200) s.
DiagnosisInput BaselineThenIncident(const SpanTable& t) {
  DiagnosisInput in;
  in.baseline = {&t, 0, 100};
  in.incident = {&t, 100, 200};
  return in;
}

// The windows of `in` (ValidateInput, then ComputeWindows), for the stages after them.
Windows WindowsOf(const DiagnosisInput& in) {
  auto shape = ValidateInput(in);
  EXPECT_TRUE(shape.ok()) << shape.status().ToString();
  if (!shape.ok()) return {};
  Workspace ws(in, *shape);
  std::vector<std::string> notes;
  auto w = ComputeWindows(in, *shape, ws, notes);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? *std::move(w) : Windows{};
}

// --- Validation ---------------------------------------------------------------

TEST(ValidateInput, RejectsEmptyOverlappingAndMissingWindows) {
  SpanTable t;
  DiagnosisInput in;
  in.baseline = {&t, 100, 100};
  in.incident = {&t, 200, 300};
  EXPECT_THAT(ValidateInput(in).status().message(), HasSubstr("empty window"));
  in.baseline = {&t, 0, 250};
  EXPECT_THAT(ValidateInput(in).status().message(), HasSubstr("overlap"));
  in.baseline = {nullptr, 0, 100};
  EXPECT_THAT(ValidateInput(in).status().message(), HasSubstr("no data"));
  in.baseline = {&t, 0, 200};
  auto shape = ValidateInput(in);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_TRUE(shape->has_spans);
  EXPECT_FALSE(shape->has_metrics);
}

TEST(ValidateInput, AnExplicitUnknownModelOrGpuIsAnErrorNamingThePresets) {
  SpanTable t;
  DiagnosisInput in = BaselineThenIncident(t);
  in.options.model = "foo";
  const Status m = ValidateInput(in).status();
  EXPECT_EQ(m.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(m.message(), HasSubstr("unknown model \"foo\""));
  EXPECT_THAT(m.message(), HasSubstr("llama-3.3-70b"));
  in.options.model = "llama-3.3-70b";
  in.options.gpu = "abacus";
  const Status g = ValidateInput(in).status();
  EXPECT_EQ(g.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(g.message(), HasSubstr("unknown gpu \"abacus\""));
  EXPECT_THAT(g.message(), HasSubstr("h100-sxm"));
  in.options.gpu = "h100-sxm";
  EXPECT_TRUE(ValidateInput(in).ok());
}

TEST(ValidateInput, ADtypeATpAndARequestMinimumOutsideTheirRangesAreErrors) {
  SpanTable t;
  DiagnosisInput in = BaselineThenIncident(t);
  in.options.dtype = "int3";
  EXPECT_THAT(ValidateInput(in).status().message(), HasSubstr("--dtype: unknown dtype 'int3'"));
  in.options.dtype = "bf16";
  in.options.tp = -3;  // was priced as the default TP2, silently
  EXPECT_THAT(ValidateInput(in).status().message(), HasSubstr("tp -3 (DiagnoseOptions::tp, --tp)"));
  in.options.tp = 0;  // the default
  EXPECT_TRUE(ValidateInput(in).ok());
  for (int64_t bad : {0, -5}) {
    in.options.min_ok_requests = bad;
    EXPECT_THAT(ValidateInput(in).status().message(), HasSubstr("--min-requests): must be >= 1"));
  }
  in.options.min_ok_requests = 1;
  EXPECT_TRUE(ValidateInput(in).ok());
}

TEST(EstimateMagnitude, AnUnknownModelLabelInTheSpansIsANoteAndTheDefaultPricesIt) {
  SpanTable t;
  for (int i = 0; i < 400; ++i) {
    Span s = MakeSpan(i, i * 0.5, 0.1 + (i % 10) * 0.01);
    s.model = "my-finetune";
    AddSpanToTable(s, t);
  }
  DiagnosisInput in = BaselineThenIncident(t);
  const Windows w = WindowsOf(in);
  std::vector<std::string> notes;
  const Magnitude m = EstimateMagnitude(in, w.rows_a, w.rows_b, notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("the spans' model label \"my-finetune\" is unknown"));
  EXPECT_THAT(notes[0], HasSubstr("priced the requests as the default llama-3.3-70b"));
  EXPECT_TRUE(m.available);
  EXPECT_THAT(m.cost_model, HasSubstr("llama-3.3-70b"));
  // An explicit preset is used as given, without a note.
  in.options.model = "llama-3.1-8b";
  notes.clear();
  const Magnitude given = EstimateMagnitude(in, w.rows_a, w.rows_b, notes);
  EXPECT_TRUE(notes.empty()) << notes.front();
  EXPECT_THAT(given.cost_model, HasSubstr("llama-3.1-8b"));
}

// A window shorter than its requests (here 1e-12 s, every request arriving at one
// instant) is no measure of load: Little's law would put 2e14 requests in flight (the
// cost model once looped over them: `ttft diagnose` hung). Said, and not estimated.
TEST(EstimateMagnitude, AWindowShorterThanItsRequestsIsNotAMeasureOfLoad) {
  SpanTable t;
  for (int i = 0; i < 400; ++i) {
    Span s = MakeSpan(i, i < 200 ? 10.0 : 60.0, 0.1 + (i % 10) * 0.01);
    s.decode_s = 100;
    s.e2e_s = s.ttft_s + s.decode_s;
    AddSpanToTable(s, t);
  }
  DiagnosisInput in;
  in.baseline = {&t, 10, 10.000000000001};
  in.incident = {&t, 60, 60.00000000001};
  const Windows w = WindowsOf(in);
  ASSERT_EQ(w.rows_a.size(), 200u);
  std::vector<std::string> notes;
  const Magnitude m = EstimateMagnitude(in, w.rows_a, w.rows_b, notes);
  EXPECT_FALSE(m.available);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("the baseline window (1e-12 s) is shorter than its requests' "
                                  "mean end-to-end time (100.15 s)"));
}

TEST(ValidateInput, OverlapOnTwoTablesIsTwoInputs) {
  SpanTable a, b;
  DiagnosisInput in;
  in.baseline = {&a, 0, 100};
  in.incident = {&b, 0, 100};
  EXPECT_TRUE(ValidateInput(in).ok());
}

TEST(CheckSameModel, DifferentModelsInTwoTablesAreAnError) {
  SpanTable a, b;
  for (int i = 0; i < 5; ++i) AddSpanToTable(MakeSpan(i, i, 0.1), a);
  for (int i = 0; i < 5; ++i) {
    Span s = MakeSpan(i, i, 0.1);
    s.model = "qwen-7b";
    AddSpanToTable(s, b);
  }
  DiagnosisInput in;
  in.baseline = {&a, 0, 10};
  in.incident = {&b, 0, 10};
  auto shape = ValidateInput(in);
  ASSERT_TRUE(shape.ok());
  Workspace ws(in, *shape);
  std::vector<std::string> notes;
  auto w = ComputeWindows(in, *shape, ws, notes);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->rows_a.size(), 5u);
  EXPECT_THAT(CheckSameModel(in, *shape, *w).message(), HasSubstr("different models"));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("spans only"));
}

// --- Significance ---------------------------------------------------------------

TEST(TtftSample, SkipsFailedRowsAndSubsamplesEvenly) {
  SpanTable t;
  for (int i = 0; i < 10; ++i) {
    Span s = MakeSpan(i, i, i);
    if (i == 3) s.status = RequestStatus::kError;
    AddSpanToTable(s, t);
  }
  std::vector<uint32_t> rows = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(TtftSample(t, rows, 0), (std::vector<double>{0, 1, 2, 4, 5, 6, 7, 8, 9}));
  // 9 usable values, 3 wanted: indices 0, 3, 6 among them.
  EXPECT_EQ(TtftSample(t, rows, 3), (std::vector<double>{0, 4, 7}));
}

TEST(TailTestP, SmallWhenTheIncidentHoldsTheTail) {
  std::vector<double> a(1000), b(1000);
  for (int i = 0; i < 1000; ++i) {
    a[i] = 0.1 + i * 1e-5;
    b[i] = i % 10 == 0 ? 5.0 + i * 1e-3 : 0.1 + i * 1e-5;
  }
  // 20 of the incident's 1,000 above the pooled p99, none of the baseline's: z ~ 4.5.
  EXPECT_LT(TailTestP(a, b), 1e-4);
  EXPECT_GT(TailTestP(b, a), 0.99);
  EXPECT_GT(TailTestP(a, a), 0.1);
  EXPECT_TRUE(std::isnan(TailTestP({}, b)));
}

WindowStats Window(int64_t ok, double p50, double p99) {
  WindowStats w;
  w.requests = w.ok = ok;
  w.ttft_s.p50 = p50;
  w.ttft_s.p99 = p99;
  return w;
}

TEST(AssessSignificance, InsufficientDataBelowTheMinimum) {
  DiagnoseOptions opt;
  const Significance s =
      AssessSignificance(Window(50, 0.1, 1), Window(500, 0.1, 5), {}, {}, true, opt);
  EXPECT_FALSE(s.enough);
  EXPECT_EQ(s.verdict, Verdict::kInsufficientData);
  EXPECT_THAT(s.verdict_reason, HasSubstr("50 ok requests"));
  EXPECT_DOUBLE_EQ(s.p99_ratio.estimate, 5);
}

TEST(AssessSignificance, RegressionOnlyWhenTheTailMovedSignificantly) {
  DiagnoseOptions opt;
  opt.bootstrap_resamples = 200;
  std::vector<double> a(2000), b(2000);
  for (int i = 0; i < 2000; ++i) {
    a[i] = 0.1 + 0.001 * (i % 100);
    b[i] = i % 20 == 0 ? 2.0 + 0.01 * (i % 7) : a[i];
  }
  const Significance reg =
      AssessSignificance(Window(2000, 0.15, 0.2), Window(2000, 0.15, 2.0), a, b, true, opt);
  EXPECT_EQ(reg.verdict, Verdict::kRegression) << reg.verdict_reason;
  EXPECT_GT(reg.p99_ratio.lower, opt.min_p99_ratio_lower);
  const Significance same =
      AssessSignificance(Window(2000, 0.15, 0.2), Window(2000, 0.15, 0.2), a, a, true, opt);
  EXPECT_EQ(same.verdict, Verdict::kNoRegression) << same.verdict_reason;
}

TEST(AssessSignificance, MetricsOnlyNeedsALargerRatio) {
  DiagnoseOptions opt;  // threshold 1.2 x 1.25 = 1.5
  EXPECT_EQ(
      AssessSignificance(Window(500, 0.1, 1), Window(500, 0.1, 1.4), {}, {}, false, opt).verdict,
      Verdict::kNoRegression);
  const Significance s =
      AssessSignificance(Window(500, 0.1, 1), Window(500, 0.1, 1.6), {}, {}, false, opt);
  EXPECT_EQ(s.verdict, Verdict::kRegression);
  EXPECT_THAT(s.verdict_reason, HasSubstr("histogram buckets"));
}

// A p99 in the first bucket is a bound, so the ratio is one too: the verdict rests on
// its lower end, and the reason quotes the bound, not the interpolated figure.
TEST(AssessSignificance, MetricsOnlyABoundIsQuotedAndTheRatioIsItsLowerEnd) {
  DiagnoseOptions opt;
  auto first_bucket = [](double bound_s) {
    WindowStats w = Window(500, bound_s * 0.5, bound_s * 0.99);
    w.ttft_s.source = TermQuantiles::Source::kBuckets;
    w.ttft_s.count = 500;
    for (size_t i = 0; i < 4; ++i) w.ttft_s.buckets[i] = {w.ttft_s.at(i), 0, bound_s, true, false};
    return w;
  };
  auto resolved = [](double p99_s, double lower_s, double upper_s) {
    WindowStats w = Window(500, lower_s, p99_s);
    w.ttft_s.source = TermQuantiles::Source::kBuckets;
    w.ttft_s.count = 500;
    w.ttft_s.buckets[2] = {p99_s, lower_s, upper_s, false, false};
    return w;
  };
  Significance s = AssessSignificance(first_bucket(0.1), resolved(9.16, 1, 10), {}, {}, false, opt);
  EXPECT_EQ(s.verdict, Verdict::kRegression);
  EXPECT_THAT(s.verdict_reason, HasSubstr("<=100 ms -> 9.16 s (at least x91.60)"));
  // Interpolated, 0.099 -> 0.149 is x1.505, but the lower end 0.149 / 0.1 is x1.49: not
  // material against the 1.5 the metrics need.
  s = AssessSignificance(first_bucket(0.1), resolved(0.149, 0.1, 0.2), {}, {}, false, opt);
  EXPECT_EQ(s.verdict, Verdict::kNoRegression) << s.verdict_reason;
  EXPECT_THAT(s.verdict_reason, HasSubstr("(at least x1.49)"));
  // Both in the first bucket: nothing resolved, no regression claimed.
  s = AssessSignificance(first_bucket(0.1), first_bucket(0.1), {}, {}, false, opt);
  EXPECT_EQ(s.verdict, Verdict::kNoRegression);
  EXPECT_THAT(s.verdict_reason, HasSubstr("<=100 ms -> <=100 ms (not resolved by the buckets)"));
}

// --- Decomposition ----------------------------------------------------------------

TEST(TailOf, MeansOverTheRowsAtOrAboveTheThreshold) {
  SpanTable t;
  for (int i = 0; i < 10; ++i) AddSpanToTable(MakeSpan(i, i, i < 8 ? 0.1 : 1.0), t);
  std::vector<uint32_t> rows = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const TailMeans m = TailOf(t, rows, 1.0);
  EXPECT_NEAR(m.ttft, 1.0, 1e-6);
  EXPECT_NEAR(m.queue, 0.5, 1e-6);
  EXPECT_NEAR(m.prefill, 0.49, 1e-6);
  EXPECT_NEAR(m.fe, 0.01, 1e-6);
  EXPECT_TRUE(std::isnan(TailOf(t, rows, kMissing).ttft));
  EXPECT_TRUE(std::isnan(TailOf(t, rows, 2.0).ttft));
}

TEST(DecomposeTail, SharesOfTheTailIncreaseAndTheDominantTerm) {
  WindowStats a, b;
  const Decomposition d =
      DecomposeTail(a, b, {1.0, 0.1, 0.4, 0.5}, {3.0, 0.1, 2.1, 0.8});  // queue +1.7, prefill +.3
  EXPECT_NEAR(d.share_queue, 0.85, 1e-9);
  EXPECT_NEAR(d.share_prefill, 0.15, 1e-9);
  EXPECT_NEAR(d.share_front_end, 0, 1e-9);
  EXPECT_EQ(d.dominant, "queue");
  const Decomposition flat = DecomposeTail(a, b, {1, 0.1, 0.4, 0.5}, {0.9, 0.1, 0.3, 0.5});
  EXPECT_EQ(flat.dominant, "");
  EXPECT_TRUE(std::isnan(flat.share_queue));
}

TEST(DecomposeTail, FromMetricsByTheChangeOfEachP99) {
  WindowStats a, b;
  a.from_metrics = b.from_metrics = true;
  a.queue_s.p99 = 0.1;
  b.queue_s.p99 = 0.2;
  a.prefill_s.p99 = 0.5;
  b.prefill_s.p99 = 0.8;
  const Decomposition d = DecomposeTail(a, b, {}, {});
  EXPECT_NEAR(d.share_prefill, 0.75, 1e-9);
  EXPECT_EQ(d.dominant, "prefill");
}

// A term from histogram buckets whose quantiles all lie in bucket i of `bounds`.
TermQuantiles InBucket(double lower, double upper, double mean, bool first) {
  TermQuantiles t;
  t.source = TermQuantiles::Source::kBuckets;
  t.count = 100;
  t.mean = mean;
  t.p50 = t.p90 = t.p99 = (lower + upper) / 2;
  for (BucketQuantile& b : t.buckets) b = {(lower + upper) / 2, lower, upper, first, false};
  return t;
}

TEST(BucketNote, QuantilesInTheFirstBucketAreBoundsNotFigures) {
  // Medians interpolated inside the first 0.3 s bucket: 150 ms is not a measurement.
  const TermQuantiles a = InBucket(0, 0.3, 0.012, true), b = InBucket(0, 0.3, 0.015, true);
  const std::string note = BucketNote("queue", a, b);
  EXPECT_THAT(note, HasSubstr("queue: baseline p50, p90, p99 and incident p50, p90, p99"));
  EXPECT_THAT(note, HasSubstr("[0, 300 ms]"));
  EXPECT_THAT(note, HasSubstr("<= 300 ms"));
  EXPECT_THAT(note, HasSubstr("12 ms -> 15 ms"));  // the exact means
  // Resolved quantiles (not the first or the +Inf bucket) need no note; spans none.
  EXPECT_EQ(BucketNote("queue", InBucket(0.3, 0.5, 0.4, false), InBucket(0.3, 0.5, 0.4, false)),
            "");
  EXPECT_EQ(BucketNote("queue", TermQuantiles{}, TermQuantiles{}), "");
  TermQuantiles inf = InBucket(10, kMissing, 20, false);
  inf.buckets[2].in_inf_bucket = true;
  inf.buckets[2].value = 10;
  EXPECT_THAT(BucketNote("TTFT", InBucket(0.3, 0.5, 0.4, false), inf),
              HasSubstr("TTFT: incident p99 lie above the highest finite bucket and are shown as "
                        ">= 10.00 s"));
}

TEST(ImpossibleDecomposition, QueueAboveTtftIsFlaggedWithTheMetric) {
  WindowStats a, b;
  a.ttft_s = b.ttft_s = InBucket(0.3, 0.5, 0.4, false);
  a.prefill_s = b.prefill_s = InBucket(0.1, 0.3, 0.2, false);
  a.queue_s = InBucket(0, 0.1, 0.05, true);
  // An SGLang-style queue metric measuring something longer than the wait in TTFT.
  b.queue_s = InBucket(1.0, 2.5, 1.5, false);
  const MetricFamilyNames names{"sglang:queue_time_seconds", "vllm:request_prefill_time_seconds"};
  const std::vector<std::string> out = ImpossibleDecomposition(a, b, names);
  // One note per window: the quantile contradiction (with the means) names the metric.
  ASSERT_EQ(out.size(), 1u);
  EXPECT_THAT(out[0], HasSubstr("impossible decomposition (incident): the queue p50"));
  EXPECT_THAT(out[0], HasSubstr("from sglang:queue_time_seconds"));
  EXPECT_THAT(out[0], HasSubstr("with a mean of 1.50 s against a mean TTFT of 400 ms"));
  // Means that do not add up, with the quantiles' buckets overlapping.
  WindowStats m = a;
  m.queue_s = InBucket(0.3, 0.5, 0.3, false);
  m.prefill_s = InBucket(0.1, 0.3, 0.2, false);
  const std::vector<std::string> sum = ImpossibleDecomposition(m, a, names);
  ASSERT_EQ(sum.size(), 1u);
  EXPECT_THAT(sum[0], HasSubstr("impossible decomposition (baseline): mean queue 300 ms "
                                "(sglang:queue_time_seconds) + mean prefill 200 ms "
                                "(vllm:request_prefill_time_seconds) exceeds the mean TTFT"));
  // Without a prefill histogram a queue mean above the TTFT mean is flagged alone.
  WindowStats d = a;
  d.prefill_s = TermQuantiles{};
  d.queue_s = InBucket(0, 0.1, 11.8, true);  // mean 11.8 s (SGLang 0.3.5's waiting latency)
  const std::vector<std::string> q = ImpossibleDecomposition(d, a, names);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_THAT(q[0], HasSubstr("impossible decomposition (baseline): mean queue 11.80 s "
                              "(sglang:queue_time_seconds) exceeds"));
  // A consistent window: nothing; overlapping buckets are not a contradiction.
  EXPECT_TRUE(ImpossibleDecomposition(a, a, names).empty());
  WindowStats c = a;
  c.queue_s = InBucket(0.3, 0.5, 0.15, false);  // p50 may equal the TTFT p99
  EXPECT_TRUE(ImpossibleDecomposition(c, c, names).empty());
}

// --- Groups -----------------------------------------------------------------------

GroupRow Row(std::string value, double tail_excess) {
  GroupRow r;
  r.value = std::move(value);
  r.tail_excess = tail_excess;
  return r;
}

TEST(RankByContribution, PositiveExcessSharedAndSorted) {
  std::vector<GroupRow> rows = {Row("a", 10), Row("b", -5), Row("c", 30)};
  RankByContribution(rows);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].value, "c");
  EXPECT_DOUBLE_EQ(rows[0].contribution, 0.75);
  EXPECT_DOUBLE_EQ(rows[1].contribution, 0.25);
  EXPECT_DOUBLE_EQ(rows[2].contribution, 0);
  std::vector<GroupRow> none = {Row("a", -1), Row("b", 0)};
  RankByContribution(none);
  EXPECT_EQ(none[0].value, "a");  // stable among equals
  EXPECT_EQ(none[0].contribution, 0);
}

TEST(LabelChangesOf, NewAndGoneValuesAboveOnePercent) {
  GroupSplit s;
  s.dimension = "template";
  GroupRow v2 = Row("app@v2", 0), v1 = Row("app@v1", 0), rare = Row("x", 0);
  v2.after.requests = 400;
  v2.share_after = 0.4;
  v1.before.requests = 1000;
  v1.share_before = 1.0;
  rare.after.requests = 1;
  rare.share_after = 0.001;
  s.rows = {v2, v1, rare};
  const std::vector<LabelChange> c = LabelChangesOf(s);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].kind, LabelChange::Kind::kNew);
  EXPECT_EQ(ToString(c[0]), "template app@v2: new in the incident (40% of requests)");
  EXPECT_EQ(c[1].kind, LabelChange::Kind::kGone);
  EXPECT_EQ(ToString(c[1]), "template app@v1: gone in the incident (was 100%)");
}

TEST(ContributionsOf, TopGroupOfSplitsThatHoldMostOfTheIncrease) {
  GroupSplit ten{"tenant", {Row("acme", 0), Row("globex", 0)}};
  ten.rows[0].contribution = 0.9;
  ten.rows[0].share_after = 0.25;
  ten.rows[0].before.ttft_s.p99 = 0.4;
  ten.rows[0].after.ttft_s.p99 = 2;
  GroupSplit rep{"replica", {Row("r-0", 0), Row("r-1", 0)}};
  rep.rows[0].contribution = 0.2;  // below 0.3
  GroupSplit one{"region", {Row("east", 0)}};
  one.rows[0].contribution = 1;  // a single value says nothing
  const std::vector<GroupSplit> splits = {ten, rep, one};
  const std::vector<Contribution> c = ContributionsOf(splits);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].dimension, "tenant");
  EXPECT_EQ(c[0].value, "acme");
  EXPECT_DOUBLE_EQ(c[0].share_of_increase, 0.9);
  EXPECT_DOUBLE_EQ(c[0].ttft_p99_after_s, 2);
}

TEST(SplitGroups, ContributionLandsOnTheGroupThatSlowedDown) {
  SpanTable t;
  int id = 0;
  for (int i = 0; i < 400; ++i) {
    const double at = i * 0.5;
    const bool after = at >= 100;
    const bool acme = i % 2 == 0;
    AddSpanToTable(MakeSpan(id++, at, after && acme ? 2.0 + (i % 5) * 0.01 : 0.1 + (i % 10) * 0.01,
                            acme ? "acme" : "globex"),
                   t);
  }
  DiagnosisInput in = BaselineThenIncident(t);
  auto shape = ValidateInput(in);
  ASSERT_TRUE(shape.ok());
  Workspace ws(in, *shape);
  std::vector<std::string> notes;
  auto w = ComputeWindows(in, *shape, ws, notes);
  ASSERT_TRUE(w.ok());
  const Groups g = SplitGroups(in, *w, ws);
  ASSERT_EQ(g.splits.size(), 6u);
  EXPECT_EQ(g.splits[0].dimension, "tenant");
  ASSERT_EQ(g.splits[0].rows.size(), 2u);
  EXPECT_EQ(g.splits[0].rows[0].value, "acme");
  EXPECT_DOUBLE_EQ(g.splits[0].rows[0].contribution, 1.0);
  EXPECT_NEAR(g.splits[0].rows[0].share_after, 0.5, 1e-9);
  EXPECT_TRUE(g.label_changes.empty());
  EXPECT_EQ(g.kept.count("tenant"), 1u);
  EXPECT_EQ(g.kept.count("replica"), 1u);
}

// --- Rules ------------------------------------------------------------------------

class FixedRule final : public HypothesisRule {
 public:
  FixedRule(std::string id, double confidence, bool runnable)
      : id_(std::move(id)), confidence_(confidence), runnable_(runnable) {}
  std::string_view id() const override { return id_; }
  Hypothesis Evaluate(const Evidence&) const override {
    Hypothesis h;
    h.confidence = confidence_;
    h.runnable = runnable_;
    h.not_run_reason = "needs spans";
    return h;
  }

 private:
  std::string id_;
  double confidence_;
  bool runnable_;
};

TEST(EvaluateRules, ClampsRanksAndNotesRulesThatCannotRun) {
  std::vector<std::unique_ptr<HypothesisRule>> rules;
  rules.push_back(std::make_unique<FixedRule>("low", 0.2, true));
  rules.push_back(std::make_unique<FixedRule>("over", 1.7, true));
  rules.push_back(std::make_unique<FixedRule>("blind", 0.9, false));
  rules.push_back(std::make_unique<FixedRule>("also_low", 0.2, true));
  WindowStats a, b;
  Decomposition d;
  std::vector<GroupSplit> groups;
  std::vector<LabelChange> changes;
  const Evidence ev{a, b, d, groups, changes};
  std::vector<std::string> notes;
  const std::vector<Hypothesis> h = EvaluateRules(rules, ev, notes);
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].id, "over");
  EXPECT_EQ(h[0].confidence, 1.0);
  EXPECT_EQ(h[1].id, "low");
  EXPECT_EQ(h[2].id, "also_low");
  EXPECT_EQ(h[3].id, "blind");
  EXPECT_EQ(h[3].confidence, 0);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "blind: not checked (needs spans)");
}

TEST(WordForVerdict, DropsTheShareOfTheIncreaseUnlessARegression) {
  Hypothesis h;
  h.evidence = {
      {"ttft_p99_s", 1, 2, "s",
       "replica r1: p99 TTFT 1 s -> 2 s, 80% of the p99 increase, x2.0 the median "
       "replica's change"},
      {"", kMissing, kMissing, "", "tenant t: hit rate 80% -> 20%; 589% of the p99 increase"},
      {"", kMissing, kMissing, "", "fleet hit rate 80% -> 20%"}};
  std::vector<Hypothesis> regression = {h};
  WordForVerdict(Verdict::kRegression, regression);
  EXPECT_EQ(regression[0].evidence[0].sentence, h.evidence[0].sentence);
  EXPECT_EQ(regression[0].evidence[1].sentence, h.evidence[1].sentence);
  for (Verdict v : {Verdict::kNoRegression, Verdict::kInsufficientData}) {
    std::vector<Hypothesis> none = {h};
    WordForVerdict(v, none);
    EXPECT_EQ(none[0].evidence[0].sentence,
              "replica r1: p99 TTFT 1 s -> 2 s, x2.0 the median replica's change");
    EXPECT_EQ(none[0].evidence[1].sentence, "tenant t: hit rate 80% -> 20%");
    EXPECT_EQ(none[0].evidence[2].sentence, "fleet hit rate 80% -> 20%");
    EXPECT_EQ(none[0].evidence[0].before, 1);  // the figures stay
  }
}

// --- Changes and actions -------------------------------------------------------------

TEST(SuspectChanges, NearTheOnsetClosestFirst) {
  const std::vector<Annotation> ann = {{100, "deploy_template", "early", ""},
                                       {1150, "flag", "near", ""},
                                       {1210, "deploy_template", "app", ""},
                                       {1900, "drain_replica", "late", ""}};
  const SpanWindow incident{nullptr, 1200, 2100};  // slack max(60, 90) = 90 s
  const std::vector<Annotation> s = SuspectChanges(ann, kMissing, 1200, incident);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].target, "app");
  EXPECT_EQ(s[1].target, "near");
  // The onset moves the pivot.
  EXPECT_EQ(SuspectChanges(ann, 1850, 1200, incident).front().target, "late");
}

DiagnosisReport Regression() {
  DiagnosisReport r;
  r.verdict = Verdict::kRegression;
  r.baseline.ttft_s.p99 = 0.4;
  Hypothesis h;
  h.id = "prefix_cache_collapse";
  h.fix = "restore the template";
  h.prevention = "lint it";
  h.owners = "app team";
  r.hypotheses.push_back(h);
  return r;
}

TEST(PlanActions, NothingWithoutARegression) {
  DiagnosisReport r = Regression();
  r.verdict = Verdict::kNoRegression;
  EXPECT_TRUE(PlanActions(r).empty());
}

// A template deploy to every replica ("*") names the template and both versions.
TEST(PlanActions, TemplateRollbackNamesTheTemplateAndItsVersions) {
  DiagnosisReport r = Regression();
  r.suspect_changes = {{1800, "deploy_template", "*", "app@v2"},
                       {1800, "deploy_template", "*", "chat@v3"}};
  r.label_changes = {{"template", "app@v2", LabelChange::Kind::kNew, 0.2},
                     {"template", "app@v1", LabelChange::Kind::kGone, 0.2}};
  const std::vector<Action> a = PlanActions(r);
  ASSERT_GE(a.size(), 2u);
  EXPECT_THAT(a[0].text, HasSubstr("Roll back template app@v2 to app@v1 (deployed at t=1800 s on "
                                   "every replica) or flip its flag now"));
  EXPECT_THAT(a[1].text, HasSubstr("Roll back template chat@v3 to its previous version"));
  for (const Action& x : a) EXPECT_EQ(x.text.find('*'), std::string::npos) << x.text;
}

TEST(PlanActions, UndoEachSuspectChangeNotCoveredByAnother) {
  DiagnosisReport r = Regression();
  r.suspect_changes = {{1200, "drain_replica", "a,b", ""},
                       {1201, "drain_replica", "a", ""},
                       {1205, "deploy_template", "app", "v1 -> v2"}};
  const std::vector<Action> a = PlanActions(r);
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[0].kind, "mitigate");
  EXPECT_THAT(a[0].text, HasSubstr("Undrain (or replace) drain_replica a,b"));
  EXPECT_EQ(a[0].subject, ActionSubject::kChange);
  EXPECT_EQ(a[0].subject_value, "a,b");
  EXPECT_THAT(a[1].text,
              HasSubstr("Roll back template app v1 -> v2 (deployed at t=1205 s) or flip"));
  EXPECT_THAT(a[1].text, HasSubstr("toward 400 ms"));
  EXPECT_EQ(a[1].owner, "app team");
  EXPECT_EQ(a[2].kind, "investigate");
  EXPECT_EQ(a[2].subject, ActionSubject::kHypothesis);
  EXPECT_EQ(a[2].subject_key, "prefix_cache_collapse");
  EXPECT_EQ(a[3].text, "restore the template");
  EXPECT_EQ(a.back().owner, "serving team + app team");
}

TEST(PlanActions, ShedTheGroupTheTopCauseNamesWhenNothingCanBeUndone) {
  DiagnosisReport r = Regression();
  r.hypotheses[0].shed_load_of = "tenant";
  GroupSplit ten{"tenant", {Row("newco", 0)}};
  ten.rows[0].contribution = 0.8;
  ten.rows[0].share_after = 0.3;
  r.groups.push_back(ten);
  r.label_changes.push_back({"template", "newco@v1", LabelChange::Kind::kNew, 0.3});
  const std::vector<Action> a = PlanActions(r);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a[0].text,
            "No deploy to roll back: rate-limit tenant newco (or move it to its own pool) now; it "
            "holds 80% of the p99 increase at 30% of the requests");
  EXPECT_EQ(a[0].subject, ActionSubject::kGroup);
  EXPECT_EQ(a[1].kind, "investigate");  // the new template is its tenant's: no rollback
}

TEST(PlanActions, RollBackNewTemplatesAndDeploysWhenNoChangeIsKnown) {
  DiagnosisReport r = Regression();
  r.label_changes = {{"tenant", "x", LabelChange::Kind::kNew, 0.1},
                     {"template", "app@v2", LabelChange::Kind::kNew, 0.4},
                     {"deploy", "d2", LabelChange::Kind::kNew, 1.0}};
  const std::vector<Action> a = PlanActions(r);
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[0].text,
            "Roll back the change behind \"template app@v2: new in the incident (40% of "
            "requests)\" (or flip its flag) now, before any analysis");
  EXPECT_EQ(a[0].owner, "app team");
  EXPECT_EQ(a[0].subject, ActionSubject::kLabelChange);
  EXPECT_EQ(a[0].subject_value, "app@v2");
  EXPECT_EQ(a[1].owner, "serving team");
  EXPECT_EQ(a[1].subject_key, "deploy");
  EXPECT_EQ(a[2].kind, "investigate");
}

// --- Charts ---------------------------------------------------------------------------

TEST(Cdf, PercentilesOfTheSortedValues) {
  EXPECT_TRUE(Cdf({}).empty());
  std::vector<double> v;
  for (int i = 1000; i > 0; --i) v.push_back(i);
  const auto c = Cdf(v);
  ASSERT_EQ(c.size(), 101u);
  EXPECT_EQ(c.front(), std::make_pair(11.0, 0.01));
  EXPECT_EQ(c[49], std::make_pair(501.0, 0.5));
  EXPECT_EQ(c.back(), std::make_pair(1000.0, 0.999));
}

TEST(BuildCharts, OnsetIsTheFirstIncidentBucketAboveOneAndAHalfTimesTheBaselineP99) {
  SpanTable t;
  for (int i = 0; i < 2000; ++i) {
    const double at = i * 0.1;
    AddSpanToTable(MakeSpan(i, at, at >= 150 ? 1.0 : 0.1), t);
  }
  DiagnosisInput in = BaselineThenIncident(t);
  in.options.time_buckets = 20;  // 10 buckets per window
  auto shape = ValidateInput(in);
  ASSERT_TRUE(shape.ok());
  Workspace ws(in, *shape);
  std::vector<std::string> notes;
  auto w = ComputeWindows(in, *shape, ws, notes);
  ASSERT_TRUE(w.ok());
  const Groups g = SplitGroups(in, *w, ws);
  const Charts c = BuildCharts(in, *w, g, g.splits, {0.1, 0.2}, {1.0}, ws);
  ASSERT_EQ(c.timeline.size(), 20u);
  EXPECT_DOUBLE_EQ(c.onset_s, 155);
  EXPECT_TRUE(c.group_series.empty());  // one tenant, one replica: nothing to compare
  EXPECT_EQ(c.cdf_before.size(), 101u);
}

}  // namespace
}  // namespace ttft::diag
