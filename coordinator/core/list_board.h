// Where published hot-key lists live for readers: the latest immutable list per topic (with
// its JSON pre-rendered once) and the readers parked on it: per-topic long-polls and
// subscriptions over several topics. A parked reader is an entry in the slot of each topic it
// holds, not a thread: a publication visits only its topic's slot, and each reader it wakes is
// answered through its callback (park) or its waiting thread (wait_newer, wait_any). The
// publication side of the coordinator; an HTTP long-poll is one reader, a Kafka compacted-topic
// publisher another. Thread-safe.
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
#include <unordered_map>
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
  struct AnyResult {
    WaitStatus status;
    // kNewer: every wanted topic whose version is above its `since`, in the order of `wants`
    // (a parked reader woken by a publication: that topic's list alone).
    std::vector<std::shared_ptr<const PublishedList>> lists;
  };

  // ---- Readers without a thread ----
  // A parked reader's handle (for cancel()).
  class Reader;
  // Called once with a parked reader's answer, outside the board's lock, on the thread that
  // decided it: the publishing one (kNewer), nudge()'s (kNudged), close()'s (kClosed) or
  // cancel()'s (its status). It must be quick: a publication calls one per reader it wakes.
  using Wake = std::function<void(const AnyResult&)>;
  struct Parked {
    // Set when the reader was answered at once (then `reader` is null and `wake` never runs):
    // kNewer (a wanted topic is above its since: every such list), kClosed, kTimeout (`wait`
    // false) or kTooManyWaiters (max_waiters readers are parked).
    AnyResult now;
    std::shared_ptr<Reader> reader;
  };
  // Answers at once as above, or parks one reader on every wanted topic (whatever their
  // number) until the first of: a publication of one of them above its since (kNewer with that
  // list), nudge(), close(), or cancel(). Topics beyond the board's slot bound (a flood of
  // names nobody publishes) are not held.
  Parked park(const std::vector<Want>& wants, bool wait, Wake wake);
  // Ends a parked reader with `why` (kTimeout or kCancelled) and calls its wake on this thread,
  // unless it was already woken: then false (its wake has run or is running elsewhere).
  bool cancel(const std::shared_ptr<Reader>& reader, WaitStatus why);

  // ---- Blocking subscription (a thread waits) ----
  // A parked subscription; the caller owns it for the length of wait_any and may cancel() it
  // from another thread meanwhile (the reader went away).
  class Parking {
   public:
    Parking() = default;
    Parking(const Parking&) = delete;
    Parking& operator=(const Parking&) = delete;

   private:
    friend class ListBoard;
    std::mutex mu;
    std::condition_variable cv;
    bool cancelled = false;  // guarded by mu
    bool done = false;       // guarded by mu: `result` is set
    AnyResult result{WaitStatus::kTimeout, {}};
    std::shared_ptr<Reader> reader;  // guarded by mu
  };
  // Returns at once when any wanted topic's version is above its `since` (with all such);
  // else parks one waiter (whatever the number of topics) that only a publication of one of
  // these topics, `timeout`, cancel(parking) or close() wakes.
  AnyResult wait_any(const std::vector<Want>& wants, std::chrono::milliseconds timeout,
                     Parking& parking);
  // Wakes the wait_any parked with `parking` (kCancelled unless something newer came).
  void cancel(Parking& parking);
  // Wakes every parked reader holding a topic for which `which(topic)` is true, without a newer
  // list (kNudged): the topic's state changed in a way the answer shows besides its lists (its
  // owner went away or came back).
  void nudge(const std::function<bool(std::string_view topic)>& which);

  // Releases every waiter (shutdown); later waits return kClosed at once.
  void close();
  // Readers parked now, of every kind (what max_waiters bounds).
  uint32_t waiters() const { return waiters_.load(std::memory_order_relaxed); }

 private:
  struct Slot;
  // One topic of a parked reader: its slot and its place in the slot's entries.
  struct Hold {
    Slot* slot;
    uint32_t index;
  };
  struct Entry {
    Reader* reader;
    uint64_t since;
    uint32_t hold;  // index into reader->holds
  };
  struct Slot {
    std::string topic;
    std::shared_ptr<const PublishedList> list;
    // The parked readers holding this topic; a slot is erased when it has neither a list nor
    // entries.
    std::vector<Entry> entries;
  };
  Slot* slot_locked(const std::string& topic);
  std::vector<std::shared_ptr<const PublishedList>> newer_locked(
      const std::vector<Want>& wants) const;
  // Takes `reader` off every slot it holds and off the parked set (its owner moves to `woken`);
  // slots left with neither a list nor readers are erased.
  void unpark_locked(Reader& reader, std::vector<std::shared_ptr<Reader>>& woken);
  // A publication: unparks the readers of `slot` below its version into `woken`.
  void take_newer_locked(Slot& slot, std::vector<std::shared_ptr<Reader>>& woken);
  static void wake_all(const std::vector<std::shared_ptr<Reader>>& woken, const AnyResult& result);
  static constexpr size_t kMaxSlots = 1u << 17;

  const uint32_t max_waiters_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Slot>, std::less<>> slots_;
  // Every parked reader, owned here while parked (close() reaches those that hold no slot too).
  std::unordered_map<Reader*, std::shared_ptr<Reader>> parked_;
  bool closed_ = false;
  std::atomic<uint32_t> waiters_{0};
};

// A parked reader (opaque outside the board).
class ListBoard::Reader {
 private:
  friend class ListBoard;
  Wake wake;
  std::vector<Hold> holds;  // guarded by the board's mutex
  bool parked = true;       // guarded by the board's mutex
};

}  // namespace hotkey::coordinator
