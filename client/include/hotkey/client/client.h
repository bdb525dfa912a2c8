// The client core every integration shares: router, per-topic samplers, the reporter thread
// (POST /v1/reports) and one long-poll subscriber thread per topic (GET /v1/hotkeys), or with
// hotkey.transport=kafka the reports and lists topics instead (docs/CLIENT.md).
//
// Thread-safe. route() is the send path: no lock shared across threads, no allocation, no
// syscall; everything that talks to the coordinator runs on background threads and never
// blocks route(), whatever state the coordinator is in.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/client/config.h"
#include "hotkey/client/router.h"

namespace hotkey::client {

struct TopicStats {
  std::string topic;
  uint64_t list_version = 0;     // newest list routed with (0: none yet)
  int32_t partitions = 0;        // live partition count last seen on the send path
  uint64_t hot_keys = 0;         // keys in that list
  bool plain = false;            // list expired under hotkey.list.expired.policy=plain
  uint64_t salted = 0;           // records sent with a salt
  uint64_t cold = 0;             // keyed records sent unsalted
  uint64_t null_key = 0;         // records without a key (left to librdkafka)
  uint64_t reports_dropped = 0;  // this topic's reports dropped: hotkey.report.queue.max waiting
  // Local tables (docs/CLIENT.md, "Local tables"): whether the topic's list is stale now (no
  // contact with its source for hotkey.list.stale.ms, or its owner gone), the keys its local
  // tables salt now, records salted by local tables so far, local tables set so far.
  bool stale = false;
  uint64_t local_keys = 0;
  uint64_t local_salted = 0;
  uint64_t local_tables = 0;
};

struct ClientStats {
  uint64_t reports_sent = 0;      // accepted by the coordinator (2xx)
  uint64_t reports_failed = 0;    // send attempts that failed (network, 5xx, 401/403, 429)
  uint64_t reports_rejected = 0;  // answered 4xx as invalid: dropped, never retried
  uint64_t reports_dropped = 0;   // dropped because a topic had hotkey.report.queue.max pending
  uint64_t reports_surge = 0;     // early reports built between rounds for a surging key
  uint64_t list_updates = 0;      // lists accepted (newer version, valid)
  uint64_t list_errors = 0;       // failed polls, garbage bodies, stale or foreign lists
  std::vector<TopicStats> topics;
};

// The statistics as one JSON object (docs/CLIENT.md, "Statistics"): the ClientStats fields by
// name, "topics" an array of the TopicStats fields by name.
std::string to_json(const ClientStats& stats);

class Client {
 public:
  // Reads the hotkey.* entries of `props` (others are left for librdkafka, except the
  // connection settings the kafka transport inherits) and starts the background threads when
  // hotkey.coordinator.url is set or hotkey.transport=kafka. std::invalid_argument for unknown
  // hotkey.* properties and bad values; std::runtime_error when the kafka transport's
  // librdkafka handles cannot be created.
  explicit Client(const Properties& props);
  // As above with the family given explicitly (the integration knows its partitioner).
  Client(const Properties& props, HashFamily family);
  // Stops the background threads (interrupting a pending long-poll).
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ClientConfig& config() const noexcept;
  HashFamily family() const noexcept;

  // Registers a topic (idempotent) and starts its subscriber. Slow path: call once per topic.
  TopicId topic(std::string_view name);
  Router& router() noexcept;
  const Router& router() const noexcept;

  // Routes one record and counts it (sampler and statistics). key == nullptr: null key.
  RouteDecision route(TopicId id, const void* key, size_t keylen, std::string_view value,
                      int32_t partition_cnt) noexcept;
  // Counts a record routed elsewhere (e.g. a decision taken before the partition count was
  // known): the logical key and where it went (-1 unknown).
  void record(TopicId id, const void* key, size_t keylen, int32_t partition, bool salted) noexcept;

  // Waits until the topic routes with a list of version >= min_version; false on timeout.
  bool wait_for_version(TopicId id, uint64_t min_version, std::chrono::milliseconds timeout);
  // Builds and sends the reports of the current window now instead of at the next interval
  // (a shutdown flush); returns once they were attempted.
  void report_now();

  ClientStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hotkey::client
