// Whether each topic's list is stale (docs/CLIENT.md, "Local tables"): the list source (the
// coordinator over HTTP, or the topic's lists partition) has been out of contact for longer
// than hotkey.list.stale.ms, or the source says the topic's owner is gone. Written by the
// source's thread (the list subscriber or the kafka transport), read by the reporter, which
// plans local tables for stale topics, and by stats(). Lock-free; one slot per TopicId.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "hotkey/client/router.h"

namespace hotkey::client::detail {

class Staleness {
 public:
  using Clock = std::chrono::steady_clock;

  // bound_ms 0: no topic is ever stale (local tables off).
  explicit Staleness(uint32_t bound_ms) : bound_ms_(bound_ms) {}

  uint32_t bound_ms() const noexcept { return bound_ms_; }
  bool enabled() const noexcept { return bound_ms_ > 0; }

  static int64_t now_ms() noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
        .count();
  }

  // The source lost contact at `since_ms` (now_ms() clock), unless it already had: the topic is
  // stale once the bound has passed since then. contact() ends it.
  void lost(TopicId id, int64_t since_ms) noexcept {
    int64_t expected = 0;
    slots_[id].lost_since.compare_exchange_strong(expected, since_ms > 0 ? since_ms : 1);
  }
  // In contact with the source again (an answer, a record, a live fetcher).
  void contact(TopicId id) noexcept { slots_[id].lost_since.store(0); }
  // Stale by the source's own judgement, effective at once: the kafka transport's (no contact
  // with the lists partition for the bound) or the owner gone (the subscription answer's
  // `stale`, or the lists partition's ownership heartbeats stopped).
  void set_unreachable(TopicId id, bool yes) noexcept { slots_[id].unreachable.store(yes); }
  void set_owner_gone(TopicId id, bool yes) noexcept { slots_[id].owner_gone.store(yes); }
  // The source has told the topic's list state: it holds the topic's list, or it confirmed
  // that there is none (an answer naming no list for it, a lists partition read to its end).
  // Without that, nothing is known of the keys it denies: no local tables.
  void set_known(TopicId id) noexcept { slots_[id].known.store(true); }
  bool known(TopicId id) const noexcept { return slots_[id].known.load(); }

  bool owner_gone(TopicId id) const noexcept { return slots_[id].owner_gone.load(); }
  // Contact lost (since lost(), whether or not the bound has passed).
  bool out_of_contact(TopicId id) const noexcept { return slots_[id].lost_since.load() != 0; }
  bool stale(TopicId id, int64_t now) const noexcept {
    if (bound_ms_ == 0) return false;
    const Slot& s = slots_[id];
    if (s.unreachable.load() || s.owner_gone.load()) return true;
    const int64_t lost = s.lost_since.load();
    return lost != 0 && now - lost > static_cast<int64_t>(bound_ms_);
  }
  bool stale(TopicId id) const noexcept { return stale(id, now_ms()); }

 private:
  struct Slot {
    std::atomic<int64_t> lost_since{0};
    std::atomic<bool> unreachable{false};
    std::atomic<bool> owner_gone{false};
    std::atomic<bool> known{false};
  };
  const uint32_t bound_ms_;
  std::unique_ptr<Slot[]> slots_ = std::make_unique<Slot[]>(Router::kMaxTopics);
};

}  // namespace hotkey::client::detail
