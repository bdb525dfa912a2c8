// Where published hot-key lists live for readers: the latest immutable list per topic (with
// its JSON pre-rendered once) and the long-poll waiters parked on it. The publication side of
// the coordinator; an HTTP long-poll is one reader, a future Kafka compacted-topic publisher
// another. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "hotkey/hotkey_list.h"

namespace hotkey::coordinator {

struct PublishedList {
  HotKeyList list;
  std::string json;
};

// Receives every newly published list (e.g. a Kafka lists-topic producer).
class ListPublisher {
 public:
  virtual ~ListPublisher() = default;
  virtual void publish(std::shared_ptr<const PublishedList> list) = 0;
};

class ListBoard final : public ListPublisher {
 public:
  explicit ListBoard(uint32_t max_waiters) : max_waiters_(max_waiters) {}

  void publish(std::shared_ptr<const PublishedList> list) override;
  // Publishes only when `list` is newer than the topic's current list (cluster mode: lists
  // read from the lists topic meet the ones this member issues). True when it did.
  bool publish_if_newer(std::shared_ptr<const PublishedList> list);
  // The current list of `topic`, or null when none was published.
  std::shared_ptr<const PublishedList> get(std::string_view topic) const;
  // The topic was dropped: get() answers null again; waiters keep waiting for a version above
  // theirs (the topic's version counter outlives it, so a recreated topic publishes one).
  void unpublish(std::string_view topic);

  enum class WaitStatus { kNewer, kTimeout, kClosed, kTooManyWaiters };
  struct WaitResult {
    WaitStatus status;
    std::shared_ptr<const PublishedList> list;
  };
  // Returns at once when the topic's version > since; else waits until it is, `timeout`
  // passes, or close() is called.
  WaitResult wait_newer(const std::string& topic, uint64_t since,
                        std::chrono::milliseconds timeout);

  // Releases every waiter (shutdown); later waits return kClosed at once.
  void close();
  uint32_t waiters() const { return waiters_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::shared_ptr<const PublishedList> list;
    std::condition_variable cv;
    uint32_t waiters = 0;  // a slot is erased only when nobody waits on it
  };
  Slot& slot_locked(const std::string& topic);
  static constexpr size_t kMaxSlots = 1u << 17;

  const uint32_t max_waiters_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Slot>, std::less<>> slots_;
  bool closed_ = false;
  std::atomic<uint32_t> waiters_{0};
};

}  // namespace hotkey::coordinator
