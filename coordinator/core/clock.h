// The coordinator's notion of time, behind an interface so tests can drive windows, hold
// times and pin TTLs without sleeping. Implementations are safe from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace hotkey::coordinator {

// Wall-clock milliseconds since the Unix epoch. Wall clock (not steady) because pin expiry
// times are persisted and must mean the same thing after a restart.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t now_ms() const = 0;
};

// The real clock. Thread-safe.
class SystemClock final : public Clock {
 public:
  int64_t now_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that only moves when told to (tests). Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}
  int64_t now_ms() const override { return now_.load(std::memory_order_acquire); }
  void advance_ms(int64_t delta) { now_.fetch_add(delta, std::memory_order_acq_rel); }
  void set_ms(int64_t value) { now_.store(value, std::memory_order_release); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace hotkey::coordinator
