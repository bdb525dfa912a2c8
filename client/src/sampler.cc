#include "hotkey/client/sampler.h"

#include "hotkey/report.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "splitmix64.h"

namespace hotkey::client {
namespace {

std::atomic<uint32_t> g_next_shard{0};

// Constant-initialized (no thread_local guard to check on every record): kShards means "not
// picked yet".
thread_local uint32_t t_shard = Sampler::kShards;

uint32_t thread_shard() noexcept {
  if (t_shard == Sampler::kShards) [[unlikely]] {
    t_shard = g_next_shard.fetch_add(1, std::memory_order_relaxed) % Sampler::kShards;
  }
  return t_shard;
}

// The shard lock. A shard belongs to one producing thread (unless more than kShards threads
// send), so the lock is almost never contended: taking it is one atomic exchange and releasing
// it one store, where std::mutex costs two calls into libc and ~50 instructions per record
// (bench/route_instructions). Waiters spin briefly, then yield: a holder only ever runs a
// sketch update or drain()'s copy of one shard.
class ShardLock {
 public:
  void lock() noexcept {
    if (!try_lock()) lock_contended();
  }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  // Out of line, so the uncontended path saves no registers for the yield call.
  [[gnu::noinline]] void lock_contended() noexcept {
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

std::atomic<uint64_t> g_next_seed{0x9e3779b97f4a7c15ull};

}  // namespace

struct alignas(64) Sampler::Shard {
  ShardLock mu;
  std::optional<SpaceSaving> sketch;  // created on first use
  uint64_t total = 0;
  uint64_t sketch_total = 0;
  uint64_t until_sample = 0;
  // Adaptive rate: this window's sampling probability, 1 / ln(1 - p) for the geometric gaps,
  // the sampled records a surge needs, and the xorshift state the gaps are drawn from.
  double rate = 1.0;
  double inv_log_skip = 0;
  uint64_t surge_min_sampled = 0;
  uint64_t rng = 1;
  std::vector<uint64_t> partition_counts;
  Counters counters;

