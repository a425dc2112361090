// -----------------------------------------------------------------------------
// File: report/report_testing.h (test-only, private to the report module)
// -----------------------------------------------------------------------------
//
// The synthetic incident the report tests diagnose: 4,000 requests at 10/s, the
// baseline window [0, 200) s and the incident [200, 400) s. Every span starts from the
// same defaults; the test's `edit` changes what the test is about.
//
//   SpanTable t;
//   FillTwoWindows(t, [](Span& s, const SyntheticRow& row) {
//     if (row.marked) s.tenant = "acme";
//     if (row.after && row.marked) { s.cached_tokens = 0; s.queue_s += 1.0; }
//   });
//   auto report = Diagnose(TwoWindowInput(t));

#ifndef TTFT_REPORT_REPORT_TESTING_H_
#define TTFT_REPORT_REPORT_TESTING_H_

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "ttft/diagnose.h"
#include "ttft/window_stats.h"

namespace ttft {

struct SyntheticRow {
  int i = 0;            // 0..3999, in arrival order
  bool after = false;   // in the incident window
  bool marked = false;  // one request in four: the group the incident is about
};

// Fills `t` with the 4,000 spans. Defaults: tenant "globex", replicas "r-0"/"r-1"
// alternating, region us-east, llama-3.3-70b, template app@v1, deploy v1, 3,000 prompt
// tokens (2,500 cached), 100 output tokens, front end 10 ms, queue 10-109 ms by i,
// decode 2 s, ITL 20 ms. Then `edit`; then, unless `edit` set it, prefill is 70 us per
// uncached token, and TTFT and E2E are their sums.
inline void FillTwoWindows(SpanTable& t,
                           const std::function<void(Span&, const SyntheticRow&)>& edit) {
  for (int i = 0; i < 4000; ++i) {
    Span s;
    const SyntheticRow row{i, i * 0.1 >= 200, i % 4 == 0};
    s.request_id = "r" + std::to_string(i);
    s.arrival_s = i * 0.1;
    s.tenant = "globex";
    s.replica = i % 2 ? "r-0" : "r-1";
    s.region = "us-east";
    s.model = "llama-3.3-70b";
    s.template_version = "app@v1";
    s.deploy = "v1";
    s.prompt_tokens = 3000;
    s.cached_tokens = 2500;
    s.output_tokens = 100;
    s.front_end_s = 0.01;
    s.queue_s = 0.01 + (i % 100) * 0.001;
    s.prefill_s = std::numeric_limits<double>::quiet_NaN();
    edit(s, row);
    if (std::isnan(s.prefill_s)) s.prefill_s = (s.prompt_tokens - s.cached_tokens) * 7e-5;
    s.ttft_s = s.front_end_s + s.queue_s + s.prefill_s;
    s.itl_mean_s = s.itl_max_s = 0.02;
    s.decode_s = 2;
    s.e2e_s = s.ttft_s + s.decode_s;
    AddSpanToTable(s, t);
  }
}

// The two windows of FillTwoWindows' table, the change at 200 s.
inline DiagnosisInput TwoWindowInput(const SpanTable& t) {
  DiagnosisInput in;
  in.baseline = {&t, 0, 200};
  in.incident = {&t, 200, 400};
  in.change_at_s = 200;
  return in;
}

}  // namespace ttft

#endif  // TTFT_REPORT_REPORT_TESTING_H_
