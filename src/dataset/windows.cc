// The window chooser (ttft/dataset.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ttft/dataset.h"
#include "ttft/format.h"

namespace ttft {

AnalysisWindows WindowsAround(double change_at_s, double window_s, TimeRange data) {
  AnalysisWindows w;
  w.change_at_s = change_at_s;
  w.baseline = {std::max(data.from_s, change_at_s - window_s), change_at_s};
  w.incident = {change_at_s, std::min(data.to_s, change_at_s + window_s)};
  return w;
}

Result<AnalysisWindows> ChooseWindows(const WindowRequest& req, const Dataset& data) {
  if (!std::isfinite(req.window_s) || req.window_s < 0) {
    return Status::Invalid(fmt::format(
        "--window {}: must be a finite number >= 0 (0: as long as the data allows)", req.window_s));
  }
  const double lo = data.first_s, hi = data.last_s;
  if (!(hi > lo)) return Status::Invalid("the input holds no spans or snapshots with times");
  if (req.baseline || req.incident) {
    if (!req.baseline || !req.incident) {
      return Status::Invalid("give both --baseline-window and --incident-window");
    }
    const TimeRange b = *req.baseline, i = *req.incident;
    if (b.from_s < i.to_s && i.from_s < b.to_s) {
      return Status::Invalid(
          fmt::format("the baseline [{}, {}) and incident [{}, {}) windows overlap", b.from_s,
                      b.to_s, i.from_s, i.to_s));
    }
    // A window that misses every arrival is most often in another time base; said here,
    // by flag, rather than later as a window without requests.
    for (const auto& [range, flag] :
         {std::pair{b, "--baseline-window"}, std::pair{i, "--incident-window"}}) {
      if (range.to_s <= lo || range.from_s > hi) {
        return Status::Invalid(fmt::format(
            "{} {} is outside the data, whose arrivals run from {} to {} (check the time "
            "base: seconds of the run vs Unix time)",
            flag, numfmt::Window(range.from_s, range.to_s), numfmt::TimePoint(lo),
            numfmt::TimePoint(hi)));
      }
    }
    return AnalysisWindows{req.change_at_s, b, i};
  }
  // A simulate folder's own windows, when nothing else was asked.
  if (!std::isfinite(req.change_at_s) && std::isfinite(data.recorded_change_at_s) &&
      req.window_s <= 0 && std::isfinite(data.recorded_baseline.from_s)) {
    return AnalysisWindows{data.recorded_change_at_s, data.recorded_baseline,
                           data.recorded_incident};
  }
  double change = req.change_at_s;
  if (!std::isfinite(change)) change = data.recorded_change_at_s;
  if (!std::isfinite(change)) {
    return Status::Invalid("no change time: give --change-at T (or --baseline/--incident inputs)");
  }
  if (change <= lo || change >= hi) {
    return Status::Invalid(
        fmt::format("--change-at {} is outside the data, whose arrivals span [{}, {}] "
                    "(check the time base: seconds of the run vs Unix time)",
                    numfmt::Fixed(change, 3), numfmt::Fixed(lo, 3), numfmt::Fixed(hi, 3)));
  }
  const double w = req.window_s > 0 ? req.window_s : std::min(change - lo, hi - change);
  return WindowsAround(change, w, data.range());
}

}  // namespace ttft
