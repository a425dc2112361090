// ComputeWindowStats (ttft/diagnose.h): its quantiles are ttft::Quantile's exactly (it
// selects on float and int32 copies, and each selection only above the previous one).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ttft/diagnose.h"
#include "ttft/stats.h"

namespace ttft {
namespace {

// Bit-identical, NaN equal to NaN.
void ExpectSame(double got, double want, const char* what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what;
  } else {
    EXPECT_EQ(got, want) << what;
  }
}

TEST(WindowStats, QuantilesAreTtftQuantileExactly) {
  for (int n : {0, 1, 2, 3, 7, 100, 1001, 54321}) {
    std::mt19937_64 rng(static_cast<uint64_t>(n) + 1);
    std::lognormal_distribution<double> lat(-2, 1);
    std::uniform_int_distribution<int> tokens(1, 9000);
    SpanTable t;
    std::set<std::string> replicas;
    std::vector<double> ttft, queue, prefill, itl, itl_max, prompt, output, per_token;
    for (int i = 0; i < n; ++i) {
      Span s;
      s.request_id = "r" + std::to_string(i);
      s.arrival_s = i;
      s.replica = i % 3 ? "a" : "b";
      s.queue_s = i % 5 == 0 ? 0.25 : lat(rng);  // ties
      s.prefill_s = lat(rng);
      s.front_end_s = 0.003;
      s.ttft_s = s.front_end_s + s.queue_s + s.prefill_s;
      s.itl_mean_s = i % 11 == 0 ? NAN : lat(rng) / 10;  // missing values
      s.itl_max_s = s.itl_mean_s * 3;
      s.decode_s = 1;
      s.e2e_s = s.ttft_s + 1;
      s.prompt_tokens = tokens(rng);
      s.cached_tokens = i % 2 ? s.prompt_tokens / 2 : 0;
      s.output_tokens = i % 4 == 0 ? 100 : tokens(rng) / 10;
      s.status = i % 13 == 0 ? RequestStatus::kError : RequestStatus::kOk;
      AddSpanToTable(s, t);
      if (s.status != RequestStatus::kOk) continue;
      replicas.insert(s.replica);
      // What the table holds (float columns), as double copies.
      const size_t r = t.size() - 1;
      ttft.push_back(t.ttft_s()[r]);
      queue.push_back(t.queue_s()[r]);
      prefill.push_back(t.prefill_s()[r]);
      if (!std::isnan(t.itl_mean_s()[r])) itl.push_back(t.itl_mean_s()[r]);
      if (!std::isnan(t.itl_max_s()[r])) itl_max.push_back(t.itl_max_s()[r]);
      prompt.push_back(static_cast<double>(s.prompt_tokens));
      output.push_back(static_cast<double>(s.output_tokens));
      const int64_t unc = s.prompt_tokens - s.cached_tokens;
      if (unc >= 256) {
        per_token.push_back(t.prefill_s()[r] * 1000.0 / static_cast<double>(unc));
      }
    }
    std::vector<uint32_t> rows(t.size());
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint32_t>(i);
    const WindowStats w = ComputeWindowStats(t, rows, 0, n + 1.0);
    SCOPED_TRACE(n);
    ExpectSame(w.ttft_s.p50, Quantile(ttft, 0.5), "ttft p50");
    ExpectSame(w.ttft_s.p90, Quantile(ttft, 0.9), "ttft p90");
    ExpectSame(w.ttft_s.p99, Quantile(ttft, 0.99), "ttft p99");
    ExpectSame(w.queue_s.p50, Quantile(queue, 0.5), "queue p50");
    ExpectSame(w.queue_s.p90, Quantile(queue, 0.9), "queue p90");
    ExpectSame(w.queue_s.p99, Quantile(queue, 0.99), "queue p99");
    ExpectSame(w.prefill_s.p99, Quantile(prefill, 0.99), "prefill p99");
    ExpectSame(w.itl_p50_s, Quantile(itl, 0.5), "itl p50");
    ExpectSame(w.itl_max_p99_s, Quantile(itl_max, 0.99), "itl max p99");
    ExpectSame(w.prompt_tokens_p50, n == 0 ? kMissing : Quantile(prompt, 0.5), "prompt p50");
    ExpectSame(w.prompt_tokens_p99, n == 0 ? kMissing : Quantile(prompt, 0.99), "prompt p99");
    ExpectSame(w.output_tokens_p99, Quantile(output, 0.99), "output p99");
    ExpectSame(w.prefill_s_per_1k_uncached, Quantile(per_token, 0.5), "prefill per 1k");
    EXPECT_EQ(w.ok, static_cast<int64_t>(ttft.size()));
    EXPECT_EQ(w.replicas, static_cast<int64_t>(replicas.size()));
  }
}

}  // namespace
}  // namespace ttft
