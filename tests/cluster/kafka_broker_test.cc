// What only a real Apache Kafka shows (the librdkafka mock has no CreateTopics, topic configs,
// compaction, replication or broker failover, and its group coordinator runs on fixed timers):
// the coordinator creating and checking its topics, a member rebuilt from compacted topics,
// a partition leader killed with kill -9 under operator writes, and the takeover times of the
// real group coordinator. Each scenario on a Kafka cluster of its own (scripts/kafka.sh).
#include <gtest/gtest.h>

#include <cstdio>

#include "cluster_harness.h"
#include "lists_writer.h"
#include "support/lists.h"

namespace hotkey::coordinator::cluster_test {
namespace {

using std::chrono::milliseconds;

// Records read from topic/partition between its watermarks (compaction leaves offsets out).
int64_t records_in(const std::string& bootstrap, const std::string& topic, int partition,
                   int64_t high) {
  rd_kafka_t* rk =
      new_rdkafka(RD_KAFKA_CONSUMER, bootstrap,
                  {{"group.id", "kafka-broker-test-count"}, {"enable.auto.commit", "false"}});
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(parts, topic.c_str(), partition)->offset =
      RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  int64_t n = 0, last = -1;
  const auto deadline = Steady::now() + std::chrono::seconds(20);
  while (last + 1 < high && Steady::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (!m) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ++n;
      last = m->offset;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return n;
}

// The list `n` serves for `topic`: "version keys" ("" when it serves none).
std::string served_list(const Node& n, const std::string& topic) {
  auto r = get(n, "/v1/hotkeys?topic=" + topic);
  if (!r || r->status != 200) return "";
  json j = json::parse(r->body, nullptr, false);
  if (!j.is_object()) return "";
  std::set<std::string> keys;
  for (const auto& k : j.value("keys", json::array())) keys.insert(k.value("key", ""));
  std::string out = std::to_string(j.value("version", uint64_t{0}));
  for (const auto& k : keys) out += " " + k;
  return out;
}

TEST(KafkaBroker, CoordinatorCreatesItsTopicsWithTheirSettingsOnAFreshCluster) {
  Kafka kafka({.create_internal = false});
  TempDir dir;
  Node a("a", dir.path(), kafka.bootstrap());
  auto& k = kafka.real();
  EXPECT_EQ(k.partitions("__hotkey_reports"), kPartitions);
  EXPECT_EQ(k.partitions("__hotkey_lists"), kPartitions);
  EXPECT_EQ(k.partitions("__hotkey_state"), 1);
  EXPECT_EQ(k.topic_config("__hotkey_reports")["cleanup.policy"], "delete");
  EXPECT_EQ(k.topic_config("__hotkey_lists")["cleanup.policy"], "compact");
  EXPECT_EQ(k.topic_config("__hotkey_state")["cleanup.policy"], "compact");
  EXPECT_NE(a.log().find("kafka_topics_created"), std::string::npos) << a.log();
  // And it works on them: it owns every reports partition.
  EXPECT_TRUE(eventually([&] { return a.owned().size() == static_cast<size_t>(kPartitions); },
                         milliseconds(60000), kPollStep))
      << a.log();
  // A second member finds them in place and creates nothing.
  Node b("b", dir.path(), kafka.bootstrap());
  EXPECT_EQ(b.log().find("kafka_topics_created"), std::string::npos) << b.log();
}

// A lists or state topic that Kafka may delete from (cleanup.policy delete, or compact,delete)
// would lose lists and operator writes at retention: refused at start, exit 5, naming it.
TEST(KafkaBroker, RefusesListsAndStateTopicsThatAreNotCompactedOnly) {
  for (const auto& [topic, policy] : std::vector<std::pair<std::string, std::string>>{
           {"__hotkey_state", "delete"}, {"__hotkey_lists", "compact,delete"}}) {
    SCOPED_TRACE(topic + " " + policy);
    Kafka kafka({.create_internal = false});
    kafka.real().create_topic("__hotkey_reports", kPartitions);
    for (const std::string t : {"__hotkey_lists", "__hotkey_state"}) {
      kafka.real().create_topic(t, t == "__hotkey_lists" ? kPartitions : 1, -1,
                                {{"cleanup.policy", t == topic ? policy : "compact"}});
    }
    TempDir dir;
    Node a("a", dir.path(), kafka.bootstrap(), /*must_start=*/false);
    EXPECT_EQ(a.port(), 0);
    EXPECT_EQ(a.exit_status(), 5);
    EXPECT_NE(a.log().find(topic + " has cleanup.policy=" + policy), std::string::npos)
        << a.log();
    EXPECT_NE(a.log().find("cleanup.policy=compact"), std::string::npos) << a.log();
  }
}

// With segments rolled every half second and a low dirty ratio, the broker compacts the lists
// and state topics under a running cluster; a member started afterwards from an empty data
// directory rebuilds exactly the state and lists the others hold: a removed pin stays removed,
// a deleted topic stays deleted, a pin and a deny stay in force.
TEST(KafkaBroker, AMemberStartedEmptyAfterCompactionHoldsExactlyWhatTheOthersHold) {
  Scenario s({.topics = data_topics(4)},
             KafkaOptions{.compacted_configs = {{"segment.ms", "500"},
                                                {"min.cleanable.dirty.ratio", "0.01"},
                                                {"min.compaction.lag.ms", "0"},
                                                {"delete.retention.ms", "600000"}}});
  Node &a = s.member(0), &b = s.member(1);
  ASSERT_TRUE(s.wait_until([&] { return s.listed(); }, milliseconds(90000)));

  auto ok = [](const httplib::Result& r) { return r && r->status == 200; };
  ASSERT_TRUE(ok(operator_call(a, "POST", "/v1/topics/data-0/pins", json{{"key", "keep"}, {"reason", "t"}})));
  ASSERT_TRUE(ok(operator_call(a, "POST", "/v1/topics/data-1/pins", json{{"key", "gone"}, {"reason", "t"}})));
  ASSERT_TRUE(ok(operator_call(b, "DELETE", "/v1/topics/data-1/pins?key=gone")));
  ASSERT_TRUE(ok(operator_call(b, "POST", "/v1/topics/data-2/denies", json{{"key", "hot"}, {"reason", "t"}})));
  s.producer.pause("data-3");
  // The reports already sent reach the owner before the delete (as in the Delete test).
  std::this_thread::sleep_for(milliseconds(2000));
  ASSERT_TRUE(ok(operator_call(a, "DELETE", "/v1/topics/data-3?reason=compaction-test")));

  // Keep writing (a pin added and removed again, lists republished every 2 s) until the broker
  // has compacted both topics: fewer records than offsets.
  auto& k = s.kafka.real();
  auto compacted = [&](const std::string& topic, int partitions) {
    for (int p = 0; p < partitions; ++p) {
      const auto [low, high] = k.watermarks(topic, p);
      if (high - low > 2 && records_in(s.kafka.bootstrap(), topic, p, high) < high - low) {
        return true;
      }
    }
    return false;
  };
  int round = 0;
  ASSERT_TRUE(eventually(
      [&] {
        EXPECT_TRUE(ok(operator_call(a, "POST", "/v1/topics/data-0/pins", json{{"key", "tmp"}, {"reason", "t"}})));
        EXPECT_TRUE(ok(operator_call(a, "DELETE", "/v1/topics/data-0/pins?key=tmp")));
        ++round;
        return compacted("__hotkey_state", 1) && compacted("__hotkey_lists", kPartitions);
      },
      milliseconds(90000), milliseconds(700)))
      << "after " << round << " rounds";
  std::printf("[   INFO   ] compaction seen after %d rounds of writes\n", round);

  Node& c = s.add_member("c");
  // Every member holds the same: pins, denies, topics, and serves the same list per topic.
  auto same = [&](std::string* why) {
    for (const auto& t : s.topics) {
      const Held ha = held_by(a, t), hc = held_by(c, t);
      if (ha.listed != hc.listed || ha.pins != hc.pins || ha.denies != hc.denies) {
        *why = t + ": a " + ha.pins + ha.denies + " c " + hc.pins + hc.denies;
        return false;
      }
      if (served_list(a, t) != served_list(c, t)) {
        *why = t + ": a serves " + served_list(a, t) + ", c serves " + served_list(c, t);
        return false;
      }
    }
    return true;
  };
  std::string why;
  ASSERT_TRUE(eventually([&] { return stable(s.nodes, &s.owner) && same(&why); },
                         milliseconds(90000), kPollStep))
      << why << "\n" << c.log();
  const Held h0 = held_by(c, "data-0"), h1 = held_by(c, "data-1"), h2 = held_by(c, "data-2"),
             h3 = held_by(c, "data-3");
  EXPECT_NE(h0.pins.find("\"keep\""), std::string::npos) << h0.pins;
  EXPECT_EQ(h0.pins.find("\"tmp\""), std::string::npos) << h0.pins;
  EXPECT_TRUE(h1.pins.empty()) << h1.pins;
  EXPECT_NE(h2.denies.find("\"hot\""), std::string::npos) << h2.denies;
  EXPECT_TRUE(h3.none()) << h3.pins << h3.denies;
  // A deleted topic: no list (version 0, as for a topic never reported) on any member.
  EXPECT_EQ(served_list(c, "data-3"), "0");
  EXPECT_EQ(served_list(a, "data-3"), "0");
  expect_no_version_conflicts(s.reader.records());
  EXPECT_EQ(s.reader.invalid(), 0u);
}

// Three brokers, replication factor 3, min.insync.replicas=2. Operator writes go through both
// members while the leader of the state partition, and then the leader of a lists partition,
// is killed with kill -9 and restarted: every acknowledged write is held by both members and
// listed by the owner, no member's versions of a topic go back, and lists keep flowing.
TEST(KafkaBroker, PartitionLeadersKilledAndRestartedLoseNoAcknowledgedWrite) {
  Scenario s({.topics = data_topics(4)}, KafkaOptions{.nodes = 3});
  Node &a = s.member(0), &b = s.member(1);
  ASSERT_TRUE(s.wait_until([&] { return s.listed(); }, milliseconds(90000)));

  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> acknowledged;
  std::atomic<int> refused{0};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) {
      const std::string topic = s.topics[i % s.topics.size()];
      const std::string key = "pin-" + std::to_string(i);
      auto r = operator_call(i % 2 ? a : b, "POST", "/v1/topics/" + topic + "/pins",
                             json{{"key", key}, {"reason", "leader-kill"}});
      if (r && r->status == 200) {
        std::lock_guard lock(mu);
        acknowledged.emplace_back(topic, key);
      } else {
        refused.fetch_add(1);
      }
      std::this_thread::sleep_for(milliseconds(200));
    }
  });
  auto& k = s.kafka.real();
  const std::string lists_topic_of = s.topics[0];
  for (const auto& [topic, partition] : std::vector<std::pair<std::string, int>>{
           {"__hotkey_state", 0}, {"__hotkey_lists", partition_of(lists_topic_of)}}) {
    const int leader = k.leader(topic, partition);
    ASSERT_GE(leader, 0) << topic;
    std::printf("[   INFO   ] kill -9 of node %d, leader of %s/%d\n", leader, topic.c_str(),
                partition);
    std::map<std::string, uint64_t> before;
    for (const auto& [t, r] : s.reader.latest()) before[t] = r.version;
    k.kill_node(leader);
    std::this_thread::sleep_for(std::chrono::seconds(4));
    k.start_node(leader);
    // Lists keep flowing: every topic gets a newer version after the restart.
    EXPECT_TRUE(eventually(
        [&] {
          auto latest = s.reader.latest();
          for (const auto& t : s.topics) {
            if (latest[t].version <= before[t]) return false;
          }
          return true;
        },
        milliseconds(60000), kPollStep))
        << describe(s.reader.latest());
  }
  // Enough acknowledged writes to judge (on a fast run the kills may be over after a few).
  std::this_thread::sleep_for(std::chrono::seconds(2));
  eventually(
      [&] {
        std::lock_guard lock(mu);
        return acknowledged.size() >= 10;
      },
      milliseconds(60000), kPollStep);
  stop = true;
  writer.join();
  std::printf("[   INFO   ] %zu operator writes acknowledged, %d refused\n", acknowledged.size(),
              refused.load());
  ASSERT_GE(acknowledged.size(), 10u);

