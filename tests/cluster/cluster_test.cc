// Cluster mode end to end: real hotkey-coordinator processes in one consumer group on a real
// Apache Kafka of their own, reports written straight to the reports topic, lists read back from
// the lists topic by a reader that keeps the highest version per topic (as clients do).
#include <gtest/gtest.h>

#include <cstdio>

#include "cluster_harness.h"
#include "hotkey/client/client.h"

namespace hotkey::coordinator::cluster_test {
namespace {

using std::chrono::milliseconds;

TEST(Cluster, RefusesToStartWhenListsAreNotCoPartitionedWithReports) {
  Kafka kafka({.lists_partitions = 4});
  TempDir dir;
  Node a("a", dir.path(), kafka.bootstrap(), /*must_start=*/false);
  EXPECT_EQ(a.port(), 0);
  EXPECT_EQ(a.exit_status(), 5);
  EXPECT_NE(a.log().find("must be co-partitioned"), std::string::npos) << a.log();
}

TEST(Cluster, RefusesToStartWhenInternalTopicsAreMissingAndCannotBeCreated) {
  // CreateTopics refused (replication factor 3 on a one-broker cluster): the coordinator says
  // what to create.
  Kafka kafka({.state_partitions = 0});
  TempDir dir;
  Node a("a", dir.path(), kafka.bootstrap(), /*must_start=*/false, json::object(),
         {"replication_factor=3"});
  EXPECT_EQ(a.exit_status(), 5);
  EXPECT_NE(a.log().find("create __hotkey_state (1 partition, cleanup.policy=compact)"),
            std::string::npos)
      << a.log();
}

TEST(Cluster, ThreeCoordinatorsShareTopicsAndTakeOverAfterKillNine) {
  Scenario s({.topics = data_topics(12), .members = 3});
  Node &a = s.member(0), &b = s.member(1), &c = s.member(2);
  ASSERT_TRUE(
      eventually([&] { return stable(s.nodes, &s.owner); }, milliseconds(120000), kPollStep))
      << a.log() << b.log() << c.log();

  // Every topic's newest list was written by its partition's owner and lists the hot key.
  auto owners_published = [&](const std::vector<Node*>& ns) {
    std::map<int, size_t> own;
    if (!stable(ns, &own)) return false;
    auto latest = s.reader.latest();
    for (const auto& t : s.topics) {
      auto it = latest.find(t);
      if (it == latest.end()) return false;
      if (it->second.member != ns[own[partition_of(t)]]->url()) return false;
      if (it->second.keys.find("hot,") == std::string::npos) return false;
    }
    s.owner = own;
    return true;
  };
  ASSERT_TRUE(eventually([&] { return owners_published(s.nodes); }, milliseconds(60000), kPollStep))
      << describe(s.reader.latest());
  // GET /v1/cluster on any member names the same owner for every topic. A member learns the
  // owners of topics it does not own from its own reader of the lists topic, which may be a
  // moment behind the test's (CI once saw two members still name data-4's previous owner), so
  // every member must agree within a few seconds, not at once.
  std::string disagreement;
  auto members_agree = [&] {
    disagreement.clear();
    for (Node* n : s.nodes) {
      json j = n->cluster();
      if (!j.is_object()) {
        disagreement = n->url() + ": no answer";
        return false;
      }
      if (j["url"] != n->url()) disagreement += n->url() + " calls itself " + j["url"].dump();
      for (const auto& t : s.topics) {
        const std::string want = s.nodes[s.owner[partition_of(t)]]->url();
        if (j["owners"].contains(t) && j["owners"][t] != want) {
          disagreement += n->url() + " names " + j["owners"][t].dump() + " for " + t +
                          ", the owner is " + want + "\n";
        }
      }
    }
    return disagreement.empty();
  };
  EXPECT_TRUE(eventually(members_agree, milliseconds(15000), kPollStep)) << disagreement;

  // Top keys and the summary of a topic from a member that does not own it: the owner's
  // answers (its window: reports in it, the partition loads).
  {
    Node* owner_node = s.nodes[s.owner[partition_of("data-0")]];
    Node* other = owner_node == &a ? &b : &a;
    httplib::Client cli("127.0.0.1", other->port());
    cli.set_read_timeout(10, 0);
    // The member learns the owner from its own reader of the lists topic, which may be a moment
    // behind the test's (a loaded machine once saw it answer 404 for data-0 there).
    auto r = cli.Get("/v1/topics/data-0/top?n=5");
    eventually(
        [&] {
          r = cli.Get("/v1/topics/data-0/top?n=5");
          return r && r->get_header_value("X-Hotkey-Owner") == owner_node->url();
        },
        milliseconds(10000), kPollStep);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("X-Hotkey-Owner"), owner_node->url());
    EXPECT_NE(r->body.find("\"hot\""), std::string::npos) << r->body;
    r = cli.Get("/v1/topics/data-0");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("X-Hotkey-Owner"), owner_node->url());
    json summary = json::parse(r->body, nullptr, false);
    EXPECT_GT(summary.value("window_reports", 0.0), 0.0) << r->body;
    EXPECT_FALSE(summary.value("partition_load", json::array()).empty()) << r->body;
  }

