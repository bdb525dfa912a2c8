// The coordinator's per-topic state and the helpers its implementation files share
// (coordinator.cc, ingest.cc, publication.cc, scheduler.cc, operator_calls.cc, read_models.cc,
// coordinator_log.cc). Internal to the core: nothing outside coordinator/core/ includes it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "coordinator.h"
#include "planner.h"
#include "policy_index.h"
#include "topic_window.h"

namespace hotkey::coordinator {

using json = nlohmann::json;

struct ProducerInfo {
  int64_t last_seen_ms = 0;
  uint64_t last_seq = 0;
  uint64_t last_list_version = 0;
  // The latest report's records (scaled) and its keys near or above the hot threshold.
  double last_total = 0;
  std::vector<std::pair<std::string, LatestCount>> last_keys;
  double rate = 0;
  int32_t partitions = 0;
};

// Reports whose seq is at most this far behind the producer's last one are duplicates
// (retries); anything further back is a restarted producer counting again.
constexpr uint64_t kDuplicateWindow = 1024;

// Keeps what the planner's latest-round estimate needs from `r` (ingest.cc).
void keep_latest(ProducerInfo& p, const Report& r, const TopicSettings& s, int32_t partitions);

// A refused call: `reason` is the machine-readable label, `message` the human one.
CallResult error_result(Status status, std::string reason, std::string message);
// kNotFound for an unpin, allow or policy_remove of a key (prefix) that holds no pin (deny,
// policy) in `topic`, or of a topic the coordinator does not know.
CallResult not_found(const std::string& what, const std::string& topic);

// The (producer, reason) pairs a topic keeps refused reports for; the least recent goes.
inline constexpr size_t kMaxRejectionsPerTopic = 32;

struct Coordinator::Topic {
  Topic(std::string topic_name, const CoordinatorConfig& c, std::unique_ptr<TopicMetrics> metrics)
      : name(std::move(topic_name)),
        window(c.epoch_ms, c.window_epochs, c.sketch_capacity),
        m(std::move(metrics)) {}

  const std::string name;
  TopicWindow window;
  std::unordered_map<std::string, ProducerInfo> producers;
  std::map<std::string, HotState> hot;
  std::map<std::string, Pin> pins;
  std::map<std::string, Deny> denies;
  Policies policies;
  // Over `policies` (replace them with set_policies only): what ingest asks of a key that
  // reads as a new hot candidate.
  PolicyIndex policy_index;
  void set_policies(Policies p) {
    policies = std::move(p);
    policy_index = PolicyIndex(policies);
  }
  // No pin, deny or policy: nothing of the operator's keeps the topic.
  bool no_operator_state() const { return pins.empty() && denies.empty() && policies.empty(); }
  int32_t partitions = 0;
  std::optional<HashFamily> hash;
  std::optional<std::string> separator;
  uint64_t version = 0;  // highest version ever issued
  // Highest list version a producer reported routing with. After a restore from a backup the
  // fleet can be ahead of the store: the next version published goes above it, so producers
  // switch to a list the coordinator knows and their loads count again.
  uint64_t reported_version = 0;
  std::shared_ptr<const PublishedList> published;
  // The lists of recent versions by version: a report is accounted against the tables it
  // was routed with (its list_version), so a new version does not reset the measured load.
  std::map<uint64_t, std::shared_ptr<const PublishedList>> recent_lists;
  int64_t first_report_ms = -1;
  // The last accepted report or operator change (or the topic's creation or load): a topic
  // idle for topic_idle_ttl_ms without pins and denies expires.
  int64_t last_active_ms = 0;
  TopicSummary stats;
  std::vector<double> partition_load;  // the last plan's window, records per partition
  // Refused reports of an existing topic by (producer, reason), for its view (note_rejection).
  std::map<std::pair<std::string, std::string>, Rejection> rejections;
  // Counts a refused report: by producer and reason, with the time and the refusal's
  // message; beyond kMaxRejectionsPerTopic pairs the least recent goes (ingest.cc).
  void note_rejection(const std::string& producer, const std::string& reason,
                      const std::string& error, int64_t now_ms);
  // A report showed a key far above the hot threshold that is not listed: plan before the
  // next tick (at most every min_replan_ms).
  bool replan_wanted = false;
  int64_t last_plan_ms = -1;
  // No plan a report triggers runs before triggered_hold_ms (plan_triggered) ...
  int64_t triggered_hold_ms = std::numeric_limits<int64_t>::min();
  // ... unless, after triggered_floor_ms, a quarter of the producers (at least two) sent
  // reports showing an unlisted key far above the threshold since the last plan
  // (surge_reports): the fleet's evidence, not the clock, decides when a surge's next plan
  // runs, and a topic whose reports show nothing new costs no plan.
  int64_t triggered_floor_ms = std::numeric_limits<int64_t>::min();
  uint32_t surge_reports = 0;
  bool surge_evidence() const {
    return surge_reports >= std::max<size_t>(2, (producers.size() + 3) / 4);
  }
  // Cluster mode, on a member that does not plan the topic: audit entries (seq assigned) of
  // listed operator changes still at version 0, oldest first (Coordinator::follow_list).
  std::vector<AuditEntry> unstamped_audits;
  std::atomic<size_t> unstamped{0};  // its size, read without the lock
  std::unique_ptr<TopicMetrics> m;   // reset when the topic is dropped (Coordinator::retire)
  // Set (under the lock, last of Coordinator::retire) when the topic is dropped from memory;
  // lookups skip it and holders of a reference retry with a fresh lookup.
  std::atomic<bool> removed{false};