  ASSERT_TRUE(eventually(
      [&] {
        auto latest = s.reader.latest();
        for (const auto& [topic, key] : acknowledged) {
          if (latest[topic].keys.find(key + ",") == std::string::npos) return false;
        }
        return true;
      },
      milliseconds(60000), kPollStep))
      << describe(s.reader.latest());
  for (const auto& [topic, key] : acknowledged) {
    EXPECT_TRUE(eventually([&] { return holds_pin(a, topic, key) && holds_pin(b, topic, key); },
                           milliseconds(30000), kPollStep))
        << topic << " " << key;
  }
  expect_versions_never_go_back(s.reader.records());
  expect_no_version_conflicts(s.reader.records());
  if (HasFailure()) std::cerr << a.problems() << b.problems();
}

// The real group coordinator: kill -9 of a member moves its topics (republished by the others
// with a higher epoch) within 3 x session.timeout.ms; SIGTERM leaves the group, so its topics
// move within one rebalance, well before a session could expire.
TEST(KafkaBroker, TopicsMoveWithinThreeSessionsAfterKillNineAndOneRebalanceAfterSigterm) {
  Scenario s({.topics = data_topics(12), .members = 3});
  Node &a = s.member(0), &b = s.member(1), &c = s.member(2);
  ASSERT_TRUE(s.wait_published(milliseconds(90000)));

  // The topics of `gone`, each republished by another member with a higher epoch.
  auto moved_from = [&](Node& gone) {
    std::map<std::string, uint64_t> epochs;
    for (const auto& [t, r] : s.reader.latest()) {
      if (r.member == gone.url()) epochs[t] = r.version >> 32;
    }
    return epochs;
  };
  auto all_moved = [&](const std::map<std::string, uint64_t>& epochs, const Node& gone) {
    auto latest = s.reader.latest();
    for (const auto& [t, epoch] : epochs) {
      if (latest[t].member == gone.url() || (latest[t].version >> 32) <= epoch) return false;
    }
    return true;
  };

  auto epochs = moved_from(a);
  ASSERT_FALSE(epochs.empty());
  auto t0 = Steady::now();
  a.kill9();
  ASSERT_TRUE(eventually([&] { return all_moved(epochs, a); },
                         milliseconds(3 * kSessionTimeoutMs + 10000), milliseconds(20)))
      << describe(s.reader.latest());
  const double kill_s = std::chrono::duration<double>(Steady::now() - t0).count();
  std::printf("[   INFO   ] kill -9: %zu topics republished by the others after %.2f s\n",
              epochs.size(), kill_s);
  EXPECT_LE(kill_s, 3.0 * kSessionTimeoutMs / 1000);

  s.nodes = {&b, &c};
  ASSERT_TRUE(s.wait_published(milliseconds(60000)));
  epochs = moved_from(b);
  ASSERT_FALSE(epochs.empty());
  t0 = Steady::now();
  ASSERT_EQ(b.terminate(), 0);
  ASSERT_TRUE(eventually([&] { return all_moved(epochs, b); }, milliseconds(30000),
                         milliseconds(20)))
      << describe(s.reader.latest());
  const double term_s = std::chrono::duration<double>(Steady::now() - t0).count();
  std::printf("[   INFO   ] SIGTERM: %zu topics republished by the other after %.2f s\n",
              epochs.size(), term_s);
  // Within one rebalance: a member that only expired would take a whole session timeout.
  EXPECT_LT(term_s, kSessionTimeoutMs / 1000.0);
  expect_no_version_conflicts(s.reader.records());
}

