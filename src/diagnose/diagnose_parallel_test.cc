// Diagnose() with the two windows on two threads gives the report it gives in turn.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "ttft/diagnose.h"
#include "ttft/report.h"

namespace ttft {
namespace {

TEST(DiagnoseParallel, SameReportAsInTurn) {
  // 300,000 spans (above the two-thread threshold): a prefix-cache collapse of one
  // template after t = 1000 s, over 24 replicas in 2 regions and 4 tenants.
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> queue(-3.5, 1.0), slow_queue(-2.0, 1.2);
  std::uniform_int_distribution<int> tokens(200, 3000);
  SpanTable t;
  const int n = 300000;
  for (int i = 0; i < n; ++i) {
    Span s;
    s.request_id = "r" + std::to_string(i);
    s.arrival_s = 2000.0 * i / n;
    const bool after = s.arrival_s >= 1000;
    const int rep = static_cast<int>(rng() % 24), tenant = static_cast<int>(rng() % 4);
    s.replica = "rep-" + std::to_string(rep);
    s.region = rep < 12 ? "east" : "west";
    s.tenant = "tenant-" + std::to_string(tenant);
    s.model = "llama-3.3-70b";
    s.template_version = tenant == 0 ? (after ? "rag@v2" : "rag@v1") : "chat@v1";
    s.deploy = "d1";
    s.prompt_tokens = 4000 + tokens(rng);
    s.cached_tokens = tenant == 0 && after ? 0 : 3984;
    s.front_end_s = 0.003;
    s.queue_s = after ? slow_queue(rng) : queue(rng);
    s.prefill_s = static_cast<double>(s.prompt_tokens - s.cached_tokens) * 8e-5;
    s.ttft_s = s.front_end_s + s.queue_s + s.prefill_s;
    s.output_tokens = 50 + static_cast<int64_t>(rng() % 300);
    s.itl_mean_s = 0.025;
    s.itl_max_s = 0.06;
    s.decode_s = s.itl_mean_s * static_cast<double>(s.output_tokens - 1);
    s.e2e_s = s.ttft_s + s.decode_s;
    s.preemptions = 0;
    s.status = rng() % 250 == 0 ? RequestStatus::kError : RequestStatus::kOk;
    AddSpanToTable(s, t);
  }
  DiagnosisInput in;
  in.baseline = {&t, 0, 1000};
  in.incident = {&t, 1000, 2000};
  in.change_at_s = 1000;
  in.annotations.push_back({1000, "deploy_template", "rag", "rag@v1 -> rag@v2"});
  auto two = Diagnose(in);
  in.options.parallel = false;
  auto one = Diagnose(in);
  ASSERT_TRUE(two.ok());
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(RenderJson(*two), RenderJson(*one));
  EXPECT_EQ(ToString(two->verdict), "regression");
}

}  // namespace
}  // namespace ttft
