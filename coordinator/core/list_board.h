// Where published hot-key lists live for readers: the latest immutable list per topic (with
// its JSON pre-rendered once) and the readers parked on it: per-topic long-polls
// (wait_newer) and subscriptions over several topics (wait_any). The publication side of the
// coordinator; an HTTP long-poll is one reader, a Kafka compacted-topic publisher another.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

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

  enum class WaitStatus { kNewer, kTimeout, kClosed, kTooManyWaiters, kCancelled, kNudged };
  struct WaitResult {
    WaitStatus status;
    std::shared_ptr<const PublishedList> list;
  };
  // Returns at once when the topic's version > since; else waits until it is, `timeout`
  // passes, or close() is called.
  WaitResult wait_newer(const std::string& topic, uint64_t since,
                        std::chrono::milliseconds timeout);

  // One topic of a subscription: the version the reader holds.
  struct Want {
    std::string topic;
    uint64_t since = 0;
  };
  // A parked subscription; the caller owns it for the length of wait_any and may cancel() it
  // from another thread meanwhile (the reader went away).
  class Parking {
   public:
    Parking() = default;
    Parking(const Parking&) = delete;
    Parking& operator=(const Parking&) = delete;

   private:
    friend class ListBoard;
    std::condition_variable cv;
    bool fired = false;      // a held topic published; guarded by the board's mutex
    bool cancelled = false;  // guarded by the board's mutex
    bool nudged = false;     // guarded by the board's mutex
  };
  struct AnyResult {
    WaitStatus status;
    // kNewer: every wanted topic whose version is above its `since`, in the order of `wants`.
    std::vector<std::shared_ptr<const PublishedList>> lists;
  };
  // Returns at once when any wanted topic's version is above its `since` (with all such);
  // else parks one waiter (whatever the number of topics) that only a publication of one of
  // these topics, `timeout`, cancel(parking) or close() wakes.
  AnyResult wait_any(const std::vector<Want>& wants, std::chrono::milliseconds timeout,
                     Parking& parking);
  // Wakes the wait_any parked with `parking` (kCancelled unless something newer came).
  void cancel(Parking& parking);
  // Wakes every wait_any holding a topic for which `which(topic)` is true, without a newer list
  // (kNudged unless something newer came): the topic's state changed in a way the answer shows
  // besides its lists (its owner went away or came back).
  void nudge(const std::function<bool(std::string_view topic)>& which);

  // Releases every waiter (shutdown); later waits return kClosed at once.
  void close();
  uint32_t waiters() const { return waiters_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::shared_ptr<const PublishedList> list;
    std::condition_variable cv;                  // wait_newer's waiters
    std::unordered_set<Parking*> subscriptions;  // wait_any's parked on this topic
    uint32_t waiters = 0;  // both kinds; a slot is erased only when nobody waits on it
  };
  Slot& slot_locked(const std::string& topic);
  // Wakes everybody parked on `slot` (a newer list or close).
  static void wake_locked(Slot& slot);
  std::vector<std::shared_ptr<const PublishedList>> newer_locked(
      const std::vector<Want>& wants) const;
  static constexpr size_t kMaxSlots = 1u << 17;

  const uint32_t max_waiters_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Slot>, std::less<>> slots_;
  bool closed_ = false;
  std::atomic<uint32_t> waiters_{0};
};

}  // namespace hotkey::coordinator
