// Prometheus recording and alerting rules and a Grafana dashboard for tail TTFT and the
// prefix cache (ttft/rules.h; docs/rules.md).
//
// Sources: metric names and bucket bounds from vLLM v1 vllm/v1/metrics/loggers.py and
// buckets.py, SGLang python/sglang/srt/metrics/collector.py (as summarised in
// ../shared/reference/serving-metrics-and-internals.md sections 1.2, 1.3, 4.1); the
// burn-rate windows and factors from the Google SRE workbook, "Alerting on SLOs",
// Table 5-8; the latency SLO from a histogram bucket as in Prometheus'
// docs/practices/histograms.md ("Apdex"); the dashboard JSON model from Grafana's
// "JSON model" documentation and vLLM's examples/observability dashboards.
#include "ttft/rules.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>

#include "ttft/promql.h"

namespace ttft {

namespace {

// The series an engine exports, by what they measure. An empty name: the engine has
// no such series, and its rules and panels are left out.
struct EngineSeries {
  std::string ttft;         // histogram (base name; _bucket, _count appended)
  std::string queue;        // histogram
  std::string prefill;      // histogram
  std::string hits;         // counter sample name: prefix-cache hits (tokens)
  std::string queries;      // counter sample name: prefix-cache lookups (tokens)
  std::string preemptions;  // counter sample name
  std::string kv_usage;     // gauge, fraction 0..1
  // One line each: what the generated files leave out or read differently, and why.
  std::vector<std::string> notes;
};

// Each note is one string literal split over lines, not a missing comma.
// NOLINTBEGIN(bugprone-suspicious-missing-comma)
EngineSeries SeriesFor(RulesEngine engine) {
  EngineSeries s;
  if (engine == RulesEngine::kVllm) {
    s.ttft = "vllm:time_to_first_token_seconds";
    s.queue = "vllm:request_queue_time_seconds";
    s.prefill = "vllm:request_prefill_time_seconds";
    s.hits = "vllm:prefix_cache_hits_total";
    s.queries = "vllm:prefix_cache_queries_total";
    s.preemptions = "vllm:num_preemptions_total";
    s.kv_usage = "vllm:kv_cache_usage_perc";
    s.notes = {
        "vLLM v1 metric names (vllm/v1/metrics/loggers.py). vLLM < 0.9 named the cache series "
        "vllm:gpu_prefix_cache_{hits,queries}_total and vllm:gpu_cache_usage_perc.",
        "Queue and prefill histograms have no bucket below 0.3 s (REQUEST_LATENCY_BUCKETS): "
        "their quantiles cannot resolve sub-300 ms times."};
    return s;
  }
  s.ttft = "sglang:time_to_first_token_seconds";
  s.queue = "sglang:queue_time_seconds";
  s.hits = "sglang:cached_tokens_total";
  s.queries = "sglang:prompt_tokens_total";
  s.preemptions = "sglang:num_retracted_requests_total";
  s.kv_usage = "sglang:token_usage";
  s.notes = {
      "SGLang metric names (python/sglang/srt/metrics/collector.py; run the server with "
      "--enable-metrics).",
      "LEFT OUT: prefill time. SGLang exports no per-request prefill-time histogram "
      "(sglang:per_stage_req_latency_seconds{stage=\"prefill_forward\"} exists only in some "
      "newer builds), so there are no prefill rules and the queue-versus-prefill panel shows "
      "queue time only.",
      "Prefix-cache hit rate = rate(sglang:cached_tokens_total) / "
      "rate(sglang:prompt_tokens_total). The sglang:cache_hit_rate gauge is not used: it is "
      "reset to 0 after decoding (sgl-project/sglang#5625).",
      "Queue time reads sglang:queue_time_seconds (newer collectors). SGLang <= 0.4 exported "
      "no queue histogram (0.3.x: sglang:waiting_request_latency_seconds): there the "
      "queue rules, alert and panel return nothing.",
      "Preemptions are SGLang's retractions (sglang:num_retracted_requests_total); KV usage "
      "is sglang:token_usage (fraction of the KV token pool in use)."};
  return s;
}
// NOLINTEND(bugprone-suspicious-missing-comma)

// Multiwindow, multi-burn-rate alerts for a 30-day SLO: the SRE workbook's Table 5-8
// page rows. factor = budget fraction spent x 720 h / long window.
struct BurnWindow {
  const char* alert;
  const char* long_window;
  const char* short_window;
  double factor;
  const char* budget;  // budget spent in the long window at that factor
};
constexpr BurnWindow kBurnWindows[] = {
    {"TTFTErrorBudgetBurnFast", "1h", "5m", 14.4, "2%"},
    {"TTFTErrorBudgetBurnSlow", "6h", "30m", 6, "5%"},
};

std::string Num(double v) { return fmt::format("{}", v); }

// `le` is matched as a string and exporters print bounds differently ("1.0" from
// Python's prometheus_client, "1" from Go): a regex that takes both, with the dot in a
// character class so nothing needs escaping inside YAML and PromQL strings.
std::string LeRegex(double bound) {
  std::string shortest = fmt::format("{}", bound);  // 1 -> "1", 2.5 -> "2.5"
  std::string alts;
  auto add = [&](const std::string& s) {
    std::string esc;
    for (char c : s) esc += c == '.' ? std::string("[.]") : std::string(1, c);
    if (!alts.empty()) alts += "|";
    alts += esc;
  };
  add(shortest);
  if (shortest.find('.') == std::string::npos && shortest.find('e') == std::string::npos) {
    add(shortest + ".0");
  }
  return alts;
}

// `metric{SEL,extra}`; no braces when both are empty.
std::string Sel(const std::string& metric, const std::string& selector,
                const std::string& extra = "") {
  std::string m(TrimLabelMatchers(selector));
  if (!extra.empty()) m += (m.empty() ? "" : ",") + extra;
  return m.empty() ? metric : metric + "{" + m + "}";
}

Status CheckPositive(const char* flag, double v) {
  if (!std::isfinite(v) || v <= 0) {
    return Status::Invalid(fmt::format("{} {}: must be a finite number > 0", flag, v));
  }
  return Status::Ok();
}

// The pieces every generator shares.
struct Ctx {
  const RulesOptions& o;
  EngineSeries s;
  std::string by_model = "model_name";
  std::string by_replica;

