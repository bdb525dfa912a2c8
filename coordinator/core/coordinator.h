// The coordinator core, independent of any transport: ingests producer reports (ReportSink),
// aggregates them per topic over a sliding window, detects hot keys, plans verified salt
// tables, applies operator pins and denies, persists everything in the Store and publishes
// versioned lists on the ListBoard. Thread-safe: every public method may be called
// concurrently (one mutex per topic; the topic map behind a shared mutex).
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
#include <vector>

#include "clock.h"
#include "config.h"
#include "hotkey/api_model.h"
#include "hotkey/report.h"
#include "list_board.h"
#include "log_sink.h"
#include "metrics_sink.h"
#include "state_store.h"

namespace hotkey::coordinator {

// What became of an ingest or operator call, in the core's terms; each transport maps it onto
// its own codes in one place (HTTP: http_status in coordinator/http/responses.cc).
enum class Status {
  kOk,
  kInvalid,      // the input is malformed or violates a rule (e.g. an invalid sketch)
  kNotFound,     // no such topic, pin or deny
  kConflict,     // the input contradicts the state (hash family mismatch, too many pins)
  kLimit,        // a configured capacity is reached (topics, tracked partitions)
  kUnavailable,  // the store or the Kafka cluster cannot take the write now; retry
  kUnsupported,  // not available in this mode (e.g. topic delete in cluster mode)
  kInternal,     // a bug or an unexpected failure (e.g. a plan that failed)
};
const char* to_string(Status s);

// Whether `list` shows operator write `action` (pin, unpin, deny, allow) of `key` in force.
bool list_shows_change(const HotKeyList& list, const std::string& action, const std::string& key);

// Outcome of an ingest or operator call.
struct CallResult {
  Status status = Status::kOk;
  std::string error;     // empty on success
  std::string reason;    // machine-readable rejection reason (metrics label, JSON "reason")
  uint64_t version = 0;  // list version after an operator call (0: no list yet)
  bool duplicate = false;
  bool ok() const { return status == Status::kOk; }
};

// Where decoded reports enter; a Kafka reports-topic consumer would call the same.
class ReportSink {
 public:
  virtual ~ReportSink() = default;
  virtual CallResult ingest(Report report) = 0;
};

struct TopicSummary {
  std::string topic;
  int32_t partitions = 0;
  HashFamily hash = HashFamily::kMurmur2;
  std::string separator;
  // Where hash / separator come from: "config" (the topic's settings, authoritative),
  // "reports" (adopted from the first report or the stored list) or "default".
  const char* hash_source = "default";
  const char* separator_source = "default";
  double rate = 0;
  double skew = 1.0;
  double predicted_skew = 1.0;
  double idle_ratio = 0;
  uint32_t producers = 0;
  uint64_t version = 0;
  uint32_t hot_keys = 0;
  uint32_t balance_keys = 0;
  uint32_t pins = 0;
  uint32_t denies = 0;
  uint32_t policies = 0;
  uint64_t window_reports = 0;
  double window_total = 0;
};

// One key of the top view: the API's value (hotkey/api_model.h).
using TopEntry = api::TopEntry;
// Refused reports of one producer for one reason, in the topic view (hotkey/api_model.h).
using Rejection = api::Rejection;

// An operator write (pin, unpin, deny, allow, policy_add, policy_remove, delete_topic) as a
// value: in cluster mode it travels through the state topic and every coordinator applies it
// (apply_operator).
struct OperatorOp {
  std::string op;  // pin, unpin, deny, allow, policy_add, policy_remove, delete_topic
  std::string topic;
  std::string key;            // the prefix for policy_add / policy_remove; empty for delete_topic
  uint32_t salts = 0;         // pin; policy_add: max_salts (0: the topic's)
  int64_t ttl_s = 0;          // pin (audit detail)
  int64_t expires_at_ms = 0;  // pin; 0: never
  std::string reason;
  std::string who;
  int64_t at_ms = 0;
  // delete_topic: the highest version of the topic the writer knew (the counter kept is at
  // least this); `expired`: the owner's idle expiry, not an operator's delete.
  uint64_t version = 0;
  bool expired = false;
  // policy_add: never salt the prefix's keys, or detect them at this hot_fraction (0: the
  // topic's).
  bool never_salt = false;
  double hot_fraction = 0;
};

// Where topics live (docs/ARCHITECTURE.md, "Placement"): the one interface the core asks which
// coordinator owns a topic (plans it, publishes its lists, ingests its reports), where what it
// does not own goes, and what a publish or delete must also do. Single-node mode uses
// LocalPlacement (owns everything, forwards nothing); cluster mode KafkaCluster's
// (kafka_cluster.h). Implementations are thread-safe: the core calls them from any thread.
class Placement {
 public:
  virtual ~Placement() = default;
  // This coordinator owns `topic` now; the others are neither planned nor published here, and
  // their reports are forwarded.
  virtual bool owns(const std::string& topic) const = 0;
  // Every version issued for `topic` is above this (the owner's epoch << 32).
  virtual uint64_t version_floor(const std::string& topic) const = 0;
  // The advertised URL of another member that owns `topic` (empty: this one, or unknown); top
  // keys and loads are asked from there.
  virtual std::string owner_url(const std::string& topic) const = 0;
  // A report for a topic this coordinator does not own, handed to its owner (the reports
  // topic); `wire` is its binary encoding as received, empty when it came in another form. The
  // result is the caller's answer.
  virtual CallResult forward_report(const Report& report, std::string_view wire) = 0;
  // An operator write shared with every member (the state topic, which every member applies
  // through Coordinator::apply_operator): the caller's answer; nullopt: apply it here.
  virtual std::optional<CallResult> forward_operator(const OperatorOp& op) = 0;
  // Every newly published list, called under the topic's lock, in version order.
  virtual void on_publish(const std::shared_ptr<const PublishedList>& list) = 0;
  // A delete_topic applied here (`version`: the counter kept; `at_ms`: when it was asked for):
  // called after the store write and before the topic is dropped from memory, under its lock
  // when it was live (so nothing of a re-created topic of that name is published before it).
  virtual void on_delete(const std::string& topic, uint64_t version, int64_t at_ms) = 0;
  // The owner's idle expiry of a topic: true when taken over (written to the state topic
  // without waiting; every member drops the topic when it applies it), false: drop it here.
  virtual bool request_delete(const OperatorOp& op) = 0;
  // What GET /v1/cluster answers (nullopt: single-node mode).
  virtual std::optional<api::ClusterView> cluster_view() const = 0;
  // Nobody has been heard owning `topic` for a while (cluster mode: its partition's ownership
  // heartbeats stopped): its list is not being kept up to date, and producers salt new surges
  // locally (docs/API.md, "stale"). Never in single-node mode.
  virtual bool owner_gone(const std::string& topic) const = 0;
};

// Single-node mode: this coordinator owns every topic and applies everything itself.
class LocalPlacement : public Placement {
 public:
  bool owns(const std::string&) const override { return true; }
  uint64_t version_floor(const std::string&) const override { return 0; }
  std::string owner_url(const std::string&) const override { return ""; }
  CallResult forward_report(const Report&, std::string_view) override;
  std::optional<CallResult> forward_operator(const OperatorOp&) override { return std::nullopt; }
  void on_publish(const std::shared_ptr<const PublishedList>&) override {}
  void on_delete(const std::string&, uint64_t, int64_t) override {}
  bool request_delete(const OperatorOp&) override { return false; }
  std::optional<api::ClusterView> cluster_view() const override { return std::nullopt; }
  bool owner_gone(const std::string&) const override { return false; }
};

class Coordinator final : public ReportSink {
 public:
  // Loads the store's state and publishes the persisted lists before returning, so a
  // restarted coordinator answers with its last lists before any report arrives.
  // Log events go to `log` (the service writes them to stderr).
  Coordinator(const CoordinatorConfig& config, StateStore& store, MetricsSink& metrics,
              const Clock& clock, LogSink& log);
  ~Coordinator() override;
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // A report that reached this coordinator (its owner: the reports topic's consumer, tests).
  CallResult ingest(Report report) override;
  // A report from a transport that reaches any member (HTTP): ingested when this coordinator
  // owns its topic, else forwarded to the owner through the placement. `wire`: the report's
  // binary encoding as received (forwarded as is), empty when it came in another form.
  CallResult submit_report(Report report, std::string_view wire = {});

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

