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

Properties producer_props(const test::Cluster& mc, HashFamily family, Properties extra = {}) {
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

// Merge contract v1 (hotkey.merge.contract=1): both headers on every salted record.
TEST(ProducerE2E, RekeySpreadsTheHotKeyAndConsumersRecoverIt) {
  MockCluster mc;
  constexpr int kPartitions = 8;
  mc.create_topic("orders", kPartitions);
  Producer producer(
      producer_props(mc, HashFamily::kMurmur2,
                     {{"hotkey.routing.mode", "rekey"}, {"hotkey.merge.contract", "1"}}));
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
// salted and cold records, and application names need not be NUL-terminated (contract v1).
TEST(ProducerE2E, ApplicationHeadersTravelWithTheMergeHeaders) {
  MockCluster mc;
  constexpr int kPartitions = 8;
  mc.create_topic("orders", kPartitions);
  Producer producer(
      producer_props(mc, HashFamily::kMurmur2,
                     {{"hotkey.routing.mode", "rekey"}, {"hotkey.merge.contract", "1"}}));
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

// Merge contract v2 (the default): a record rekeyed with the coordinator's list carries no
// merge header (its key's suffix is the mark), one salted by a local table carries both with
// 2^63 + V, an unsalted record whose key ends in <sep><digits> carries hotkey.unsalted, other
// unsalted records nothing; application headers follow the merge headers. Every record is
// recovered exactly by the default key recovery.
TEST(ProducerE2E, ContractVersion2MarksOnlyWhatTheSuffixCannotSay) {
  MockCluster mc;
  constexpr int kPartitions = 8;
  mc.create_topic("orders", kPartitions);
  Producer producer(producer_props(mc, HashFamily::kMurmur2));
  warm_up(producer, "orders");
  Router& router = producer.client().router();
  const TopicId id = producer.client().topic("orders");
  // A listed key longer than the wrapper's stack buffer for salted keys too.
  const std::string long_hot = "long-" + std::string(300, 'L');
  ASSERT_TRUE(router.publish(
      make_list("orders", 7, kPartitions, HashFamily::kMurmur2, {"hot", long_hot}, 4)));
  const Header app[] = {{"trace-id", "t-1"}};
  const std::vector<std::string> keys = {"hot",     "cold",     long_hot, "acct#12",
                                         "acct-12", "acct#012", "surge"};
  constexpr int kEach = 24;
  auto send = [&](const std::string& k, int i) {
    const ProduceResult r =
        i % 2 == 0 ? producer.produce("orders", k, k, app) : producer.produce("orders", k, k);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.salted, k == "hot" || k == "surge" || k == long_hot) << k;
  };
  for (int i = 0; i < kEach; ++i) {
    for (size_t k = 0; k + 1 < keys.size(); ++k) send(keys[k], i);
  }
  // Then a local table for "surge" (the list's keys are marked meanwhile too: not sent here).
  LocalTables local;
  local.base_version = 7;
  local.partitions = kPartitions;
  local.keys.push_back(
      make_list("orders", 1, kPartitions, HashFamily::kMurmur2, {"surge"}, 3).keys.at(0));
  ASSERT_TRUE(router.set_local_tables(id, local, router.local_generation(id)));
  for (int i = 0; i < kEach; ++i) send("surge", i);
  ASSERT_TRUE(producer.flush(15000).ok());
  const size_t total = 1 + keys.size() * kEach;
  auto records = consume_all(mc.bootstraps(), "orders", kPartitions, total);
  ASSERT_EQ(records.size(), total);
  std::map<std::string, int> recovered;
  for (const auto& r : records) {
    if (r.key == "warm-up") continue;
    const RecoveredKey k = r.recovered();
    EXPECT_EQ(k.logical_key, r.value) << r.key;  // every record's logical key recovered
    ++recovered[std::string(k.logical_key)];
    std::vector<std::string> merge;
    for (const auto& [name, value] : r.headers) {
      if (name.starts_with("hotkey.")) merge.push_back(name);
    }
    const bool has_app = !r.headers.empty() && r.headers.back().first == "trace-id";
    if (r.value == "hot" || r.value == long_hot) {
      EXPECT_TRUE(k.salted);
      EXPECT_FALSE(k.from_headers);
      EXPECT_TRUE(merge.empty()) << r.key;
      EXPECT_EQ(partition_for(HashFamily::kMurmur2, r.key, kPartitions), r.partition);
    } else if (r.value == "surge") {
      EXPECT_TRUE(k.salted);
      EXPECT_TRUE(k.from_headers);
      EXPECT_EQ(k.version, kLocalTableVersionBit + 7);
      EXPECT_EQ(merge, (std::vector<std::string>{"hotkey.salt", "hotkey.version"}));
      EXPECT_EQ(partition_for(HashFamily::kMurmur2, r.key, kPartitions), r.partition);
    } else if (r.value == "acct#12") {
      EXPECT_FALSE(k.salted);
      EXPECT_EQ(merge, std::vector<std::string>{"hotkey.unsalted"});
      EXPECT_EQ(r.key, "acct#12");
    } else {
      EXPECT_FALSE(k.salted) << r.key;
      EXPECT_TRUE(merge.empty()) << r.key;
    }
    if (has_app) {
      EXPECT_EQ(r.headers.size(), merge.size() + 1) << r.key;
    } else {
      EXPECT_EQ(r.headers.size(), merge.size()) << r.key;
    }
  }
  for (const auto& k : keys) EXPECT_EQ(recovered[k], kEach) << k;
  EXPECT_EQ(router.local_salted(id), static_cast<uint64_t>(kEach));
}

// Issue 41, on a real broker: a producer on the default merge contract (v2) and one on v1 share
// a topic; every record read back, salted or not, gives its logical key (carried in its value)
// and whether it was salted through the default key recovery, whichever producer wrote it.
TEST(ProducerRealKafka, EveryRecordRecoverableWithContractVersionsSharingATopic) {
  test::RealCluster cluster;
  constexpr int kPartitions = 6;
  cluster.create_topic("reads", kPartitions);
  Producer v2(producer_props(cluster, HashFamily::kMurmur2, {{"hotkey.producer.id", "v2"}}));
  Producer v1(producer_props(cluster, HashFamily::kMurmur2,
                             {{"hotkey.producer.id", "v1"}, {"hotkey.merge.contract", "1"}}));
  // Hot keys include one that itself ends in <sep><digits>; the v2 producer's cold keys too
  // (a v1 producer's cold key of that form is the v1 ambiguity: docs/CLIENT.md).
  const std::vector<std::string> hot = {"hot", "acct#1"};
  for (Producer* p : {&v2, &v1}) {
    warm_up(*p, "reads");
    ASSERT_TRUE(p->client().router().publish(
        make_list("reads", 5, kPartitions, HashFamily::kMurmur2, hot, 4)));
  }
  constexpr int kRounds = 100;
  size_t sent = 2;  // the warm-up records
  uint64_t salted_sent = 0;
  for (int i = 0; i < kRounds; ++i) {
    for (Producer* p : {&v2, &v1}) {
      std::vector<std::string> keys = {"hot", "acct#1", "cold-" + std::to_string(i % 7)};
      if (p == &v2) keys.push_back("order#" + std::to_string(i % 5));
      for (const auto& k : keys) {
        const bool hot_key = k == "hot" || k == "acct#1";
        const ProduceResult r = p->produce("reads", k, k + "|" + (hot_key ? "salted" : "cold"));
        ASSERT_TRUE(r.ok()) << r.message();
        ASSERT_EQ(r.salted, hot_key) << k;
        salted_sent += r.salted ? 1 : 0;
        ++sent;
      }
    }
  }
  ASSERT_TRUE(v2.flush(30000).ok());
  ASSERT_TRUE(v1.flush(30000).ok());
  auto records =
      consume_all(cluster.bootstraps(), "reads", kPartitions, sent, std::chrono::seconds(60));
  ASSERT_EQ(records.size(), sent);
  uint64_t salted = 0, unmarked_salted = 0;
  std::map<std::string, std::set<int32_t>> partitions;
  for (const auto& r : records) {
    if (r.key == "warm-up") continue;
    const RecoveredKey k = r.recovered();
    const auto bar = r.value.find('|');
    ASSERT_NE(bar, std::string::npos) << r.value;
    EXPECT_EQ(k.logical_key, r.value.substr(0, bar)) << r.key;
    EXPECT_EQ(k.salted, r.value.substr(bar + 1) == "salted") << r.key;
    if (!k.salted) continue;
    ++salted;
    if (!k.from_headers) ++unmarked_salted;
    EXPECT_EQ(partition_for(HashFamily::kMurmur2, r.key, kPartitions), r.partition) << r.key;
    partitions[std::string(k.logical_key)].insert(r.partition);
  }
  EXPECT_EQ(salted, salted_sent);
  EXPECT_EQ(unmarked_salted, salted_sent / 2);  // the v2 producer's: no header
  for (const auto& k : hot) EXPECT_EQ(partitions[k].size(), 4u) << k;
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
