// The pre-deploy what-if (ttft/whatif.h): a template change mapped into a scenario and
// simulated in steady state over seeds, old and new side by side.
#include "ttft/whatif.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "ttft/parallel.h"
#include "ttft/pipeline.h"
#include "ttft/spans.h"
#include "ttft/window_stats.h"

namespace ttft {
namespace {

// t_{0.975, df} for df = 1..30 (any statistics table, e.g. NIST/SEMATECH e-Handbook of
// Statistical Methods, 1.3.6.7.2); beyond 30 the normal 1.96 (at most 4% below t, so
// the interval is slightly narrow there).
double T975(int df) {
  static constexpr double kT[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                  2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df <= 0) return 0;
  if (df <= 30) return kT[df - 1];
  return 1.96;
}

// Keeps the spans arriving in [from_s, to_s).
class WindowSink : public SimulationSink {
 public:
  WindowSink(double from_s, double to_s) : from_s_(from_s), to_s_(to_s) {}
  Status OnSpan(const Span& span) override {
    if (span.arrival_s >= from_s_ && span.arrival_s < to_s_) AddSpanToTable(span, table_);
    return Status::Ok();
  }
  Status OnSnapshot(const MetricSnapshot&) override { return Status::Ok(); }
  const SpanTable& table() const { return table_; }

