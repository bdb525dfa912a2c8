// This member in the consumer group on the reports topic (docs/CLUSTER.md, "Ownership"): the
// rebalance callback hands assigned partitions to the Takeover (which owns them once their
// lists partitions are read) and releases revoked ones at once; the poll loop hands the reports
// read to the relay and republishes every owned list each republish interval. It sends no admin
// request: librdkafka (2.0.2 here; upstream issue 4605 is open) aborts the process when the
// broker connection of a group-coordinator admin request drops mid-request, and a broker
// failure must not take a coordinator down (GET /v1/cluster's group members come from the
// ownership heartbeats instead). Thread-safety: run() on one thread (the rebalance callback runs
// inside its polls); generation() and member_id() from any thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "config.h"
#include "coordinator_api.h"
#include "kafka_io.h"
#include "lists_writer.h"
#include "log_sink.h"
#include "report_relay.h"
#include "takeover.h"

namespace hotkey::coordinator::kafka {

class Membership {
 public:
  Membership(const CoordinatorConfig& config, Ownership& ownership, LogSink& log,
             const Handles& handles, ListsWriter& writer, ReportRelay& relay, Takeover& takeover,
             const std::atomic<bool>& stop)
      : config_(config),
        cc_(config.cluster),
        ownership_(ownership),
        log_(log),
        handles_(handles),
        writer_(writer),
        relay_(relay),
        takeover_(takeover),
        stop_(stop) {}
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  // Handles::create's rebalance callback; `opaque` is the Membership.
  static void rebalance_cb(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                           rd_kafka_topic_partition_list_t* parts, void* opaque);
  // Joins the group (subscribes to the reports topic).
  bool subscribe(std::string* error);
  // Polls until the stop flag is set, then leaves the group and flushes the producer.
  void run();

  uint64_t generation() const { return rebalances_.load(); }
  // False when the group consumer joined (subscribed) but never had an assignment: librdkafka
  // 2.0.2 aborts destroying it then (issue 4312), so it is left undestroyed at exit. run()
  // waits for the first assignment within the drain bound before leaving the group.
  bool consumer_destroyable() const;
  std::string member_id() const;

 private:
  void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                    rd_kafka_topic_partition_list_t* parts);
  void lose_ownership(const std::vector<int32_t>& parts);
  // One poll of the group consumer (a report to the relay, rebalances served) and of the
  // producer's delivery reports.
  void poll_once(int timeout_ms);
  // Forgets what this member knew of the topics of partitions `parts`.
  void release_topics(const std::vector<int32_t>& parts);

  const CoordinatorConfig& config_;
  const ClusterConfig& cc_;
  Ownership& ownership_;
  LogSink& log_;
  const Handles& handles_;
  ListsWriter& writer_;
  ReportRelay& relay_;
  Takeover& takeover_;
  const std::atomic<bool>& stop_;

  std::atomic<uint64_t> rebalances_{0};
  std::atomic<bool> subscribed_{false};
  mutable std::mutex id_mu_;
  std::string member_id_;
};

}  // namespace hotkey::coordinator::kafka
