// -----------------------------------------------------------------------------
// File: report/tables.h (private to the report module)
// -----------------------------------------------------------------------------
//
// The tables the text, Markdown and HTML renderers share: the symptom rows and the
// decomposition's quantile cells.

#ifndef TTFT_REPORT_TABLES_H_
#define TTFT_REPORT_TABLES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "ttft/diagnose.h"

namespace ttft::report {

// One row of the symptom table: a figure before, after, and its change ratio.
struct SymRow {
  std::string name, before, after, change;
};

// The symptom table of a report, in the seed's order.
std::vector<SymRow> Symptoms(const DiagnosisReport& r);

// "p50 / p90 / p99" of one term (each as QuantileText, ttft/window_stats.h; "all <=300 ms" when the
// three are the same bound).
std::string Terms(const TermQuantiles& t);

// "tenant acme: hit rate 81% to 3%, p99 TTFT 420 ms to 2.10 s, 25% of the requests,
// 92% of the p99 increase". The share of the increase only when the report states
// shares (StatesShares); a label value new in the incident (a LabelChange) reads
// "template app@v2 (new in the incident): hit rate 0%, p99 TTFT 12.07 s, ...".
std::string Sentence(const DiagnosisReport& r, const Contribution& c);

// Whether the report states shares of the tail increase: only a regression has a
// significant increase to share out.
bool StatesShares(const DiagnosisReport& r);

// Why no share is stated, from the verdict and the p99 ratio: "too few requests ...",
// "p99 TTFT x0.91: no increase to share out" or "p99 TTFT x1.09 is within noise (not
// a significant increase): no share of it is stated". "" when StatesShares.
std::string SharesWithheld(const DiagnosisReport& r);

// One term's share of the tail increase: "92%" within [0, 100%] (rounding kept
// inside); "none" with the note " (it fell by 12 ms)" below, "all" with " (+8.25 s;
// the other terms fell)" above, from the term's own change `delta_s`; "n/a" when not
// finite. ShareText joins the two.
struct ShareWords {
  std::string share, note;
};
ShareWords ShareParts(double share, double delta_s);
std::string ShareText(double share, double delta_s);

// The decomposition's shares (front end, queue, prefill) as ShareText, or "n/a" each
// when !StatesShares.
struct TermShares {
  std::string front_end, queue, prefill;
};
TermShares Shares(const DiagnosisReport& r);

// Section 5's lines: each contribution (Sentence), then each label change that no
// contribution already names (a contribution of a new label value says so itself).
std::vector<std::string> WhereItLives(const DiagnosisReport& r);

// The attribution's lines (ttft/attribution.h), as every renderer prints them and the
// JSON report carries them (attribution.text): the headline (ttft::Headline); one line
// per cause in order of share: its share and interval, its single effect and what
// moved; the mitigation of each cause (its hypothesis' fix) in the same order; the two
// model checks with their numbers; the method, the assumptions and the changes the
// replay could not assess. Only the headline when it did not run.
struct AttributionText {
  std::string headline;
  std::vector<std::string> causes, mitigations, checks, notes;
};
AttributionText AttributionLines(const DiagnosisReport& r);

// Section 7 when there are no actions: "nothing to fix: no regression", or, for too
// few requests, that there is nothing to act on yet. No trailing period.
std::string NothingToFix(const DiagnosisReport& r);

}  // namespace ttft::report

#endif  // TTFT_REPORT_TABLES_H_
