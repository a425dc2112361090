// `ttft rules [--engine vllm|sglang] [--selector 'job="vllm"'] [--slo-ttft-s 1]
// [--slo-objective 0.99] --out DIR`: writes DIR/ttft-recording.rules.yml,
// DIR/ttft-alerts.rules.yml and DIR/ttft-dashboard.json (ttft/rules.h, docs/rules.md).
// Every option is checked before anything is written; a bad one exits 2.
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "ttft/rules.h"

namespace ttft::cli {

Runner RegisterRules(CLI::App& app) {
  struct Opts {
    std::string engine = "vllm", out;
    RulesOptions rules;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--engine", o->engine, "Metric names: vllm (v1) or sglang")->capture_default_str();
  app.add_option("--selector", o->rules.selector,
                 "Label matchers added to every series, e.g. 'job=\"vllm\"'");
  app.add_option("--replica-label", o->rules.replica_label, "The label that tells replicas apart")
      ->capture_default_str();
  app.add_option("--slo-ttft-s", o->rules.slo_ttft_s,
                 "TTFT SLO threshold in seconds; must be a bucket bound of the TTFT histogram")
      ->capture_default_str();
  app.add_option("--slo-objective", o->rules.slo_objective,
                 "Fraction of requests that must meet the threshold, in (0, 1)")
      ->capture_default_str();
  app.add_option("--queue-p99-s", o->rules.queue_p99_s, "Queue-time p99 alert threshold (s)")
      ->capture_default_str();
  app.add_option("--hit-rate-drop", o->rules.hit_rate_drop,
                 "Prefix-cache hit-rate drop (absolute, 0.2 = 20 points) that alerts")
      ->capture_default_str();
  app.add_option("--deploy-annotation-expr", o->rules.deploy_annotation_expr,
                 "PromQL marking deploys on the dashboard (default: a replica restart, "
                 "changes(process_start_time_seconds[2m]) > 0)");
  app.add_option("--out", o->out, "Output folder (created if absent)")->required();
  return [o]() -> Status {
    TTFT_ASSIGN_OR_RETURN(o->rules.engine, ParseRulesEngine(o->engine));
    TTFT_RETURN_IF_ERROR(ValidateRulesOptions(o->rules));
    TTFT_ASSIGN_OR_RETURN(std::string recording, RecordingRulesYaml(o->rules));
    TTFT_ASSIGN_OR_RETURN(std::string alerts, AlertingRulesYaml(o->rules));
    TTFT_ASSIGN_OR_RETURN(std::string dashboard, DashboardJson(o->rules));
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(o->out, ec);
    if (ec) return Status::IoError(fmt::format("--out {}: {}", o->out, ec.message()));
    const std::vector<std::pair<std::string, const std::string*>> files = {
        {"ttft-recording.rules.yml", &recording},
        {"ttft-alerts.rules.yml", &alerts},
        {"ttft-dashboard.json", &dashboard}};
    for (const auto& [name, text] : files) {
      TTFT_RETURN_IF_ERROR(WriteOutput(*text, (fs::path(o->out) / name).string()));
    }
    std::string summary;
    for (const auto& [name, text] : files) {
      summary += fmt::format("wrote {}\n", (fs::path(o->out) / name).string());
    }
    return WriteOutput(summary, "");
  };
}

}  // namespace ttft::cli
