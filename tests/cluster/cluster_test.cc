// Cluster mode end to end: real hotkey-coordinator processes in one consumer group on a mock
// Kafka cluster of their own, reports written straight to the reports topic, lists read back
// from the lists topic by a reader that keeps the highest version per topic (as clients do).
#include <gtest/gtest.h>

#include <cstdio>

#include "cluster_harness.h"

namespace hotkey::coordinator::cluster_test {
namespace {

using std::chrono::milliseconds;

// Every reports partition owned by exactly one of the running `nodes`, each of which owns at
// least one; fills `owner` (partition -> node index).
bool stable(const std::vector<Node*>& nodes, std::map<int, size_t>* owner) {
  owner->clear();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i]->running()) continue;
    const std::set<int> mine = nodes[i]->owned();
    if (mine.empty()) return false;
    for (int p : mine) {
      if (!owner->emplace(p, i).second) return false;
    }
  }
  return owner->size() == static_cast<size_t>(kPartitions);
}

// Two records of one topic with one version must be one list (same author, same keys).
void expect_no_version_conflicts(const std::vector<ListRecord>& records) {
  std::map<std::pair<std::string, uint64_t>, const ListRecord*> seen;
  size_t conflicts = 0;
  for (const auto& r : records) {
    auto [it, inserted] = seen.emplace(std::make_pair(r.topic, r.version), &r);
    if (!inserted && (it->second->member != r.member || it->second->keys != r.keys)) {
      ++conflicts;
      ADD_FAILURE() << "topic " << r.topic << " version " << r.version << " written by "
                    << it->second->member << " [" << it->second->keys << "] and " << r.member
                    << " [" << r.keys << "]";
    }
  }
  EXPECT_EQ(conflicts, 0u);
}

std::string describe(const std::map<std::string, ListRecord>& latest) {
  std::string out;
  for (const auto& [t, r] : latest) {
    out += t + " v" + std::to_string(r.version >> 32) + "." +
           std::to_string(r.version & 0xffffffffu) + " by " + r.member + " [" + r.keys + "]\n";
  }
  return out;
}

TEST(Cluster, RefusesToStartWhenListsAreNotCoPartitionedWithReports) {
  MockKafka kafka(3, /*lists_partitions=*/4);
  TempDir dir;
  Node a("a", dir.path(), kafka.bootstrap(), /*must_start=*/false);
  EXPECT_EQ(a.port(), 0);
  EXPECT_EQ(a.exit_status(), 5);
  EXPECT_NE(a.log().find("must be co-partitioned"), std::string::npos) << a.log();
}

TEST(Cluster, RefusesToStartWhenInternalTopicsAreMissingAndCannotBeCreated) {
  // The mock has no CreateTopics: the coordinator tries, then says what to create.
  MockKafka kafka(3, kPartitions, /*state_partitions=*/0);
  TempDir dir;
  Node a("a", dir.path(), kafka.bootstrap(), /*must_start=*/false);
  EXPECT_EQ(a.exit_status(), 5);
  EXPECT_NE(a.log().find("create __hotkey_state (1 partitions, cleanup.policy=compact)"),
            std::string::npos)
      << a.log();
}

TEST(Cluster, ThreeCoordinatorsShareTopicsAndTakeOverAfterKillNine) {
  MockKafka kafka;
  TempDir dir;
  const auto topics = data_topics(12);
  ReportProducer producer(kafka.bootstrap(), topics);
  ListsReader reader(kafka.bootstrap());
  Node a("a", dir.path(), kafka.bootstrap());
  Node b("b", dir.path(), kafka.bootstrap());
  Node c("c", dir.path(), kafka.bootstrap());
  std::vector<Node*> nodes{&a, &b, &c};

  std::map<int, size_t> owner;
  ASSERT_TRUE(eventually([&] { return stable(nodes, &owner); }, milliseconds(120000)))
      << a.log() << b.log() << c.log();

  // Every topic's newest list was written by its partition's owner and lists the hot key.
  auto owners_published = [&](const std::vector<Node*>& ns) {
    std::map<int, size_t> own;
    if (!stable(ns, &own)) return false;
    auto latest = reader.latest();
    for (const auto& t : topics) {
      auto it = latest.find(t);
      if (it == latest.end()) return false;
      if (it->second.member != ns[own[partition_of(t)]]->url()) return false;
      if (it->second.keys.find("hot,") == std::string::npos) return false;
    }
    owner = own;
    return true;
  };
  ASSERT_TRUE(eventually([&] { return owners_published(nodes); }, milliseconds(60000)))
      << describe(reader.latest());
  // GET /v1/cluster on any member names the same owner for every topic.
  for (Node* n : nodes) {
    json j = n->cluster();
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["url"], n->url());
    for (const auto& t : topics) {
      if (j["owners"].contains(t)) {
        EXPECT_EQ(j["owners"][t], nodes[owner[partition_of(t)]]->url()) << t;
      }
    }
  }

  // kill -9 the owner of data-0: its topics move to the others, whose versions are higher.
  Node* victim = nodes[owner[partition_of("data-0")]];
  std::map<std::string, uint64_t> before;
  for (const auto& [t, r] : reader.latest()) {
    if (r.member == victim->url()) before[t] = r.version;
  }
  ASSERT_FALSE(before.empty());
  const auto killed_at = Steady::now();
  victim->kill9();
  std::vector<Node*> survivors;
  for (Node* n : nodes) {
    if (n != victim) survivors.push_back(n);
  }
  auto taken_over = [&] {
    auto latest = reader.latest();
    for (const auto& [t, v] : before) {
      const ListRecord& r = latest[t];
      if (r.member == victim->url() || r.version <= v) return false;
    }
    return true;
  };
  // Owned and published by another within 3 x session.timeout.ms on the mock (measured
  // ~11 s); the deadline adds slack for a loaded machine, the figure is printed.
  ASSERT_TRUE(eventually(taken_over, milliseconds(3 * kSessionTimeoutMs + 20000)))
      << describe(reader.latest());
  const auto took =
      std::chrono::duration_cast<milliseconds>(Steady::now() - killed_at).count();
  std::printf("failover: kill -9 -> every topic republished by a new owner in %lld ms\n",
              static_cast<long long>(took));
  ASSERT_TRUE(eventually([&] { return owners_published(survivors); }, milliseconds(30000)))
      << describe(reader.latest());
  for (const auto& [t, v] : before) {
    EXPECT_GT(reader.latest()[t].version >> 32, v >> 32) << t << ": the new owner's epoch";
  }
  expect_no_version_conflicts(reader.records());
  EXPECT_EQ(reader.invalid(), 0u);
}

