// -----------------------------------------------------------------------------
// File: ttft/csv.h
// -----------------------------------------------------------------------------
//
// The CSV tokenizer of every CSV the toolkit reads (span CSV, docs/telemetry.md; the
// measurement tables of ttft/validate.h): RFC 4180 records.
//
//   * Fields are separated by commas; a record ends at "\n", "\r\n" or the end of the
//     text. One '\r' before a record's end is not part of its last field.
//   * A field whose first byte is '"' is quoted: it runs to the next lone '"' and may
//     hold commas, newlines and doubled quotes ("" for "). The closing quote must be
//     followed by a comma or the record's end (kTextAfterQuote otherwise); a quoted
//     field still open at the end of the text is kUnterminatedQuote.
//   * Any other field is unquoted: its bytes up to the next comma or record end, taken
//     as they are (a '"' inside it is an ordinary byte). With `trim_spaces`, spaces
//     around it are dropped (and a field starting with a space is unquoted).
//   * A line with nothing before its end is a record of zero fields; callers skip it.
//
// Example:
//
//   ttft::CsvReader csv(text);
//   std::vector<std::string> fields;
//   while (csv.Next(fields)) Use(csv.record_line(), fields);
//   if (csv.error() != ttft::CsvError::kNone) ...;  // at line csv.line()
//
// Thread safety: a CsvReader is not thread-safe.

#ifndef TTFT_CSV_H_
#define TTFT_CSV_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ttft {

struct CsvOptions {
  bool trim_spaces = false;  // drop spaces around unquoted fields
};

enum class CsvError : uint8_t {
  kNone,
  kUnterminatedQuote,  // a quoted field open at the end of the text
  kTextAfterQuote,     // a closing quote followed by neither a comma nor the record's end
};

// Reads the records of `text` one at a time. The text must outlive the reader.
class CsvReader {
 public:
  explicit CsvReader(std::string_view text, CsvOptions options = {})
      : text_(text), options_(options) {}

  // Reads the next record into `fields` (resized to its number of fields, reusing their
  // storage). False at the end of the text or at an error (error() tells which); after
  // an error the reader stays at it.
  bool Next(std::vector<std::string>& fields);

  // The 1-based line on which the last record read started.
  int64_t record_line() const { return record_line_; }
  // The line the reader is on: after an error, the line where it was found.
  int64_t line() const { return line_; }
  CsvError error() const { return error_; }

 private:
  bool AtRecordEnd(size_t pos) const;
  std::string_view text_;
  CsvOptions options_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  int64_t record_line_ = 0;
  CsvError error_ = CsvError::kNone;
};

}  // namespace ttft

#endif  // TTFT_CSV_H_
