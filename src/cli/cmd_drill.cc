// `ttft drill`: the main job. Runs the built-in seed-drill scenario (a deploy moves
// a per-request timestamp ahead of a 5,000-token static prefix), or a variant, through
// the library's RunDrill (ttft/pipeline.h) and prints the symptom table before and
// after the deploy, the seed's signature, the cost check and the diagnosis.
#include <cstdlib>

#include "cli/commands.h"
#include "ttft/pipeline.h"
#include "ttft/report.h"
#include "ttft/scenario.h"

namespace ttft::cli {

Runner RegisterDrill(CLI::App& app) {
  struct Opts {
    std::string scenario = "seed-drill", out, format = "text", variant = "seed";
    int64_t seed = -1;
    bool quiet = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--scenario", o->scenario, "Scenario file or built-in name")
      ->capture_default_str();
  app.add_option("--seed", o->seed, "Override the scenario's seed")
      ->check(Integer(0, std::numeric_limits<int64_t>::max()));
  app.add_option("--variant", o->variant,
                 "seed (the deploy), no-deploy (a new tenant, no deploy) or one-region (a drained "
                 "pool in one region)")
      ->check(CLI::IsMember({"seed", "no-deploy", "one-region"}))
      ->capture_default_str();
  app.add_option("--format", o->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--out", o->out, "Also write spans.jsonl, metrics/ and summary.json here");
  app.add_flag("--quiet", o->quiet, "No progress on standard error");
  return [o]() -> Status {
    std::string name = o->scenario;
    if (o->variant != "seed") {
      if (name != "seed-drill") {
        return Status::Invalid("--variant and --scenario are exclusive: a variant is a scenario");
      }
      name = "drill-" + o->variant;
    }
    TTFT_ASSIGN_OR_RETURN(Scenario sc, LoadScenarioArg(name));
    if (o->seed >= 0) sc.workload.seed = static_cast<uint64_t>(o->seed);
    RunOptions options;
    options.out_dir = o->out;
    options.progress = ProgressPrinter(sc.name, o->quiet);
    auto drill = RunDrill(sc, o->variant, options);
    EndProgress();
    if (!drill.ok()) return drill.status();
    if (o->format == "json") return WriteOutput(DrillJson(*drill).dump(2) + "\n", "");
    const bool colour = StdoutIsTty() && std::getenv("NO_COLOR") == nullptr;
    return WriteOutput(RenderDrillText(*drill, colour), "");
  };
}

}  // namespace ttft::cli
