// The CSV tokenizer (ttft/csv.h): RFC 4180 records.
#include "ttft/csv.h"

namespace ttft {

bool CsvReader::AtRecordEnd(size_t pos) const {
  const size_t n = text_.size();
  return pos >= n || text_[pos] == '\n' ||
         (text_[pos] == '\r' && (pos + 1 == n || text_[pos + 1] == '\n'));
}

bool CsvReader::Next(std::vector<std::string>& fields) {
  const std::string_view s = text_;
  const size_t n = s.size();
  if (error_ != CsvError::kNone || pos_ >= n) return false;
  record_line_ = line_;
  size_t count = 0;
  size_t i = pos_;
  // A line with nothing before its end: zero fields.
  if (s[i] == '\n' || (s[i] == '\r' && (i + 1 == n || s[i + 1] == '\n'))) {
    i += s[i] == '\r' ? 1 : 0;
    if (i < n) ++i;  // the '\n'
    ++line_;
    pos_ = i;
    fields.clear();
    return true;
  }
  for (;;) {
    if (count == fields.size()) fields.emplace_back();
    std::string& cell = fields[count++];
    cell.clear();
    if (i < n && s[i] == '"') {
      ++i;
      for (;;) {
        if (i >= n) {
          error_ = CsvError::kUnterminatedQuote;
          pos_ = n;
          return false;
        }
        if (s[i] == '"') {
          if (i + 1 < n && s[i + 1] == '"') {
            cell.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        if (s[i] == '\n') ++line_;
        cell.push_back(s[i++]);
      }
      if (i < n && s[i] != ',' && !AtRecordEnd(i)) {
        error_ = CsvError::kTextAfterQuote;
        pos_ = i;
        return false;
      }
    } else {
      size_t end = i;
      while (end < n && s[end] != ',' && s[end] != '\n') ++end;
      std::string_view v = s.substr(i, end - i);
      if ((end == n || s[end] == '\n') && v.ends_with('\r')) v.remove_suffix(1);
      if (options_.trim_spaces) {
        while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
        while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      }
      cell.assign(v);
      i = end;
    }
    if (i < n && s[i] == '\r' && AtRecordEnd(i)) ++i;  // after a quoted last field
    if (i >= n || s[i] == '\n') {
      if (i < n) {
        ++i;
        ++line_;
      }
      pos_ = i;
      fields.resize(count);
      return true;
    }
    ++i;  // the comma
  }
}

}  // namespace ttft
