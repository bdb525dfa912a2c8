// End-to-end through the librdkafka mock cluster over real TCP: what the broker stores is
// checked by an independent consumer and by the partitions' end offsets.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>

#include "hotkey/client/producer.h"
#include "hotkey/client/rdkafka.h"
#include "mock_cluster.h"
#include "test_util.h"

namespace hotkey::client {
namespace {

using test::consume_all;
using test::make_list;
using test::MockCluster;
using test::oracle;

std::string partitioner_name(HashFamily f) {
  switch (f) {
    case HashFamily::kMurmur2:
      return "murmur2_random";
    case HashFamily::kCrc32:
      return "consistent_random";
    case HashFamily::kFnv1a:
      return "fnv1a_random";
  }
  return "";
}

// Collects delivery reports: key -> partitions.
struct Deliveries {
  std::mutex mu;
  std::map<std::string, std::set<int32_t>> partitions;
  size_t ok = 0;
  size_t failed = 0;
  DeliveryCallback callback() {
    return [this](const DeliveryReport& r) {
      std::lock_guard lock(mu);
      if (r.error != 0) {
        ++failed;
        return;
      }
      ++ok;
      partitions[std::string(r.key)].insert(r.partition);
    };
  }
};

Properties producer_props(const MockCluster& mc, HashFamily family, Properties extra = {}) {
  Properties p{{"bootstrap.servers", mc.bootstraps()},
               {"partitioner", partitioner_name(family)},
               {"linger.ms", "5"},
               {"hotkey.producer.id", "e2e"}};
  for (auto& [k, v] : extra) p[k] = v;
  return p;
}

// The first record teaches the wrapper the live partition count (librdkafka's metadata).
void warm_up(Producer& producer, const std::string& topic) {
  ASSERT_TRUE(producer.produce(topic, "warm-up", "x").ok());
  ASSERT_TRUE(producer.flush(10000).ok());
  auto id = producer.client().router().find_topic(topic);
  ASSERT_TRUE(id.has_value());
  ASSERT_GT(producer.client().router().live_partitions(*id), 0);
}

class ColdRouting : public ::testing::TestWithParam<HashFamily> {};

TEST_P(ColdRouting, EmptyListIsByteExactWithLibrdkafka) {
  MockCluster mc;
  mc.create_topic("cold", 7);
  Deliveries dr;
  Producer producer(producer_props(mc, GetParam()), dr.callback());
  constexpr int kKeys = 300;
  for (int i = 0; i < kKeys; ++i) {
    std::string key = "key-" + std::to_string(i * 7919);
    ASSERT_TRUE(producer.produce("cold", key, "v").ok());
  }
  ASSERT_TRUE(producer.flush(15000).ok());
  ASSERT_EQ(dr.ok, static_cast<size_t>(kKeys));
  for (const auto& [key, parts] : dr.partitions) {
    ASSERT_EQ(parts.size(), 1u) << key;
    EXPECT_EQ(*parts.begin(), oracle(GetParam(), key, 7)) << key;
  }
  EXPECT_EQ(producer.stats().topics.at(0).salted, 0u);
}

INSTANTIATE_TEST_SUITE_P(Families, ColdRouting,
                         ::testing::Values(HashFamily::kMurmur2, HashFamily::kCrc32,
                                           HashFamily::kFnv1a));

TEST(ProducerE2E, RekeySpreadsTheHotKeyAndConsumersRecoverIt) {
  MockCluster mc;
  constexpr int kPartitions = 8;
  mc.create_topic("orders", kPartitions);
  Producer producer(producer_props(mc, HashFamily::kMurmur2, {{"hotkey.routing.mode", "rekey"}}));
  warm_up(producer, "orders");
  HotKeyList list = make_list("orders", 7, kPartitions, HashFamily::kMurmur2, {"hot"}, 4);
  ASSERT_TRUE(producer.client().router().publish(list));

  constexpr int kHot = 400;
  constexpr int kColdKeys = 5;
  constexpr int kColdPerKey = 40;
  for (int i = 0; i < kHot; ++i) ASSERT_TRUE(producer.produce("orders", "hot", "h").ok());
  for (int s = 0; s < kColdPerKey; ++s) {
    for (int k = 0; k < kColdKeys; ++k) {
      ASSERT_TRUE(producer.produce("orders", "cold-" + std::to_string(k), std::to_string(s)).ok());
    }
  }
  ASSERT_TRUE(producer.flush(15000).ok());

  auto records =
      consume_all(mc.bootstraps(), "orders", kPartitions, 1 + kHot + kColdKeys * kColdPerKey);
  ASSERT_EQ(records.size(), static_cast<size_t>(1 + kHot + kColdKeys * kColdPerKey));
  std::map<int32_t, int> hot_per_partition;
  std::map<std::string, std::vector<int>> cold_seq;
  std::map<std::string, std::set<int32_t>> cold_parts;
  for (const auto& r : records) {
    RecoveredKey rk = recover_logical_key(
        r.key, r.salt_header ? std::optional<std::string_view>(*r.salt_header) : std::nullopt,
        r.version_header ? std::optional<std::string_view>(*r.version_header) : std::nullopt);
    if (rk.logical_key == "hot") {
      ASSERT_TRUE(rk.salted);
      EXPECT_TRUE(rk.from_headers);
      EXPECT_EQ(rk.version, 7u);
      // rekey contract: the stored key recomputes to its partition with the family function.
      EXPECT_EQ(partition_for(HashFamily::kMurmur2, r.key, kPartitions), r.partition);
      EXPECT_EQ(r.key, salted_key("hot", "#", rk.salt));
      ++hot_per_partition[r.partition];
    } else if (r.key.starts_with("cold-")) {
      EXPECT_FALSE(r.salt_header.has_value());
      cold_seq[r.key].push_back(std::stoi(r.value));
      cold_parts[r.key].insert(r.partition);
    }
  }
  // WRR over 4 equal salts: exactly a quarter each.
  ASSERT_EQ(hot_per_partition.size(), 4u);
  for (const auto& [p, n] : hot_per_partition) EXPECT_EQ(n, kHot / 4) << "partition " << p;
  // Cold keys: one partition each, strict order.
  for (const auto& [key, seq] : cold_seq) {
    EXPECT_EQ(cold_parts[key].size(), 1u);
    EXPECT_EQ(*cold_parts[key].begin(), partition_for(HashFamily::kMurmur2, key, kPartitions));
    ASSERT_EQ(seq.size(), static_cast<size_t>(kColdPerKey));
    for (int s = 0; s < kColdPerKey; ++s) EXPECT_EQ(seq[s], s) << key;
  }
  // The broker's end offsets agree.
  auto ends = test::end_offsets(mc.bootstraps(), "orders", kPartitions);
  int64_t sum = 0;
  for (int64_t e : ends) sum += e;
  EXPECT_EQ(sum, 1 + kHot + kColdKeys * kColdPerKey);
  auto stats = producer.stats().topics.at(0);
  EXPECT_EQ(stats.salted, static_cast<uint64_t>(kHot));
  EXPECT_EQ(stats.list_version, 7u);
}

// Issue #14: hotkey.salt.headers=false drops the two merge headers (librdkafka's costliest
// part of a salted record); a rekeyed key is still recovered by its suffix.
TEST(ProducerE2E, SaltHeadersOffSendsRekeyedKeysWithoutHeaders) {
  MockCluster mc;
  constexpr int kPartitions = 8;
  mc.create_topic("orders", kPartitions);
  Producer producer(
      producer_props(mc, HashFamily::kMurmur2,
                     {{"hotkey.routing.mode", "rekey"}, {"hotkey.salt.headers", "false"}}));
  warm_up(producer, "orders");
  ASSERT_TRUE(producer.client().router().publish(
      make_list("orders", 7, kPartitions, HashFamily::kMurmur2, {"hot"}, 4)));
  constexpr int kHot = 40;
  for (int i = 0; i < kHot; ++i) ASSERT_TRUE(producer.produce("orders", "hot", "h").ok());
  ASSERT_TRUE(producer.produce("orders", "cold", "c").ok());
  ASSERT_TRUE(producer.flush(15000).ok());
  auto records = consume_all(mc.bootstraps(), "orders", kPartitions, 1 + kHot + 1);
  ASSERT_EQ(records.size(), static_cast<size_t>(1 + kHot + 1));
  int hot = 0;
  for (const auto& r : records) {
    EXPECT_FALSE(r.salt_header.has_value());
    EXPECT_FALSE(r.version_header.has_value());
    RecoveredKey rk = recover_logical_key(r.key, std::nullopt, std::nullopt);
    if (rk.logical_key != "hot") continue;
    ++hot;
    EXPECT_TRUE(rk.salted);
    EXPECT_FALSE(rk.from_headers);
    EXPECT_EQ(partition_for(HashFamily::kMurmur2, r.key, kPartitions), r.partition);
  }
  EXPECT_EQ(hot, kHot);
  EXPECT_EQ(producer.stats().topics.at(0).salted, static_cast<uint64_t>(kHot));
}

// Issue #14: the wrapper builds a record's headers as one list (the two merge headers, then
// the application's, names passed with their lengths): both kinds arrive, in that order, on
// salted and cold records, and application names need not be NUL-terminated.
TEST(ProducerE2E, ApplicationHeadersTravelWithTheMergeHeaders) {
  MockCluster mc;
  constexpr int kPartitions = 8;
  mc.create_topic("orders", kPartitions);
  Producer producer(producer_props(mc, HashFamily::kMurmur2, {{"hotkey.routing.mode", "rekey"}}));
  warm_up(producer, "orders");
  ASSERT_TRUE(producer.client().router().publish(
      make_list("orders", 7, kPartitions, HashFamily::kMurmur2, {"hot"}, 4)));
  const std::string names = "trace-id|tenant";
  const Header app[] = {{std::string_view(names).substr(0, 8), "t-1"},
                        {std::string_view(names).substr(9), std::string_view("acme\0x", 6)}};
  constexpr int kHot = 20;
  for (int i = 0; i < kHot; ++i) ASSERT_TRUE(producer.produce("orders", "hot", "h", app).ok());
  ASSERT_TRUE(producer.produce("orders", "cold", "c", app).ok());
  ASSERT_TRUE(producer.flush(15000).ok());
  auto records = consume_all(mc.bootstraps(), "orders", kPartitions, 1 + kHot + 1);
  ASSERT_EQ(records.size(), static_cast<size_t>(1 + kHot + 1));
  using Headers = std::vector<std::pair<std::string, std::string>>;
  const std::pair<std::string, std::string> trace{"trace-id", "t-1"};
  const std::pair<std::string, std::string> tenant{"tenant", std::string("acme\0x", 6)};
  int hot = 0, cold = 0;
  for (const auto& r : records) {
    if (r.key == "warm-up") continue;
    if (r.key == "cold") {
      ++cold;
      EXPECT_EQ(r.headers, (Headers{trace, tenant}));
      continue;
    }
    ++hot;
    ASSERT_TRUE(r.salt_header.has_value()) << r.key;
    EXPECT_EQ(r.key, "hot#" + *r.salt_header);
    EXPECT_EQ(r.headers,
              (Headers{{"hotkey.salt", *r.salt_header}, {"hotkey.version", "7"}, trace, tenant}));
  }
  EXPECT_EQ(hot, kHot);
  EXPECT_EQ(cold, 1);
}

// A record librdkafka refuses (queue full) leaves the headers list the wrapper built with the
// wrapper, which frees it (ownership passes only on success). A leak or a double free shows
// under a leak checker (valgrind --leak-check=full, or an ASan build of this test: it is an
// integration test, outside scripts/test.sh's ASan pass); the plain run checks the refusal.
TEST(ProducerE2E, RefusedRecordFreesItsHeadersOnce) {
  Producer producer({{"bootstrap.servers", "127.0.0.1:9"},  // nothing listens: records stay
                     {"queue.buffering.max.messages", "1"},
                     {"hotkey.routing.mode", "rekey"},
                     {"hotkey.hash", "murmur2"},
                     {"log_level", "0"}});
  const TopicId id = producer.client().topic("orders");
  ASSERT_TRUE(producer.client().router().publish(
      make_list("orders", 7, 8, HashFamily::kMurmur2, {"hot"}, 4)));
  producer.client().router().observe_partitions(id, 8);  // as librdkafka's metadata would
  const Header app[] = {{"trace-id", "t-1"}};
  ASSERT_TRUE(producer.produce("orders", "hot", "h", app).ok());
  const ProduceResult refused = producer.produce("orders", "hot", "h", app);
  EXPECT_EQ(refused.error, RD_KAFKA_RESP_ERR__QUEUE_FULL) << refused.message();
  const ProduceResult refused_cold = producer.produce("orders", "cold", "c", app);
  EXPECT_EQ(refused_cold.error, RD_KAFKA_RESP_ERR__QUEUE_FULL) << refused_cold.message();
  rd_kafka_purge(producer.handle(), RD_KAFKA_PURGE_F_QUEUE);
}

TEST(ProducerE2E, RouteKeepsTheKeyAndUsesTheSaltTable) {
  MockCluster mc;
  constexpr int kPartitions = 6;
  mc.create_topic("clicks", kPartitions);
  Producer producer(producer_props(mc, HashFamily::kCrc32, {{"hotkey.routing.mode", "route"}}));
  warm_up(producer, "clicks");
  HotKeyList list = make_list("clicks", 3, kPartitions, HashFamily::kCrc32, {"seller-1"}, 3);
  ASSERT_TRUE(producer.client().router().publish(list));
  std::set<int32_t> table;
  for (const auto& s : list.keys[0].salts) table.insert(s.partition);
  for (int i = 0; i < 90; ++i) ASSERT_TRUE(producer.produce("clicks", "seller-1", "v").ok());
  ASSERT_TRUE(producer.flush(15000).ok());
  auto records = consume_all(mc.bootstraps(), "clicks", kPartitions, 91);
  ASSERT_EQ(records.size(), 91u);
  std::map<int32_t, int> per_partition;
  for (const auto& r : records) {
    if (r.key != "seller-1") continue;
    ASSERT_TRUE(r.salt_header.has_value());
    EXPECT_EQ(r.version_header.value_or(""), "3");
    RecoveredKey rk = recover_logical_key(r.key, *r.salt_header, *r.version_header);
    EXPECT_EQ(rk.logical_key, "seller-1");
    EXPECT_TRUE(table.count(r.partition));
    // route mode: the salt names the partition through the table, verified for the family.
    EXPECT_EQ(salted_partition_for(HashFamily::kCrc32, "seller-1", "#", rk.salt, kPartitions),
              r.partition);
    ++per_partition[r.partition];
  }
  ASSERT_EQ(per_partition.size(), 3u);
  for (const auto& [p, n] : per_partition) EXPECT_EQ(n, 30);
}

TEST(ProducerE2E, LiveCountDifferentFromTheListsUsesLocalVerifiedSalts) {
  MockCluster mc;
  constexpr int kPartitions = 12;
  mc.create_topic("grown", kPartitions);
  Deliveries dr;
  Producer producer(producer_props(mc, HashFamily::kMurmur2), dr.callback());
  warm_up(producer, "grown");
  // The coordinator still plans for 4 partitions.
  ASSERT_TRUE(producer.client().router().publish(
      make_list("grown", 2, 4, HashFamily::kMurmur2, {"hot"}, 4)));
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(producer.produce("grown", "hot", "v").ok());
  ASSERT_TRUE(producer.flush(15000).ok());
  std::set<int32_t> used;
  for (const auto& [key, parts] : dr.partitions) {
    if (!key.starts_with("hot#")) continue;
    for (int32_t p : parts) {
      EXPECT_GE(p, 0);
      EXPECT_LT(p, kPartitions);
      used.insert(p);
    }
  }
  EXPECT_EQ(used.size(), 4u);
  EXPECT_EQ(dr.failed, 0u);
  // At least one salt lands beyond the list's 4 partitions with overwhelming likelihood, and
  // every used partition is one the first-fit plan for 12 partitions gives.
  SaltTable expected = plan_salts("hot", 4, SaltSpace{HashFamily::kMurmur2, kPartitions, "#"});
  std::set<int32_t> planned;
  for (const auto& s : expected.salts) planned.insert(s.partition);
  EXPECT_EQ(used, planned);
}

TEST(PartitionerCallbackE2E, PlainLibrdkafkaProducerAdoptsRouting) {
  MockCluster mc;
  constexpr int kPartitions = 5;
  mc.create_topic("events", kPartitions);
  RdkafkaPartitioner partitioner(Properties{{"hotkey.hash", "crc32"}});

  char errstr[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  ASSERT_EQ(
      rd_kafka_conf_set(conf, "bootstrap.servers", mc.bootstraps().c_str(), errstr, sizeof(errstr)),
      RD_KAFKA_CONF_OK);
  partitioner.install(conf);
  struct Seen {
    std::mutex mu;
    std::map<std::string, std::map<int32_t, int>> parts;
  } seen;
  rd_kafka_conf_set_opaque(conf, &seen);
  rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void* op) {
    auto* s = static_cast<Seen*>(op);
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) return;
    std::lock_guard lock(s->mu);
    std::string key = m->key ? std::string(static_cast<const char*>(m->key), m->key_len) : "";
    ++s->parts[key][m->partition];
  });
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  ASSERT_NE(rk, nullptr) << errstr;

