// Cluster mode with the real client library: hotkey-coordinator processes in one consumer group
// on a real Apache Kafka broker (KRaft, started by the test), and a fleet of producer processes
// (hotkey-test-fleet-producer: hotkey::Producer with hotkey.transport=kafka) sending a skewed
// workload to 12 data topics. Checked from the producers' side: what they route with.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <optional>

#include "cluster_harness.h"

namespace hotkey::coordinator::cluster_test {
namespace {

using std::chrono::milliseconds;

constexpr int kDataTopics = 12;
constexpr int kDataPartitions = 12;
constexpr int kProducers = 20;
constexpr double kRatePerProducer = 240;  // records/s over all topics: 4,800/s for the fleet

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

void create_data_topics(Kafka& kafka, const std::vector<std::string>& topics) {
  for (const auto& t : topics) kafka.real().create_topic(t, kDataPartitions);
}

// One hotkey-test-fleet-producer process.
class FleetProducer {
 public:
  FleetProducer(const std::filesystem::path& dir, int index, const std::string& bootstrap,
                const std::vector<std::string>& topics, const std::string& transport,
                const std::string& coordinator, double duration_s)
      : status_(dir / ("producer-" + std::to_string(index) + ".json")),
        log_(dir / ("producer-" + std::to_string(index) + ".log")) {
    std::vector<std::string> args{"--bootstrap", bootstrap,
                                  "--topics",    join(topics),
                                  "--transport", transport,
                                  "--id",        "fleet-" + std::to_string(index),
                                  "--rate",      std::to_string(kRatePerProducer),
                                  "--duration",  std::to_string(duration_s),
                                  "--seed",      std::to_string(index + 1),
                                  "--status",    status_.string()};
    if (!coordinator.empty()) {
      args.push_back("--coordinator");
      args.push_back(coordinator);
    }
    test_support::ChildSpec spec;
    spec.binary = test_support::built_binary("hotkey-test-fleet-producer");
    spec.args = args;
    spec.stderr_file = log_;
    proc_ = std::make_unique<test_support::ChildProcess>(spec);
  }
  FleetProducer(const FleetProducer&) = delete;
  FleetProducer& operator=(const FleetProducer&) = delete;

  // The last status the process wrote (null before the first).
  json status() const {
    json j = json::parse(read_file(status_), nullptr, false);
    return j.is_discarded() ? json() : j;
  }
  // SIGTERM: the process stops sending, flushes and writes its final status.
  void terminate() { proc_->signal(SIGTERM); }
  // Waits for the process (after terminate()) and returns its final status.
  json stop() {
    proc_->terminate(std::chrono::minutes(5));
    return status();
  }
  std::string log() const { return read_file(log_); }

 private:
  std::filesystem::path status_, log_;
  std::unique_ptr<test_support::ChildProcess> proc_;
};

// The fleet: kProducers producers of `topics` over `transport` (http: to `coordinator`), each
// sending for 600 s at most (the tests stop them sooner).
std::vector<std::unique_ptr<FleetProducer>> start_fleet(const std::filesystem::path& dir,
                                                        const std::string& bootstrap,
                                                        const std::vector<std::string>& topics,
                                                        const std::string& transport,
                                                        const std::string& coordinator = "") {
  std::vector<std::unique_ptr<FleetProducer>> fleet;
  for (int i = 0; i < kProducers; ++i) {
    fleet.push_back(
        std::make_unique<FleetProducer>(dir, i, bootstrap, topics, transport, coordinator, 600));
  }
  return fleet;
}

// A coordinator in single-node HTTP mode (no --kafka), for the balance baseline.
class SingleNode {
 public:
  explicit SingleNode(const std::filesystem::path& dir) : log_(dir / "single.log") {
    const auto cfg = dir / "single.json";
    std::ofstream(cfg) << R"({"warmup_ms": 0, "plan_interval_ms": 500, "epoch_ms": 500,
      "defaults": {"min_rate": 1, "hold_ms": 5000}})";
    test_support::CoordinatorOptions o;
    o.data = dir / "single-data";
    o.config = cfg;
    o.log = log_;
    proc_ = std::make_unique<test_support::CoordinatorProcess>(o);
    port_ = proc_->wait_port(milliseconds(60000));
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

