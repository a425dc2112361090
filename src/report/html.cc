// The self-contained HTML report (ttft/report.h): the seed's sections as HTML tables
// built from the report model, with inline SVG charts beside the numbers they show.
//
// One file, no scripts, no external resources. The Content-Security-Policy allows
// nothing but the page's one <style> element, named by its sha256 (report/sha256.h),
// so an injected element could neither load nor run anything; every string from the
// telemetry is escaped (HtmlEscape) on top of that. No element has a style attribute
// (the policy would block it): SVG colours are presentation attributes.
//
// Every figure in a table is a <span data-json="PATH"> whose text is the JSON report's
// value at PATH (ReportJson, "a.b[2].c") as the other formats print it; a change ratio
// is <span data-json-ratio="BEFORE AFTER">; a string from the JSON is
// <span data-json-text="PATH">. tests/browser/check_report.mjs compares them with
// `--format json` of the same run.
//
// Layout: a column of at most 75rem; a section's table and its chart side by side
// from 60rem, stacked below. Each table sits in a size container and turns into one
// block per row (each cell labelled by its column, data-label) when the container is
// narrower than the table needs, so nothing is wider than the page at 390 px.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "report/sha256.h"
#include "report/tables.h"
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
using numfmt::Pct1;
using numfmt::Ratio;
using numfmt::Secs;
using numfmt::X;

