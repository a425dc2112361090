// -----------------------------------------------------------------------------
// File: ttft/whatif.h
// -----------------------------------------------------------------------------
//
// The pre-deploy what-if (issue 11, `ttft lint OLD --diff NEW`): what a template change
// will do to the prefix-cache hit rate and to p50/p99 TTFT, predicted through the
// simulator before anything is deployed; and, for two corpora, what the change does to
// the predicted hit rate. docs/template.md ("Diff mode") describes the mapping.
//
// Template diff. Each version is linted (LintTemplate, ttft/lint.h), which gives its
// rendered prompt length and its cacheable prefix in tokens. In the scenario, the named
// template's segments are replaced, for the tenants that use it, by
//
//   static       the version's cacheable prefix (tokens)
//   per_request  the rest of the version's render (prompt_tokens - prefix)
//   kept         the scenario's own segments that stand for request content the template
//                only wraps (the user's question, retrieved text), with their lengths
//
// Everything after the first non-static byte counts as per_request (a per_tenant or
// per_user value there is not credited with the hits it would get: the prediction of
// the hit rate is a lower bound in that case). The scenario then runs in steady state,
// once with each version, for each of `seeds` seeds (the same seeds for both versions, so
// the differences are paired): its events (deploys, restarts, traffic changes) are
// dropped and the window is the whole run after analysis.warmup_s.
//
// Uncertainty: for every figure, the mean over seeds, the range (min-max) and the 95%
// Student-t interval of the mean (mean +- t_{0.975, n-1} s / sqrt(n); none for n = 1).
//
// Thread safety: the functions are re-entrant; PredictTemplateChange runs the
// simulations on `threads` threads of its own.

#ifndef TTFT_WHATIF_H_
#define TTFT_WHATIF_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/core.h"
#include "ttft/fleet.h"
#include "ttft/lint.h"

namespace ttft {

struct WhatIfOptions {
  std::string template_name;  // the scenario's template the change is to; REQUIRES: set
  std::string tenant;         // only this tenant ("": every tenant using the template)
  int seeds = 5;              // REQUIRES: >= 1; seed i is the scenario's seed + i
  // The scenario segments kept as they are (request content). Unset: every per_request
  // segment whose length is a distribution (not a fixed count) is kept.
  bool keep_segments_set = false;
  std::vector<std::string> keep_segments;
  // Violations: a predicted p99 TTFT rise above this fraction in every seed (paired), or
  // a predicted drop of the template's tenants' hit rate above this many points (0-1) in
  // every seed. < 0: not checked.
  double max_p99_increase = 0.10;
  double max_hit_rate_drop = 0.05;
  int threads = 0;  // 0: the hardware's
};

// A figure over seeds.
struct OverSeeds {
  std::vector<double> values;  // one per seed, in seed order
  double mean = 0, min = 0, max = 0;
  double ci_low = 0, ci_high = 0;  // 95% Student-t interval of the mean (= mean for n = 1)
};
OverSeeds Summarize(std::vector<double> values);

// One version's predicted behaviour (window: the whole run after the warm-up).
struct WhatIfArm {
  OverSeeds hit_rate;  // the whole fleet, vLLM's token hit rate
  OverSeeds p50_ttft_s, p99_ttft_s;
  OverSeeds tenant_hit_rate;  // the tenants using the template
  OverSeeds tenant_p50_ttft_s, tenant_p99_ttft_s;
  OverSeeds requests;              // requests in the window (fleet)
  int64_t static_tokens = 0;       // the template's static segment
  int64_t per_request_tokens = 0;  // the rest of its render
};

struct WhatIfReport {
  std::string old_path, new_path, scenario, template_name;
  TemplateLintReport old_lint, new_lint;
  std::vector<std::string> tenants;   // the tenants switched
  std::vector<std::string> replaced;  // scenario segments the template stands for
  std::vector<std::string> kept;      // scenario segments kept
  std::vector<uint64_t> seeds;
  double window_from_s = 0, window_to_s = 0;
  WhatIfArm old_arm, new_arm;
  // new / old of each seed (paired): p99 TTFT and p50 TTFT; new - old of the tenants'
  // hit rate.
  OverSeeds p99_ratio, p50_ratio, tenant_hit_rate_change;
  double max_p99_increase = 0, max_hit_rate_drop = 0;
  std::vector<Finding> findings;  // TTFT-W001, TTFT-W002 (docs/template.md)
  bool violation() const;
};

// Predicts the change from `old_lint` to `new_lint` (two versions of one template,
// linted with the same vars file and tokenizer) on `scenario`. Errors
// (kInvalidArgument, naming the scenario file and field): no template of that name, no
// tenant using it, a kept segment the template's versions do not have; and the
// simulator's.
Result<WhatIfReport> PredictTemplateChange(const TemplateLintReport& old_lint,
                                           const TemplateLintReport& new_lint,
                                           const Scenario& scenario, const WhatIfOptions& options);

// Two corpora's predicted prefix-cache behaviour side by side (TTFT is predicted for
// template diffs only: docs/template.md says why).
struct CorpusDiffReport {
  CorpusReport old_report, new_report;
  double max_hit_rate_drop = 0;
  std::vector<Finding> findings;  // TTFT-W002
  bool violation() const;
};
CorpusDiffReport DiffCorpora(CorpusReport old_report, CorpusReport new_report,
                             double max_hit_rate_drop);

// "text", "json", "sarif" or "github"; findings point into the new template (corpus).
Result<std::string> FormatWhatIfReport(const WhatIfReport& r, std::string_view format);
Result<std::string> FormatCorpusDiffReport(const CorpusDiffReport& r, std::string_view format);

}  // namespace ttft

#endif  // TTFT_WHATIF_H_
