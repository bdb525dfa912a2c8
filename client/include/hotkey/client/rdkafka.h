// librdkafka integration points that need librdkafka's types: the route-mode partitioner
// callback an existing producer adopts through its configuration object, and logical-key
// recovery from a consumed rd_kafka_message_t.
#pragma once

#include <librdkafka/rdkafka.h>

#include <memory>
#include <optional>

#include "hotkey/client/client.h"
#include "hotkey/client/merge.h"

namespace hotkey::client {

// A librdkafka partitioner callback in `route` mode: hot keys go to a salt of their verified
// table, everything else exactly where the family's librdkafka partitioner puts it; records
// without a key stay with librdkafka (sticky partitioning, or random when it is disabled).
// Owns a Client (sampler, reporter, subscriber). Thread-safe; it must outlive every producer
// it is installed on. The callback takes the topic opaque, so the application must not set one
// of its own on topics using it.
//
// Records keep their key (route mode), so no headers are added: librdkafka does not let a
// partitioner or interceptor change a record. Use hotkey::Producer for headers or rekey mode.
class RdkafkaPartitioner {
 public:
  // hotkey.* properties; the family is hotkey.hash (default crc32, librdkafka's default
  // consistent_random). std::invalid_argument for bad properties, for
  // hotkey.routing.mode=rekey and for hotkey.salt.policy=value_hash (a partitioner never sees
  // the payload).
  explicit RdkafkaPartitioner(const Properties& props);
  ~RdkafkaPartitioner();
  RdkafkaPartitioner(const RdkafkaPartitioner&) = delete;
  RdkafkaPartitioner& operator=(const RdkafkaPartitioner&) = delete;

  // Sets the callback (and this object as topic opaque) on a topic configuration.
  void install(rd_kafka_topic_conf_t* topic_conf);
  // The same on the default topic configuration of a global configuration (created when
  // absent), so every topic the producer uses is routed.
  void install(rd_kafka_conf_t* conf);

  Client& client() noexcept;

  // The callback itself, as librdkafka calls it (rkt_opaque is the RdkafkaPartitioner).
  static int32_t partition(const rd_kafka_topic_t* rkt, const void* key, size_t keylen,
                           int32_t partition_cnt, void* rkt_opaque, void* msg_opaque);

 private:
  TopicId topic_id(const rd_kafka_topic_t* rkt);
  std::unique_ptr<Client> client_;
  uint64_t uid_;
};

// The logical key, salt and list version of a consumed record (headers first, then a key
// suffix; see merge.h; both contract versions). Reads the hotkey.salt / hotkey.version /
// hotkey.unsalted headers of `msg`.
RecoveredKey recover_logical_key(const rd_kafka_message_t* msg,
                                 std::string_view separator = kDefaultSeparator);

}  // namespace hotkey::client
