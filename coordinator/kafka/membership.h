// This member in the consumer group on the reports topic (docs/CLUSTER.md, "Ownership"): an
// assigned partition is owned once its lists partition is read to its end (with an epoch above
// every epoch it held, its topics' last lists adopted and re-issued), a revoked one is released
// at once; the poll loop hands the reports read to the relay, writes the ownership heartbeat of
// every owned partition each heartbeat interval and republishes every owned list each republish
// interval. It never sends admin requests: librdkafka (2.0.2, and upstream still open) aborts
// when a group-coordinator admin request's broker connection drops mid-request (librdkafka
// issue 4605), and a broker failure must not take a coordinator down; GET /v1/cluster's group
// members come from the heartbeats instead. Thread-safety: run() on one thread (the rebalance
// callback runs inside its polls); generation() and member_id() from any thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "coordinator.h"
#include "kafka_io.h"
#include "lists_writer.h"
#include "report_relay.h"

namespace hotkey::coordinator::kafka {

class Membership {
 public:
  // `stale_list(topic, version)`: a list found on an assigned lists partition belongs to a topic
  // deleted since (at `version`); the owner tombstones it.
  Membership(const CoordinatorConfig& config, Coordinator& coordinator, LogSink& log,
             const Handles& handles, ListsWriter& writer, ReportRelay& relay,
             const std::atomic<bool>& stop,
             std::function<void(const std::string& topic, uint64_t version)> stale_list)
      : config_(config),
        cc_(config.cluster),
        coordinator_(coordinator),
        log_(log),
        handles_(handles),
        writer_(writer),
        relay_(relay),
        stop_(stop),
        stale_list_(std::move(stale_list)) {}
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
  std::string member_id() const;

 private:
  // One lists partition as read to its end.
  struct PartitionLists {
    std::map<std::string, HotKeyList> latest;  // highest version per topic; tombstones erase
    uint64_t max_epoch = 0;
  };
  void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                    rd_kafka_topic_partition_list_t* parts);
  // Reads lists partitions `parts` from the beginning to their high watermark. False when that
  // did not finish in time (broker trouble, a loaded machine): nothing is published from such
  // a partition until a later attempt succeeds, and that attempt resumes where this one
  // stopped (the high watermark is taken again).
  bool read_to_end(const std::vector<int32_t>& parts, std::map<int32_t, PartitionLists>* out);
  // Owns the pending partitions once their lists partitions are read to their end; on failure
  // they stay pending and the loop retries a second later.
  void take_ownership();
  void lose_ownership(const std::vector<int32_t>& parts);
  // Forgets what this member knew of the topics of partitions `parts`.
  void release_topics(const std::vector<int32_t>& parts);

  const CoordinatorConfig& config_;
  const ClusterConfig& cc_;
  Coordinator& coordinator_;
  LogSink& log_;
  const Handles& handles_;
  ListsWriter& writer_;
  ReportRelay& relay_;
  const std::atomic<bool>& stop_;
  const std::function<void(const std::string&, uint64_t)> stale_list_;

  // Assigned partitions whose lists partition could not yet be read to its end (loop thread).
  std::set<int32_t> pending_;
  // How far each pending partition's lists partition has been read, kept across attempts, and
  // the partitions the reader is assigned (loop thread).
  struct ReadProgress {
    PartitionLists lists;
    int64_t next = -1;  // the next offset to read; -1: from the beginning
    // The high watermark to read to, taken once after the fence and kept across attempts
    // (-1: not taken yet). Every record of a former owner lies below it.
    int64_t high = -1;
    int64_t low = 0;  // the log start offset taken with it
  };
  std::map<int32_t, ReadProgress> progress_;
  std::set<int32_t> reading_;
  std::atomic<uint64_t> rebalances_{0};
  mutable std::mutex id_mu_;
  std::string member_id_;
};

}  // namespace hotkey::coordinator::kafka
