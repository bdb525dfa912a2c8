// Verified salt tables: which salts of a hot key to use, and how much traffic each gets.
//
// Every (salt, partition) pair a planner returns recomputes to that partition with the topic's
// own hash family: partition_for(family, key + separator + salt, P) == partition. Pure
// functions, safe from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/partitioner.h"

namespace hotkey {

// Weights are relative integers; planners scale them so a table's weights sum to this.
inline constexpr uint32_t kWeightScale = 10000;

struct SaltAssignment {
  uint32_t salt = 0;
  int32_t partition = 0;
  uint32_t weight = 0;
  bool operator==(const SaltAssignment&) const = default;
};

struct SaltTable {
  std::vector<SaltAssignment> salts;  // distinct partitions, in salt order
  bool search_limit_reached = false;  // fewer salts than asked because the search gave up
};

// Where and how to search for salts.
struct SaltSpace {
  HashFamily family = HashFamily::kMurmur2;
  int32_t partitions = 1;
  std::string separator = std::string(kDefaultSeparator);
  // Salts 0..search_limit-1 are tried.
  uint32_t search_limit = 1u << 16;
};

// First-fit: salts 0, 1, 2, ... keeping each one whose salted key lands on a partition not yet
// used, until `count` distinct partitions (count is capped at P, and at kWeightScale so every
// weight stays >= 1). Equal weights.
// std::invalid_argument on partitions < 1, count < 1 or an invalid separator.
SaltTable plan_salts(std::string_view key, uint32_t count, const SaltSpace& space);

// For each partition 0..P-1, the smallest salt < search_limit whose salted key lands there,
// or UINT32_MAX when none was found.
std::vector<uint32_t> salt_per_partition(std::string_view key, const SaltSpace& space);

// One hot key for the load-aware planner.
struct HotKeyDemand {
  std::string key;
  double rate = 0;         // the key's traffic (any unit, same as cold_load)
  uint32_t max_salts = 0;  // at most this many partitions (0: P); at least 1 is always used
};

// Load-aware planning (water-filling): given the predicted cold load of every partition
// (cold_load.size() == P) and the hot keys, assigns each key (largest rate first) to the
// least-loaded partitions it can reach with a verified salt, with weights that level those
// partitions as far as its rate allows, minimising the resulting maximum load.
// Returns one table per demand, in the order given. Zero-weight salts are dropped.
std::vector<SaltTable> plan_load_aware(std::span<const double> cold_load,
                                       std::span<const HotKeyDemand> demands,
                                       const SaltSpace& space);

// The predicted per-partition load after applying `tables` (weights) to `demands` (rates).
std::vector<double> predicted_load(std::span<const double> cold_load,
                                   std::span<const HotKeyDemand> demands,
                                   std::span<const SaltTable> tables);

// Table sizes: how many salts a key carrying `share` of its topic's records gets,
// ceil(share * partitions / salt_share) clamped to [min(min_salts, max_salts), max_salts] and
// at most `partitions` (a non-finite or negative share counts as 0). The coordinator sizes its
// tables with the topic's settings; a client's local tables (docs/CLIENT.md, "Local tables")
// with the defaults below, which are the coordinator's defaults.
inline constexpr uint32_t kDefaultMinSalts = 2;
inline constexpr uint32_t kDefaultMaxSalts = 256;
inline constexpr double kDefaultSaltShare = 0.05;
uint32_t salt_count_for_share(double share, int32_t partitions, uint32_t min_salts,
                              uint32_t max_salts, double salt_share);

// Pulls measured per-partition loads toward their mean by the part of their spread that
// counting noise explains (records per partition vary about as much as their mean, Poisson):
// water-filling against raw counts would fit that noise, and the table would carry it into the
// real load. Spread beyond the noise (cold keys hashed unevenly, as under Zipf) is kept.
void shrink_sampling_noise(std::span<double> load);

// True when every salt of `table` recomputes to its partition, partitions are distinct and in
// range, and weights are positive. An empty table, or an invalid space, is never valid.
bool verify_table(std::string_view key, const SaltTable& table, const SaltSpace& space);

}  // namespace hotkey
