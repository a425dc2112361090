// -----------------------------------------------------------------------------
// File: ttft/format.h
// -----------------------------------------------------------------------------
//
// How a report states a number: seconds, percentages, token counts and change ratios,
// with "n/a" for a figure the input cannot give (NaN). The diagnosis writes these into
// its evidence sentences and the renderers (ttft/report.h) into their tables, so the
// same figure reads the same everywhere. Part of the core module: the diagnosis and
// the report both use it, and neither may depend on the other's internals.
//
// Example:
//
//   using ttft::numfmt::Secs;
//   Secs(0.0123);  // "12 ms"
//   Secs(2.5);     // "2.50 s"
//   Secs(0.00042); // "0.42 ms"
//   ttft::numfmt::X(ttft::numfmt::Ratio(0.5, 1.0));  // "x2.00"
//
// The second half, ttft::escape, states a string taken from data (a tenant, a replica,
// a template name, an event's detail, a selector) safely in one output format: one
// helper per format, used by every writer of that format (src/core/format.cc).
//
// Thread safety: pure functions.

#ifndef TTFT_FORMAT_H_
#define TTFT_FORMAT_H_

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>
#include <string_view>

namespace ttft::numfmt {

// after / before; NaN unless both are finite and before > 0.
inline double Ratio(double before, double after) {
  if (!std::isfinite(before) || !std::isfinite(after) || before <= 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return after / before;
}

// Seconds: "12 ms" below one second, "2.50 s" from one second; a magnitude below
// 1 ms but not zero in two significant digits ("0.42 ms", "1e-09 ms"), so a small
// figure never reads as "0 ms" beside a ratio that says it is not; from 1e9 s on four
// significant digits ("2.2e+13 s"), as Fixed. A negative figure takes the unit of its
// magnitude ("-2.50 s").
inline std::string Secs(double v) {
  if (!std::isfinite(v)) return "n/a";
  const double mag = std::fabs(v);
  if (mag > 0 && mag < 1e-3) return fmt::format("{:.2g} ms", v * 1000);
  if (mag < 0.9995) return fmt::format("{:.0f} ms", v * 1000);  // not "1000 ms"
  if (mag >= 1e9) return fmt::format("{:.4g} s", v);
  return fmt::format("{:.2f} s", v);
}
// A fraction as a whole percentage ("81%") or with one decimal ("81.3%").
inline std::string Pct(double v) {
  return std::isfinite(v) ? fmt::format("{:.0f}%", v * 100) : "n/a";
}
inline std::string Pct1(double v) {
  return std::isfinite(v) ? fmt::format("{:.1f}%", v * 100) : "n/a";
}
// A count or token figure, rounded ("3120").
inline std::string Num(double v) { return std::isfinite(v) ? fmt::format("{:.0f}", v) : "n/a"; }
// A fixed-point figure ("0.125" for Fixed(0.125, 3)); "n/a" when not finite (never "nan").
// From 1e9 on, four significant digits ("2.2e+13"): such a figure is a sign of broken
// input, and its digits would break a report's columns.
inline std::string Fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "n/a";
  if (std::fabs(v) >= 1e9) return fmt::format("{:.4g}", v);
  return fmt::format("{:.{}f}", v, decimals);
}
// A change ratio ("x1.71").
inline std::string X(double ratio) {
  return std::isfinite(ratio) ? fmt::format("x{:.2f}", ratio) : "n/a";
}

// A p-value in `digits` significant digits ("4.1e-75"); one below 1e-300 as "< 1e-300":
// a normal-approximation p-value (erfc of a z over about 37) underflows to 0 there, and
// "0" would claim certainty; "n/a" when not finite.
inline std::string PValue(double p, int digits = 2) {
  if (!std::isfinite(p)) return "n/a";
  if (p < 1e-300) return "< 1e-300";
  return fmt::format("{:.{}g}", p, digits);
}
// "p = 4.1e-75", "p < 1e-300" or "p = n/a", for a sentence.
inline std::string PClause(double p, int digits = 2) {
  const std::string v = PValue(p, digits);
  return v[0] == '<' ? "p " + v : "p = " + v;
}

// A window [from_s, to_s): seconds as "[60,300) s", or, when both ends are Unix epoch
// seconds (from 2001-09-09, 1e9 s, on), RFC 3339 UTC clock times
// "[2026-10-02T17:03:38Z, 2026-10-03T08:48:38Z)", the end as a time of day when on the
// same day ("[2026-10-02T17:03:38Z, 17:33:38Z)"). "n/a" for a non-finite end. Seconds
// are whole unless that would show a window as empty or write a bound of 1e15 or more
// digit by digit: then the shortest exact form ("[10,10.000000000001) s", "1e+300").
std::string Window(double from_s, double to_s);
// A time point: "t=300 s", or "2026-10-02T17:03:38Z" for an epoch time (as Window;
// "t=1e+300 s" from 1e15 s on).
std::string TimePoint(double t_s);

}  // namespace ttft::numfmt

namespace ttft::escape {

// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or values
// above U+10FFFF), as JSON text must be (RFC 8259 section 8.1).
bool IsValidUtf8(std::string_view s);

// Appends the UTF-8 encoding of `cp` to `out` (RFC 3629 section 3).
// REQUIRES: cp <= U+10FFFF (a surrogate is encoded as is: the caller refuses those).
void AppendUtf8(std::string& out, char32_t cp);

// Terminal text: every control character (C0 but tab, DEL, C1, and the bidirectional
// overrides U+202A-U+202E and U+2066-U+2069) and every byte that is not valid UTF-8 is
// shown as a visible escape (\n, \r, \x1b, \u0085, \u202e), so data cannot move the
// cursor, recolour the terminal, set the window title or start a new line.
std::string Terminal(std::string_view s);

// GitHub-flavoured Markdown inline text (https://github.github.com/gfm/): the result
// renders as the literal text, inside a paragraph, a list item or a table cell.
// Backslash-escapes what would open markup, and only that, so the text stays readable:
// \ ` < | ~ & always; ] before ( [ or : (a link, an image, a reference definition);
// * unless between two spaces and _ unless between two alphanumerics (emphasis); and
// at the start, where data may begin a block inside a list item, [ # > and the list
// markers "- ", "+ ", "--", "12. ", "3) ". CR, LF and tab become spaces; other
// control characters and invalid UTF-8 are dropped. So no heading, list, quote,
// link, image, raw HTML, autolink in angle brackets, code span, emphasis, entity or
// table cell can start from data. (GFM's extended autolinks of bare http(s):// and
// www. text stay links: they cannot carry javascript:.)
std::string Markdown(std::string_view s);

// One RFC 4180 CSV field: quoted when it holds a comma, a double quote, CR or LF, with
// embedded quotes doubled; a cell a spreadsheet would run as a formula (first character
// = + - @, tab or CR; OWASP "CSV Injection") is prefixed with a single quote, unless it
// is a number such as -1.5.
// `always_quote` quotes every field (RFC 4180 allows it).
std::string CsvField(std::string_view s, bool always_quote = false);
// A number in its shortest round-trip form ("0.2", "1e-07"); "" when not finite. A
// float32 prints in the float's own shortest form (0.2f as "0.2", not as the double
// 0.20000000298023224), and so does a double that is exactly a float32 value: the span
// table stores times as float32, so its nearest-rank quantiles are such widened floats.
// (Reading "0.2" back gives the float again.)
std::string CsvNumber(double v);
std::string CsvNumber(float v);

}  // namespace ttft::escape

#endif  // TTFT_FORMAT_H_
