// The state topic (docs/CLUSTER.md, "Operator state"): operator writes (pin, unpin, deny, allow,
// delete_topic) as records every member applies in order to its own store, with the applied
// offset checkpointed in the same store batch. A write through this member crosses into the core
// once (Ownership::apply_operator, on the state thread); who owns the topic and the owner's list
// that shows the write come from the lists writer and tailer. Thread-safe: write() and
// request_delete() from any thread; resume() once at start, then run() on one thread until the
// stop flag is set.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "cluster_config.h"
#include "coordinator_api.h"
#include "lists_tailer.h"
#include "lists_writer.h"
#include "log_sink.h"
#include "state_store.h"

namespace hotkey::coordinator::kafka {

class StateLog {
 public:
  // Records are applied through `ownership`; checkpoints and the seed's marks are kept in
  // `store`; the seed reads this member's pins, denies and policies from `reads`.
  StateLog(const ClusterConfig& cc, Ownership& ownership, const Reads& reads, StateStore& store,
           const ListsWriter& writer, ListsTailer& tailer, LogSink& log, std::string member_url,
           const std::atomic<bool>& stop)
      : cc_(cc),
        ownership_(ownership),
        reads_(reads),
        store_(store),
        writer_(writer),
        tailer_(tailer),
        log_(log),
        member_url_(std::move(member_url)),
        stop_(stop) {}
  // Before any other call: the producer, the state topic's consumer and its partition count.
  void attach(rd_kafka_t* producer, rd_kafka_t* consumer, int32_t partitions) {
    producer_ = producer;
    consumer_ = consumer;
    partitions_ = partitions;
  }

  // Assigns the state topic from the checkpoints in the store and applies it to its end (up to
  // 30 s), so a member plans with every pin it can know before it owns anything.
  void resume();
  // After resume(), on a data directory's first start in cluster mode (a single node upgraded:
  // docs/CLUSTER.md "Upgrade from a single node"): the pins and denies this member holds that
  // the state topic does not mention are written there (acks=all, keeping their reason, author
  // and time) and applied, so every member has them and they outlive this one. Done once per
  // data directory (recorded in the store; a start that failed midway tries again). False and
  // *error when Kafka did not take them.
  bool seed(std::string* error);
  // Applies records as they come until the stop flag is set.
  void run() { apply(false, std::chrono::steady_clock::time_point::max()); }
  // An operator write: acknowledged once Kafka has it (acks=all) and this member applied it;
  // the answer is the apply's result, with the version that shows the change (on a member that
  // does not own the topic, the owner's first list with it, read by the tailer).
  CallResult write(const OperatorOp& op);
  // The owner's idle expiry: the delete_topic record is written without waiting, at most once
  // per topic every 30 s until a member applied it.
  void request_delete(const OperatorOp& op);
  // The topic was deleted: a later expiry of a topic of that name is requested afresh.
  void forget_expiry(const std::string& topic);

 private:
  // Applies records from the checkpoint on; with `until_end`, returns once the high watermarks
  // taken at the start are reached (or the deadline passes: false).
  bool apply(bool until_end, std::chrono::steady_clock::time_point deadline);
  void apply_record(const rd_kafka_message_t* m);

  const ClusterConfig& cc_;
  Ownership& ownership_;
  const Reads& reads_;
  StateStore& store_;
  const ListsWriter& writer_;
  ListsTailer& tailer_;
  LogSink& log_;
  const std::string member_url_;
  const std::atomic<bool>& stop_;
  rd_kafka_t* producer_ = nullptr;
  rd_kafka_t* consumer_ = nullptr;
  int32_t partitions_ = 0;

  // Next offset to apply per partition, and the results awaited by writers.
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int32_t, int64_t> next_;
  std::map<std::pair<int32_t, int64_t>, CallResult> results_;

  // seed()'s part of resume() (one thread, before run()): whether this start seeds, and the
  // record keys the state topic held, read while resuming.
  bool seeding_ = false;
  bool collect_keys_ = false;
  bool resumed_to_end_ = false;
  std::set<std::string> keys_in_topic_;

  std::mutex expiry_mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> expiry_requested_;
};

}  // namespace hotkey::coordinator::kafka