// The stylesheet: the only style the policy admits (by its hash). Style() adds the
// stacking rules of the tables.
constexpr std::string_view kStyle = R"CSS(
:root{--fg:#1d1d1f;--mute:#5a5a5f;--line:#d4d4d8;--bg2:#f5f5f7;--red:#c0271d;--green:#1a7f37}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
margin:0 auto;padding:1rem;max-width:75rem;overflow-wrap:anywhere}
h1{font-size:1.5rem;margin:.2rem 0 .6rem}
h2{font-size:1.2rem;margin:2rem 0 .6rem;padding-top:.6rem;border-top:2px solid var(--line)}
h3{font-size:1rem;margin:1rem 0 .4rem}
p,ul,dl{margin:.4rem 0}
code{font:0.92em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--bg2);
padding:0 .2em;border-radius:3px}
nav ol{display:flex;flex-wrap:wrap;gap:.2rem 1rem;padding:0;margin:.4rem 0;list-style:none}
nav a{color:var(--mute)}
details summary{cursor:pointer;color:var(--mute)}
.verdict{font-size:1.05rem;padding:.6rem .8rem;border-left:6px solid var(--mute);background:var(--bg2)}
.verdict.regression{border-color:var(--red)}
.verdict.no_regression{border-color:var(--green)}
.verdict b{font-size:1.15rem}
.regression b{color:var(--red)}.no_regression b{color:var(--green)}
.note{color:var(--mute)}
.pair{display:grid;grid-template-columns:minmax(0,1fr);gap:1rem 2rem;align-items:start}
@media (min-width:60rem){.pair{grid-template-columns:minmax(0,1fr) minmax(0,1fr)}
.pair.wide{grid-template-columns:minmax(0,3fr) minmax(0,2fr)}}
.charts{display:grid;gap:.6rem;min-width:0}
.tw{container-type:inline-size;min-width:0;margin:.4rem 0}
table{border-collapse:collapse;width:100%}
caption{text-align:left;font-weight:600;padding:.2rem 0}
th,td{border-bottom:1px solid var(--line);padding:.25rem .5rem;text-align:right;vertical-align:top;
overflow-wrap:break-word}
td.t,code{overflow-wrap:anywhere}
[data-json],[data-json-ratio]{white-space:nowrap}.when[data-json],.bound[data-json]{white-space:normal}
th{font-weight:600}thead th{background:var(--bg2);font-size:.9rem}
td.t,th.t,th[scope=row]{text-align:left}
tbody th[scope=row]{font-weight:500}
.arrow{color:var(--mute)}
.hyp{border:1px solid var(--line);border-radius:6px;padding:.4rem .9rem;margin:.6rem 0}
.hyp h3{margin:.3rem 0}
dl{display:grid;grid-template-columns:minmax(0,11rem) minmax(0,1fr);gap:.2rem .8rem}
dt{color:var(--mute)}dd{margin:0}
@media (max-width:36rem){dl{grid-template-columns:minmax(0,1fr)}dd{margin-bottom:.3rem}}
figure.fig{margin:0;min-width:0;max-width:40rem;border:1px solid #ececef;padding:.3rem .4rem}
figcaption{font-size:.85rem;font-weight:600}
svg.chart{display:block;width:100%;height:auto}
.splits{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,38rem),1fr));gap:0 2rem}
.multiples{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,15rem),1fr));gap:.5rem}
.tick{font-size:11px;fill:#555}
.legend{font-size:11px}
.frame{fill:none;stroke:#999}
.grid{stroke:#ececef}
.line{fill:none;stroke-width:1.8}
.marker{stroke:#000;stroke-dasharray:4 3}
.queue{fill:#d62728}.prefill{fill:#1f77b4}.fe{fill:#8c8c8c}
.na{font-size:12px;fill:#999}
@media print{body{max-width:none;padding:0;font-size:10pt}nav{display:none}
.pair,.pair.wide{grid-template-columns:minmax(0,1fr) minmax(0,1fr)}
h2{break-after:avoid}tr,.hyp,figure.fig{break-inside:avoid}
.verdict,thead th,code{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
)CSS";

// A time in the inputs' time base: seconds since 1970 from this value on (2001-09-09),
// else seconds from an origin of the input's own (a simulation's start).
constexpr double kEpochFloor_s = 1e9;

bool IsEpoch(double t_s) { return std::isfinite(t_s) && t_s >= kEpochFloor_s; }

// kStyle, and for each table class the rules that turn its rows into labelled blocks
// when its container is narrower than the table needs: s2 (up to four short columns)
// below 20rem, s4 (five) below 28rem, s5 (wide or long text) below 36rem.
const std::string& Style() {
  static const std::string* const css = [] {
    auto* o = new std::string(kStyle);
    for (auto [cls, rem] : {std::pair{"s2", 20}, std::pair{"s4", 28}, std::pair{"s5", 36}}) {
      *o += fmt::format(
          "@container (max-width:{1}rem){{table.{0} thead{{display:none}}\n"
          "table.{0},table.{0} caption,table.{0} tbody,table.{0} tr,table.{0} th,table.{0} td"
          "{{display:block;width:auto}}\n"
          "table.{0} tr{{border-bottom:1px solid var(--line);padding:.3rem 0}}\n"
          "table.{0} th,table.{0} td{{border:0;text-align:left;padding:.05rem .2rem}}\n"
          "table.{0} td[data-label]::before{{content:attr(data-label) \": \";color:var(--mute)}}\n"
          "table.{0} td:empty{{display:none}}table.{0} th[scope=row]{{font-weight:600}}}}\n",
          cls, rem);
    }
    return o;
  }();
  return *css;
}

std::tm Utc(double t_s) {
  const auto t = static_cast<std::time_t>(std::floor(t_s));
  std::tm tm{};
  gmtime_r(&t, &tm);
  return tm;
}

// "2026-10-01 14:23:38 UTC" for an epoch time, else "300 s".
std::string When(double t_s) {
  if (!std::isfinite(t_s)) return "n/a";
  if (!IsEpoch(t_s)) return fmt::format("{:.0f} s", t_s);
  const std::tm tm = Utc(t_s);
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

// A time axis tick: "14:23" (or "14:23:38" when ticks are under a minute apart) for
// an epoch time, else "300 s".
std::string TimeTick(double t_s, double step_s) {
  if (!IsEpoch(t_s)) return fmt::format("{:.0f} s", t_s);
  const std::tm tm = Utc(t_s);
  if (step_s < 60) return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
  return fmt::format("{:02}:{:02}", tm.tm_hour, tm.tm_min);
}

std::string Rps(double v) { return std::isfinite(v) ? fmt::format("{:.2f} rps", v) : "n/a"; }
std::string Fixed2(double v) { return std::isfinite(v) ? fmt::format("{:.2f}", v) : "n/a"; }
std::string Fixed3(double v) { return std::isfinite(v) ? fmt::format("{:.3f}", v) : "n/a"; }

// ---- marked figures ---------------------------------------------------------

// A figure: the JSON report's value at `path`, as `shown`.
std::string N(std::string_view path, std::string_view shown) {
  return fmt::format("<span data-json=\"{}\">{}</span>", HtmlEscape(path), HtmlEscape(shown));
}
// A quantile as QuantileText prints it, bound to the JSON figure at `path`; a bound the
// buckets give ("<=100 ms") is shown as "≤100 ms" and may wrap (the phone layout's
// columns are narrow).
std::string NQ(std::string_view path, const std::string& shown) {
  for (const auto& [ascii, sign] : {std::pair{"<=", "≤"}, std::pair{">=", "≥"}}) {
    if (shown.starts_with(ascii)) {
      return fmt::format("<span class=\"bound\" data-json=\"{}\">{}{}</span>", HtmlEscape(path),
                         sign, HtmlEscape(std::string_view(shown).substr(2)));
    }
  }
  return N(path, shown);
}
// A time: the JSON report's value at `path`, as When() prints it (it may wrap).
std::string NT(std::string_view path, double t_s) {
  return fmt::format("<span class=\"when\" data-json=\"{}\">{}</span>", HtmlEscape(path),
                     HtmlEscape(When(t_s)));
}
// A string: the JSON report's string at `path`.
std::string T(std::string_view path, std::string_view text) {
  return fmt::format("<span data-json-text=\"{}\">{}</span>", HtmlEscape(path), HtmlEscape(text));
}
// A label value bound to its JSON figure at `path`; the empty value is shown as
// LabelValueText names it, beside its (empty) bound span.
std::string V(std::string_view path, std::string_view value) {
  return T(path, value) + (value.empty() ? HtmlEscape(LabelValueText(value)) : std::string());
}
// A change ratio: after / before of the JSON figures at `before` and `after`.
std::string R(std::string_view before, std::string_view after, double b, double a) {
  return fmt::format("<span data-json-ratio=\"{} {}\">{}</span>", HtmlEscape(before),
                     HtmlEscape(after), HtmlEscape(X(Ratio(b, a))));
}
// "BEFORE → AFTER".
std::string Arrow(const std::string& before, const std::string& after) {
  return before + " <span class=\"arrow\">→</span> " + after;
}

std::string Td(std::string_view label, const std::string& inner, bool text = false) {
  return fmt::format("<td{} data-label=\"{}\">{}</td>", text ? " class=\"t\"" : "",
                     HtmlEscape(label), inner);
}
std::string RowHead(const std::string& inner) { return "<th scope=\"row\">" + inner + "</th>"; }

// A table in its size container. `cls`: s2, s4 or s5 (Style(): the narrower the
// table can get, the lower the width where its rows stack). `align`: per column, 'l' for text
// (left) or 'r' for figures (right).
std::string Table(std::string_view cls, std::string_view caption, std::string_view align,
                  const std::vector<std::string>& head, const std::string& body) {
  std::string o = fmt::format("<div class=\"tw\"><table class=\"{}\">", cls);
  if (!caption.empty()) o += fmt::format("<caption>{}</caption>", caption);
  o += "<thead><tr>";
  for (size_t i = 0; i < head.size(); ++i) {
    const bool left = i == 0 || (i < align.size() && align[i] == 'l');
    o += fmt::format("<th{} scope=\"col\">{}</th>", left ? " class=\"t\"" : "", head[i]);
  }
  o += "</tr></thead><tbody>\n" + body + "</tbody></table></div>\n";
  return o;
}

// ---- charts -----------------------------------------------------------------

struct Line {
  std::string name;
  std::string colour;
  std::vector<std::pair<double, double>> pts;  // (x, y); non-finite points are skipped
  bool right_axis = false;                     // y in [0, 1] on the right axis
};

struct ChartSpec {
  std::string id, title;
  double width = 560, height = 230;
  bool log_x = false;       // x is a latency on a log10 axis, else a time
  bool y_fraction = false;  // the left axis is a fraction, 0-100%
  double marker_x = kMissing;
};

constexpr double kL = 58, kR = 44, kT = 26, kB = 34;

// The smallest of 1, 2 or 5 times a power of ten that is >= `raw` (> 0).
double NiceStep(double raw) {
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= raw * (1 - 1e-9)) return m * mag;
  }
  return 10 * mag;
}

// A step of a time axis >= `raw` seconds that falls on clock minutes and hours.
double TimeStep(double raw) {
  for (double s : {1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1200.0,
                   1800.0, 3600.0, 7200.0, 10800.0, 21600.0, 43200.0, 86400.0}) {
    if (s >= raw) return s;
  }
  return 86400 * NiceStep(raw / 86400);
}

// A latency tick: "0", "250 ms", "1.5 s" (no trailing zeros: ticks are round).
std::string SecsTick(double v) {
  if (v <= 0) return "0";
  if (v < 1) return fmt::format("{:.3g} ms", v * 1000);
  return fmt::format("{:.3g} s", v);
}

// The points of `l` in runs that a line may join: a run ends at the change marker
// (a line across it would draw a step as a trend) and where time goes back (two
// inputs whose times overlap).
std::vector<std::vector<std::pair<double, double>>> Runs(const Line& l, const ChartSpec& c) {
  std::vector<std::pair<double, double>> pts;
  for (auto [x, y] : l.pts) {
    if (!std::isfinite(x) || !std::isfinite(y) || (c.log_x && x <= 0)) continue;
    pts.emplace_back(x, y);
  }
  std::vector<std::vector<std::pair<double, double>>> runs;
  for (size_t i = 0; i < pts.size(); ++i) {
    bool split = i == 0;
    if (i > 0) {
      const double px = pts[i - 1].first, x = pts[i].first;
      split =
          (!c.log_x && x < px) || (std::isfinite(c.marker_x) && px < c.marker_x && x >= c.marker_x);
    }
    if (split) runs.emplace_back();
    runs.back().push_back(pts[i]);
  }
  return runs;
}

std::string LineChart(const ChartSpec& c, const std::vector<Line>& lines) {
  double x0 = INFINITY, x1 = -INFINITY, y1 = 0;
  for (const Line& l : lines) {
    for (auto [x, y] : l.pts) {
      if (!std::isfinite(x) || !std::isfinite(y) || (c.log_x && x <= 0)) continue;
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      if (!l.right_axis) y1 = std::max(y1, y);
    }
  }
  const double W = c.width, H = c.height;
  std::string o = fmt::format(
      "<svg id=\"{0}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{1:.0f}\" "
      "height=\"{2:.0f}\" viewBox=\"0 0 {1:.0f} {2:.0f}\" role=\"img\" aria-label=\"{3}\">\n",
      HtmlEscape(c.id), W, H, HtmlEscape(c.title));
  if (!(x1 > x0)) {
    o += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" class=\"na\">no data</text>\n</svg>\n", kL,
                     H / 2);
    return o;
  }
  // A fraction axis ends at 100%; a latency axis at the round tick above the highest
  // value.
  const double ystep = c.y_fraction ? 0.25 : NiceStep(y1 > 0 ? y1 / 4 : 0.25);
  const double ytop = c.y_fraction ? 1.0 : ystep * std::max(1.0, std::ceil(y1 / ystep - 1e-9));
  const double pw = W - kL - kR, ph = H - kT - kB;
  auto fx = [&](double x) {
    if (c.log_x)
      return kL + pw * (std::log10(x) - std::log10(x0)) / (std::log10(x1) - std::log10(x0));
    return kL + pw * (x - x0) / (x1 - x0);
  };
  auto fy = [&](double y, bool right) { return kT + ph * (1 - y / (right ? 1.0 : ytop)); };
  for (int i = 0; i * ystep <= ytop * (1 + 1e-9); ++i) {
    const double v = i * ystep;
    o += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\"/>"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" class=\"tick\" text-anchor=\"end\">{5}</text>\n",
        kL, kL + pw, fy(v, false), kL - 4, fy(v, false) + 4,
        HtmlEscape(c.y_fraction ? fmt::format("{:.0f}%", v * 100) : SecsTick(v)));
  }
  bool has_right = false;
  for (const Line& l : lines) has_right |= l.right_axis;
  if (has_right) {
    for (int i = 0; i <= 4; ++i) {
      o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">{:.0f}%</text>\n",
                       kL + pw + 4, fy(i / 4.0, true) + 4, i * 25.0);
    }
  }
  o += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"frame\"/>\n", kL,
      kT, pw, ph);
  if (c.log_x) {
    for (double d = std::pow(10, std::floor(std::log10(x0))); d <= x1 * 1.0001; d *= 10) {
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = d * m;
        if (v < x0 || v > x1) continue;
        o += fmt::format(
            "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\" text-anchor=\"middle\">{}</text>\n",
            fx(v), kT + ph + 14, HtmlEscape(SecsTick(v)));
      }
    }
  } else {
    // Round times (whole minutes, hours) about every 90 px.
    const double step = TimeStep((x1 - x0) / std::max(1.0, std::floor(pw / 90)));
    for (double v = std::ceil(x0 / step) * step; v <= x1; v += step) {
      o += fmt::format(
          "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\" text-anchor=\"middle\">{}</text>\n",
          fx(v), kT + ph + 14, HtmlEscape(TimeTick(v, step)));
    }
    if (IsEpoch(x0)) {
      o += fmt::format(
          "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\" text-anchor=\"end\">UTC</text>\n",
          kL + pw, kT + ph + 28);
    }
  }
  if (std::isfinite(c.marker_x) && c.marker_x >= x0 && c.marker_x <= x1) {
    o += fmt::format(
        "<line id=\"{}-change\" class=\"marker\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" "
        "y2=\"{:.1f}\"/><text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">change</text>\n",
        HtmlEscape(c.id), fx(c.marker_x), fx(c.marker_x), kT, kT + ph, fx(c.marker_x) + 3,
        kT + ph - 4);
  }
  double legend_x = kL + 6;
  for (const Line& l : lines) {
    for (const auto& run : Runs(l, c)) {
      if (run.size() == 1) {
        o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>\n",
                         fx(run[0].first), fy(run[0].second, l.right_axis), l.colour);
        continue;
      }
      std::string pts;
      for (auto [x, y] : run) pts += fmt::format("{:.1f},{:.1f} ", fx(x), fy(y, l.right_axis));
      o += fmt::format("<polyline class=\"line\" stroke=\"{}\" points=\"{}\"/>\n", l.colour, pts);
    }
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"legend\" fill=\"{}\">{}</text>\n",
                     legend_x, kT - 9, l.colour, HtmlEscape(l.name));
    legend_x += 16 + 6.2 * static_cast<double>(l.name.size());
  }
  o += "</svg>\n";
  return o;
}

