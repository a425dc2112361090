// The registry of hypothesis rules: one line per cause (ttft/diagnose.h). Adding a
// cause is one rule_*.cc file and one line here.
#include "diagnose/rule_helpers.h"

namespace ttft {

std::vector<std::unique_ptr<HypothesisRule>> DefaultRules() {
  std::vector<std::unique_ptr<HypothesisRule>> r;
  r.push_back(diag::MakePrefixCacheCollapseRule());
  r.push_back(diag::MakeSchedulerConfigRule());
  r.push_back(diag::MakeKvPressureRule());
  r.push_back(diag::MakeLongerPromptsRule());
  r.push_back(diag::MakeBadReplicaRule());
  r.push_back(diag::MakeRegionCapacityRule());
  r.push_back(diag::MakeTrafficMixRule());
  r.push_back(diag::MakeLoadSurgeRule());
  r.push_back(diag::MakeComputeSlowdownRule());
  r.push_back(diag::MakeDecodeHeavyRule());
  return r;
}

}  // namespace ttft