  // Operator calls; `who` is the token's name (audit log).
  CallResult pin(const std::string& topic, const std::string& key, uint32_t salts, int64_t ttl_s,
                 const std::string& reason, const std::string& who);
  CallResult unpin(const std::string& topic, const std::string& key, const std::string& who);
  CallResult deny(const std::string& topic, const std::string& key, const std::string& reason,
                  const std::string& who);
  CallResult allow(const std::string& topic, const std::string& key, const std::string& who);
  // Creates or replaces the policy of `policy.prefix` (never_salt, or hot_fraction and/or
  // max_salts; docs/API.md "Policies"); `who` and the time are set here. kConflict
  // too_many_policies beyond kMaxPoliciesPerTopic.
  CallResult set_policy(const std::string& topic, const Policy& policy, const std::string& who);
  CallResult remove_policy(const std::string& topic, const std::string& prefix,
                           const std::string& who);
  // Drops a topic from memory and store with its pins, denies and policies (audited as
  // delete_topic);
  // its version counter stays, so a topic of that name returning (a report, a pin) publishes
  // above every version it had. kNotFound for an unknown topic. Cluster mode: written to the
  // state topic (operator_write) and applied by every member (apply_operator).
  CallResult delete_topic(const std::string& topic, const std::string& reason,
                          const std::string& who);