// The slowest 1%'s mean TTFT before and after as horizontal stacked bars of its terms
// (front end, queue, prefill), each bar labelled with its total.
std::string StackChart(const DiagnosisReport& r) {
  const Decomposition& d = r.decomposition;
  struct Bar {
    const char* name;
    double fe, q, p;
  };
  const Bar bars[2] = {
      {"baseline", d.tail_before_front_end, d.tail_before_queue, d.tail_before_prefill},
      {"incident", d.tail_after_front_end, d.tail_after_queue, d.tail_after_prefill}};
  auto fin = [](double v) { return std::isfinite(v) && v > 0 ? v : 0.0; };
  double top = 0;
  for (const Bar& b : bars) top = std::max(top, fin(b.fe) + fin(b.q) + fin(b.p));
  constexpr double W = 560, H = 140, x0 = 74, bar_w = 400, bar_h = 30;
  std::string o = fmt::format(
      "<svg id=\"chart-stack\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" role=\"img\" "
      "aria-label=\"The slowest 1%: mean front end, queue and prefill\">\n",
      W, H);
  if (top <= 0) {
    o += "<text x=\"8\" y=\"60\" class=\"na\">no data</text>\n</svg>\n";
    return o;
  }
  for (int i = 0; i < 2; ++i) {
    const Bar& b = bars[i];
    const double y = 12 + i * 46;
    double x = x0;
    o += fmt::format("<text x=\"8\" y=\"{:.1f}\" class=\"tick\">{}</text>\n", y + bar_h / 2 + 4,
                     b.name);
    auto seg = [&](double v, const char* cls, const char* name) {
      if (fin(v) <= 0) return;
      const double w = bar_w * v / top;
      o += fmt::format(
          "<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.0f}\">"
          "<title>{} {}</title></rect>\n",
          cls, x, y, w, bar_h, name, HtmlEscape(Secs(v)));
      x += w;
    };
    seg(b.fe, "fe", "front end");
    seg(b.q, "queue", "queue");
    seg(b.p, "prefill", "prefill");
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">{}</text>\n", x + 5,
                     y + bar_h / 2 + 4, HtmlEscape(Secs(fin(b.fe) + fin(b.q) + fin(b.p))));
  }
  double lx = x0;
  for (auto [cls, name] : {std::pair{"fe", "front end"}, std::pair{"queue", "queue"},
                           std::pair{"prefill", "prefill"}}) {
    o += fmt::format(
        "<rect class=\"{}\" x=\"{:.0f}\" y=\"{:.0f}\" width=\"12\" height=\"12\"/>"
        "<text x=\"{:.0f}\" y=\"{:.0f}\" class=\"legend\">{}</text>\n",
        cls, lx, H - 24, lx + 16, H - 14, name);
    lx += 28 + 7.0 * std::string_view(name).size();
  }
  o += "</svg>\n";
  return o;
}

