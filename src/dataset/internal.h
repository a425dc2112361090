// Private to the dataset module: shared between its files, not part of ttft/dataset.h.
#ifndef TTFT_DATASET_INTERNAL_H_
#define TTFT_DATASET_INTERNAL_H_

#include <nlohmann/json.hpp>
#include <vector>

#include "ttft/dataset.h"

namespace ttft::dataset_internal {

// The events of a simulate folder's summary.json ({"events": [...]}); events without a
// usable time are left out (the simulator writes none).
std::vector<Annotation> EventsOfSummary(const nlohmann::json& summary);

}  // namespace ttft::dataset_internal

#endif  // TTFT_DATASET_INTERNAL_H_
