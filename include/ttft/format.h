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
//   ttft::numfmt::X(ttft::numfmt::Ratio(0.5, 1.0));  // "x2.00"
//
// Thread safety: pure functions.

#ifndef TTFT_FORMAT_H_
#define TTFT_FORMAT_H_

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>

namespace ttft::numfmt {

// after / before; NaN unless both are finite and before > 0.
inline double Ratio(double before, double after) {
  if (!std::isfinite(before) || !std::isfinite(after) || before <= 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return after / before;
}

// Seconds: "12 ms" below one second, "2.50 s" from one second.
inline std::string Secs(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (v < 1) return fmt::format("{:.0f} ms", v * 1000);
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
// A change ratio ("x1.71").
inline std::string X(double ratio) {
  return std::isfinite(ratio) ? fmt::format("x{:.2f}", ratio) : "n/a";
}

}  // namespace ttft::numfmt

#endif  // TTFT_FORMAT_H_