  // Reports posted over HTTP to a member that does not own their topic reach the owner
  // through the reports topic: the owner lists the topic's hot key.
  {
    const std::string topic = "via-http";
    Node* owner_node = s.nodes[s.owner[partition_of(topic)]];
    Node* other = owner_node == &a ? &b : &a;
    httplib::Client cli("127.0.0.1", other->port());
    cli.set_read_timeout(10, 0);
    uint64_t seq = 0;
    std::string last;
    auto listed = [&] {
      ++seq;
      for (int p = 0; p < 2; ++p) {
        const Report r = skewed_report("http-" + std::to_string(p), topic, seq, p, "surge");
        auto res =
            cli.Post("/v1/reports", encode_report_binary(r), std::string(kReportBinaryContentType));
        last = res ? std::to_string(res->status) + " " + res->body : "no answer";
        if (!res || res->status != 200) return false;
      }
      auto latest = s.reader.latest();
      auto it = latest.find(topic);
      return it != latest.end() && it->second.member == owner_node->url() &&
             it->second.keys.find("surge,") != std::string::npos;
    };
    ASSERT_TRUE(eventually(listed, milliseconds(60000), kPollStep)) << last << "\n"
                                                                    << describe(s.reader.latest());
    EXPECT_GT(other->cluster().value("reports_forwarded", 0), 0);
  }

  // hotkeyctl cluster against any member prints the owner of every topic it knows.
  {
    const std::string cmd = test_support::built_binary("hotkeyctl") + " cluster --url " + b.url();
    std::string text;
    EXPECT_EQ(test_support::run_shell(cmd, &text, /*merge_stderr=*/false), 0) << text;
    EXPECT_NE(text.find("member " + b.url()), std::string::npos) << text;
    const std::string owner_url = s.nodes[s.owner[partition_of("data-0")]]->url();
    EXPECT_NE(text.find(owner_url), std::string::npos) << text;
  }

  // kill -9 the owner of data-0: its topics move to the others, whose versions are higher.
  Node* victim = s.nodes[s.owner[partition_of("data-0")]];
  std::map<std::string, uint64_t> before;
  for (const auto& [t, r] : s.reader.latest()) {
    if (r.member == victim->url()) before[t] = r.version;
  }
  ASSERT_FALSE(before.empty());
  const auto killed_at = Steady::now();
  victim->kill9();
  std::vector<Node*> survivors;
  for (Node* n : s.nodes) {
    if (n != victim) survivors.push_back(n);
  }
  auto taken_over = [&] {
    auto latest = s.reader.latest();
    for (const auto& [t, v] : before) {
      const ListRecord& r = latest[t];
      if (r.member == victim->url() || r.version <= v) return false;
    }
    return true;
  };
  // Owned and published by another within 3 x session.timeout.ms on the mock (measured
  // ~11 s); the deadline adds slack for a loaded machine, the figure is printed.
  ASSERT_TRUE(eventually(taken_over, milliseconds(3 * kSessionTimeoutMs + 20000), kPollStep))
      << describe(s.reader.latest());
  const auto took = std::chrono::duration_cast<milliseconds>(Steady::now() - killed_at).count();
  std::printf("failover: kill -9 -> every topic republished by a new owner in %lld ms\n",
              static_cast<long long>(took));
  ASSERT_TRUE(
      eventually([&] { return owners_published(survivors); }, milliseconds(30000), kPollStep))
      << describe(s.reader.latest());
  for (const auto& [t, v] : before) {
    EXPECT_GT(s.reader.latest()[t].version >> 32, v >> 32) << t << ": the new owner's epoch";
  }
  expect_no_version_conflicts(s.reader.records());
  EXPECT_EQ(s.reader.invalid(), 0u);
}