// A chart with its title as a caption (HTML text wraps; SVG text would be clipped).
std::string Figure(std::string_view title, const std::string& svg) {
  return fmt::format("<figure class=\"fig\"><figcaption>{}</figcaption>\n{}</figure>\n",
                     HtmlEscape(title), svg);
}

std::vector<std::pair<double, double>> Pts(const std::vector<TimePoint>& tl, bool hit) {
  std::vector<std::pair<double, double>> p;
  for (const TimePoint& t : tl) {
    const double v = hit ? t.hit_rate : t.ttft_p99_s;
    if (std::isfinite(v)) p.emplace_back(t.t_s, v);
  }
  return p;
}

std::string CdfChart(const DiagnosisReport& r) {
  ChartSpec c;
  c.id = "chart-cdf";
  c.title = "TTFT CDF, before and after (log time axis)";
  c.log_x = true;
  c.y_fraction = true;
  return Figure(c.title, LineChart(c, {{"baseline", "#2ca02c", r.cdf_before, false},
                                       {"incident", "#d62728", r.cdf_after, false}}));
}

std::string TimelineChart(const DiagnosisReport& r) {
  ChartSpec c;
  c.id = "chart-timeline";
  c.title = "p99 TTFT and prefix-cache hit rate over time";
  c.marker_x = r.change_at_s;
  return Figure(c.title,
                LineChart(c, {{"p99 TTFT", "#d62728", Pts(r.timeline, false), false},
                              {"hit rate (right axis)", "#1f77b4", Pts(r.timeline, true), true}}));
}

std::string SmallMultiples(const DiagnosisReport& r) {
  if (r.group_series.empty()) return "";
  std::string o = "<h3>p99 TTFT over time per replica and tenant</h3>\n<div class=\"multiples\">\n";
  int n_rep = 0, n_ten = 0;
  for (const GroupSeries& g : r.group_series) {
    const int idx = g.dimension == "replica" ? n_rep++ : n_ten++;
    ChartSpec c;
    c.id = fmt::format("chart-{}-{}", g.dimension, idx);
    c.title = fmt::format("{} {}", g.dimension, LabelValueText(g.value));
    c.width = 320;
    c.height = 150;
    c.marker_x = r.change_at_s;
    o += Figure(c.title, LineChart(c, {{"p99 TTFT", "#d62728", Pts(g.points, false), false},
                                       {"hit", "#1f77b4", Pts(g.points, true), true}}));
  }
  return o + "</div>\n";
}

// ---- sections ---------------------------------------------------------------

std::string Header(const DiagnosisReport& r) {
  std::string o = "<header>\n<h1>TTFT regression diagnosis</h1>\n";
  o += fmt::format("<p id=\"verdict\" class=\"verdict {0}\">Verdict: <b>{1}</b> — {2}</p>\n",
                   ToString(r.verdict), T("verdict", ToString(r.verdict)),
                   T("verdict_reason", r.verdict_reason));
  // The inputs: the first few, the rest (a folder of scrapes can hold hundreds) folded.
  constexpr size_t kShownSources = 4;
  if (!r.sources.empty()) {
    o += "<p class=\"note\">Inputs: ";
    for (size_t i = 0; i < r.sources.size() && i < kShownSources; ++i) {
      o += (i ? ", " : "") + T(fmt::format("sources[{}]", i), r.sources[i]);
    }
    o += "</p>\n";
  }
  if (r.sources.size() > kShownSources) {
    o += fmt::format("<details class=\"note\"><summary>and {} more inputs</summary><p>",
                     r.sources.size() - kShownSources);
    for (size_t i = kShownSources; i < r.sources.size(); ++i) {
      o += (i > kShownSources ? ", " : "") + T(fmt::format("sources[{}]", i), r.sources[i]);
    }
    o += "</p></details>\n";
  }
  o += "<nav aria-label=\"sections\"><ol><li><a href=\"#mitigate\">1. Mitigate now</a></li>"
       "<li><a href=\"#symptoms\">2. Symptoms</a></li><li><a href=\"#decomposition\">3. "
       "Decomposition</a></li><li><a href=\"#hypotheses\">4. Ranked hypotheses</a></li>"
       "<li><a href=\"#where\">5. Where it lives</a></li><li><a href=\"#magnitude\">6. Why the "
       "magnitude fits</a></li><li><a href=\"#fix\">7. Fix and prevention</a></li></ol></nav>\n";
  return o + "</header>\n";
}

std::string Mitigate(const DiagnosisReport& r) {
  std::string o = "<section id=\"mitigate\">\n<h2>1. Mitigate now</h2>\n";
  if (r.verdict != Verdict::kRegression) {
    return o + fmt::format("<p>Nothing to mitigate: the verdict is {}.</p>\n</section>\n",
                           ToString(r.verdict));
  }
  std::string body;
  for (size_t i = 0; i < r.actions.size(); ++i) {
    const Action& a = r.actions[i];
    if (a.kind != "mitigate") continue;
    body += "<tr>" + Td("action", T(fmt::format("actions[{}].text", i), a.text), true) +
            Td("owner", T(fmt::format("actions[{}].owner", i), a.owner), true) + "</tr>\n";
  }
  if (body.empty()) {
    o += "<p>No change near the onset is known; apply the top hypothesis' fix (section "
         "7).</p>\n";
  } else {
    o += Table("s5", "", "ll", {"action", "owner"}, body);
  }
  return o + "</section>\n";
}

