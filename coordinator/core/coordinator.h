// The coordinator core, independent of any transport: ingests producer reports, aggregates them
// per topic over a sliding window, detects hot keys, plans verified salt tables, applies
// operator pins and denies, persists everything in the Store and publishes versioned lists on
// the ListBoard. It implements the core's interfaces by audience (coordinator_api.h: ReportSink,
// OperatorApi, Reads, Ownership); the transports take those, and only the service (main.cc)
// and tests hold a Coordinator. Thread-safe: every public method may be called concurrently
// (one mutex per topic; the topic map behind a shared mutex).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "clock.h"
#include "config.h"
#include "coordinator_api.h"
#include "hotkey/api_model.h"
#include "hotkey/report.h"
#include "list_board.h"
#include "log_sink.h"
#include "metrics_sink.h"
#include "state_store.h"

namespace hotkey::coordinator {

class Topic;          // one topic's state and lock (topic.h)
class TopicState;     // a topic's state and its operations
class TopicLock;      // the only way to a topic's state
class TopicRegistry;  // the live topics and their limits

class Coordinator final : public ReportSink, public OperatorApi, public Reads, public Ownership {
 public:
  // Loads the store's state and publishes the persisted lists before returning, so a
  // restarted coordinator answers with its last lists before any report arrives.
  // Log events go to `log` (the service writes them to stderr).
  Coordinator(const CoordinatorConfig& config, StateStore& store, MetricsSink& metrics,
              const Clock& clock, LogSink& log);
  ~Coordinator() override;
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // ---- ReportSink ----
  CallResult ingest(Report report) override;
  CallResult submit_report(Report report, std::string_view wire = {}) override;

  // ---- Scheduling (the background thread; tests drive it with a ManualClock) ----
  // Detection and planning for every topic (the background thread calls this every
  // plan_interval_ms; tests call it directly with a ManualClock).
  void tick();
  // Plans the topics whose reports showed a new hot candidate since their last plan, at most
  // one plan per topic every plan_interval_ms / 4; such a plan publishes only when the listed
  // keys change. The background thread calls it as soon as such a report arrives. Returns
  // the ms until a rate-limited topic may be planned, or -1 when none is waiting.
  int64_t plan_triggered();
  void start_background();
  void stop_background();

  // ---- OperatorApi ----
  CallResult pin(const std::string& topic, const std::string& key, uint32_t salts, int64_t ttl_s,
                 const std::string& reason, const std::string& who) override;
  CallResult unpin(const std::string& topic, const std::string& key,
                   const std::string& who) override;
  CallResult deny(const std::string& topic, const std::string& key, const std::string& reason,
                  const std::string& who) override;
  CallResult allow(const std::string& topic, const std::string& key,
                   const std::string& who) override;
  // kConflict too_many_policies beyond kMaxPoliciesPerTopic.
  CallResult set_policy(const std::string& topic, const Policy& policy,
                        const std::string& who) override;
  CallResult remove_policy(const std::string& topic, const std::string& prefix,
                           const std::string& who) override;
  // Audited as delete_topic; a topic of that name returning (a report, a pin) publishes above
  // every version it had. kNotFound for an unknown topic. Cluster mode: written to the state
  // topic (operator_write) and applied by every member (apply_operator).
  CallResult delete_topic(const std::string& topic, const std::string& reason,
                          const std::string& who) override;
  std::vector<AuditEntry> audit(size_t limit) const override { return store_.audit(limit); }

  // ---- Reads ----
  std::vector<TopicSummary> topics() const override;
  std::optional<TopicSummary> topic(const std::string& name) const override;
  std::optional<std::vector<TopEntry>> top(const std::string& topic, size_t n) override;
  std::optional<std::vector<double>> partition_load(const std::string& topic) const override;
  std::optional<std::map<std::string, Pin>> pins(const std::string& topic) const override;
  // At most kMaxRejectionsPerTopic, the most recent.
  std::optional<std::vector<Rejection>> rejections(const std::string& topic) const override;
  std::optional<std::map<std::string, Deny>> denies(const std::string& topic) const override;
  std::optional<Policies> policies(const std::string& topic) const override;
  std::shared_ptr<const PublishedList> published(const std::string& topic) const override {
    return board_.get(topic);
  }
  std::shared_ptr<const PublishedList> current_list(const std::string& topic) const override;
  uint64_t list_version(const std::string& topic) const override;
  bool owns(const std::string& topic) const override { return placement_->owns(topic); }
  std::string owner_url(const std::string& topic) const override {
    return placement_->owner_url(topic);
  }
  bool owner_gone(const std::string& topic) const override { return placement_->owner_gone(topic); }
  std::optional<api::ClusterView> cluster_view() const override {
    return placement_->cluster_view();
  }
  StoreStatus probe_store(double* latency_s) override { return store_.probe(latency_s); }
  bool store_healthy() const override { return store_.healthy(); }

