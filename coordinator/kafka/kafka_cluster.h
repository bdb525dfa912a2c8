// Cluster mode (docs/CLUSTER.md): this coordinator as one member of a consumer group on the
// reports topic. It owns data topic T exactly while it holds T's reports partition: it feeds
// that partition's reports to the coordinator core, rebuilds the window on assignment from the
// last window of reports, reads the co-partitioned lists partition to its end, and publishes
// the owned topics' lists there with versions (epoch << 32 | sequence) above everything the
// partition held. A tailer reads every lists partition so that any member can answer list
// reads and GET /v1/cluster.
//
// KafkaCluster wires the parts, one concern each (coordinator/kafka/):
//   kafka_io        librdkafka handles, headers, the partition rule, awaited produces
//   topic_admin     the internal topics checked or created at start
//   membership      the group: rebalances, taking and losing ownership, the poll loop
//   lists_writer    what this member owns (partitions, epochs) and the lists it writes
//   lists_tailer    every lists partition followed: list reads and who owns what
//   state_log       operator writes through the state topic, applied by every member
//   report_relay    reports to the reports topic (HTTP to a non-owner) and from it (owner)
// Thread-safe; start() and stop() from one thread.
#pragma once

#include <memory>
#include <string>

#include "config.h"
#include "coordinator_api.h"
#include "log_sink.h"
#include "state_store.h"

namespace hotkey::coordinator {

class KafkaCluster {
 public:
  // The core as the cluster's roles see it: reports read from the reports topic go to
  // `reports`, ownership and shared operator writes to `ownership`, the seed and GET
  // /v1/cluster read `reads`; the state topic's checkpoints are kept in `store` (the core's).
  // `advertised_url` is how the other members and operators reach this coordinator's HTTP API.
  // Log events go to `log`.
  KafkaCluster(const CoordinatorConfig& config, ReportSink& reports, const Reads& reads,
               Ownership& ownership, StateStore& store, LogSink& log, std::string advertised_url);
  ~KafkaCluster();
  KafkaCluster(const KafkaCluster&) = delete;
  KafkaCluster& operator=(const KafkaCluster&) = delete;

  // The core's placement in cluster mode (Coordinator::set_placement, before start()).
  Placement& placement();
  // Connects, checks the internal topics (creating them when missing and the broker supports
  // CreateTopics) and joins the group. False and *error (what is wrong and what to do) when it
  // cannot.
  bool start(std::string* error);
  // Leaves the group (the partitions move to the other members) and flushes.
  void stop();

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

}  // namespace hotkey::coordinator
