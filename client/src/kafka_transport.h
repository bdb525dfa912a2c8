// The kafka transport of the client core (hotkey.transport=kafka, docs/CLUSTER.md): reports are
// produced to the reports topic, keyed by data topic, and lists are read from the lists topic
// by a consumer that assign()s the partitions holding the client's topics (no group join),
// reads them from the beginning and then tails them.
//
// Thread-safe: send_report() and add_topic() from any thread. Neither blocks: librdkafka
// queues the report, and one background thread serves both handles, delivers list records to
// the callback, applies the expired-list policy to the router and judges each topic's
// staleness (docs/CLIENT.md, "Local tables"): no contact with its lists partition for
// hotkey.list.stale.ms, or the partition's ownership heartbeats (key kOwnerHeartbeatKey, never
// handed to the callback) stopped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "hotkey/client/config.h"
#include "hotkey/client/router.h"
#include "hotkey/kafka_contract.h"
#include "staleness.h"

namespace hotkey::client {

struct KafkaTransportStats {
  uint64_t reports_delivered = 0;    // acknowledged by the brokers (acks=all)
  uint64_t reports_undelivered = 0;  // failed for good after librdkafka's own retries
  uint64_t lists_partitions = 0;     // partition count of the lists topic (0: not known yet)
};

class KafkaTransport {
 public:
  // One record of the lists topic about a registered topic: the list document, or nullopt for
  // a tombstone. Called on the transport's thread, in log order per partition.
  using OnRecord = std::function<void(TopicId id, const std::optional<std::string>& value)>;

  // Creates the producer and the consumer from config.kafka_settings (std::invalid_argument
  // for a setting librdkafka refuses, std::runtime_error when a handle cannot be created) and
  // starts the thread.
  KafkaTransport(const ClientConfig& config, Router& router, detail::Staleness& staleness,
                 OnRecord on_record);
  // Stops the thread, gives queued reports up to one second, closes both handles.
  ~KafkaTransport();
  KafkaTransport(const KafkaTransport&) = delete;
  KafkaTransport& operator=(const KafkaTransport&) = delete;

  // Starts following `id`'s list (idempotent): its lists partition is added to the assignment
  // (read from the beginning), or, when already assigned, the newest record read so far is
  // handed over at once.
  void add_topic(TopicId id);

  // Queues one report (binary encoding) keyed by `topic`. Never blocks; false when librdkafka's
  // queue is full or the producer failed (the caller keeps the report and retries).
  bool send_report(std::string_view topic, std::string_view body);
  // Waits up to `timeout` until queued reports are delivered or failed.
  void flush(std::chrono::milliseconds timeout);

  KafkaTransportStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hotkey::client
