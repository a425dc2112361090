// Wording that follows the numbers (issue 15): every report of the incident suite (one
// seed per scenario, the controls included), an insufficient-data report and a report
// on spans of a model the cost model does not know are rendered as text, Markdown and
// JSON, and no sentence may contradict the verdict or its own numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "report/report_testing.h"
#include "ttft/diagnose.h"
#include "ttft/format.h"
#include "ttft/pipeline.h"
#include "ttft/report.h"
#include "ttft/scenario.h"

namespace ttft {
namespace {

struct Rendered {
  std::string name;
  const DiagnosisReport* report;
  std::string text, markdown, json, html;
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The lines of section 5 ("Where it lives") of the text report.
std::vector<std::string> WhereItLivesLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("5. Where it lives", 0) == 0) {
      inside = true;
    } else if (inside && line.rfind("6. ", 0) == 0) {
      break;
    } else if (inside && line.rfind("  - ", 0) == 0) {
      out.push_back(line);
    }
  }
  return out;
}

// `out` without the attribution (issue 13): its section in text and Markdown, its
// evidence lines ("counterfactual replay: ..."), and its JSON object. Shapley shares
// may lie outside 0-100% (a cause whose restoration raises the p99 has a negative
// share) and the interaction may be negative, so CheckAttribution checks them instead.
std::string WithoutAttribution(const std::string& out) {
  if (!out.empty() && out[0] == '{') {
    nlohmann::json j = nlohmann::json::parse(out.substr(0, out.rfind('}') + 1));
    j.erase("attribution");
    for (auto& h : j["hypotheses"]) {
      auto& ev = h["evidence"];
      for (size_t i = ev.size(); i-- > 0;) {
        if (ev[i].is_string() &&
            ev[i].get<std::string>().find("counterfactual replay:") != std::string::npos)
          ev.erase(i);
      }
    }
    return j.dump(1);
  }
  std::string kept;
  std::istringstream in(out);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("Attribution by counterfactual replay") != std::string::npos) {
      inside = true;
      continue;
    }
    if (inside && (line.rfind("5. Where", 0) == 0 || line.rfind("## 5.", 0) == 0)) inside = false;
    if (inside || line.find("counterfactual replay:") != std::string::npos) continue;
    kept += line + "\n";
  }
  return kept;
}

// The attribution's wording follows its numbers in every format: the headline is the
// library's (Headline) and is printed as such; a stated share is the factor's share
// rounded, shares sum to 100%, a negative interaction is not worded as compounding, and
// nothing "explains" when the attribution did not run or is inconclusive.
void CheckAttribution(const Rendered& r) {
  const Attribution& a = r.report->attribution;
  const std::string head = Headline(a);
  for (const std::string* out : {&r.text, &r.markdown, &r.json}) {
    EXPECT_NE(out->find(head.substr(0, 40)), std::string::npos) << head << "\n" << *out;
  }
  EXPECT_NE(r.html.find(HtmlEscape(head)), std::string::npos) << head;
  const bool stated =
      head.find(" explains ") != std::string::npos || head.find(" explain ") != std::string::npos;
  if (!a.run) {
    EXPECT_FALSE(stated) << head;
    EXPECT_FALSE(a.not_run_reason.empty());
    return;
  }
  if (!stated) return;
  EXPECT_TRUE(a.replay_none_p99_s > a.replay_all_p99_s) << head;
  double sum = 0;
  for (const FactorShare& f : a.factors) {
    sum += f.share;
    const std::string shown = numfmt::Pct(std::fabs(f.share) < 0.005 ? 0.0 : f.share);
    const bool plural = f.factor == ReplayFactor::kPrompts || f.factor == ReplayFactor::kOutputs ||
                        f.factor == ReplayFactor::kReplicas;
    const std::string verb =
        &f == &a.factors.front() ? (plural ? " explain " : " explains ") : std::string(" ");
    EXPECT_NE(head.find(f.cause + verb + shown), std::string::npos)
        << shown << " for " << f.cause << " in: " << head;
  }
  EXPECT_NEAR(sum, 1.0, 1e-6) << head;
  if (a.factors.size() > 1) {
    EXPECT_NE(head.find("interaction is " +
                        numfmt::Pct(std::fabs(a.interaction) < 0.005 ? 0.0 : a.interaction)),
              std::string::npos)
        << head;
  }
}