TEST(Cluster, PausedCoordinatorsStaleListsAreNeverAcceptedAfterTheNewOwnerPublished) {
  MockKafka kafka;
  TempDir dir;
  const auto topics = data_topics(8);
  ReportProducer producer(kafka.bootstrap(), topics);
  ListsReader reader(kafka.bootstrap());
  Node a("a", dir.path(), kafka.bootstrap());
  Node b("b", dir.path(), kafka.bootstrap());
  std::vector<Node*> nodes{&a, &b};
  std::map<int, size_t> owner;
  auto all_published = [&] {
    if (!stable(nodes, &owner)) return false;
    auto latest = reader.latest();
    for (const auto& t : topics) {
      auto it = latest.find(t);
      if (it == latest.end() || it->second.member != nodes[owner[partition_of(t)]]->url()) {
        return false;
      }
    }
    return true;
  };
  ASSERT_TRUE(eventually(all_published, milliseconds(120000))) << describe(reader.latest());

  // The zombie's topics and the highest epoch it wrote each of them with.
  std::map<std::string, uint64_t> zombie_epoch;
  for (const auto& t : topics) {
    if (owner[partition_of(t)] == 0) zombie_epoch[t] = 0;
  }
  ASSERT_FALSE(zombie_epoch.empty());
  for (const auto& r : reader.records()) {
    if (r.member == a.url() && zombie_epoch.contains(r.topic)) {
      zombie_epoch[r.topic] = std::max(zombie_epoch[r.topic], r.version >> 32);
    }
  }

  // SIGSTOP past max.poll.interval.ms (7 s) and the session timeout: b takes everything.
  a.pause();
  ASSERT_TRUE(eventually(
      [&] {
        if (b.owned().size() != static_cast<size_t>(kPartitions)) return false;
        auto latest = reader.latest();
        for (const auto& [t, e] : zombie_epoch) {
          if (latest[t].member != b.url()) return false;
        }
        return true;
      },
      milliseconds(90000)))
      << describe(reader.latest()) << b.log();
  // SIGCONT, and operator pins sent to the zombie at once so that it issues new lists before
  // it notices that it lost its partitions: whatever it writes with its old epoch must lose
  // to b's lists.
  a.resume();
  {
    httplib::Client c("127.0.0.1", a.port());
    c.set_read_timeout(5, 0);
    const httplib::Headers auth{{"Authorization", std::string("Bearer ") + kOperatorToken}};
    const auto until = Steady::now() + milliseconds(3000);
    for (int i = 0; Steady::now() < until; ++i) {
      for (const auto& [t, e] : zombie_epoch) {
        c.Post("/v1/topics/" + t + "/pins", auth,
               json{{"key", "zombie-" + std::to_string(i)}, {"reason", "zombie test"}}.dump(),
               "application/json");
      }
    }
  }
  std::this_thread::sleep_for(milliseconds(6000));

  std::map<std::string, bool> new_owner_published;
  size_t stale_written = 0, stale_accepted = 0;
  for (const auto& r : reader.records()) {
    auto z = zombie_epoch.find(r.topic);
    if (z == zombie_epoch.end()) continue;
    if (r.member == b.url()) new_owner_published[r.topic] = true;
    if (r.member == a.url() && (r.version >> 32) <= z->second && new_owner_published[r.topic]) {
      ++stale_written;
      if (r.accepted) ++stale_accepted;
    }
  }
  // lists_dropped: lists the zombie issued but did not write because its ownership was gone.
  std::printf(
      "zombie: %zu stale lists written after the new owner published, %zu accepted; "
      "zombie status %s\n",
      stale_written, stale_accepted, a.cluster().dump().c_str());
  EXPECT_EQ(stale_accepted, 0u);
  expect_no_version_conflicts(reader.records());
  EXPECT_EQ(reader.invalid(), 0u);
}

}  // namespace
}  // namespace hotkey::coordinator::cluster_test