 private:
  double from_s_, to_s_;
  SpanTable table_;
};

struct RunFigures {
  double hit_rate = kMissing, p50 = kMissing, p99 = kMissing;
  double tenant_hit_rate = kMissing, tenant_p50 = kMissing, tenant_p99 = kMissing;
  double requests = 0;
};

// One version: the scenario with the template's segments replaced, in steady state.
struct Arm {
  Scenario scenario;
  int64_t static_tokens = 0, per_request_tokens = 0;
};

std::string Names(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "(none)" : s;
}

std::string Where(const Scenario& sc) { return sc.source_path.empty() ? sc.name : sc.source_path; }

// The segments' description for the report: "question (per_request, lognormal mean 1000)".
std::string SegmentLabel(const SegmentSpec& s) {
  std::string len;
  switch (s.tokens.kind) {
    case Distribution::Kind::kFixed: len = fmt::format("{:g} tokens", s.tokens.value); break;
    case Distribution::Kind::kUniform:
      len = fmt::format("uniform {:g}-{:g} tokens", s.tokens.min, s.tokens.max);
      break;
    case Distribution::Kind::kLognormal:
      len = fmt::format("lognormal mean {:g} tokens", s.tokens.mean);
      break;
    case Distribution::Kind::kEmpirical:
      len = fmt::format("empirical mean {:g} tokens", s.tokens.Mean());
      break;
  }
  return fmt::format("{} ({}, {})", s.name, ToString(s.kind), len);
}

Result<RunFigures> RunOne(const Scenario& sc, const std::set<std::string>& tenants) {
  const AnalysisWindows w = ScenarioWindows(sc);
  WindowSink sink(w.incident.from_s, w.incident.to_s);
  TTFT_ASSIGN_OR_RETURN(SimulationResult result, Simulate(sc, sink, {}));
  (void)result;
  const SpanTable& t = sink.table();
  std::vector<uint32_t> all(t.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint32_t>(i);
  std::vector<char> in_group(t.num_label_sets());
  for (uint32_t s = 0; s < in_group.size(); ++s) {
    in_group[s] = tenants.count(std::string(t.label_of_set(s, SpanLabel::kTenant))) > 0;
  }
  std::vector<uint32_t> group;
  const auto sets = t.label_set();
  for (uint32_t r : all) {
    if (in_group[sets[r]]) group.push_back(r);
  }
  const WindowStats fleet = ComputeWindowStats(t, all, w.incident.from_s, w.incident.to_s);
  const WindowStats mine = ComputeWindowStats(t, group, w.incident.from_s, w.incident.to_s);
  RunFigures f;
  f.hit_rate = fleet.prefix_cache_hit_rate;
  f.p50 = fleet.ttft_s.p50;
  f.p99 = fleet.ttft_s.p99;
  f.tenant_hit_rate = mine.prefix_cache_hit_rate;
  f.tenant_p50 = mine.ttft_s.p50;
  f.tenant_p99 = mine.ttft_s.p99;
  f.requests = static_cast<double>(fleet.requests);
  return f;
}

constexpr LintRule kWhatIfRules[] = {
    {"TTFT-W001", "predicted-p99-regression", "Predicted p99 TTFT regression",
     "Simulated on the scenario in steady state, the new version's p99 TTFT is above the old "
     "one's by more than --max-p99-increase in every seed.",
     "error"},
    {"TTFT-W002", "predicted-hit-rate-drop", "Predicted prefix-cache hit-rate drop",
     "The new version's predicted prefix-cache hit rate (of the tenants using the template, or "
     "of the corpus) is below the old one's by more than --max-hit-rate-drop.",
     "error"},
};

std::vector<LintRule> WhatIfRules() {
  return std::vector<LintRule>(std::begin(kWhatIfRules), std::end(kWhatIfRules));
}

}  // namespace

OverSeeds Summarize(std::vector<double> values) {
  OverSeeds o;
  o.values = std::move(values);
  if (o.values.empty()) return o;
  const double n = static_cast<double>(o.values.size());
  double sum = 0;
  o.min = o.max = o.values.front();
  for (double v : o.values) {
    sum += v;
    o.min = std::min(o.min, v);
    o.max = std::max(o.max, v);
  }
  o.mean = sum / n;
  o.ci_low = o.ci_high = o.mean;
  if (o.values.size() >= 2) {
    double ss = 0;
    for (double v : o.values) ss += (v - o.mean) * (v - o.mean);
    const double sd = std::sqrt(ss / (n - 1));
    const double half = T975(static_cast<int>(o.values.size()) - 1) * sd / std::sqrt(n);
    o.ci_low = o.mean - half;
    o.ci_high = o.mean + half;
  }
  return o;
}

bool WhatIfReport::violation() const {
  for (const Finding& f : findings) {
    if (f.level == FindingLevel::kError) return true;
  }
  return false;
}

bool CorpusDiffReport::violation() const {
  for (const Finding& f : findings) {
    if (f.level == FindingLevel::kError) return true;
  }
  return false;
}

Result<WhatIfReport> PredictTemplateChange(const TemplateLintReport& old_lint,
                                           const TemplateLintReport& new_lint,
                                           const Scenario& scenario, const WhatIfOptions& options) {
  if (options.seeds < 1) return Status::Invalid("--seeds must be >= 1");
  const std::string where = Where(scenario);
  WhatIfReport rep;
  rep.old_path = old_lint.template_path;
  rep.new_path = new_lint.template_path;
  rep.scenario = scenario.name;
  rep.template_name = options.template_name;
  rep.old_lint = old_lint;
  rep.new_lint = new_lint;
  rep.max_p99_increase = options.max_p99_increase;
  rep.max_hit_rate_drop = options.max_hit_rate_drop;

  // The template and the tenants that use it.
  Scenario base = scenario;
  auto& templates = base.workload.templates;
  auto tmpl_it = std::find_if(templates.begin(), templates.end(), [&](const TemplateSpec& t) {
    return t.name == options.template_name;
  });
  if (tmpl_it == templates.end()) {
    std::vector<std::string> names;
    names.reserve(templates.size());
    for (const auto& t : templates) names.push_back(t.name);
    return Status::Invalid(fmt::format("{}: templates: no template \"{}\" (the scenario has: {})",
                                       where, options.template_name, Names(names)));
  }
  TemplateSpec& tmpl = *tmpl_it;
  std::vector<size_t> switched;
  for (size_t i = 0; i < base.workload.tenants.size(); ++i) {
    const TenantSpec& t = base.workload.tenants[i];
    if (t.template_name != tmpl.name) continue;
    if (!options.tenant.empty() && t.name != options.tenant) continue;
    switched.push_back(i);
    rep.tenants.push_back(t.name);
  }
  if (switched.empty()) {
    return Status::Invalid(
        options.tenant.empty()
            ? fmt::format("{}: tenants: no tenant uses template \"{}\"", where, tmpl.name)
            : fmt::format("{}: tenants: no tenant \"{}\" using template \"{}\"", where,
                          options.tenant, tmpl.name));
  }

  // Steady state: no events, no change; the window is the whole run after the warm-up.
  base.events.clear();
  base.workload.template_switches.clear();
  base.workload.traffic_changes.clear();
  base.analysis.change_at_s = -1;
  base.analysis.window_s = 0;
  // Nothing reads the scrapes: one at the end instead of one per interval (scrapes cut
  // planned decode runs, which changes no token time: docs/architecture.md).
  base.scrape_interval_s = std::max(base.scrape_interval_s, base.duration_s + base.drain_limit_s);
  const AnalysisWindows w = ScenarioWindows(base);
  rep.window_from_s = w.incident.from_s;
  rep.window_to_s = w.incident.to_s;

  // New versions of the template, one per (base version, arm).
  auto make_arm = [&](const TemplateLintReport& lint, const std::string& tag) -> Result<Arm> {
    Arm arm;
    arm.scenario = base;
    arm.static_tokens = std::max<int64_t>(0, lint.cacheable_prefix_tokens);
    arm.per_request_tokens = std::max<int64_t>(0, lint.prompt_tokens - arm.static_tokens);
    TemplateSpec& t = *std::find_if(
        arm.scenario.workload.templates.begin(), arm.scenario.workload.templates.end(),
        [&](const TemplateSpec& x) { return x.name == options.template_name; });
    std::vector<TemplateVersion> added;
    for (size_t i : switched) {
      TenantSpec& tenant = arm.scenario.workload.tenants[i];
      const std::string version = "whatif-" + tag + "@" + tenant.template_version;
      if (std::none_of(added.begin(), added.end(),
                       [&](const TemplateVersion& v) { return v.version == version; })) {
        auto from = std::find_if(
            t.versions.begin(), t.versions.end(),
            [&](const TemplateVersion& v) { return v.version == tenant.template_version; });
        if (from == t.versions.end()) {
          return Status::Invalid(
              fmt::format("{}: tenants: \"{}\" uses version \"{}\" of \"{}\", "
                          "which the template does not have",
                          where, tenant.name, tenant.template_version, t.name));
        }
        TemplateVersion v;
        v.version = version;
        if (arm.static_tokens > 0) {
          SegmentSpec s;
          s.name = "template_static";
          s.kind = SegmentKind::kStatic;
          s.content = "whatif:" + tag + ":" + t.name + ":static";
          s.tokens = Distribution::Fixed(static_cast<double>(arm.static_tokens));
          v.segments.push_back(s);
        }
        if (arm.per_request_tokens > 0) {
          SegmentSpec s;
          s.name = "template_rest";
          s.kind = SegmentKind::kPerRequest;
          s.tokens = Distribution::Fixed(static_cast<double>(arm.per_request_tokens));
          v.segments.push_back(s);
        }
        for (const std::string& name : options.keep_segments) {
          if (std::none_of(from->segments.begin(), from->segments.end(),
                           [&](const SegmentSpec& s) { return s.name == name; })) {
            return Status::Invalid(
                fmt::format("{}: templates[{}].versions[{}]: no segment \"{}\" to keep", where,
                            t.name, from->version, name));
          }
        }
        for (const SegmentSpec& s : from->segments) {
          const bool keep =
              options.keep_segments_set
                  ? std::find(options.keep_segments.begin(), options.keep_segments.end(), s.name) !=
                        options.keep_segments.end()
                  : s.kind == SegmentKind::kPerRequest &&
                        s.tokens.kind != Distribution::Kind::kFixed;
          const std::string label = SegmentLabel(s);
          auto& list = keep ? rep.kept : rep.replaced;
          if (tag == "old" && std::find(list.begin(), list.end(), label) == list.end()) {
            list.push_back(label);
          }
          if (keep) v.segments.push_back(s);
        }
        if (v.segments.empty()) {
          return Status::Invalid(
              fmt::format("{}: template \"{}\": the what-if's version would be empty (no "
                          "rendered tokens and no kept segment)",
                          where, t.name));
        }
        added.push_back(std::move(v));
      }
      tenant.template_version = version;
    }
    for (auto& v : added) t.versions.push_back(std::move(v));
    TTFT_RETURN_IF_ERROR(ValidateScenario(arm.scenario));
    return arm;
  };
  TTFT_ASSIGN_OR_RETURN(Arm old_arm, make_arm(old_lint, "old"));
  TTFT_ASSIGN_OR_RETURN(Arm new_arm, make_arm(new_lint, "new"));
  rep.old_arm.static_tokens = old_arm.static_tokens;
  rep.old_arm.per_request_tokens = old_arm.per_request_tokens;
  rep.new_arm.static_tokens = new_arm.static_tokens;
  rep.new_arm.per_request_tokens = new_arm.per_request_tokens;

  // 2 x seeds simulations on a pool of threads.
  const int n = options.seeds;
  for (int i = 0; i < n; ++i)
    rep.seeds.push_back(scenario.workload.seed + static_cast<uint64_t>(i));
  const std::set<std::string> tenant_set(rep.tenants.begin(), rep.tenants.end());
  std::vector<Result<RunFigures>> results(2 * static_cast<size_t>(n), Status::Internal("not run"));
  ParallelFor(results.size(), options.threads, [&](size_t j) {
    Scenario sc = (j % 2 == 0 ? old_arm : new_arm).scenario;
    sc.workload.seed = rep.seeds[j / 2];
    results[j] = RunOne(sc, tenant_set);
  });

  std::vector<RunFigures> figs[2];
  for (size_t j = 0; j < results.size(); ++j) {
    if (!results[j].ok()) return results[j].status();
    figs[j % 2].push_back(*results[j]);
  }
  auto fill = [](WhatIfArm& a, const std::vector<RunFigures>& f) {
    auto col = [&](double RunFigures::*m) {
      std::vector<double> v;
      v.reserve(f.size());
      for (const RunFigures& x : f) v.push_back(x.*m);
      return Summarize(std::move(v));
    };
    a.hit_rate = col(&RunFigures::hit_rate);
    a.p50_ttft_s = col(&RunFigures::p50);
    a.p99_ttft_s = col(&RunFigures::p99);
    a.tenant_hit_rate = col(&RunFigures::tenant_hit_rate);
    a.tenant_p50_ttft_s = col(&RunFigures::tenant_p50);
    a.tenant_p99_ttft_s = col(&RunFigures::tenant_p99);
    a.requests = col(&RunFigures::requests);
  };
  fill(rep.old_arm, figs[0]);
  fill(rep.new_arm, figs[1]);
  std::vector<double> p99r, p50r, hit;
  for (int i = 0; i < n; ++i) {
    p99r.push_back(figs[1][i].p99 / figs[0][i].p99);
    p50r.push_back(figs[1][i].p50 / figs[0][i].p50);
    hit.push_back(figs[1][i].tenant_hit_rate - figs[0][i].tenant_hit_rate);
  }
  rep.p99_ratio = Summarize(std::move(p99r));
  rep.p50_ratio = Summarize(std::move(p50r));
  rep.tenant_hit_rate_change = Summarize(std::move(hit));

  // Findings, located where the new version's non-static content starts.
  SourcePos pos = new_lint.first_non_static_byte >= 0 ? new_lint.offender_pos : SourcePos{};
  const std::string because =
      old_lint.cacheable_prefix_tokens != new_lint.cacheable_prefix_tokens
          ? fmt::format(" The cacheable prefix goes from {} to {} tokens{}.",
                        old_lint.cacheable_prefix_tokens, new_lint.cacheable_prefix_tokens,
                        new_lint.first_non_static_byte >= 0
                            ? fmt::format(" (first non-static content: {}, {})", new_lint.offender,
                                          new_lint.offender_class)
                            : std::string())
          : std::string();
  if (options.max_p99_increase >= 0 && rep.p99_ratio.min > 1 + options.max_p99_increase) {
    rep.findings.push_back(
        {"TTFT-W001", FindingLevel::kError,
         fmt::format("predicted p99 TTFT {:.3f} s -> {:.3f} s (x{:.2f}, {}) on scenario {}: "
                     "above the allowed +{:.0f}%.{}",
                     rep.old_arm.p99_ttft_s.mean, rep.new_arm.p99_ttft_s.mean, rep.p99_ratio.mean,
                     n == 1 ? std::string("on 1 seed")
                            : fmt::format("x{:.2f}-x{:.2f} over {} seeds", rep.p99_ratio.min,
                                          rep.p99_ratio.max, n),
                     rep.scenario, 100 * options.max_p99_increase, because),
         pos, new_lint.offender});
  }
  if (options.max_hit_rate_drop >= 0 &&
      -rep.tenant_hit_rate_change.max > options.max_hit_rate_drop) {
    rep.findings.push_back(
        {"TTFT-W002", FindingLevel::kError,
         fmt::format("predicted prefix-cache hit rate of {} {:.1f}% -> {:.1f}% ({:+.1f} points): "
                     "a drop above the allowed {:.1f} points.{}",
                     Names(rep.tenants), 100 * rep.old_arm.tenant_hit_rate.mean,
                     100 * rep.new_arm.tenant_hit_rate.mean, 100 * rep.tenant_hit_rate_change.mean,
                     100 * options.max_hit_rate_drop, because),
         pos, new_lint.offender});
  }
  return rep;
}

CorpusDiffReport DiffCorpora(CorpusReport old_report, CorpusReport new_report,
                             double max_hit_rate_drop) {
  CorpusDiffReport d;
  d.old_report = std::move(old_report);
  d.new_report = std::move(new_report);
  d.max_hit_rate_drop = max_hit_rate_drop;
  const double a = d.old_report.prediction.hit_rate(), b = d.new_report.prediction.hit_rate();
  if (max_hit_rate_drop >= 0 && a - b > max_hit_rate_drop) {
    d.findings.push_back(
        {"TTFT-W002", FindingLevel::kError,
         fmt::format("predicted prefix-cache hit rate {:.1f}% ({}) -> {:.1f}% ({}): a drop of "
                     "{:.1f} points, above the allowed {:.1f}",
                     100 * a, d.old_report.corpus_path, 100 * b, d.new_report.corpus_path,
                     100 * (a - b), 100 * max_hit_rate_drop),
         SourcePos{}, ""});
  }
  return d;
}

// ---------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------

namespace {

nlohmann::ordered_json Num(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json SeedsJson(const OverSeeds& o) {
  nlohmann::ordered_json v = nlohmann::ordered_json::array();
  for (double x : o.values) v.push_back(Num(x));
  return {{"mean", Num(o.mean)},       {"min", Num(o.min)},           {"max", Num(o.max)},
          {"ci95_low", Num(o.ci_low)}, {"ci95_high", Num(o.ci_high)}, {"per_seed", std::move(v)}};
}

nlohmann::ordered_json ArmJson(const WhatIfArm& a, const TemplateLintReport& lint) {
  nlohmann::ordered_json j;
  j["template"] = lint.template_path;
  j["prompt_tokens"] = lint.prompt_tokens;
  j["cacheable_prefix_tokens"] = lint.cacheable_prefix_tokens;
  j["first_non_static"] = lint.first_non_static_byte >= 0
                              ? nlohmann::ordered_json{{"source", lint.offender},
                                                       {"class", lint.offender_class},
                                                       {"line", lint.offender_pos.line},
                                                       {"column", lint.offender_pos.column}}
                              : nlohmann::ordered_json(nullptr);
  j["segments"] = {{"static_tokens", a.static_tokens},
                   {"per_request_tokens", a.per_request_tokens}};
  j["fleet"] = {{"hit_rate", SeedsJson(a.hit_rate)},
                {"p50_ttft_s", SeedsJson(a.p50_ttft_s)},
                {"p99_ttft_s", SeedsJson(a.p99_ttft_s)},
                {"requests", SeedsJson(a.requests)}};
  j["tenants"] = {{"hit_rate", SeedsJson(a.tenant_hit_rate)},
                  {"p50_ttft_s", SeedsJson(a.tenant_p50_ttft_s)},
                  {"p99_ttft_s", SeedsJson(a.tenant_p99_ttft_s)}};
  return j;
}

const char* LevelName(FindingLevel l) {
  return l == FindingLevel::kError ? "error" : l == FindingLevel::kWarning ? "warning" : "note";
}

nlohmann::ordered_json FindingsJson(const std::vector<Finding>& fs) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const Finding& f : fs) {
    nlohmann::ordered_json j = {
        {"rule", f.rule_id}, {"level", LevelName(f.level)}, {"message", f.message}};
    if (f.pos.line > 0) {
      j["line"] = f.pos.line;
      j["column"] = f.pos.column;
    }
    a.push_back(std::move(j));
  }
  return a;
}

// "0.912 s [0.881, 0.943] (0.870-0.951)"
std::string Seconds(const OverSeeds& o) {
  if (o.values.size() < 2) return fmt::format("{:.3f} s", o.mean);
  return fmt::format("{:.3f} s  [{:.3f}, {:.3f}]  ({:.3f}-{:.3f})", o.mean, o.ci_low, o.ci_high,
                     o.min, o.max);
}
std::string Percent(const OverSeeds& o) {
  if (o.values.size() < 2) return fmt::format("{:.1f}%", 100 * o.mean);
  return fmt::format("{:.1f}%  [{:.1f}, {:.1f}]  ({:.1f}-{:.1f})", 100 * o.mean, 100 * o.ci_low,
                     100 * o.ci_high, 100 * o.min, 100 * o.max);
}
std::string Ratio(const OverSeeds& o) {
  if (o.values.size() < 2) return fmt::format("x{:.2f}", o.mean);
  return fmt::format("x{:.2f}  [{:.2f}, {:.2f}]  ({:.2f}-{:.2f})", o.mean, o.ci_low, o.ci_high,
                     o.min, o.max);
}

}  // namespace

Result<std::string> FormatWhatIfReport(const WhatIfReport& r, std::string_view format) {
  if (format == "sarif") return FindingsSarif(r.findings, r.new_path, WhatIfRules());
  if (format == "github") return FindingsGithub(r.findings, r.new_path);
  if (format == "json") {
    nlohmann::ordered_json j;
    j["mode"] = "template-diff";
    j["result"] = r.violation() ? "fail" : "pass";
    j["scenario"] = r.scenario;
    j["template"] = r.template_name;
    j["tenants"] = r.tenants;
    j["replaced_segments"] = r.replaced;
    j["kept_segments"] = r.kept;
    j["seeds"] = r.seeds;
    j["window_s"] = {r.window_from_s, r.window_to_s};
    j["approximate_tokens"] = r.new_lint.approximate_tokens;
    j["interval"] = "95% Student-t interval of the mean over seeds";
    j["old"] = ArmJson(r.old_arm, r.old_lint);
    j["new"] = ArmJson(r.new_arm, r.new_lint);
    j["change"] = {{"p99_ttft_ratio", SeedsJson(r.p99_ratio)},
                   {"p50_ttft_ratio", SeedsJson(r.p50_ratio)},
                   {"tenant_hit_rate_change", SeedsJson(r.tenant_hit_rate_change)}};
    j["thresholds"] = {{"max_p99_increase", r.max_p99_increase},
                       {"max_hit_rate_drop", r.max_hit_rate_drop}};
    j["findings"] = FindingsJson(r.findings);
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  if (format != "text") return Status::Invalid(fmt::format("unknown format '{}'", format));
  std::string o = fmt::format("{} -> {}: {}\n", r.old_path, r.new_path,
                              r.violation() ? "FAIL (predicted regression)" : "pass");
  auto version = [&](const char* name, const TemplateLintReport& l, const WhatIfArm& a) {
    o += fmt::format("  {}: {} tokens, cacheable prefix {} tokens", name, l.prompt_tokens,
                     l.cacheable_prefix_tokens);
    if (l.first_non_static_byte >= 0) {
      o += fmt::format(" (then {}, {}, at {}:{}:{})", l.offender, l.offender_class, l.template_path,
                       l.offender_pos.line, l.offender_pos.column);
    } else {
      o += " (all static)";
    }
    o += fmt::format(" -> static {} + per-request {} tokens\n", a.static_tokens,
                     a.per_request_tokens);
  };
  version("old", r.old_lint, r.old_arm);
  version("new", r.new_lint, r.new_arm);
  o += fmt::format("  scenario {}, template {} of tenant{} {}, steady state over [{:g}, {:g}) s\n",
                   r.scenario, r.template_name, r.tenants.size() == 1 ? "" : "s", Names(r.tenants),
                   r.window_from_s, r.window_to_s);
  o += fmt::format("  segments replaced by the template: {}\n", Names(r.replaced));
  o += fmt::format("  segments kept (request content): {}\n", Names(r.kept));
  std::string seeds;
  for (uint64_t s : r.seeds) seeds += (seeds.empty() ? "" : ",") + std::to_string(s);
  o += fmt::format(
      "  predicted over {} seed{} ({}): mean  [95% t-interval of the mean]  (min-max)\n",
      r.seeds.size(), r.seeds.size() == 1 ? "" : "s", seeds);
  auto row = [&](const char* what, const std::string& a, const std::string& b) {
    o += fmt::format("    {:<22} old {}\n    {:<22} new {}\n", what, a, "", b);
  };
  row("hit rate (tenants)", Percent(r.old_arm.tenant_hit_rate), Percent(r.new_arm.tenant_hit_rate));
  row("hit rate (fleet)", Percent(r.old_arm.hit_rate), Percent(r.new_arm.hit_rate));
  row("p50 TTFT (fleet)", Seconds(r.old_arm.p50_ttft_s), Seconds(r.new_arm.p50_ttft_s));
  row("p99 TTFT (fleet)", Seconds(r.old_arm.p99_ttft_s), Seconds(r.new_arm.p99_ttft_s));
  row("p99 TTFT (tenants)", Seconds(r.old_arm.tenant_p99_ttft_s),
      Seconds(r.new_arm.tenant_p99_ttft_s));
  o += fmt::format("    {:<22} {}\n", "p99 TTFT new/old", Ratio(r.p99_ratio));
  o += fmt::format("    {:<22} {}\n", "p50 TTFT new/old", Ratio(r.p50_ratio));
  for (const Finding& f : r.findings) {
    o += fmt::format("  {} {} {}:{}:{}: {}\n", LevelName(f.level), f.rule_id, r.new_path,
                     std::max(1, f.pos.line), std::max(1, f.pos.column), f.message);
  }
  if (r.new_lint.approximate_tokens) {
    o += "  note: token counts are approximate (no --tokenizer)\n";
  }
  return o;
}

Result<std::string> FormatCorpusDiffReport(const CorpusDiffReport& r, std::string_view format) {
  if (format == "sarif") return FindingsSarif(r.findings, r.new_report.corpus_path, WhatIfRules());
  if (format == "github") return FindingsGithub(r.findings, r.new_report.corpus_path);
  const PrefixCachePrediction& a = r.old_report.prediction;
  const PrefixCachePrediction& b = r.new_report.prediction;
  const char* kNote = "TTFT is predicted for template diffs only (docs/template.md, \"Diff mode\")";
  if (format == "json") {
    auto side = [](const CorpusReport& c) {
      const PrefixCachePrediction& p = c.prediction;
      return nlohmann::ordered_json{
          {"corpus", c.corpus_path},          {"prompts", p.prompts},
          {"prompt_tokens", p.prompt_tokens}, {"hit_tokens", p.hit_tokens},
          {"hit_rate", p.hit_rate()},         {"evicted_blocks", p.evicted_blocks}};
    };
    nlohmann::ordered_json j;
    j["mode"] = "corpus-diff";
    j["result"] = r.violation() ? "fail" : "pass";
    j["approximate_tokens"] = r.new_report.approximate_tokens;
    j["block_size"] = r.new_report.block_size;
    j["capacity_blocks"] = r.new_report.capacity_blocks >= 0
                               ? nlohmann::ordered_json(r.new_report.capacity_blocks)
                               : nlohmann::ordered_json(nullptr);
    j["old"] = side(r.old_report);
    j["new"] = side(r.new_report);
    j["hit_rate_change"] = b.hit_rate() - a.hit_rate();
    j["max_hit_rate_drop"] = r.max_hit_rate_drop;
    j["note"] = kNote;
    j["findings"] = FindingsJson(r.findings);
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  if (format != "text") return Status::Invalid(fmt::format("unknown format '{}'", format));
  std::string o = fmt::format("{} -> {}: {}\n", r.old_report.corpus_path, r.new_report.corpus_path,
                              r.violation() ? "FAIL (predicted hit-rate drop)" : "pass");
  o += fmt::format("  predicted prefix-cache hit rate: {:.2f}% -> {:.2f}% ({:+.2f} points)\n",
                   100 * a.hit_rate(), 100 * b.hit_rate(), 100 * (b.hit_rate() - a.hit_rate()));
  o += fmt::format("  old: {} prompts, {} tokens; new: {} prompts, {} tokens (blocks of {}, {})\n",
                   a.prompts, a.prompt_tokens, b.prompts, b.prompt_tokens, r.new_report.block_size,
                   r.new_report.capacity_blocks >= 0
                       ? fmt::format("capacity {} blocks, LRU", r.new_report.capacity_blocks)
                       : std::string("unbounded cache"));
  for (const Finding& f : r.findings) {
    o += fmt::format("  {} {}: {}\n", LevelName(f.level), f.rule_id, f.message);
  }
  o += fmt::format("  note: {}\n", kNote);
  if (r.new_report.approximate_tokens) {
    o += "  note: token counts are approximate (no --tokenizer)\n";
  }
  return o;
}

}  // namespace ttft
