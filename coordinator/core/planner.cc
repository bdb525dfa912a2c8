#include "planner.h"

#include <algorithm>

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
  return plan_tables(in, est, hot);
}

}  // namespace hotkey::coordinator
