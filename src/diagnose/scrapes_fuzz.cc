// libFuzzer target: a metrics-only diagnosis of two scrapes, from the parser to every
// report format. The input is two Prometheus expositions split at the first line
// "----": the baseline's scrape at t = 1000 s and the incident's at t = 1600 s, as
// `ttft diagnose --baseline A.prom --incident B.prom` reads them (DiagnosisInputOf by
// the process start, ttft/diagnose.h). Any error carries a message; a report renders in
// text, Markdown, JSON and HTML, and its JSON parses back.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ttft/dataset.h"
#include "ttft/diagnose.h"
#include "ttft/metrics.h"
#include "ttft/report.h"

namespace {

// One scrape as a loaded input; false when the parser refused it.
bool LoadScrape(std::string_view text, const char* name, double at_s, ttft::Dataset& d) {
  ttft::ReadReport report;
  ttft::ExpositionParseOptions options;
  options.source = name;
  auto snap = ttft::ParseExposition(text, options, report);
  if (!snap.ok()) {
    if (snap.status().message().empty()) __builtin_trap();
    return false;
  }
  snap->timestamp_s = at_s;
  d.snapshots.push_back(*std::move(snap));
  d.sources.emplace_back(name);
  d.first_s = d.last_s = at_s;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t cut = in.find("\n----\n");
  if (cut == std::string_view::npos) return 0;
  ttft::Dataset base, inc;
  if (!LoadScrape(in.substr(0, cut + 1), "a.prom", 1000, base) ||
      !LoadScrape(in.substr(cut + 6), "b.prom", 1600, inc)) {
    return 0;
  }
  auto input = ttft::DiagnosisInputOf(base, inc);
  if (!input.ok()) {
    if (input.status().message().empty()) __builtin_trap();
    return 0;
  }
  input->options.parallel = false;  // one core per libFuzzer process
  auto report = ttft::Diagnose(*input);
  if (!report.ok()) {
    if (report.status().message().empty()) __builtin_trap();
    return 0;
  }
  (void)ttft::RenderText(*report, /*colour=*/false);
  (void)ttft::RenderMarkdown(*report);
  (void)ttft::RenderHtml(*report);
  if (nlohmann::json::parse(ttft::RenderJson(*report), nullptr, false).is_discarded()) {
    __builtin_trap();
  }
  return 0;
}
