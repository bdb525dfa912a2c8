// The core's interfaces by audience (docs/ARCHITECTURE.md, "The core's interfaces"): what the
// transports and the cluster's Kafka roles may ask of the coordinator core, and the values they
// exchange. Coordinator (coordinator.h) implements the four audiences:
//   ReportSink   reports in (HTTP report routes; the reports topic's consumer on the owner)
//   OperatorApi  operator writes and the audit log (HTTP operator and audit routes)
//   Reads        topic views, lists, the cluster view, store health (HTTP views; Kafka's seed
//                and status)
//   Ownership    what cluster membership does to the core (coordinator/kafka/): ownership
//                taken and lost, shared operator writes applied, other owners' lists followed,
//                the periodic republish
// and the core asks the cluster through one interface, Placement. coordinator/http/ and
// coordinator/kafka/ include this header, not coordinator.h. Every method is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/api_model.h"
#include "hotkey/report.h"
#include "list_board.h"
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
  // Ownership::apply_operator: the topic's list on the board shows the change in force.
  bool shown = false;
  bool ok() const { return status == Status::kOk; }
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

// Reports in.
class ReportSink {
 public:
  virtual ~ReportSink() = default;
  // A report that reached this coordinator as its topic's owner (the reports topic's consumer,
  // tests).
  virtual CallResult ingest(Report report) = 0;
  // A report from a transport that reaches any member (HTTP): ingested when this coordinator
  // owns its topic, else forwarded to the owner through the placement. `wire`: the report's
  // binary encoding as received (forwarded as is), empty when it came in another form.
  virtual CallResult submit_report(Report report, std::string_view wire) = 0;
};

// Operator calls; `who` is the token's name (audit log). In cluster mode each write goes
// through the state topic (Placement::forward_operator) and every member applies it.
class OperatorApi {
 public:
  virtual ~OperatorApi() = default;
  virtual CallResult pin(const std::string& topic, const std::string& key, uint32_t salts,
                         int64_t ttl_s, const std::string& reason, const std::string& who) = 0;
  virtual CallResult unpin(const std::string& topic, const std::string& key,
                           const std::string& who) = 0;
  virtual CallResult deny(const std::string& topic, const std::string& key,
                          const std::string& reason, const std::string& who) = 0;
  virtual CallResult allow(const std::string& topic, const std::string& key,
                           const std::string& who) = 0;
  // Creates or replaces the policy of `policy.prefix` (docs/API.md "Policies").
  virtual CallResult set_policy(const std::string& topic, const Policy& policy,
                                const std::string& who) = 0;
  virtual CallResult remove_policy(const std::string& topic, const std::string& prefix,
                                   const std::string& who) = 0;
  // Drops a topic with its pins, denies and policies; its version counter stays.
  virtual CallResult delete_topic(const std::string& topic, const std::string& reason,
                                  const std::string& who) = 0;
  // The newest `limit` audit entries.
  virtual std::vector<AuditEntry> audit(size_t limit) const = 0;
};

// What is read of the core: per-topic views, the lists a producer gets, who owns what, the
// store's health. Long-polls and subscriptions wait on the ListBoard itself (list_board.h).
class Reads {
 public:
  virtual ~Reads() = default;
  virtual std::vector<TopicSummary> topics() const = 0;
  virtual std::optional<TopicSummary> topic(const std::string& name) const = 0;
  virtual std::optional<std::vector<TopEntry>> top(const std::string& topic, size_t n) = 0;
  // Records per partition over the window as of the last plan (empty before the first).
  virtual std::optional<std::vector<double>> partition_load(const std::string& topic) const = 0;
  virtual std::optional<std::map<std::string, Pin>> pins(const std::string& topic) const = 0;
  // Refused reports by producer and reason (the most recent).
  virtual std::optional<std::vector<Rejection>> rejections(const std::string& topic) const = 0;
  virtual std::optional<std::map<std::string, Deny>> denies(const std::string& topic) const = 0;
  virtual std::optional<Policies> policies(const std::string& topic) const = 0;
  // The list on the board for `topic` (this member's or, in cluster mode, its owner's), or
  // null when none.
  virtual std::shared_ptr<const PublishedList> published(const std::string& topic) const = 0;
  // What a producer asking for `topic` gets now: the published list, or (no list yet) an empty
  // version-0 list with the topic's known or configured partitions, hash and separator.
  virtual std::shared_ptr<const PublishedList> current_list(const std::string& topic) const = 0;
  // The version of `topic`'s published list (0: none yet).
  virtual uint64_t list_version(const std::string& topic) const = 0;
  // This coordinator plans and publishes `topic` now (always in single-node mode).
  virtual bool owns(const std::string& topic) const = 0;
  // The advertised URL of another member that owns `topic` (empty: this one, or unknown).
  virtual std::string owner_url(const std::string& topic) const = 0;
  // Nobody has been heard owning `topic` for a while (cluster mode; docs/API.md, "stale").
  virtual bool owner_gone(const std::string& topic) const = 0;
  // What GET /v1/cluster answers (nullopt: single-node mode).
  virtual std::optional<api::ClusterView> cluster_view() const = 0;
  // Readiness: a small synced store write; `latency_s` receives its duration. store_healthy:
  // the last write or probe succeeded.
  virtual StoreStatus probe_store(double* latency_s) = 0;
  virtual bool store_healthy() const = 0;
};

// What cluster membership (coordinator/kafka/) does to the core. Lists reach the board only
// through the core: its own through the publish path, other owners' through follow_list.
class Ownership {
 public:
  virtual ~Ownership() = default;
  // Ownership lost (or about to be rebuilt) of every topic for which `which(topic)` is true:
  // forgets its window, producers, detection state and published list; pins, denies and the
  // version counter stay.
  virtual void release_topics(const std::function<bool(const std::string& topic)>& which) = 0;
  // Ownership of list.topic gained: the last list found on the lists topic becomes the topic's
  // published list again, re-issued with a version above both the topic's counter and the
  // version floor, and published. Returns that version.
  virtual uint64_t adopt_list(HotKeyList list) = 0;
  // Applies an operator write read from the state topic; `extra` adds records to the same
  // atomic store batch (the state-topic checkpoint), also when the write changes nothing.
  // The answer's version is at least the version of the topic's list on the board, and
  // `shown` says whether that list shows the change in force (pin, unpin, deny, allow).
  virtual CallResult apply_operator(const OperatorOp& op,
                                    const std::function<void(StoreBatch&)>& extra) = 0;
  // Another owner's list read from the lists topic: on the board when newer than the topic's
  // list there, and the unstamped audit entries it shows in force get its version. True when
  // it went on the board.
  virtual bool follow_list(std::shared_ptr<const PublishedList> list) = 0;
  // A tombstone of `topic` read from the lists topic, `last`: the highest version read for it.
  // The followed list leaves the board unless this member owns the topic or published above.
  virtual void unfollow_list(const std::string& topic, uint64_t last) = 0;
  // Hands every owned topic's current list to the placement again (the periodic republish),
  // each under its topic's lock like any publication.
  virtual void republish() = 0;
  // The highest version `topic` had when it was last deleted or expired in cluster mode (0:
  // never); `at_ms` receives when that delete was asked for (0: never).
  virtual uint64_t deleted_version(const std::string& topic, int64_t* at_ms = nullptr) const = 0;
  // Answers every parked list reader holding a topic for which `which(topic)` is true, without a
  // newer list (its owner went away or came back).
  virtual void nudge_readers(const std::function<bool(std::string_view topic)>& which) = 0;
};

}  // namespace hotkey::coordinator
