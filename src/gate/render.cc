// Renderings of a gate result (ttft/gate.h): text, JSON, JUnit XML, GitHub Actions
// workflow commands, Markdown.
#include <fmt/format.h>

#include <cmath>

#include "ttft/format.h"
#include "ttft/gate.h"

namespace ttft {
namespace {

nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

std::string Fmt(double v) { return std::isfinite(v) ? fmt::format("{:.4g}", v) : "-"; }

nlohmann::json ToJson(const GateResult& r) {
  nlohmann::json j;
  j["verdict"] = ToString(r.verdict);
  j["exit_code"] = GateExitCode(r.verdict);
  j["reason"] = r.reason;
  j["confidence"] = r.confidence;
  j["criteria"] = nlohmann::json::array();
  for (const CriterionResult& c : r.criteria) {
    j["criteria"].push_back({
        {"metric", ToString(c.criterion.metric)},
        {"direction", ToString(c.criterion.direction)},
        {"threshold", c.criterion.threshold},
        {"min_samples", c.criterion.min_samples},
        {"critical", c.criterion.critical},
        {"label", ToString(c.label)},
        {"harmful", c.harmful},
        {"baseline", Num(c.baseline)},
        {"canary", Num(c.canary)},
        {"baseline_bound", c.baseline_bound},
        {"canary_bound", c.canary_bound},
        {"effect", Num(c.effect)},
        {"effect_lower", Num(c.effect_lower)},
        {"effect_upper", Num(c.effect_upper)},
        {"baseline_n", c.baseline_n},
        {"canary_n", c.canary_n},
        {"mann_whitney_p", Num(c.mw_p)},
        {"hodges_lehmann_shift", Num(c.hl_shift)},
        {"hodges_lehmann_lower", Num(c.hl_lower)},
        {"hodges_lehmann_upper", Num(c.hl_upper)},
        {"method", c.method},
        {"rule", c.rule},
    });
  }
  if (!r.sequential.is_null()) j["sequential"] = r.sequential;
  return j;
}

std::string Xml(std::string_view s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most control characters.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t') {
          out += ' ';
        } else {
          out += ch;
        }
    }
  }
  return out;
}

// GitHub workflow commands escape %, CR and LF in the message.
std::string GhEscape(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '%')
      out += "%25";
    else if (ch == '\r')
      out += "%0D";
    else if (ch == '\n')
      out += "%0A";
    else
      out += ch;
  }
  return out;
}

std::string EffectText(const CriterionResult& c) {
  if (!std::isfinite(c.effect)) return "-";
  std::string unit = IsRatioMetric(c.criterion.metric) ? "x" : "";
  std::string s = fmt::format("{}{}", Fmt(c.effect), unit);
  if (std::isfinite(c.effect_lower)) {
    // An upper end of +inf: a ratio the histogram buckets do not bound above.
    s += fmt::format(" [{}, {}]", Fmt(c.effect_lower),
                     c.effect_upper == INFINITY ? std::string("inf") : Fmt(c.effect_upper));
  }
  return s;
}

std::string RenderText(const GateResult& r) {
  std::string out = fmt::format("verdict: {} (exit {})\nreason: {}\n\n", ToString(r.verdict),
                                GateExitCode(r.verdict), escape::Terminal(r.reason));
  out += fmt::format("{:<24} {:<7} {:>10} {:>10} {:>28} {:>9}  {}\n", "criterion", "label",
                     "baseline", "canary", "effect [interval]", "n(c)", "critical");
  for (const CriterionResult& c : r.criteria) {
    out += fmt::format("{:<24} {:<7} {:>10} {:>10} {:>28} {:>9}  {}\n",
                       ToString(c.criterion.metric), ToString(c.label),
                       c.baseline_bound + Fmt(c.baseline), c.canary_bound + Fmt(c.canary),
                       EffectText(c), c.canary_n, c.criterion.critical ? "yes" : "no");
  }
  out += "\n";
  for (const CriterionResult& c : r.criteria) {
    out += fmt::format("{}: {}\n", ToString(c.criterion.metric), escape::Terminal(c.rule));
    if (std::isfinite(c.mw_p)) {
      out += fmt::format("  Mann-Whitney {}, Hodges-Lehmann shift {} s [{}, {}]\n",
                         numfmt::PClause(c.mw_p, 3), Fmt(c.hl_shift), Fmt(c.hl_lower),
                         Fmt(c.hl_upper));
    }
    if (!c.method.empty()) out += fmt::format("  method: {}\n", escape::Terminal(c.method));
  }
  if (!r.sequential.is_null()) {
    out += fmt::format("\nsequential test: look {}, alpha {}\n", r.sequential["looks"].dump(),
                       r.sequential["alpha"].dump());
    for (const auto& s : r.sequential["streams"]) {
      out += fmt::format("  {}: n {} k {} p0 {:.4g} log LR {:.3f} (threshold {:.3f}){}\n",
                         s["name"].get<std::string>(), s["n"].get<int64_t>(), s["k"].get<int64_t>(),
                         s["p0"].get<double>(), s["log_lr"].get<double>(),
                         r.sequential["log_threshold"].get<double>(),
                         s["rejected"].get<bool>() ? " REJECTED" : "");
    }
  }
  return out;
}