  explicit Ctx(const RulesOptions& opts) : o(opts), s(SeriesFor(opts.engine)) {
    by_replica = "model_name, " + o.replica_label;
  }

  std::string Quantile(double q, const std::string& hist, const std::string& by,
                       const std::string& window, const std::string& extra = "") const {
    return fmt::format("histogram_quantile({}, sum by ({}, le) (rate({}[{}])))", Num(q), by,
                       Sel(hist + "_bucket", o.selector, extra), window);
  }
  std::string SumRate(const std::string& counter, const std::string& by, const std::string& window,
                      const std::string& extra = "", const std::string& offset = "") const {
    return fmt::format("sum by ({}) (rate({}[{}]{}))", by, Sel(counter, o.selector, extra), window,
                       offset.empty() ? "" : " offset " + offset);
  }
  // Hit rate; idle series (no lookups) are dropped rather than divided by zero.
  std::string HitRate(const std::string& by, const std::string& window,
                      const std::string& extra = "", const std::string& offset = "") const {
    return fmt::format("{} / ({} > 0)", SumRate(s.hits, by, window, extra, offset),
                       SumRate(s.queries, by, window, extra, offset));
  }
  // Fraction of requests slower than the SLO threshold over `window`.
  std::string SloErrorRatio(const std::string& by, const std::string& window) const {
    return fmt::format(
        "1 - {} / ({} > 0)",
        SumRate(s.ttft + "_bucket", by, window, "le=~\"" + LeRegex(o.slo_ttft_s) + "\""),
        SumRate(s.ttft + "_count", by, window));
  }
  std::string Header(const char* what) const {
    std::string h = fmt::format(
        "# {} generated by `ttft rules` (docs/rules.md) for {} metric names.\n"
        "# Selector: {}; replica label: {}; TTFT SLO: {} of requests under {} s.\n",
        what, RulesEngineName(o.engine), o.selector.empty() ? "(none)" : o.selector,
        o.replica_label, Num(o.slo_objective), Num(o.slo_ttft_s));
    for (const std::string& n : s.notes) h += "# " + n + "\n";
    return h;
  }
};

void EmitGroups(YAML::Emitter& out, const std::vector<PromRuleGroup>& groups) {
  out << YAML::BeginMap << YAML::Key << "groups" << YAML::Value << YAML::BeginSeq;
  for (const PromRuleGroup& g : groups) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << g.name;
    if (!g.interval.empty()) out << YAML::Key << "interval" << YAML::Value << g.interval;
    out << YAML::Key << "rules" << YAML::Value << YAML::BeginSeq;
    for (const PromRule& r : g.rules) {
      out << YAML::BeginMap;
      if (!r.record.empty()) out << YAML::Key << "record" << YAML::Value << r.record;
      if (!r.alert.empty()) out << YAML::Key << "alert" << YAML::Value << r.alert;
      // Single quotes keep PromQL's double quotes readable; a multi-line expression
      // (the alerts) is a literal block.
      out << YAML::Key << "expr" << YAML::Value
          << (r.expr.find('\n') == std::string::npos ? YAML::SingleQuoted : YAML::Literal)
          << r.expr;
      if (!r.for_.empty()) out << YAML::Key << "for" << YAML::Value << r.for_;
      for (const auto* kv : {&r.labels, &r.annotations}) {
        if (kv->empty()) continue;
        out << YAML::Key << (kv == &r.labels ? "labels" : "annotations") << YAML::Value
            << YAML::BeginMap;
        for (const auto& [k, v] : *kv) {
          out << YAML::Key << k << YAML::Value << YAML::SingleQuoted << v;
        }
        out << YAML::EndMap;
      }
      out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
}

}  // namespace

const char* RulesEngineName(RulesEngine engine) {
  return engine == RulesEngine::kVllm ? "vllm" : "sglang";
}

Result<RulesEngine> ParseRulesEngine(const std::string& name) {
  if (name == "vllm") return RulesEngine::kVllm;
  if (name == "sglang") return RulesEngine::kSglang;
  return Status::Invalid(fmt::format("--engine {}: expected vllm or sglang", name));
}

std::vector<double> TtftBucketBounds(RulesEngine engine) {
  // vLLM v1 TIME_TO_FIRST_TOKEN_BUCKETS (vllm/v1/metrics/buckets.py).
  std::vector<double> b = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                           1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  if (engine == RulesEngine::kSglang) {
    // SGLang <= 0.4 (the scrapes in ../shared/data/real-telemetry/): vLLM's list to 20,
    // then 15, 25, 30. Newer collector.py (commit 00ae9c15): 0.1 ... 400.
    b = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,   0.25,  0.5,  0.75, 1.0,
         2.5,   5.0,   7.5,  10.0, 15.0, 20.0, 25.0, 30.0,  0.2,   0.4,  0.6,  0.8,
         2.0,   4.0,   6.0,  8.0,  40.0, 60.0, 80.0, 100.0, 200.0, 400.0};
    std::sort(b.begin(), b.end());
  }
  return b;
}

std::string DefaultDeployAnnotationExpr(const std::string& selector) {
  return fmt::format("changes({}[2m]) > 0", Sel("process_start_time_seconds", selector));
}

namespace {

// Where a PromQL expression's brackets or strings do not close ("" when they do): a
// check of shape, not a parser (Prometheus and Grafana parse it), so that a typo is
// caught when the rules are written rather than as a dashboard panel that says nothing.
// Strings: "..." and '...' with backslash escapes, `...` raw (the PromQL spec).
std::string UnbalancedPromQl(std::string_view e) {
  std::string open;
  for (size_t i = 0; i < e.size(); ++i) {
    const char c = e[i];
    if (c == '"' || c == '\'' || c == '`') {
      size_t j = i + 1;
      while (j < e.size() && e[j] != c) j += (e[j] == '\\' && c != '`') ? 2 : 1;
      if (j >= e.size()) return fmt::format("an unterminated string at character {}", i + 1);
      i = j;
    } else if (c == '(' || c == '[' || c == '{') {
      open.push_back(c);
    } else if (c == ')' || c == ']' || c == '}') {
      const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (open.empty() || open.back() != want) {
        return fmt::format("an unmatched '{}' at character {}", c, i + 1);
      }
      open.pop_back();
    }
  }
  if (!open.empty()) return fmt::format("an unclosed '{}'", open.back());
  return {};
}

}  // namespace

Status ValidateRulesOptions(const RulesOptions& o) {
  TTFT_RETURN_IF_ERROR(CheckLabelMatchers(o.selector, "--selector"));
  if (!IsLabelName(o.replica_label)) {
    return Status::Invalid(
        fmt::format("--replica-label '{}': not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)",
                    o.replica_label));
  }
  if (o.replica_label == "le" || o.replica_label.starts_with("__")) {
    return Status::Invalid(fmt::format(
        "--replica-label {}: {}", o.replica_label,
        o.replica_label == "le" ? "the histograms' bucket label, which the quantiles aggregate by"
                                : "names beginning with __ are reserved for Prometheus"));
  }
  TTFT_RETURN_IF_ERROR(CheckPositive("--slo-ttft-s", o.slo_ttft_s));
  TTFT_RETURN_IF_ERROR(CheckPositive("--queue-p99-s", o.queue_p99_s));
  TTFT_RETURN_IF_ERROR(CheckPositive("--hit-rate-drop", o.hit_rate_drop));
  if (!(o.slo_objective > 0 && o.slo_objective < 1)) {
    return Status::Invalid(
        fmt::format("--slo-objective {}: must be in (0, 1), e.g. 0.99", o.slo_objective));
  }
  const double fast = kBurnWindows[0].factor * (1 - o.slo_objective);
  if (fast >= 1) {
    return Status::Invalid(fmt::format(
        "--slo-objective {}: the fast burn threshold {} x (1 - SLO) = {} is >= 1, so the "
        "alert could never fire; use an objective above {:.4f}",
        o.slo_objective, kBurnWindows[0].factor, fast, 1 - 1 / kBurnWindows[0].factor));
  }
  if (!(o.hit_rate_drop < 1)) {
    return Status::Invalid(fmt::format(
        "--hit-rate-drop {}: must be below 1 (an absolute drop of the hit rate, 0.2 = 20 "
        "points)",
        o.hit_rate_drop));
  }
  const std::vector<double> bounds = TtftBucketBounds(o.engine);
  const bool on_bound = std::any_of(bounds.begin(), bounds.end(), [&](double b) {
    return std::fabs(b - o.slo_ttft_s) <= 1e-12 * b;
  });
  if (!on_bound) {
    std::string list;
    for (double b : bounds) list += (list.empty() ? "" : ", ") + Num(b);
    return Status::Invalid(fmt::format(
        "--slo-ttft-s {}: not a bucket bound of {}'s default TTFT histogram ({}); the SLO "
        "counts the requests in the bucket at that le, so the threshold must be one",
        o.slo_ttft_s, RulesEngineName(o.engine), list));
  }
  for (unsigned char c : o.deploy_annotation_expr) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return Status::Invalid("--deploy-annotation-expr: a line break or control character");
    }
  }
  if (const std::string why = UnbalancedPromQl(o.deploy_annotation_expr); !why.empty()) {
    return Status::Invalid(
        fmt::format("--deploy-annotation-expr '{}': {}", o.deploy_annotation_expr, why));
  }
  return Status::Ok();
}

