// Properties every span-reader fuzz target checks on what a reader accepted: the
// table holds exactly the records the report counts as read (nothing lost or added
// silently), every label serialises as JSON (valid UTF-8), and every accepted span
// passes the record checks the readers promise (ValidateSpan). A violation traps, so
// libFuzzer keeps the input.
#ifndef TTFT_TELEMETRY_SPAN_FUZZ_CHECKS_H_
#define TTFT_TELEMETRY_SPAN_FUZZ_CHECKS_H_

#include <cmath>

#include "ttft/format.h"
#include "ttft/input.h"
#include "ttft/spans.h"

namespace ttft::internal {

inline void CheckAcceptedSpans(const SpanTable& table, const ReadReport& report) {
  if (static_cast<int64_t>(table.size()) != report.records_read) __builtin_trap();
  if (!escape::IsValidUtf8(report.Summary())) __builtin_trap();
  for (size_t i = 0; i < table.size(); ++i) {
    const Span s = table.Get(i);
    for (const std::string* label : {&s.request_id, &s.tenant, &s.replica, &s.region, &s.model,
                                     &s.template_version, &s.deploy}) {
      if (!escape::IsValidUtf8(*label)) __builtin_trap();
    }
    if (std::isinf(s.ttft_s) || s.ttft_s < 0 || std::isinf(s.queue_s) || s.queue_s < 0) {
      __builtin_trap();
    }
    if (s.prompt_tokens >= 0 && s.cached_tokens > s.prompt_tokens) __builtin_trap();
  }
}

}  // namespace ttft::internal

#endif  // TTFT_TELEMETRY_SPAN_FUZZ_CHECKS_H_