 private:
  friend class Coordinator::TopicLock;
  std::mutex mu;  // taken only through a TopicLock
};

// A topic held under its lock. The Coordinator's functions that read or change a topic's state
// take one, so the type, not a comment, says the lock is held. Like std::unique_lock: movable,
// default-constructible empty, unlock() and lock() again.
class Coordinator::TopicLock {
 public:
  TopicLock() = default;
  explicit TopicLock(Topic& t) : t_(&t), lock_(t.mu) {}
  TopicLock(Topic& t, std::try_to_lock_t) : t_(&t), lock_(t.mu, std::try_to_lock) {}
  TopicLock(Topic& t, std::defer_lock_t) : t_(&t), lock_(t.mu, std::defer_lock) {}
  Topic* operator->() const { return t_; }
  Topic& operator*() const { return *t_; }
  bool owns_lock() const { return lock_.owns_lock(); }
  void lock() { lock_.lock(); }
  bool try_lock() { return lock_.try_lock(); }
  void unlock() { lock_.unlock(); }

 private:
  Topic* t_ = nullptr;
  std::unique_lock<std::mutex> lock_;
};

// The live topics by name and the limits on them (max_topics, max_tracked_partitions). Topics
// are shared: lookups hand out references that stay valid while a topic is dropped (idle
// expiry, DELETE, a failed call's rollback); `Topic::removed` tells the holder, who looks up
// again. Thread-safe: the map behind a shared mutex, each topic's state under its TopicLock
// (topic_registry.cc).
class Coordinator::TopicRegistry {
 public:
  TopicRegistry(size_t max_topics, uint64_t max_tracked_partitions)
      : max_topics_(max_topics), max_tracked_partitions_(max_tracked_partitions) {}

  // A topic loaded from the store at start (its partitions count against the budget).
  void add(std::shared_ptr<Topic> t);
  // The live topic `name`, or null (unknown, or being removed).
  std::shared_ptr<Topic> find(const std::string& name) const;
  // The live topic `name`, made by `make` when missing; null when max_topics topics are
  // tracked. *created says whether this call made it. Callers lock the topic and check
  // `removed` (a topic can be dropped between the lookup and the lock), and retry when set.
  std::shared_ptr<Topic> get_or_create(const std::string& name,
                                       const std::function<std::shared_ptr<Topic>()>& make,
                                       bool* created);
  // Every topic now (some may be dropped by the time they are locked).
  std::vector<std::shared_ptr<Topic>> all() const;
  // Sets t->partitions and keeps the tracked sum over topics. With `enforce`, a growth beyond
  // max_tracked_partitions is refused: false, nothing changed.
  bool resize(TopicLock& t, int32_t partitions, bool enforce);
  uint64_t tracked_partitions() const { return tracked_partitions_.load(); }
  // Forgets `t` when it is still the topic under its name (it was retired).
  void erase(const std::shared_ptr<Topic>& t);
  // Under the map's exclusive lock and `t`'s: when `t` is still the topic under its name and
  // `drop(lock)` says so (it retired it), forgets it. Nothing can look it up meanwhile.
  void erase_if(const std::shared_ptr<Topic>& t, const std::function<bool(TopicLock&)>& drop);

 private:
  const size_t max_topics_;
  const uint64_t max_tracked_partitions_;
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<Topic>, std::less<>> topics_;
  std::atomic<uint64_t> tracked_partitions_{0};  // sum of Topic::partitions
};

// Reported list versions at or above this are not adopted as a floor (a producer cannot push
// a topic's versions to the end of the uint64 range; cluster versions are epoch << 32 | seq).
inline constexpr uint64_t kMaxAdoptedVersion = uint64_t{1} << 62;

// Lists kept for accounting reports routed with them: far more versions than a window sees
// at the usual churn (a few a minute), so only reports of a long-gone list lose their load.
inline constexpr size_t kRecentLists = 16;

inline void remember_list(std::map<uint64_t, std::shared_ptr<const PublishedList>>& lists,
                          const std::shared_ptr<const PublishedList>& list) {
  lists[list->list.version] = list;
  while (lists.size() > kRecentLists) lists.erase(lists.begin());
}

// Version 0: the producer routes with no list (every key to its home partition).
inline const HotKeyList kNoList{};

}  // namespace hotkey::coordinator