TEST(Cluster, PausedCoordinatorsStaleListsAreNeverAcceptedAfterTheNewOwnerPublished) {
  Scenario s({.topics = data_topics(8)});
  Node &a = s.member(0), &b = s.member(1);
  ASSERT_TRUE(s.wait_published(milliseconds(120000)));

  // The zombie's topics and the highest epoch it wrote each of them with.
  std::map<std::string, uint64_t> zombie_epoch;
  for (const auto& t : s.topics) {
    if (s.owner[partition_of(t)] == 0) zombie_epoch[t] = 0;
  }
  ASSERT_FALSE(zombie_epoch.empty());
  for (const auto& r : s.reader.records()) {
    if (r.member == a.url() && zombie_epoch.contains(r.topic)) {
      zombie_epoch[r.topic] = std::max(zombie_epoch[r.topic], r.version >> 32);
    }
  }

  // SIGSTOP past max.poll.interval.ms (7 s) and the session timeout: b takes everything.
  a.pause();
  ASSERT_TRUE(eventually(
      [&] {
        if (b.owned().size() != static_cast<size_t>(kPartitions)) return false;
        auto latest = s.reader.latest();
        for (const auto& [t, e] : zombie_epoch) {
          if (latest[t].member != b.url()) return false;
        }
        return true;
      },
      milliseconds(90000), kPollStep))
      << describe(s.reader.latest()) << b.log();
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
  for (const auto& r : s.reader.records()) {
    auto z = zombie_epoch.find(r.topic);
    if (z == zombie_epoch.end()) continue;
    // b's takeover lists (above the zombie's epoch): b may also have written the topic before
    // a first owned it, which says nothing of the takeover.
    if (r.member == b.url() && (r.version >> 32) > z->second) new_owner_published[r.topic] = true;
    if (r.member == a.url() && (r.version >> 32) <= z->second && new_owner_published[r.topic]) {
      ++stale_written;
      if (r.accepted) {
        ++stale_accepted;
        ADD_FAILURE() << "accepted stale list: " << r.topic << " v" << (r.version >> 32) << "."
                      << (r.version & 0xffffffffu) << " [" << r.keys << "] at " << r.partition
                      << "/" << r.offset;
      }
    }
  }
  // lists_dropped: lists the zombie issued but did not write because its ownership was gone.
  std::printf(
      "zombie: %zu stale lists written after the new owner published, %zu accepted; "
      "zombie status %s\n",
      stale_written, stale_accepted, a.cluster().dump().c_str());
  EXPECT_EQ(stale_accepted, 0u) << ownership_lines(a) << ownership_lines(b)
                                << describe(s.reader.latest());
  expect_no_version_conflicts(s.reader.records());
  EXPECT_EQ(s.reader.invalid(), 0u);
}

