// The reports topic in both directions (docs/CLUSTER.md, "Reports"): a report posted over HTTP
// for a topic another member owns is written there as the client's kafka transport writes it
// (forward), and each report read from this member's partitions is checked against the wire
// contract and ingested (ingest). Thread-safe.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "config.h"
#include "coordinator_api.h"
#include "log_sink.h"

namespace hotkey::coordinator::kafka {

class ReportRelay {
 public:
  // Reports read from the reports topic go to `reports`; when a topic was deleted, `ownership`
  // says.
  ReportRelay(const CoordinatorConfig& config, ReportSink& reports, const Ownership& ownership)
      : config_(config), reports_(reports), ownership_(ownership) {}
  // Before any other call: the producer and the reports topic's partition count.
  void attach(rd_kafka_t* producer, int32_t partitions) {
    producer_ = producer;
    partitions_ = partitions;
  }

  // Writes `r` to its reports partition and waits (up to 5 s) for Kafka's acknowledgement;
  // kUnavailable (reason reports_topic) when it does not come. `wire`: `r`'s binary encoding as
  // received, written as is (empty: `r` is encoded).
  CallResult forward(const Report& r, std::string_view wire);
  // One record of the reports topic: ingested when it honours the wire contract (header
  // version, binary report, the topic's partition) and was not stamped before its topic's
  // last delete; skipped otherwise.
  void ingest(const rd_kafka_message_t* m);
  // `topic` was deleted at `at_ms` (wall clock): reports stamped at or before are skipped.
  void note_deleted(const std::string& topic, int64_t at_ms);

  uint64_t ingested() const { return ingested_.load(); }
  uint64_t forwarded() const { return forwarded_.load(); }
  uint64_t skipped() const { return skipped_.load(); }

 private:
  bool reported_before_delete(const std::string& topic, const rd_kafka_message_t* m);

  const CoordinatorConfig& config_;
  ReportSink& reports_;
  const Ownership& ownership_;
  rd_kafka_t* producer_ = nullptr;
  int32_t partitions_ = 0;

  // When each topic seen in reports was last deleted (0: never), from the store on first sight:
  // reports stamped before a delete are not ingested (a window rebuilt after an assignment
  // would otherwise bring the deleted topic back).
  std::mutex deleted_at_mu_;
  std::map<std::string, int64_t, std::less<>> deleted_at_;

  std::atomic<uint64_t> ingested_{0};
  std::atomic<uint64_t> forwarded_{0};
  std::atomic<uint64_t> skipped_{0};
};

}  // namespace hotkey::coordinator::kafka
