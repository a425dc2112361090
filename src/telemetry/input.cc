// Reading inputs (ttft/input.h): read reports and whole files or their heads. Formats
// and their detection are input_formats.cc; the byte stream (gzip, stdin) is
// input_stream.cc.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "telemetry/input_stream.h"
#include "ttft/format.h"
#include "ttft/input.h"

namespace ttft {

namespace {

// `s`, or when it is not UTF-8 its terminal form (bytes as visible \xNN escapes).
std::string Utf8(std::string_view s) {
  return escape::IsValidUtf8(s) ? std::string(s) : escape::Terminal(s);
}

}  // namespace

void ReadReport::Skip(std::string_view file, int64_t line, std::string_view category,
                      std::string reason) {
  ++records_skipped;
  ++skipped_by_category[std::string(category)];
  if (issues.size() < kMaxIssues) {
    // Reasons quote the data: bytes that are not UTF-8 are kept as visible escapes, so
    // every issue can be written as JSON and shown on a terminal.
    if (!escape::IsValidUtf8(reason)) reason = escape::Terminal(reason);
    issues.push_back(RecordIssue{Utf8(file), line, std::move(reason)});
  }
}

std::string ReadReport::Summary() const {
  std::string out;
  if (records_skipped > 0) {
    out = fmt::format("{} record{} skipped:", records_skipped, records_skipped == 1 ? "" : "s");
    bool first = true;
    for (const auto& [category, n] : skipped_by_category) {
      out += fmt::format("{} {} {}", first ? "" : ",", n, category);
      first = false;
    }
    for (const RecordIssue& issue : issues) {
      // Line 0: not known (a record judged after reading, e.g. a repeat across files).
      out += issue.line > 0
                 ? fmt::format("\n  {}:{}: {}", Utf8(issue.file), issue.line, Utf8(issue.reason))
                 : fmt::format("\n  {}: {}", Utf8(issue.file), Utf8(issue.reason));
    }
    if (static_cast<int64_t>(issues.size()) < records_skipped) {
      out +=
          fmt::format("\n  ... and {} more", records_skipped - static_cast<int64_t>(issues.size()));
    }
  }
  for (const std::string& w : warnings) {
    if (!out.empty()) out += '\n';
    out += "warning: " + Utf8(w);
  }
  return out;
}

Result<std::string> ReadInputHead(const std::string& path, size_t max_bytes) {
  TTFT_ASSIGN_OR_RETURN(auto in, internal::InputStream::Open(path));
  std::string out(max_bytes, '\0');
  size_t filled = 0;
  while (filled < max_bytes) {
    TTFT_ASSIGN_OR_RETURN(size_t n, in->Read(out.data() + filled, max_bytes - filled));
    if (n == 0) break;
    filled += n;
  }
  out.resize(filled);
  return out;
}

Result<InputFormat> ProbeInputFormat(const std::string& path, std::string* guess_note) {
  if (path == "-") return InputFormat::kSpanJsonl;
  if (!std::filesystem::exists(path))
    return Status::NotFound(fmt::format("{}: no such file", path));
  TTFT_ASSIGN_OR_RETURN(std::string head, ReadInputHead(path, 1 << 16));
  return DetectFormatOf(path, head, guess_note);
}

Result<std::string> ReadInputFile(const std::string& path, size_t max_bytes) {
  TTFT_ASSIGN_OR_RETURN(auto in, internal::InputStream::Open(path));
  std::string out;
  size_t filled = 0;
  for (;;) {
    if (filled > max_bytes) {
      return Status::Invalid(
          fmt::format("{}: more than {} bytes{} (the limit for a file read "
                      "whole)",
                      path, max_bytes, in->gzip() ? " after decompression" : ""));
    }
    // One byte past the limit tells an over-long file from one of exactly max_bytes.
    out.resize(std::min(std::max<size_t>(filled * 2, filled + (1 << 16)), max_bytes + 1));
    TTFT_ASSIGN_OR_RETURN(size_t n, in->Read(out.data() + filled, out.size() - filled));
    if (n == 0) break;
    filled += n;
  }
  out.resize(filled);
  return out;
}

}  // namespace ttft