Result<std::vector<PromRuleGroup>> RecordingRules(const RulesOptions& o) {
  TTFT_RETURN_IF_ERROR(ValidateRulesOptions(o));
  const Ctx c(o);
  PromRuleGroup g{"ttft-recording", "", {}};
  auto rec = [&](const std::string& name, const std::string& expr) {
    g.rules.push_back(PromRule{name, "", expr, "", {}, {}});
  };
  // level:metric:operations (Prometheus' naming practice for recording rules).
  for (const auto& [level, by] : {std::pair<std::string, std::string>{"model", c.by_model},
                                  {"model_replica", c.by_replica}}) {
    for (const auto& [metric, hist] :
         {std::pair<std::string, std::string>{"ttft_seconds", c.s.ttft},
          {"queue_time_seconds", c.s.queue},
          {"prefill_time_seconds", c.s.prefill}}) {
      if (hist.empty()) continue;
      rec(fmt::format("{}:{}:p50_rate5m", level, metric), c.Quantile(0.5, hist, by, "5m"));
      rec(fmt::format("{}:{}:p99_rate5m", level, metric), c.Quantile(0.99, hist, by, "5m"));
    }
    rec(level + ":prefix_cache_hit_ratio:rate5m", c.HitRate(by, "5m"));
    rec(level + ":preemptions:rate5m", c.SumRate(c.s.preemptions, by, "5m"));
    rec(level + ":kv_cache_usage_ratio:max",
        fmt::format("max by ({}) ({})", by, Sel(c.s.kv_usage, o.selector)));
  }
  rec("model:kv_cache_usage_ratio:avg",
      fmt::format("avg by ({}) ({})", c.by_model, Sel(c.s.kv_usage, o.selector)));
  rec("model:ttft_slo_error_ratio:rate5m", c.SloErrorRatio(c.by_model, "5m"));
  return std::vector<PromRuleGroup>{std::move(g)};
}

