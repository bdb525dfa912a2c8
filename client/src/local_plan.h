// Local tables: the salt tables a producer plans for itself while its list of a topic is stale
// (docs/CLIENT.md, "Local tables"). One pure function over one report window: which keys the
// window shows at or above the hot threshold that the last list leaves unsalted (and neither
// denies nor covers by a never_salt prefix), and their verified load-aware tables, planned
// with the coordinator's planner (plan_load_aware) against the window's own per-partition
// counts. The Java client implements the same decisions; tests/data/vectors/local_tables.json
// holds them (written by tests/vectors/generate_vectors.cc from this function).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/hotkey_list.h"
#include "hotkey/partitioner.h"
#include "hotkey/report.h"

namespace hotkey::client::detail {

// At most this many keys per topic have a local table (the largest first).
inline constexpr size_t kMaxLocalKeys = 64;

struct LocalPlanInput {
  int32_t partitions = 0;  // the live partition count (>= 1)
  HashFamily family = HashFamily::kMurmur2;
  std::string separator = std::string(kDefaultSeparator);
  // The window: records per partition (every keyed record), keyed records, records the sketch
  // saw (sampled), and the sketch's items (sampled counts, Space-Saving error bounds).
  std::vector<uint64_t> partition_counts;
  uint64_t total = 0;
  uint64_t sketch_total = 0;
  std::vector<ReportItem> items;
  // hotkey.surge.factor: the hot threshold is surge_factor / partitions of the window.
  double surge_factor = 1.0;
  // From the last list (empty without one): keys it salts, keys it denies, never_salt prefixes.
  std::vector<std::string> listed;
  std::vector<std::string> denied;
  std::vector<std::string> never_salt;
  // The keys salted by the local table now, with their tables (planned for `partitions`).
  std::vector<HotKey> current;
};

struct LocalPlan {
  // The local table after this window: the current keys still hot (tables unchanged), then the
  // keys added (largest first), each with a verified table.
  std::vector<HotKey> keys;
  std::vector<std::string> added;
  std::vector<std::string> dropped;
  bool changed() const noexcept { return !added.empty() || !dropped.empty(); }
};

// Whether a key with `guaranteed` sampled records (count - error) in a window of `total` keyed
// records, `sketch_total` of them sampled, is at or above the hot threshold: the sampler's
// surge rule (hotkey.surge.factor / partitions of the sampled records, at least
// Sampler::kSurgeMinRecords records scaled, and Sampler::kSurgeMinSampled samples when the
// window was sampled below rate 1).
bool at_hot_threshold(uint64_t guaranteed, uint64_t sketch_total, uint64_t total,
                      int32_t partitions, double surge_factor) noexcept;

// The decision for one window (pure; std::invalid_argument for partitions < 1, an invalid
// separator, or partition_counts not of size partitions):
// - a current key stays while its guaranteed share is at least half the hot threshold (a key
//   that cooled off, or left the sketch, is dropped);
// - a key at the hot threshold is added unless the last list salts it, denies it, or one of
//   its never_salt prefixes starts it; at most kMaxLocalKeys keys in all;
// - added keys are planned together by plan_load_aware: demand = the key's records, (count -
//   error / 2) scaled by total / sketch_total; cold load = the partition counts less each added
//   key's records on its home partition (it went unsalted), shrunk by the counting noise
//   (shrink_sampling_noise); salts per key salt_count_for_share(share, kDefault*) as the
//   coordinator's defaults size them. A key whose table comes out empty is not added.
LocalPlan plan_local_tables(const LocalPlanInput& in);

}  // namespace hotkey::client::detail
