#include "planner.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "detector.h"
#include "key_estimates.h"
#include "table_planner.h"

namespace hotkey::coordinator {

double skew_of(const std::vector<double>& load) {
  if (load.empty()) return 1.0;
  double sum = 0, mx = 0;
  for (double v : load) {
    sum += v;
    mx = std::max(mx, v);
  }
  if (sum <= 0) return 1.0;
  return mx / (sum / static_cast<double>(load.size()));
}

PlanResult plan_topic(const PlanInput& in, std::map<std::string, HotState>& hot) {
  if (in.partitions <= 0) return unplanned_result(in);
  KeyEstimates est(in);
  detect_hot_keys(in, est, hot);
  const std::vector<std::string> idle = idle_keys(in, est, hot);
  if (idle.empty()) return plan_tables(in, est, hot);
  // Keys that no longer send stay listed (hysteresis) unless this plan publishes anyway: then
  // they leave with it, planned again without them.
  std::map<std::string, HotState> without = hot;
  PlanResult kept = plan_tables(in, est, hot);
  if (!kept.material) return kept;
  for (const auto& key : idle) without.erase(key);
  hot = std::move(without);
  return plan_tables(in, est, hot);
}

}  // namespace hotkey::coordinator