  auto produce = [&](const std::string& key) {
    ASSERT_EQ(
        rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("events"), RD_KAFKA_V_KEY(key.data(), key.size()),
                          RD_KAFKA_V_VALUE(const_cast<char*>("v"), 1),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
        RD_KAFKA_RESP_ERR_NO_ERROR);
  };
  produce("warm-up");
  rd_kafka_flush(rk, 10000);
  HotKeyList list = make_list("events", 1, kPartitions, HashFamily::kCrc32, {"hot"}, 5);
  ASSERT_TRUE(partitioner.client().router().publish(list));
  for (int i = 0; i < 100; ++i) produce("hot");
  for (int i = 0; i < 50; ++i) produce("c" + std::to_string(i));
  // A record without a key stays librdkafka's (sticky) business.
  ASSERT_EQ(
      rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("events"), RD_KAFKA_V_VALUE(const_cast<char*>("n"), 1),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
      RD_KAFKA_RESP_ERR_NO_ERROR);
  ASSERT_EQ(rd_kafka_flush(rk, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_poll(rk, 0);
  rd_kafka_destroy(rk);

  ASSERT_EQ(seen.parts["hot"].size(), 5u);
  for (const auto& [p, n] : seen.parts["hot"]) EXPECT_EQ(n, 20);
  for (int i = 0; i < 50; ++i) {
    std::string key = "c" + std::to_string(i);
    ASSERT_EQ(seen.parts[key].size(), 1u);
    EXPECT_EQ(seen.parts[key].begin()->first, oracle(HashFamily::kCrc32, key, kPartitions));
  }
  auto stats = partitioner.client().stats().topics.at(0);
  EXPECT_EQ(stats.salted, 100u);
  EXPECT_EQ(stats.cold, 51u);
}

TEST(PartitionerCallback, RejectsWhatACallbackCannotDo) {
  EXPECT_THROW(RdkafkaPartitioner(Properties{{"hotkey.routing.mode", "rekey"}}),
               std::invalid_argument);
  EXPECT_THROW(RdkafkaPartitioner(Properties{{"hotkey.salt.policy", "value_hash"}}),
               std::invalid_argument);
}

TEST(ProducerE2E, RejectsConflictingAndUnknownProperties) {
  EXPECT_THROW(Producer(Properties{{"partitioner", "murmur2_random"}, {"hotkey.hash", "crc32"}}),
               std::invalid_argument);
  EXPECT_THROW(Producer(Properties{{"hotkey.bogus", "1"}}), std::invalid_argument);
  EXPECT_THROW(Producer(Properties{{"no.such.kafka.property", "1"}}), std::invalid_argument);
  EXPECT_THROW(Producer(Properties{{"partitioner", "random"}}), std::invalid_argument);
}

}  // namespace
}  // namespace hotkey::client