Result<std::vector<PromRuleGroup>> AlertingRules(const RulesOptions& o) {
  TTFT_RETURN_IF_ERROR(ValidateRulesOptions(o));
  const Ctx c(o);
  PromRuleGroup g{"ttft-alerts", "", {}};
  const std::string slo_text =
      fmt::format("{} of requests with TTFT <= {} s", Num(o.slo_objective), Num(o.slo_ttft_s));
  for (const BurnWindow& w : kBurnWindows) {
    const std::string threshold = fmt::format("{} * (1 - {})", Num(w.factor), Num(o.slo_objective));
    PromRule r;
    r.alert = w.alert;
    r.expr = fmt::format("({}) > {}\nand\n({}) > {}", c.SloErrorRatio(c.by_model, w.long_window),
                         threshold, c.SloErrorRatio(c.by_model, w.short_window), threshold);
    r.labels = {{"severity", "page"}, {"slo", "ttft"}};
    r.annotations = {
        {"summary", fmt::format("TTFT SLO error budget of {{{{ $labels.model_name }}}} burning "
                                "over {}x the sustainable rate ({} and {} windows)",
                                Num(w.factor), w.long_window, w.short_window)},
        {"description",
         fmt::format("SLO: {}. Over both the last {} and the last {}, more than {} x (1 - {}) "
                     "of requests were slower: {} of a 30-day error budget spent in {} (SRE "
                     "workbook, Alerting on SLOs, Table 5-8). See docs/rules.md.",
                     slo_text, w.long_window, w.short_window, Num(w.factor), Num(o.slo_objective),
                     w.budget, w.long_window)}};
    g.rules.push_back(std::move(r));
  }
  const std::string drop = Num(o.hit_rate_drop);
  // An alert when the hit rate over `now` is more than `drop` below `before`, for 10 min.
  auto hit_rate_drop = [&](std::string alert, const std::string& before, const std::string& now,
                           std::string summary, std::string description) {
    PromRule r;
    r.alert = std::move(alert);
    r.expr = fmt::format("({})\n-\n({})\n> {}", before, now, drop);
    r.for_ = "10m";
    r.labels = {{"severity", "warning"}};
    r.annotations = {{"summary", std::move(summary)}, {"description", std::move(description)}};
    g.rules.push_back(std::move(r));
  };
  hit_rate_drop("PrefixCacheHitRateDropVsHourBefore", c.HitRate(c.by_model, "1h", "", "1h"),
                c.HitRate(c.by_model, "15m"),
                "Prefix-cache hit rate of {{ $labels.model_name }} dropped against the "
                "hour before",
                fmt::format("The hit rate over the last 15 minutes is more than {} below the hour "
                            "before the last (rate over [1h] offset 1h), for 10 minutes: a deploy "
                            "that changed the prompt prefix (a template, a timestamp ahead of the "
                            "system prompt) or a router change. See docs/rules.md.",
                            drop));
  hit_rate_drop(
      "PrefixCacheHitRateDropVsDayAgo", c.HitRate(c.by_model, "1h", "", "1d"),
      c.HitRate(c.by_model, "1h"),
      "Prefix-cache hit rate of {{ $labels.model_name }} dropped against a day "
      "ago",
      fmt::format("The hit rate over the last hour is more than {} below the same hour a "
                  "day ago (offset 1d), for 10 minutes: catches a slow decline the hourly "
                  "comparison adapts to. See docs/rules.md.",
                  drop));
  if (!c.s.queue.empty()) {
    PromRule r;
    r.alert = "QueueTimeP99High";
    r.expr =
        fmt::format("{} > {}", c.Quantile(0.99, c.s.queue, c.by_replica, "5m"), Num(o.queue_p99_s));
    r.for_ = "10m";
    r.labels = {{"severity", "warning"}};
    r.annotations = {
        {"summary", fmt::format("Queue-time p99 of {{{{ $labels.model_name }}}} on "
                                "{{{{ $labels.{} }}}} above {} s",
                                o.replica_label, Num(o.queue_p99_s))},
        {"description",
         fmt::format("Requests wait more than {} s (p99 over 5 minutes, for 10 minutes) "
                     "before they are scheduled: the replica is saturated (load, longer "
                     "prompts, a prefix-cache collapse, KV pressure). See docs/rules.md.",
                     Num(o.queue_p99_s))}};
    g.rules.push_back(std::move(r));
  }
  return std::vector<PromRuleGroup>{std::move(g)};
}