std::string Significance(const DiagnosisReport& r) {
  std::string body;
  auto row = [&](const char* name, const std::string& v) {
    body += "<tr>" + RowHead(name) + Td("value", v) + "</tr>\n";
  };
  // A ratio the histogram buckets do not resolve (a quantile in the first bucket or above
  // the last finite bound) is shown as the bound they give, not as the JSON's ratio of
  // interpolated figures.
  auto ratio = [&](const std::string& path, double estimate, size_t i) {
    const RatioBounds rb = QuantileRatio(r.baseline.ttft_s, r.incident.ttft_s, i);
    if (!(rb.lo < rb.hi)) return N(path, X(estimate));
    // The bounds' JSON twin: significance.p99_ratio_bounds [lo, hi] (ReportJson).
    const std::string bounds = path + "_bounds";
    if (rb.lo > 0 && std::isfinite(rb.lo)) return "at least " + N(bounds + "[0]", X(rb.lo));
    if (std::isfinite(rb.hi)) return "at most " + N(bounds + "[1]", X(rb.hi));
    return std::string("not resolved by the buckets");
  };
  row("p99 TTFT ratio (incident / baseline)",
      ratio("significance.p99_ratio", r.p99_ratio.estimate, 2));
  row(fmt::format("{:.0f}% bootstrap interval of the ratio", r.p99_ratio.level * 100).c_str(),
      N("significance.p99_ratio_ci[0]", X(r.p99_ratio.lower)) + " to " +
          N("significance.p99_ratio_ci[1]", X(r.p99_ratio.upper)));
  row("p50 TTFT ratio", ratio("significance.p50_ratio", r.p50_ratio, 0));
  row("Mann-Whitney p (whole distribution)",
      N("significance.mann_whitney_p", numfmt::PValue(r.mann_whitney_p)));
  row("Hodges-Lehmann shift",
      N("significance.hodges_lehmann_shift_s", Secs(r.hodges_lehmann_shift_s)));
  row("tail test p (share above the pooled p99)",
      N("significance.tail_test_p", numfmt::PValue(r.tail_test_p)));
  row("requests tested (baseline, incident)",
      N("significance.samples_baseline", fmt::format("{}", r.test_samples_baseline)) + ", " +
          N("significance.samples_incident", fmt::format("{}", r.test_samples_incident)));
  return Table("s2", "Significance", "lr", {"test", "value"}, body);
}

std::string SymptomsSection(const DiagnosisReport& r) {
  const WindowStats& a = r.baseline;
  const WindowStats& b = r.incident;
  std::string body;
  // A row of the figure at `key` in both windows, with the change ratio when `ratio`.
  auto row = [&](const char* name, const std::string& key, double va, double vb,
                 const std::function<std::string(double)>& f, bool ratio) {
    body += "<tr>" + RowHead(name) + Td("baseline", N("baseline." + key, f(va))) +
            Td("incident", N("incident." + key, f(vb))) +
            Td("change", ratio ? R("baseline." + key, "incident." + key, va, vb) : "") + "</tr>\n";
  };
  auto count = [](double v) { return numfmt::Num(v); };  // "n/a" when unknown
  body += "<tr>" + RowHead("window") +
          Td("baseline", NT("baseline.from_s", a.from_s) + " to " + NT("baseline.to_s", a.to_s)) +
          Td("incident", NT("incident.from_s", b.from_s) + " to " + NT("incident.to_s", b.to_s)) +
          Td("change", "") + "</tr>\n";
  body += "<tr>" + RowHead("requests (ok)") +
          Td("baseline", N("baseline.requests", fmt::format("{}", a.requests)) + " (" +
                             N("baseline.ok", fmt::format("{}", a.ok)) + ")") +
          Td("incident", N("incident.requests", fmt::format("{}", b.requests)) + " (" +
                             N("incident.ok", fmt::format("{}", b.ok)) + ")") +
          Td("change", "") + "</tr>\n";
  row("request rate", "request_rate_rps", a.request_rate_rps, b.request_rate_rps, Rps, true);
  // A quantile row: a bound ("<=300 ms") where the buckets do not resolve the quantile
  // (QuantileText), and then no change ratio (the text table's rule).
  auto qrow = [&](const char* name, const char* term, size_t i, const TermQuantiles& ta,
                  const TermQuantiles& tb) {
    const std::string key = fmt::format("{}.p{}", term, i == 0 ? 50 : 99);
    const bool resolved = !IsQuantileBound(ta, i) && !IsQuantileBound(tb, i);
    body +=
        "<tr>" + RowHead(name) + Td("baseline", NQ("baseline." + key, QuantileText(ta, i))) +
        Td("incident", NQ("incident." + key, QuantileText(tb, i))) +
        Td("change", resolved ? R("baseline." + key, "incident." + key, ta.at(i), tb.at(i)) : "") +
        "</tr>\n";
  };
  qrow("p50 TTFT", "ttft_s", 0, a.ttft_s, b.ttft_s);
  qrow("p99 TTFT", "ttft_s", 2, a.ttft_s, b.ttft_s);
  qrow("p99 queue", "queue_s", 2, a.queue_s, b.queue_s);
  qrow("p99 prefill", "prefill_s", 2, a.prefill_s, b.prefill_s);
  row("ITL p50", "itl_p50_s", a.itl_s.p50, b.itl_s.p50, Secs, true);
  row("max ITL p99", "itl_max_p99_s", a.itl_max_p99_s, b.itl_max_p99_s, Secs, true);
  row("error rate", "error_rate", a.error_rate, b.error_rate, Pct1, false);
  row("replicas", "replicas", ReplicasShown(a), ReplicasShown(b), count, false);
  row("prefix-cache hit rate", "prefix_cache_hit_rate", a.prefix_cache_hit_rate,
      b.prefix_cache_hit_rate, Pct1, false);
  row("prompt tokens p99", "prompt_tokens_p99", a.prompt_tokens.p99, b.prompt_tokens.p99,
      numfmt::Num, true);
  row("output tokens mean", "output_tokens_mean", a.output_tokens_mean, b.output_tokens_mean,
      numfmt::Num, true);
  row("preemptions / request", "preemptions_per_request", a.preemptions_per_request,
      b.preemptions_per_request, Fixed3, false);
  std::string o = "<section id=\"symptoms\">\n<h2>2. Symptoms</h2>\n<div class=\"pair\"><div>\n";
  o += Table("s2", "", "lrrr", {"figure", "baseline", "incident", "change"}, body);
  o += Significance(r);
  o += "</div><div class=\"charts\">\n" + CdfChart(r) + TimelineChart(r) + "</div></div>\n";
  return o + "</section>\n";
}

