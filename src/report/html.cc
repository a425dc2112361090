// The self-contained HTML report with inline SVG charts (ttft/report.h). No scripts,
// no external resources: the page renders offline and under a strict CSP.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ttft/format.h"
#include "ttft/report.h"

namespace ttft {

std::string HtmlEscape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

namespace {

using numfmt::Pct;
using numfmt::Secs;

struct Line {
  std::string name;
  std::string colour;
  std::vector<std::pair<double, double>> pts;  // finite (x, y)
  bool right_axis = false;                     // y in [0, 1] on the right axis
};

constexpr double kW = 640, kH = 260, kL = 60, kR = 50, kT = 28, kB = 36;

std::string AxisLabel(double v, bool seconds) {
  if (!seconds) return fmt::format("{:.0f}%", v * 100);
  return Secs(v);
}

// A line chart. `log_x`: x on a log10 axis. `marker_x`: a vertical dashed line.
std::string LineChart(const std::string& id, const std::string& title,
                      const std::vector<Line>& lines, bool log_x, double marker_x, bool y_seconds,
                      double width = kW, double height = kH) {
  double x0 = INFINITY, x1 = -INFINITY, y1 = 0;
  for (const Line& l : lines) {
    for (auto [x, y] : l.pts) {
      if (log_x && x <= 0) continue;
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      if (!l.right_axis) y1 = std::max(y1, y);
    }
  }
  std::string o = fmt::format(
      "<svg id=\"{}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" "
      "height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"{}\">\n",
      HtmlEscape(id), width, height, width, height, HtmlEscape(title));
  o +=
      fmt::format("<text x=\"{:.0f}\" y=\"16\" class=\"title\">{}</text>\n", kL, HtmlEscape(title));
  if (!(x1 > x0)) {
    o += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" class=\"na\">no data</text>\n</svg>\n", kL,
                     height / 2);
    return o;
  }
  if (y1 <= 0) y1 = 1;
  const double pw = width - kL - kR, ph = height - kT - kB;
  auto fx = [&](double x) {
    if (log_x)
      return kL + pw * (std::log10(x) - std::log10(x0)) / (std::log10(x1) - std::log10(x0));
    return kL + pw * (x - x0) / (x1 - x0);
  };
  auto fy = [&](double y, bool right) { return kT + ph * (1 - y / (right ? 1.0 : y1 * 1.05)); };
  o += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"frame\"/>\n", kL,
      kT, pw, ph);
  for (int i = 0; i <= 4; ++i) {
    const double v = y1 * 1.05 * i / 4;
    o += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\" text-anchor=\"end\">{}</text>\n", kL - 4,
        fy(v, false) + 4, HtmlEscape(AxisLabel(v, y_seconds)));
  }
  bool has_right = false;
  for (const Line& l : lines) has_right |= l.right_axis;
  if (has_right) {
    for (int i = 0; i <= 4; ++i) {
      o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">{:.0f}%</text>\n",
                       kL + pw + 4, fy(i / 4.0, true) + 4, i * 25.0);
    }
  }
  // x ticks
  if (log_x) {
    for (double d = std::pow(10, std::floor(std::log10(x0))); d <= x1 * 1.0001; d *= 10) {
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = d * m;
        if (v < x0 || v > x1) continue;
        o += fmt::format(
            "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\" text-anchor=\"middle\">{}</text>\n",
            fx(v), kT + ph + 14, HtmlEscape(Secs(v)));
      }
    }
  } else {
    for (int i = 0; i <= 4; ++i) {
      const double v = x0 + (x1 - x0) * i / 4;
      o += fmt::format(
          "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\" text-anchor=\"middle\">{:.0f} s</text>\n",
          fx(v), kT + ph + 14, v);
    }
  }
  if (std::isfinite(marker_x) && marker_x >= x0 && marker_x <= x1) {
    o += fmt::format(
        "<line id=\"{}-change\" class=\"marker\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" "
        "y2=\"{:.1f}\"/><text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">change</text>\n",
        HtmlEscape(id), fx(marker_x), fx(marker_x), kT, kT + ph, fx(marker_x) + 3, kT + 10);
  }
  double legend_x = kL + 8;
  for (const Line& l : lines) {
    std::string pts;
    for (auto [x, y] : l.pts) {
      if (!std::isfinite(x) || !std::isfinite(y) || (log_x && x <= 0)) continue;
      pts += fmt::format("{:.1f},{:.1f} ", fx(x), fy(y, l.right_axis));
    }
    o += fmt::format("<polyline class=\"line\" stroke=\"{}\" points=\"{}\"/>\n", l.colour, pts);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"legend\" fill=\"{}\">{}</text>\n",
                     legend_x, kT + 14, l.colour, HtmlEscape(l.name));
    legend_x += 14 + 7.0 * static_cast<double>(l.name.size());
  }
  o += "</svg>\n";
  return o;
}