class CollectedLog : public LogSink {
 public:
  void write(const api::Json& event) override {
    std::lock_guard lock(mu_);
    text_ += event.dump() + "\n";
  }
  std::string text() const {
    std::lock_guard lock(mu_);
    return text_;
  }

 private:
  mutable std::mutex mu_;
  std::string text_;
};

void no_rebalance(rd_kafka_t*, rd_kafka_resp_err_t, rd_kafka_topic_partition_list_t*, void*) {}

// The gap docs/CLUSTER.md "Versions" describes for epochs alone: an owner that stalled before
// its writes reached the partition leaves no epoch behind, so the next owner can issue the same
// versions, and the stalled one's later writes carry them too. Two lists writers of one lists
// partition, a then b, with the same epoch: with kafka.lists_fencing=1 the broker refuses every
// write of a once b has fenced the partition (b's transactional producer initialised with the
// partition's transactional.id), and a read_committed reader sees only b's lists after that;
// with lists_fencing=0 a's write lands, a second list under b's version (the gap, shown).
TEST(KafkaBroker, ListsFencingMakesTheBrokerRefuseAFormerOwnersWrites) {
  Kafka kafka;
  for (const int fencing : {1, 0}) {
    SCOPED_TRACE(fencing ? "lists_fencing=1" : "lists_fencing=0");
    ClusterConfig cc;
    cc.bootstrap = kafka.bootstrap();
    cc.group = "fence-test-" + std::to_string(fencing);
    cc.lists_fencing = fencing;
    CollectedLog log;
    std::string error;
    kafka::Handles ha, hb;
    ASSERT_TRUE(ha.create(cc, log, &no_rebalance, nullptr, &error)) << error;
    ASSERT_TRUE(hb.create(cc, log, &no_rebalance, nullptr, &error)) << error;
    kafka::ListsWriter a(cc, log, "http://a"), b(cc, log, "http://b");
    a.attach(ha.producer, kPartitions, fencing ? &ha : nullptr);
    b.attach(hb.producer, kPartitions, fencing ? &hb : nullptr);
    const std::string topic = "orders-" + std::to_string(fencing);
    const int32_t p = a.partition_of(topic);
    auto list = [&](uint64_t sequence, const std::string& key) {
      auto pl = std::make_shared<PublishedList>();
      pl->list = test_support::make_list(topic, kafka::epoch_floor(1) | sequence, 12,
                                         HashFamily::kMurmur2, {key}, 2);
      pl->json = list_to_json(pl->list);
      return pl;
    };
    ASSERT_TRUE(a.fence({p}, 30000)) << log.text();
    a.own(p, 1);
    a.publish(list(1, "a-1"));
    // b takes the partition with the same epoch (it found nothing of a's epoch to go above).
    ASSERT_TRUE(b.fence({p}, 30000)) << log.text();
    b.own(p, 1);
    b.publish(list(2, "b-2"));
    a.publish(list(2, "a-2"));  // the stalled owner, resumed, still believing it owns p
    const auto t0 = Steady::now();
    for (uint64_t seq = 3; seq < 13; ++seq) {
      b.publish(list(seq, "b-" + std::to_string(seq)));
      rd_kafka_flush(hb.producer, 10000);  // acknowledged, as a committed transaction is
    }
    std::printf("[   INFO   ] lists_fencing=%d: one list written in %.2f ms (mean of 10)\n",
                fencing, std::chrono::duration<double, std::milli>(Steady::now() - t0).count() / 10);
    // A republish that took its list before a newer one was written: never written after it.
    const uint64_t dropped_before = b.dropped();
    b.publish(list(7, "b-old"));
    EXPECT_EQ(b.dropped(), dropped_before + 1);
    rd_kafka_flush(ha.producer, 10000);
    rd_kafka_flush(hb.producer, 10000);

    // What a client reads (librdkafka's default isolation.level=read_committed).
    std::vector<std::string> seen;
    const auto [low, high] = kafka.real().watermarks("__hotkey_lists", p);
    {
      rd_kafka_t* rk =
          new_rdkafka(RD_KAFKA_CONSUMER, kafka.bootstrap(),
                      {{"group.id", "fence-test-reader"}, {"enable.partition.eof", "true"}});
      rd_kafka_poll_set_consumer(rk);
      rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
      rd_kafka_topic_partition_list_add(parts, "__hotkey_lists", p)->offset =
          RD_KAFKA_OFFSET_BEGINNING;
      rd_kafka_assign(rk, parts);
      rd_kafka_topic_partition_list_destroy(parts);
      const auto deadline = Steady::now() + std::chrono::seconds(20);
      bool eof = false;
      while (!eof && Steady::now() < deadline) {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 200);
        if (!m) continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF && m->offset >= high) eof = true;
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->payload &&
            std::string_view(static_cast<const char*>(m->key), m->key_len) == topic) {
          const HotKeyList l = parse_list_json(
              std::string_view(static_cast<const char*>(m->payload), m->len));
          seen.push_back(std::to_string(l.version & 0xffffffffu) + ":" + l.keys.at(0).key);
        }
        rd_kafka_message_destroy(m);
      }
      rd_kafka_consumer_close(rk);
      rd_kafka_destroy(rk);
    }
    std::string all;
    for (const auto& r : seen) all += r + " ";
    if (fencing) {
      EXPECT_EQ(all, "1:a-1 2:b-2 3:b-3 4:b-4 5:b-5 6:b-6 7:b-7 8:b-8 9:b-9 10:b-10 11:b-11 12:b-12 ")
          << log.text();
      EXPECT_EQ(a.dropped(), 1u);
      EXPECT_NE(log.text().find("lists_writer_fenced"), std::string::npos) << log.text();
    } else {
      // Without fencing, a's write is in the log under b's version.
      EXPECT_NE(all.find("2:a-2"), std::string::npos) << all;
      EXPECT_NE(all.find("2:b-2"), std::string::npos) << all;
    }
    EXPECT_EQ(all.find("b-old"), std::string::npos) << all;
  }
}

}  // namespace
}  // namespace hotkey::coordinator::cluster_test
