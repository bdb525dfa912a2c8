// librdkafka glue shared by the cluster's parts (docs/CLUSTER.md): the five handles a member
// runs, the partition rule of the reports and lists topics, record headers, a produce that
// awaits its delivery report, and the cluster's JSON log line. Stateless apart from Handles,
// which one owner creates once and destroys last.
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cluster_config.h"

namespace hotkey::coordinator::kafka {

// Names the member that wrote a lists or state record (its advertised URL).
inline constexpr const char* kMemberHeader = "hotkey.member";
inline constexpr const char* kReportVersionHeader = "hotkey.report.v";

int64_t wall_ms();
// One JSON object per line on stderr, stamped with ts_ms.
void log_line(const nlohmann::json& j);

// The reports and lists partition of data topic `topic` (the client transport writes reports
// there; the owner of that partition owns the topic).
int32_t partition_of(const std::string& topic, int32_t partitions);

// A partition list freed on scope exit.
struct PartitionList {
  rd_kafka_topic_partition_list_t* p;
  explicit PartitionList(int n) : p(rd_kafka_topic_partition_list_new(n)) {}
  explicit PartitionList(const rd_kafka_topic_partition_list_t* src)
      : p(rd_kafka_topic_partition_list_copy(src)) {}
  ~PartitionList() { rd_kafka_topic_partition_list_destroy(p); }
  PartitionList(const PartitionList&) = delete;
  PartitionList& operator=(const PartitionList&) = delete;
};

// The last value of header `name` of `m` (nullopt: absent).
std::optional<std::string> header(const rd_kafka_message_t* m, const char* name);

// The member's librdkafka handles, destroyed with it. create() once, before any thread uses them.
struct Handles {
  rd_kafka_t* producer = nullptr;  // lists, state and forwarded reports: idempotent, acks=all
  rd_kafka_t* consumer = nullptr;  // the group member (reports topic)
  rd_kafka_t* reader = nullptr;    // reads lists partitions to their end on assignment
  rd_kafka_t* tailer = nullptr;    // follows every lists partition (list reads, owners)
  rd_kafka_t* state = nullptr;     // applies the state topic (operator writes)

  Handles() = default;
  ~Handles();
  Handles(const Handles&) = delete;
  Handles& operator=(const Handles&) = delete;

  using RebalanceCb = void (*)(rd_kafka_t*, rd_kafka_resp_err_t, rd_kafka_topic_partition_list_t*,
                               void*);
  // The group consumer's rebalances go to `rebalance` with `opaque`. False and *error when a
  // setting is refused or a handle cannot be made.
  bool create(const ClusterConfig& cc, RebalanceCb rebalance, void* opaque, std::string* error);
};

// One message whose delivery report is awaited. `produced`: rd_kafka_producev's answer
// (nothing is awaited unless it is NO_ERROR); `acked`: the report came in time, with `err` its
// error and the record's partition and offset.
struct Sent {
  rd_kafka_resp_err_t produced = RD_KAFKA_RESP_ERR_NO_ERROR;
  bool acked = false;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  int32_t partition = -1;
  int64_t offset = -1;
  bool ok() const {
    return produced == RD_KAFKA_RESP_ERR_NO_ERROR && acked && err == RD_KAFKA_RESP_ERR_NO_ERROR;
  }
};
// Produces one record with one header on a producer made by Handles::create and waits up to
// `timeout` for its delivery report. Thread-safe.
Sent produce_and_wait(rd_kafka_t* producer, const std::string& topic, int32_t partition,
                      std::string_view key, std::string_view value, const char* header_name,
                      std::string_view header_value, std::chrono::milliseconds timeout);

}  // namespace hotkey::coordinator::kafka
