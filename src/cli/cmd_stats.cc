// `ttft stats INPUT... [--by LABEL] [--from T --to T] [--format text|json|csv] [--strict]
//  [--input-format auto|jsonl|csv|otlp|span-sink|prom|prom-json] [--columns MAP] [--stream]`
// `ttft stats --prometheus URL --from T --to T [--selector '{...}'] [--step S] [--by LABEL]`
//
// Per group: count, rate, p50/p90/p99/p99.9 of TTFT, queue, prefill, inter-token
// latency and prompt tokens, and the prefix-cache hit rate (docs/telemetry.md),
// computed by the library's ComputeStats (ttft/dataset.h) and rendered by
// ttft/report.h.
#include <fmt/format.h>

#include <cmath>

#include "cli/commands.h"
#include "ttft/dataset.h"
#include "ttft/report.h"

namespace ttft::cli {
namespace {

struct StatsFlags {
  std::vector<std::string> inputs;
  std::string by;
  std::string from, to;  // seconds or RFC 3339 (ParseTime); empty: open
  std::string format = "text";
  bool stream = false;
  std::string prometheus;  // base URL of a live server
  std::string selector;
  double step_s = 15;
  double timeout_s = 5;
  ReaderFlags reader;
};

Status Run(const StatsFlags& flags) {
  if (flags.format != "text" && flags.format != "json" && flags.format != "csv") {
    return Status::Invalid(fmt::format("--format {}: expected text, json or csv", flags.format));
  }
  StatsRequest req;
  TTFT_ASSIGN_OR_RETURN(req.load, ToLoadOptions(flags.reader));
  if (!flags.by.empty()) req.summary.by = flags.by;
  if (!flags.from.empty()) {
    TTFT_ASSIGN_OR_RETURN(req.summary.from_s, ParseTime(flags.from));
  }
  if (!flags.to.empty()) {
    TTFT_ASSIGN_OR_RETURN(req.summary.to_s, ParseTime(flags.to));
  }
  req.stream = flags.stream;
  req.prometheus_url = flags.prometheus;
  req.selector = flags.selector;
  req.step_s = flags.step_s;
  req.client.timeout_s = flags.timeout_s;
  TTFT_ASSIGN_OR_RETURN(StatsResult stats, ComputeStats(flags.inputs, req));
  std::string text;
  if (flags.format == "json") {
    text = StatsJson(stats.groups, stats.report.records_skipped).dump(2) + "\n";
  } else if (flags.format == "csv") {
    text = RenderStatsCsv(stats.groups);
  } else {
    text = RenderStatsText(stats.groups, stats.report.records_skipped);
  }
  TTFT_RETURN_IF_ERROR(WriteOutput(text, ""));
  PrintReadSummary(stats.report);
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
  cmd->add_option("--from", flags->from,
                  "window start, seconds or RFC 3339: spans with arrival_s >= T; for scrapes "
                  "the increase from the last scrape at or before T");
  cmd->add_option("--to", flags->to,
                  "window end: spans with arrival_s < T; for scrapes up to the last scrape at or "
                  "before T");
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
  AddReaderFlags(*cmd, flags->reader);
  cmd->add_flag("--stream", flags->stream,
                "bounded memory: DDSketch quantiles (0.5% relative error), no table; automatic "
                "above 2 GB of input");
  return [flags] { return Run(*flags); };
}

}  // namespace ttft::cli
