// Cluster mode as an operator meets it: the documented upgrade from a single node (docs/CLUSTER.md
// "Upgrade from a single node") walked with the real binaries, and what every member shows of
// the whole cluster. Real coordinators and hotkeyctl on a real Apache Kafka of their own.
#include <gtest/gtest.h>

#include <algorithm>

#include "cluster_harness.h"

namespace hotkey::coordinator::cluster_test {
namespace {

using std::chrono::milliseconds;

// hotkeyctl with `args` (operator token added): its exit code, its stdout in *out.
int hotkeyctl(const std::string& args, std::string* out) {
  const std::string cmd =
      test_support::built_binary("hotkeyctl") + " " + args + " --token " + kOperatorToken;
  return test_support::run_shell(cmd, out, /*merge_stderr=*/true);
}

// Every log line of `n` with event `event`.
std::vector<json> log_events(const Node& n, const std::string& event) {
  std::istringstream lines(n.log());
  std::string line;
  std::vector<json> out;
  while (std::getline(lines, line)) {
    auto j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == event) out.push_back(std::move(j));
  }
  return out;
}

// Binary reports for `topic` posted to a coordinator over HTTP (single-node mode's transport).
void post_reports(int port, const std::string& topic, uint64_t round) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(10, 0);
  for (int p = 0; p < 2; ++p) {
    const Report r = skewed_report("single-" + std::to_string(p), topic, round, p);
    c.Post("/v1/reports", encode_report_binary(r), std::string(kReportBinaryContentType));
  }
}

// One topic per reports partition: whichever partitions a member gets, it owns some of them.
std::vector<std::string> one_topic_per_partition() {
  std::vector<std::string> out(kPartitions);
  for (int i = 0; std::find(out.begin(), out.end(), "") != out.end(); ++i) {
    const std::string t = "orders-" + std::to_string(i);
    if (out[partition_of(t)].empty()) out[partition_of(t)] = t;
  }
  return out;
}

TEST(ClusterOperator, UpgradeFromASingleNodeCarriesItsPinsAndDeniesIntoTheCluster) {
  // Step 1: the three topics exist (created as an operator would).
  Kafka kafka;
  TempDir dir;
  const auto topics = one_topic_per_partition();
  const auto state_file = dir.path() / "state.json";

  // Before the upgrade: one coordinator without --kafka, with a pin and a deny.
  {
    const auto cfg = dir.path() / "single.json";
    std::ofstream(cfg) << json{
        {"warmup_ms", 0},
        {"plan_interval_ms", 500},
        {"epoch_ms", 500}}.dump();
    test_support::CoordinatorOptions o;
    o.data = dir.path() / "old";  // the data directory Node "old" uses below
    o.log = dir.path() / "single.log";
    o.config = cfg;
    o.env["HOTKEY_OPERATOR_TOKEN"] = std::string("ops=") + kOperatorToken;
    test_support::CoordinatorProcess single(o);
    ASSERT_GT(single.wait_port(), 0) << single.log();
    std::string out;
    for (const auto& topic : topics) {
      post_reports(single.port(), topic, 1);
      ASSERT_EQ(hotkeyctl("pin " + topic + " vip --reason launch --url " + single.url(), &out), 0)
          << out;
      ASSERT_EQ(hotkeyctl("deny " + topic + " bot --reason abuse --url " + single.url(), &out), 0)
          << out;
      ASSERT_EQ(hotkeyctl("policy add " + topic + " acct: --never-salt --reason ordered --url " +
                              single.url(),
                          &out),
                0)
          << out;
    }
    // Step 2: save the operator state.
    ASSERT_EQ(hotkeyctl("export --out " + state_file.string() + " --url " + single.url(), &out), 0)
        << out;
    ASSERT_NE(read_file(state_file).find("\"vip\""), std::string::npos) << read_file(state_file);
    single.terminate();
  }

  // Step 3: the old coordinator again, with --kafka on its data directory, beside a new one.
  ReportProducer producer(kafka.bootstrap(), topics);
  ListsReader reader(kafka.bootstrap());
  Node old("old", dir.path(), kafka.bootstrap());
  Node fresh("new", dir.path(), kafka.bootstrap());
  std::vector<Node*> nodes{&old, &fresh};
  std::map<int, size_t> owner;
  ASSERT_TRUE(eventually([&] { return published_by_owners(nodes, reader, topics, &owner); },
                         milliseconds(120000), kPollStep))
      << describe(reader.latest()) << old.log() << fresh.log();

  // Step 4: the import through a member answers without an error (whatever it had to apply).
  std::string out;
  EXPECT_EQ(hotkeyctl("import " + state_file.string() + " --url " + fresh.url(), &out), 0) << out;
  std::printf("import through the new member:\n%s", out.c_str());

  // Every pin and deny is in the state topic: the new member holds them itself.
  auto fresh_holds_all = [&] {
    for (const auto& topic : topics) {
      Held h = held_by(fresh, topic);
      if (h.pins.find("\"vip\"") == std::string::npos ||
          h.denies.find("\"bot\"") == std::string::npos) {
        return false;
      }
      httplib::Client c("127.0.0.1", fresh.port());
      auto policies = c.Get("/v1/topics/" + topic + "/policies");
      if (!policies || policies->body.find("\"acct:\"") == std::string::npos) return false;
    }
    return true;
  };
  EXPECT_TRUE(eventually(fresh_holds_all, milliseconds(20000), kPollStep)) << fresh.log();

  // The old node stops for good: the new member owns everything and publishes every topic
  // with its pin listed and its deny denied.
  old.terminate();
  const std::vector<Node*> remaining{&fresh};
  auto new_owner_lists_all = [&] {
    if (!stable(remaining, &owner)) return false;
    auto latest = reader.latest();
    for (const auto& topic : topics) {
      auto it = latest.find(topic);
      if (it == latest.end() || it->second.member != fresh.url() ||
          it->second.keys.find("vip,") == std::string::npos ||
          it->second.denied.find("bot,") == std::string::npos) {
        return false;
      }
    }
    return true;
  };
  EXPECT_TRUE(eventually(new_owner_lists_all, milliseconds(60000), kPollStep))
      << describe(reader.latest()) << fresh.log();
  EXPECT_TRUE(fresh_holds_all());

  // The old node wrote its state at its first start in cluster mode, the new one had nothing
  // to write; a later start of the old node writes nothing again.
  old.start();
  const auto seeded_old = log_events(old, "state_seeded");
  ASSERT_EQ(seeded_old.size(), 1u) << old.log();
  EXPECT_EQ(seeded_old[0].value("pins", 0), kPartitions);
  EXPECT_EQ(seeded_old[0].value("denies", 0), kPartitions);
  EXPECT_EQ(seeded_old[0].value("policies", 0), kPartitions);
  const auto seeded_new = log_events(fresh, "state_seeded");
  ASSERT_EQ(seeded_new.size(), 1u) << fresh.log();
  EXPECT_EQ(seeded_new[0].value("pins", -1), 0);
}