std::string DecompositionSection(const DiagnosisReport& r) {
  const auto& d = r.decomposition;
  struct Term {
    const char* name;
    const char* key;        // decomposition.before.KEY
    const char* share_key;  // decomposition.share_of_p99_increase.KEY, or null
    const TermQuantiles &before, &after;
    double tail_before, tail_after, share;
  };
  const Term terms[] = {
      {"TTFT", "ttft_s", nullptr, d.before_ttft, d.after_ttft, d.tail_before_ttft,
       d.tail_after_ttft, kMissing},
      {"front end", "front_end_s", "front_end", d.before_front_end, d.after_front_end,
       d.tail_before_front_end, d.tail_after_front_end, d.share_front_end},
      {"queue", "queue_s", "queue", d.before_queue, d.after_queue, d.tail_before_queue,
       d.tail_after_queue, d.share_queue},
      {"prefill", "prefill_s", "prefill", d.before_prefill, d.after_prefill, d.tail_before_prefill,
       d.tail_after_prefill, d.share_prefill},
  };
  // The quantiles of each term, then beside the chart the slowest 1%'s mean of each
  // term and its share of the increase (the numbers the chart shows).
  std::string quantiles, tail;
  for (const Term& t : terms) {
    const std::string k = t.key;
    quantiles += "<tr>" + RowHead(t.name);
    for (const auto& [when, tq] : {std::pair{"before", &t.before}, std::pair{"after", &t.after}}) {
      const std::string p = fmt::format("decomposition.{}.{}.", when, k);
      const char* label = when == std::string_view("before") ? "baseline" : "incident";
      // A quantile the buckets resolve only as a bound shows the bound (QuantileText).
      quantiles += Td(fmt::format("{} p50", label), NQ(p + "p50", QuantileText(*tq, 0))) +
                   Td(fmt::format("{} p90", label), NQ(p + "p90", QuantileText(*tq, 1))) +
                   Td(fmt::format("{} p99", label), NQ(p + "p99", QuantileText(*tq, 2)));
    }
    quantiles += "</tr>\n";
    tail += "<tr>" + RowHead(t.name) +
            Td("baseline", N("decomposition.tail_mean_before." + k, Secs(t.tail_before))) +
            Td("incident", N("decomposition.tail_mean_after." + k, Secs(t.tail_after))) +
            Td("share of the increase",
               t.share_key == nullptr
                   ? ""
                   : N(fmt::format("decomposition.share_of_p99_increase.{}", t.share_key),
                       Pct(t.share))) +
            "</tr>\n";
  }
  std::string o =
      "<section id=\"decomposition\">\n<h2>3. Decomposition</h2>\n"
      "<p>TTFT = front end + queue + prefill, per request.</p>\n";
  o += Table("s5", "Quantiles of each term", "lrrrrrr",
             {"term", "baseline p50", "baseline p90", "baseline p99", "incident p50",
              "incident p90", "incident p99"},
             quantiles);
  o += "<div class=\"pair\"><div>\n";
  o +=
      Table("s2", "The slowest 1% of each window: mean of each term, and its share of the increase",
            "lrrr", {"term", "baseline", "incident", "share of the increase"}, tail);
  if (!d.dominant.empty()) {
    o += "<p>The " + T("decomposition.dominant", d.dominant) + " moved the tail.</p>\n";
  }
  o += "</div><div class=\"charts\">\n" +
       Figure("The slowest 1%: mean front end + queue + prefill", StackChart(r)) + "</div></div>\n";
  return o + "</section>\n";
}

std::string Hypotheses(const DiagnosisReport& r) {
  std::string o = "<section id=\"hypotheses\">\n<h2>4. Ranked hypotheses</h2>\n";
  if (!r.hypotheses_assessed) {
    return o +
           "<p>Causes not assessable: too few requests for a p99 (see the verdict); no cause is "
           "ranked.</p>\n</section>\n";
  }
  std::string body;
  for (size_t i = 0; i < r.hypotheses.size(); ++i) {
    const Hypothesis& h = r.hypotheses[i];
    const std::string p = fmt::format("hypotheses[{}]", i);
    body +=
        "<tr>" + RowHead(fmt::format("{}.", i + 1)) +
        Td("cause", "<code>" + T(p + ".id", h.id) + "</code> " + T(p + ".title", h.title), true) +
        Td("confidence", N(p + ".confidence", Fixed2(h.confidence))) +
        Td("ran",
           h.runnable ? "yes" : "no: <span data-prose>" + HtmlEscape(h.not_run_reason) + "</span>",
           true) +
        "</tr>\n";
  }
  o += Table("s5", "", "llrl", {"rank", "cause", "confidence", "ran"}, body);
  for (size_t i = 0; i < r.hypotheses.size() && i < 3; ++i) {
    const Hypothesis& h = r.hypotheses[i];
    const std::string p = fmt::format("hypotheses[{}]", i);
    o += fmt::format("<article class=\"hyp\">\n<h3>{}. <code>{}</code> {} (confidence {})</h3>\n",
                     i + 1, T(p + ".id", h.id), T(p + ".title", h.title),
                     N(p + ".confidence", Fixed2(h.confidence)));
    if (!h.evidence.empty()) {
      o += "<ul>\n";
      for (size_t j = 0; j < h.evidence.size(); ++j) {
        o += "<li>" + T(fmt::format("{}.evidence[{}]", p, j), h.evidence[j].sentence) + "</li>\n";
      }
      o += "</ul>\n";
    }
    o += "<dl>";
    auto item = [&](const char* name, const char* key, const std::string& v) {
      if (!v.empty()) o += fmt::format("<dt>{}</dt><dd>{}</dd>", name, T(p + "." + key, v));
    };
    item("splitting metric", "splitting_metric", h.splitting_metric);
    item("next check", "next_check", h.next_check);
    item("fix", "fix", h.fix);
    item("prevention", "prevention", h.prevention);
    item("owners", "owners", h.owners);
    o += "</dl>\n</article>\n";
  }
  return o + "</section>\n";
}

