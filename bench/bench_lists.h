// Keys and hot-key lists shared by the client benchmarks (client_bench, route_instructions,
// produce_instructions): the same 64-partition topic and 8 verified salts per hot key, so their
// figures compare.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hotkey/hotkey_list.h"
#include "hotkey/partitioner.h"
#include "hotkey/salt_planner.h"
#include "support/lists.h"

namespace hotkey::bench {

inline constexpr int32_t kPartitions = 64;

// `n` distinct keys "<prefix><i * 2654435761>" (spread over the hash space).
inline std::vector<std::string> make_keys(size_t n, const char* prefix) {
  std::vector<std::string> keys;
  keys.reserve(n);
  for (size_t i = 0; i < n; ++i) keys.push_back(prefix + std::to_string(i * 2654435761u));
  return keys;
}

// Version 1 of topic "bench" listing `hot`, each with 8 verified murmur2 salts.
inline HotKeyList make_list(const std::vector<std::string>& hot) {
  return test_support::make_list("bench", 1, kPartitions, HashFamily::kMurmur2, hot, 8,
                                 /*share=*/0);
}

}  // namespace hotkey::bench
