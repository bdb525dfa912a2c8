#include "list_board.h"

namespace hotkey::coordinator {

ListBoard::Slot& ListBoard::slot_locked(const std::string& topic) {
  auto it = slots_.find(topic);
  if (it == slots_.end()) it = slots_.emplace(topic, std::make_unique<Slot>()).first;
  return *it->second;
}

void ListBoard::publish(std::shared_ptr<const PublishedList> list) {
  std::lock_guard lock(mu_);
  Slot& slot = slot_locked(list->list.topic);
  slot.list = std::move(list);
  slot.cv.notify_all();
}

bool ListBoard::publish_if_newer(std::shared_ptr<const PublishedList> list) {
  std::lock_guard lock(mu_);
  Slot& slot = slot_locked(list->list.topic);
  if (slot.list && slot.list->list.version >= list->list.version) return false;
  slot.list = std::move(list);
  slot.cv.notify_all();
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

void ListBoard::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  for (auto& [topic, slot] : slots_) slot->cv.notify_all();
}

}  // namespace hotkey::coordinator
