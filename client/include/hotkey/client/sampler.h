// Per-topic traffic sampler: a Space-Saving sketch of the keys sent plus totals and
// per-partition counts, for one report window.
//
// Thread-safe. Each producing thread records into its own shard (shards are picked per thread,
// so a shard's mutex is uncontended except while drain() swaps it out); drain() merges the
// shards into one window. There is no lock shared by all senders.
//
// Surges: with a surge factor F > 0, record() also notices a key sent unsalted whose
// guaranteed count in the shard's current window reaches F / partitions of the window's
// sampled records (and at least kSurgeMinRecords records): it leaves the key's fingerprint for
// take_surge() (one relaxed atomic store, nothing else), so the reporter can send an early
// report. Keys muted with set_muted() are not noticed again.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "hotkey/space_saving.h"

namespace hotkey::client {

class Sampler {
 public:
  static constexpr uint32_t kShards = 16;
  // Records (scaled by 1 / sample rate) a surging key must have in the window, so a short
  // window's first records are not a surge.
  static constexpr double kSurgeMinRecords = 32;
  static constexpr uint32_t kMuteSlots = 8;

  // capacity: sketch capacity (>= 1); sample_rate in (0, 1]: one record in round(1/rate) feeds
  // the sketch; surge_factor >= 0 (0: surges are not looked for). std::invalid_argument
  // otherwise.
  Sampler(uint32_t capacity, double sample_rate, double surge_factor = 0);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // One keyed record (the logical key) sent to `partition` (-1: unknown, not counted per
  // partition). No allocation once the shard's sketch is warm and the partition seen before.
  void record(std::string_view key, int32_t partition, bool salted) noexcept;
  // One record without a key: counted in the statistics only.
  void record_null() noexcept;

  // What one window saw.
  struct Window {
    SpaceSaving sketch{1};
    uint64_t total = 0;         // keyed records
    uint64_t sketch_total = 0;  // records fed to the sketch
    std::vector<uint64_t> partition_counts;
  };
  // Merges and resets every shard's window. partition_counts gets `partitions` entries
  // (counts for partitions >= `partitions` are dropped).
  Window drain(int32_t partitions);

  // Lifetime counters (not reset by drain).
  struct Counters {
    uint64_t salted = 0;
    uint64_t cold = 0;
    uint64_t null_key = 0;
  };
  Counters counters() const;

  uint32_t capacity() const noexcept;
  double sample_rate() const noexcept;

  // The partition count surge shares are measured against (<= 0: no surge is noticed).
  void set_partitions(int32_t partitions) noexcept;
  // The fingerprint (SpaceSaving::Updated::hash, never 0) of a key noticed surging since the
  // last call, or 0; clears it.
  uint64_t take_surge() noexcept;
  // Slot `slot` (< kMuteSlots) mutes the key with this fingerprint (0: the slot mutes nothing).
  void set_muted(uint32_t slot, uint64_t fingerprint) noexcept;

 private:
  struct Shard;
  uint32_t capacity_;
  double sample_rate_;
  uint32_t sample_every_;
  double surge_factor_;
  uint64_t surge_min_sampled_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<int32_t> partitions_{0};
  std::atomic<uint64_t> surge_{0};
  std::atomic<uint64_t> muted_[kMuteSlots] = {};

  void check_surge(const SpaceSaving::Updated& u, uint64_t sketch_total) noexcept;
};

}  // namespace hotkey::client
