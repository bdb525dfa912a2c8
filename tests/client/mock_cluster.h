// The client's Kafka for its end-to-end tests: a real Apache Kafka (RealCluster, through
// scripts/kafka.sh) where a test exists to show Kafka behaviour, librdkafka's mock cluster
// (MockCluster: real Kafka protocol over loopback TCP, fault injection) where a test injects
// broker faults; plus a consumer that reads a topic back from the beginning.
#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hotkey/client/merge.h"
#include "support/real_kafka.h"

namespace hotkey::client::test {

// What the tests need of either cluster.
class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual std::string bootstraps() const = 0;
  virtual void create_topic(const std::string& topic, int partitions) = 0;
};

// A one-node Apache Kafka of the test's own.
class RealCluster : public Cluster {
 public:
  std::string bootstraps() const override { return kafka_.bootstrap(); }
  void create_topic(const std::string& topic, int partitions) override {
    kafka_.create_topic(topic, partitions);
  }

 private:
  test_support::RealKafka kafka_;
};

class MockCluster : public Cluster {
 public:
  explicit MockCluster(int brokers = 3) {
    char errstr[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr));
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (rk_ == nullptr) throw std::runtime_error(errstr);
    mc_ = rd_kafka_mock_cluster_new(rk_, brokers);
    if (mc_ == nullptr) throw std::runtime_error("rd_kafka_mock_cluster_new failed");
  }
  ~MockCluster() {
    rd_kafka_mock_cluster_destroy(mc_);
    rd_kafka_destroy(rk_);
  }
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;

  std::string bootstraps() const override { return rd_kafka_mock_cluster_bootstraps(mc_); }
  void create_topic(const std::string& topic, int partitions) override {
    if (rd_kafka_mock_topic_create(mc_, topic.c_str(), partitions, 1) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      throw std::runtime_error("cannot create topic " + topic);
    }
  }
  rd_kafka_mock_cluster_t* handle() { return mc_; }

 private:
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* mc_ = nullptr;
};

struct Consumed {
  std::string key;
  bool has_key = false;
  std::string value;
  int32_t partition = 0;
  int64_t offset = 0;
  std::optional<std::string> salt_header;
  std::optional<std::string> version_header;
  std::vector<std::pair<std::string, std::string>> headers;  // all of them, in order
  bool unsalted_header = false;                              // hotkey.unsalted (contract v2)

  // The record's logical key as a consumer recovers it (both merge contract versions).
  RecoveredKey recovered(std::string_view separator = kDefaultSeparator) const {
    MergeHeaders h;
    if (salt_header) h.salt = *salt_header;
    if (version_header) h.version = *version_header;
    h.unsalted = unsalted_header;
    return recover_logical_key(key, h, separator);
  }
};

// Reads `expected` records of `topic` (all partitions, from the beginning) or until the
// deadline passes.
inline std::vector<Consumed> consume_all(
    const std::string& bootstraps, const std::string& topic, int partitions, size_t expected,
    std::chrono::milliseconds deadline = std::chrono::seconds(20)) {
  char errstr[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps.c_str(), errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "group.id", "hotkey-test", errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof(errstr));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
  if (rk == nullptr) throw std::runtime_error(errstr);
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  std::vector<Consumed> out;
  auto end = std::chrono::steady_clock::now() + deadline;
  while (out.size() < expected && std::chrono::steady_clock::now() < end) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      Consumed c;
      if (m->key != nullptr) {
        c.has_key = true;
        c.key.assign(static_cast<const char*>(m->key), m->key_len);
      }
      if (m->payload != nullptr) c.value.assign(static_cast<const char*>(m->payload), m->len);
      c.partition = m->partition;
      c.offset = m->offset;
      rd_kafka_headers_t* hdrs = nullptr;
      if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const void* v = nullptr;
        size_t n = 0;
        if (rd_kafka_header_get_last(hdrs, "hotkey.salt", &v, &n) == RD_KAFKA_RESP_ERR_NO_ERROR) {
          c.salt_header = std::string(static_cast<const char*>(v), n);
        }
        if (rd_kafka_header_get_last(hdrs, "hotkey.version", &v, &n) ==
            RD_KAFKA_RESP_ERR_NO_ERROR) {
          c.version_header = std::string(static_cast<const char*>(v), n);
        }
        const char* name = nullptr;
        for (size_t i = 0;
             rd_kafka_header_get_all(hdrs, i, &name, &v, &n) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
          c.headers.emplace_back(name, std::string(static_cast<const char*>(v), n));
          if (std::string_view(name) == kUnsaltedHeader) c.unsalted_header = true;
        }
      }
      out.push_back(std::move(c));
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

// Low and high watermark of every partition, read through a fresh client ({-1, -1} where the
// query failed).
inline std::vector<std::pair<int64_t, int64_t>> watermarks(const std::string& bootstraps,
                                                           const std::string& topic,
                                                           int partitions) {
  char errstr[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps.c_str(), errstr, sizeof(errstr));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (rk == nullptr) throw std::runtime_error(errstr);
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int p = 0; p < partitions; ++p) {
    int64_t lo = 0;
    int64_t hi = 0;
    if (rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &lo, &hi, 5000) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      lo = hi = -1;
    }
    out.emplace_back(lo, hi);
  }
  rd_kafka_destroy(rk);
  return out;
}

// High watermark (end offset) of every partition; -1 where the query failed.
inline std::vector<int64_t> end_offsets(const std::string& bootstraps, const std::string& topic,
                                        int partitions) {
  std::vector<int64_t> out;
  for (const auto& [lo, hi] : watermarks(bootstraps, topic, partitions)) out.push_back(hi);
  return out;
}

// Records a consumer from the beginning can still read: the sum of (high - low watermark) over
// the partitions (the mock cluster drops old segments past a size limit, so a long run on a
// slow machine can hold fewer records than its end offsets count).
inline int64_t readable_records(const std::string& bootstraps, const std::string& topic,
                                int partitions) {
  int64_t total = 0;
  for (const auto& [lo, hi] : watermarks(bootstraps, topic, partitions)) total += hi - lo;
  return total;
}

}  // namespace hotkey::client::test