namespace {

struct Panel {
  std::string title, type, unit, description;
  std::vector<std::pair<std::string, std::string>> targets;  // expr, legend
  int w = 12, h = 8;
};

std::vector<Panel> Panels(const Ctx& c) {
  const RulesOptions& o = c.o;
  const std::string f =
      fmt::format("model_name=~\"$model_name\",{}=~\"$replica\"", o.replica_label);
  const std::string ri = "$__rate_interval";
  const std::string repl_legend = "{{model_name}} {{" + o.replica_label + "}}";
  std::vector<Panel> p;
  p.push_back({"TTFT p50 / p99",
               "timeseries",
               "s",
               "Time to first token from the engine's histogram, per model.",
               {{c.Quantile(0.5, c.s.ttft, c.by_model, ri, f), "p50 {{model_name}}"},
                {c.Quantile(0.99, c.s.ttft, c.by_model, ri, f), "p99 {{model_name}}"}}});
  p.push_back({fmt::format("TTFT SLO: fraction of requests under {} s", Num(o.slo_ttft_s)),
               "timeseries",
               "percentunit",
               fmt::format("Objective {}. Counted from the bucket at le={}.", Num(o.slo_objective),
                           Num(o.slo_ttft_s)),
               {{fmt::format("{} / ({} > 0)",
                             c.SumRate(c.s.ttft + "_bucket", c.by_model, ri,
                                       f + ",le=~\"" + LeRegex(o.slo_ttft_s) + "\""),
                             c.SumRate(c.s.ttft + "_count", c.by_model, ri, f)),
                 "{{model_name}}"}}});
  p.push_back({"TTFT p99 per replica",
               "timeseries",
               "s",
               "One line per replica: a bad replica stands out.",
               {{c.Quantile(0.99, c.s.ttft, c.by_replica, ri, f), repl_legend}}});
  Panel qp{"Queue versus prefill time (p50 / p99)",
           "timeseries",
           "s",
           "Where TTFT goes: waiting to be scheduled versus computing the prompt.",
           {}};
  for (const auto& [name, hist] :
       {std::pair<std::string, std::string>{"queue", c.s.queue}, {"prefill", c.s.prefill}}) {
    if (hist.empty()) continue;
    qp.targets.emplace_back(c.Quantile(0.5, hist, c.by_model, ri, f), name + " p50 {{model_name}}");
    qp.targets.emplace_back(c.Quantile(0.99, hist, c.by_model, ri, f),
                            name + " p99 {{model_name}}");
  }
  if (c.s.prefill.empty())
    qp.description += " SGLang exports no prefill-time histogram: queue only.";
  p.push_back(std::move(qp));
  if (!c.s.queue.empty()) {
    p.push_back({"Queue time p99 per replica",
                 "timeseries",
                 "s",
                 "",
                 {{c.Quantile(0.99, c.s.queue, c.by_replica, ri, f), repl_legend}}});
  }
  p.push_back({"Prefix-cache hit rate",
               "timeseries",
               "percentunit",
               "Cached prompt tokens / prompt tokens looked up, per model and per replica.",
               {{c.HitRate(c.by_model, ri, f), "{{model_name}}"},
                {c.HitRate(c.by_replica, ri, f), repl_legend}}});
  p.push_back({"KV-cache usage per replica",
               "timeseries",
               "percentunit",
               "",
               {{fmt::format("max by ({}) ({})", c.by_replica, Sel(c.s.kv_usage, o.selector, f)),
                 repl_legend}}});
  p.push_back({"Preemptions per second per replica",
               "timeseries",
               "ops",
               "",
               {{c.SumRate(c.s.preemptions, c.by_replica, ri, f), repl_legend}}});
  return p;
}

}  // namespace

