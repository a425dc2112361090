// Private to the dataset module: shared between its files, not part of ttft/dataset.h.
#ifndef TTFT_DATASET_INTERNAL_H_
#define TTFT_DATASET_INTERNAL_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ttft/dataset.h"
#include "ttft/window_stats.h"

namespace ttft::dataset_internal {

// The events of a simulate folder's summary.json ({"events": [...]}); events without a
// usable time are left out (the simulator writes none).
std::vector<Annotation> EventsOfSummary(const nlohmann::json& summary);

// The statistics of the series of `window` whose label `by` is `group` (all series
// without `by`): quantiles from summed histogram buckets, requests from the TTFT
// count, the hit rate and preemptions from counters. Times, rate, KV usage and
// replicas are left to the caller.
WindowStats MetricGroupStats(const MetricSnapshot& window, const std::optional<std::string>& by,
                             const std::string& group);

}  // namespace ttft::dataset_internal

#endif  // TTFT_DATASET_INTERNAL_H_
