// One topic of the coordinator: its state, its lock and the operations on it (topic.cc).
// Internal to the core: nothing outside coordinator/core/ includes it.
//
// A `Topic` is a shell: its name, two flags readable without the lock (removed, unstamped) and
// its mutex. Its state (`TopicState`) is reachable only through a `TopicLock`, so holding the
// state means holding the lock: the type says so, not a comment. Each operation changes the
// state only; what must be stored, published or counted elsewhere it returns to the caller
// (the Coordinator), which keeps one path to the store, one to the board and placement.
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

#include "config.h"
#include "coordinator_api.h"
#include "hotkey/api_model.h"
#include "hotkey/report.h"
#include "metrics_sink.h"
#include "planner.h"
#include "policy_index.h"
#include "state_store.h"
#include "topic_window.h"

namespace hotkey::coordinator {

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

// Keeps what the planner's latest-round estimate needs from `r` (topic.cc).
void keep_latest(ProducerInfo& p, const Report& r, const TopicSettings& s, int32_t partitions);

// The (producer, reason) pairs a topic keeps refused reports for; the least recent goes.
inline constexpr size_t kMaxRejectionsPerTopic = 32;

// Reported list versions at or above this are not adopted as a floor (a producer cannot push
// a topic's versions to the end of the uint64 range; cluster versions are epoch << 32 | seq).
inline constexpr uint64_t kMaxAdoptedVersion = uint64_t{1} << 62;

// Lists kept for accounting reports routed with them: far more versions than a window sees
// at the usual churn (a few a minute), so only reports of a long-gone list lose their load.
inline constexpr size_t kRecentLists = 16;

// The audit entries a member wrote for pins, unpins, denies and allows of a topic another
// member plans wait for the owner's list showing the change (their version); at most this many
// per topic (Coordinator::kMaxUnstampedAudits).
inline constexpr size_t kMaxUnstampedAudits = 256;

// How long after a topic's first report keys may enter on the fast path (warm-up). The fast
// path only lists a key at twice the hot threshold of the latest reports with
// kFastEntryMinRecords records behind it (unambiguous even before every producer reported), so
// a key hot from a topic's first second is salted within a report round. Waiting an epoch here
// cost every cold start about a second (#16).
inline constexpr int64_t kFastDetectAfterMs = 0;

// Version 0: the producer routes with no list (every key to its home partition).
inline const HotKeyList kNoList{};

// What one report did to its topic (TopicState::ingest).
struct Ingested {
  bool duplicate = false;  // a retry of a report already counted: nothing changed
  bool wake = false;       // the scheduler has a plan to consider ...
  bool enqueue = false;    // ... of a topic not yet on its list
};

// An operator's change to a topic (null: unchanged): its pins, denies and policies after the
// change. A plan uses them; they become the topic's only with the plan's commit, once stored.
struct OperatorChange {
  const std::map<std::string, Pin>* pins = nullptr;
  const std::map<std::string, Deny>* denies = nullptr;
  const Policies* policies = nullptr;
};

// What a plan is asked to do (TopicState::plan).
struct PlanRequest {
  const TopicSettings* settings = nullptr;
  int64_t now_ms = 0;
  int64_t epoch_ms = 0;   // CoordinatorConfig::epoch_ms
  int64_t warmup_ms = 0;  // CoordinatorConfig::warmup_ms
  // This member plans the topic (always in single-node mode); otherwise only the operator's
  // change is recorded and nothing is planned.
  bool owner = true;
  bool triggered = false;  // a report-triggered plan: publishes only when the listed keys change
  bool log_surge = false;  // CoordinatorConfig::log_surge_plans
  OperatorChange change;   // none: the topic's own pins, denies and policies
};

// A plan's outcome, not yet committed (TopicState::commit).
struct Planned {
  std::optional<PlanResult> plan;  // none: the topic was not planned here
  std::map<std::string, HotState> hot;
  bool load_ready = false;
  std::optional<nlohmann::json> surge_log;  // the surge_plan log line (PlanRequest::log_surge)
};

class Topic;
class TopicLock;
class TopicRegistry;

// One topic's state and the operations on it. Reached only through a TopicLock (its
// constructor is private to Topic), so every member function runs under the topic's lock.
class TopicState {
 public:
  TopicState(const TopicState&) = delete;
  TopicState& operator=(const TopicState&) = delete;