Result<std::vector<DashboardQuery>> DashboardQueries(const RulesOptions& o) {
  TTFT_RETURN_IF_ERROR(ValidateRulesOptions(o));
  const Ctx c(o);
  std::vector<DashboardQuery> out;
  for (const Panel& p : Panels(c)) {
    for (const auto& t : p.targets) out.push_back({p.title, t.first});
  }
  return out;
}

Result<std::string> RecordingRulesYaml(const RulesOptions& o) {
  TTFT_ASSIGN_OR_RETURN(std::vector<PromRuleGroup> groups, RecordingRules(o));
  YAML::Emitter out;
  EmitGroups(out, groups);
  if (!out.good()) return Status::Internal("YAML emitter: " + out.GetLastError());
  return Ctx(o).Header("Prometheus recording rules") +
         "# Load with rule_files: in prometheus.yml, or vmalert -rule (needs -remoteWrite.url).\n" +
         out.c_str() + "\n";
}

Result<std::string> AlertingRulesYaml(const RulesOptions& o) {
  TTFT_ASSIGN_OR_RETURN(std::vector<PromRuleGroup> groups, AlertingRules(o));
  YAML::Emitter out;
  EmitGroups(out, groups);
  if (!out.good()) return Status::Internal("YAML emitter: " + out.GetLastError());
  return Ctx(o).Header("Prometheus alerting rules") +
         "# Self-contained (reads the engine's series only). Load with rule_files: in\n"
         "# prometheus.yml, or vmalert -rule. The TTFT threshold must be a bucket bound.\n" +
         out.c_str() + "\n";
}

