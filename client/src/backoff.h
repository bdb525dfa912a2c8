// Exponential backoff with full jitter, for the client's background threads retrying the
// coordinator (the reporter and the list subscriber's long-polls).
//
// Not thread-safe: one per thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace hotkey::client::detail {

// Waits drawn from [cur/2, cur]; cur doubles on every next() up to max_ms, reset() starts again
// from initial_ms.
class Backoff {
 public:
  Backoff(uint32_t initial_ms, uint32_t max_ms)
      : initial_(initial_ms), max_(max_ms), cur_(initial_ms), rng_(std::random_device{}()) {}
  std::chrono::milliseconds next() {
    std::uniform_int_distribution<uint32_t> d(cur_ / 2, cur_);
    std::chrono::milliseconds out(d(rng_));
    cur_ = static_cast<uint32_t>(std::min<uint64_t>(max_, uint64_t{cur_} * 2));
    return out;
  }
  void reset() { cur_ = initial_; }

 private:
  uint32_t initial_, max_, cur_;
  std::mt19937 rng_;
};

}  // namespace hotkey::client::detail
