// Polling for a condition that has no event to wait on, with a generous deadline: tests run on
// loaded 2-core machines, so a deadline is a bound on a hang, never a speed assertion.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace hotkey::test_support {

inline constexpr std::chrono::milliseconds kEventuallyDeadline{60000};
inline constexpr std::chrono::milliseconds kEventuallyStep{5};

// Calls `pred` every `step` until it returns true (then true) or `deadline` has passed (then
// false, after one last call). Thread-safe as far as `pred` is.
inline bool eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds deadline = kEventuallyDeadline,
                       std::chrono::milliseconds step = kEventuallyStep) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(step);
  }
  return pred();
}

}  // namespace hotkey::test_support