  std::vector<TopicSummary> topics() const;
  std::optional<TopicSummary> topic(const std::string& name) const;
  std::optional<std::vector<TopEntry>> top(const std::string& topic, size_t n);
  // Records per partition over the window as of the last plan (empty before the first).
  std::optional<std::vector<double>> partition_load(const std::string& topic) const;
  std::optional<std::map<std::string, Pin>> pins(const std::string& topic) const;
  // Refused reports by producer and reason (at most kMaxRejectionsPerTopic, the most recent).
  std::optional<std::vector<Rejection>> rejections(const std::string& topic) const;
  std::optional<std::map<std::string, Deny>> denies(const std::string& topic) const;
  std::optional<Policies> policies(const std::string& topic) const;
  std::vector<AuditEntry> audit(size_t limit) const { return store_.audit(limit); }

  // Cluster mode: `placement` (which outlives the coordinator's use of it) replaces the
  // single-node LocalPlacement. Set once, before start_background() and before any other
  // thread uses the coordinator.
  void set_placement(Placement& placement) { placement_ = &placement; }
  Placement& placement() const { return *placement_; }
  // Ownership of `topic` lost (or about to be rebuilt): forgets its window, producers,
  // detection state and published list; pins, denies and the version counter stay.
  void release_topic(const std::string& topic);
  // Ownership of list.topic gained: the last list found on the lists topic becomes the
  // topic's published list again, re-issued with a version above both the topic's counter and
  // the version floor, and published. Returns that version.
  uint64_t adopt_list(HotKeyList list);
  // Applies an operator write (read from the state topic in cluster mode); `extra` adds records
  // to the same atomic store batch (the state-topic checkpoint), also when the write changes
  // nothing (an unpin of a key not pinned: kNotFound).
  CallResult apply_operator(const OperatorOp& op,
                            const std::function<void(StoreBatch&)>& extra = nullptr);
  // Cluster mode: `list` (its topic's owner's, read from the lists topic) reached this member.
  // The audit entries this member wrote for pins, unpins, denies and allows of the topic while
  // another member planned it carry version 0 (the version is the owner's to choose); the first
  // list showing such a change gives the entry its version (the version a write through this
  // member answers: StateLog::owners_version). Kept in memory until then, up to
  // kMaxUnstampedAudits per topic: an entry of a change superseded before any list showed it,
  // or written before a restart, keeps 0.
  void list_followed(const HotKeyList& list);
  static constexpr size_t kMaxUnstampedAudits = 256;
  // The highest version `topic` had when it was last deleted or expired in cluster mode (0:
  // never); a list on the lists topic at or below it belongs to the deleted topic. `at_ms`
  // receives when that delete was asked for (0: never).
  uint64_t deleted_version(const std::string& topic, int64_t* at_ms = nullptr) const;
  // The current published list of every topic that has one.
  std::vector<std::shared_ptr<const PublishedList>> published_lists() const;
  // What a producer asking for `topic` gets now: the published list, or (no list yet) an empty
  // version-0 list with the topic's known or configured partitions, hash and separator, so
  // clients route everything normally and a configured hash holds from the first answer on.
  std::shared_ptr<const PublishedList> current_list(const std::string& topic) const;
  // The version of `topic`'s published list (0: none yet).
  uint64_t list_version(const std::string& topic) const;

  // Readiness: a small synced store write (at most as often as the caller asks); `latency_s`
  // receives its duration. store_healthy: the last write or probe succeeded.
  StoreStatus probe_store(double* latency_s) { return store_.probe(latency_s); }
  bool store_healthy() const { return store_.healthy(); }
  // Shutdown: wakes every long-poll waiter (they answer with what they have) and refuses new
  // ones; called before the transports stop.
  void close_waiters() { board_.close(); }

  ListBoard& board() { return board_; }
  const CoordinatorConfig& config() const { return config_; }
  StateStore& store() { return store_; }

