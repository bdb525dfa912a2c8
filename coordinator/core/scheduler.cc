// The scheduler: regular ticks, report-triggered plans, pin expiry, and the background
// thread that runs them.
#include "coordinator_topic.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <set>
#include "hotkey/key_codec.h"

namespace hotkey::coordinator {

void Coordinator::tick() {
  const std::vector<std::shared_ptr<Topic>> all = topics_->all();
  const int64_t now = clock_.now_ms();
  for (const auto& t : all) {
    if (!owns(t->name)) continue;
    if (expire_if_idle(t, now)) continue;
    // One topic's failure (a plan that throws) is logged, counted and skipped: the topic
    // keeps its published list, and the other topics are planned as usual.
    try {
      tick_topic(*t, now);
    } catch (const std::exception& e) {
      plan_failed(t->name, e.what());
    }
  }
  metrics_.set_store_healthy(store_.healthy());
  metrics_.set_waiters(board_.waiters());
}

void Coordinator::tick_topic(Topic& topic, int64_t now) {
  Topic* t = &topic;
  TopicLock lock(*t);
  if (t->removed.load()) return;
  int32_t live_partitions = 0;
  uint64_t oldest = std::numeric_limits<uint64_t>::max(), newest = 0;
  for (auto it = t->producers.begin(); it != t->producers.end();) {
    if (now - it->second.last_seen_ms > config_.producer_timeout_ms) {
      it = t->producers.erase(it);
    } else {
      live_partitions = std::max(live_partitions, it->second.partitions);
      // A report routed with a producer's local table names the list it was built on.
      const uint64_t v = it->second.last_list_version & ~kLocalTableVersionBit;
      oldest = std::min(oldest, v);
      newest = std::max(newest, v);
      ++it;
    }
  }
  // Partition counts only shrink when no live producer still sees the larger count.
  if (live_partitions > 0 && live_partitions != t->partitions) {
    resize_partitions(lock, live_partitions, false);
  }
  t->m->producers(t->producers.size(), t->producers.empty() ? 0 : oldest, newest);
  StoreBatch batch;
  std::map<std::string, Pin> pins = t->pins;
  bool expired = false;
  for (auto it = pins.begin(); it != pins.end();) {
    if (it->second.expires_at_ms > 0 && it->second.expires_at_ms <= now) {
      batch.delete_pin(t->name, it->first);
      AuditEntry a;
      a.at_ms = now;
      a.who = "system";
      a.action = "pin_expired";
      a.topic = t->name;
      a.key = it->first;
      a.detail = json{{"reason", it->second.reason}, {"by", it->second.by}}.dump(
          -1, ' ', false, json::error_handler_t::replace);
      batch.append_audit(std::move(a));
      it = pins.erase(it);
      expired = true;
    } else {
      ++it;
    }
  }
  Replan r{
      std::move(batch),   expired ? "pin_expired" : "detection", expired ? &pins : nullptr, nullptr,
      std::nullopt,
      /*triggered=*/false};
  StoreStatus st = replan(lock, std::move(r)).status;
  if (!st.ok) log_store_error(t->name, st);
}

int64_t Coordinator::plan_triggered() {
  std::vector<std::shared_ptr<Topic>> wanted;
  {
    std::lock_guard lock(bg_mu_);
    wanted.swap(wanted_);
  }
  // A quarter of the tick: a surge's first plans follow its reports closely, while a topic
  // whose reports keep showing locally hot keys costs at most a few plans per tick.
  const int64_t min_gap = std::max<int64_t>(config_.plan_interval_ms / 4, 1);
  const int64_t now = clock_.now_ms();
  int64_t next = -1;
  std::vector<std::shared_ptr<Topic>> later;
  for (const auto& t : wanted) {
    if (!owns(t->name)) continue;
    TopicLock lock(*t);
    if (t->removed.load() || !t->replan_wanted) continue;  // dropped, or a tick planned it
    // Only triggered plans count against the gap: a regular tick just before a surge's first
    // reports must not hold its plan back by another quarter tick.
    int64_t wait = now >= t->triggered_hold_ms ? 0 : t->triggered_hold_ms - now;
    if (wait > 0 && t->surge_evidence()) {
      wait = now >= t->triggered_floor_ms ? 0 : t->triggered_floor_ms - now;
    }
    if (wait > 0) {
      later.push_back(t);
      next = next < 0 ? wait : std::min(next, wait);
      continue;
    }
    // A plan that publishes holds the next one back by min_gap; one that published nothing
    // by a quarter of it: a producer's first early report is one producer's view, diluted by
    // the round before the surge, and the plan it triggers often lists nothing; the rest of
    // the fleet's early reports and the follow-ups must not wait for the rest of the gap.
    // Either hold ends early (after min_gap / 16) once a quarter of the producers' reports
    // showed an unlisted key far above the threshold since this plan (ingest counts them):
    // a fleet-wide surge's early reports arrive within tens of ms of each other.
    t->triggered_hold_ms = now + min_gap;
    t->triggered_floor_ms = now + std::max<int64_t>(min_gap / 16, 1);
    try {
      const uint64_t before = t->published ? t->published->list.version : 0;
      ReplanResult res = replan(
          lock, Replan{StoreBatch{}, "surge", nullptr, nullptr, std::nullopt, /*triggered=*/true});
      if (!res.status.ok) log_store_error(t->name, res.status);
      if (res.status.ok && res.version == before) {
        t->triggered_hold_ms = now + std::max<int64_t>(min_gap / 4, 1);
      }
    } catch (const std::exception& e) {
      plan_failed(t->name, e.what());
    }
  }
  if (!later.empty()) {
    std::lock_guard lock(bg_mu_);
    wanted_.insert(wanted_.end(), later.begin(), later.end());
  }
  return next;
}

void Coordinator::start_background() {
  std::lock_guard lock(bg_mu_);
  if (bg_.joinable()) return;
  bg_stop_ = false;
  bg_ = std::thread([this] {
    using Steady = std::chrono::steady_clock;
    const auto interval = std::chrono::milliseconds(config_.plan_interval_ms);
    Steady::time_point next_tick = Steady::now() + interval;
    Steady::time_point retry = Steady::time_point::max();
    std::unique_lock lk(bg_mu_);
    while (!bg_stop_) {
      const Steady::time_point until = std::min(retry, next_tick);
      bg_cv_.wait_until(lk, until, [this] { return bg_stop_ || bg_wake_; });
      if (bg_stop_) break;
      bg_wake_ = false;
      lk.unlock();
      // tick() and plan_triggered() contain each topic's failure; this is the last line: an
      // exception escaping this thread would terminate the process.
      int64_t wait = -1;
      try {
        if (Steady::now() >= next_tick) {
          next_tick = Steady::now() + interval;
          tick();
        }
        wait = plan_triggered();
      } catch (const std::exception& e) {
        plan_failed("", e.what());
      } catch (...) {
        plan_failed("", "unknown exception");
      }
      retry =
          wait < 0 ? Steady::time_point::max() : Steady::now() + std::chrono::milliseconds(wait);
      lk.lock();
    }
  });
}

void Coordinator::stop_background() {
  {
    std::lock_guard lock(bg_mu_);
    bg_stop_ = true;
  }
  bg_cv_.notify_all();
  if (bg_.joinable()) bg_.join();
}

}  // namespace hotkey::coordinator
