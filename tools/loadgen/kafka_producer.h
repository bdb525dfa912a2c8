// A plain librdkafka producer for one topic with the Java-compatible murmur2_random
// partitioner, counting delivery reports. The baselines send through it.
//
// Not thread-safe: produce, poll and flush from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strategy.h"

struct rd_kafka_s;
struct rd_kafka_topic_s;
struct rd_kafka_message_s;

namespace hotkey::loadgen {

class KafkaProducer {
 public:
  // Connects and waits up to 10 s for the topic's metadata; std::runtime_error otherwise.
  explicit KafkaProducer(const StrategyOptions& options);
  KafkaProducer(const KafkaProducer&) = delete;
  KafkaProducer& operator=(const KafkaProducer&) = delete;
  ~KafkaProducer();

  // False when the local queue is full. partition -1 leaves the choice to the murmur2_random
  // partitioner; `salt`, when given, is sent as the hotkey.salt / hotkey.version headers;
  // `unsalted` sends the hotkey.unsalted header (merge contract v2).
  struct SaltHeaders {
    uint32_t salt = 0;
    uint64_t version = 0;
  };
  bool produce(std::string_view key, std::string_view value, int32_t partition = -1,
               const SaltHeaders* salt = nullptr, bool unsalted = false);
  void poll(int timeout_ms);
  bool flush(int timeout_ms);
  int32_t partitions() const { return partitions_; }
  uint64_t delivered() const { return delivered_; }
  uint64_t failed() const { return failed_; }

 private:
  static void on_delivery(rd_kafka_s* rk, const rd_kafka_message_s* msg, void* opaque);

  rd_kafka_s* rk_ = nullptr;
  rd_kafka_topic_s* rkt_ = nullptr;
  std::string topic_;
  int32_t partitions_ = 0;
  uint64_t delivered_ = 0;
  uint64_t failed_ = 0;
};

// The options' shared Kafka settings (bootstrap, batching, extra kafka_props), in the order
// they apply: every strategy's librdkafka producer gets these.
std::vector<std::pair<std::string, std::string>> kafka_settings(const StrategyOptions& options);
// Applies kafka_settings() to a librdkafka configuration; std::invalid_argument on a property
// librdkafka rejects.
void apply_kafka_settings(struct rd_kafka_conf_s* conf, const StrategyOptions& options);

// Reads the topic's partition count from live metadata, waiting up to `timeout_ms` for the
// topic to appear; std::runtime_error when it does not.
int32_t wait_for_partitions(rd_kafka_s* rk, std::string_view topic, int timeout_ms);

}  // namespace hotkey::loadgen
