// `ttft diagnose`: decompose a TTFT regression, rank its causes with evidence, and
// report it (docs/diagnosis.md). Flags in; the library loads the inputs
// (ttft/dataset.h), chooses the windows and builds the DiagnosisReport; one renderer out.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "cli/commands.h"
#include "ttft/calibration.h"
#include "ttft/dataset.h"
#include "ttft/diagnose.h"
#include "ttft/prometheus.h"
#include "ttft/report.h"

namespace ttft::cli {

Runner RegisterDiagnose(CLI::App& app) {
  struct Opts {
    std::vector<std::string> inputs, baseline, incident;
    std::string change_at, events, prometheus, selector, format = "text", out, model, gpu, dtype;
    std::string baseline_window, incident_window, calibration;
    double window_s = 0;
    double prometheus_step_s = 15, prometheus_timeout_s = 5;  // as stats' and gate's flags
    int tp = 0;
    int64_t min_requests = 100;
    bool no_attribution = false;
    int attribution_seeds = 3;
    ReaderFlags reader;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("inputs", o->inputs,
                 "Span files (JSONL/CSV/OTLP), Prometheus snapshots (.prom), or a `ttft simulate` "
                 "output folder");
  app.add_option("--baseline", o->baseline, "Inputs of the baseline window")->expected(1, -1);
  app.add_option("--incident", o->incident, "Inputs of the incident window")->expected(1, -1);
  app.add_option("--change-at", o->change_at,
                 "The change time: seconds in the spans' time base, or RFC 3339");
  app.add_option("--window", o->window_s,
                 "Window length on either side of --change-at, s (0 or absent: as long as the "
                 "data allows on both sides)");
  app.add_option("--baseline-window", o->baseline_window, "Explicit baseline window FROM:TO");
  app.add_option("--incident-window", o->incident_window, "Explicit incident window FROM:TO");
  app.add_option("--events", o->events,
                 "Change annotations: JSON/JSONL {at_s|time, kind, target, detail}");
  app.add_option("--prometheus", o->prometheus,
                 "Prometheus base URL (needs --change-at, --window)");
  app.add_option("--selector", o->selector, "Prometheus label selector, e.g. model_name=\"x\"");
  app.add_option("--step", o->prometheus_step_s,
                 "with --prometheus: longest query_range step in seconds (no longer than the "
                 "scrape interval to see every counter reset)")
      ->capture_default_str();
  app.add_option("--timeout", o->prometheus_timeout_s,
                 "with --prometheus: seconds per attempt (3 attempts with back-off)")
      ->capture_default_str();
  app.add_option("--format", o->format, "text, markdown, json or html")
      ->check(CLI::IsMember({"text", "markdown", "json", "html"}))
      ->capture_default_str();
  app.add_option("--out", o->out, "Write the report to this file instead of standard output");
  app.add_option("--model", o->model, "Cost-model preset (default: the spans' model label)");
  app.add_option("--gpu", o->gpu, "GPU preset for the cost model (default h100-sxm)");
  app.add_option("--dtype", o->dtype, "fp8 or bf16 (default fp8)");
  app.add_option("--tp", o->tp, "Tensor-parallel degree (default 2)")->check(Integer<int>());
  app.add_option(
      "--calibration", o->calibration,
      "Calibration profile (ttft calibrate) for the cost model of the magnitude check and "
      "the counterfactual replay");
  app.add_option("--min-requests", o->min_requests, "Ok requests a window needs for a p99")
      ->check(Integer<int64_t>())
      ->capture_default_str();
  app.add_flag("--no-attribution", o->no_attribution,
               "Skip the counterfactual replay that shares the p99 increase among the causes");
  app.add_option("--attribution-seeds", o->attribution_seeds,
                 "Seeds of the counterfactual replay (its interval is over them)")
      ->check(Integer(1, 20))
      ->capture_default_str();
  AddReaderFlags(app, o->reader);
  return [o]() -> Status {
    // Checked whether or not --prometheus is given: a bad value is never ignored.
    TTFT_RETURN_IF_ERROR(CheckPromClientOptions({.timeout_s = o->prometheus_timeout_s}));
    TTFT_RETURN_IF_ERROR(CheckPromStep(o->prometheus_step_s));
    if (o->prometheus.empty() && !o->selector.empty()) {
      return Status::Invalid(
          "--selector filters a live Prometheus's series: it needs --prometheus (files are "
          "read whole)");
    }
    DiagnoseOptions options;
    options.model = o->model;
    options.gpu = o->gpu;
    options.dtype = o->dtype;
    options.tp = o->tp;
    if (!o->calibration.empty()) {
      TTFT_ASSIGN_OR_RETURN(CalibrationProfile prof, ReadCalibrationProfile(o->calibration));
      options.cost = prof.cost;
      options.cost_source = o->calibration;
      options.attribution.cost = prof.cost;  // the replay's engines too
      options.attribution.async_scheduling = prof.async_scheduling;
    }
    options.min_ok_requests = o->min_requests;
    options.attribute = !o->no_attribution;
    options.attribution.seeds = o->attribution_seeds;
    const bool split = !o->baseline.empty() || !o->incident.empty();
    if (split && (o->baseline.empty() || o->incident.empty())) {
      return Status::Invalid("give both --baseline and --incident inputs");
    }
    if (split && !o->inputs.empty()) {
      return Status::Invalid("give either INPUT... or --baseline/--incident, not both");
    }
    if (!split && o->inputs.empty() && o->prometheus.empty()) {
      return Status::Invalid("give INPUT..., --baseline/--incident, or --prometheus URL");
    }
    TTFT_ASSIGN_OR_RETURN(LoadOptions load, ToLoadOptions(o->reader));
    WindowRequest want;
    want.window_s = o->window_s;
    if (!o->change_at.empty()) {
      TTFT_ASSIGN_OR_RETURN(want.change_at_s, ParseTime(o->change_at));
    }
    if (!o->baseline_window.empty()) {
      TTFT_ASSIGN_OR_RETURN(want.baseline, ParseTimeRange(o->baseline_window, "--baseline-window"));
    }
    if (!o->incident_window.empty()) {
      TTFT_ASSIGN_OR_RETURN(want.incident, ParseTimeRange(o->incident_window, "--incident-window"));
    }
    if (!std::isfinite(o->window_s) || o->window_s < 0) {
      return Status::Invalid(
          "--window must be a finite number >= 0 (0: as long as the data allows)");
    }
    std::vector<Annotation> extra;
    if (!o->events.empty()) {
      ReadReport events_report;
      TTFT_ASSIGN_OR_RETURN(extra, ReadEvents(o->events, &events_report.warnings));
      PrintReadSummary(events_report);
    }
    auto base = std::make_unique<Dataset>();
    auto inc = std::make_unique<Dataset>();
    DiagnosisInput in;
    if (split) {
      TTFT_RETURN_IF_ERROR(LoadDataset(o->baseline, load, *base));
      PrintReadSummary(base->report);
      TTFT_RETURN_IF_ERROR(LoadDataset(o->incident, load, *inc));
      PrintReadSummary(inc->report);
      TTFT_ASSIGN_OR_RETURN(in, DiagnosisInputOf(*base, *inc));
    } else {
      if (!o->prometheus.empty()) {
        if (!std::isfinite(want.change_at_s) || o->window_s <= 0) {
          return Status::Invalid("--prometheus needs --change-at and --window");
        }
        TTFT_RETURN_IF_ERROR(LoadPrometheus(o->prometheus, o->selector,
                                            want.change_at_s - o->window_s,
                                            want.change_at_s + o->window_s, o->prometheus_step_s,
                                            {.timeout_s = o->prometheus_timeout_s}, *base));
      }
      TTFT_RETURN_IF_ERROR(LoadDataset(o->inputs, load, *base));
      PrintReadSummary(base->report);
      TTFT_ASSIGN_OR_RETURN(AnalysisWindows windows, ChooseWindows(want, *base));
      in = DiagnosisInputOf(*base, windows);
    }
    in.options = options;
    // Events outside the data's time range are kept (a deploy before the data is real),
    // but said: most often the events are in another time base than the spans.
    const double data_from_s = std::min(base->first_s, inc->first_s);
    const double data_to_s = std::max(base->last_s, inc->last_s);
    int64_t outside = 0;
    const Annotation* first_outside = nullptr;
    for (const Annotation& a : extra) {
      if (data_from_s <= data_to_s && (a.at_s < data_from_s || a.at_s > data_to_s)) {
        if (outside++ == 0) first_outside = &a;
      }
    }
    if (outside > 0) {
      ReadReport note;
      note.warnings.push_back(fmt::format(
          "{}: {} of {} event{} outside the data's time range [{:.3f}, {:.3f}] s (first: {}{}{} at "
          "{:.6g} s): the same time base as the spans (seconds of the run vs Unix time)?",
          o->events, outside, extra.size(), extra.size() == 1 ? "" : "s", data_from_s, data_to_s,
          first_outside->kind, first_outside->target.empty() ? "" : " ", first_outside->target,
          first_outside->at_s));
      PrintReadSummary(note);
    }
    for (const Annotation& a : extra) in.annotations.push_back(a);
    TTFT_ASSIGN_OR_RETURN(DiagnosisReport rep, Diagnose(in));
    const bool colour = o->out.empty() && StdoutIsTty() && std::getenv("NO_COLOR") == nullptr;
    TTFT_ASSIGN_OR_RETURN(std::string text, RenderReport(rep, o->format, colour));
    return WriteOutput(text, o->out);
  };
}

}  // namespace ttft::cli
