// Times on the command line (ttft/dataset.h): seconds or RFC 3339.
//
// RFC 3339 is parsed by hand rather than with std::regex: libstdc++'s regex matcher
// recurses per character and overflows the stack on long inputs (a fraction of a few
// thousand digits), and std::stod throws on out-of-range text.
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>
#include <string>

#include "ttft/dataset.h"
#include "ttft/format.h"

namespace ttft {
namespace {

// Reads exactly `n` digits at `pos` into `out`; false when they are not all digits.
bool Digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

Status Malformed(std::string_view s) {
  return Status::Invalid(fmt::format(
      "time \"{}\": expected seconds or an RFC 3339 time like 2025-06-01T12:00:00Z", s));
}

}  // namespace

Result<double> ParseTime(std::string_view s) {
  if (s.size() > 64 && s.find_first_of("Tt ") == std::string_view::npos) {
    return Malformed(s.substr(0, 64));
  }
  // Plain seconds: the whole text must be a finite number.
  {
    double v = 0;
    const char* first = s.data();
    const char* last = s.data() + s.size();
    if (!s.empty() && *first == '+') ++first;
    const auto [ptr, ec] = std::from_chars(first, last, v);
    if (!s.empty() && ec == std::errc() && ptr == last && std::isfinite(v)) return v;
  }
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!Digits(s, 0, 4, year) || s.size() < 19 || s[4] != '-' || !Digits(s, 5, 2, month) ||
      s[7] != '-' || !Digits(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      !Digits(s, 11, 2, hour) || s[13] != ':' || !Digits(s, 14, 2, minute) || s[16] != ':' ||
      !Digits(s, 17, 2, second)) {
    return Malformed(s);
  }
  size_t pos = 19;
  double fraction = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    const size_t start = pos;
    double scale = 0.1;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      if (pos - start < 9) {  // nanoseconds; further digits are below a double's precision
        fraction += (s[pos] - '0') * scale;
        scale /= 10;
      }
      ++pos;
    }
    if (pos == start) return Malformed(s);
  }
  int tz_sign = 0, tz_hour = 0, tz_minute = 0;
  const std::string_view tz = s.substr(pos);
  if (tz == "Z" || tz == "z") {
    tz_sign = 0;
  } else if (tz.size() == 6 && (tz[0] == '+' || tz[0] == '-') && Digits(tz, 1, 2, tz_hour) &&
             tz[3] == ':' && Digits(tz, 4, 2, tz_minute)) {
    tz_sign = tz[0] == '-' ? -1 : 1;
  } else {
    return Malformed(s);
  }
  // timegm normalises out-of-range fields (month 13 becomes next January): refuse them.
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (month < 1 || month > 12 || day < 1 ||
      day > kDays[month - 1] - (month == 2 && !leap ? 1 : 0) || hour > 23 || minute > 59 ||
      second > 60 || tz_hour > 23 || tz_minute > 59) {
    return Status::Invalid(
        fmt::format("time \"{}\": a field is out of range (RFC 3339: month 01-12, day of the "
                    "month, hour 00-23, minute 00-59, second 00-60)",
                    s));
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  double t = static_cast<double>(timegm(&tm)) + fraction;
  t -= tz_sign * (tz_hour * 3600 + tz_minute * 60);
  return t;
}

Result<TimeRange> ParseTimeRange(std::string_view s, std::string_view flag) {
  // RFC 3339 times hold colons too: split at the colon that leaves two valid times.
  for (size_t colon = s.find(':'); colon != std::string_view::npos;
       colon = s.find(':', colon + 1)) {
    auto a = ParseTime(s.substr(0, colon));
    auto b = ParseTime(s.substr(colon + 1));
    if (!a.ok() || !b.ok()) continue;
    if (!(*a < *b)) {
      // An empty or reversed range would select no span; said rather than analysed.
      return Status::Invalid(fmt::format("{} \"{}\": FROM ({}) must be before TO ({})", flag, s,
                                         numfmt::TimePoint(*a), numfmt::TimePoint(*b)));
    }
    return TimeRange{*a, *b};
  }
  if (s.find(':') == std::string_view::npos) {
    return Status::Invalid(fmt::format("{} \"{}\": expected FROM:TO", flag, s));
  }
  // Report the first part's or the second part's error as the old parser did.
  const size_t colon = s.find(':');
  TTFT_ASSIGN_OR_RETURN(double a, ParseTime(s.substr(0, colon)));
  TTFT_ASSIGN_OR_RETURN(double b, ParseTime(s.substr(colon + 1)));
  return TimeRange{a, b};
}

Status CheckFromTo(double from_s, double to_s) {
  if (std::isnan(from_s) || std::isnan(to_s) || !(from_s < to_s)) {
    return Status::Invalid(
        fmt::format("--from {} --to {}: not a window (--from must be before --to)", from_s, to_s));
  }
  return Status::Ok();
}

}  // namespace ttft
