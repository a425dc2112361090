// Flag groups and output shared by the sub-commands (cli/commands.h).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string_view>

#include "cli/commands.h"
#include "ttft/format.h"

namespace ttft::cli {

void AddReaderFlags(CLI::App& app, ReaderFlags& flags) {
  app.add_option("--input-format", flags.input_format,
                 "auto, jsonl, csv, otlp, span-sink, prom or prom-json")
      ->capture_default_str();
  app.add_flag("--strict", flags.strict, "stop at the first bad record (exit 65)");
  app.add_option("--columns", flags.columns,
                 "column mapping, e.g. ttft_s=ttft_ms:ms,request_id=id");
}

Result<LoadOptions> ToLoadOptions(const ReaderFlags& flags) {
  LoadOptions options;
  const auto format = ParseInputFormat(flags.input_format);
  if (!format)
    return Status::Invalid(fmt::format("--input-format {}: unknown", flags.input_format));
  options.read.format = *format;
  options.read.strict = flags.strict;
  if (!flags.columns.empty()) {
    TTFT_ASSIGN_OR_RETURN(options.read.columns, ColumnMap::Parse(flags.columns));
  }
  return options;
}

namespace {
bool progress_shown = false;
}  // namespace

std::function<void(double, double)> ProgressPrinter(const std::string& name, bool quiet) {
  progress_shown = false;
  if (quiet || !StderrIsTty()) return {};
  const auto start = std::chrono::steady_clock::now();
  return [name, start](double sim_s, double fraction) {
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (wall < 1.0) return;  // only runs longer than a second show progress
    progress_shown = true;
    std::fprintf(stderr, "\r  simulating %s: %5.1f%%  t=%.0f s  (%.1f s wall)", name.c_str(),
                 fraction * 100, sim_s, wall);
    std::fflush(stderr);
  };
}

void EndProgress() {
  if (progress_shown) std::fprintf(stderr, "\r\033[K");
  progress_shown = false;
}

void PrintReadSummary(const ReadReport& report) {
  const std::string summary = report.Summary();
  if (summary.empty()) return;
  // A line per issue; each quotes a file name and data, whose control characters are
  // shown as escapes (ttft/format.h).
  size_t start = 0;
  while (start <= summary.size()) {
    size_t end = summary.find('\n', start);
    if (end == std::string::npos) end = summary.size();
    fmt::print(stderr, "{}\n",
               escape::Terminal(std::string_view(summary).substr(start, end - start)));
    start = end + 1;
  }
}

Status WriteOutput(const std::string& text, const std::string& out) {
  if (out.empty()) {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
        std::fflush(stdout) != 0) {
      return Status::IoError("standard output: write failed");
    }
    return Status::Ok();
  }
  std::ofstream f(out, std::ios::binary);
  f << text;
  f.close();
  if (!f.good()) return Status::IoError(out + ": write failed");
  return Status::Ok();
}

}  // namespace ttft::cli
