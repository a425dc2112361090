// One entry point over the report formats (ttft/report.h).
#include <fmt/format.h>

#include "ttft/report.h"

namespace ttft {

Result<std::string> RenderReport(const DiagnosisReport& report, std::string_view format,
                                 bool colour) {
  if (format == "text") return RenderText(report, colour);
  if (format == "markdown") return RenderMarkdown(report);
  if (format == "json") return RenderJson(report);
  if (format == "html") return RenderHtml(report);
  return Status::Invalid(fmt::format("--format {}: expected text, markdown, json or html", format));
}

}  // namespace ttft
