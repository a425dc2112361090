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
//   * RenderHtml: one self-contained file (no network, no scripts, no fonts) with
//     inline SVG charts: TTFT CDF before/after on a log axis (#chart-cdf), queue versus
//     prefill p99 stacked (#chart-stack), hit rate and p99 TTFT over time with the
//     change marked (#chart-timeline), small multiples per replica and tenant
//     (#chart-replica-*, #chart-tenant-*). Every telemetry string is escaped.
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

namespace ttft {

inline constexpr int kReportSchemaVersion = 1;

std::string RenderText(const DiagnosisReport& report, bool colour);
std::string RenderMarkdown(const DiagnosisReport& report);
nlohmann::json ReportJson(const DiagnosisReport& report);
std::string RenderJson(const DiagnosisReport& report);  // ReportJson(...).dump(2) + "\n"
std::string RenderHtml(const DiagnosisReport& report);

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string HtmlEscape(std::string_view s);

}  // namespace ttft

#endif  // TTFT_REPORT_H_
