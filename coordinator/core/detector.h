// Hot-key detection for one topic: which keys are listed by detection (the operator's pins and
// denies are not its business). Hysteresis exits, threshold entries on guaranteed counts (so
// sketch error never lists a key), and fast entries of surges seen in the latest reports.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "key_estimates.h"
#include "planner.h"

namespace hotkey::coordinator {

// How many keys detection may list: max_hot_keys less the pins.
size_t detected_capacity(const PlanInput& in);

// Whether detection or the balance-driven selection may list `key` now: not listed, pinned,
// denied or under a never_salt policy, with records behind it (`records` > 0: the estimate the
// caller ranks by) and a fleet-wide `rate` (messages/s: the window's for threshold entries, the
// latest reports' for a surge, the traffic estimate's for the selection) of at least min_rate.
bool eligible(const PlanInput& in, const std::map<std::string, HotState>& hot,
              const std::string& key, double records, double rate);

// The hot threshold of `key` as a share of the topic: hot_fraction (its policy's, else the
// topic's) / partitions.
double hot_share_of(const PlanInput& in, const std::string& key);

// A listed key's exit share: min(cold_fraction / partitions, half its entry share).
double exit_share_of(const PlanInput& in, const HotState& st);

// Listed keys whose traffic is gone: below their exit share in the window (counting towards
// hold_ms) and under kIdleFraction of it in the recent view. A moving hot set's keys are so
// ten seconds after the set moved on, and hold_ms kept them listed (each carrying no record)
// for 30 s more, to leave in a version of their own. plan_topic drops them in a version that
// publishes anyway: dropping then costs neither a version nor any key's order.
std::vector<std::string> idle_keys(const PlanInput& in, const KeyEstimates& est,
                                   const std::map<std::string, HotState>& hot);

// Updates `hot`: drops denied and pinned keys and keys under a never_salt policy, keys below
// their exit share for hold_ms (when in.detect) and the smallest keys over the capacity; adds
// keys over the hot threshold (when in.detect) and keys far over it in the latest reports
// (in.detect or in.detect_fast). A key's threshold is its policy's hot_fraction when it has one
// (PlanInput::policies).
void detect_hot_keys(const PlanInput& in, const KeyEstimates& est,
                     std::map<std::string, HotState>& hot);

}  // namespace hotkey::coordinator
