#include "list_board.h"

#include <utility>

namespace hotkey::coordinator {

ListBoard::Slot* ListBoard::slot_locked(const std::string& topic) {
  auto it = slots_.find(topic);
  if (it == slots_.end()) {
    auto slot = std::make_unique<Slot>();
    slot->topic = topic;
    it = slots_.emplace(topic, std::move(slot)).first;
  }
  return it->second.get();
}

void ListBoard::unpark_locked(Reader& reader, std::vector<std::shared_ptr<Reader>>& woken) {
  for (const Hold& h : reader.holds) {
    Slot& slot = *h.slot;
    // Swap-remove the entry; the entry moved into its place learns its new index.
    if (h.index + 1 != slot.entries.size()) {
      slot.entries[h.index] = slot.entries.back();
      const Entry& moved = slot.entries[h.index];
      moved.reader->holds[moved.hold].index = h.index;
    }
    slot.entries.pop_back();
  }
  // Erased after every hold is gone: the holds point into these slots.
  for (const Hold& h : reader.holds) {
    if (!h.slot->list && h.slot->entries.empty()) slots_.erase(slots_.find(h.slot->topic));
  }
  reader.holds.clear();
  reader.parked = false;
  auto it = parked_.find(&reader);
  woken.push_back(std::move(it->second));
  parked_.erase(it);
  waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void ListBoard::take_newer_locked(Slot& slot, std::vector<std::shared_ptr<Reader>>& woken) {
  const uint64_t version = slot.list->list.version;
  // Readers ahead of the list (a reader that outlived a coordinator restarted without its
  // store) keep waiting.
  for (size_t i = 0; i < slot.entries.size();) {
    if (slot.entries[i].since < version) {
      unpark_locked(*slot.entries[i].reader, woken);  // moves another entry into i
    } else {
      ++i;
    }
  }
}

void ListBoard::wake_all(const std::vector<std::shared_ptr<Reader>>& woken,
                         const AnyResult& result) {
  for (const auto& r : woken) r->wake(result);
}

void ListBoard::publish(std::shared_ptr<const PublishedList> list) {
  std::vector<std::shared_ptr<Reader>> woken;
  AnyResult result{WaitStatus::kNewer, {list}};
  {
    std::lock_guard lock(mu_);
    Slot& slot = *slot_locked(list->list.topic);
    slot.list = std::move(list);
    take_newer_locked(slot, woken);
  }
  wake_all(woken, result);
}

bool ListBoard::publish_if_newer(std::shared_ptr<const PublishedList> list) {
  std::vector<std::shared_ptr<Reader>> woken;
  AnyResult result{WaitStatus::kNewer, {list}};
  {
    std::lock_guard lock(mu_);
    Slot& slot = *slot_locked(list->list.topic);
    if (slot.list && slot.list->list.version >= list->list.version) return false;
    slot.list = std::move(list);
    take_newer_locked(slot, woken);
  }
  wake_all(woken, result);
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
  if (it->second->entries.empty()) {
    slots_.erase(it);
  } else {
    it->second->list = nullptr;
  }
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

ListBoard::Parked ListBoard::park(const std::vector<Want>& wants, bool wait, Wake wake) {
  std::lock_guard lock(mu_);
  if (auto lists = newer_locked(wants); !lists.empty()) {
    return {{WaitStatus::kNewer, std::move(lists)}, nullptr};
  }
  if (closed_) return {{WaitStatus::kClosed, {}}, nullptr};
  if (!wait) return {{WaitStatus::kTimeout, {}}, nullptr};
  if (waiters_.load(std::memory_order_relaxed) >= max_waiters_) {
    return {{WaitStatus::kTooManyWaiters, {}}, nullptr};
  }
  auto reader = std::make_shared<Reader>();
  reader->wake = std::move(wake);
  reader->holds.reserve(wants.size());
  for (const Want& w : wants) {
    // Waiting on topics nobody published must not let clients grow the slot map without
    // bound: beyond kMaxSlots a new name gets no slot (it has no list either), and the reader
    // waits for its other topics.
    if (!slots_.contains(w.topic) && slots_.size() >= kMaxSlots) continue;
    Slot* slot = slot_locked(w.topic);
    bool twice = false;
    for (const Hold& h : reader->holds) twice = twice || h.slot == slot;
    if (twice) continue;
    slot->entries.push_back(
        Entry{reader.get(), w.since, static_cast<uint32_t>(reader->holds.size())});
    reader->holds.push_back(Hold{slot, static_cast<uint32_t>(slot->entries.size() - 1)});
  }
  parked_.emplace(reader.get(), reader);
  waiters_.fetch_add(1, std::memory_order_relaxed);
  return {{WaitStatus::kTimeout, {}}, std::move(reader)};
}

bool ListBoard::cancel(const std::shared_ptr<Reader>& reader, WaitStatus why) {
  if (!reader) return false;
  std::vector<std::shared_ptr<Reader>> woken;
  {
    std::lock_guard lock(mu_);
    if (!reader->parked) return false;
    unpark_locked(*reader, woken);
  }
  wake_all(woken, AnyResult{why, {}});
  return true;
}

ListBoard::AnyResult ListBoard::wait_any(const std::vector<Want>& wants,
                                         std::chrono::milliseconds timeout, Parking& parking) {
  {
    std::lock_guard lock(parking.mu);
    if (parking.cancelled) {
      // As before a park: something newer still wins.
      std::lock_guard board(mu_);
      if (auto lists = newer_locked(wants); !lists.empty()) {
        return {WaitStatus::kNewer, std::move(lists)};
      }
      return {closed_ ? WaitStatus::kClosed : WaitStatus::kCancelled, {}};
    }
    parking.done = false;
  }
  Parked p = park(wants, timeout.count() > 0, [&parking](const AnyResult& r) {
    std::lock_guard lock(parking.mu);
    parking.result = r;
    parking.done = true;
    // Under the lock: the waiting thread may return (and end `parking`) as soon as it sees done.
    parking.cv.notify_one();
  });
  if (!p.reader) return std::move(p.now);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(parking.mu);
  parking.reader = p.reader;
  if (parking.cancelled) {
    lock.unlock();
    cancel(p.reader, WaitStatus::kCancelled);
    lock.lock();
  }
  if (!parking.cv.wait_until(lock, deadline, [&] { return parking.done; })) {
    lock.unlock();
    cancel(p.reader, WaitStatus::kTimeout);  // or it was woken meanwhile: its wake sets done
    lock.lock();
    parking.cv.wait(lock, [&] { return parking.done; });
  }
  parking.reader = nullptr;
  return std::move(parking.result);
}

void ListBoard::cancel(Parking& parking) {
  std::shared_ptr<Reader> reader;
  {
    std::lock_guard lock(parking.mu);
    parking.cancelled = true;
    reader = parking.reader;
  }
  cancel(reader, WaitStatus::kCancelled);
}

ListBoard::WaitResult ListBoard::wait_newer(const std::string& topic, uint64_t since,
                                            std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(mu_);
    // A topic nobody published, with the slot map full: nothing to wait for.
    if (!slots_.contains(topic) && slots_.size() >= kMaxSlots) {
      return {WaitStatus::kTimeout, nullptr};
    }
  }
  Parking parking;
  AnyResult r = wait_any({Want{topic, since}}, timeout, parking);
  if (r.status == WaitStatus::kNewer) return {r.status, r.lists.front()};
  return {r.status, get(topic)};
}

void ListBoard::nudge(const std::function<bool(std::string_view topic)>& which) {
  std::vector<std::shared_ptr<Reader>> woken;
  {
    std::lock_guard lock(mu_);
    std::vector<Reader*> readers;
    for (const auto& [topic, slot] : slots_) {
      if (slot->entries.empty() || !which(topic)) continue;
      for (const Entry& e : slot->entries) readers.push_back(e.reader);
    }
    // A reader holding several such topics is listed once per topic: unparked once.
    for (Reader* r : readers) {
      if (r->parked) unpark_locked(*r, woken);
    }
  }
  wake_all(woken, AnyResult{WaitStatus::kNudged, {}});
}

void ListBoard::close() {
  std::vector<std::shared_ptr<Reader>> woken;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    while (!parked_.empty()) unpark_locked(*parked_.begin()->first, woken);
  }
  wake_all(woken, AnyResult{WaitStatus::kClosed, {}});
}

}  // namespace hotkey::coordinator
