// Salt-table planning for one topic, after detection: the cold load (the measured load less
// every salted key's records), load-aware verified tables for detected keys and pins,
// balance-driven selection while the prediction stays skewed, explicit-count pins, the list in
// publication order, and whether it differs materially from the published one.
#pragma once

#include <map>
#include <string>

#include "key_estimates.h"
#include "planner.h"

namespace hotkey::coordinator {

// The list header (topic, partitions, hash, separator, denies, time) with no keys: the whole
// plan when the partition count is unknown.
PlanResult unplanned_result(const PlanInput& in);

// Plans the tables of the keys in `hot` and of the pins (in.partitions > 0). Balance-driven
// selection may add keys to `hot`.
PlanResult plan_tables(const PlanInput& in, KeyEstimates& est,
                       std::map<std::string, HotState>& hot);

}  // namespace hotkey::coordinator
