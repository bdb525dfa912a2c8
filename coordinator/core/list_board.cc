#include "list_board.h"

namespace hotkey::coordinator {

ListBoard::Slot& ListBoard::slot_locked(const std::string& topic) {
  auto it = slots_.find(topic);
  if (it == slots_.end()) it = slots_.emplace(topic, std::make_unique<Slot>()).first;
  return *it->second;
}

void ListBoard::wake_locked(Slot& slot) {
  slot.cv.notify_all();
  for (Parking* p : slot.subscriptions) {
    p->fired = true;
    p->cv.notify_one();
  }
}

void ListBoard::publish(std::shared_ptr<const PublishedList> list) {
  std::lock_guard lock(mu_);
  Slot& slot = slot_locked(list->list.topic);
  slot.list = std::move(list);
  wake_locked(slot);
}

bool ListBoard::publish_if_newer(std::shared_ptr<const PublishedList> list) {
  std::lock_guard lock(mu_);
  Slot& slot = slot_locked(list->list.topic);
  if (slot.list && slot.list->list.version >= list->list.version) return false;
  slot.list = std::move(list);
  wake_locked(slot);
  return true;
}

std::shared_ptr<const PublishedList> ListBoard::get(std::string_view topic) const {
  std::lock_guard lock(mu_);
  auto it = slots_.find(topic);
  return it == slots_.end() ? nullptr : it->second->list;
}

void ListBoard::unpublish(std::string_view topic) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(topic);
  if (it == slots_.end()) return;
  if (it->second->waiters == 0) {
    slots_.erase(it);
  } else {
    it->second->list = nullptr;
  }
}

ListBoard::WaitResult ListBoard::wait_newer(const std::string& topic, uint64_t since,
                                            std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  // Waiting on a topic nobody published must not let clients grow the slot map without bound.
  if (!slots_.contains(topic) && slots_.size() >= kMaxSlots) {
    return {WaitStatus::kTimeout, nullptr};
  }
  Slot& slot = slot_locked(topic);
  auto newer = [&] { return slot.list && slot.list->list.version > since; };
  if (newer()) return {WaitStatus::kNewer, slot.list};
  if (closed_) return {WaitStatus::kClosed, slot.list};
  if (timeout.count() <= 0) return {WaitStatus::kTimeout, slot.list};
  if (waiters_.load() >= max_waiters_) return {WaitStatus::kTooManyWaiters, slot.list};
  waiters_.fetch_add(1);
  ++slot.waiters;
  slot.cv.wait_for(lock, timeout, [&] { return newer() || closed_; });
  --slot.waiters;
  waiters_.fetch_sub(1);
  WaitResult result{newer()   ? WaitStatus::kNewer
                    : closed_ ? WaitStatus::kClosed
                              : WaitStatus::kTimeout,
                    slot.list};
  // A slot with neither a list nor waiters is only a map entry: a topic nobody publishes must
  // not keep one (waits on unknown or dropped topics).
  if (!slot.list && slot.waiters == 0) slots_.erase(topic);
  return result;
}

std::vector<std::shared_ptr<const PublishedList>> ListBoard::newer_locked(
    const std::vector<Want>& wants) const {
  std::vector<std::shared_ptr<const PublishedList>> lists;
  for (const Want& w : wants) {
    auto it = slots_.find(w.topic);
    if (it == slots_.end()) continue;
    const auto& list = it->second->list;
    if (list && list->list.version > w.since) lists.push_back(list);
  }
  return lists;
}

ListBoard::AnyResult ListBoard::wait_any(const std::vector<Want>& wants,
                                         std::chrono::milliseconds timeout, Parking& parking) {
  std::unique_lock lock(mu_);
  if (auto lists = newer_locked(wants); !lists.empty()) {
    return {WaitStatus::kNewer, std::move(lists)};
  }
  if (closed_) return {WaitStatus::kClosed, {}};
  if (parking.cancelled) return {WaitStatus::kCancelled, {}};
  if (timeout.count() <= 0) return {WaitStatus::kTimeout, {}};
  if (waiters_.load() >= max_waiters_) return {WaitStatus::kTooManyWaiters, {}};
  waiters_.fetch_add(1);
  // Parked on each wanted topic's slot, so that a publication wakes only the subscriptions
  // holding its topic. As in wait_newer, topics beyond kMaxSlots are not given a slot (they
  // have no list either): such a subscription waits for its other topics or the timeout.
  std::vector<Slot*> held;
  held.reserve(wants.size());
  for (const Want& w : wants) {
    if (!slots_.contains(w.topic) && slots_.size() >= kMaxSlots) continue;
    Slot& slot = slot_locked(w.topic);
    if (!slot.subscriptions.insert(&parking).second) continue;  // named twice
    ++slot.waiters;
    held.push_back(&slot);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  AnyResult result{WaitStatus::kTimeout, {}};
  for (;;) {
    parking.cv.wait_until(lock, deadline, [&] {
      return parking.fired || parking.nudged || parking.cancelled || closed_;
    });
    parking.fired = false;
    result.lists = newer_locked(wants);
    // A publication that is not above `since` (a reader ahead of a restarted coordinator
    // without its store) fires without anything to answer: keep waiting.
    if (!result.lists.empty()) {
      result.status = WaitStatus::kNewer;
      break;
    }
    if (parking.nudged) {
      result.status = WaitStatus::kNudged;
      break;
    }
    if (closed_ || parking.cancelled || std::chrono::steady_clock::now() >= deadline) {
      result.status = closed_             ? WaitStatus::kClosed
                      : parking.cancelled ? WaitStatus::kCancelled
                                          : WaitStatus::kTimeout;
      break;
    }
  }
  for (Slot* slot : held) {
    slot->subscriptions.erase(&parking);
    --slot->waiters;
  }
  for (const Want& w : wants) {
    auto it = slots_.find(w.topic);
    if (it != slots_.end() && !it->second->list && it->second->waiters == 0) slots_.erase(it);
  }
  waiters_.fetch_sub(1);
  return result;
}

void ListBoard::nudge(const std::function<bool(std::string_view topic)>& which) {
  std::lock_guard lock(mu_);
  for (auto& [topic, slot] : slots_) {
    if (slot->subscriptions.empty() || !which(topic)) continue;
    for (Parking* p : slot->subscriptions) {
      p->nudged = true;
      p->cv.notify_one();
    }
  }
}

void ListBoard::cancel(Parking& parking) {
  std::lock_guard lock(mu_);
  parking.cancelled = true;
  parking.cv.notify_one();
}

void ListBoard::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  for (auto& [topic, slot] : slots_) wake_locked(*slot);
}

}  // namespace hotkey::coordinator