TEST(Cluster, OperatorWritesSurviveTheirCoordinatorsKillAndAFullRestart) {
  Scenario s({.topics = data_topics(6)});
  Node &a = s.member(0), &b = s.member(1);
  ASSERT_TRUE(s.wait_published(milliseconds(120000)));
  std::string ta, tb;  // a topic of a, a topic of b
  for (const auto& t : s.topics) {
    (s.owner[partition_of(t)] == 0 ? ta : tb) = t;
  }
  ASSERT_FALSE(ta.empty());
  ASSERT_FALSE(tb.empty());

  // Through a, for its own topic and for b's: acknowledged only once in the state topic.
  auto r1 = operator_call(a, "POST", "/v1/topics/" + ta + "/pins",
                          json{{"key", "pinned-a"}, {"reason", "test"}});
  ASSERT_TRUE(r1);
  ASSERT_EQ(r1->status, 200) << r1->body;
  auto r2 = operator_call(a, "POST", "/v1/topics/" + tb + "/pins",
                          json{{"key", "pinned-b"}, {"reason", "test"}});
  ASSERT_TRUE(r2);
  ASSERT_EQ(r2->status, 200) << r2->body;
  auto r3 = operator_call(a, "POST", "/v1/topics/" + tb + "/denies",
                          json{{"key", "hot"}, {"reason", "ordering"}});
  ASSERT_TRUE(r3);
  ASSERT_EQ(r3->status, 200) << r3->body;
  // A removal this member does not know of is refused without a write.
  auto r4 = operator_call(a, "DELETE", "/v1/topics/" + ta + "/pins?key=never-pinned");
  ASSERT_TRUE(r4);
  EXPECT_EQ(r4->status, 404) << r4->body;

  auto in_force = [&](const std::map<std::string, ListRecord>& latest) {
    auto ia = latest.find(ta), ib = latest.find(tb);
    return ia != latest.end() && ib != latest.end() &&
           ia->second.keys.find("pinned-a,") != std::string::npos &&
           ib->second.keys.find("pinned-b,") != std::string::npos &&
           ib->second.keys.find("hot,") == std::string::npos;
  };
  ASSERT_TRUE(
      eventually([&] { return in_force(s.reader.latest()); }, milliseconds(30000), kPollStep))
      << describe(s.reader.latest());
  // b (which received none of the calls) holds them too.
  {
    httplib::Client c("127.0.0.1", b.port());
    auto pins = c.Get("/v1/topics/" + ta + "/pins");
    ASSERT_TRUE(pins);
    EXPECT_NE(pins->body.find("pinned-a"), std::string::npos) << pins->body;
  }

  // kill -9 a: b owns everything, and a's pins are still in force.
  a.kill9();
  ASSERT_TRUE(eventually(
      [&] {
        auto latest = s.reader.latest();
        return latest[ta].member == b.url() && in_force(latest);
      },
      milliseconds(3 * kSessionTimeoutMs + 20000), kPollStep))
      << describe(s.reader.latest());
  std::map<std::string, uint64_t> before;
  for (const auto& [t, r] : s.reader.latest()) before[t] = r.version;

  // Restart of every coordinator: state back from RocksDB + the state topic after the
  // checkpoint, versions continue upward.
  ASSERT_EQ(b.terminate(), 0);
  a.start();
  b.start();
  EXPECT_GT(last_state_resumed(b)["from"]["0"].get<int64_t>(), 0) << b.log();
  EXPECT_GT(last_state_resumed(a)["from"]["0"].get<int64_t>(), 0) << a.log();
  ASSERT_TRUE(eventually(
      [&] {
        auto latest = s.reader.latest();
        for (const auto& [t, v] : before) {
          if (latest[t].version <= v) return false;
        }
        return in_force(latest) && s.published();
      },
      milliseconds(120000), kPollStep))
      << describe(s.reader.latest());
  expect_no_version_conflicts(s.reader.records());
  EXPECT_EQ(s.reader.invalid(), 0u);
}