 private:
  struct Topic;
  // The live topic `name`, or null (unknown, or being removed).
  std::shared_ptr<Topic> find_topic(const std::string& name) const;
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
  // series). Caller holds no lock.
  void discard_if_unused(const std::shared_ptr<Topic>& t);
  // The last steps of dropping a topic from memory (caller holds topics_mu_ or t.mu as the
  // callers document): its list leaves the board, its metric series and partition budget are
  // released, and `removed` is set last, so a topic of the same name created afterwards starts
  // clean.
  void retire_locked(Topic& t);
  // Sets t.partitions (caller holds t.mu) and keeps tracked_partitions_ the sum over topics.
  // With `enforce`, a growth beyond max_tracked_partitions is refused: false, nothing changed.
  bool resize_partitions_locked(Topic& t, int32_t partitions, bool enforce);
  // Drops `t` (caller holds t->mu, through `lock`, which it releases): one store batch with the
  // topic's records (and `audit`, if any), then retire_locked and the map entry. The store's
  // status; on failure nothing changed.
  // `batch` adds records to that batch; `before_retire` runs after the store write succeeded,
  // still under the topic's lock.
  StoreStatus drop_topic_locked(const std::shared_ptr<Topic>& t, std::unique_lock<std::mutex>& lock,
                                std::optional<AuditEntry> audit, StoreBatch batch = {},
                                const std::function<void()>& before_retire = nullptr);
  // Applies a delete_topic write (cluster mode): drops the topic as delete_topic does in
  // single-node mode, keeps the counter at least op.version and marks the deleted version.
  CallResult apply_delete(const OperatorOp& op, const std::function<void(StoreBatch&)>& extra);
  // Drops `t` when it had no report, pin, deny or operator change for topic_idle_ttl_ms.
  bool expire_if_idle(const std::shared_ptr<Topic>& t, int64_t now);
  // One re-plan of a topic: what changes with it and what is committed with its list.
  struct Replan {
    StoreBatch batch;   // records committed atomically with the list (operator writes...)
    std::string cause;  // the list-change log's cause: detection, surge, pin, pin_expired...
    // The topic's pins / denies after the change (null: unchanged); they replace the topic's
    // only once the batch is stored.
    const std::map<std::string, Pin>* pins = nullptr;
    const std::map<std::string, Deny>* denies = nullptr;
    // The operator's entry, stamped with the version in force after the change.
    std::optional<AuditEntry> audit;
    // A report-triggered plan: publishes only when the listed keys change.
    bool triggered = false;
    // The topic's policies after the change (null: unchanged), like pins and denies.
    const Policies* policies = nullptr;
  };
  struct ReplanResult {
    StoreStatus status;
    uint64_t version = 0;  // the published version after the re-plan (0: none)
  };
  // The one way a list becomes `t`'s published list (caller holds t.mu; the list is stored
  // already, t.version set by the caller): remembered for the reports routed with it, on the
  // board, handed to the placement (cluster mode: the lists topic), counted. Returns it.
  std::shared_ptr<const PublishedList> publish_locked(Topic& t, const HotKeyList& list);
  // Re-plans `t` (caller holds t.mu) and, when the list changed materially or the batch
  // carries operator writes, persists and publishes. On a store failure nothing changed.
  ReplanResult replan_locked(Topic& t, Replan r);
  // list_followed's part under t.mu: the unstamped audit entries `list` shows get its version.
  void stamp_audits_locked(Topic& t, const HotKeyList& list);
  // True when `r` (caller holds t.mu) shows an unlisted key far enough above the hot
  // threshold to plan before the next tick.
  bool shows_new_hot_key(const Topic& t, const Report& r, const TopicSettings& s,
                         int64_t now) const;
  // How long after a topic's first report keys may enter on the fast path (warm-up).
  int64_t fast_detect_after_ms() const;
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
  // The kConflict too_many_pins refusal when pinning `key` would put more than max_hot_keys pins on
  // `topic`; nullopt when the pin fits (or replaces one).
  std::optional<CallResult> pin_limit(const std::string& topic,
                                      const std::map<std::string, Pin>& pins,
                                      const std::string& key) const;
  void log_list_change(const HotKeyList& before, const HotKeyList& after,
                       const std::string& cause) const;

  bool owns(const std::string& topic) const { return placement_->owns(topic); }

  const CoordinatorConfig config_;
  LocalPlacement local_placement_;
  Placement* placement_ = &local_placement_;
  StateStore& store_;
  MetricsSink& metrics_;
  const Clock& clock_;
  LogSink& log_;
  ListBoard board_;
  const int64_t started_ms_;

  // Topics are shared: lookups hand out references that stay valid while a topic is dropped
  // (idle expiry, DELETE, a failed call's rollback); `Topic::removed` tells the holder.
  mutable std::shared_mutex topics_mu_;
  std::map<std::string, std::shared_ptr<Topic>, std::less<>> topics_;
  std::atomic<uint64_t> tracked_partitions_{0};  // sum of Topic::partitions

  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  bool bg_stop_ = false;
  bool bg_wake_ = false;
  std::vector<std::shared_ptr<Topic>> wanted_;  // topics asking for a plan soon (bg_mu_)
  std::thread bg_;
};

}  // namespace hotkey::coordinator
