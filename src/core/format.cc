// Numbers, times and data strings in reports (ttft/format.h).
#include "ttft/format.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>

namespace ttft {
namespace numfmt {
namespace {

// 2001-09-09T01:46:40Z: below it a time is an offset in the input's own time base.
constexpr double kEpochFloor_s = 1e9;

bool IsEpoch(double t_s) {
  return std::isfinite(t_s) && t_s >= kEpochFloor_s && t_s < 253402300800;
}

std::string Rfc3339(double t_s) {
  const double whole = std::floor(t_s);
  const auto secs = static_cast<std::time_t>(whole);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900,
                                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  const auto ms = static_cast<int>(std::lround((t_s - whole) * 1000));
  if (ms > 0 && ms < 1000) out += fmt::format(".{:03}", ms);
  return out + "Z";
}

}  // namespace

std::string Window(double from_s, double to_s) {
  if (!std::isfinite(from_s) || !std::isfinite(to_s)) return "n/a";
  if (IsEpoch(from_s) && IsEpoch(to_s)) {
    const std::string a = Rfc3339(from_s), b = Rfc3339(to_s);
    // The same day: the end as a time of day ("[2026-10-02T17:03:37Z, 17:33:37Z)").
    if (a.compare(0, 11, b, 0, 11) == 0) return fmt::format("[{}, {})", a, b.substr(11));
    return fmt::format("[{}, {})", a, b);
  }
  const bool whole =
      std::round(from_s) != std::round(to_s) && std::fabs(from_s) < 1e15 && std::fabs(to_s) < 1e15;
  if (!whole) return fmt::format("[{},{}) s", from_s, to_s);
  return fmt::format("[{:.0f},{:.0f}) s", from_s, to_s);
}

std::string TimePoint(double t_s) {
  if (!std::isfinite(t_s)) return "n/a";
  if (IsEpoch(t_s)) return Rfc3339(t_s);
  if (std::fabs(t_s) >= 1e15) return fmt::format("t={} s", t_s);
  return fmt::format("t={:.0f} s", t_s);
}

}  // namespace numfmt

namespace escape {
namespace {

// Decodes one UTF-8 sequence at s[i]; returns its length (0 when invalid) and the code
// point. Overlong forms, surrogates and values above U+10FFFF are invalid (RFC 3629).
size_t DecodeUtf8(std::string_view s, size_t i, char32_t* cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t len = 0;
  char32_t v = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    v = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    v = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    v = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b & 0x3F);
  }
  if ((len == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
      (len == 4 && (v < 0x10000 || v > 0x10FFFF))) {
    return 0;
  }
  *cp = v;
  return len;
}

bool IsControl(char32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  // ASCII runs eight bytes at a time (labels and ids are almost always ASCII).
  size_t start = 0;
  for (; start + 8 <= s.size(); start += 8) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + start, 8);
    if ((w & 0x8080808080808080ULL) != 0) break;
  }
  char32_t cp = 0;
  for (size_t i = start; i < s.size();) {
    const size_t len = DecodeUtf8(s, i, &cp);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

void AppendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Terminal(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const size_t len = DecodeUtf8(s, i, &cp);
    if (len == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    if (cp == '\t' || !IsControl(cp)) {
      out.append(s.substr(i, len));
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x80) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(cp));
    } else {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
    }
    i += len;
  }
  return out;
}

std::string Markdown(std::string_view s) {
  auto word = [](char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
  };
  auto space = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; };
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  bool line_start = true;  // no content yet: the block markers count here only
  size_t digits = 0;       // digits since the start ("12. " would open an ordered list)
  for (size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const size_t len = DecodeUtf8(s, i, &cp);
    if (len == 0) {  // not UTF-8: dropped, as the other controls
      ++i;
      continue;
    }
    const std::string_view bytes = s.substr(i, len);
    // Outside the string, a neighbour counts as punctuation (the strictest case).
    const char prev = i > 0 ? s[i - 1] : '!';
    i += len;
    const char next = i < s.size() ? s[i] : '!';
    const bool marker_end = i == s.size() || space(next);  // "- x", "1. x", "# x"
    if (cp == '\n' || cp == '\r' || cp == '\t') {
      out += ' ';
      continue;
    }
    if (IsControl(cp)) continue;
    bool esc = false;
    switch (cp) {
      case '\\':
      case '`':
      case '<':
      case '|':
      case '~':
      case '&': esc = true; break;
      // A link or image needs "](" or "][", a reference definition "]:".
      case ']': esc = next == '(' || next == '[' || next == ':'; break;
      case '[': esc = line_start; break;
      // Emphasis: * between two spaces and _ between two alphanumerics are inert.
      case '*': esc = !(space(prev) && space(next)); break;
      case '_': esc = !(word(prev) && word(next)); break;
      case '#':
      case '>': esc = line_start; break;
      case '+': esc = line_start && marker_end; break;
      case '-': esc = line_start && (marker_end || next == '-'); break;
      case '.':
      case ')': esc = line_start && digits > 0 && marker_end; break;
      default: break;
    }
    if (esc) out += '\\';
    out.append(bytes);
    if (cp >= '0' && cp <= '9' && line_start) {
      ++digits;
    } else if (cp != ' ' || digits > 0) {
      line_start = false;
    }
  }
  return out;
}

namespace {

// A number a spreadsheet reads as a number, not a formula ("-1.5", "+3", "1e-07").
bool IsNumber(std::string_view s) {
  if (s.empty()) return false;
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  const std::string_view rest = s.substr(i);
  double v = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
  return ec == std::errc() && end == rest.data() + rest.size() && !rest.empty() && rest[0] != '-' &&
         rest[0] != '+';
}

}  // namespace

std::string CsvField(std::string_view s, bool always_quote) {
  std::string cell;
  if (!s.empty() &&
      (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r') &&
      !IsNumber(s)) {
    cell = "'";  // OWASP: the cell is read as text, not run as a formula
  }
  cell.append(s);
  if (!always_quote && cell.find_first_of(",\"\r\n") == std::string::npos) return cell;
  std::string out = "\"";
  for (char ch : cell) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string CsvNumber(double v) {
  if (!std::isfinite(v)) return "";
  const auto f = static_cast<float>(v);
  if (static_cast<double>(f) == v) return fmt::format("{}", f);  // a float32 value, widened
  return fmt::format("{}", v);
}
std::string CsvNumber(float v) { return std::isfinite(v) ? fmt::format("{}", v) : ""; }

}  // namespace escape
}  // namespace ttft
