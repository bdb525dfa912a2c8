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
//
// Sample rate: fixed (one keyed record in round(1/rate) feeds the sketch, by a countdown), or
// adaptive (SampleRate::adaptive(), the client's default): each window is sampled at the rate
// the sketch's own error allows, decided at drain() from the window before. Space-Saving with
// capacity k errs by at most 1/k of the records it saw; sampling M records adds a standard
// deviation of sqrt(s(1-s)/M) <= 0.5/sqrt(M) to a key's share s, so past M = k^2/4 samples a
// window (kAdaptiveMinSamples at least; 16,384 for the default k = 256) sampling noise is
// within the sketch's own error bound and more records only cost time. A key at the hot
// threshold (1/(2 partitions) by default, 2% of the records on 25 partitions) is then hundreds
// of samples, far above the sketch error and the sampling noise. Within a window
// every record is sampled with the same probability p (a geometric countdown drawn from a
// per-shard xorshift on each sampled record: no RNG call for the others, and no bias whatever
// the order of the keys), so a key's count scaled by total / sketch_total is an unbiased
// estimate of its records (Window::sample_rate is that ratio).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "hotkey/space_saving.h"

namespace hotkey::client {

// How a Sampler picks the records its sketch sees.
struct SampleRate {
  double rate = 1.0;      // fixed rate in (0, 1] (ignored when adaptive)
  bool adaptive = false;  // the rate follows the record rate (see Sampler)
  static SampleRate fixed(double rate) { return SampleRate{rate, false}; }
  static SampleRate automatic() { return SampleRate{1.0, true}; }
};

class Sampler {
 public:
  static constexpr uint32_t kShards = 16;
  // Adaptive rate: the fewest samples per window it aims for (small sketch capacities), and
  // the lowest rate it samples at.
  static constexpr uint64_t kAdaptiveMinSamples = 4096;
  static constexpr double kAdaptiveMinRate = 1e-5;
  // Adaptive rate below 1: a surge also needs this many sampled records of the key, so a
  // handful of samples early in a window is not a surge.
  static constexpr uint64_t kSurgeMinSampled = 16;
  // Records (scaled by 1 / sample rate) a surging key must have in the window, so a short
  // window's first records are not a surge.
  static constexpr double kSurgeMinRecords = 32;
  static constexpr uint32_t kMuteSlots = 8;

  // capacity: sketch capacity (>= 1); sample_rate in (0, 1]: one record in round(1/rate) feeds
  // the sketch; surge_factor >= 0 (0: surges are not looked for). std::invalid_argument
  // otherwise.
  Sampler(uint32_t capacity, double sample_rate, double surge_factor = 0);
  // The same with an adaptive rate possible (SampleRate::automatic()).
  Sampler(uint32_t capacity, SampleRate rate, double surge_factor);
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
    // The report's sample_rate: the fixed rate; adaptive: sketch_total / total (the rate in
    // effect when nothing was sampled), at least kMinSampleRate.
    double sample_rate = 1.0;
  };
  // Merges and resets every shard's window. partition_counts gets `partitions` entries
  // (counts for partitions >= `partitions` are dropped). Adaptive rate: the next window's
  // rate is set from this window's records, scaled down from `window_ms` to `next_window_ms`
  // when the window was longer (never up: a short window's records are a floor).
  Window drain(int32_t partitions, uint32_t window_ms = 0, uint32_t next_window_ms = 0);

  // Lifetime counters (not reset by drain).
  struct Counters {
    uint64_t salted = 0;
    uint64_t cold = 0;
    uint64_t null_key = 0;
  };
  Counters counters() const;

  uint32_t capacity() const noexcept;
  // The fixed rate, or the adaptive rate of the current window.
  double sample_rate() const noexcept;
  bool adaptive() const noexcept { return adaptive_; }
  // Adaptive rate: the samples per window it aims for (capacity^2 / 4, kAdaptiveMinSamples at
  // least).
  uint64_t target_samples() const noexcept { return target_samples_; }

  // The partition count surge shares are measured against (<= 0: no surge is noticed).
  void set_partitions(int32_t partitions) noexcept;
  // Set once, before the sampler records (not thread-safe against record()). `noticed` runs on
  // the recording thread when a surge is noticed while none waits to be taken (at most once
  // per take_surge), so the reporter sleeps instead of polling; `live_partitions` gives the
  // partition count while set_partitions has not (a new topic, before its first report).
  struct SurgeHooks {
    std::function<void()> noticed;
    std::function<int32_t()> live_partitions;
  };
  void set_surge_hooks(SurgeHooks hooks) { hooks_ = std::move(hooks); }
  // The fingerprint (SpaceSaving::Updated::hash, never 0) of a key noticed surging since the
  // last call, or 0; clears it.
  uint64_t take_surge() noexcept;
  // Whether a surge waits to be taken (take_surge would return it).
  bool surge_waiting() const noexcept { return surge_.load(std::memory_order_relaxed) != 0; }
  // Slot `slot` (< kMuteSlots) mutes the key with this fingerprint (0: the slot mutes nothing).
  void set_muted(uint32_t slot, uint64_t fingerprint) noexcept;

 private:
  struct Shard;
  uint32_t capacity_;
  double sample_rate_;
  uint32_t sample_every_;
  bool adaptive_;
  uint64_t target_samples_;
  std::atomic<double> rate_{1.0};  // adaptive: the current window's rate (set by drain)
  double surge_factor_;
  uint64_t surge_min_sampled_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<int32_t> partitions_{0};
  std::atomic<uint64_t> surge_{0};
  std::atomic<uint64_t> muted_[kMuteSlots] = {};
  SurgeHooks hooks_;

  void check_surge(const SpaceSaving::Updated& u, uint64_t sketch_total,
                   uint64_t min_sampled) noexcept;
  void set_shard_rate(Shard& s, double rate) noexcept;
  // record() for a sampled record, a partition not seen before or a contended shard, out of
  // line (so record() saves no registers and tail-calls it: six register arguments); takes
  // the shard's lock unless flags has kLocked, and releases it.
  static constexpr uint32_t kSalted = 1;
  static constexpr uint32_t kLocked = 2;
  [[gnu::noinline]] void record_slow(Shard& s, std::string_view key, int32_t partition,
                                     uint32_t flags) noexcept;
};

}  // namespace hotkey::client
