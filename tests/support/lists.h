// Hot-key lists as a coordinator publishes them: every listed key with verified salts
// (plan_salts) for the list's family and partition count. Header-only; the caller links
// hotkey::common.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hotkey/hotkey_list.h"
#include "hotkey/salt_planner.h"

namespace hotkey::test_support {

// A list with `keys` hot, each given `salts` first-fit verified salts for (family, partitions).
inline HotKeyList make_list(const std::string& topic, uint64_t version, int32_t partitions,
                            HashFamily family, const std::vector<std::string>& keys, uint32_t salts,
                            double share = 0.5) {
  HotKeyList list;
  list.topic = topic;
  list.version = version;
  list.partitions = partitions;
  list.hash = family;
  for (const auto& k : keys) {
    SaltSpace space;
    space.family = family;
    space.partitions = partitions;
    HotKey hk;
    hk.key = k;
    hk.salts = plan_salts(k, salts, space).salts;
    hk.share = share;
    list.keys.push_back(std::move(hk));
  }
  return list;
}

}  // namespace hotkey::test_support
