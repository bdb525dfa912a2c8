// The client core with hotkey.transport=kafka against the librdkafka mock cluster: lists are
// written to the lists topic by hand here (no coordinator), reports are read back from the
// reports topic. Contract: docs/CLUSTER.md.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "hotkey/client/client.h"
#include "hotkey/client/producer.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/kafka_contract.h"
#include "hotkey/report.h"
#include "mock_cluster.h"
#include "test_util.h"

namespace hotkey::client {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::make_list;

constexpr int kMetaPartitions = 6;  // reports and lists topics (co-partitioned)
constexpr int kDataPartitions = 8;
// Kafka protocol API keys (librdkafka's RD_KAFKAP_* are in a private header).
constexpr int16_t kProduceApi = 0;
constexpr int16_t kFetchApi = 1;

// The partition of a keyed record under librdkafka's murmur2_random: the oracle for where a
// topic's reports and lists live.
int32_t meta_partition(const std::string& topic) {
  return rd_kafka_msg_partitioner_murmur2_random(nullptr, topic.data(), topic.size(),
                                                 kMetaPartitions, nullptr, nullptr);
}

// Writes records to the lists topic by hand, as an owning coordinator does: key = data topic,
// partition set explicitly, value = list JSON or null (tombstone).
class ListWriter {
 public:
  explicit ListWriter(const std::string& bootstraps) {
    char errstr[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps.c_str(), errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "enable.idempotence", "true", errstr, sizeof(errstr));
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (rk_ == nullptr) throw std::runtime_error(errstr);
  }
  ~ListWriter() { rd_kafka_destroy(rk_); }