void CheckWording(const Rendered& r) {
  CheckAttribution(r);
  const DiagnosisReport& rep = *r.report;
  const bool no_regression = rep.verdict == Verdict::kNoRegression;
  SCOPED_TRACE(r.name + " (" + std::string(ToString(rep.verdict)) + ")");
  const std::string text = WithoutAttribution(r.text), markdown = WithoutAttribution(r.markdown),
                    json = WithoutAttribution(r.json);
  for (const std::string* out : {&text, &markdown, &json}) {
    const std::string low = Lower(*out);
    // "No regression" only when that is the verdict.
    if (!no_regression) {
      EXPECT_EQ(low.find("no regression"), std::string::npos) << *out;
      EXPECT_EQ(low.find("nothing to fix"), std::string::npos) << *out;
    }
    // Every percentage is a share within 0-100%.
    static const std::regex kPct(R"((-?[0-9]+(\.[0-9]+)?)%)");
    for (auto it = std::sregex_iterator(out->begin(), out->end(), kPct);
         it != std::sregex_iterator(); ++it) {
      const double v = std::stod((*it)[1].str());
      EXPECT_TRUE(v >= 0 && v <= 100) << (*it)[0].str() << " in\n" << *out;
    }
    // The decomposition's shares of the increase only where there is a significant
    // increase.
    if (rep.verdict != Verdict::kRegression) {
      EXPECT_EQ(low.find("of the increase"), std::string::npos) << *out;
    }
    // "The change is explained" only when something changed.
    if (out->find("The change is explained") != std::string::npos) {
      const Magnitude& m = rep.magnitude;
      const double obs =
          numfmt::Ratio(m.observed_queue_mean_before_s, m.observed_queue_mean_after_s);
      const double est = numfmt::Ratio(m.kingman_wait_before_s, m.kingman_wait_after_s);
      EXPECT_TRUE((std::isfinite(obs) && obs >= 1.25) || (std::isfinite(est) && est >= 1.25) ||
                  std::isinf(m.kingman_wait_after_s))
          << m.sentence;
    }
    // No mitigation names a wildcard target.
    EXPECT_EQ(out->find("deploy_template *"), std::string::npos);
  }
  // A group's share of the p99 increase (the rules' evidence lines, the mitigations)
  // only where there is a significant increase, in every format.
  if (rep.verdict != Verdict::kRegression) {
    for (const std::string* out : {&r.text, &r.markdown, &r.json, &r.html}) {
      EXPECT_EQ(Lower(*out).find("of the p99 increase"), std::string::npos) << *out;
    }
  }
  // No NaN or infinity in the text a person reads.
  static const std::regex kNan(R"(\b(nan|inf|infinity)\b)");
  for (const std::string* out : {&r.text, &r.markdown}) {
    EXPECT_FALSE(std::regex_search(Lower(*out), kNan)) << *out;
  }
  // "Where it lives" names each group once.
  std::set<std::string> named;
  for (const std::string& line : WhereItLivesLines(r.text)) {
    const std::string key = line.substr(0, line.find(':'));
    const std::string group = key.substr(0, key.find(" (new in the incident)"));
    EXPECT_TRUE(named.insert(group).second) << "listed twice: " << group << "\n" << r.text;
  }
}

Rendered Render(const std::string& name, const DiagnosisReport& rep) {
  return {name,           &rep, RenderText(rep, false), RenderMarkdown(rep), RenderJson(rep),
          RenderHtml(rep)};
}

TEST(Wording, FollowsTheNumbersAcrossTheIncidentSuite) {
  std::vector<std::string> names;
  for (const std::string& n : BuiltinScenarioNames()) {
    if (n.rfind("incidents/", 0) == 0 || n.rfind("multi/", 0) == 0) names.push_back(n);
  }
  ASSERT_GE(names.size(), 15u);
  std::set<Verdict> seen;
  for (const std::string& n : names) {
    auto sc = BuiltinScenario(n);
    ASSERT_TRUE(sc.ok()) << sc.status().ToString();
    RunOptions options;
    options.diagnose = true;
    auto run = RunScenario(*sc, options);
    ASSERT_TRUE(run.ok()) << n << ": " << run.status().ToString();
    const DiagnosisReport& rep = *run->diagnosis;
    seen.insert(rep.verdict);
    CheckWording(Render(n, rep));

    if (n != "incidents/prefix-cache-collapse") continue;
    // Too few requests: ten seconds on either side of the change.
    const double t = run->windows.change_at_s;
    DiagnosisInput in;
    in.baseline = {run->spans.get(), t - 5, t};
    in.incident = {run->spans.get(), t, t + 5};
    in.change_at_s = t;
    auto few = Diagnose(in);
    ASSERT_TRUE(few.ok()) << few.status().ToString();
    ASSERT_EQ(few->verdict, Verdict::kInsufficientData);
    const Rendered r = Render(n + " (10 s)", *few);
    CheckWording(r);
    EXPECT_NE(r.text.find("nothing to act on yet"), std::string::npos) << r.text;
  }
  EXPECT_TRUE(seen.count(Verdict::kRegression) && seen.count(Verdict::kNoRegression));
}

TEST(Wording, AnUnknownModelIsNamedAsUnknown) {
  SpanTable t;
  FillTwoWindows(t, [](Span& s, const SyntheticRow& row) {
    if (row.marked) s.tenant = "acme";
    s.model = "qwen2.5-0.5b";
    s.prompt_tokens = row.after ? 6000 : 3000;
    s.cached_tokens = 0;
    if (row.after) s.queue_s += 0.5 + (row.i % 7) * 0.1;
    s.prefill_s = s.prompt_tokens * 2e-5;
  });
  DiagnosisInput in = TwoWindowInput(t);
  auto rep = Diagnose(in);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  ASSERT_TRUE(rep->magnitude.available);
  const Rendered r = Render("qwen spans", *rep);
  CheckWording(r);
  for (const std::string* out : {&r.text, &r.markdown, &r.json}) {
    EXPECT_NE(out->find("qwen2.5-0.5b"), std::string::npos);
  }
  EXPECT_NE(rep->magnitude.sentence.find("model \"qwen2.5-0.5b\" is unknown"), std::string::npos)
      << rep->magnitude.sentence;
  EXPECT_NE(rep->magnitude.cost_model.find("unknown model \"qwen2.5-0.5b\""), std::string::npos)
      << rep->magnitude.cost_model;
}

}  // namespace
}  // namespace ttft