  // Records to skip before the next sampled one: geometric with success probability `rate`,
  // so every record is sampled with probability `rate` independently of the others.
  uint64_t gap() noexcept {
    if (rate >= 1.0) return 0;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    // u in (0, 1]: log(u) <= 0 and inv_log_skip < 0.
    const double u = static_cast<double>((rng >> 11) + 1) * 0x1.0p-53;
    const double g = std::floor(std::log(u) * inv_log_skip);
    return g < 1e15 ? static_cast<uint64_t>(g) : uint64_t{1000000000000000};
  }
};

Sampler::Sampler(uint32_t capacity, double sample_rate, double surge_factor)
    : Sampler(capacity, SampleRate::fixed(sample_rate), surge_factor) {}

Sampler::Sampler(uint32_t capacity, SampleRate rate, double surge_factor)
    : capacity_(capacity),
      sample_rate_(rate.adaptive ? 1.0 : rate.rate),
      adaptive_(rate.adaptive),
      surge_factor_(surge_factor) {
  const double sample_rate = sample_rate_;
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
  target_samples_ = std::max<uint64_t>(kAdaptiveMinSamples, uint64_t{capacity} * capacity / 4);
  shards_ = std::make_unique<Shard[]>(kShards);
  for (uint32_t i = 0; i < kShards; ++i) {
    shards_[i].rng = detail::splitmix64(g_next_seed.fetch_add(1, std::memory_order_relaxed)) | 1;
    set_shard_rate(shards_[i], 1.0);
  }
}

void Sampler::set_shard_rate(Shard& s, double rate) noexcept {
  s.rate = rate;
  s.inv_log_skip = rate < 1.0 ? 1.0 / std::log1p(-rate) : 0.0;
  s.surge_min_sampled =
      rate < 1.0 ? std::max<uint64_t>(kSurgeMinSampled,
                                      static_cast<uint64_t>(std::ceil(kSurgeMinRecords * rate)))
                 : surge_min_sampled_;
  s.until_sample = s.gap();
}

Sampler::~Sampler() = default;

uint32_t Sampler::capacity() const noexcept { return capacity_; }
double Sampler::sample_rate() const noexcept {
  return adaptive_ ? rate_.load(std::memory_order_relaxed) : sample_rate_;
}

void Sampler::record(std::string_view key, int32_t partition, bool salted) noexcept {
  Shard& s = shards_[thread_shard()];
  if (s.mu.try_lock()) [[likely]] {
    // A record not sampled, to a partition seen before: counted and done, with no call (so
    // no registers saved) on the way; bench/route_instructions auto_*.
    const auto p = static_cast<size_t>(partition);
    if (s.until_sample != 0 && (partition < 0 || p < s.partition_counts.size())) [[likely]] {
      --s.until_sample;
      ++s.total;
      ++(salted ? s.counters.salted : s.counters.cold);
      if (partition >= 0) ++s.partition_counts[p];
      s.mu.unlock();
      return;
    }
    record_slow(s, key, partition, kLocked | (salted ? kSalted : 0));
  } else {
    record_slow(s, key, partition, salted ? kSalted : 0);
  }
}

void Sampler::record_slow(Shard& s, std::string_view key, int32_t partition,
                          uint32_t flags) noexcept {
  if ((flags & kLocked) == 0) s.mu.lock_contended();
  const bool salted = (flags & kSalted) != 0;
  std::lock_guard lock(s.mu, std::adopt_lock);
  ++s.total;
  ++(salted ? s.counters.salted : s.counters.cold);
  if (partition >= 0) {
    auto p = static_cast<size_t>(partition);
    if (p < s.partition_counts.size()) {
      ++s.partition_counts[p];
    } else {
      try {
        s.partition_counts.resize(p + 1, 0);
        ++s.partition_counts[p];
      } catch (...) {
        // Out of memory: the record is still sent; only the statistics lose it.
      }
    }
  }
  if (s.until_sample != 0) {
    --s.until_sample;
    return;
  }
  s.until_sample = adaptive_ ? s.gap() : sample_every_ - 1;
  try {
    if (!s.sketch) s.sketch.emplace(capacity_);
    ++s.sketch_total;
    if (surge_factor_ > 0 && !salted) {
      check_surge(s.sketch->update_and_get(key, 1), s.sketch_total, s.surge_min_sampled);
    } else {
      s.sketch->update(key, 1);
    }
  } catch (...) {
    // Out of memory: the record is still sent; only the statistics lose it.
  }
}

void Sampler::check_surge(const SpaceSaving::Updated& u, uint64_t sketch_total,
                          uint64_t min_sampled) noexcept {
  const uint64_t guaranteed = u.count - u.error;
  if (guaranteed < min_sampled) return;
  int32_t partitions = partitions_.load(std::memory_order_relaxed);
  if (partitions <= 0 && hooks_.live_partitions) partitions = hooks_.live_partitions();
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
    if (hooks_.noticed) hooks_.noticed();
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

Sampler::Window Sampler::drain(int32_t partitions, uint32_t window_ms, uint32_t next_window_ms) {
  Window w{SpaceSaving(capacity_), 0, 0,
           std::vector<uint64_t>(static_cast<size_t>(partitions > 0 ? partitions : 0), 0),
           sample_rate_};
  // Adaptive: the next window's rate, from this window's records so far. Every shard switches
  // to it as it is drained below, so each shard's window was sampled at one rate throughout.
  const double window_rate = adaptive_ ? rate_.load(std::memory_order_relaxed) : sample_rate_;
  double next_rate = window_rate;
  if (adaptive_) {
    uint64_t seen = 0;
    for (uint32_t i = 0; i < kShards; ++i) {
      std::lock_guard lock(shards_[i].mu);
      seen += shards_[i].total;
    }
    // A window longer than the next one scales down; a shorter one (an early surge report,
    // a burst) is not scaled up: its records are a floor for the next window's, so a burst
    // extrapolated over a long interval cannot starve the next window of samples.
    double expected = static_cast<double>(seen);
    if (window_ms > next_window_ms && next_window_ms > 0) {
      expected *= static_cast<double>(next_window_ms) / window_ms;
    }
    next_rate = expected > static_cast<double>(target_samples_)
                    ? std::max(kAdaptiveMinRate, static_cast<double>(target_samples_) / expected)
                    : 1.0;
    rate_.store(next_rate, std::memory_order_relaxed);
  }
  std::vector<SpaceSaving> parts;
  for (uint32_t i = 0; i < kShards; ++i) {
    Shard& s = shards_[i];
    std::lock_guard lock(s.mu);
    if (adaptive_ && s.rate != next_rate) set_shard_rate(s, next_rate);
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
  if (adaptive_) {
    // The realized fraction: scaling by total / sketch_total is unbiased (each record was
    // sampled with one probability), keeps the scaled sketch total equal to the total, and
    // never scales a key past the total.
    w.sample_rate = w.sketch_total > 0 && w.total > 0
                        ? static_cast<double>(w.sketch_total) / static_cast<double>(w.total)
                        : window_rate;
    w.sample_rate = std::clamp(w.sample_rate, kMinSampleRate, 1.0);
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
