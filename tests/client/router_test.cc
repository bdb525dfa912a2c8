#include "hotkey/client/router.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace hotkey::client {
namespace {

using test::make_list;
using test::oracle;

RouteDecision route(const Router& r, TopicId id, const std::string& key, int32_t partitions,
                    std::string_view value = {}) {
  return r.route(id, key.data(), key.size(), value, partitions);
}

class RouterFamilies : public ::testing::TestWithParam<HashFamily> {};

TEST_P(RouterFamilies, ColdKeysMatchLibrdkafkaByteForByte) {
  Router router(RouterOptions{GetParam(), SaltPolicy::kWeightedRoundRobin});
  TopicId t = router.topic("orders");
  std::mt19937 rng(7);
  for (int32_t partitions : {1, 3, 7, 32, 100}) {
    for (int i = 0; i < 2000; ++i) {
      std::string key(static_cast<size_t>(1 + rng() % 40), '\0');
      for (auto& c : key) c = static_cast<char>(rng());  // arbitrary bytes, not UTF-8
      RouteDecision d = route(router, t, key, partitions);
      ASSERT_EQ(d.partition, oracle(GetParam(), key, partitions)) << "P=" << partitions;
      EXPECT_FALSE(d.salted);
    }
  }
  // And with a hot list present, keys not in it stay byte-exact.
  ASSERT_TRUE(router.publish(make_list("orders", 1, 32, GetParam(), {"hot"}, 8)));
  for (int i = 0; i < 500; ++i) {
    std::string key = "user-" + std::to_string(i);
    EXPECT_EQ(route(router, t, key, 32).partition, oracle(GetParam(), key, 32));
  }
}

TEST_P(RouterFamilies, HotKeySaltsRecomputeToTheirPartition) {
  Router router(RouterOptions{GetParam(), SaltPolicy::kWeightedRoundRobin});
  TopicId t = router.topic("orders");
  ASSERT_TRUE(router.publish(make_list("orders", 3, 16, GetParam(), {"hot", "tenant-9"}, 6)));
  std::set<int32_t> used;
  for (int i = 0; i < 600; ++i) {
    RouteDecision d = route(router, t, "hot", 16);
    ASSERT_TRUE(d.salted);
    EXPECT_EQ(d.version, 3u);
    char buf[64];
    size_t n = d.write_salted_key("hot", buf);
    // rekey contract: the salted key hashes to the same partition with the family function.
    EXPECT_EQ(partition_for(GetParam(), std::string_view(buf, n), 16), d.partition);
    EXPECT_EQ(std::string_view(buf, n), salted_key("hot", "#", d.salt));
    used.insert(d.partition);
  }
  EXPECT_EQ(used.size(), 6u);
}

// Cold keys are turned away by a 512-bit filter before the table is probed. With 16 hot keys
// most cold keys stop at the filter; with 300 the filter is nearly full, so most pass it and
// miss in the table instead. Both paths must leave every cold key byte-exact and find every
// hot key.
TEST_P(RouterFamilies, FilterAndTableAgreeForFewAndManyHotKeys) {
  for (size_t n_hot : {size_t{16}, size_t{300}}) {
    Router router(RouterOptions{GetParam(), SaltPolicy::kWeightedRoundRobin});
    TopicId t = router.topic("orders");
    std::vector<std::string> hot;
    for (size_t i = 0; i < n_hot; ++i) hot.push_back("hot-" + std::to_string(i * 7919));
    ASSERT_TRUE(router.publish(make_list("orders", 1, 64, GetParam(), hot, 4)));
    for (const auto& k : hot) ASSERT_TRUE(route(router, t, k, 64).salted) << k;
    for (int i = 0; i < 20000; ++i) {
      const std::string key = "user-" + std::to_string(i);
      RouteDecision d = route(router, t, key, 64);
      ASSERT_FALSE(d.salted) << key;
      ASSERT_EQ(d.partition, oracle(GetParam(), key, 64)) << key;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, RouterFamilies,
                         ::testing::Values(HashFamily::kMurmur2, HashFamily::kCrc32,
                                           HashFamily::kFnv1a));

TEST(Router, NullKeyIsLeftToLibrdkafka) {
  Router router(RouterOptions{HashFamily::kCrc32});
  TopicId t = router.topic("t");
  EXPECT_EQ(router.route(t, nullptr, 0, {}, 8).partition, -1);
  // consistent_random hashes an empty key like a null one (random); murmur2_random does not.
  EXPECT_EQ(router.route(t, "", 0, {}, 8).partition, -1);
  Router m(RouterOptions{HashFamily::kMurmur2});
  TopicId tm = m.topic("t");
  EXPECT_EQ(m.route(tm, "", 0, {}, 8).partition, oracle(HashFamily::kMurmur2, "", 8));
  EXPECT_EQ(m.route(tm, "k", 1, {}, 0).partition, -1);  // no partition count yet
}

TEST(Router, WeightedRoundRobinFollowsWeightsExactly) {
  Router router(RouterOptions{HashFamily::kMurmur2, SaltPolicy::kWeightedRoundRobin});
  TopicId t = router.topic("t");
  HotKeyList list = make_list("t", 1, 12, HashFamily::kMurmur2, {"hot"}, 3);
  list.keys[0].salts[0].weight = 5000;
  list.keys[0].salts[1].weight = 3000;
  list.keys[0].salts[2].weight = 2000;
  ASSERT_TRUE(router.publish(list));
  std::map<int32_t, int> counts;
  for (int i = 0; i < 1000; ++i) ++counts[route(router, t, "hot", 12).partition];
  EXPECT_EQ(counts[list.keys[0].salts[0].partition], 500);
  EXPECT_EQ(counts[list.keys[0].salts[1].partition], 300);
  EXPECT_EQ(counts[list.keys[0].salts[2].partition], 200);
  // Smooth: within any 10 consecutive picks each salt appears in its proportion.
  std::map<int32_t, int> window;
  for (int i = 0; i < 10; ++i) ++window[route(router, t, "hot", 12).partition];
  EXPECT_EQ(window[list.keys[0].salts[0].partition], 5);
}

// Each list a producer takes starts its round robin at a random place. Started at the head,
// every producer sent its first records of each version to the heaviest salts, in step, and the
// coordinator (which leaves out the report that straddles a switch) saw those salts' partitions
// carry less of the key than their weights: on a small topic the planner gave them ever more
// weight (tests/cluster/client_cluster_test.cc).
TEST(Router, EachListStartsItsRoundRobinAnywhere) {
  Router router(RouterOptions{HashFamily::kMurmur2, SaltPolicy::kWeightedRoundRobin});
  TopicId t = router.topic("t");
  constexpr int kVersions = 600;
  const std::vector<uint32_t> weights{5000, 3000, 2000};
  std::map<int32_t, int> first, after_switch;
  std::vector<int32_t> partitions;
  for (int v = 1; v <= kVersions; ++v) {
    HotKeyList list =
        make_list("t", static_cast<uint64_t>(v), 12, HashFamily::kMurmur2, {"hot"}, 3);
    partitions.clear();
    for (size_t i = 0; i < weights.size(); ++i) {
      list.keys[0].salts[i].weight = weights[i];
      partitions.push_back(list.keys[0].salts[i].partition);
    }
    ASSERT_TRUE(router.publish(list));
    // A producer's first 3 records under the list go in the report the coordinator leaves
    // out; the next 7 are accounted by the table's weights.
    for (int i = 0; i < 10; ++i) {
      const int32_t p = route(router, t, "hot", 12).partition;
      if (i == 0) ++first[p];
      if (i >= 3) ++after_switch[p];
    }
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    const double share = weights[i] / 10000.0;
    // Binomial over 600 lists: 5 standard deviations at most 0.1 on either side.
    EXPECT_NEAR(first[partitions[i]] / double{kVersions}, share, 0.1) << "salt " << i;
    // 4,200 records: each list's 7 are within a record of their weights.
    EXPECT_NEAR(after_switch[partitions[i]] / (7.0 * kVersions), share, 0.03) << "salt " << i;
  }
}

TEST(Router, ValueHashIsDeterministicAndRandomStaysInTable) {
  HotKeyList list = make_list("t", 1, 20, HashFamily::kMurmur2, {"hot"}, 5);
  std::set<int32_t> table;
  for (const auto& s : list.keys[0].salts) table.insert(s.partition);

  Router vh(RouterOptions{HashFamily::kMurmur2, SaltPolicy::kValueHash});
  TopicId t = vh.topic("t");
  ASSERT_TRUE(vh.publish(list));
  std::set<int32_t> seen;
  for (int i = 0; i < 200; ++i) {
    std::string value = "payload-" + std::to_string(i);
    RouteDecision a = route(vh, t, "hot", 20, value);
    RouteDecision b = route(vh, t, "hot", 20, value);
    EXPECT_EQ(a.partition, b.partition);
    EXPECT_EQ(a.salt, b.salt);
    seen.insert(a.partition);
  }
  EXPECT_EQ(seen, table);

  Router rnd(RouterOptions{HashFamily::kMurmur2, SaltPolicy::kRandom});
  TopicId tr = rnd.topic("t");
  ASSERT_TRUE(rnd.publish(list));
  seen.clear();
  for (int i = 0; i < 500; ++i) seen.insert(route(rnd, tr, "hot", 20).partition);
  EXPECT_EQ(seen, table);
}

TEST(Router, VersionsNeverGoBack) {
  Router router;
  TopicId t = router.topic("t");
  EXPECT_TRUE(router.publish(make_list("t", 5, 8, HashFamily::kCrc32, {"a"}, 4)));
  EXPECT_FALSE(router.publish(make_list("t", 4, 8, HashFamily::kCrc32, {"b"}, 4)));
  EXPECT_FALSE(router.publish(make_list("t", 5, 8, HashFamily::kCrc32, {"b"}, 4)));
  EXPECT_EQ(router.version(t), 5u);
  EXPECT_TRUE(route(router, t, "a", 8).salted);
  EXPECT_FALSE(route(router, t, "b", 8).salted);
}

TEST(Router, PartitionCountChangeUsesVerifiedFirstFitSaltsInRange) {
  Router router(RouterOptions{HashFamily::kMurmur2});
  TopicId t = router.topic("t");
  ASSERT_TRUE(router.publish(make_list("t", 1, 8, HashFamily::kMurmur2, {"hot"}, 4)));
  for (int32_t live : {8, 12, 3, 1, 64}) {
    std::set<int32_t> used;
    for (int i = 0; i < 200; ++i) {
      RouteDecision d = route(router, t, "hot", live);
      ASSERT_GE(d.partition, 0);
      ASSERT_LT(d.partition, live);
      if (d.salted) {
        EXPECT_EQ(salted_partition_for(HashFamily::kMurmur2, "hot", "#", d.salt, live),
                  d.partition);
      }
      used.insert(d.partition);
    }
    EXPECT_EQ(used.size(), static_cast<size_t>(std::min(4, live))) << "live=" << live;
    EXPECT_EQ(router.live_partitions(t), live);
  }
}

TEST(Router, ListOfAnotherFamilyIsReplannedForOurs) {
  Router router(RouterOptions{HashFamily::kFnv1a});
  TopicId t = router.topic("t");
  ASSERT_TRUE(router.publish(make_list("t", 1, 10, HashFamily::kMurmur2, {"hot"}, 3)));
  std::set<int32_t> used;
  for (int i = 0; i < 30; ++i) {
    RouteDecision d = route(router, t, "hot", 10);
    ASSERT_TRUE(d.salted);
    EXPECT_EQ(salted_partition_for(HashFamily::kFnv1a, "hot", "#", d.salt, 10), d.partition);
    used.insert(d.partition);
  }
  EXPECT_EQ(used.size(), 3u);
}

TEST(Router, PlainRoutesColdAndKeepsTheList) {
  Router router;
  TopicId t = router.topic("t");
  ASSERT_TRUE(router.publish(make_list("t", 2, 8, HashFamily::kCrc32, {"hot"}, 4)));
  router.set_plain(t, true);
  RouteDecision d = route(router, t, "hot", 8);
  EXPECT_FALSE(d.salted);
  EXPECT_EQ(d.partition, oracle(HashFamily::kCrc32, "hot", 8));
  EXPECT_EQ(router.version(t), 2u);
  router.set_plain(t, false);
  EXPECT_TRUE(route(router, t, "hot", 8).salted);
}

TEST(Router, CustomSeparatorAndBinaryKeys) {
  Router router(RouterOptions{HashFamily::kMurmur2});
  TopicId t = router.topic("t");
  std::string key("\xff\x00\x01k", 4);
  HotKeyList list;
  list.topic = "t";
  list.version = 1;
  list.partitions = 16;
  list.hash = HashFamily::kMurmur2;
  list.separator = "::";
  SaltSpace space{HashFamily::kMurmur2, 16, "::"};
  list.keys.push_back(HotKey{key, plan_salts(key, 4, space).salts});
  ASSERT_TRUE(router.publish(list));
  RouteDecision d = route(router, t, key, 16);
  ASSERT_TRUE(d.salted);
  EXPECT_EQ(d.separator_view(), "::");
  char buf[64];
  size_t n = d.write_salted_key(key, buf);
  EXPECT_EQ(partition_for(HashFamily::kMurmur2, std::string_view(buf, n), 16), d.partition);
}

TEST(Router, ConcurrentRoutingWhilePublishing) {
  Router router(RouterOptions{HashFamily::kMurmur2});
  TopicId t = router.topic("t");
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0};
  std::vector<std::thread> senders;
  for (int w = 0; w < 3; ++w) {
    senders.emplace_back([&] {
      while (!stop.load()) {
        for (int32_t live : {8, 16}) {
          RouteDecision d = route(router, t, "hot", live);
          if (d.partition < 0 || d.partition >= live) bad.fetch_add(1);
        }
      }
    });
  }
  for (uint64_t v = 1; v <= 200; ++v) {
    ASSERT_TRUE(router.publish(
        make_list("t", v, v % 2 ? 8 : 16, HashFamily::kMurmur2, {"hot"}, 1 + v % 5)));
  }
  stop.store(true);
  for (auto& s : senders) s.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_EQ(router.version(t), 200u);
}

TEST(Router, RejectsBadTopicNames) {
  Router router;
  EXPECT_THROW(router.topic("has space"), std::invalid_argument);
  EXPECT_THROW(router.topic(""), std::invalid_argument);
  EXPECT_EQ(router.topic("a"), router.topic("a"));
}

}  // namespace
}  // namespace hotkey::client
