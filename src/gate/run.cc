// Running the gate (ttft/gate.h): the arms from inputs or a live Prometheus, and the
// three ways to look (once, once per run with a state file, repeatedly in-process).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "ttft/format.h"
#include "ttft/gate.h"
#include "ttft/prometheus.h"

namespace ttft {
namespace {

using Match = std::vector<std::pair<std::string, std::string>>;

// An Inconclusive result for data that could not be obtained.
GateResult Inconclusive(std::string reason) {
  GateResult r;
  r.verdict = GateVerdict::kInconclusive;
  r.reason = std::move(reason);
  return r;
}

Result<Match> SelectorOf(const std::string& text, std::string_view flag) {
  if (text.empty()) return Match{};
  return ParseSelector(text, flag);
}

// The arm of `match` within `data` over [from_s, to_s).
Result<GateArm> ArmOf(const Dataset& data, const Match& match, double from_s, double to_s) {
  if (data.has_spans) {
    std::vector<uint32_t> rows;
    if (match.empty()) {
      for (uint32_t r = 0; r < data.spans.size(); ++r) rows.push_back(r);
    } else {
      TTFT_ASSIGN_OR_RETURN(rows, SelectRows(data.spans, match));
    }
    std::vector<uint32_t> kept;
    for (uint32_t r : rows) {
      double a = data.spans.arrival_s()[r];
      if (a >= from_s && a < to_s) kept.push_back(r);
    }
    return ArmFromSpans(data.spans, kept);
  }
  std::vector<MetricSnapshot> snaps = data.snapshots;
  if (std::isfinite(from_s) || std::isfinite(to_s)) {
    snaps = SnapshotsCovering(data.snapshots, std::isfinite(from_s) ? from_s : -1e300,
                              std::isfinite(to_s) ? to_s : 1e300);
  }
  return ArmFromMetrics(snaps, match);
}

// The baseline arm from `bdata` and the canary arm from `cdata` (the same dataset when
// one input is split by selectors). A selection matching nothing makes the arms
// unavailable (an Inconclusive verdict), not an error.
Result<GateArms> ArmsOf(const Dataset& bdata, const Dataset& cdata, const Match& bsel,
                        const Match& csel, double from_s, double to_s, double increase_from_s) {
  GateArms arms;
  Result<GateArm> b = ArmOf(bdata, bsel, from_s, to_s);
  Result<GateArm> c = ArmOf(cdata, csel, from_s, to_s);
  if (b.status().code() == StatusCode::kNotFound || c.status().code() == StatusCode::kNotFound) {
    arms.unavailable =
        !b.ok() ? "baseline: " + b.status().message() : "canary: " + c.status().message();
    return arms;
  }
  TTFT_RETURN_IF_ERROR(b.status());
  TTFT_RETURN_IF_ERROR(c.status());
  arms.baseline = std::move(*b);
  arms.canary = std::move(*c);
  if (!cdata.has_spans && std::isfinite(increase_from_s)) {
    Result<GateArm> inc = ArmOf(cdata, csel, increase_from_s, to_s);
    if (inc.ok()) arms.canary_increase = std::move(*inc);
  }
  return arms;
}

Result<GateArms> LoadArmsOf(const GateSource& f, const Match& bsel, const Match& csel,
                            double from_s, double to_s, double increase_from_s) {
  GateArms arms;
  auto report = [&f](const ReadReport& r) {
    if (f.on_read) f.on_read(r);
  };
  if (!f.prometheus_url.empty()) {
    Dataset data;
    Status st = LoadPrometheus(f.prometheus_url, "", from_s, to_s, f.step_s, f.client, data);
    if (!st.ok()) {
      // The client's messages name the server; the response parser's do not.
      arms.unavailable = st.message().find(f.prometheus_url) != std::string::npos
                             ? st.message()
                             : "Prometheus " + f.prometheus_url + ": " + st.message();
      return arms;
    }
    FinishLoading(data);
    Result<GateArm> b = ArmFromMetrics(data.snapshots, bsel);
    Result<GateArm> c = ArmFromMetrics(data.snapshots, csel);
    if (!b.ok() || !c.ok()) {
      arms.unavailable = "baseline: " + (b.ok() ? std::string("ok") : b.status().message()) +
                         "; canary: " + (c.ok() ? std::string("ok") : c.status().message());
      return arms;
    }
    arms.baseline = std::move(*b);
    arms.canary = std::move(*c);
    if (std::isfinite(increase_from_s)) {
      Result<GateArm> inc =
          ArmFromMetrics(SnapshotsCovering(data.snapshots, increase_from_s, to_s), csel);
      if (inc.ok()) arms.canary_increase = std::move(*inc);
    }
    return arms;
  }
  if (!f.inputs.empty()) {
    Dataset data;
    TTFT_RETURN_IF_ERROR(LoadDataset(f.inputs, f.load, data));
    report(data.report);
    if (!data.has_spans && data.snapshots.size() < 2) {
      return Status::Invalid("the inputs hold neither spans nor two or more scrapes");
    }
    return ArmsOf(data, data, bsel, csel, from_s, to_s, increase_from_s);
  }
  Dataset bdata, cdata;
  TTFT_RETURN_IF_ERROR(LoadDataset(f.baseline, f.load, bdata));
  TTFT_RETURN_IF_ERROR(LoadDataset(f.canary, f.load, cdata));
  report(bdata.report);
  report(cdata.report);
  if (bdata.has_spans != cdata.has_spans) {
    return Status::Invalid(
        "--baseline and --canary must both be spans or both be metrics (their statistics are "
        "not comparable)");
  }
  return ArmsOf(bdata, cdata, bsel, csel, from_s, to_s, increase_from_s);
}

Status CheckSameModel(const GateArms& arms) {
  if (!arms.unavailable && !arms.baseline.model.empty() && !arms.canary.model.empty() &&
      arms.baseline.model != arms.canary.model) {
    return Status::Invalid(fmt::format(
        "the baseline serves model '{}' and the canary '{}': a canary must serve the same "
        "model as its baseline",
        arms.baseline.model, arms.canary.model));
  }
  return Status::Ok();
}

class SystemClock : public GateClock {
 public:
  double UnixNowS() override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  double MonotonicS() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void SleepUntil(double monotonic_s) override {
    std::this_thread::sleep_until(std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(monotonic_s))));
  }
};

