// Cluster mode under broker faults, on librdkafka's mock cluster (the one scenario that injects
// faults a real broker cannot be told to do): leader moves, a broker down, produce and fetch
// errors. Its own executable so that it runs alone (RUN_SERIAL). Its first publication used to
// miss its 120 s now and then (twice in CI, 2026-12-03; 3 of 4 runs on a fresh machine,
// 2026-12-05): a member had aborted on a librdkafka 2.0.2 assertion after DescribeConfigs timed
// out waiting for a controller the mock does not name (the coordinator now asks a named broker:
// coordinator/kafka/topic_admin.cc, cleanup_policy).
#include <gtest/gtest.h>

#include <cstdio>

#include "cluster_harness.h"
namespace hotkey::coordinator::cluster_test {
namespace {

using std::chrono::milliseconds;

// Leader moves, a broker down for a few seconds and injected produce/fetch errors while
// operator writes go through both members: every acknowledged write is in force on both
// members and on the owner's list; every member's versions of a topic only grow.
TEST(Cluster, BrokerFaultsLoseNoAcknowledgedOperatorWriteAndNoVersionRegresses) {
  Scenario<MockKafka> s({.topics = data_topics(4)});
  Node &a = s.member(0), &b = s.member(1);
  ASSERT_TRUE(s.wait_published(milliseconds(120000)));

  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> acknowledged;  // (topic, key)
  std::atomic<int> refused{0};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      const std::string topic = s.topics[static_cast<size_t>(i) % s.topics.size()];
      const std::string key = "op-" + std::to_string(i);
      auto r = operator_call(i % 2 == 0 ? a : b, "POST", "/v1/topics/" + topic + "/pins",
                             json{{"key", key}, {"reason", "fault test"}});
      if (r && r->status == 200) {
        std::lock_guard lock(mu);
        acknowledged.emplace_back(topic, key);
      } else {
        refused.fetch_add(1);
      }
      std::this_thread::sleep_for(milliseconds(150));
    }
  });

  rd_kafka_mock_cluster_t* mc = s.kafka.handle();
  // Leaders of the state and lists partitions move around.
  for (int32_t leader : {2, 3, 1}) {
    rd_kafka_mock_partition_set_leader(mc, "__hotkey_state", 0, leader);
    for (int p = 0; p < kPartitions; ++p) {
      rd_kafka_mock_partition_set_leader(mc, "__hotkey_lists", p, (leader + p) % 3 + 1);
    }
    std::this_thread::sleep_for(milliseconds(1500));
  }
  // Produce and fetch requests fail a few times (retriable errors).
  rd_kafka_mock_push_request_errors(
      mc, 0 /* Produce */, 4, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
      RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
      RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE);
  rd_kafka_mock_push_request_errors(
      mc, 1 /* Fetch */, 3, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
      RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
  std::this_thread::sleep_for(milliseconds(2000));
  // The state partition's leader goes down for 4 s.
  rd_kafka_mock_partition_set_leader(mc, "__hotkey_state", 0, 2);
  std::this_thread::sleep_for(milliseconds(500));
  rd_kafka_mock_broker_set_down(mc, 2);
  std::this_thread::sleep_for(milliseconds(4000));
  rd_kafka_mock_broker_set_up(mc, 2);
  std::this_thread::sleep_for(milliseconds(3000));
  stop = true;
  writer.join();
  std::printf("operator writes: %zu acknowledged, %d not acknowledged\n", acknowledged.size(),
              refused.load());
  ASSERT_GE(acknowledged.size(), 5u);

  // Every acknowledged pin is held by both members and listed by the topic's owner.
  ASSERT_TRUE(eventually(
      [&] {
        if (!s.published()) return false;
        auto latest = s.reader.latest();
        for (const auto& [topic, key] : acknowledged) {
          if (latest[topic].keys.find(key + ",") == std::string::npos) return false;
        }
        return true;
      },
      milliseconds(90000), kPollStep))
      << describe(s.reader.latest()) << [&] {
           std::string out;
           for (const auto& [topic, key] : acknowledged) {
             out += topic + " " + key + ": a " + (holds_pin(a, topic, key) ? "holds" : "lacks") +
                    ", b " + (holds_pin(b, topic, key) ? "holds" : "lacks") + "\n";
           }
           for (Node* n : s.nodes) {
             std::istringstream lines(n->log());
             std::string line;
             while (std::getline(lines, line)) {
               if (line.find("\"warn\"") != std::string::npos ||
                   line.find("\"error\"") != std::string::npos ||
                   line.find("state_") != std::string::npos) {
                 out += n->name() + ": " + line.substr(0, 300) + "\n";
               }
             }
             out += n->name() + " cluster: " + n->cluster().dump() + "\n";
           }
           return out;
         }();
  // Each member applies the state topic at its own pace (it may still be catching up after the
  // faults when the owner's lists already show a write that came through the other member).
  for (const auto& [topic, key] : acknowledged) {
    EXPECT_TRUE(
        eventually([&] { return holds_pin(a, topic, key); }, milliseconds(30000), kPollStep))
        << topic << " " << key;
    EXPECT_TRUE(
        eventually([&] { return holds_pin(b, topic, key); }, milliseconds(30000), kPollStep))
        << topic << " " << key;
  }
  // Per member and topic, versions in log order never go down (republish repeats one).
  expect_versions_never_go_back(s.reader.records());
  expect_no_version_conflicts(s.reader.records());
}

}  // namespace
}  // namespace hotkey::coordinator::cluster_test