  const std::string& name() const { return name_; }
  bool removed() const { return removed_.load(); }

  // ---- Reads ----
  const std::map<std::string, Pin>& pins() const { return pins_; }
  const std::map<std::string, Deny>& denies() const { return denies_; }
  const Policies& policies() const { return policies_; }
  // No pin, deny or policy: nothing of the operator's keeps the topic.
  bool no_operator_state() const { return pins_.empty() && denies_.empty() && policies_.empty(); }
  int32_t partitions() const { return partitions_; }
  uint64_t version() const { return version_; }  // the highest version ever issued here
  // The highest version a producer reported routing with (a restored backup can leave the
  // fleet ahead of version()).
  uint64_t reported_version() const { return reported_version_; }
  // max(version(), reported_version()): what a delete of the topic must stay above.
  uint64_t known_version() const { return std::max(version_, reported_version_); }
  const std::shared_ptr<const PublishedList>& published() const { return published_; }
  uint64_t published_version() const { return published_ ? published_->list.version : 0; }
  int64_t last_active_ms() const { return last_active_ms_; }
  // Nothing of the operator's keeps the topic and it had no report or operator change for
  // more than `ttl_ms`: it expires (idle expiry).
  bool idle(int64_t now_ms, int64_t ttl_ms) const {
    return no_operator_state() && now_ms - last_active_ms_ > ttl_ms;
  }
  // Nothing happened to the topic since it was created: no report, pin, deny, list or
  // partitions (a call that created it and failed leaves nothing behind).
  bool untouched() const;
  // The topic's view (GET /v1/topics/{t}); `settings` are the topic's configured ones.
  TopicSummary summary(const TopicSettings& settings) const;
  std::vector<TopEntry> top(size_t n, int64_t now_ms);
  const std::vector<double>& partition_load() const { return partition_load_; }
  // At most kMaxRejectionsPerTopic, the most recent.
  std::vector<Rejection> rejections() const;

  // ---- Reports ----
  // The refusal's message when `r`'s hash family differs from the one the topic's producers
  // use (only when the configuration does not fix the topic's family).
  std::optional<std::string> hash_conflict(const Report& r, const TopicSettings& s) const;
  // Counts a refused report: by producer and reason, with the time and the refusal's message;
  // beyond kMaxRejectionsPerTopic pairs the least recent goes.
  void note_rejection(const std::string& producer, const std::string& reason,
                      const std::string& error, int64_t now_ms);
  // Merges an accepted report (the topic's partitions already grown to r.partitions by the
  // registry) into the window: dedupe by (producer, seq), the tables it was routed with, the
  // version floor the fleet shows, and whether it calls for a plan before the next tick.
  Ingested ingest(const Report& r, SpaceSaving sketch, const TopicSettings& s, int64_t now_ms);

  // ---- Planning ----
  // Detection and planning over the window (when `req.owner` and the partitions are known),
  // without committing: the topic's view and metrics are updated, its hot keys, pins and
  // list are not. Throws what the planner throws.
  Planned plan(const PlanRequest& req);
  // The version a material plan publishes: above every version issued here, every version the
  // fleet reported and `floor` (cluster mode: the lists topic's).
  uint64_t next_version(uint64_t floor) const {
    return std::max({version_, reported_version_, floor}) + 1;
  }
  // Commits a plan whose store batch was written: its hot keys (moved out of `planned`), the
  // request's pins, denies and policies, and `version` when it publishes (material: counted as a
  // list change). Returns the list the topic published before (for the list-change log).
  HotKeyList commit(Planned& planned, const PlanRequest& req, bool material, uint64_t version);
  // The list-state part of publishing `pub` (Coordinator::publish does the rest): the
  // topic's published list, kept for accounting the reports routed with it, counted.
  void published_as(const std::shared_ptr<const PublishedList>& pub);
  // Removes the producers not heard from in `timeout_ms` and counts the live ones; returns the
  // largest partition count a live producer sees (0: none).
  int32_t prune_producers(int64_t now_ms, int64_t timeout_ms);
  // Pins expired at `now_ms`: their deletes and pin_expired audit entries go to `batch`; the
  // topic's pins without them, or nullopt when none expired.
  std::optional<std::map<std::string, Pin>> expire_pins(int64_t now_ms, StoreBatch& batch) const;
  // A report asked for a plan before the next tick and none ran since.
  bool replan_wanted() const { return replan_wanted_; }
  // How long until that plan may run (0: now). Only triggered plans count against the gap;
  // the hold ends at its floor once the fleet's reports show the surge (surge_evidence).
  int64_t triggered_wait(int64_t now_ms) const;
  // A triggered plan ran at `now_ms`: the next waits `hold_ms`, or `floor_ms` with evidence.
  void hold_triggered(int64_t now_ms, int64_t hold_ms, int64_t floor_ms);