// Each cause's share of the p99 increase (attribution.factors) as a horizontal bar
// with its interval over seeds as a whisker, and the interaction as a last bar.
std::string SharesChart(const Attribution& a) {
  struct Bar {
    std::string name;
    double v, lo, hi;
  };
  std::vector<Bar> bars;
  for (const FactorShare& f : a.factors) bars.push_back({f.cause, f.share, f.share_lo, f.share_hi});
  if (a.factors.size() > 1)
    bars.push_back({"interaction", a.interaction, a.interaction_lo, a.interaction_hi});
  double lo = 0, hi = 1;
  for (const Bar& b : bars) {
    for (double v : {b.v, b.lo, b.hi}) {
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  constexpr double W = 560, x0 = 230, plot_w = 300, bar_h = 22, gap = 12;
  const double H = 30 + static_cast<double>(bars.size()) * (bar_h + gap);
  auto X = [&](double v) { return x0 + plot_w * (v - lo) / (hi - lo); };
  std::string o = fmt::format(
      "<svg id=\"chart-shares\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" role=\"img\" "
      "aria-label=\"Each cause's share of the p99 increase, with its interval over seeds\">\n",
      W, H);
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = 8 + static_cast<double>(i) * (bar_h + gap);
    const double x_a = X(std::min(0.0, b.v)), x_b = X(std::max(0.0, b.v));
    o += fmt::format("<text x=\"8\" y=\"{:.1f}\" class=\"tick\">{}</text>\n", y + bar_h / 2 + 4,
                     HtmlEscape(b.name.size() > 34 ? b.name.substr(0, 33) + "…" : b.name));
    o += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.0f}\" fill=\"{}\">"
        "<title>{} {}</title></rect>\n",
        x_a, y, std::max(x_b - x_a, 0.5), bar_h,
        i + 1 == bars.size() && a.factors.size() > 1 ? "#9a9a9a" : "#3b6ea5", HtmlEscape(b.name),
        HtmlEscape(Pct(b.v)));
    if (std::isfinite(b.lo) && std::isfinite(b.hi) && b.hi > b.lo) {
      const double yc = y + bar_h / 2;
      o += fmt::format(
          "<path d=\"M{0:.1f} {1:.1f}H{2:.1f}M{0:.1f} {3:.1f}V{4:.1f}M{2:.1f} {3:.1f}V{4:.1f}\" "
          "stroke=\"#222\" fill=\"none\"/>\n",
          X(b.lo), yc, X(b.hi), yc - 6, yc + 6);
    }
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">{}</text>\n",
                     std::min(X(std::max({b.v, b.hi, 0.0})) + 5, W - 40), y + bar_h / 2 + 4,
                     HtmlEscape(Pct(b.v)));
  }
  const double ya = H - 14;
  o +=
      fmt::format("<path d=\"M{0:.1f} 4V{1:.1f}\" stroke=\"#222\" fill=\"none\"/>\n", X(0), ya - 8);
  for (double v : {0.0, 0.5, 1.0}) {
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">{}</text>\n", X(v) - 8,
                     ya + 10, Pct(v));
  }
  return o + "</svg>\n";
}

std::string AttributionSection(const DiagnosisReport& r) {
  const Attribution& a = r.attribution;
  const report::AttributionText t = report::AttributionLines(r);
  std::string o =
      "<section id=\"attribution\">\n<h2>Attribution by counterfactual "
      "replay</h2>\n";
  o += "<p>" + T("attribution.text.headline", t.headline) + "</p>\n";
  if (!a.run) return o + "</section>\n";
  if (a.replay_none_p99_s - a.replay_all_p99_s > 0 && !a.factors.empty())
    o += Figure("Each cause's share of the p99 increase (bars), 95% interval over seeds (whiskers)",
                SharesChart(a));
  auto list = [&](const char* key, const std::vector<std::string>& v, bool ordered) {
    if (v.empty()) return;
    o += ordered ? "<ol>\n" : "<ul>\n";
    for (size_t i = 0; i < v.size(); ++i)
      o += "<li>" + T(fmt::format("attribution.text.{}[{}]", key, i), v[i]) + "</li>\n";
    o += ordered ? "</ol>\n" : "</ul>\n";
  };
  list("causes", t.causes, false);
  if (!t.mitigations.empty()) o += "<p>Mitigations, in order of share:</p>\n";
  list("mitigations", t.mitigations, true);
  list("checks", t.checks, false);
  list("notes", t.notes, false);
  return o + "</section>\n";
}

// The JSON path of the row (dimension, value) of the report's groups, or "".
std::string GroupPath(const DiagnosisReport& r, std::string_view dimension,
                      std::string_view value) {
  for (const GroupSplit& g : r.groups) {
    if (g.dimension != dimension) continue;
    for (size_t k = 0; k < g.rows.size() && k < 50; ++k) {  // the JSON keeps 50 rows
      if (g.rows[k].value == value) return fmt::format("groups.{}[{}]", g.dimension, k);
    }
  }
  return "";
}

std::string GroupCells(const std::string& p, const GroupRow& row) {
  return Td("share of requests", Arrow(N(p + ".share_before", Pct(row.share_before)),
                                       N(p + ".share_after", Pct(row.share_after)))) +
         Td("p99 TTFT", Arrow(NQ(p + ".ttft_p99_before_s", QuantileText(row.before.ttft_s, 2)),
                              NQ(p + ".ttft_p99_after_s", QuantileText(row.after.ttft_s, 2)))) +
         Td("hit rate", Arrow(N(p + ".hit_rate_before", Pct(row.before.prefix_cache_hit_rate)),
                              N(p + ".hit_rate_after", Pct(row.after.prefix_cache_hit_rate)))) +
         Td("share of the tail increase", N(p + ".contribution", Pct(row.contribution)));
}

std::string Where(const DiagnosisReport& r) {
  std::string o = "<section id=\"where\">\n<h2>5. Where it lives</h2>\n";
  if (!r.hypotheses_assessed) {
    o += "<p>Not assessed: too few requests to credit any group with a tail increase.</p>\n";
  } else if (r.contributions.empty()) {
    o += "<p>No single group holds most of the tail increase.</p>\n";
  } else {
    std::string body;
    for (const Contribution& c : r.contributions) {
      const std::string p = GroupPath(r, c.dimension, c.value);
      const GroupRow* row = nullptr;
      for (const GroupSplit& g : r.groups) {
        for (const GroupRow& gr : g.rows) {
          if (g.dimension == c.dimension && gr.value == c.value) row = &gr;
        }
      }
      if (p.empty() || row == nullptr) continue;  // every contribution is a group's top row
      body += "<tr>" + RowHead(HtmlEscape(c.dimension) + " " + V(p + ".value", c.value)) +
              GroupCells(p, *row) + "</tr>\n";
    }
    o += Table("s5", "The groups that hold most of the tail increase", "lrrrr",
               {"group", "share of requests", "p99 TTFT", "hit rate", "share of the tail increase"},
               body);
  }
  if (!r.label_changes.empty()) {
    o += "<h3>Labels in one window only</h3>\n<ul>\n";
    for (size_t i = 0; i < r.label_changes.size(); ++i) {
      o +=
          "<li>" + T(fmt::format("label_changes[{}]", i), ToString(r.label_changes[i])) + "</li>\n";
    }
    o += "</ul>\n";
  }
  std::string splits;
  if (r.hypotheses_assessed) {
    for (const GroupSplit& g : r.groups) {
      if (g.rows.size() < 2) continue;
      std::string body;
      for (size_t k = 0; k < g.rows.size() && k < 5; ++k) {
        const std::string p = fmt::format("groups.{}[{}]", g.dimension, k);
        body += "<tr>" + RowHead(V(p + ".value", g.rows[k].value)) + GroupCells(p, g.rows[k]) +
                "</tr>\n";
      }
      splits += Table(
          "s4",
          fmt::format("By {} (the {} of {} with most of the tail increase)",
                      HtmlEscape(g.dimension), std::min<size_t>(5, g.rows.size()), g.rows.size()),
          "lrrrr",
          {HtmlEscape(g.dimension), "share of requests", "p99 TTFT", "hit rate",
           "share of the tail increase"},
          body);
    }
  }
  if (!splits.empty()) o += "<div class=\"splits\">\n" + splits + "</div>\n";
  o += SmallMultiples(r);
  return o + "</section>\n";
}