// GET /v1/topics on `n` (null when it did not answer 200).
json topics_of(const Node& n) {
  auto r = get(n, "/v1/topics");
  if (!r || r->status != 200) return json();
  return json::parse(r->body, nullptr, false);
}

TEST(ClusterOperator, EveryMemberListsTheWholeClusterWithOwnersAndTheGroupsMembers) {
  Scenario s({.topics = one_topic_per_partition()});
  Node &a = s.member(0), &b = s.member(1);
  ASSERT_TRUE(s.wait_published(milliseconds(120000)));

  // Every member lists every topic with its owner, measured by that owner (rate > 0), also
  // the topics it does not own itself.
  std::string last;
  auto lists_all = [&](const Node& n) {
    json j = topics_of(n);
    last = n.name() + ": " + j.dump();
    std::set<std::string> seen;
    for (const auto& t : j.value("topics", json::array())) {
      const std::string topic = t.value("topic", "");
      if (std::find(s.topics.begin(), s.topics.end(), topic) == s.topics.end()) continue;
      if (t.value("owner", "") != s.nodes[s.owner[partition_of(topic)]]->url()) return false;
      if (!t.value("owner_answered", false) || t.value("rate", 0.0) <= 0) return false;
      seen.insert(topic);
    }
    return seen.size() == s.topics.size();
  };
  for (Node* n : s.nodes) {
    EXPECT_TRUE(eventually([&] { return lists_all(*n); }, milliseconds(30000), kPollStep)) << last;
  }
  // hotkeyctl list through either member: every topic, both owners named.
  for (Node* n : s.nodes) {
    std::string out;
    ASSERT_EQ(hotkeyctl("list --url " + n->url(), &out), 0) << out;
    for (const auto& t : s.topics) EXPECT_NE(out.find(t), std::string::npos) << out;
    EXPECT_NE(out.find("OWNER"), std::string::npos) << out;
    EXPECT_NE(out.find(a.url()), std::string::npos) << out;
    EXPECT_NE(out.find(b.url()), std::string::npos) << out;
  }

  // GET /v1/cluster names the group's members as their ownership heartbeats show them: both, with
  // the reports partitions each holds (the owners above), both writing lists.
  auto group_ok = [&](const Node& n) {
    json j = n.cluster();
    last = n.name() + ": " + j.dump();
    std::map<std::string, std::set<int>> parts;
    for (const auto& m : j.value("group_members", json::array())) {
      if (!m.value("writes_lists", false)) return false;
      for (int p : m.value("partitions", std::vector<int>{})) parts[m.value("url", "")].insert(p);
    }
    for (size_t i = 0; i < s.nodes.size(); ++i) {
      std::set<int> want;
      for (const auto& [p, o] : s.owner) {
        if (o == i) want.insert(p);
      }
      if (parts[s.nodes[i]->url()] != want) return false;
    }
    return parts.size() == s.nodes.size();
  };
  for (Node* n : s.nodes) {
    EXPECT_TRUE(eventually([&] { return group_ok(*n); }, milliseconds(30000), kPollStep)) << last;
  }
  {
    std::string out;
    ASSERT_EQ(hotkeyctl("cluster --url " + a.url(), &out), 0) << out;
    EXPECT_NE(out.find("group members (2)"), std::string::npos) << out;
    EXPECT_NE(out.find(b.url()), std::string::npos) << out;
  }

  // A member whose owner does not answer (b paused, before the group notices) still lists b's
  // topics, from what it knows of them: owner named, not answered.
  b.pause();
  json j = topics_of(a);
  b.resume();
  std::set<std::string> seen;
  for (const auto& t : j.value("topics", json::array())) {
    const std::string topic = t.value("topic", "");
    if (std::find(s.topics.begin(), s.topics.end(), topic) == s.topics.end()) continue;
    seen.insert(topic);
    if (t.value("owner", "") == b.url()) {
      EXPECT_FALSE(t.value("owner_answered", true)) << t.dump();
      EXPECT_GT(t.value("version", 0ull), 0ull) << t.dump();
      EXPECT_GT(t.value("partitions", 0), 0) << t.dump();
    }
  }
  EXPECT_EQ(seen.size(), s.topics.size()) << j.dump();
}