  // ---- Operators and cluster mode ----
  // An accepted report or operator change at `now_ms` (idle expiry counts from it).
  void touch(int64_t now_ms) { last_active_ms_ = now_ms; }
  // Keeps the version counter at least `v` (a delete applied from the state topic).
  void raise_version(uint64_t v) { version_ = std::max(version_, v); }
  // Cluster mode, on a member that does not plan the topic: keeps the pin, unpin, deny and
  // allow entries of `audits` (their version still 0) until a list shows the change.
  void keep_unstamped(const std::vector<AuditEntry>& audits);
  const std::vector<AuditEntry>& unstamped_audits() const { return unstamped_audits_; }
  // The kept entries `list` shows, stamped with its version; they are forgotten here and go to
  // the returned batch (restamp_audit).
  StoreBatch stamp_audits(const HotKeyList& list);
  // The store writes that drop the topic: its pins, denies, policies and list, the version
  // counter kept.
  void drop_records(StoreBatch& batch) const;
  // Forgets what this member knew of the topic as its owner (Ownership::release_topics).
  void release(const CoordinatorConfig& c);
  // Takes `list` over from a previous owner as this member's version `list.version` (the
  // partitions already set by the registry; `repartition` when they changed): its hash and
  // separator, its detected keys as hot until fresh reports show them cold, and the previous
  // owner's list kept for accounting the reports routed with it.
  void adopt(const HotKeyList& list, const std::shared_ptr<const PublishedList>& previous,
             bool repartition, int64_t now_ms);
  // The state a restart loads from the store (the partitions already set by the registry).
  // Returns the list to publish, if any.
  std::optional<HotKeyList> load(StoredTopic&& st, int64_t now_ms);

 private:
  friend class Topic;
  friend class TopicLock;
  friend class TopicRegistry;
  TopicState(std::string name, const CoordinatorConfig& c, std::unique_ptr<TopicMetrics> metrics,
             uint64_t version, int64_t now_ms);

  void set_policies(Policies p) {
    policies_ = std::move(p);
    policy_index_ = PolicyIndex(policies_);
  }
  bool surge_evidence() const {
    return surge_reports_ >= std::max<size_t>(2, (producers_.size() + 3) / 4);
  }
  // True when `r` shows an unlisted key far enough above the hot threshold to plan before the
  // next tick.
  bool shows_new_hot_key(const Report& r, const TopicSettings& s, int64_t now) const;
  // Detected keys of `list` stay listed until fresh reports show them cold (restart, adopt).
  void hold_listed(const HotKeyList& list, int64_t now_ms);

