#include "kafka_producer.h"

#include <librdkafka/rdkafka.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace hotkey::loadgen {

std::vector<std::pair<std::string, std::string>> kafka_settings(const StrategyOptions& options) {
  std::vector<std::pair<std::string, std::string>> out{
      {"bootstrap.servers", options.bootstrap},
      // Batching as a throughput-minded producer would run it; the same for every strategy.
      {"linger.ms", "50"},
      {"queue.buffering.max.messages", "500000"},
      {"log_level", "3"}};
  for (const auto& [k, v] : options.kafka_props) out.emplace_back(k, v);
  return out;
}

void apply_kafka_settings(rd_kafka_conf_t* conf, const StrategyOptions& options) {
  char errstr[512];
  for (const auto& [name, value] : kafka_settings(options)) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
      throw std::invalid_argument("kafka property " + name + ": " + errstr);
    }
  }
}

int32_t wait_for_partitions(rd_kafka_t* rk, std::string_view topic, int timeout_ms) {
  const std::string name(topic);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, name.c_str(), nullptr);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string last_error = "no answer";
  int32_t partitions = 0;
  while (partitions == 0 && std::chrono::steady_clock::now() < deadline) {
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 2000);
    if (!err && md->topic_cnt == 1 && !md->topics[0].err) {
      partitions = md->topics[0].partition_cnt;
    } else {
      last_error = rd_kafka_err2str(err ? err : (md ? md->topics[0].err : err));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (md) rd_kafka_metadata_destroy(md);
  }
  rd_kafka_topic_destroy(rkt);
  if (partitions == 0) {
    throw std::runtime_error("metadata for topic " + name + ": " + last_error);
  }
  return partitions;
}

KafkaProducer::KafkaProducer(const StrategyOptions& options) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  try {
    apply_kafka_settings(conf, options);
    if (rd_kafka_conf_set(conf, "partitioner", "murmur2_random", errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
      throw std::invalid_argument(std::string("partitioner: ") + errstr);
    }
  } catch (...) {
    rd_kafka_conf_destroy(conf);
    throw;
  }
  rd_kafka_conf_set_dr_msg_cb(conf, &KafkaProducer::on_delivery);
  rd_kafka_conf_set_opaque(conf, this);
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk_) throw std::runtime_error(std::string("kafka producer: ") + errstr);
  try {
    partitions_ = wait_for_partitions(rk_, options.topic, 10000);
  } catch (...) {
    rd_kafka_destroy(rk_);
    throw;
  }
  rkt_ = rd_kafka_topic_new(rk_, options.topic.c_str(), nullptr);
  topic_ = options.topic;
}

KafkaProducer::~KafkaProducer() {
  if (rkt_) rd_kafka_topic_destroy(rkt_);
  if (rk_) rd_kafka_destroy(rk_);
}

bool KafkaProducer::produce(std::string_view key, std::string_view value, int32_t partition,
                            const SaltHeaders* salt, bool unsalted) {
  const int32_t part = partition < 0 ? RD_KAFKA_PARTITION_UA : partition;
  rd_kafka_resp_err_t err;
  if (salt) {
    // The two merge headers, built the cheapest way librdkafka's API allows: a list presized
    // for two, lengths given (no strlen), values formatted on the stack, the topic by handle
    // (by name, producev looks the topic up under the handle's lock on every call).
    static constexpr std::string_view kSalt = "hotkey.salt", kVersion = "hotkey.version";
    char s[16], v[24];
    const size_t s_len = static_cast<size_t>(std::to_chars(s, s + sizeof s, salt->salt).ptr - s);
    const size_t v_len = static_cast<size_t>(std::to_chars(v, v + sizeof v, salt->version).ptr - v);
    rd_kafka_headers_t* headers = rd_kafka_headers_new(2);
    rd_kafka_header_add(headers, kSalt.data(), static_cast<ssize_t>(kSalt.size()), s,
                        static_cast<ssize_t>(s_len));
    rd_kafka_header_add(headers, kVersion.data(), static_cast<ssize_t>(kVersion.size()), v,
                        static_cast<ssize_t>(v_len));
    err = rd_kafka_producev(rk_, RD_KAFKA_V_RKT(rkt_), RD_KAFKA_V_PARTITION(part),
                            RD_KAFKA_V_KEY(key.data(), key.size()),
                            RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers),
                            RD_KAFKA_V_END);
    if (err) rd_kafka_headers_destroy(headers);  // ownership passes only on success
  } else if (unsalted) {
    static constexpr std::string_view kUnsalted = "hotkey.unsalted";
    rd_kafka_headers_t* headers = rd_kafka_headers_new(1);
    rd_kafka_header_add(headers, kUnsalted.data(), static_cast<ssize_t>(kUnsalted.size()), "", 0);
    err = rd_kafka_producev(rk_, RD_KAFKA_V_RKT(rkt_), RD_KAFKA_V_PARTITION(part),
                            RD_KAFKA_V_KEY(key.data(), key.size()),
                            RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers),
                            RD_KAFKA_V_END);
    if (err) rd_kafka_headers_destroy(headers);
  } else {
    err = rd_kafka_producev(rk_, RD_KAFKA_V_RKT(rkt_), RD_KAFKA_V_PARTITION(part),
                            RD_KAFKA_V_KEY(key.data(), key.size()),
                            RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  }
  if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) return false;
  if (err) {
    if (failed_ < 5) {
      std::fprintf(stderr, "hotkey-loadgen: produce to partition %d: %s\n", partition,
                   rd_kafka_err2str(err));
    }
    ++failed_;
  }
  return true;
}

void KafkaProducer::poll(int timeout_ms) { rd_kafka_poll(rk_, timeout_ms); }

bool KafkaProducer::flush(int timeout_ms) { return rd_kafka_flush(rk_, timeout_ms) == 0; }

void KafkaProducer::on_delivery(rd_kafka_t*, const rd_kafka_message_t* msg, void* opaque) {
  auto* self = static_cast<KafkaProducer*>(opaque);
  if (msg->err) {
    if (self->failed_ < 5) {
      std::fprintf(stderr, "hotkey-loadgen: delivery to partition %d failed: %s\n", msg->partition,
                   rd_kafka_err2str(msg->err));
    }
    ++self->failed_;
  } else {
    ++self->delivered_;
  }
}

}  // namespace hotkey::loadgen