// The end of a look's window.
double WindowEnd(const GateRunOptions& o, GateClock& clock) {
  return o.live && !std::isfinite(o.to_s) ? clock.UnixNowS() : o.to_s;
}

Result<GateResult> LookWithState(const GateRunOptions& o, const GateArmLoader& load,
                                 GateClock& clock) {
  TTFT_ASSIGN_OR_RETURN(SequentialGate state, ReadGateState(o.state_path));
  const double end = WindowEnd(o, clock);
  const double inc_from = state.looks > 0 ? state.last_canary_arrival_s : o.from_s;
  TTFT_ASSIGN_OR_RETURN(GateArms arms, load(o.from_s, end, inc_from));
  if (arms.unavailable) return Inconclusive(*arms.unavailable);
  const bool metrics = arms.canary.from_metrics;
  // A look sees the canary after the previous one; data that ends before it is another
  // rollout's (or a window cut short), and would add nothing, look after look.
  const std::vector<double>& arrivals = arms.canary.request_arrival_s;
  const double data_end = metrics ? end : arrivals.empty() ? -INFINITY : arrivals.back();
  if (state.looks > 0 && data_end < state.last_canary_arrival_s) {
    return Status::Invalid(fmt::format(
        "{}: its last look saw the canary up to {}, and this look's canary data ends at {}: "
        "a state file of another rollout? (start a new one for a new rollout)",
        o.state_path, numfmt::TimePoint(state.last_canary_arrival_s), numfmt::TimePoint(data_end)));
  }
  GateResult r =
      LookSequential(o.config, arms.baseline, arms.canary,
                     arms.canary_increase ? &*arms.canary_increase : nullptr, o.final_look, state);
  if (metrics && !arms.canary_increase && state.looks > 1) {
    return Status::Invalid("metrics under --state need a time range for each look (--to)");
  }
  if (metrics) state.last_canary_arrival_s = end;
  TTFT_RETURN_IF_ERROR(WriteGateState(o.state_path, state));
  return r;
}

// Bounded by for_s plus two looks' durations: the look that runs across the deadline,
// then the final one (whose successor would start past it).
Result<GateResult> LookRepeatedly(const GateRunOptions& o, const GateArmLoader& load,
                                  GateClock& clock,
                                  const std::function<void(const std::string&)>& on_look) {
  auto note = [&on_look](const std::string& line) {
    if (on_look) on_look(line);
  };
  SequentialGate state;
  const double start = clock.MonotonicS();
  const double deadline = start + o.for_s;
  double inc_from = o.from_s;
  GateResult r = Inconclusive("no look was made");
  for (int look = 0;; ++look) {
    // The next look starts at its slot or, after a look slower than --every, now: the
    // last is the one whose successor would start past the deadline.
    const double next = start + o.every_s * (look + 1);
    const bool final_look = std::max(next, clock.MonotonicS()) > deadline;
    const double end = WindowEnd(o, clock);
    TTFT_ASSIGN_OR_RETURN(GateArms arms, load(o.from_s, end, inc_from));
    if (arms.unavailable) {
      // One failed look is not a verdict: note it and look again (bounded by for_s).
      r = Inconclusive(*arms.unavailable);
      note(fmt::format("look {}: {}", look + 1, r.reason));
    } else {
      r = LookSequential(o.config, arms.baseline, arms.canary,
                         arms.canary_increase ? &*arms.canary_increase : nullptr, final_look,
                         state);
      if (arms.canary.from_metrics) state.last_canary_arrival_s = end;
      inc_from = end;
      note(fmt::format("look {}: {} ({})", look + 1, ToString(r.verdict), r.reason));
      if (r.verdict == GateVerdict::kFail) break;
    }
    if (final_look) break;
    clock.SleepUntil(next);
  }
  return r;
}

}  // namespace