Result<std::string> DashboardJson(const RulesOptions& o) {
  TTFT_RETURN_IF_ERROR(ValidateRulesOptions(o));
  const Ctx c(o);
  using json = nlohmann::json;
  const json ds = {{"type", "prometheus"}, {"uid", "${DS_PROMETHEUS}"}};
  json panels = json::array();
  // Panels fill rows of Grafana's 24 columns left to right; a row is as tall as its
  // tallest panel.
  int id = 1, x = 0, y = 0, row_h = 0;
  auto place = [&](int w, int h) {
    if (x + w > 24) {
      x = 0;
      y += row_h;
      row_h = 0;
    }
    json g = {{"x", x}, {"y", y}, {"w", w}, {"h", h}};
    x += w;
    row_h = std::max(row_h, h);
    return g;
  };
  for (const Panel& p : Panels(c)) {
    json targets = json::array();
    char ref = 'A';
    for (const auto& [expr, legend] : p.targets) {
      targets.push_back({{"datasource", ds},
                         {"expr", expr},
                         {"legendFormat", legend},
                         {"refId", std::string(1, ref++)}});
    }
    panels.push_back(
        {{"id", id++},
         {"type", p.type},
         {"title", p.title},
         {"description", p.description},
         {"datasource", ds},
         {"gridPos", place(p.w, p.h)},
         {"fieldConfig", {{"defaults", {{"unit", p.unit}}}, {"overrides", json::array()}}},
         {"options",
          {{"legend", {{"displayMode", "list"}, {"placement", "bottom"}}},
           {"tooltip", {{"mode", "multi"}}}}},
         {"targets", targets}});
  }
  // What is left out, on the dashboard itself (JSON has no comments).
  std::string notes;
  for (const std::string& n : c.s.notes) notes += "- " + n + "\n";
  panels.push_back({{"id", id++},
                    {"type", "text"},
                    {"title", fmt::format("About these panels ({})", RulesEngineName(o.engine))},
                    {"gridPos", place(24, 5)},
                    {"options", {{"mode", "markdown"}, {"content", notes}}}});
  const std::string ttft_count = Sel(c.s.ttft + "_count", o.selector);
  auto var = [&](const std::string& name, const std::string& label, const std::string& query) {
    return json{
        {"name", name},
        {"label", label},
        {"type", "query"},
        {"datasource", ds},
        {"query", {{"query", query}, {"refId", "PrometheusVariableQueryEditor-VariableQuery"}}},
        {"definition", query},
        {"refresh", 2},
        {"includeAll", true},
        {"multi", true},
        {"allValue", ".*"},
        {"current", {{"text", "All"}, {"value", "$__all"}}},
        {"sort", 1}};
  };
  const std::string annotation_expr = o.deploy_annotation_expr.empty()
                                          ? DefaultDeployAnnotationExpr(o.selector)
                                          : o.deploy_annotation_expr;
  json dash = {
      {"id", nullptr},
      {"uid", fmt::format("ttft-{}", RulesEngineName(o.engine))},
      {"title", fmt::format("ttft: tail TTFT and prefix cache ({})", RulesEngineName(o.engine))},
      {"description", "Generated by `ttft rules` (docs/rules.md). " + c.s.notes.front()},
      {"tags", json::array({"ttft", RulesEngineName(o.engine), "llm-serving"})},
      {"timezone", "browser"},
      {"editable", true},
      {"graphTooltip", 1},
      {"time", {{"from", "now-6h"}, {"to", "now"}}},
      {"timepicker", json::object()},
      {"refresh", "1m"},
      {"schemaVersion", 39},
      {"version", 1},
      {"templating",
       {{"list",
         json::array(
             {{{"name", "DS_PROMETHEUS"},
               {"label", "Data source"},
               {"type", "datasource"},
               {"query", "prometheus"},
               {"current", json::object()}},
              var("model_name", "Model", fmt::format("label_values({}, model_name)", ttft_count)),
              var("replica", "Replica",
                  fmt::format("label_values({}, {})",
                              Sel(c.s.ttft + "_count", o.selector, "model_name=~\"$model_name\""),
                              o.replica_label))})}}},
      {"annotations",
       {{"list",
         json::array(
             {{{"name", "Deploys"},
               {"datasource", ds},
               {"enable", true},
               {"hide", false},
               {"iconColor", "orange"},
               {"expr", annotation_expr},
               {"step", "60s"},
               {"target", {{"expr", annotation_expr}, {"interval", "60s"}, {"refId", "Anno"}}},
               {"titleFormat", "Deploy"},
               {"textFormat", "{{" + o.replica_label + "}}"},
               {"tagKeys", o.replica_label}}})}}},
      {"panels", panels}};
  return dash.dump(2) + "\n";
}

}  // namespace ttft