  const std::string name_;
  TopicWindow window_;
  std::unordered_map<std::string, ProducerInfo> producers_;
  std::map<std::string, HotState> hot_;
  std::map<std::string, Pin> pins_;
  std::map<std::string, Deny> denies_;
  Policies policies_;
  // Over `policies_` (replaced with set_policies only): what ingest asks of a key that reads
  // as a new hot candidate.
  PolicyIndex policy_index_;
  int32_t partitions_ = 0;  // set by the registry (TopicRegistry::resize), which budgets them
  std::optional<HashFamily> hash_;
  std::optional<std::string> separator_;
  uint64_t version_ = 0;
  uint64_t reported_version_ = 0;
  std::shared_ptr<const PublishedList> published_;
  // The lists of recent versions by version: a report is accounted against the tables it
  // was routed with (its list_version), so a new version does not reset the measured load.
  std::map<uint64_t, std::shared_ptr<const PublishedList>> recent_lists_;
  int64_t first_report_ms_ = -1;
  // The last accepted report or operator change (or the topic's creation or load): a topic
  // idle for topic_idle_ttl_ms without pins and denies expires.
  int64_t last_active_ms_ = 0;
  TopicSummary stats_;
  std::vector<double> partition_load_;  // the last plan's window, records per partition
  std::map<std::pair<std::string, std::string>, Rejection> rejections_;
  // A report showed a key far above the hot threshold that is not listed: plan before the
  // next tick (at most every min_replan_ms).
  bool replan_wanted_ = false;
  int64_t last_plan_ms_ = -1;
  // No plan a report triggers runs before triggered_hold_ms_ ...
  int64_t triggered_hold_ms_ = std::numeric_limits<int64_t>::min();
  // ... unless, after triggered_floor_ms_, a quarter of the producers (at least two) sent
  // reports showing an unlisted key far above the threshold since the last plan
  // (surge_reports_): the fleet's evidence, not the clock, decides when a surge's next plan
  // runs, and a topic whose reports show nothing new costs no plan.
  int64_t triggered_floor_ms_ = std::numeric_limits<int64_t>::min();
  uint32_t surge_reports_ = 0;
  // Cluster mode, on a member that does not plan the topic: audit entries (seq assigned) of
  // listed operator changes still at version 0, oldest first.
  std::vector<AuditEntry> unstamped_audits_;
  std::atomic<size_t> unstamped_{0};  // its size, read without the lock (Topic::unstamped)
  std::unique_ptr<TopicMetrics> m_;   // reset when the topic is dropped (TopicLock::retire)
  // Set (under the lock, last of TopicLock::retire) when the topic is dropped from memory;
  // lookups skip it and holders of a reference retry with a fresh lookup.
  std::atomic<bool> removed_{false};
};

// A topic: its name and flags (readable without the lock), its lock, and its state behind it.
class Topic {
 public:
  Topic(std::string name, const CoordinatorConfig& c, std::unique_ptr<TopicMetrics> metrics,
        uint64_t version, int64_t now_ms)
      : state_(std::move(name), c, std::move(metrics), version, now_ms) {}
  const std::string& name() const { return state_.name_; }
  // Dropped from memory: holders of a reference look the topic up again.
  bool removed() const { return state_.removed_.load(); }
  // Audit entries waiting for a list to show their change (TopicState::keep_unstamped).
  size_t unstamped() const { return state_.unstamped_.load(); }

 private:
  friend class TopicLock;
  std::mutex mu_;  // taken only through a TopicLock
  TopicState state_;
};

// A topic held under its lock, the only way to its state. Like std::unique_lock: movable,
// default-constructible empty, unlock() and lock() again.
class TopicLock {
 public:
  TopicLock() = default;
  explicit TopicLock(Topic& t) : t_(&t), lock_(t.mu_) {}
  TopicLock(Topic& t, std::try_to_lock_t) : t_(&t), lock_(t.mu_, std::try_to_lock) {}
  TopicLock(Topic& t, std::defer_lock_t) : t_(&t), lock_(t.mu_, std::defer_lock) {}
  TopicState* operator->() const { return &t_->state_; }
  TopicState& operator*() const { return t_->state_; }
  bool owns_lock() const { return lock_.owns_lock(); }
  void lock() { lock_.lock(); }
  bool try_lock() { return lock_.try_lock(); }
  void unlock() { lock_.unlock(); }
  // The last step of dropping the topic from memory: its metric series go, and `removed` is
  // set, so a topic of the same name created afterwards starts clean.
  void retire() {
    t_->state_.m_.reset();
    t_->state_.removed_.store(true);
  }

 private:
  Topic* t_ = nullptr;
  std::unique_lock<std::mutex> lock_;
};

// The live topics by name and the limits on them (max_topics, max_tracked_partitions). Topics
// are shared: lookups hand out references that stay valid while a topic is dropped (idle
// expiry, DELETE, a failed call's rollback); `Topic::removed` tells the holder, who looks up
// again. Thread-safe: the map behind a shared mutex, each topic's state under its TopicLock
// (topic_registry.cc).
class TopicRegistry {
 public:
  TopicRegistry(size_t max_topics, uint64_t max_tracked_partitions)
      : max_topics_(max_topics), max_tracked_partitions_(max_tracked_partitions) {}

  // A topic loaded from the store at start, with `partitions` (counted against the budget).
  void add(std::shared_ptr<Topic> t, int32_t partitions);
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
  // Sets the topic's partitions and keeps the tracked sum over topics. With `enforce`, a
  // growth beyond max_tracked_partitions is refused: false, nothing changed.
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
  std::atomic<uint64_t> tracked_partitions_{0};  // sum of the topics' partitions
};

}  // namespace hotkey::coordinator