Status CheckGateSource(const GateSource& f) {
  const bool two_sets = !f.baseline.empty() || !f.canary.empty();
  if (two_sets && (f.baseline.empty() || f.canary.empty())) {
    return Status::Invalid("give both --baseline and --canary inputs");
  }
  if (two_sets && (!f.inputs.empty() || !f.prometheus_url.empty())) {
    return Status::Invalid("--baseline/--canary replace the positional inputs and --prometheus");
  }
  if (!two_sets && (f.baseline_selector.empty() || f.canary_selector.empty())) {
    return Status::Invalid(
        "give --baseline INPUT... --canary INPUT..., or inputs (or --prometheus) with "
        "--baseline-selector and --canary-selector");
  }
  if (!two_sets && f.inputs.empty() && f.prometheus_url.empty()) {
    return Status::Invalid("no inputs: give files or --prometheus URL");
  }
  if (!f.inputs.empty() && !f.prometheus_url.empty()) {
    return Status::Invalid("give either input files or --prometheus, not both");
  }
  if (!f.prometheus_url.empty() && f.prometheus_url.rfind("http://", 0) != 0) {
    return Status::Invalid(
        fmt::format("--prometheus {}: expected http://HOST:PORT", f.prometheus_url));
  }
  TTFT_RETURN_IF_ERROR(CheckPromClientOptions(f.client));
  TTFT_RETURN_IF_ERROR(CheckPromStep(f.step_s));
  TTFT_ASSIGN_OR_RETURN(Match bsel, SelectorOf(f.baseline_selector, "--baseline-selector"));
  TTFT_ASSIGN_OR_RETURN(Match csel, SelectorOf(f.canary_selector, "--canary-selector"));
  if (!two_sets && bsel == csel) {
    return Status::Invalid("--baseline-selector and --canary-selector select the same data");
  }
  return Status::Ok();
}

Result<GateArms> LoadGateArms(const GateSource& source, double from_s, double to_s,
                              double increase_from_s) {
  TTFT_ASSIGN_OR_RETURN(Match bsel, SelectorOf(source.baseline_selector, "--baseline-selector"));
  TTFT_ASSIGN_OR_RETURN(Match csel, SelectorOf(source.canary_selector, "--canary-selector"));
  TTFT_ASSIGN_OR_RETURN(GateArms arms,
                        LoadArmsOf(source, bsel, csel, from_s, to_s, increase_from_s));
  TTFT_RETURN_IF_ERROR(CheckSameModel(arms));
  return arms;
}

GateClock& SystemGateClock() {
  static SystemClock clock;
  return clock;
}

Result<double> ParseGateDuration(std::string_view text, std::string_view flag) {
  double scale = 1;
  std::string num(text);
  if (!num.empty() && (num.back() == 's' || num.back() == 'm' || num.back() == 'h')) {
    scale = num.back() == 'm' ? 60 : num.back() == 'h' ? 3600 : 1;
    num.pop_back();
  }
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (num.empty() || end != num.c_str() + num.size() || !(v > 0) || !std::isfinite(v)) {
    return Status::Invalid(
        fmt::format("{} '{}': expected a positive duration like 60s, 5m, 1h", flag, text));
  }
  // Looking faster than a scrape sees nothing new and only loads the server; a gate
  // longer than a month is no rollout. (--every 1e-300 used to look without end, as
  // its slots never advanced past the start; --for 1e300 ran until killed.)
  constexpr double kMinS = 1, kMaxS = 30 * 86400.0;
  if (!(v * scale >= kMinS && v * scale <= kMaxS)) {
    return Status::Invalid(
        fmt::format("{} '{}': expected a duration from 1s to 720h (30 days)", flag, text));
  }
  return v * scale;
}

Result<SequentialGate> ReadGateState(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return SequentialGate{};  // the first look
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Invalid(fmt::format("{}: not JSON", path));
  return SequentialGate::FromJson(j, path);
}

Status WriteGateState(const std::string& path, const SequentialGate& state) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << state.ToJson().dump(2) << "\n";
    if (!out) return Status::IoError(fmt::format("{}: cannot write the gate state", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IoError(fmt::format("{}: cannot replace the gate state", path));
  }
  return Status::Ok();
}

Result<GateResult> RunGate(const GateRunOptions& options, const GateArmLoader& load,
                           GateClock& clock,
                           const std::function<void(const std::string&)>& on_look) {
  // A reversed window judged nothing and said Inconclusive: "too few samples".
  TTFT_RETURN_IF_ERROR(CheckFromTo(options.from_s, options.to_s));
  if (options.every_s > 0) return LookRepeatedly(options, load, clock, on_look);
  if (!options.state_path.empty()) return LookWithState(options, load, clock);
  TTFT_ASSIGN_OR_RETURN(GateArms arms, load(options.from_s, WindowEnd(options, clock), kMissing));
  if (arms.unavailable) return Inconclusive(*arms.unavailable);
  return JudgeGate(options.config, arms.baseline, arms.canary);
}

}  // namespace ttft
