// The send-path router: for one keyed record, the partition (and salt) it goes to.
//
// Router is thread-safe. route() reads an immutable per-topic routing table through a per-thread
// cache, so a record takes no lock, does no allocation and makes no syscall; publishing a new
// list builds a new table off the send path and swaps it in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/client/config.h"
#include "hotkey/client/merge.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/partitioner.h"

namespace hotkey::client {

// Stable index of a topic inside one Router (or Client).
using TopicId = uint32_t;

// Where one record goes.
struct RouteDecision {
  // -1 when the router leaves the choice to librdkafka (null key, or no partition count yet).
  int32_t partition = -1;
  bool salted = false;
  uint32_t salt = 0;
  // Version of the table the decision came from: the list's (0 without a list), or, while the
  // topic has a local table, kLocalTableVersionBit + the list's (merge.h).
  uint64_t version = 0;
  uint8_t separator_len = 0;
  char separator[kMaxSeparatorBytes] = {};

  std::string_view separator_view() const noexcept { return {separator, separator_len}; }
  // Writes key + separator + decimal salt to `out` (key.size() + kMaxSaltSuffixBytes bytes)
  // and returns the length. Only meaningful when salted.
  size_t write_salted_key(std::string_view key, char* out) const noexcept;
};

struct RouterOptions {
  HashFamily family = HashFamily::kCrc32;  // the producer's own partitioner family
  SaltPolicy policy = SaltPolicy::kWeightedRoundRobin;
};

// A producer's own salt tables for keys its list leaves unsalted, routed with while the list is
// stale (docs/CLIENT.md, "Local tables"). The client core's reporter plans them.
struct LocalTables {
  uint64_t base_version = 0;  // the version of the list they extend (0: none)
  int32_t partitions = 0;     // the live partition count they were planned for
  std::vector<HotKey> keys;   // each with a table verified for `partitions`
};

// The family's partition of a keyed record exactly as librdkafka's `<family>_random`
// partitioner computes it; -1 where librdkafka would pick at random (null key; empty key with
// consistent_random) or partition_cnt < 1.
int32_t cold_partition(HashFamily family, const void* key, size_t keylen,
                       int32_t partition_cnt) noexcept;

class Router {
 public:
  static constexpr uint32_t kMaxTopics = 4096;

  explicit Router(RouterOptions options = {});
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  const RouterOptions& options() const noexcept;

  // Registers `name` (idempotent) and returns its id. std::invalid_argument for an invalid
  // topic name or more than kMaxTopics topics.
  TopicId topic(std::string_view name);
  std::optional<TopicId> find_topic(std::string_view name) const;
  std::string topic_name(TopicId id) const;
  size_t topic_count() const noexcept;

  // Makes `list` the topic's routing table if its version is newer than the current one.
  // The list must be valid (parse_list_json validates). Returns false (and changes nothing)
  // for a version <= the current one (versions never go back) or >= kLocalTableVersionBit
  // (no coordinator issues it). Drops the topic's local tables: the fresh list wins.
  bool publish(const HotKeyList& list);

  // Drops the topic's list (its topic was deleted: a tombstone on the lists topic); every key
  // routes cold until a newer list is published. The version is kept as the floor: lists at or
  // below it are still refused. Returns false when there was no list.
  bool remove_list(TopicId id);

  // plain=true: route every key of the topic cold (expired list under policy "plain") while
  // keeping the last good list; plain=false routes with that list again.
  void set_plain(TopicId id, bool plain);
  bool plain(TopicId id) const;

  // Local tables (docs/CLIENT.md, "Local tables"). set_local_tables makes `tables` part of the
  // topic's routing table, next to its list's keys: the table's version becomes
  // kLocalTableVersionBit + the list's. Refused (false, nothing changed) when the topic's local
  // generation is no longer `expected_generation` (a list, a drop or other local tables came in
  // between), when the tables extend another list version than the topic's, when they were
  // planned for another partition count than the live one (when one is known), when a key is
  // also on the list, or when a salt does not recompute to its partition (every table is
  // verified for the topic's family, separator and `tables.partitions`). A newer list
  // (publish), a tombstone (remove_list) and drop_local_tables drop them: the list wins.
  bool set_local_tables(TopicId id, LocalTables tables, uint64_t expected_generation);
  // Drops the topic's local tables; false when it had none.
  bool drop_local_tables(TopicId id);
  // The topic's local tables, or null.
  std::shared_ptr<const LocalTables> local_tables(TopicId id) const;
  // Bumped by every change of the topic's list or local tables.
  uint64_t local_generation(TopicId id) const noexcept;
  // Local tables set for the topic so far (each set_local_tables that succeeded).
  uint64_t local_tables_set(TopicId id) const noexcept;
  // Records routed to a salt of a local key so far.
  uint64_t local_salted(TopicId id) const;

  // The version of the newest list published for the topic (0: none).
  uint64_t version(TopicId id) const noexcept;
  // The newest list published for the topic, or null.
  std::shared_ptr<const HotKeyList> list(TopicId id) const;
  // The partition count route() (or observe_partitions) last saw for the topic (0: none yet).
  int32_t live_partitions(TopicId id) const noexcept;
  // Records the live partition count seen outside route() (e.g. by a partitioner callback
  // that hashes an already salted key).
  void observe_partitions(TopicId id, int32_t partition_cnt) const noexcept;

  // True when `key` ends in <separator><digits> with the separator of the topic's table (the
  // default one without a list), the way split_salted_key reads it: what a rekeyed key looks
  // like (merge contract v2 marks such an unsalted key with hotkey.unsalted).
  bool looks_salted(TopicId id, const void* key, size_t keylen) const noexcept;

  // Routes one record. key == nullptr is a null key. partition_cnt is the live count from
  // metadata. `value` feeds the value_hash policy. When partition_cnt differs from the count
  // the table was built for, the first record to notice rebuilds the table with first-fit
  // verified salts for the live count (the only allocation, once per change); records racing
  // with that rebuild route cold. Never returns a partition outside [0, partition_cnt).
  RouteDecision route(TopicId id, const void* key, size_t keylen, std::string_view value,
                      int32_t partition_cnt) const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hotkey::client