  // ---- Ownership ----
  void release_topics(const std::function<bool(const std::string& topic)>& which) override;
  uint64_t adopt_list(HotKeyList list) override;
  CallResult apply_operator(const OperatorOp& op,
                            const std::function<void(StoreBatch&)>& extra) override;
  bool follow_list(std::shared_ptr<const PublishedList> list) override;
  void unfollow_list(const std::string& topic, uint64_t last) override;
  void republish() override;
  uint64_t deleted_version(const std::string& topic, int64_t* at_ms = nullptr) const override;
  void nudge_readers(const std::function<bool(std::string_view topic)>& which) override {
    board_.nudge(which);
  }
  // The audit entries this member wrote for pins, unpins, denies and allows of a topic while
  // another member planned it carry version 0 (the version is the owner's to choose); the first
  // followed list showing such a change gives the entry its version. Kept in memory until
  // then, up to kMaxUnstampedAudits (256) per topic: an entry of a change superseded before any
  // list showed it, or written before a restart, keeps 0.

  // ---- Wiring (the service and tests) ----
  // Cluster mode: `placement` (which outlives the coordinator's use of it) replaces the
  // single-node LocalPlacement. Set once, before start_background() and before any other
  // thread uses the coordinator.
  void set_placement(Placement& placement) { placement_ = &placement; }
  // The lists readers wait on (HTTP long-polls and subscriptions); the core alone publishes
  // on it.
  ListBoard& board() { return board_; }
  const CoordinatorConfig& config() const { return config_; }