// The answer and every member's audit entry carry the version of the owner's first list showing
// the change; before 2026-12-05 a member that did not own the topic audited it at version 0.
TEST(ClusterOperator, WritesThroughAMemberThatDoesNotOwnTheTopicAnswerAndAuditTheOwnersVersion) {
  Scenario s({.topics = one_topic_per_partition()});
  Node &a = s.member(0), &b = s.member(1);
  ASSERT_TRUE(s.wait_published(milliseconds(120000)));
  // A topic of b, written through a.
  std::string topic;
  for (const auto& t : s.topics) {
    if (s.owner[partition_of(t)] == 1) topic = t;
  }
  ASSERT_FALSE(topic.empty());
  auto version_of = [](const httplib::Result& r) {
    return r && r->status == 200 ? json::parse(r->body, nullptr, false).value("version", 0ull)
                                 : 0ull;
  };
  auto pin = operator_call(a, "POST", "/v1/topics/" + topic + "/pins",
                           json{{"key", "vip"}, {"reason", "launch"}});
  ASSERT_TRUE(pin);
  ASSERT_EQ(pin->status, 200) << pin->body;
  const uint64_t pin_version = version_of(pin);
  auto deny = operator_call(a, "POST", "/v1/topics/" + topic + "/denies",
                            json{{"key", "bot"}, {"reason", "abuse"}});
  ASSERT_TRUE(deny);
  ASSERT_EQ(deny->status, 200) << deny->body;
  const uint64_t deny_version = version_of(deny);

  // The versions answered are those of b's first lists showing each change.
  uint64_t listed_pin = 0, listed_deny = 0;
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& r : s.reader.records()) {
          if (r.topic != topic || r.tombstone || r.member != b.url()) continue;
          if (listed_pin == 0 && r.keys.find("vip,") != std::string::npos) listed_pin = r.version;
          if (listed_deny == 0 && r.denied.find("bot,") != std::string::npos) {
            listed_deny = r.version;
          }
        }
        return listed_pin != 0 && listed_deny != 0;
      },
      milliseconds(30000), kPollStep))
      << describe(s.reader.latest());
  EXPECT_EQ(pin_version, listed_pin);
  EXPECT_EQ(deny_version, listed_deny);
  EXPECT_GT(deny_version, pin_version);

  // Each member's audit log: the member written through (a) applied both changes before b
  // published them; b planned them.
  for (Node* n : {&a, &b}) {
    std::string last;
    const bool stamped = eventually(
        [&] {
          auto audit = get(*n, "/v1/audit?limit=50");
          if (!audit || audit->status != 200) return false;
          last = audit->body;
          uint64_t pin_audited = 0, deny_audited = 0;
          for (const auto& e :
               json::parse(audit->body, nullptr, false).value("entries", json::array())) {
            if (e.value("topic", "") != topic) continue;
            if (e.value("action", "") == "pin" && e.value("key", "") == "vip") {
              pin_audited = e.value("version", 0ull);
            }
            if (e.value("action", "") == "deny" && e.value("key", "") == "bot") {
              deny_audited = e.value("version", 0ull);
            }
          }
          return pin_audited == listed_pin && deny_audited == listed_deny;
        },
        milliseconds(10000), kPollStep);
    EXPECT_TRUE(stamped) << n->name() << ": pin at " << listed_pin << ", deny at " << listed_deny
                         << "; audit: " << last;
  }
}

}  // namespace
}  // namespace hotkey::coordinator::cluster_test