// Issue 26 item 5: a policy made through a member that does not own the topic goes through
// the state topic; the owner applies it (its list leaves the key out and names the prefix),
// every member holds it, and the member that takes the topic over after the owner's kill -9
// keeps applying it.
TEST(Cluster, PoliciesThroughAnyMemberAreAppliedByTheOwnerAndSurviveItsFailover) {
  Scenario s({.topics = data_topics(6)});
  Node &a = s.member(0), &b = s.member(1);
  std::string tb;  // a topic b owns, with "hot" listed
  ASSERT_TRUE(s.wait_until(
      [&] {
        if (!stable(s.nodes, &s.owner)) return false;
        auto latest = s.reader.latest();
        for (const auto& t : s.topics) {
          auto it = latest.find(t);
          if (s.owner[partition_of(t)] == 1 && it != latest.end() && it->second.member == b.url() &&
              it->second.keys.find("hot,") != std::string::npos) {
            tb = t;
            return true;
          }
        }
        return false;
      },
      milliseconds(120000)));

  auto r = operator_call(a, "POST", "/v1/topics/" + tb + "/policies",
                         json{{"key", "ho"}, {"never_salt", true}, {"reason", "ordering"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  // A removal this member does not know of is refused without a write.
  r = operator_call(a, "DELETE", "/v1/topics/" + tb + "/policies?key=nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;

  // The list `n` serves for tb leaves "hot" out and names the prefix.
  auto applied_by = [&](const Node& n) {
    httplib::Client c("127.0.0.1", n.port());
    auto list = c.Get("/v1/hotkeys?topic=" + tb);
    if (!list || list->status != 200) return false;
    const json j = json::parse(list->body, nullptr, false);
    if (!j.is_object() || !j.contains("never_salt") || j["never_salt"].empty()) return false;
    for (const auto& k : j["keys"]) {
      if (k.value("key", "") == "hot") return false;
    }
    return j["never_salt"][0].value("key", "") == "ho";
  };
  ASSERT_TRUE(eventually(
      [&] {
        auto latest = s.reader.latest();
        return latest[tb].member == b.url() && latest[tb].keys.find("hot,") == std::string::npos &&
               applied_by(b);
      },
      milliseconds(30000), kPollStep))
      << describe(s.reader.latest());
  for (Node* n : s.nodes) {
    httplib::Client c("127.0.0.1", n->port());
    auto pol = c.Get("/v1/topics/" + tb + "/policies");
    ASSERT_TRUE(pol);
    EXPECT_NE(pol->body.find("\"never_salt\":true"), std::string::npos) << n->name() << pol->body;
  }

  // kill -9 the owner: a takes tb over and keeps the policy in force.
  const uint64_t before = s.reader.latest()[tb].version;
  b.kill9();
  ASSERT_TRUE(eventually(
      [&] {
        auto latest = s.reader.latest();
        return latest[tb].member == a.url() && latest[tb].version > before &&
               latest[tb].keys.find("hot,") == std::string::npos && applied_by(a);
      },
      milliseconds(3 * kSessionTimeoutMs + 20000), kPollStep))
      << describe(s.reader.latest());
  // Reports keep coming: a's later plans keep it out too.
  std::this_thread::sleep_for(milliseconds(2000));
  EXPECT_EQ(s.reader.latest()[tb].keys.find("hot,"), std::string::npos)
      << describe(s.reader.latest());
  EXPECT_TRUE(applied_by(a));
  expect_no_version_conflicts(s.reader.records());
  EXPECT_EQ(s.reader.invalid(), 0u);
}

// A delete through the member that does not own the topic: the owner tombstones its list,
// every member forgets it (topic list, pins, denies) and audits the delete, a client on the
// kafka transport routes it plain with its version kept; it stays deleted across a restart of
// every member, and when its reports return it comes back above every version it had.
TEST(Cluster, DeleteThroughAnyMemberTombstonesTheListEveryMemberForgetsItAndItReturnsAbove) {
  const std::string doomed = "doomed";
  std::vector<std::string> reported = data_topics(3);
  reported.push_back(doomed);
  // A 30 s window: the one rebuilt after the restart below reaches back before the delete.
  Scenario s({.topics = reported, .settings = json{{"window_epochs", 60}}});
  Node &a = s.member(0), &b = s.member(1);
  // Every topic but `except` listed with its hot key by its owner.
  auto all_published = [&](const std::string& except) {
    if (!stable(s.nodes, &s.owner)) return false;
    auto latest = s.reader.latest();
    for (const auto& t : s.topics) {
      if (t == except) continue;
      auto it = latest.find(t);
      if (it == latest.end() || it->second.member != s.nodes[s.owner[partition_of(t)]]->url() ||
          it->second.keys.find("hot,") == std::string::npos) {
        return false;
      }
    }
    return true;
  };
  ASSERT_TRUE(s.wait_until([&] { return all_published(""); }, milliseconds(120000)));
  Node* own = s.nodes[s.owner[partition_of(doomed)]];
  Node* other = own == &a ? &b : &a;

  // A pin and a deny (through the owner): both members hold them.
  auto r = operator_call(*own, "POST", "/v1/topics/" + doomed + "/pins",
                         json{{"key", "pinned-d"}, {"reason", "test"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  r = operator_call(*own, "POST", "/v1/topics/" + doomed + "/denies",
                    json{{"key", "denied-d"}, {"reason", "test"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  ASSERT_TRUE(eventually(
      [&] {
        Held h = held_by(*other, doomed);
        return h.pins.find("pinned-d") != std::string::npos &&
               h.denies.find("denied-d") != std::string::npos;
      },
      milliseconds(30000), kPollStep));

  // A client on the kafka transport routes the topic's hot key salted. (Its own reports would
  // bring the topic back: it sends none during the test.)
  hotkey::client::Client client({{"bootstrap.servers", s.kafka.bootstrap()},
                                 {"hotkey.transport", "kafka"},
                                 {"hotkey.producer.id", "delete-test-client"},
                                 {"hotkey.topics", doomed},
                                 {"hotkey.report.interval.ms", "3600000"}});
  const hotkey::client::TopicId id = *client.router().find_topic(doomed);
  auto routes_salted = [&] {
    auto list = client.router().list(id);
    if (!list) return false;
    for (const auto& k : list->keys) {
      if (k.key == "hot") return true;
    }
    return false;
  };
  ASSERT_TRUE(eventually(routes_salted, milliseconds(30000), kPollStep));

  // The topic's reports stop; the owner has read the last ones before the delete.
  s.producer.pause(doomed);
  std::this_thread::sleep_for(milliseconds(2000));
  const int64_t delete_called_ms =
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  r = operator_call(*other, "DELETE", "/v1/topics/" + doomed + "?reason=delete-test");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;

  // The owner wrote the tombstone; it ends the topic's records.
  ASSERT_TRUE(eventually([&] { return s.reader.latest()[doomed].tombstone; }, milliseconds(30000),
                         kPollStep))
      << describe(s.reader.latest());
  EXPECT_EQ(s.reader.latest()[doomed].member, own->url());
  uint64_t old = 0;
  for (const auto& rec : s.reader.records()) {
    if (rec.topic == doomed && !rec.tombstone) old = std::max(old, rec.version);
  }
  ASSERT_GT(old, 0u);
  EXPECT_EQ(s.reader.latest()[doomed].version, old);

  // Every member forgot it and audited the delete.
  for (Node* n : s.nodes) {
    EXPECT_TRUE(
        eventually([&] { return held_by(*n, doomed).none(); }, milliseconds(30000), kPollStep))
        << n->name() << ": " << held_by(*n, doomed).pins << " " << held_by(*n, doomed).denies;
    auto audit = get(*n, "/v1/audit?limit=50");
    ASSERT_TRUE(audit);
    bool audited = false;
    for (const auto& e : json::parse(audit->body, nullptr, false).value("entries", json::array())) {
      if (e.value("action", "") == "delete_topic" && e.value("topic", "") == doomed &&
          e.value("detail", json::object()).value("reason", "") == "delete-test") {
        audited = true;
      }
    }
    EXPECT_TRUE(audited) << n->name() << ": " << audit->body;
  }
  // The client routes it plain again and keeps the version it had.
  ASSERT_TRUE(eventually([&] { return client.router().list(id) == nullptr; }, milliseconds(30000),
                         kPollStep));
  hotkey::client::RouteDecision d = client.route(id, "hot", 3, "", 12);
  EXPECT_FALSE(d.salted);
  EXPECT_EQ(d.version, 0u);
  EXPECT_EQ(client.router().version(id), old);
  // Deleted is unknown.
  r = operator_call(*own, "DELETE", "/v1/topics/" + doomed + "?reason=again");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;

  // Reports stamped before the delete (written late, or read again when a window is rebuilt)
  // do not bring it back.
  s.producer.send_stamped(doomed, delete_called_ms - 1000, 1);
  s.producer.send_stamped(doomed, delete_called_ms - 1000, 2);
  std::this_thread::sleep_for(milliseconds(3000));
  EXPECT_TRUE(held_by(*own, doomed).none());
  EXPECT_TRUE(s.reader.latest()[doomed].tombstone) << describe(s.reader.latest());

  // A restart of every member: it stays deleted (the lists topic ends with its tombstone).
  ASSERT_EQ(b.terminate(), 0) << tail_of(b.log());
  ASSERT_EQ(a.terminate(), 0) << tail_of(a.log());
  a.start();
  b.start();
  ASSERT_TRUE(eventually([&] { return all_published(doomed); }, milliseconds(120000), kPollStep))
      << describe(s.reader.latest());
  std::this_thread::sleep_for(milliseconds(2000));
  for (Node* n : s.nodes) EXPECT_TRUE(held_by(*n, doomed).none()) << n->name();
  EXPECT_TRUE(s.reader.latest()[doomed].tombstone) << describe(s.reader.latest());

  // Its reports return: it comes back, listed above every version it had, and the client takes
  // that list.
  s.producer.resume(doomed);
  ASSERT_TRUE(eventually(
      [&] {
        const ListRecord l = s.reader.latest()[doomed];
        return !l.tombstone && l.version > old && l.keys.find("hot,") != std::string::npos;
      },
      milliseconds(60000), kPollStep))
      << describe(s.reader.latest());
  EXPECT_TRUE(client.wait_for_version(id, old + 1, std::chrono::seconds(30)));
  EXPECT_TRUE(routes_salted());
  EXPECT_TRUE(held_by(*own, doomed).listed || held_by(*other, doomed).listed);
  expect_no_version_conflicts(s.reader.records());
  EXPECT_EQ(s.reader.invalid(), 0u);
}

// Idle expiry in cluster mode: only the owner expires a topic, through the state topic; every
// member forgets it and the owner tombstones its list. A topic with a pin does not expire.
TEST(Cluster, IdleTopicsExpireThroughTheOwnerOnEveryMember) {
  const std::string idle = "goes-idle", pinned = "pinned-idle";
  std::vector<std::string> reported = data_topics(2);
  reported.push_back(idle);
  reported.push_back(pinned);
  Scenario s({.topics = reported, .settings = json{{"topic_idle_ttl_ms", 6000}}});
  Node &a = s.member(0), &b = s.member(1);
  ASSERT_TRUE(s.wait_published(milliseconds(120000)));
  auto r = operator_call(a, "POST", "/v1/topics/" + pinned + "/pins",
                         json{{"key", "keep-me"}, {"reason", "test"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  s.producer.pause(idle);
  s.producer.pause(pinned);
  Node* own = s.nodes[s.owner[partition_of(idle)]];

  ASSERT_TRUE(
      eventually([&] { return s.reader.latest()[idle].tombstone; }, milliseconds(60000), kPollStep))
      << describe(s.reader.latest());
  EXPECT_EQ(s.reader.latest()[idle].member, own->url());
  for (Node* n : s.nodes) {
    EXPECT_TRUE(
        eventually([&] { return held_by(*n, idle).none(); }, milliseconds(30000), kPollStep))
        << n->name();
    EXPECT_NE(n->log().find("\"topic_expired\""), std::string::npos) << n->name();
  }
  // The only expiry requests came from the owner.
  const Node* not_owner = own == &a ? &b : &a;
  EXPECT_EQ(not_owner->log().find("topic_expiry_requested"), std::string::npos);
  EXPECT_NE(own->log().find("topic_expiry_requested"), std::string::npos);
  // Topics still reported, and the pinned one, stay.
  for (const auto& t : s.topics) {
    if (t == idle) continue;
    EXPECT_FALSE(s.reader.latest()[t].tombstone) << t;
    EXPECT_TRUE(held_by(*s.nodes[s.owner[partition_of(t)]], t).listed) << t;
  }
  EXPECT_NE(held_by(b, pinned).pins.find("keep-me"), std::string::npos);
}

}  // namespace
}  // namespace hotkey::coordinator::cluster_test