std::string RenderJunit(const GateResult& r) {
  int failures = 0, skipped = 0;
  for (const CriterionResult& c : r.criteria) {
    failures += c.harmful;
    skipped += c.label == GateLabel::kNoData;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"ttft gate\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n",
      r.criteria.size() + 1, failures + (r.verdict == GateVerdict::kFail ? 1 : 0), skipped);
  out += fmt::format("  <testsuite name=\"canary\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n",
                     r.criteria.size() + 1, failures + (r.verdict == GateVerdict::kFail ? 1 : 0),
                     skipped);
  out += "    <testcase classname=\"ttft.gate\" name=\"verdict\">\n";
  if (r.verdict == GateVerdict::kFail) {
    out += fmt::format("      <failure message=\"{}\"/>\n", Xml(r.reason));
  } else if (r.verdict == GateVerdict::kInconclusive) {
    out += fmt::format("      <skipped message=\"{}\"/>\n", Xml(r.reason));
  }
  out += "    </testcase>\n";
  for (const CriterionResult& c : r.criteria) {
    out += fmt::format("    <testcase classname=\"ttft.gate\" name=\"{}\">\n",
                       Xml(ToString(c.criterion.metric)));
    if (c.harmful) {
      out += fmt::format("      <failure message=\"{}\">{}</failure>\n",
                         Xml(fmt::format("{}: {}", ToString(c.label), c.rule)), Xml(c.method));
    } else if (c.label == GateLabel::kNoData) {
      out += fmt::format("      <skipped message=\"{}\"/>\n", Xml(c.rule));
    }
    out += fmt::format("      <system-out>{}</system-out>\n", Xml(c.rule));
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string RenderGithub(const GateResult& r) {
  std::string out;
  for (const CriterionResult& c : r.criteria) {
    if (c.harmful) {
      out += fmt::format("::error title=ttft gate: {} {}::{}\n", ToString(c.criterion.metric),
                         ToString(c.label), GhEscape(c.rule));
    } else if (c.label == GateLabel::kNoData) {
      out += fmt::format("::warning title=ttft gate: {} NoData::{}\n", ToString(c.criterion.metric),
                         GhEscape(c.rule));
    }
  }
  const char* level = r.verdict == GateVerdict::kFail           ? "error"
                      : r.verdict == GateVerdict::kInconclusive ? "warning"
                                                                : "notice";
  out +=
      fmt::format("::{} title=ttft gate: {}::{}\n", level, ToString(r.verdict), GhEscape(r.reason));
  return out;
}

// Markdown text from a result: the reason and rules quote the config's names and
// the data's labels (ttft/format.h).
std::string Md(std::string_view s) { return escape::Markdown(s); }

std::string RenderMarkdown(const GateResult& r) {
  const char* icon = r.verdict == GateVerdict::kPass   ? ":white_check_mark:"
                     : r.verdict == GateVerdict::kFail ? ":x:"
                                                       : ":grey_question:";
  std::string out =
      fmt::format("### {} ttft gate: **{}**\n\n{}\n\n", icon, ToString(r.verdict), Md(r.reason));
  out +=
      "| criterion | label | baseline | canary | effect [interval] | n (base / canary) | "
      "critical |\n|---|---|---:|---:|---:|---:|---|\n";
  for (const CriterionResult& c : r.criteria) {
    out += fmt::format("| {} | {} | {} | {} | {} | {} / {} | {} |\n", ToString(c.criterion.metric),
                       ToString(c.label), Md(c.baseline_bound + Fmt(c.baseline)),
                       Md(c.canary_bound + Fmt(c.canary)), Md(EffectText(c)), c.baseline_n,
                       c.canary_n, c.criterion.critical ? "yes" : "no");
  }
  out += "\n<details><summary>Rules</summary>\n\n";
  for (const CriterionResult& c : r.criteria) {
    out += fmt::format("- **{}**: {}\n", ToString(c.criterion.metric), Md(c.rule));
  }
  out += "\n</details>\n";
  return out;
}

}  // namespace

Result<std::string> RenderGate(const GateResult& result, std::string_view format) {
  if (format == "text") return RenderText(result);
  if (format == "json") return ToJson(result).dump(2) + "\n";
  if (format == "junit") return RenderJunit(result);
  if (format == "github") return RenderGithub(result);
  if (format == "markdown") return RenderMarkdown(result);
  return Status::Invalid(
      fmt::format("--format {}: expected text, json, junit, github or markdown", format));
}

}  // namespace ttft