 private:
  // The live topic `name`, or null (unknown, or being removed).
  std::shared_ptr<Topic> find_topic(const std::string& name) const;
  // `read(state)` of the live topic `name` under its lock; nullopt when there is none.
  template <typename Read>
  auto read_topic(const std::string& name, Read&& read) const
      -> std::optional<decltype(read(std::declval<TopicState&>()))>;
  // A refused report: counted in the metrics and, when its topic exists, on the topic's view.
  CallResult rejected(const Report& r, Status status, const std::string& reason,
                      const std::string& error);
  // The live topic `name`, created when missing (its version counter seeded from the store, so
  // a topic dropped before never republishes a lower version); null when max_topics topics are
  // tracked. *created says whether this call created it. Callers lock the topic and check
  // `removed` (a topic can be dropped between the lookup and the lock), and retry when set.
  std::shared_ptr<Topic> get_or_create_topic(const std::string& name, bool* created);
  // Drops `t` again when it is still untouched (no report, pin, deny, list or partitions): a
  // call that created it and then failed leaves nothing behind (no topic slot, no metric
  // series). Takes the map's and the topic's locks itself.
  void discard_if_unused(const std::shared_ptr<Topic>& t);
  // The last steps of dropping a topic from memory: its list leaves the board, its metric
  // series and partition budget are released, and `removed` is set last, so a topic of the
  // same name created afterwards starts clean.
  void retire(TopicLock& t);
  // Drops the topic `t` holds: one store batch with the topic's records (and `audit`, if any),
  // then retire and, with the topic's lock released, the map entry. The store's status; on
  // failure nothing changed (and the lock is still held).
  // `batch` adds records to that batch; `before_retire` runs after the store write succeeded,
  // still under the topic's lock.
  StoreStatus drop_topic(const std::shared_ptr<Topic>& topic, TopicLock& t,
                         std::optional<AuditEntry> audit, StoreBatch batch = {},
                         const std::function<void()>& before_retire = nullptr);
  // Applies a delete_topic write (cluster mode): drops the topic as delete_topic does in
  // single-node mode, keeps the counter at least op.version and marks the deleted version.
  CallResult apply_delete(const OperatorOp& op, const std::function<void(StoreBatch&)>& extra);
  // Drops `t` when it had no report, pin, deny or operator change for topic_idle_ttl_ms.
  bool expire_if_idle(const std::shared_ptr<Topic>& t, int64_t now);
  // One re-plan of a topic: what changes with it and what is committed with its list
  // (coordinator_topic.h).
  struct Replan;
  struct ReplanResult {
    StoreStatus status;
    uint64_t version = 0;  // the published version after the re-plan (0: none)
  };
  // The one way a list becomes `t`'s published list (the list is stored already, the topic's
  // version set): the topic's (TopicState::published_as: kept for the reports routed with it,
  // counted), on the board, handed to the placement (cluster mode: the lists topic). Returns it.
  std::shared_ptr<const PublishedList> publish(TopicLock& t, const HotKeyList& list);
  // Re-plans `t` (TopicState::plan) and, when the list changed materially or the batch carries
  // operator writes, persists, commits (TopicState::commit) and publishes. On a store failure
  // nothing is committed (the plan's view figures are kept).
  ReplanResult replan(TopicLock& t, Replan r);
  // follow_list's part: the unstamped audit entries `list` shows get its version (stored).
  void stamp_audits(TopicLock& t, const HotKeyList& list);
  void log_store_error(const std::string& topic, const StoreStatus& st) const;
  // One topic's share of tick(); may throw (tick() catches per topic).
  void tick_topic(Topic& t, int64_t now);
  // Logs and counts a failed plan (`topic` empty: outside any one topic).
  void plan_failed(const std::string& topic, const std::string& what) const;
  // Applies one operator write to `topic`: `mutate` changes copies of its pins, denies and
  // policies and queues the store writes, or returns the refusal (then nothing changes).
  // `creates`: the write may create the topic (pin, deny, policy_add); removals (unpin, allow,
  // policy_remove) of an unknown topic are answered kNotFound without creating it. A call that
  // fails changes nothing: no store write besides `extra`, no topic slot, no metric series.
  CallResult operator_change(
      const std::string& topic, const std::string& key, const std::string& who,
      const std::string& action, const std::string& detail, bool creates,
      const std::function<std::optional<CallResult>(std::map<std::string, Pin>&,
                                                    std::map<std::string, Deny>&, Policies&,
                                                    StoreBatch&)>& mutate,
      const std::function<void(StoreBatch&)>& extra = nullptr);
  // The kConflict too_many_policies refusal when adding `prefix` would put more than
  // kMaxPoliciesPerTopic policies on `topic`; nullopt when it fits (or replaces one).
  static std::optional<CallResult> policy_limit(const std::string& topic, const Policies& policies,
                                                const std::string& prefix);
  CallResult forward_or_apply(const OperatorOp& op);
  // Applies an operator write here (single-node mode, or read from the state topic).
  CallResult apply_write(const OperatorOp& op, const std::function<void(StoreBatch&)>& extra);
  // The kConflict too_many_pins refusal when pinning `key` would put more than max_hot_keys pins on
  // `topic`; nullopt when the pin fits (or replaces one).
  std::optional<CallResult> pin_limit(const std::string& topic,
                                      const std::map<std::string, Pin>& pins,
                                      const std::string& key) const;
  void log_list_change(const HotKeyList& before, const HotKeyList& after,
                       const std::string& cause) const;

  const CoordinatorConfig config_;
  LocalPlacement local_placement_;
  Placement* placement_ = &local_placement_;
  StateStore& store_;
  MetricsSink& metrics_;
  const Clock& clock_;
  LogSink& log_;
  ListBoard board_;
  const int64_t started_ms_;

  // The live topics and their limits (coordinator_topic.h).
  std::unique_ptr<TopicRegistry> topics_;

  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  bool bg_stop_ = false;
  bool bg_wake_ = false;
  std::vector<std::shared_ptr<Topic>> wanted_;  // topics asking for a plan soon (bg_mu_)
  std::thread bg_;
};

}  // namespace hotkey::coordinator
