// -----------------------------------------------------------------------------
// File: ttft/report.h
// -----------------------------------------------------------------------------
//
// Renderers of one DiagnosisReport (ttft/diagnose.h). The report model is built once;
// every format reads the same model, so text, Markdown, JSON and HTML never disagree.
// Evidence lines print their sentence; contributions, label changes and actions are
// data the renderers state (one file each: src/report/text.cc, markdown.cc, json.cc,
// html.cc; numbers through ttft/format.h). The JSON keeps schema 1: evidence,
// contributions and label_changes are arrays of the sentences.
//
//   * RenderText: terminal text; ANSI colour only when `colour` (the caller decides:
//     a TTY and no NO_COLOR).
//   * RenderMarkdown: ready to paste into a postmortem.
//   * ReportJson / RenderJson: the stable schema of docs/diagnosis.md.
//   * RenderHtml: one self-contained document (no network, no scripts, no fonts; a
//     Content-Security-Policy that admits only its own stylesheet, by sha256): the
//     seed's sections (#mitigate, #symptoms, #decomposition, #hypotheses, #where,
//     #magnitude, #fix) as HTML tables, each figure marked with its path in ReportJson
//     (data-json), beside inline SVG charts: TTFT CDF before/after on a log axis
//     (#chart-cdf), the slowest 1%'s front end, queue and prefill stacked
//     (#chart-stack), hit rate and p99 TTFT over time with the change marked
//     (#chart-timeline), small multiples per replica and tenant (#chart-replica-*,
//     #chart-tenant-*). Readable from 390 px wide (no sideways scrolling) and in print.
//     Every telemetry string is escaped.
//
// Example:
//
//   auto rep = ttft::Diagnose(input);
//   std::string html = ttft::RenderHtml(*rep);
//
// Thread safety: pure functions.

#ifndef TTFT_REPORT_H_
#define TTFT_REPORT_H_

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "ttft/diagnose.h"
#include "ttft/pipeline.h"

namespace ttft {

inline constexpr int kReportSchemaVersion = 1;

std::string RenderText(const DiagnosisReport& report, bool colour);
std::string RenderMarkdown(const DiagnosisReport& report);
nlohmann::json ReportJson(const DiagnosisReport& report);
std::string RenderJson(const DiagnosisReport& report);  // ReportJson(...).dump(2) + "\n"
std::string RenderHtml(const DiagnosisReport& report);

// Renderers of scenario runs (src/report/run.cc).
// The symptom table before and after, with ratios; ANSI colour only when `colour`.
std::string RenderSymptomTable(const WindowStats& baseline, const WindowStats& incident,
                               bool colour);
// One window's symptoms as a two-column table (a run with no change to compare).
std::string RenderSymptomColumn(const WindowStats& window);
// `ttft drill`'s text: the run, the symptom table, the seed's signature, the cost
// check, then the diagnosis as RenderText. REQUIRES: drill.run.diagnosis is set.
std::string RenderDrillText(const Drill& drill, bool colour);
// `ttft drill --format json`. REQUIRES: drill.run.diagnosis is set.
nlohmann::json DrillJson(const Drill& drill);

// Renderers of `ttft stats` (src/report/stats.cc): per group the count, rate, the
// quantiles of TTFT, queue, prefill, ITL and prompt tokens, and the hit rate.
// `skipped` is the number of input records skipped.
std::string RenderStatsText(const std::vector<GroupSummary>& groups, int64_t skipped);
nlohmann::json StatsJson(const std::vector<GroupSummary>& groups, int64_t skipped);
std::string RenderStatsCsv(const std::vector<GroupSummary>& groups);

// The report in `format` ("text", "markdown", "json" or "html"); InvalidArgument for
// another name. `colour` applies to text only.
Result<std::string> RenderReport(const DiagnosisReport& report, std::string_view format,
                                 bool colour);

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string HtmlEscape(std::string_view s);

}  // namespace ttft

#endif  // TTFT_REPORT_H_