  void write(const std::string& topic, const std::optional<std::string>& value,
             std::optional<int32_t> partition = std::nullopt) {
    int32_t p = partition ? *partition : meta_partition(topic);
    char* payload = value ? const_cast<char*>(value->data()) : nullptr;
    size_t len = value ? value->size() : 0;
    rd_kafka_resp_err_t err = rd_kafka_producev(
        rk_, RD_KAFKA_V_TOPIC("__hotkey_lists"), RD_KAFKA_V_PARTITION(p),
        RD_KAFKA_V_KEY(topic.data(), topic.size()), RD_KAFKA_V_VALUE(payload, len),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    ASSERT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR);
    ASSERT_EQ(rd_kafka_flush(rk_, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  void write(const HotKeyList& list) { write(list.topic, list_to_json(list)); }

 private:
  rd_kafka_t* rk_ = nullptr;
};

// On a real Apache Kafka of the test's own; KafkaTransportFaultTest on the mock cluster, for
// the tests that take brokers down or inject errors.
class KafkaTransportTest : public ::testing::Test {
 protected:
  KafkaTransportTest() : KafkaTransportTest(std::make_unique<test::RealCluster>()) {}
  explicit KafkaTransportTest(std::unique_ptr<test::Cluster> cluster)
      : cluster_(std::move(cluster)) {}
  void SetUp() override {
    cluster_->create_topic("__hotkey_reports", kMetaPartitions);
    cluster_->create_topic("__hotkey_lists", kMetaPartitions);
    cluster_->create_topic("orders", kDataPartitions);
    cluster_->create_topic("clicks", kDataPartitions);
  }

  Properties props(const std::string& topics) {
    return Properties{{"bootstrap.servers", cluster_->bootstraps()},
                      {"hotkey.transport", "kafka"},
                      {"hotkey.producer.id", "p-1"},
                      {"hotkey.hash", "murmur2"},
                      {"hotkey.topics", topics},
                      {"hotkey.report.interval.ms", "100"}};
  }

  HotKeyList list(const std::string& topic, uint64_t version, std::vector<std::string> keys) {
    return make_list(topic, version, kDataPartitions, HashFamily::kMurmur2, keys, 3);
  }

  std::unique_ptr<test::Cluster> cluster_;
};

class KafkaTransportFaultTest : public KafkaTransportTest {
 protected:
  KafkaTransportFaultTest() : KafkaTransportTest(std::make_unique<test::MockCluster>(3)) {}
  rd_kafka_mock_cluster_t* mock() { return static_cast<test::MockCluster&>(*cluster_).handle(); }
};

TEST_F(KafkaTransportTest, ReadsTheLogFromTheBeginningThenTails) {
  ListWriter w(cluster_->bootstraps());
  w.write(list("orders", 1, {"a"}));
  w.write(list("orders", (7ull << 32) | 2, {"a", "b"}));
  Client c(props("orders"));
  TopicId id = *c.router().find_topic("orders");
  ASSERT_TRUE(c.wait_for_version(id, (7ull << 32) | 2, 30s));
  EXPECT_EQ(c.router().list(id)->keys.size(), 2u);
  // Tailing: a newer version written after the client caught up.
  w.write(list("orders", (7ull << 32) | 3, {"c"}));
  ASSERT_TRUE(c.wait_for_version(id, (7ull << 32) | 3, 30s));
  ASSERT_EQ(c.router().list(id)->keys.size(), 1u);
  EXPECT_EQ(c.router().list(id)->keys[0].key, "c");
  // The list routes: "c" is salted over its verified table.
  std::set<int32_t> parts;
  for (int i = 0; i < 30; ++i) {
    RouteDecision d = c.route(id, "c", 1, "", kDataPartitions);
    ASSERT_TRUE(d.salted);
    EXPECT_EQ(d.version, (7ull << 32) | 3);
    parts.insert(d.partition);
  }
  EXPECT_EQ(parts.size(), 3u);
}

TEST_F(KafkaTransportTest, LowerVersionsInvalidSaltsAndForeignListsAreIgnored) {
  ListWriter w(cluster_->bootstraps());
  Client c(props("orders"));
  TopicId id = *c.router().find_topic("orders");
  const uint64_t v = (5ull << 32) | 10;
  w.write(list("orders", v, {"a"}));
  ASSERT_TRUE(c.wait_for_version(id, v, 30s));

  // A zombie owner's lower version, written after the current one.
  w.write(list("orders", (4ull << 32) | 99, {"zombie"}));
  // A salt that does not recompute to its partition (higher version, so only validation can
  // refuse it).
  HotKeyList bad = list("orders", v + 5, {"tampered"});
  bad.keys[0].salts[0].partition = (bad.keys[0].salts[0].partition + 1) % kDataPartitions;
  std::string bad_json = list_to_json(bad);
  w.write("orders", bad_json);
  // Another topic's list under this topic's key, and garbage.
  w.write("orders", list_to_json(list("clicks", v + 6, {"x"})));
  w.write("orders", std::string("{not json"));
  // Then a good newer one: everything before it was seen and refused.
  w.write(list("orders", v + 7, {"good"}));
  ASSERT_TRUE(c.wait_for_version(id, v + 7, 30s));
  EXPECT_EQ(c.router().version(id), v + 7);
  EXPECT_EQ(c.router().list(id)->keys[0].key, "good");
  ClientStats s = c.stats();
  EXPECT_EQ(s.list_errors, 4u);
  EXPECT_EQ(s.list_updates, 2u);
}

TEST_F(KafkaTransportTest, TombstoneRemovesTheListAndKeepsTheVersionFloor) {
  ListWriter w(cluster_->bootstraps());
  Client c(props("orders"));
  TopicId id = *c.router().find_topic("orders");
  w.write(list("orders", 100, {"a"}));
  ASSERT_TRUE(c.wait_for_version(id, 100, 30s));
  w.write("orders", std::nullopt);
  ASSERT_TRUE(eventually([&] { return c.router().list(id) == nullptr; }, 30s));
  EXPECT_FALSE(c.route(id, "a", 1, "", kDataPartitions).salted);
  EXPECT_EQ(c.router().version(id), 100u);
  // A record at or below the floor is still refused; a newer one brings the topic back.
  w.write(list("orders", 99, {"old"}));
  w.write(list("orders", 101, {"b"}));
  ASSERT_TRUE(eventually([&] { return c.router().list(id) != nullptr; }, 30s));
  EXPECT_EQ(c.router().list(id)->keys[0].key, "b");
}

TEST_F(KafkaTransportTest, TopicAddedLaterOnAnAssignedPartitionGetsItsCurrentList) {
  // Two topics whose lists share one partition: the second is registered after the partition
  // was read, and starts from the newest record read so far.
  std::string first = "orders";
  std::string second;
  for (int i = 0; second.empty(); ++i) {
    std::string t = "t" + std::to_string(i);
    if (meta_partition(t) == meta_partition(first)) second = t;
  }
  cluster_->create_topic(second, kDataPartitions);
  ListWriter w(cluster_->bootstraps());
  w.write(list(second, 40, {"s"}));
  w.write(list(second, 41, {"s", "t"}));
  w.write(list(first, 7, {"a"}));
  Client c(props(first));
  TopicId id1 = *c.router().find_topic(first);
  ASSERT_TRUE(c.wait_for_version(id1, 7, 30s));
  TopicId id2 = c.topic(second);
  ASSERT_TRUE(c.wait_for_version(id2, 41, 30s));
  EXPECT_EQ(c.router().list(id2)->keys.size(), 2u);
  // And a topic on another partition, registered late, is read from its beginning.
  std::string third;
  for (int i = 0; third.empty(); ++i) {
    std::string t = "u" + std::to_string(i);
    if (meta_partition(t) != meta_partition(first)) third = t;
  }
  w.write(list(third, 3, {"z"}));
  TopicId id3 = c.topic(third);
  ASSERT_TRUE(c.wait_for_version(id3, 3, 30s));
}

// Reads the reports topic: every record must be keyed by its data topic, on the partition
// murmur2 gives that key, carry the format header and decode.
struct ReadReport {
  std::string key;
  int32_t partition = 0;
  std::optional<std::string> version_header;
  Report report;
};

std::vector<ReadReport> read_reports(const std::string& bootstraps, size_t at_least,
                                     std::chrono::milliseconds deadline) {
  std::vector<ReadReport> out;
  auto end = std::chrono::steady_clock::now() + deadline;
  char errstr[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps.c_str(), errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "group.id", "report-reader", errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof(errstr));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(kMetaPartitions);
  for (int p = 0; p < kMetaPartitions; ++p) {
    rd_kafka_topic_partition_list_add(parts, "__hotkey_reports", p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  while (out.size() < at_least && std::chrono::steady_clock::now() < end) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ReadReport r;
      if (m->key != nullptr) r.key.assign(static_cast<const char*>(m->key), m->key_len);
      r.partition = m->partition;
      rd_kafka_headers_t* hdrs = nullptr;
      const void* v = nullptr;
      size_t n = 0;
      if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
          rd_kafka_header_get_last(hdrs, "hotkey.report.v", &v, &n) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        r.version_header = std::string(static_cast<const char*>(v), n);
      }
      r.report =
          decode_report_binary(std::string_view(static_cast<const char*>(m->payload), m->len));
      out.push_back(std::move(r));
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

TEST_F(KafkaTransportTest, ReportsAreProducedKeyedByTopicOnTheirMurmur2Partition) {
  std::map<std::string, uint64_t> sent;
  {
    Client c(props("orders,clicks"));
    for (const std::string t : {"orders", "clicks"}) {
      TopicId id = c.topic(t);
      for (int i = 0; i < 500; ++i) {
        std::string key = i % 2 == 0 ? "hot" : "k" + std::to_string(i);
        c.route(id, key.data(), key.size(), "", kDataPartitions);
        ++sent[t];
      }
    }
    c.report_now();
    ASSERT_TRUE(eventually([&] { return c.stats().reports_sent >= 2; }, 30s));
  }
  auto reports = read_reports(cluster_->bootstraps(), 2, 30s);
  ASSERT_GE(reports.size(), 2u);
  std::map<std::string, uint64_t> total;
  for (const ReadReport& r : reports) {
    EXPECT_EQ(r.key, r.report.topic);
    EXPECT_EQ(r.partition, meta_partition(r.key));
    EXPECT_EQ(r.version_header, std::optional<std::string>("1"));
    EXPECT_EQ(r.report.producer, "p-1");
    EXPECT_EQ(r.report.partitions, kDataPartitions);
    EXPECT_EQ(r.report.hash, HashFamily::kMurmur2);
    total[r.key] += r.report.total;
    if (r.report.total > 0) {
      EXPECT_EQ(r.report.items.front().key, "hot");
    }
  }
  EXPECT_EQ(total, sent);
}

TEST_F(KafkaTransportTest, WrapperInheritsTheProducersClusterSettings) {
  // hotkey::Producer with only bootstrap.servers: the transport reuses it, reports arrive and
  // lists are followed without any hotkey.coordinator.url.
  ListWriter w(cluster_->bootstraps());
  w.write(list("orders", 12, {"hot"}));
  hotkey::Producer producer({{"bootstrap.servers", cluster_->bootstraps()},
                             {"partitioner", "murmur2_random"},
                             {"hotkey.transport", "kafka"},
                             {"hotkey.topics", "orders"}});
  TopicId id = *producer.client().router().find_topic("orders");
  ASSERT_TRUE(producer.client().wait_for_version(id, 12, 30s));
  // Salting starts once librdkafka has the topic's partition count (its first metadata answer).
  ASSERT_TRUE(eventually(
      [&] {
        EXPECT_TRUE(producer.produce("orders", "hot", "v").ok());
        producer.poll(0);
        return producer.stats().topics[0].salted > 0;
      },
      30s));
  ASSERT_EQ(producer.flush(30000).error, 0);
  producer.client().report_now();
  auto reports = read_reports(cluster_->bootstraps(), 1, 30s);
  ASSERT_GE(reports.size(), 1u);
  EXPECT_EQ(reports[0].key, "orders");
}

TEST_F(KafkaTransportFaultTest, SurvivesBrokerFaultsWithoutLosingOrRepeatingReports) {
  ListWriter w(cluster_->bootstraps());
  Properties p = props("orders");
  Client c(p);
  TopicId id = *c.router().find_topic("orders");
  w.write(list("orders", 1, {"a"}));
  ASSERT_TRUE(c.wait_for_version(id, 1, 30s));
  rd_kafka_mock_cluster_t* mc = mock();
  const int32_t part = meta_partition("orders");

  auto send_some = [&](int n) {
    for (int i = 0; i < n; ++i) c.route(id, "k", 1, "", kDataPartitions);
  };
  // 1. Leader moves of both partitions the client uses.
  send_some(100);
  for (int32_t leader : {2, 3, 1}) {
    rd_kafka_mock_partition_set_leader(mc, "__hotkey_lists", part, leader);
    rd_kafka_mock_partition_set_leader(mc, "__hotkey_reports", part, leader);
    std::this_thread::sleep_for(300ms);
    send_some(100);
  }
  w.write(list("orders", 2, {"b"}));
  ASSERT_TRUE(c.wait_for_version(id, 2, 60s));
  // 2. Request errors on produce and fetch (retriable: librdkafka retries them).
  rd_kafka_mock_push_request_errors(mc, kProduceApi, 3, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
                                    RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                    RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
  rd_kafka_mock_push_request_errors(mc, kFetchApi, 2, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                    RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
  send_some(100);
  w.write(list("orders", 3, {"c"}));
  ASSERT_TRUE(c.wait_for_version(id, 3, 60s));
  // 3. The leader broker down for a few seconds while the client keeps sending.
  rd_kafka_mock_broker_set_down(mc, 1);
  for (int i = 0; i < 20; ++i) {
    send_some(10);
    std::this_thread::sleep_for(150ms);
  }
  rd_kafka_mock_broker_set_up(mc, 1);
  w.write(list("orders", 4, {"d"}));
  ASSERT_TRUE(c.wait_for_version(id, 4, 60s));
  c.report_now();
  ASSERT_TRUE(eventually(
      [&] {
        ClientStats s = c.stats();
        return s.reports_sent >= 3;
      },
      60s));
  c.report_now();
  ClientStats s = c.stats();
  EXPECT_EQ(s.reports_dropped, 0u);
  auto reports = read_reports(cluster_->bootstraps(), s.reports_sent, 60s);
  // Every report delivered exactly once (the idempotent producer), none lost: totals add up to
  // every record routed.
  std::set<uint64_t> seqs;
  uint64_t total = 0;
  for (const ReadReport& r : reports) {
    EXPECT_TRUE(seqs.insert(r.report.seq).second) << "duplicate report seq " << r.report.seq;
    total += r.report.total;
  }
  EXPECT_EQ(reports.size(), s.reports_sent);
  EXPECT_EQ(total, 100u * 5 + 200u);
  EXPECT_EQ(c.router().version(id), 4u);
}

TEST_F(KafkaTransportFaultTest, ExpiredPolicyPlainFollowsBrokerReachability) {
  ListWriter w(cluster_->bootstraps());
  Properties p = props("orders");
  p["hotkey.list.ttl.ms"] = "1500";
  p["hotkey.list.expired.policy"] = "plain";
  Client c(p);
  TopicId id = *c.router().find_topic("orders");
  w.write(list("orders", 9, {"a"}));
  ASSERT_TRUE(c.wait_for_version(id, 9, 30s));
  EXPECT_FALSE(c.router().plain(id));
  // A quiet but reachable log is not an outage.
  std::this_thread::sleep_for(3s);
  EXPECT_FALSE(c.router().plain(id));
  rd_kafka_mock_cluster_t* mc = mock();
  for (int b = 1; b <= 3; ++b) rd_kafka_mock_broker_set_down(mc, b);
  ASSERT_TRUE(eventually([&] { return c.router().plain(id); }, 30s));
  EXPECT_FALSE(c.route(id, "a", 1, "", kDataPartitions).salted);
  for (int b = 1; b <= 3; ++b) rd_kafka_mock_broker_set_up(mc, b);
  ASSERT_TRUE(eventually([&] { return !c.router().plain(id); }, 60s));
  EXPECT_TRUE(c.route(id, "a", 1, "", kDataPartitions).salted);
}

// ---- staleness and local tables (docs/CLIENT.md, "Local tables") ------------------------------

// The owner of a lists partition as a coordinator member writes its heartbeat: key "/owner",
// {"v":1,...} every `interval` on that partition (by hand here, like the lists above).
class OwnerHeartbeat {
 public:
  OwnerHeartbeat(const std::string& bootstraps, int32_t partition,
                 std::chrono::milliseconds interval, int version = 1)
      : writer_(bootstraps),
        partition_(partition),
        interval_(interval),
        version_(version),
        thread_([this] { run(); }) {}
  ~OwnerHeartbeat() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    for (uint64_t n = 0; !stop_; ++n) {
      const nlohmann::json beat{{"v", version_},
                                {"owner", "http://member-1:8470"},
                                {"partition", partition_},
                                {"epoch", 3},
                                {"at_ms", 1700000000000 + n},  // another host's clock: unused
                                {"interval_ms", interval_.count()}};
      writer_.write(std::string(kOwnerHeartbeatKey), beat.dump(), partition_);
      std::this_thread::sleep_for(interval_);
    }
  }
  ListWriter writer_;
  const int32_t partition_;
  const std::chrono::milliseconds interval_;
  const int version_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Records of `surge` (half of them) and 400 background keys, sent from a thread.
class SurgeTraffic {
 public:
  SurgeTraffic(Client& c, TopicId id, std::string surge)
      : c_(c), id_(id), surge_(std::move(surge)), thread_([this] { run(); }) {}
  ~SurgeTraffic() {
    stop_ = true;
    thread_.join();
  }

 private:
  void run() {
    for (uint64_t i = 0; !stop_; ++i) {
      for (int j = 0; j < 100; ++j) {
        const std::string key = j % 2 == 0 ? surge_ : "u" + std::to_string((i * 100 + j) % 400);
        c_.route(id_, key.data(), key.size(), "", kDataPartitions);
      }
      std::this_thread::sleep_for(5ms);
    }
  }
  Client& c_;
  TopicId id_;
  std::string surge_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

const TopicStats& topic_stats(const ClientStats& s, const std::string& topic) {
  for (const auto& t : s.topics) {
    if (t.topic == topic) return t;
  }
  throw std::runtime_error("no stats for " + topic);
}

TEST_F(KafkaTransportTest, OwnerHeartbeatsSilenceMakesATopicStaleAndTheyAreNeverAList) {
  ListWriter w(cluster_->bootstraps());
  ASSERT_NE(meta_partition("orders"), meta_partition("payments"));
  // History: heartbeats of an owner long gone, read before the client reached the end of the
  // partition. They never start the clock.
  {
    OwnerHeartbeat old(cluster_->bootstraps(), meta_partition("orders"), 50ms);
    std::this_thread::sleep_for(300ms);
  }
  w.write(list("orders", (3ull << 32) | 1, {"listed"}));
  w.write(list("payments", 2, {"listed"}));
  Properties p = props("orders,payments");
  p["hotkey.list.stale.ms"] = "1000";
  Client c(p);
  TopicId orders = *c.router().find_topic("orders");
  TopicId payments = *c.router().find_topic("payments");
  ASSERT_TRUE(c.wait_for_version(orders, (3ull << 32) | 1, 30s));
  ASSERT_TRUE(c.wait_for_version(payments, 2, 30s));
  SurgeTraffic surge_orders(c, orders, "surge");
  SurgeTraffic surge_payments(c, payments, "surge");
  std::this_thread::sleep_for(2500ms);  // well past the bound: the history did not count
  EXPECT_FALSE(topic_stats(c.stats(), "orders").stale);
  EXPECT_EQ(topic_stats(c.stats(), "orders").local_keys, 0u);

  {
    OwnerHeartbeat owner(cluster_->bootstraps(), meta_partition("orders"), 200ms);
    std::this_thread::sleep_for(2500ms);
    EXPECT_FALSE(topic_stats(c.stats(), "orders").stale);
    EXPECT_EQ(c.stats().list_errors, 0u);  // "/owner" is never read as a list
  }
  // The owner stopped beating (killed): the topic is stale within the bound; the broker and
  // the partition are reachable all along, so that is the only reason.
  ASSERT_TRUE(eventually([&] { return topic_stats(c.stats(), "orders").local_keys == 1; }, 30s));
  EXPECT_TRUE(topic_stats(c.stats(), "orders").stale);
  std::set<int32_t> parts;
  for (int i = 0; i < 300; ++i) {
    RouteDecision d = c.route(orders, "surge", 5, "", kDataPartitions);
    EXPECT_TRUE(d.salted);
    EXPECT_EQ(d.version, kLocalTableVersionBit + ((3ull << 32) | 1));
    parts.insert(d.partition);
  }
  EXPECT_GE(parts.size(), 4u);
  // A partition that never carried heartbeats (an older coordinator) is never judged by them.
  EXPECT_FALSE(topic_stats(c.stats(), "payments").stale);
  EXPECT_EQ(topic_stats(c.stats(), "payments").local_keys, 0u);
  // Heartbeats of another format version are not this client's: still stale.
  {
    OwnerHeartbeat other(cluster_->bootstraps(), meta_partition("orders"), 200ms, 2);
    std::this_thread::sleep_for(1500ms);
    EXPECT_TRUE(topic_stats(c.stats(), "orders").stale);
  }
  // The new owner takes over: it beats at once, and its list (a higher epoch) wins.
  OwnerHeartbeat owner(cluster_->bootstraps(), meta_partition("orders"), 200ms);
  w.write(list("orders", (4ull << 32) | 1, {"listed", "surge"}));
  ASSERT_TRUE(c.wait_for_version(orders, (4ull << 32) | 1, 30s));
  ASSERT_TRUE(eventually([&] { return !topic_stats(c.stats(), "orders").stale; }, 30s));
  EXPECT_EQ(topic_stats(c.stats(), "orders").local_keys, 0u);
  RouteDecision d = c.route(orders, "surge", 5, "", kDataPartitions);
  EXPECT_TRUE(d.salted);
  EXPECT_EQ(d.version, (4ull << 32) | 1);
  EXPECT_EQ(c.stats().list_errors, 0u);
}

TEST_F(KafkaTransportFaultTest, ALostListsPartitionMakesTheTopicStaleUntilContactIsBack) {
  ListWriter w(cluster_->bootstraps());
  Properties p = props("orders");
  p["hotkey.list.stale.ms"] = "1000";
  Client c(p);
  TopicId id = *c.router().find_topic("orders");
  w.write(list("orders", 9, {"a"}));
  ASSERT_TRUE(c.wait_for_version(id, 9, 30s));
  SurgeTraffic traffic(c, id, "surge");
  // A quiet but reachable log is not stale.
  std::this_thread::sleep_for(3s);
  EXPECT_FALSE(topic_stats(c.stats(), "orders").stale);
  EXPECT_EQ(topic_stats(c.stats(), "orders").local_keys, 0u);
  rd_kafka_mock_cluster_t* mc = mock();
  for (int b = 1; b <= 3; ++b) rd_kafka_mock_broker_set_down(mc, b);
  ASSERT_TRUE(eventually([&] { return topic_stats(c.stats(), "orders").local_keys == 1; }, 30s));
  EXPECT_TRUE(c.route(id, "surge", 5, "", kDataPartitions).salted);
  EXPECT_TRUE(c.route(id, "a", 1, "", kDataPartitions).salted);  // the list's key, as before
  for (int b = 1; b <= 3; ++b) rd_kafka_mock_broker_set_up(mc, b);
  ASSERT_TRUE(eventually([&] { return topic_stats(c.stats(), "orders").local_keys == 0; }, 60s));
  EXPECT_FALSE(topic_stats(c.stats(), "orders").stale);
  EXPECT_FALSE(c.route(id, "surge", 5, "", kDataPartitions).salted);
}

TEST_F(KafkaTransportTest, ListsTopicCreatedLateIsPickedUp) {
  // The client starts before the lists topic exists (coordinators not up yet).
  Properties p = props("late");
  p["hotkey.lists.topic"] = "late_lists";
  p["hotkey.reports.topic"] = "late_reports";
  Client c(p);
  TopicId id = *c.router().find_topic("late");
  std::this_thread::sleep_for(1s);
  cluster_->create_topic("late_lists", kMetaPartitions);
  char errstr[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", cluster_->bootstraps().c_str(), errstr,
                    sizeof(errstr));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  std::string json = list_to_json(list("late", 5, {"a"}));
  ASSERT_EQ(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("late_lists"),
                              RD_KAFKA_V_PARTITION(meta_partition("late")),
                              RD_KAFKA_V_KEY("late", 4), RD_KAFKA_V_VALUE(json.data(), json.size()),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_flush(rk, 30000);
  rd_kafka_destroy(rk);
  EXPECT_TRUE(c.wait_for_version(id, 5, 60s));
}

}  // namespace
}  // namespace hotkey::client
