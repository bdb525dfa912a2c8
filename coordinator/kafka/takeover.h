// Taking assigned partitions over (docs/CLUSTER.md, "Ownership"), on a thread of its own: an
// assigned partition is owned once its lists partition is fenced (kafka.lists_fencing) and read
// to its end, with an epoch above every epoch the partition held (lists and ownership
// heartbeats), its topics' last lists adopted and re-issued. The reads wait on brokers (a moved
// leader, a node down: librdkafka's watermark query blocks past its timeout then), so they run
// here, never on the group's poll thread, whose heartbeats, reports and max.poll.interval.ms
// must not wait for them. Thread-safety: run() on one thread; assigned() and revoked() from the
// rebalance callback (any thread).
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "config.h"
#include "coordinator_api.h"
#include "hotkey/hotkey_list.h"
#include "kafka_io.h"
#include "lists_writer.h"
#include "log_sink.h"

namespace hotkey::coordinator::kafka {

class Takeover {
 public:
  // `stale_list(topic, version)`: a list found on an assigned lists partition belongs to a topic
  // deleted since (at `version`); the owner tombstones it. `member_id()`: the group member id
  // the heartbeats carry. `generation()`: for the log.
  Takeover(const CoordinatorConfig& config, Ownership& ownership, LogSink& log,
           const Handles& handles, ListsWriter& writer, const std::atomic<bool>& stop,
           std::function<void(const std::string& topic, uint64_t version)> stale_list,
           std::function<std::string()> member_id, std::function<uint64_t()> generation)
      : config_(config),
        cc_(config.cluster),
        ownership_(ownership),
        log_(log),
        handles_(handles),
        writer_(writer),
        stop_(stop),
        stale_list_(std::move(stale_list)),
        member_id_(std::move(member_id)),
        generation_(std::move(generation)) {}
  Takeover(const Takeover&) = delete;
  Takeover& operator=(const Takeover&) = delete;

  // Partitions `parts` were assigned: taken over as soon as their lists partitions are read.
  void assigned(const std::vector<int32_t>& parts);
  // Partitions `parts` were revoked or lost: no longer owned or pending once this returns (a
  // takeover under way for them is not completed).
  void revoked(const std::vector<int32_t>& parts);
  // Takes pending partitions over until the stop flag is set; a failed attempt is retried a
  // second later.
  void run();

 private:
  // One lists partition as read to its end.
  struct PartitionLists {
    std::map<std::string, HotKeyList> latest;  // highest version per topic; tombstones erase
    uint64_t max_epoch = 0;
  };
  // How far a pending partition's lists partition has been read, kept across attempts.
  struct ReadProgress {
    PartitionLists lists;
    int64_t next = -1;  // the next offset to read; -1: from the beginning
    // The high watermark to read to, taken once after the fence and kept across attempts
    // (-1: not taken yet). Every record of a former owner lies below it.
    int64_t high = -1;
    int64_t low = 0;  // the log start offset taken with it
  };
  // Reads lists partitions `parts` from the beginning to their high watermark. False when that
  // did not finish in time (broker trouble, a loaded machine); a later attempt resumes where
  // this one stopped.
  bool read_to_end(const std::vector<int32_t>& parts, std::map<int32_t, PartitionLists>* out);
  // One attempt at the pending partitions; true when nothing is left pending.
  bool attempt();
  // Under mu_: owns `p` (still pending as `serial`) with what its lists partition held.
  void own(int32_t p, const PartitionLists& pl);

  const CoordinatorConfig& config_;
  const ClusterConfig& cc_;
  Ownership& ownership_;
  LogSink& log_;
  const Handles& handles_;  // its reader: assign() only, no group
  ListsWriter& writer_;
  const std::atomic<bool>& stop_;
  const std::function<void(const std::string&, uint64_t)> stale_list_;
  const std::function<std::string()> member_id_;
  const std::function<uint64_t()> generation_;

  // Serialises ownership: a partition becomes owned (here) and stops being owned (revoked())
  // under it, so a revocation never loses to a takeover that finished reading meanwhile.
  std::mutex mu_;
  std::condition_variable wake_;
  std::map<int32_t, uint64_t> pending_;  // assigned, not owned yet -> assignment serial
  uint64_t serial_ = 0;

  // The run() thread's own: read progress and the partitions the reader is assigned.
  std::map<int32_t, ReadProgress> progress_;
  std::set<int32_t> reading_;
};

}  // namespace hotkey::coordinator::kafka
