// librdkafka glue shared by the cluster's parts (docs/CLUSTER.md): the handles a member
// runs, record headers and a produce that awaits its delivery report. Stateless apart from
// Handles, which one owner creates once and destroys last.
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster_config.h"
#include "hotkey/kafka_contract.h"
#include "log_sink.h"

namespace hotkey::coordinator::kafka {

// The group consumer's defaults (an operator's kafka.* settings win): a session that outlasts a
// Kafka node's failover, and heartbeats often enough to notice a new group coordinator soon.
inline constexpr const char* kDefaultSessionTimeoutMs = "15000";
inline constexpr const char* kDefaultHeartbeatIntervalMs = "1000";

int64_t wall_ms();

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
std::optional<std::string> header(const rd_kafka_message_t* m, std::string_view name);

// The member's librdkafka handles, destroyed with it. create() once, before any thread uses them.
// Each --kafka-set setting reaches only the handles librdkafka applies it to (a consumer setting
// never reaches the producer, and the other way round); the coordinator's own defaults
// (linger.ms, fetch.wait.max.ms) give way to the operator's. librdkafka's log lines become
// `librdkafka` events of the LogSink; until release_log() they are held back, so a start that
// fails ends with its one error instead of librdkafka's retries.
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
  // The group consumer's rebalances go to `rebalance` with `opaque`; its client id names
  // `member_url` when given (group_client_id). False and *error when a setting is refused or a
  // handle cannot be made.
  bool create(const ClusterConfig& cc, LogSink& log, RebalanceCb rebalance, void* opaque,
              std::string* error, const std::string& member_url = "");
  // The start went well: writes the log events held since create(), and every later one at once.
  void release_log();
  // A transactional producer for lists partition `p` (transactional.id GROUP.lists.P), not yet
  // initialised; nullptr and *error when it cannot be made. The caller destroys it.
  rd_kafka_t* lists_producer(const ClusterConfig& cc, int32_t p, std::string* error);

  // Shared by the handles' callbacks (their opaque). Thread-safe.
  struct Context {
    LogSink* log = nullptr;
    RebalanceCb rebalance = nullptr;
    void* rebalance_opaque = nullptr;
    std::mutex mu;
    bool holding = true;
    std::vector<api::Json> held;  // at most kMaxHeld, the newest kept
  };

 private:
  Context context_;
};

// The group member's client id: the operator's client.id (default "hotkey-coordinator"), a
// space and the member's advertised URL, so that the group's description (DescribeConsumerGroups)
// says which coordinator each member is.
std::string group_client_id(const ClusterConfig& cc, const std::string& member_url);
// The advertised URL a group member's client id carries (empty: none).
std::string url_of_client_id(const std::string& client_id);

// librdkafka's scope of configuration property `name`: 'C' (consumers only), 'P' (producers
// only), '*' (both), or 0 when librdkafka does not list it. Read once from librdkafka's own table.
char property_scope(const std::string& name);

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
                      std::string_view key, std::string_view value, std::string_view header_name,
                      std::string_view header_value, std::chrono::milliseconds timeout);

}  // namespace hotkey::coordinator::kafka
