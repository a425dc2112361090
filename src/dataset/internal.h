// Private to the dataset module: shared between its files, not part of ttft/dataset.h.
#ifndef TTFT_DATASET_INTERNAL_H_
#define TTFT_DATASET_INTERNAL_H_

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ttft/dataset.h"
#include "ttft/window_stats.h"

namespace ttft::dataset_internal {

// The events of a simulate folder's summary.json ({"events": [...]}); events without a
// usable time are left out (the simulator writes none).
std::vector<Annotation> EventsOfSummary(const nlohmann::json& summary);

// The statistics of the series of `window` that `keep` accepts: quantiles from summed
// histogram buckets, requests from the TTFT count, the hit rate, preemptions and the
// error rate from counters. Times, rate, KV usage and replicas are left to the caller.
WindowStats MetricSeriesStats(const MetricSnapshot& window,
                              const std::function<bool(const Labels&)>& keep);

// MetricSeriesStats of the series whose label `by` is `group` (a series without the
// label has the value ""; every series without `by`).
WindowStats MetricGroupStats(const MetricSnapshot& window, const std::optional<std::string>& by,
                             const std::string& group);

// The *.prom files directly in `dir`, sorted by name (FinishLoading orders scrapes by
// time); none when it is not a readable folder.
std::vector<std::string> ScrapeFilesIn(const std::string& dir);

}  // namespace ttft::dataset_internal

#endif  // TTFT_DATASET_INTERNAL_H_
