// The lists topic's writer, and this member's record of what it owns (docs/CLUSTER.md,
// "Versions"): the reports/lists partitions it holds with the epoch it publishes them with, and
// the deleted topics none of whose lists may be written again. A list is written only by the
// owner of its partition, only with the epoch of the current ownership, never at or below a
// deleted version; a tombstone is written under the exclusive lock, so no list of the deleted
// topic follows it. Thread-safe.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "cluster_config.h"
#include "kafka_io.h"
#include "list_board.h"
#include "log_sink.h"

namespace hotkey::coordinator::kafka {

// Version arithmetic of the lists topic (docs/CLUSTER.md, "Versions").
inline constexpr uint64_t version_epoch(uint64_t version) { return version >> 32; }
inline constexpr uint64_t epoch_floor(uint64_t epoch) { return epoch << 32; }

class ListsWriter {
 public:
  ListsWriter(const ClusterConfig& cc, LogSink& log, std::string member_url)
      : cc_(cc), log_(log), member_url_(std::move(member_url)) {}
  // Before any other call: the producer and the lists topic's partition count, and with
  // kafka.lists_fencing the handles that make the lists partitions' transactional producers.
  void attach(rd_kafka_t* producer, int32_t partitions, Handles* fencing = nullptr) {
    producer_ = producer;
    partitions_ = partitions;
    fencing_ = fencing;
  }
  ~ListsWriter();

  // Before reading partitions `parts` to their end on an assignment (fencing only): makes and
  // initialises each one's transactional producer, which makes the broker abort a former
  // owner's open transaction and refuse its later writes. False when the broker did not answer
  // in time (the caller retries; the partitions stay unowned meanwhile). Every wait together
  // ends within `budget_ms`: the caller is the group's poll loop, which max.poll.interval.ms
  // expels when blocked (an initialisation cut short resumes at the next call).
  bool fence(const std::vector<int32_t>& parts, int budget_ms);

  int32_t partition_of(const std::string& topic) const;
  bool owns(const std::string& topic) const;
  // Every version this member issues for `topic` is above this (its epoch << 32; 0 unowned).
  uint64_t version_floor(const std::string& topic) const;
  // Ownership of partition `p` begins (with `epoch`) or ends.
  void own(int32_t p, uint64_t epoch);
  void disown(const std::vector<int32_t>& parts);
  std::map<int32_t, uint64_t> owned() const;
  // The highest version recorded as deleted for `topic` here (0: none).
  uint64_t deleted_version(const std::string& topic) const;

  // Writes `list` to its lists partition when this member may (see above); else counts it as
  // dropped. A produce refused for a full queue is retried briefly, then left to the next
  // republish.
  void publish(const std::shared_ptr<const PublishedList>& list);
  // Records `topic` deleted at `version` and, when this member owns its partition, writes the
  // tombstone (null value) for its key, so compaction removes its lists and clients drop the
  // list (keeping the version).
  void tombstone(const std::string& topic, uint64_t version);

  // Writes the ownership heartbeat (hotkey/kafka_contract.h) of every owned partition, or of
  // partition `only` (>= 0) when it is owned, with the plain idempotent producer whatever the
  // fencing: a heartbeat only says the writer is alive and owned the partition with its epoch
  // when it wrote it. Queued, not awaited; returns how many were queued.
  size_t heartbeat(const std::string& member_id, int32_t only = -1);

  uint64_t produced() const { return produced_.load(); }
  uint64_t dropped() const { return dropped_.load(); }

 private:
  const ClusterConfig& cc_;
  LogSink& log_;
  const std::string member_url_;
  rd_kafka_t* producer_ = nullptr;
  int32_t partitions_ = 0;
  Handles* fencing_ = nullptr;

  // A lists partition's transactional producer: one transaction at a time (mu); `dead` once
  // the broker fenced it or it failed fatally (its partition's writes are then dropped until
  // the partition is owned again).
  struct TxnProducer {
    rd_kafka_t* rk = nullptr;
    std::atomic<bool> ready{false};  // init_transactions succeeded
    std::atomic<bool> dead{false};
    // The last commit timed out and is still under way in librdkafka: the next write first
    // calls commit_transaction again to finish it (a new transaction cannot begin before).
    bool committing = false;  // under mu
    std::mutex mu;
    ~TxnProducer();
  };
  // Writes one record (a list, or a tombstone when `value` is null) to partition p, in a
  // transaction of p's producer when fencing. True once acknowledged (fencing) or queued.
  // A list below the newest version this member wrote for `topic` is not written: a
  // republish that took its list before a newer one was written (seen with fencing, whose
  // writes hold the partition for a commit round: a version went back on the lists topic).
  bool write(int32_t p, const std::string& topic, const std::string* value, uint64_t version);
  // Serialises check and produce of the writes without fencing (with fencing, TxnProducer::mu).
  std::mutex plain_mu_;
  std::mutex written_mu_;
  std::map<std::string, uint64_t> written_;  // topic -> newest version written (written_mu_)
  std::map<int32_t, std::shared_ptr<TxnProducer>> txn_;  // under mu_

  mutable std::shared_mutex mu_;
  std::map<int32_t, uint64_t> owned_;        // partition -> epoch
  std::map<std::string, uint64_t> deleted_;  // topic -> highest deleted version

  std::atomic<uint64_t> produced_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> tombstoned_{0};
};

}  // namespace hotkey::coordinator::kafka
