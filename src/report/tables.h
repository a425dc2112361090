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

// Quantile i (TermQuantiles::kQs) of a term: its value, or for a quantile from
// histogram buckets that they do not resolve "<=300 ms" (in the first bucket) or
// ">=10 s" (above the highest finite bound) instead of an interpolated figure.
std::string QuantileCell(const TermQuantiles& t, size_t i);

// "p50 / p90 / p99" of one term (each as QuantileCell; "all <=300 ms" when the three are
// the same bound).
std::string Terms(const TermQuantiles& t);

// "tenant acme: hit rate 81% to 3%, p99 TTFT 420 ms to 2.10 s, 25% of the requests,
// 92% of the p99 increase".
std::string Sentence(const Contribution& c);

}  // namespace ttft::report

#endif  // TTFT_REPORT_TABLES_H_
