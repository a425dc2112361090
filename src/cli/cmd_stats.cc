// `ttft stats INPUT... [--by LABEL] [--from T --to T] [--format text|json|csv] [--strict]
//  [--input-format auto|jsonl|csv|otlp|span-sink|prom|prom-json] [--columns MAP] [--stream]`
// `ttft stats --prometheus URL --from T --to T [--selector '{...}'] [--step S] [--by LABEL]`
//
// Per group: count, rate, p50/p90/p99/p99.9 of TTFT, queue, prefill, inter-token
// latency and prompt tokens, and the prefix-cache hit rate (docs/telemetry.md).
// Spans give exact quantiles (or DDSketch ones with --stream); Prometheus scrapes give
// histogram quantiles with the bucket bounds they fall between (two or more scrapes:
// the window between the first and the last).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "ttft/input.h"
#include "ttft/metrics.h"
#include "ttft/prometheus.h"
#include "ttft/spans.h"
#include "ttft/summary.h"

namespace ttft::cli {
namespace {

using json = nlohmann::json;

struct StatsFlags {
  std::vector<std::string> inputs;
  std::string by;
  double from_s = -INFINITY;
  double to_s = INFINITY;
  std::string format = "text";
  bool strict = false;
  std::string input_format = "auto";
  std::string columns;
  bool stream = false;
  std::string prometheus;  // base URL of a live server
  std::string selector;
  double step_s = 15;
  double timeout_s = 5;
};

json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json QuantileJson(const QuantileSet& q) {
  if (!q.available) return nullptr;
  static constexpr const char* kKeys[] = {"p50", "p90", "p99", "p999"};
  json j;
  for (size_t i = 0; i < 4; ++i) j[kKeys[i]] = Num(q.values[i]);
  j["mean"] = Num(q.mean);
  j["n"] = q.count;
  if (q.from_buckets) {
    json b;
    for (size_t i = 0; i < 4; ++i) {
      b[kKeys[i]] = {Num(q.buckets[i].lower_bound), Num(q.buckets[i].upper_bound)};
    }
    j["bucket_bounds"] = b;
  }
  if (q.from_sketch) j["relative_error"] = q.sketch_alpha;
  if (!q.note.empty()) j["note"] = q.note;
  return j;
}

json GroupsJson(const std::vector<GroupSummary>& groups, int64_t skipped) {
  json out;
  out["groups"] = json::array();
  for (const GroupSummary& g : groups) {
    json j;
    j["key"] = json::object();
    for (const auto& [k, v] : g.key) j["key"][k] = v;
    j["count"] = g.count;
    j["rate_rps"] = Num(g.rate_rps);
    j["ttft_s"] = QuantileJson(g.ttft_s);
    j["queue_s"] = QuantileJson(g.queue_s);
    j["prefill_s"] = QuantileJson(g.prefill_s);
    j["itl_s"] = QuantileJson(g.itl_s);
    j["prompt_tokens"] = QuantileJson(g.prompt_tokens);
    j["prefix_cache_hit_rate"] = Num(g.prefix_cache_hit_rate);
    if (!g.hit_rate_note.empty()) j["prefix_cache_hit_rate_note"] = g.hit_rate_note;
    out["groups"].push_back(std::move(j));
  }
  out["skipped"] = skipped;
  return out;
}

std::string Fmt(double v) { return std::isfinite(v) ? fmt::format("{:.4g}", v) : "null"; }

void PrintText(const std::vector<GroupSummary>& groups, int64_t skipped) {
  for (const GroupSummary& g : groups) {
    std::string key;
    for (const auto& [k, v] : g.key) key += fmt::format("{}={} ", k, v);
    fmt::print("{}count={} rate_rps={} prefix_cache_hit_rate={}\n", key, g.count, Fmt(g.rate_rps),
               Fmt(g.prefix_cache_hit_rate));
    const std::pair<const char*, const QuantileSet*> rows[] = {{"ttft_s", &g.ttft_s},
                                                               {"queue_s", &g.queue_s},
                                                               {"prefill_s", &g.prefill_s},
                                                               {"itl_s", &g.itl_s},
                                                               {"prompt_tokens", &g.prompt_tokens}};
    for (const auto& [name, q] : rows) {
      if (!q->available) {
        fmt::print("  {:<14} null\n", name);
        continue;
      }
      fmt::print("  {:<14} p50={} p90={} p99={} p999={} mean={}", name, Fmt(q->values[0]),
                 Fmt(q->values[1]), Fmt(q->values[2]), Fmt(q->values[3]), Fmt(q->mean));
      if (q->from_buckets) {
        fmt::print("  p99 in ({}, {}]", Fmt(q->buckets[2].lower_bound),
                   Fmt(q->buckets[2].upper_bound));
      }
      if (q->from_sketch) fmt::print("  (sketch, ±{}%)", q->sketch_alpha * 100);
      fmt::print("\n");
      if (!q->note.empty()) fmt::print("  {:<14} note: {}\n", "", q->note);
    }
  }
  fmt::print("skipped={}\n", skipped);
}

void PrintCsv(const std::vector<GroupSummary>& groups) {
  fmt::print("key,count,rate_rps,quantity,p50,p90,p99,p999,mean,prefix_cache_hit_rate\n");
  for (const GroupSummary& g : groups) {
    std::string key;
    for (const auto& [k, v] : g.key) key += fmt::format("{}={}", k, v);
    const std::pair<const char*, const QuantileSet*> rows[] = {{"ttft_s", &g.ttft_s},
                                                               {"queue_s", &g.queue_s},
                                                               {"prefill_s", &g.prefill_s},
                                                               {"itl_s", &g.itl_s},
                                                               {"prompt_tokens", &g.prompt_tokens}};
    for (const auto& [name, quantities] : rows) {
      const QuantileSet* q = quantities;  // clang 14 cannot capture a structured binding
      auto f = [q](double v) {
        return q->available && std::isfinite(v) ? fmt::format("{}", v) : "";
      };
      fmt::print(
          "\"{}\",{},{},{},{},{},{},{},{},{}\n", key, g.count,
          std::isfinite(g.rate_rps) ? fmt::format("{}", g.rate_rps) : "", name, f(q->values[0]),
          f(q->values[1]), f(q->values[2]), f(q->values[3]), f(q->mean),
          std::isfinite(g.prefix_cache_hit_rate) ? fmt::format("{}", g.prefix_cache_hit_rate) : "");
    }
  }
}

Status Run(const StatsFlags& flags) {
  auto input_format = ParseInputFormat(flags.input_format);
  if (!input_format)
    return Status::Invalid(fmt::format("--input-format {}: unknown", flags.input_format));
  if (flags.format != "text" && flags.format != "json" && flags.format != "csv") {
    return Status::Invalid(fmt::format("--format {}: expected text, json or csv", flags.format));
  }
  SummaryOptions summary;
  if (!flags.by.empty()) summary.by = flags.by;
  summary.from_s = flags.from_s;
  summary.to_s = flags.to_s;
  SpanReadOptions read;
  read.strict = flags.strict;
  read.format = *input_format;
  if (!flags.columns.empty()) {
    TTFT_ASSIGN_OR_RETURN(read.columns, ColumnMap::Parse(flags.columns));
  }
  ReadReport report;
  if (flags.prometheus.empty() && flags.inputs.empty()) {
    return Status::Invalid("stats: give input files or --prometheus URL");
  }
  if (!flags.prometheus.empty() && !flags.inputs.empty()) {
    return Status::Invalid("stats: give either input files or --prometheus URL, not both");
  }
  if (!flags.prometheus.empty() && (!std::isfinite(flags.from_s) || !std::isfinite(flags.to_s))) {
    return Status::Invalid("stats --prometheus: --from and --to (Unix seconds) are required");
  }
  // Decide between metrics and spans from the first input.
  InputFormat kind = *input_format;
  if (!flags.prometheus.empty()) {
    kind = InputFormat::kPromQueryJson;
  } else if (kind == InputFormat::kAuto) {
    const std::string& first = flags.inputs.front();
    if (first != "-") {
      TTFT_ASSIGN_OR_RETURN(std::string head, ReadInputHead(first, 1 << 16));
      kind = DetectFormat(head);
    } else {
      kind = InputFormat::kSpanJsonl;  // stdin: spans unless told otherwise
    }
  }
  std::vector<GroupSummary> groups;
  if (kind == InputFormat::kProm || kind == InputFormat::kPromQueryJson) {
    std::vector<MetricSnapshot> snaps;
    if (!flags.prometheus.empty()) {
      PromClientOptions client_options;
      client_options.timeout_s = flags.timeout_s;
      TTFT_ASSIGN_OR_RETURN(PromClient client,
                            PromClient::Create(flags.prometheus, client_options));
      TTFT_ASSIGN_OR_RETURN(
          snaps, FetchPromWindow(client, flags.selector, flags.from_s, flags.to_s, flags.step_s));
    }
    for (const std::string& in : flags.inputs) {
      if (kind == InputFormat::kProm) {
        TTFT_ASSIGN_OR_RETURN(MetricSnapshot s, ReadExpositionFile(in, flags.strict, report));
        snaps.push_back(std::move(s));
      } else {
        TTFT_ASSIGN_OR_RETURN(std::string body, ReadInputFile(in));
        TTFT_ASSIGN_OR_RETURN(auto series, ParsePromQueryJson(body));
        for (auto& s : SnapshotsFromSeries(series)) snaps.push_back(std::move(s));
      }
    }
    MetricSnapshot window;
    if (snaps.size() >= 2) {
      TTFT_ASSIGN_OR_RETURN(window, WindowDelta(snaps, report));
    } else if (!snaps.empty()) {
      window = std::move(snaps.front());  // one scrape: totals since the process started
    }
    TTFT_ASSIGN_OR_RETURN(groups, SummarizeMetrics(window, summary));
    if (snaps.size() >= 2 && snaps.back().timestamp_s > snaps.front().timestamp_s) {
      for (GroupSummary& g : groups) {
        g.window_s = snaps.back().timestamp_s - snaps.front().timestamp_s;
        g.rate_rps = static_cast<double>(g.count) / g.window_s;
      }
    }
  } else {
    uint64_t total_bytes = 0;
    for (const std::string& in : flags.inputs) {
      std::error_code ec;
      if (in != "-") total_bytes += std::filesystem::file_size(in, ec);
    }
    const bool stream = flags.stream || total_bytes > (uint64_t{2} << 30);
    if (stream) {
      read.detect_duplicates = false;  // bounded memory: O(sketches), not O(spans)
      TTFT_ASSIGN_OR_RETURN(auto summarizer, StreamingSummarizer::Create(summary));
      for (const std::string& in : flags.inputs)
        TTFT_RETURN_IF_ERROR(ReadSpans(in, read, *summarizer, report));
      groups = summarizer->Finish();
    } else {
      SpanTable table;
      for (const std::string& in : flags.inputs)
        TTFT_RETURN_IF_ERROR(ReadSpanTable(in, read, table, report));
      table.ShrinkToFit();
      TTFT_ASSIGN_OR_RETURN(groups, SummarizeSpans(table, summary));
    }
  }
  if (flags.format == "json") {
    fmt::print("{}\n", GroupsJson(groups, report.records_skipped).dump(2));
  } else if (flags.format == "csv") {
    PrintCsv(groups);
  } else {
    PrintText(groups, report.records_skipped);
  }
  const std::string summary_text = report.Summary();
  if (!summary_text.empty()) fmt::print(stderr, "{}\n", summary_text);
  return Status::Ok();
}

}  // namespace

Runner RegisterStats(CLI::App& app) {
  auto flags = std::make_shared<StatsFlags>();
  CLI::App* cmd = &app;  // main() created the `stats` sub-app
  cmd->add_option("inputs", flags->inputs,
                  "span files (JSONL, CSV, OTLP; gzip ok; - for stdin) or "
                  "Prometheus scrapes (two or more give a window)");
  cmd->add_option("--by", flags->by,
                  "group by a label (replica, region, tenant, model, template, "
                  "deploy, status; any series label for Prometheus data)");
  cmd->add_option("--from", flags->from_s,
                  "keep spans with arrival_s >= T; with --prometheus the window start (Unix s)");
  cmd->add_option("--to", flags->to_s,
                  "keep spans with arrival_s < T; with --prometheus the window end (Unix s)");
  cmd->add_option("--prometheus", flags->prometheus,
                  "read the window [--from, --to] from a live Prometheus server "
                  "(http://HOST:PORT) instead of files");
  cmd->add_option("--selector", flags->selector,
                  "with --prometheus: label matchers, e.g. '{model_name=\"m\",job=\"vllm\"}'");
  cmd->add_option("--step", flags->step_s,
                  "with --prometheus: longest query_range step in seconds (no longer than the "
                  "scrape interval to see every counter reset)")
      ->capture_default_str();
  cmd->add_option("--timeout", flags->timeout_s,
                  "with --prometheus: seconds per attempt (3 attempts with back-off)")
      ->capture_default_str();
  cmd->add_option("--format", flags->format, "text, json or csv")->capture_default_str();
  cmd->add_flag("--strict", flags->strict, "stop at the first bad record (exit 65)");
  cmd->add_option("--input-format", flags->input_format,
                  "auto, jsonl, csv, otlp, span-sink, prom or prom-json")
      ->capture_default_str();
  cmd->add_option("--columns", flags->columns,
                  "column mapping, e.g. ttft_s=ttft_ms:ms,request_id=id");
  cmd->add_flag("--stream", flags->stream,
                "bounded memory: DDSketch quantiles (0.5% relative error), no table; automatic "
                "above 2 GB of input");
  return [flags] { return Run(*flags); };
}

}  // namespace ttft::cli