std::string MagnitudeSection(const DiagnosisReport& r) {
  const Magnitude& m = r.magnitude;
  std::string o = "<section id=\"magnitude\">\n<h2>6. Why the magnitude fits</h2>\n";
  if (!m.available) return o + "<p>Not estimated.</p>\n</section>\n";
  std::string body;
  // A row of the figures at explanation.BEFORE and explanation.AFTER.
  auto row = [&](const char* name, const char* before_key, const char* after_key, double before,
                 double after, std::string (*f)(double)) {
    body += "<tr>" + RowHead(name) +
            Td("baseline", N(fmt::format("explanation.{}", before_key), f(before))) +
            Td("incident", N(fmt::format("explanation.{}", after_key), f(after))) + "</tr>\n";
  };
  row("prefill compute per request (cost model)", "prefill_compute_before_s",
      "prefill_compute_after_s", m.prefill_compute_before_s, m.prefill_compute_after_s, Secs);
  row("utilisation of the busiest replica", "utilisation_before", "utilisation_after",
      m.utilisation_before, m.utilisation_after, Pct);
  body += "<tr>" + RowHead("busiest replica") +
          Td("baseline", T("explanation.busiest_replica_before", m.busiest_replica_before)) +
          Td("incident", T("explanation.busiest_replica_after", m.busiest_replica_after)) +
          "</tr>\n";
  row("queue wait, Kingman G/G/1", "kingman_wait_before_s", "kingman_wait_after_s",
      m.kingman_wait_before_s, m.kingman_wait_after_s, Secs);
  row("queue wait, Pollaczek-Khinchine M/G/1", "pk_wait_before_s", "pk_wait_after_s",
      m.pk_wait_before_s, m.pk_wait_after_s, Secs);
  row("queue wait observed (mean)", "observed_queue_mean_before_s", "observed_queue_mean_after_s",
      m.observed_queue_mean_before_s, m.observed_queue_mean_after_s, Secs);
  o += "<div class=\"pair\"><div>\n";
  o += Table("s2",
             "Cost model " + T("explanation.cost_model", m.cost_model) + ": " +
                 T("explanation.verdict", m.verdict),
             "lrr", {"figure", "baseline", "incident"}, body);
  o += "</div><div>\n<p>" + T("explanation.sentence", m.sentence) + "</p>\n</div></div>\n";
  return o + "</section>\n";
}

std::string Fix(const DiagnosisReport& r) {
  std::string o = "<section id=\"fix\">\n<h2>7. Fix and prevention</h2>\n";
  std::string body;
  for (size_t i = 0; i < r.actions.size(); ++i) {
    const Action& a = r.actions[i];
    if (a.kind == "mitigate") continue;
    body += "<tr>" + RowHead(T(fmt::format("actions[{}].kind", i), a.kind)) +
            Td("action", T(fmt::format("actions[{}].text", i), a.text), true) +
            Td("owner", T(fmt::format("actions[{}].owner", i), a.owner), true) + "</tr>\n";
  }
  if (!body.empty()) {
    o += Table("s5", "", "lll", {"kind", "action", "owner"}, body);
  } else if (r.verdict == Verdict::kInsufficientData) {
    o += "<p>Nothing is proposed: too few requests to name a cause (see the verdict).</p>\n";
  } else if (r.verdict == Verdict::kNoRegression) {
    o += "<p>Nothing to fix: the verdict is no_regression.</p>\n";
  } else {
    o += "<p>No fix is derived; see the ranked hypotheses.</p>\n";
  }
  return o + "</section>\n";
}

std::string Changes(const DiagnosisReport& r) {
  std::string o;
  auto table = [&](const char* key, const std::vector<Annotation>& list, const char* title) {
    if (list.empty()) return;
    std::string body;
    for (size_t i = 0; i < list.size(); ++i) {
      const Annotation& a = list[i];
      const std::string p = fmt::format("{}[{}]", key, i);
      body += "<tr>" + RowHead(NT(p + ".at_s", a.at_s)) + Td("kind", T(p + ".kind", a.kind), true) +
              Td("target", T(p + ".target", a.target), true) +
              Td("detail", T(p + ".detail", a.detail), true) + "</tr>\n";
    }
    o += Table("s5", title, "llll", {"time", "kind", "target", "detail"}, body);
  };
  table("suspect_changes", r.suspect_changes, "Changes near the onset, closest first");
  table("annotations", r.annotations, "Every change in the inputs");
  if (o.empty()) return "";
  return "<section id=\"changes\">\n<h2>Timeline of changes</h2>\n" + o + "</section>\n";
}

std::string Limits(const DiagnosisReport& r) {
  if (r.fidelity_notes.empty()) return "";
  std::string o = "<section id=\"limits\">\n<h2>Checks not run and limits</h2>\n<ul>\n";
  for (size_t i = 0; i < r.fidelity_notes.size(); ++i) {
    o += "<li>" + T(fmt::format("fidelity_notes[{}]", i), r.fidelity_notes[i]) + "</li>\n";
  }
  return o + "</ul>\n</section>\n";
}

}  // namespace

std::string RenderHtml(const DiagnosisReport& r) {
  std::string o = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'{}'; img-src 'none'; base-uri 'none'; form-action 'none'\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>ttft diagnosis: {}</title>\n<style>{}</style></head><body>\n",
      report::CspHashSource(Style()), ToString(r.verdict), Style());
  o += Header(r);
  o += "<main>\n";
  o += Mitigate(r);
  o += SymptomsSection(r);
  o += DecompositionSection(r);
  o += Hypotheses(r);
  o += AttributionSection(r);
  o += Where(r);
  o += MagnitudeSection(r);
  o += Fix(r);
  o += Changes(r);
  o += Limits(r);
  o += "</main>\n</body></html>\n";
  return o;
}

}  // namespace ttft
