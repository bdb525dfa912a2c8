// The coordinator's durable state as the core sees it: the domain records (pins, denies,
// audit entries, topic metadata), a batch of related writes, and the StateStore interface the
// core commits through. Storage-free: the RocksDB implementation is coordinator/store/store.h
// (and a Kafka-backed one can be a second implementation).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "hotkey/api_model.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/report.h"

namespace hotkey::coordinator {

// The bounds a stored list is checked against: the invariants only (positive partition count,
// verified salt tables, shares in [0, 1], finite rates...), not the report limits of the
// configuration in force, so a coordinator restarted with tighter limits still reads its data.
ReportLimits list_invariant_limits();

// Result of a storage operation: ok, or a message fit for a log line / HTTP 503 body.
struct StoreStatus {
  bool ok = true;
  std::string error;
  static StoreStatus Ok() { return {}; }
  static StoreStatus Error(std::string message) { return {false, std::move(message)}; }
};

// An operator's "always salt this key" and "never salt this key" (ordering-critical keys):
// the same values the API shows (hotkey/api_model.h), so one type serves the core, the store
// and the answers.
using Pin = api::Pin;
using Deny = api::Deny;
// An operator's rule for every key with a prefix (never salt, or its own hot_fraction and
// max_salts); the topic's policies are kept by prefix.
using Policy = api::Policy;
using Policies = std::map<std::string, Policy, std::less<>>;

struct AuditEntry {
  uint64_t seq = 0;
  int64_t at_ms = 0;
  std::string who;     // token name, or "system" for expiries
  std::string action;  // pin, unpin, deny, allow, policy_add, policy_remove, pin_expired...
  std::string topic;
  std::string key;
  std::string detail;  // JSON object text with action-specific fields
  uint64_t version = 0;
};

// Learned facts about a topic that must survive a restart.
struct TopicMeta {
  int32_t partitions = 0;
  HashFamily hash = HashFamily::kMurmur2;
  std::string separator = std::string(kDefaultSeparator);
};

struct StoredTopic {
  std::optional<HotKeyList> list;
  uint64_t version = 0;  // highest version ever issued (>= list->version)
  std::optional<TopicMeta> meta;
  std::map<std::string, Pin> pins;
  std::map<std::string, Deny> denies;
  Policies policies;  // by prefix
};

// Related writes applied atomically (one synced write of the store). The operations are kept
// as values, in call order; the store encodes them.
class StoreBatch {
 public:
  struct PutList {
    HotKeyList list;
  };
  struct PutTopicMeta {
    std::string topic;
    TopicMeta meta;
  };
  struct PutPin {
    std::string topic;
    Pin pin;
  };
  struct DeletePin {
    std::string topic;
    std::string key;
  };
  struct PutDeny {
    std::string topic;
    Deny deny;
  };
  struct DeleteDeny {
    std::string topic;
    std::string key;
  };
  struct PutPolicy {
    std::string topic;
    Policy policy;
  };
  struct DeletePolicy {
    std::string topic;
    std::string prefix;
  };
  struct DropTopic {
    std::string topic;
    uint64_t version = 0;
  };
  struct PutMeta {
    std::string name;
    std::string value;
  };
  // An audit entry written before (its seq kept), now with its version (restamp_audit).
  struct PutAudit {
    AuditEntry entry;
  };
  using Op = std::variant<PutList, PutTopicMeta, PutPin, DeletePin, PutDeny, DeleteDeny, PutPolicy,
                          DeletePolicy, DropTopic, PutMeta, PutAudit>;

  // The list and its version counter. Throws DecodeError (and queues nothing) for a list that
  // breaks the invariants a load checks (list_invariant_limits), so nothing is ever written
  // that a restart would refuse.
  void put_list(const HotKeyList& list);
  void put_topic_meta(const std::string& topic, const TopicMeta& meta);
  void put_pin(const std::string& topic, const Pin& pin);
  void delete_pin(const std::string& topic, const std::string& key);
  void put_deny(const std::string& topic, const Deny& deny);
  void delete_deny(const std::string& topic, const std::string& key);
  void put_policy(const std::string& topic, const Policy& policy);
  void delete_policy(const std::string& topic, const std::string& prefix);
  // Drops the topic's list and metadata records; its version counter is written as `version`
  // (when above 0) and kept, so the topic never goes back in version when it returns. Its pins,
  // denies and policies are deleted with delete_pin / delete_deny / delete_policy.
  void drop_topic(const std::string& topic, uint64_t version);
  // seq is assigned by StateStore::write.
  void append_audit(AuditEntry entry) { audits_.push_back(std::move(entry)); }
  // Sets `version` on the audit entries that have none yet (0).
  void stamp_audit_versions(uint64_t version) {
    for (auto& a : audits_) {
      if (a.version == 0) a.version = version;
    }
  }
  // Rewrites an entry already in the log (seq set by an earlier write), e.g. with the version
  // that a member which does not plan the topic learned later (cluster mode).
  void restamp_audit(const AuditEntry& entry) { ops_.push_back(PutAudit{entry}); }
  // A service record (e.g. cluster mode's state-topic checkpoint), read by StateStore::meta.
  void put_meta(const std::string& name, const std::string& value) {
    ops_.push_back(PutMeta{name, value});
  }
  bool empty() const { return ops_.empty() && audits_.empty(); }

  const std::vector<Op>& ops() const { return ops_; }
  std::vector<AuditEntry>& audits() { return audits_; }

 private:
  std::vector<Op> ops_;
  std::vector<AuditEntry> audits_;
};

// Where the core keeps its durable state. Implementations are thread-safe.
class StateStore {
 public:
  virtual ~StateStore() = default;

  // Everything persisted, by topic. A damaged record that is derived from reports (a list,
  // topic metadata) is left out and described in *skipped: the coordinator plans it again
  // from fresh reports, above the topic's version counter. A damaged pin, deny or version
  // counter sets *error instead (operator intent and version order cannot be guessed).
  virtual std::map<std::string, StoredTopic> load(
      std::string* error, std::vector<std::string>* skipped = nullptr) const = 0;

  // Atomic, synced write; assigns the audit entries' seq. `latency_s` (optional) receives the
  // write's duration.
  virtual StoreStatus write(StoreBatch& batch, double* latency_s = nullptr) = 0;

  // Newest first, at most `limit`.
  virtual std::vector<AuditEntry> audit(size_t limit) const = 0;

  // The value of a put_meta record, if any.
  virtual std::optional<std::string> meta(const std::string& name) const = 0;

  // The highest list version ever issued for `topic` (its version counter), if any: also kept
  // after the topic itself was dropped, so a topic of that name never goes back in version.
  // nullopt when there is none or it cannot be read.
  virtual std::optional<uint64_t> version_counter(const std::string& topic) const = 0;

  // A small synced write that proves the store is writable (readiness).
  virtual StoreStatus probe(double* latency_s = nullptr) = 0;
  virtual bool healthy() const = 0;
};

}  // namespace hotkey::coordinator