std::string StackChart(const DiagnosisReport& r) {
  const Decomposition& d = r.decomposition;
  struct Bar {
    const char* name;
    double fe, q, p;
  };
  const Bar bars[2] = {
      {"baseline", d.tail_before_front_end, d.tail_before_queue, d.tail_before_prefill},
      {"incident", d.tail_after_front_end, d.tail_after_queue, d.tail_after_prefill}};
  double top = 0;
  for (const Bar& b : bars) {
    const double s = (std::isfinite(b.fe) ? b.fe : 0) + (std::isfinite(b.q) ? b.q : 0) +
                     (std::isfinite(b.p) ? b.p : 0);
    top = std::max(top, s);
  }
  if (top <= 0) top = 1;
  std::string o = fmt::format(
      "<svg id=\"chart-stack\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"{:.0f}\" "
      "height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"queue versus "
      "prefill\">\n<text x=\"{:.0f}\" y=\"16\" class=\"title\">Slowest 1%: mean queue + prefill "
      "+ front end (stacked)</text>\n",
      kW, kH, kW, kH, kL);
  const double ph = kH - kT - kB;
  for (int i = 0; i < 2; ++i) {
    const Bar& b = bars[i];
    const double x = kL + 40 + i * 200;
    double y = kT + ph;
    auto seg = [&](double v, const char* cls, const char* name) {
      if (!std::isfinite(v) || v <= 0) return;
      const double h = ph * v / top;
      y -= h;
      o += fmt::format(
          "<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"120\" height=\"{:.1f}\"><title>{} "
          "{}</title></rect>\n",
          cls, x, y, h, name, HtmlEscape(Secs(v)));
    };
    seg(b.fe, "fe", "front end");
    seg(b.q, "queue", "queue");
    seg(b.p, "prefill", "prefill");
    o += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">{} (queue {}, prefill {})</text>\n", x,
        kT + ph + 14, b.name, HtmlEscape(Secs(b.q)), HtmlEscape(Secs(b.p)));
  }
  o += fmt::format(
      "<text x=\"{:.0f}\" y=\"{:.0f}\" class=\"legend\" fill=\"#d62728\">queue</text><text "
      "x=\"{:.0f}\" y=\"{:.0f}\" class=\"legend\" fill=\"#1f77b4\">prefill</text>\n",
      kL + 480, kT + 30, kL + 480, kT + 48);
  o += "</svg>\n";
  return o;
}

std::vector<std::pair<double, double>> Pts(const std::vector<TimePoint>& tl, bool hit) {
  std::vector<std::pair<double, double>> p;
  for (const TimePoint& t : tl) {
    const double v = hit ? t.hit_rate : t.ttft_p99_s;
    if (std::isfinite(v)) p.emplace_back(t.t_s, v);
  }
  return p;
}

}  // namespace

std::string RenderHtml(const DiagnosisReport& r) {
  std::string o =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'\">\n<title>ttft diagnosis</title>\n<style>\n"
      "body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;color:#222}"
      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}"
      "td:first-child,th:first-child{text-align:left}.chart{border:1px solid #eee;margin:4px}"
      ".title{font-size:13px;font-weight:600}.tick{font-size:10px;fill:#555}.legend{font-size:11px}"
      ".frame{fill:none;stroke:#999}.line{fill:none;stroke-width:1.6}.marker{stroke:#000;"
      "stroke-dasharray:4 3}.queue{fill:#d62728}.prefill{fill:#1f77b4}.fe{fill:#999}"
      ".na{font-size:12px;fill:#999}.regression{color:#b00}.no_regression{color:#070}"
      ".small{display:inline-block}\n</style></head><body>\n";
  o += "<h1>TTFT regression diagnosis</h1>\n";
  o += fmt::format("<p id=\"verdict\" class=\"{0}\"><b>Verdict: {0}</b> — {1}</p>\n",
                   ToString(r.verdict), HtmlEscape(r.verdict_reason));
  if (r.verdict == Verdict::kRegression) {
    o += "<h2>1. Mitigate now</h2><ul>\n";
    for (const Action& a : r.actions) {
      if (a.kind == "mitigate") {
        o += fmt::format("<li>{} <i>(owner: {})</i></li>\n", HtmlEscape(a.text),
                         HtmlEscape(a.owner));
      }
    }
    o += "</ul>\n";
  }
  o += "<h2>2. Symptoms and decomposition</h2>\n";
  // TTFT CDF before/after on a log axis.
  std::vector<Line> cdf = {{"baseline", "#2ca02c", r.cdf_before, false},
                           {"incident", "#d62728", r.cdf_after, false}};
  std::vector<Line> cdf_swapped;
  for (const Line& l : cdf) {
    cdf_swapped.push_back(l);  // (seconds, fraction): fraction on the right axis
    cdf_swapped.back().right_axis = true;
  }
  o += LineChart("chart-cdf", "TTFT CDF, before and after (log time axis)", cdf_swapped, true, NAN,
                 false);
  o += StackChart(r);
  std::vector<Line> tl = {{"p99 TTFT", "#d62728", Pts(r.timeline, false), false},
                          {"hit rate (right axis)", "#1f77b4", Pts(r.timeline, true), true}};
  o += LineChart("chart-timeline", "p99 TTFT and prefix-cache hit rate over time", tl, false,
                 r.change_at_s, true);
  o += "<pre>" + HtmlEscape(RenderText(r, false)) + "</pre>\n";
  o += "<h2>Small multiples: p99 TTFT over time per replica and tenant</h2>\n";
  int n_rep = 0, n_ten = 0;
  for (const GroupSeries& g : r.group_series) {
    const int idx = g.dimension == "replica" ? n_rep++ : n_ten++;
    std::vector<Line> l = {{"p99 TTFT", "#d62728", Pts(g.points, false), false},
                           {"hit", "#1f77b4", Pts(g.points, true), true}};
    o += "<div class=\"small\">" +
         LineChart(fmt::format("chart-{}-{}", g.dimension, idx),
                   fmt::format("{} {}", g.dimension, g.value), l, false, r.change_at_s, true, 320,
                   170) +
         "</div>\n";
  }
  o += "</body></html>\n";
  return o;
}

}  // namespace ttft
