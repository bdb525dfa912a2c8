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
  const std::string cmd = test_support::built_binary("hotkeyctl") + " " + args + " --token " +
                          kOperatorToken;
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
    std::map<std::string, uint64_t> counts{{"hot", 500}};
    coordinator::test::add_tail(counts, 500, 200, static_cast<uint32_t>(round * 7 + p));
    Report r =
        coordinator::test::make_report("single-" + std::to_string(p), topic, 12, round, counts, 64);
    r.window_ms = 300;
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
    std::ofstream(cfg) << json{{"warmup_ms", 0}, {"plan_interval_ms", 500}, {"epoch_ms", 500}}
                              .dump();
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
    ASSERT_EQ(hotkeyctl("export --out " + state_file.string() + " --url " + single.url(), &out),
              0)
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

}  // namespace
}  // namespace hotkey::coordinator::cluster_test