namespace hotkey::coordinator::cluster_test {
namespace {

// SIGTERM ends a member within kafka.drain_timeout_ms (plus the watchdog's margin) whatever the
// brokers do: answering 30 s late, or not at all. A member that cannot leave the group in time
// logs drain_cut and exits (0; 6 when the watchdog had to end it); its partitions then move
// after the session timeout, as after a kill.
TEST(Cluster, SigtermExitsWithinTheDrainBoundWhenBrokersAreSlowOrGone) {
  constexpr int kDrainMs = 3000;
  Scenario<MockKafka> s(
      {.topics = data_topics(4), .kafka_sets = {"drain_timeout_ms=" + std::to_string(kDrainMs)}});
  Node &a = s.member(0), &b = s.member(1);
  ASSERT_TRUE(s.wait_published(milliseconds(120000)));
  rd_kafka_mock_cluster_t* mc = s.kafka.handle();
  // The bound: the drain, the watchdog's 5 s margin, and slack for a loaded machine.
  const milliseconds bound(kDrainMs + 5000 + 3000);
  const auto stop_timed = [&](Node& n, const char* brokers) {
    const auto t0 = Steady::now();
    const int status = n.terminate();
    const auto took = std::chrono::duration_cast<milliseconds>(Steady::now() - t0);
    std::printf("[   INFO   ] SIGTERM with brokers %s: exit status %d after %lld ms\n", brokers,
                status, static_cast<long long>(took.count()));
    EXPECT_LE(took, bound) << brokers;
    EXPECT_TRUE(status == 0 || status == 6) << brokers << ": status " << status;
  };
  // Every broker answers 30 s late: leaving the group and flushing cannot finish in time.
  for (int32_t id = 1; id <= 3; ++id) rd_kafka_mock_broker_set_rtt(mc, id, 30000);
  stop_timed(a, "30 s slow");
  EXPECT_NE(a.log().find("\"drain_cut\""), std::string::npos) << a.problems();
  // Every broker gone.
  for (int32_t id = 1; id <= 3; ++id) {
    rd_kafka_mock_broker_set_rtt(mc, id, 0);
    rd_kafka_mock_broker_set_down(mc, id);
  }
  stop_timed(b, "down");
}

// A member stopped before the group gave it its first assignment (a rolling restart that stops
// a member it just started, a pod scaled down at once) exits as after any other SIGTERM, not by
// librdkafka 2.0.2's abort destroying a cooperative-sticky consumer that joined but has no
// assignor state yet (librdkafka issue 4312, fixed in 2.3.0). The mock cluster forms a group
// about 3 s after its first member joins: members stopped 0-3.5 s after start cover the time
// before the join, between the join and the first assignment, and after it. Before the fix,
// 3 of these 8 exited 134 (SIGABRT).
TEST(Cluster, SigtermBeforeTheFirstAssignmentExitsCleanly) {
  Scenario<MockKafka> s({.topics = data_topics(4), .members = 0});
  for (int delay_ms : {0, 500, 1000, 1500, 2000, 2500, 3000, 3500}) {
    Node& n = s.add_member("m" + std::to_string(delay_ms));
    std::this_thread::sleep_for(milliseconds(delay_ms));
    const int status = n.terminate();
    EXPECT_EQ(status, 0) << "stopped " << delay_ms << " ms after start: exit status " << status
                         << " (134: SIGABRT)\n"
                         << n.problems();
  }
}

}  // namespace
}  // namespace hotkey::coordinator::cluster_test
