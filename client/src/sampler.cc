#include "hotkey/client/sampler.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace hotkey::client {
namespace {

std::atomic<uint32_t> g_next_shard{0};

uint32_t thread_shard() noexcept {
  thread_local const uint32_t shard =
      g_next_shard.fetch_add(1, std::memory_order_relaxed) % Sampler::kShards;
  return shard;
}

// The shard lock. A shard belongs to one producing thread (unless more than kShards threads
// send), so the lock is almost never contended: taking it is one atomic exchange and releasing
// it one store, where std::mutex costs two calls into libc and ~50 instructions per record
// (bench/route_instructions). Waiters spin briefly, then yield: a holder only ever runs a
// sketch update or drain()'s copy of one shard.
class ShardLock {
 public:
  void lock() noexcept {
    for (uint32_t spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace

struct alignas(64) Sampler::Shard {
  ShardLock mu;
  std::optional<SpaceSaving> sketch;  // created on first use
  uint64_t total = 0;
  uint64_t sketch_total = 0;
  uint64_t until_sample = 0;
  std::vector<uint64_t> partition_counts;
  Counters counters;
};

Sampler::Sampler(uint32_t capacity, double sample_rate, double surge_factor)
    : capacity_(capacity), sample_rate_(sample_rate), surge_factor_(surge_factor) {
  if (capacity < 1 || capacity > SpaceSaving::kMaxCapacity) {
    throw std::invalid_argument("sketch capacity must be in [1, " +
                                std::to_string(SpaceSaving::kMaxCapacity) + "]");
  }
  if (!(sample_rate > 0.0 && sample_rate <= 1.0)) {
    throw std::invalid_argument("sample rate must be in (0, 1]");
  }
  double every = std::round(1.0 / sample_rate);
  sample_every_ = every < 1 ? 1u : every > 1e9 ? 1000000000u : static_cast<uint32_t>(every);
  if (!(surge_factor >= 0.0 && surge_factor <= 1e6)) {
    throw std::invalid_argument("surge factor must be in [0, 1e6]");
  }
  surge_min_sampled_ = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(kSurgeMinRecords / static_cast<double>(sample_every_))));
  shards_ = std::make_unique<Shard[]>(kShards);
}

Sampler::~Sampler() = default;

uint32_t Sampler::capacity() const noexcept { return capacity_; }
double Sampler::sample_rate() const noexcept { return sample_rate_; }

void Sampler::record(std::string_view key, int32_t partition, bool salted) noexcept {
  Shard& s = shards_[thread_shard()];
  std::lock_guard lock(s.mu);
  ++s.total;
  if (salted) {
    ++s.counters.salted;
  } else {
    ++s.counters.cold;
  }
  try {
    if (partition >= 0) {
      auto p = static_cast<size_t>(partition);
      if (p >= s.partition_counts.size()) s.partition_counts.resize(p + 1, 0);
      ++s.partition_counts[p];
    }
    if (s.until_sample == 0) {
      s.until_sample = sample_every_ - 1;
      if (!s.sketch) s.sketch.emplace(capacity_);
      ++s.sketch_total;
      if (surge_factor_ > 0 && !salted) {
        check_surge(s.sketch->update_and_get(key, 1), s.sketch_total);
      } else {
        s.sketch->update(key, 1);
      }
    } else {
      --s.until_sample;
    }
  } catch (...) {
    // Out of memory: the record is still sent; only the statistics lose it.
  }
}

void Sampler::check_surge(const SpaceSaving::Updated& u, uint64_t sketch_total) noexcept {
  const uint64_t guaranteed = u.count - u.error;
  if (guaranteed < surge_min_sampled_) return;
  const int32_t partitions = partitions_.load(std::memory_order_relaxed);
  if (partitions <= 0) return;
  if (static_cast<double>(guaranteed) * partitions <
      surge_factor_ * static_cast<double>(sketch_total)) {
    return;
  }
  const uint64_t fingerprint = u.hash != 0 ? u.hash : 1;
  for (const auto& m : muted_) {
    if (m.load(std::memory_order_relaxed) == fingerprint) return;
  }
  if (surge_.load(std::memory_order_relaxed) == 0) {
    surge_.store(fingerprint, std::memory_order_relaxed);
  }
}

void Sampler::set_partitions(int32_t partitions) noexcept {
  partitions_.store(partitions, std::memory_order_relaxed);
}

uint64_t Sampler::take_surge() noexcept {
  if (surge_.load(std::memory_order_relaxed) == 0) return 0;
  return surge_.exchange(0, std::memory_order_relaxed);
}

void Sampler::set_muted(uint32_t slot, uint64_t fingerprint) noexcept {
  if (slot < kMuteSlots) muted_[slot].store(fingerprint, std::memory_order_relaxed);
}

void Sampler::record_null() noexcept {
  Shard& s = shards_[thread_shard()];
  std::lock_guard lock(s.mu);
  ++s.counters.null_key;
}

Sampler::Window Sampler::drain(int32_t partitions) {
  Window w{SpaceSaving(capacity_), 0, 0,
           std::vector<uint64_t>(static_cast<size_t>(partitions > 0 ? partitions : 0), 0)};
  std::vector<SpaceSaving> parts;
  for (uint32_t i = 0; i < kShards; ++i) {
    Shard& s = shards_[i];
    std::lock_guard lock(s.mu);
    w.total += s.total;
    w.sketch_total += s.sketch_total;
    for (size_t p = 0; p < s.partition_counts.size() && p < w.partition_counts.size(); ++p) {
      w.partition_counts[p] += s.partition_counts[p];
    }
    std::fill(s.partition_counts.begin(), s.partition_counts.end(), 0);
    s.total = 0;
    s.sketch_total = 0;
    if (s.sketch && !s.sketch->empty()) {
      parts.push_back(*s.sketch);
      s.sketch->clear();
    }
  }
  if (!parts.empty()) {
    std::vector<const SpaceSaving*> ptrs;
    for (const auto& p : parts) ptrs.push_back(&p);
    w.sketch = SpaceSaving::merge_all(ptrs, capacity_);
  }
  return w;
}

Sampler::Counters Sampler::counters() const {
  Counters c;
  for (uint32_t i = 0; i < kShards; ++i) {
    Shard& s = shards_[i];
    std::lock_guard lock(s.mu);
    c.salted += s.counters.salted;
    c.cold += s.counters.cold;
    c.null_key += s.counters.null_key;
  }
  return c;
}

}  // namespace hotkey::client
