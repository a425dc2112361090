// Prometheus text exposition writer (ttft/metrics.h).
//
// Matches prometheus_client's output byte for byte where it matters to readers:
// sorted labels, `le` after the other labels in name order, floats like Python's
// repr with Go-style exponents (prometheus_client/utils.py floatToGoString).
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "ttft/metrics.h"

namespace ttft {
namespace {

// Python repr of a finite double: shortest round-trip digits, scientific notation
// when the decimal exponent is < -4 or >= 16, otherwise positional with at least
// one digit after the point.
std::string PythonRepr(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);  // e.g. "-1.2345e+03"
  size_t e = sci.find('e');
  std::string_view mant = sci.substr(0, e);
  int exp10 = std::atoi(std::string(sci.substr(e + 1)).c_str());
  bool neg = !mant.empty() && mant[0] == '-';
  if (neg) mant.remove_prefix(1);
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = neg ? "-" : "";
  if (exp10 < -4 || exp10 >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) {
      out += ".";
      out += digits.substr(1);
    }
    out += fmt::format("e{}{:02d}", exp10 < 0 ? '-' : '+', std::abs(exp10));
    return out;
  }
  if (exp10 < 0) {
    out += "0.";
    out += std::string(static_cast<size_t>(-exp10 - 1), '0');
    out += digits;
    return out;
  }
  size_t int_len = static_cast<size_t>(exp10) + 1;
  if (digits.size() <= int_len) {
    out += digits;
    out += std::string(int_len - digits.size(), '0');
    out += ".0";
  } else {
    out += digits.substr(0, int_len);
    out += ".";
    out += digits.substr(int_len);
  }
  return out;
}

void AppendLabels(const Labels& labels, std::string_view le, std::string& out) {
  if (labels.empty() && le.empty()) return;
  out.push_back('{');
  bool first = true;
  bool le_done = le.empty();
  auto emit = [&](std::string_view k, std::string_view v) {
    if (!first) out.push_back(',');
    first = false;
    out += k;
    out += "=\"";
    for (char c : v) {
      if (c == '\\')
        out += "\\\\";
      else if (c == '"')
        out += "\\\"";
      else if (c == '\n')
        out += "\\n";
      else
        out.push_back(c);
    }
    out.push_back('"');
  };
  for (const auto& [k, v] : labels) {
    if (!le_done && k > "le") {
      emit("le", le);
      le_done = true;
    }
    emit(k, v);
  }
  if (!le_done) emit("le", le);
  out.push_back('}');
}

}  // namespace

std::string_view ToString(MetricType t) {
  switch (t) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
    case MetricType::kSummary: return "summary";
    case MetricType::kUntyped: return "untyped";
  }
  return "untyped";
}

std::string FormatPromFloat(double d) {
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  if (std::isnan(d)) return "NaN";
  std::string s = PythonRepr(d);
  size_t dot = s.find('.');
  // Go switches to exponents sooner than Python (floatToGoString).
  if (d > 0 && dot != std::string::npos && dot > 6) {
    std::string mantissa = s.substr(0, 1) + "." + s.substr(1, dot - 1);
    while (!mantissa.empty() && (mantissa.back() == '0' || mantissa.back() == '.')) {
      mantissa.pop_back();
    }
    return fmt::format("{}e+0{}", mantissa, dot - 1);
  }
  return s;
}

std::string FormatExposition(const MetricSnapshot& snapshot) {
  std::string out;
  out.reserve(4096);
  for (const MetricFamily& f : snapshot.families) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, ToString(f.type));
    for (const MetricSeries& s : f.series) {
      // One sample line: name + suffix, the labels (with `le` when given), the value.
      auto sample = [&](std::string_view suffix, std::string_view le, double value) {
        out += f.name;
        out += suffix;
        AppendLabels(s.labels, le, out);
        out += ' ';
        out += FormatPromFloat(value);
        out += '\n';
      };
      if (f.type == MetricType::kHistogram) {
        const HistogramValue& h = s.histogram;
        for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
          sample("_bucket", FormatPromFloat(h.upper_bounds[i]), h.cumulative_counts[i]);
        }
        sample("_bucket", "+Inf", h.count);
        sample("_count", "", h.count);
        sample("_sum", "", h.sum);
      } else {
        sample("", "", s.value);
      }
    }
  }
  return out;
}

}  // namespace ttft
