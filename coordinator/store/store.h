// Durable coordinator state in RocksDB: published lists and their version counters, pins,
// denies, topic metadata and the audit log. One instance per data directory; thread-safe
// (RocksDB serialises writers; every method may be called from any thread).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hotkey/hotkey_list.h"

namespace hotkey::coordinator {

// Result of a storage operation: ok, or a message fit for a log line / HTTP 503 body.
struct StoreStatus {
  bool ok = true;
  std::string error;
  static StoreStatus Ok() { return {}; }
  static StoreStatus Error(std::string message) { return {false, std::move(message)}; }
};

// An operator's "always salt this key".
struct Pin {
  std::string key;
  uint32_t salts = 0;         // 0: computed from the key's share
  int64_t expires_at_ms = 0;  // 0: never
  std::string reason;
  std::string by;
  int64_t created_at_ms = 0;
  bool operator==(const Pin&) const = default;
};

// An operator's "never salt this key" (ordering-critical keys).
struct Deny {
  std::string key;
  std::string reason;
  std::string by;
  int64_t created_at_ms = 0;
  bool operator==(const Deny&) const = default;
};

struct AuditEntry {
  uint64_t seq = 0;
  int64_t at_ms = 0;
  std::string who;     // token name, or "system" for expiries
  std::string action;  // pin, unpin, deny, allow, pin_expired, delete_topic
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
};

// Related writes applied atomically (one RocksDB WriteBatch).
class StoreBatch {
 public:
  void put_list(const HotKeyList& list);
  void put_topic_meta(const std::string& topic, const TopicMeta& meta);
  void put_pin(const std::string& topic, const Pin& pin);
  void delete_pin(const std::string& topic, const std::string& key);
  void put_deny(const std::string& topic, const Deny& deny);
  void delete_deny(const std::string& topic, const std::string& key);
  // Drops the topic's list and metadata records; its version counter is written as `version`
  // (when above 0) and kept, so the topic never goes back in version when it returns. Its pins
  // and denies are deleted with delete_pin / delete_deny.
  void drop_topic(const std::string& topic, uint64_t version);
  // seq is assigned by Store::write.
  void append_audit(AuditEntry entry);
  // Sets `version` on the audit entries that have none yet (0).
  void stamp_audit_versions(uint64_t version) {
    for (auto& a : audits_) {
      if (a.version == 0) a.version = version;
    }
  }
  // A service record (e.g. cluster mode's state-topic checkpoint), read by Store::meta.
  void put_meta(const std::string& name, const std::string& value);
  bool empty() const { return puts_.empty() && deletes_.empty() && audits_.empty(); }

 private:
  friend class Store;
  std::vector<std::pair<std::string, std::string>> puts_;
  std::vector<std::string> deletes_;
  std::vector<AuditEntry> audits_;
};

class Store {
 public:
  // The format record every data directory carries; a directory without it (and not empty)
  // is foreign and refused.
  static constexpr const char* kFormat = "hotkey-coordinator-store/1";

  // Opens (creating when missing) the store at `dir`. Returns nullptr and sets *error on a
  // foreign, corrupt, locked or newer-format directory.
  static std::unique_ptr<Store> open(const std::string& dir, std::string* error);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Everything persisted, by topic. A damaged record that is derived from reports (a list,
  // topic metadata) is left out and described in *skipped: the coordinator plans it again
  // from fresh reports, above the topic's version counter. A damaged pin, deny or version
  // counter sets *error instead (operator intent and version order cannot be guessed).
  std::map<std::string, StoredTopic> load(std::string* error,
                                          std::vector<std::string>* skipped = nullptr) const;

  // Atomic, synced write. `latency_s` (optional) receives the write's duration.
  StoreStatus write(StoreBatch& batch, double* latency_s = nullptr);

  // Newest first, at most `limit`.
  std::vector<AuditEntry> audit(size_t limit) const;

  // The value of a put_meta record, if any.
  std::optional<std::string> meta(const std::string& name) const;

  // The highest list version ever issued for `topic` (its version counter), if any: also kept
  // after the topic itself was dropped, so a topic of that name never goes back in version.
  // nullopt when there is none or it cannot be read.
  std::optional<uint64_t> version_counter(const std::string& topic) const;

  // A small synced write that proves the store is writable (readiness).
  StoreStatus probe(double* latency_s = nullptr);
  bool healthy() const;

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// JSON helpers shared by the store and the HTTP layer.
std::string audit_to_json(const AuditEntry& entry);

}  // namespace hotkey::coordinator
