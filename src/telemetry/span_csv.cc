// The span CSV reader: a header row naming the columns (span keys, or sources mapped
// by --columns), then one span per line, through the CSV tokenizer (ttft/csv.h).
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "telemetry/input_formats.h"
#include "telemetry/span_record.h"
#include "ttft/csv.h"

namespace ttft::internal {
namespace {

// ---------------------------------------------------------------------------
// CSV: a header row naming the columns, RFC 4180 quoting (no newlines in fields).
// ---------------------------------------------------------------------------
class CsvParser final : public LineParser {
 public:
  explicit CsvParser(RecordContext& ctx) : ctx_(ctx), fields_(ctx.options().columns) {}

  Status ParseLine(const char* p, size_t len, size_t, int64_t line, bool unterminated) override {
    const std::string_view text(p, len);
    if (IsBlank(text)) return Status::Ok();
    // One line is one record (no newlines in quoted fields): the tokenizer drops one
    // '\r' before its end, as the record's line end.
    CsvReader csv(text, CsvOptions{.trim_spaces = true});
    if (!csv.Next(cells_)) {
      return ctx_.Bad(line, unterminated ? "truncated record" : "malformed csv",
                      "malformed CSV: unbalanced quotes");
    }
    if (columns_.empty()) {
      size_t cursor = 0;
      for (const std::string& name : cells_) {
        const int idx = fields_.Lookup(name, cursor);
        columns_.push_back(idx);
      }
      ttft_column_ = false;
      for (int c : columns_)
        ttft_column_ = ttft_column_ || (c >= 0 && fields_.entry(c).field == kTtft);
      return Status::Ok();
    }
    if (cells_.size() != columns_.size()) {
      return ctx_.Bad(line, unterminated ? "truncated record" : "malformed csv",
                      fmt::format("{}{} fields, header has {}",
                                  unterminated ? "truncated record at end of input: " : "",
                                  cells_.size(), columns_.size()));
    }
    SpanRecord r;
    for (size_t c = 0; c < cells_.size(); ++c) {
      if (columns_[c] < 0) continue;
      const FieldTable::Entry& entry = fields_.entry(columns_[c]);
      const std::string& cell = cells_[c];
      const int f = entry.field;
      if (cell.empty() || cell == "null") continue;
      if (IsDouble(f) || IsInt(f)) {
        if (LooksNonFinite(cell)) {
          return ctx_.Bad(line, "invalid value",
                          fmt::format("{} is {} (NaN/Infinity)", entry.source, cell));
        }
        double d;
        auto res = std::from_chars(cell.data(), cell.data() + cell.size(), d);
        if (res.ec != std::errc() || res.ptr != cell.data() + cell.size()) {
          return ctx_.Bad(line, "invalid value",
                          fmt::format("{}: expected a number, got \"{}\"", entry.source, cell));
        }
        if (IsDouble(f)) {
          *DoubleSlot(r, f) = d * entry.scale;
        } else {
          if (d != std::floor(d) || std::fabs(d) > 9e15) {
            return ctx_.Bad(line, "invalid value",
                            fmt::format("{}: expected an integer, got \"{}\"", entry.source, cell));
          }
          SetInt(r, f, static_cast<int64_t>(d));
        }
      } else if (f == kRequestId) {
        r.request_id = cell;
      } else if (f == kStatus) {
        auto st = ParseRequestStatus(cell);
        if (!st) {
          return ctx_.Bad(line, "invalid value", fmt::format("status: unknown value \"{}\"", cell));
        }
        r.status = *st;
      } else {
        r.labels[static_cast<size_t>(f - kReplica)] = cell;
      }
    }
    return ctx_.Emit(r, line, ttft_column_);
  }
  Status Finish() override { return ctx_.Finish(); }

 private:
  RecordContext& ctx_;
  FieldTable fields_;
  std::vector<int> columns_;
  std::vector<std::string> cells_;
  bool ttft_column_ = false;
};

}  // namespace

bool DetectCsv(const FormatProbe& probe) {
  return probe.first_line.find(',') != std::string_view::npos;
}

std::unique_ptr<LineParser> MakeCsvParser(RecordContext& ctx, bool) {
  return std::make_unique<CsvParser>(ctx);
}

}  // namespace ttft::internal