 private:
  std::filesystem::path log_;
  std::unique_ptr<test_support::CoordinatorProcess> proc_;
  int port_ = 0;
};

// End offsets of every data topic's partitions, all in one ListOffsets round (the latest offset
// of each partition; a query per partition took tens of seconds on a loaded machine, which
// stretched the measured windows, and a failed query must not read as offset -1).
class Offsets {
 public:
  explicit Offsets(const std::string& bootstrap)
      : rk_(new_rdkafka(RD_KAFKA_PRODUCER, bootstrap)) {}
  ~Offsets() { rd_kafka_destroy(rk_); }
  std::map<std::string, std::vector<int64_t>> take(const std::vector<std::string>& topics) {
    for (int attempt = 0; attempt < 10; ++attempt) {
      rd_kafka_topic_partition_list_t* l =
          rd_kafka_topic_partition_list_new(static_cast<int>(topics.size()) * kDataPartitions);
      for (const auto& t : topics) {
        for (int p = 0; p < kDataPartitions; ++p) {
          rd_kafka_topic_partition_list_add(l, t.c_str(), p)->offset = RD_KAFKA_OFFSET_END;
        }
      }
      bool ok = rd_kafka_offsets_for_times(rk_, l, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR;
      std::map<std::string, std::vector<int64_t>> out;
      for (int i = 0; ok && i < l->cnt; ++i) {
        const auto& e = l->elems[i];
        ok = e.err == RD_KAFKA_RESP_ERR_NO_ERROR && e.offset >= 0;
        auto& v = out[e.topic];
        v.resize(kDataPartitions, 0);
        v[static_cast<size_t>(e.partition)] = e.offset;
      }
      rd_kafka_topic_partition_list_destroy(l);
      if (ok) return out;
    }
    ADD_FAILURE() << "could not read the data topics' end offsets";
    return {};
  }

 private:
  rd_kafka_t* rk_ = nullptr;
};

// max/avg partition load per topic over the records written between two offset snapshots.
std::map<std::string, double> max_over_avg(const std::map<std::string, std::vector<int64_t>>& a,
                                           const std::map<std::string, std::vector<int64_t>>& b) {
  std::map<std::string, double> out;
  for (const auto& [t, before] : a) {
    if (!b.count(t)) continue;
    const auto& after = b.at(t);
    double sum = 0, mx = 0;
    for (size_t p = 0; p < before.size(); ++p) {
      const double d = static_cast<double>(after[p] - before[p]);
      sum += d;
      mx = std::max(mx, d);
    }
    out[t] = sum > 0 ? mx / (sum / static_cast<double>(before.size())) : 0;
  }
  return out;
}

// Every producer routes every topic with a list that salts the topic's fleet-hot key.
bool every_hot_key_listed(const std::vector<std::unique_ptr<FleetProducer>>& fleet,
                          const std::vector<std::string>& topics) {
  for (const auto& p : fleet) {
    json s = p->status();
    if (!s.is_object()) return false;
    for (const auto& t : topics) {
      if (!s["topics"].contains(t)) return false;
      bool listed = false;
      for (const auto& k : s["topics"][t]["keys"]) listed = listed || k == "hot-" + t;
      if (!listed) return false;
    }
  }
  return true;
}

// Which partitions each node says it owns (GET /v1/cluster), for failure messages.
std::string describe_owned(const std::vector<Node*>& nodes) {
  std::string out;
  for (Node* n : nodes) {
    out += n->url() + (n->running() ? "" : " (stopped)") + " owns";
    for (int p : n->owned()) out += " " + std::to_string(p);
    out += "\n";
  }
  return out;
}

// The most records any producer has sent and not yet had delivered.
double delivery_lag(const std::vector<std::unique_ptr<FleetProducer>>& fleet) {
  double lag = 0;
  for (const auto& p : fleet) {
    json s = p->status();
    if (!s.is_object()) return 1e18;
    lag = std::max(lag, static_cast<double>(s.value("sent", 0)) -
                            static_cast<double>(s.value("delivered", 0)));
  }
  return lag;
}

// The list version each topic is routed with by the fleet's first producer.
std::map<std::string, uint64_t> routed_versions(
    const std::vector<std::unique_ptr<FleetProducer>>& fleet,
    const std::vector<std::string>& topics) {
  std::map<std::string, uint64_t> out;
  json s = fleet.front()->status();
  for (const auto& t : topics) {
    out[t] =
        s.is_object() && s["topics"].contains(t) ? s["topics"][t].value("version", uint64_t{0}) : 0;
  }
  return out;
}

struct Measured {
  std::map<std::string, double> max_over_avg;
  std::map<std::string, uint64_t> versions;  // published during the measured stretch
  double minutes = 0;                        // how long the versions were counted over
};

// Runs the fleet until every hot key is listed everywhere, lets the lists settle, then returns
// max/avg per topic over a measured stretch and how many list versions came out during it.
Measured measure_balance(const std::string& bootstrap,
                         const std::vector<std::unique_ptr<FleetProducer>>& fleet,
                         const std::vector<std::string>& topics,
                         const std::function<bool()>& ready) {
  EXPECT_TRUE(eventually([&] { return ready() && every_hot_key_listed(fleet, topics); },
                         milliseconds(120000), kPollStep));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  // The broker's end offsets measure what the producers sent only once their deliveries keep
  // up: records still queued from before the lists arrived are unsalted (a JVM broker starved
  // by a loaded machine ran 17 s behind the fleet, and the "balance" measured was the backlog).
  EXPECT_TRUE(eventually([&] { return delivery_lag(fleet) <= kRatePerProducer; },
                         milliseconds(120000), kPollStep))
      << "the broker does not keep up with the fleet: " << delivery_lag(fleet)
      << " records sent and not yet delivered by one producer";
  Offsets offsets(bootstrap);
  const auto v0 = routed_versions(fleet, topics);
  const auto t0 = Steady::now();
  auto before = offsets.take(topics);
  std::this_thread::sleep_for(std::chrono::seconds(15));
  Measured m;
  m.max_over_avg = max_over_avg(before, offsets.take(topics));
  const auto v1 = routed_versions(fleet, topics);
  m.minutes = std::chrono::duration<double>(Steady::now() - t0).count() / 60;
  for (const auto& t : topics) {
    // A version is (epoch << 32) | sequence; a new epoch (failover) restarts the sequence.
    const uint64_t a = v0.at(t), b = v1.at(t);
    m.versions[t] =
        (a >> 32) == (b >> 32) ? (b & 0xffffffffu) - (a & 0xffffffffu) : (b & 0xffffffffu);
  }
  return m;
}

// The producers' final statuses: nothing refused, failed or lost, no version ever went back.
void expect_fleet_healthy(std::vector<std::unique_ptr<FleetProducer>>& fleet) {
  int64_t max_us = 0;
  for (auto& p : fleet) p->terminate();  // all at once: they flush in parallel
  for (auto& p : fleet) {
    json s = p->stop();
    ASSERT_TRUE(s.is_object()) << p->log();
    EXPECT_TRUE(s.value("done", false)) << p->log();
    EXPECT_EQ(s.value("refused", -1), 0) << p->log();
    EXPECT_EQ(s.value("failed", -1), 0) << p->log();
    EXPECT_EQ(s.value("delivered", 0), s.value("sent", 1)) << p->log();
    EXPECT_EQ(s.value("regressions", -1), 0);
    EXPECT_GT(s.value("reports_sent", 0), 0);
    max_us = std::max<int64_t>(max_us, s.value("max_produce_us", int64_t{0}));
  }
  std::printf("longest produce() call in the fleet: %lld us\n", static_cast<long long>(max_us));
  // Blocking on the coordinators would last as long as the failover (over 10 s); a loaded
  // machine can deschedule a thread for a while (1.9 s seen at load average ~1,000), hence
  // the generous bound.
  EXPECT_LT(max_us, 5000000);
}

// The same fleet and workload against one coordinator over HTTP and three over Kafka. Per topic,
// 15 s of 400 records/s over 12 partitions is 6,000 records: max/avg of that is about 1.07 from
// sampling alone (max of 12 Gaussians) and varies by about 0.05, so the per-topic figures of two
// runs cannot agree within 0.05 even on one node. The fleet's mean over its 12 topics can: it
// must be within 0.05 of the single node's, both must stay near the floor (1.08-1.09 measured,
// bound 1.15), no topic may come near what no salting gives (5.4; bound 1.6), and the lists
// must keep to the churn goal while they balance. HOTKEY_TEST_EVIDENCE=DIR prints every topic's
// summary (both runs) and GET /v1/cluster of each member, and copies the logs to DIR.
// History: disabled until the window stopped clipping small reports (cluster mean 1.23-1.89,
// every hot key's home partition at 1.6-1.9x the average; coordinator_load_test.cc); then flaky
// (1.16-1.27 on either side, 5-17 versions per topic in the 15 s) until new lists stopped
// starting every producer's round robin at the heaviest salt (client/src/routing_table.cc).
TEST(ClientCluster, TwentyKafkaProducersOnThreeCoordinatorsBalanceLikeOneNode) {
  const auto topics = data_topics(kDataTopics);
  Measured single, cluster;
  {
    // Baseline: one coordinator over HTTP, the same fleet and workload.
    Kafka kafka;
    create_data_topics(kafka, topics);
    TempDir dir;
    SingleNode node(dir.path());
    ASSERT_NE(node.port(), 0);
    auto fleet = start_fleet(dir.path(), kafka.bootstrap(), topics, "http", node.url());
    single = measure_balance(kafka.bootstrap(), fleet, topics, [] { return true; });
    if (std::getenv("HOTKEY_TEST_EVIDENCE")) {
      for (const auto& t : topics) {
        httplib::Client cli("127.0.0.1", node.port());
        auto r = cli.Get("/v1/topics/" + t);
        std::printf("EVIDENCE single topic %s: %s\n", t.c_str(), r ? r->body.c_str() : "-");
      }
      httplib::Client cli("127.0.0.1", node.port());
      auto r = cli.Get("/v1/hotkeys?topic=data-0");
      std::printf("EVIDENCE single list data-0: %s\n", r ? r->body.c_str() : "-");
    }
    expect_fleet_healthy(fleet);
  }
  {
    Kafka kafka;
    create_data_topics(kafka, topics);
    TempDir dir;
    Node a("a", dir.path(), kafka.bootstrap());
    Node b("b", dir.path(), kafka.bootstrap());
    Node c("c", dir.path(), kafka.bootstrap());
    std::vector<Node*> nodes{&a, &b, &c};
    auto fleet = start_fleet(dir.path(), kafka.bootstrap(), topics, "kafka");
    std::map<int, size_t> owner;
    cluster = measure_balance(kafka.bootstrap(), fleet, topics, [&] {
      // Every topic owned by exactly one coordinator, every coordinator owning some.
      if (!stable(nodes, &owner)) return false;
      std::set<size_t> members;
      for (const auto& [p, n] : owner) members.insert(n);
      return members.size() == nodes.size();
    });
    ASSERT_TRUE(eventually([&] { return stable(nodes, &owner); }, milliseconds(30000), kPollStep))
        << describe_owned(nodes);
    if (const char* ev = std::getenv("HOTKEY_TEST_EVIDENCE")) {
      for (const auto& t : topics) {
        httplib::Client cli("127.0.0.1", a.port());
        cli.set_read_timeout(10, 0);
        auto r = cli.Get("/v1/topics/" + t);
        std::printf("EVIDENCE topic %s: %s\n", t.c_str(), r ? r->body.c_str() : "-");
      }
      for (Node* n : nodes) std::printf("EVIDENCE cluster %s\n", n->cluster().dump().c_str());
      for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
        if (e.path().extension() == ".log" || e.path().extension() == ".json") {
          std::filesystem::copy(e.path(), std::filesystem::path(ev) / e.path().filename(),
                                std::filesystem::copy_options::overwrite_existing);
        }
      }
      for (const auto& t : {"data-0", "data-1"}) {
        httplib::Client cli("127.0.0.1", a.port());
        auto r = cli.Get(std::string("/v1/hotkeys?topic=") + t);
        std::printf("EVIDENCE list %s: %s\n", t, r ? r->body.c_str() : "-");
      }
    }
    expect_fleet_healthy(fleet);
  }
  double single_mean = 0, cluster_mean = 0;
  uint64_t single_versions = 0, cluster_versions = 0;
  for (const auto& t : topics) {
    const double s = single.max_over_avg[t], c = cluster.max_over_avg[t];
    std::printf("%s max/avg: single node %.3f, 3 coordinators %.3f; versions: %llu, %llu\n",
                t.c_str(), s, c, static_cast<unsigned long long>(single.versions[t]),
                static_cast<unsigned long long>(cluster.versions[t]));
    EXPECT_GT(s, 0.99) << t;
    EXPECT_LE(c, 1.6) << t;
    single_mean += s / static_cast<double>(topics.size());
    cluster_mean += c / static_cast<double>(topics.size());
    single_versions += single.versions[t];
    cluster_versions += cluster.versions[t];
  }
  std::printf("mean max/avg over %zu topics: single node %.3f, 3 coordinators %.3f\n",
              topics.size(), single_mean, cluster_mean);
  std::printf(
      "versions over %zu topics: single node %llu in %.2f min, 3 coordinators %llu in %.2f min\n",
      topics.size(), static_cast<unsigned long long>(single_versions), single.minutes,
      static_cast<unsigned long long>(cluster_versions), cluster.minutes);
  EXPECT_LE(cluster_mean, single_mean + 0.05);
  // Both near the noise floor, not merely alike: while every new list started the producers'
  // round robin at its heaviest salts, the tables ran away on this fleet (a new version every
  // 1-2 s per topic, max/avg 1.16-1.27 on one node and 1.17-1.25 on three).
  EXPECT_LE(single_mean, 1.15);
  EXPECT_LE(cluster_mean, 1.15);
  // The churn goal, 20 versions a minute per topic: 5 in the 15 s (more when reading the
  // offsets stretched the measured time), 60 over the 12 topics.
  const auto churn_bound = [&](double minutes) {
    return static_cast<double>(topics.size()) * std::max(5.0, 20.0 * minutes);
  };
  EXPECT_LE(static_cast<double>(single_versions), churn_bound(single.minutes));
  EXPECT_LE(static_cast<double>(cluster_versions), churn_bound(cluster.minutes));
}

TEST(ClientCluster, KillNineOfACoordinatorMidRunListsKeepFlowingAndNoVersionGoesBack) {
  const auto topics = data_topics(kDataTopics);
  Kafka kafka;
  create_data_topics(kafka, topics);
  TempDir dir;
  Node a("a", dir.path(), kafka.bootstrap());
  Node b("b", dir.path(), kafka.bootstrap());
  Node c("c", dir.path(), kafka.bootstrap());
  std::vector<Node*> nodes{&a, &b, &c};
  auto fleet = start_fleet(dir.path(), kafka.bootstrap(), topics, "kafka");
  std::map<int, size_t> owner;
  ASSERT_TRUE(
      eventually([&] { return stable(nodes, &owner) && every_hot_key_listed(fleet, topics); },
                 milliseconds(120000), kPollStep))
      << a.log() << b.log() << c.log();
  // What the broker holds over the gap must be what the producers sent during it (see
  // measure_balance): no backlog of records from before the lists arrived.
  ASSERT_TRUE(eventually([&] { return delivery_lag(fleet) <= kRatePerProducer; },
                         milliseconds(120000), kPollStep))
      << "the broker does not keep up with the fleet: " << delivery_lag(fleet)
      << " records sent and not yet delivered by one producer";

  // Who owns what, taken again right before the kill: the snapshot above may be two minutes
  // old. Each node must answer and the partitions must be owned once (a node that did not
  // answer once counted as owning nothing, and the test then blamed the victim for topics a
  // survivor owned).
  ASSERT_TRUE(eventually([&] { return stable(nodes, &owner); }, milliseconds(30000), kPollStep))
      << describe_owned(nodes);
  // The victim owns data-0; its topics and the version every producer routes them with.
  Node* victim = nodes[owner[partition_of("data-0")]];
  std::vector<std::string> moved;
  for (const auto& t : topics) {
    if (nodes[owner[partition_of(t)]] == victim) moved.push_back(t);
  }
  std::vector<std::map<std::string, uint64_t>> before(fleet.size());
  for (size_t i = 0; i < fleet.size(); ++i) {
    json s = fleet[i]->status();
    for (const auto& t : moved) before[i][t] = s["topics"][t].value("version", uint64_t{0});
  }
  const std::map<int, size_t> owner_at_kill = owner;
  Offsets offsets(kafka.bootstrap());
  const auto at_kill = offsets.take(moved);
  const auto killed_at = Steady::now();
  victim->kill9();
  std::vector<Node*> survivors;
  for (Node* n : nodes) {
    if (n != victim) survivors.push_back(n);
  }
  // Owned by the others (the figure is printed; the goal is 3 x session.timeout.ms).
  ASSERT_TRUE(eventually([&] { return stable(survivors, &owner); },
                         milliseconds(3 * kSessionTimeoutMs + 30000), kPollStep))
      << describe_owned(nodes) << victim->log();
  const auto owned_ms = std::chrono::duration_cast<milliseconds>(Steady::now() - killed_at).count();
  // Lists keep flowing: every producer routes the moved topics with a newer version (the new
  // owner's epoch) that still salts the hot key.
  ASSERT_TRUE(eventually(
      [&] {
        for (size_t i = 0; i < fleet.size(); ++i) {
          json s = fleet[i]->status();
          if (!s.is_object()) return false;
          for (const auto& t : moved) {
            if (s["topics"][t].value("version", uint64_t{0}) >> 32 <= before[i][t] >> 32) {
              return false;
            }
          }
        }
        return every_hot_key_listed(fleet, topics);
      },
      milliseconds(60000), kPollStep))
      << [&] {
           // Who is behind, and what the members did.
           std::string out;
           for (size_t i = 0; i < fleet.size(); ++i) {
             json s = fleet[i]->status();
             for (const auto& t : moved) {
               const json tj = s.is_object() ? s["topics"][t] : json();
               out += "producer " + std::to_string(i) + " " + t + ": " + tj.dump() +
                      " (before: " + std::to_string(before[i][t]) + ")\n";
             }
           }
           out += "owners at the kill:";
           for (const auto& [p, i] : owner_at_kill) out += " " + std::to_string(p) + "=" + nodes[i]->url();
           out += "\nnow:\n" + describe_owned(nodes) + "the victim's log:\n" + victim->log();
           for (Node* n : survivors) out += n->log();
           return out;
         }();
  const auto flowing_ms =
      std::chrono::duration_cast<milliseconds>(Steady::now() - killed_at).count();
  // Balance over the gap, from kill -9 until every producer routes with the new owner's lists:
  // the producers kept the dead owner's last lists, so the moved topics stay salted.
  const auto gap = max_over_avg(at_kill, offsets.take(moved));
  double worst_gap = 0;
  for (const auto& [t, r] : gap) worst_gap = std::max(worst_gap, r);
  std::printf(
      "kill -9: %zu topics owned by the others after %lld ms (goal %d ms), every "
      "producer on the new owner's lists after %lld ms; max/avg of the moved topics over the "
      "gap: worst %.3f\n",
      moved.size(), static_cast<long long>(owned_ms), 3 * kSessionTimeoutMs,
      static_cast<long long>(flowing_ms), worst_gap);
  for (const auto& [t, r] : gap) EXPECT_LE(r, 2.0) << t << " during the failover gap";
  // Keep sending a little longer on the new owners' lists, then check the fleet.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  expect_fleet_healthy(fleet);
}

}  // namespace
}  // namespace hotkey::coordinator::cluster_test
