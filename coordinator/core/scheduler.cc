// The scheduler: regular ticks, report-triggered plans, pin expiry, and the background
// thread that runs them.
#include "coordinator_topic.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

namespace hotkey::coordinator {

void Coordinator::tick() {
  const std::vector<std::shared_ptr<Topic>> all = topics_->all();
  const int64_t now = clock_.now_ms();
  for (const auto& t : all) {
    if (!owns(t->name())) continue;
    if (expire_if_idle(t, now)) continue;
    // One topic's failure (a plan that throws) is logged, counted and skipped: the topic
    // keeps its published list, and the other topics are planned as usual.
    try {
      tick_topic(*t, now);
    } catch (const std::exception& e) {
      plan_failed(t->name(), e.what());
    }
  }
  metrics_.set_store_healthy(store_.healthy());
  metrics_.set_waiters(board_.waiters());
}

void Coordinator::tick_topic(Topic& topic, int64_t now) {
  TopicLock t(topic);
  if (t->removed()) return;
  const int32_t live_partitions = t->prune_producers(now, config_.producer_timeout_ms);
  // Partition counts only shrink when no live producer still sees the larger count.
  if (live_partitions > 0 && live_partitions != t->partitions()) {
    topics_->resize(t, live_partitions, false);
  }
  StoreBatch batch;
  std::optional<std::map<std::string, Pin>> pins = t->expire_pins(now, batch);
  Replan r{std::move(batch), pins ? "pin_expired" : "detection",
           OperatorChange{pins ? &*pins : nullptr, nullptr, nullptr}, std::nullopt,
           /*triggered=*/false};
  StoreStatus st = replan(t, std::move(r)).status;
  if (!st.ok) log_store_error(t->name(), st);
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
  for (const auto& topic : wanted) {
    if (!owns(topic->name())) continue;
    TopicLock t(*topic);
    if (t->removed() || !t->replan_wanted()) continue;  // dropped, or a tick planned it
    // Only triggered plans count against the gap: a regular tick just before a surge's first
    // reports must not hold its plan back by another quarter tick.
    if (const int64_t wait = t->triggered_wait(now); wait > 0) {
      later.push_back(topic);
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
    const int64_t floor = std::max<int64_t>(min_gap / 16, 1);
    t->hold_triggered(now, min_gap, floor);
    try {
      const uint64_t before = t->published_version();
      ReplanResult res = replan(
          t, Replan{StoreBatch{}, "surge", OperatorChange{}, std::nullopt, /*triggered=*/true});
      if (!res.status.ok) log_store_error(t->name(), res.status);
      if (res.status.ok && res.version == before) {
        t->hold_triggered(now, std::max<int64_t>(min_gap / 4, 1), floor);
      }
    } catch (const std::exception& e) {
      plan_failed(t->name(), e.what());
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
