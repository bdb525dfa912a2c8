#include <array>
#include <atomic>
#include <stdexcept>

#include "hotkey/client/rdkafka.h"

namespace hotkey::client {
namespace {

std::atomic<uint64_t> g_partitioner_uid{1};

// Last topics this thread routed, per partitioner: a hit avoids the name lookup.
struct TopicCacheEntry {
  uint64_t owner = 0;
  const rd_kafka_topic_t* rkt = nullptr;
  TopicId id = 0;
};
thread_local std::array<TopicCacheEntry, 8> t_topics;

Properties checked(const Properties& props) {
  ClientConfig c = parse_client_config(props);
  if (c.routing_mode == RoutingMode::kRekey && props.count("hotkey.routing.mode") != 0) {
    throw std::invalid_argument(
        "hotkey.routing.mode=rekey needs hotkey::Producer: a partitioner callback cannot change "
        "a record's key");
  }
  if (c.salt_policy == SaltPolicy::kValueHash) {
    throw std::invalid_argument(
        "hotkey.salt.policy=value_hash needs hotkey::Producer: a partitioner callback never sees "
        "the payload");
  }
  return props;
}

}  // namespace

RdkafkaPartitioner::RdkafkaPartitioner(const Properties& props)
    : client_(std::make_unique<Client>(checked(props))), uid_(g_partitioner_uid.fetch_add(1)) {}

RdkafkaPartitioner::~RdkafkaPartitioner() = default;

Client& RdkafkaPartitioner::client() noexcept { return *client_; }

void RdkafkaPartitioner::install(rd_kafka_topic_conf_t* topic_conf) {
  if (topic_conf == nullptr) throw std::invalid_argument("null topic configuration");
  rd_kafka_topic_conf_set_partitioner_cb(topic_conf, &RdkafkaPartitioner::partition);
  rd_kafka_topic_conf_set_opaque(topic_conf, this);
}

void RdkafkaPartitioner::install(rd_kafka_conf_t* conf) {
  if (conf == nullptr) throw std::invalid_argument("null configuration");
  rd_kafka_topic_conf_t* tconf = rd_kafka_conf_get_default_topic_conf(conf);
  if (tconf == nullptr) {
    tconf = rd_kafka_topic_conf_new();
    rd_kafka_conf_set_default_topic_conf(conf, tconf);  // conf takes ownership
    tconf = rd_kafka_conf_get_default_topic_conf(conf);
  }
  install(tconf);
}

TopicId RdkafkaPartitioner::topic_id(const rd_kafka_topic_t* rkt) {
  TopicCacheEntry& e = t_topics[(reinterpret_cast<uintptr_t>(rkt) >> 6) % t_topics.size()];
  if (e.owner == uid_ && e.rkt == rkt) return e.id;
  TopicId id = client_->topic(rd_kafka_topic_name(rkt));
  e = TopicCacheEntry{uid_, rkt, id};
  return id;
}

int32_t RdkafkaPartitioner::partition(const rd_kafka_topic_t* rkt, const void* key, size_t keylen,
                                      int32_t partition_cnt, void* rkt_opaque, void* msg_opaque) {
  auto* self = static_cast<RdkafkaPartitioner*>(rkt_opaque);
  if (self != nullptr && partition_cnt > 0) {
    try {
      TopicId id = self->topic_id(rkt);
      RouteDecision d = self->client_->route(id, key, keylen, {}, partition_cnt);
      if (d.partition >= 0 && d.partition < partition_cnt) return d.partition;
    } catch (...) {
      // Registration failed (out of memory, too many topics): route like librdkafka would.
      int32_t p = cold_partition(self->client_->family(), key, keylen, partition_cnt);
      if (p >= 0) return p;
    }
  }
  return rd_kafka_msg_partitioner_random(rkt, key, keylen, partition_cnt, rkt_opaque, msg_opaque);
}

RecoveredKey recover_logical_key(const rd_kafka_message_t* msg, std::string_view separator) {
  std::string_view key;
  if (msg->key != nullptr) key = {static_cast<const char*>(msg->key), msg->key_len};
  MergeHeaders merge;
  rd_kafka_headers_t* hdrs = nullptr;
  // rd_kafka_message_headers parses lazily and needs a non-const message; it does not change
  // the record's content.
  if (rd_kafka_message_headers(const_cast<rd_kafka_message_t*>(msg), &hdrs) ==
          RD_KAFKA_RESP_ERR_NO_ERROR &&
      hdrs != nullptr) {
    const void* val = nullptr;
    size_t size = 0;
    if (rd_kafka_header_get_last(hdrs, kSaltHeader.data(), &val, &size) ==
            RD_KAFKA_RESP_ERR_NO_ERROR &&
        val != nullptr) {
      merge.salt = std::string_view(static_cast<const char*>(val), size);
    }
    if (rd_kafka_header_get_last(hdrs, kVersionHeader.data(), &val, &size) ==
            RD_KAFKA_RESP_ERR_NO_ERROR &&
        val != nullptr) {
      merge.version = std::string_view(static_cast<const char*>(val), size);
    }
    merge.unsalted = rd_kafka_header_get_last(hdrs, kUnsaltedHeader.data(), &val, &size) ==
                     RD_KAFKA_RESP_ERR_NO_ERROR;
  }
  return recover_logical_key(key, merge, separator);
}

}  // namespace hotkey::client
