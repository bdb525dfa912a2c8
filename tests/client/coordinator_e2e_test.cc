// The whole loop: three producers (threads, each its own hotkey::Producer) send a skewed
// workload to a librdkafka mock cluster while reporting to a real hotkey-coordinator process;
// the hot key is detected fleet-wide, every producer salts it, the brokers' end offsets show
// the spread, cold keys keep their order, and a coordinator crash blocks nothing.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "hotkey/client/merge.h"
#include "hotkey/client/producer.h"
#include "hotkey/partitioner.h"
#include "mock_cluster.h"
#include "support/coordinator_process.h"
#include "test_util.h"

namespace hotkey::client {
namespace {

using std::chrono::milliseconds;
using test::eventually;

constexpr int kPartitions = 12;
constexpr const char* kTopic = "fleet";
constexpr const char* kOperatorToken = "op-secret";

// A port nobody listens on. Not httplib::Server::bind_to_any_port: a server that never ran
// keeps its socket open (listening, SO_REUSEPORT, backlog 5), so the kernel handed part of
// the coordinator's connections to that dead socket, where they hung until a timeout.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// A hotkey-coordinator child process.
class CoordinatorProcess {
 public:
  // `topics` is the config file's "topics" section (per-topic overrides).
  CoordinatorProcess(int port, std::filesystem::path dir, const std::string& topics = "{}")
      : port_(port), dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "config.json") << R"({
      "epoch_ms": 200, "window_epochs": 5, "plan_interval_ms": 100, "warmup_ms": 0,
      "producer_timeout_ms": 5000,
      "defaults": {"min_rate": 1, "hold_ms": 60000, "balance_min_fraction": 1.5},
      "topics": )" << topics << "}";
  }
  ~CoordinatorProcess() { kill(); }

  bool start() {
    hotkey::test_support::CoordinatorOptions o;
    o.listen = "127.0.0.1:" + std::to_string(port_);
    o.data = dir_ / "data";
    o.config = dir_ / "config.json";
    o.log = dir_ / "coordinator.log";
    o.append_log = true;
    o.extra_args = {"--operator-token", std::string("ops=") + kOperatorToken};
    proc_ = std::make_unique<hotkey::test_support::CoordinatorProcess>(o);
    httplib::Client cli("127.0.0.1", port_);
    cli.set_connection_timeout(0, 200000);
    return eventually(
               [&] {
                 if (!proc_->running()) return true;  // exited: bad flags or config
                 auto res = cli.Get("/readyz");
                 return res && res->status == 200;
               },
               // Generous: ctest -j2 runs this beside CPU-heavy tests on two cores.
               std::chrono::seconds(60)) &&
           proc_->running();
  }

  void kill() {
    if (proc_) proc_->kill9();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

 private:
  int port_;
  std::filesystem::path dir_;
  std::unique_ptr<hotkey::test_support::CoordinatorProcess> proc_;
};

struct Fleet {
  std::vector<std::unique_ptr<Producer>> producers;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> produce_errors{0};
  std::vector<std::thread> threads;
  std::vector<uint64_t> cold_seq;  // per producer, written by its thread only

  // Each producer: half its records carry "hot-tenant", the rest 20 cold keys with a per-key
  // sequence number so a consumer can check their order.
  void run(size_t i) {
    Producer& p = *producers[i];
    std::map<int, uint64_t> seq;
    uint64_t n = 0;
    while (!stop.load()) {
      for (int b = 0; b < 20; ++b, ++n) {
        ProduceResult r;
        if (n % 2 == 0) {
          r = p.produce(kTopic, "hot-tenant", "h");
        } else {
          int k = static_cast<int>((n / 2) % 20);
          std::string key = "cold-" + std::to_string(k);
          std::string value = std::to_string(i) + ":" + std::to_string(seq[k]++);
          r = p.produce(kTopic, key, value);
        }
        if (!r.ok()) produce_errors.fetch_add(1);
        sent.fetch_add(1);
      }
      p.poll(0);
      std::this_thread::sleep_for(milliseconds(5));  // a steady few thousand records/s each
    }
  }
  ~Fleet() {
    if (!threads.empty()) join();
  }
  void start() {
    for (size_t i = 0; i < producers.size(); ++i) threads.emplace_back([this, i] { run(i); });
  }
  void join() {
    stop.store(true);
    for (auto& t : threads) t.join();
    threads.clear();
    for (auto& p : producers) p->flush(20000);
  }
};

bool everyone_salts(Fleet& fleet) {
  for (auto& p : fleet.producers) {
    auto stats = p->stats();
    if (stats.topics.empty() || stats.topics[0].list_version == 0) return false;
    auto list = p->client().router().list(0);
    if (!list) return false;
    bool listed = false;
    for (const auto& k : list->keys) listed |= k.key == "hot-tenant";
    if (!listed) return false;
  }
  return true;
}

TEST(CoordinatorE2E, FleetDetectsSaltsBalancesAndSurvivesACrash) {
  const std::string bin = hotkey::test_support::coordinator_binary();
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << bin << " is not built";
  auto dir = std::filesystem::temp_directory_path() / ("hotkey-e2e-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  CoordinatorProcess coordinator(free_port(), dir);
  ASSERT_TRUE(coordinator.start()) << "see " << (dir / "coordinator.log");

  test::MockCluster mc;
  mc.create_topic(kTopic, kPartitions);
  Fleet fleet;
  for (int i = 0; i < 3; ++i) {
    fleet.producers.push_back(std::make_unique<Producer>(
        Properties{{"bootstrap.servers", mc.bootstraps()},
                   {"partitioner", "murmur2_random"},
                   {"linger.ms", "5"},
                   {"hotkey.coordinator.url", coordinator.url()},
                   {"hotkey.producer.id", "producer-" + std::to_string(i)},
                   {"hotkey.report.interval.ms", "100"},
                   {"hotkey.poll.wait.ms", "500"},
                   {"hotkey.backoff.initial.ms", "20"},
                   {"hotkey.backoff.max.ms", "200"},
                   {"hotkey.http.timeout.ms", "1000"}}));
  }
  fleet.start();
  ASSERT_TRUE(eventually([&] { return everyone_salts(fleet); }, std::chrono::seconds(30)))
      << "the hot key was not listed for every producer; see " << (dir / "coordinator.log");

  // Balance: records sent from now on, per partition, from the brokers' end offsets.
  auto before = test::end_offsets(mc.bootstraps(), kTopic, kPartitions);
  uint64_t salted_before = 0;
  for (auto& p : fleet.producers) salted_before += p->stats().topics[0].salted;
  ASSERT_TRUE(eventually([&] {
    uint64_t salted = 0;
    for (auto& p : fleet.producers) salted += p->stats().topics[0].salted;
    return salted > salted_before + 2000;
  }));

  // The coordinator dies: sending goes on at full pace on the last list.
  uint64_t list_version = fleet.producers[0]->stats().topics[0].list_version;
  coordinator.kill();
  uint64_t sent_at_kill = fleet.sent.load();
  uint64_t salted_at_kill = 0;
  for (auto& p : fleet.producers) salted_at_kill += p->stats().topics[0].salted;
  ASSERT_TRUE(eventually([&] { return fleet.sent.load() > sent_at_kill + 4000; }));
  uint64_t salted_after_kill = 0;
  for (auto& p : fleet.producers) {
    EXPECT_EQ(p->stats().topics[0].list_version, list_version);
    salted_after_kill += p->stats().topics[0].salted;
  }
  EXPECT_GT(salted_after_kill, salted_at_kill + 1000);

  // It comes back on the same data: an operator pin makes a new version everyone picks up.
  ASSERT_TRUE(coordinator.start());
  httplib::Client ops("127.0.0.1", coordinator.port());
  ops.set_bearer_token_auth(kOperatorToken);
  ops.set_connection_timeout(5);
  ops.set_read_timeout(20);
  int pin_status = 0;
  std::string pin_body;
  ASSERT_TRUE(eventually(
      [&] {
        auto pin =
            ops.Post(std::string("/v1/topics/") + kTopic + "/pins",
                     R"({"key": "cold-3", "salts": 3, "reason": "e2e"})", "application/json");
        if (!pin) return false;
        pin_status = pin->status;
        pin_body = pin->body;
        return true;
      },
      // The restarted coordinator takes the fleet's reconnects first.
      std::chrono::seconds(60)))
      << "pin request failed";
  ASSERT_LT(pin_status, 300) << pin_body;
  ASSERT_TRUE(eventually(
      [&] {
        for (auto& p : fleet.producers) {
          if (p->stats().topics[0].list_version <= list_version) return false;
        }
        return true;
      },
      std::chrono::seconds(20)));
  fleet.join();
  EXPECT_EQ(fleet.produce_errors.load(), 0u);
  auto after = test::end_offsets(mc.bootstraps(), kTopic, kPartitions);

  // The hot key (half the traffic) was spread: no partition took more than a third of what
  // was sent while salting, and more than half of the partitions got traffic.
  int64_t total = 0;
  int64_t max_delta = 0;
  int busy = 0;
  for (int p = 0; p < kPartitions; ++p) {
    int64_t d = after[p] - before[p];
    total += d;
    max_delta = std::max(max_delta, d);
    busy += d > 0;
  }
  ASSERT_GT(total, 0);
  EXPECT_LT(static_cast<double>(max_delta) / static_cast<double>(total), 1.0 / 3);
  EXPECT_GT(busy, kPartitions / 2);

  // Only the hot key was detected (cold keys are under hot_fraction and balance_min_fraction);
  // cold keys (other than the one pinned late) kept per-producer order on one partition each.
  // Everything still on the brokers, read back with a deadline generous enough for a loaded
  // CI machine (a run that took 66 s there wrote ~375k records; the read stops as soon as it
  // has them all).
  const int64_t stored = test::readable_records(mc.bootstraps(), kTopic, kPartitions);
  auto records = test::consume_all(mc.bootstraps(), kTopic, kPartitions,
                                   static_cast<size_t>(stored), std::chrono::seconds(180));
  ASSERT_EQ(records.size(), static_cast<size_t>(stored));
  std::map<std::string, std::set<int32_t>> parts;
  std::map<std::string, int64_t> last;  // "<key>/<producer>" -> last sequence
  size_t disorder = 0;
  for (const auto& r : records) {
    RecoveredKey k = recover_logical_key(
        r.key, r.salt_header ? std::optional<std::string_view>(*r.salt_header) : std::nullopt,
        std::nullopt);
    if (!k.logical_key.starts_with("cold-") || k.logical_key == "cold-3") continue;
    EXPECT_FALSE(k.salted) << r.key;
    parts[std::string(k.logical_key)].insert(r.partition);
    auto colon = r.value.find(':');
    std::string stream = std::string(k.logical_key) + "/" + r.value.substr(0, colon);
    int64_t seq = std::stoll(r.value.substr(colon + 1));
    auto it = last.find(stream);
    if (it != last.end() && seq != it->second + 1) ++disorder;
    last[stream] = seq;
  }
  EXPECT_EQ(disorder, 0u);
  EXPECT_EQ(parts.size(), 19u);
  for (const auto& [key, ps] : parts) EXPECT_EQ(ps.size(), 1u) << key;
  std::filesystem::remove_all(dir);
}

// Issue 37, item 3: a single-node coordinator killed with kill -9 while a producer's key
// surges. Once the producer's list is stale (hotkey.list.stale.ms without contact), the surge
// is salted with a local table over distinct partitions, its records carry the local mark
// (hotkey.version = 2^63 + the list's version), and the restarted coordinator's fresh list
// replaces the local table.
TEST(CoordinatorE2E, KillNineMidSurgeSaltsTheSurgeLocallyUntilTheRestartedCoordinatorsList) {
  const std::string bin = hotkey::test_support::coordinator_binary();
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << bin << " is not built";
  auto dir =
      std::filesystem::temp_directory_path() / ("hotkey-e2e-local-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  CoordinatorProcess coordinator(free_port(), dir);
  ASSERT_TRUE(coordinator.start()) << "see " << (dir / "coordinator.log");
  constexpr const char* kOutage = "outage";
  test::MockCluster mc;
  mc.create_topic(kOutage, kPartitions);
  Producer producer(Properties{{"bootstrap.servers", mc.bootstraps()},
                               {"partitioner", "murmur2_random"},
                               {"linger.ms", "5"},
                               {"hotkey.coordinator.url", coordinator.url()},
                               {"hotkey.producer.id", "outage-producer"},
                               // every salted record with its list version (contract v1)
                               {"hotkey.merge.contract", "1"},
                               {"hotkey.topics", kOutage},
                               {"hotkey.report.interval.ms", "100"},
                               {"hotkey.poll.wait.ms", "500"},
                               {"hotkey.backoff.initial.ms", "20"},
                               {"hotkey.backoff.max.ms", "200"},
                               {"hotkey.http.timeout.ms", "1000"}});
  // A quarter of the records on a key the coordinator lists from the start, half on the surge
  // key once it surges, the rest over 200 cold keys.
  std::atomic<bool> surging{false};
  std::atomic<uint64_t> errors{0};
  uint64_t n = 0;
  test::Looper sender([&] {
    for (int i = 0; i < 40; ++i) {
      std::string key = i % 4 == 0 ? std::string("steady-hot")
                        : surging.load() && i % 2 == 1
                            ? std::string("surge-key")
                            : "cold-" + std::to_string((n * 40 + i) % 200);
      if (!producer.produce(kOutage, key, "v").ok()) errors.fetch_add(1);
    }
    ++n;
    producer.poll(0);
    std::this_thread::sleep_for(milliseconds(5));
  });
  auto stats = [&] { return producer.stats().topics.at(0); };
  auto listed = [&](const std::string& key) {
    auto list = producer.client().router().list(0);
    if (!list) return false;
    for (const auto& k : list->keys) {
      if (k.key == key) return true;
    }
    return false;
  };
  ASSERT_TRUE(eventually([&] { return listed("steady-hot"); }, std::chrono::seconds(30)))
      << "see " << (dir / "coordinator.log");
  const uint64_t version = stats().list_version;

  coordinator.kill();
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return stats().stale; }, std::chrono::seconds(30)));
  const auto stale = std::chrono::steady_clock::now();
  surging.store(true);
  ASSERT_TRUE(eventually([&] { return stats().local_keys == 1; }, std::chrono::seconds(30)));
  const auto salted = std::chrono::steady_clock::now();
  auto ms = [](auto d) { return std::chrono::duration_cast<milliseconds>(d).count(); };
  std::printf("list stale %lld ms after kill -9; surge salted locally %lld ms after it started\n",
              static_cast<long long>(ms(stale - killed)),
              static_cast<long long>(ms(salted - stale)));
  auto local = producer.client().router().local_tables(0);
  ASSERT_NE(local, nullptr);
  EXPECT_EQ(local->keys.at(0).key, "surge-key");
  EXPECT_EQ(local->base_version, version);
  std::this_thread::sleep_for(milliseconds(1500));  // the outage goes on

  // Back on the same data: its list (the surge detected from the producer's reports) wins.
  ASSERT_TRUE(coordinator.start()) << "see " << (dir / "coordinator.log");
  ASSERT_TRUE(eventually([&] { return listed("surge-key") && stats().local_keys == 0; },
                         std::chrono::seconds(30)))
      << "see " << (dir / "coordinator.log");
  const uint64_t fresh = stats().list_version;
  EXPECT_GT(fresh, version);
  EXPECT_FALSE(stats().stale);
  std::this_thread::sleep_for(milliseconds(300));
  sender.stop();
  ASSERT_EQ(producer.flush(20000).error, 0);
  EXPECT_EQ(errors.load(), 0u);
  const uint64_t local_salted = stats().local_salted;

  // What the brokers hold: the surge's records salted by the local table carry the mark of the
  // list they were built on, land where the family's hash of their salted key puts them, over
  // many partitions; then the coordinator's list takes over.
  const int64_t stored = test::readable_records(mc.bootstraps(), kOutage, kPartitions);
  auto records = test::consume_all(mc.bootstraps(), kOutage, kPartitions,
                                   static_cast<size_t>(stored), std::chrono::seconds(120));
  ASSERT_EQ(records.size(), static_cast<size_t>(stored));
  std::set<int32_t> local_partitions;
  uint64_t marked = 0, by_list = 0;
  for (const auto& r : records) {
    RecoveredKey k = recover_logical_key(
        r.key, r.salt_header ? std::optional<std::string_view>(*r.salt_header) : std::nullopt,
        r.version_header ? std::optional<std::string_view>(*r.version_header) : std::nullopt);
    if (k.logical_key != "surge-key" || !k.salted) continue;
    EXPECT_EQ(r.partition, partition_for(HashFamily::kMurmur2, r.key, kPartitions)) << r.key;
    if (is_local_table_version(k.version)) {
      EXPECT_EQ(k.version, kLocalTableVersionBit + version);
      local_partitions.insert(r.partition);
      ++marked;
    } else {
      EXPECT_GE(k.version, fresh);
      ++by_list;
    }
  }
  EXPECT_GE(local_partitions.size(), 6u);
  EXPECT_EQ(marked, local_salted);  // every locally salted record, counted exactly
  EXPECT_GT(marked, 500u);
  EXPECT_GT(by_list, 0u);
  std::filesystem::remove_all(dir);
}

// hotkey_reports_total per topic, scraped from the coordinator's /metrics.
std::map<std::string, uint64_t> reports_by_topic(int port) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(10);
  cli.set_read_timeout(20);
  auto res = cli.Get("/metrics");
  std::map<std::string, uint64_t> out;
  if (!res || res->status != 200) {
    ADD_FAILURE() << "GET /metrics failed: "
                  << (res ? std::to_string(res->status) : httplib::to_string(res.error()));
    return out;
  }
  constexpr std::string_view kPrefix = "hotkey_reports_total{topic=\"";
  std::istringstream in(res->body);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(kPrefix)) continue;
    auto end = line.find('"', kPrefix.size());
    auto space = line.rfind(' ');
    if (end == std::string::npos || space == std::string::npos) continue;
    out[line.substr(kPrefix.size(), end - kPrefix.size())] =
        static_cast<uint64_t>(std::stod(line.substr(space + 1)));
  }
  return out;
}

// Issue #18 item 5: a topic configured with a hash family and a non-default separator, used
// end to end through hotkey::Producer on the mock cluster. The configured family and
// separator hold from the coordinator's first answer (before any report it answered
// murmur2/#), reports in that family are accepted, the client salts with the separator of
// the list it receives, and every salted record sits where the family's hash of
// key<separator><salt> puts it. GET /v1/topics/{t} shows the effective settings.
struct FamilyCase {
  const char* family;
  const char* partitioner;  // librdkafka's partitioner of that family
  const char* separator;
};

void PrintTo(const FamilyCase& c, std::ostream* os) {
  *os << c.family << " with separator '" << c.separator << "'";
}

class ConfiguredFamily : public ::testing::TestWithParam<FamilyCase> {};

httplib::Result get_json(int port, const std::string& path, nlohmann::json* out) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(10, 0);
  auto r = cli.Get(path);
  if (r && r->status == 200) *out = nlohmann::json::parse(r->body, nullptr, false);
  return r;
}

TEST_P(ConfiguredFamily, SaltsWithTheTopicsFamilyAndSeparatorEndToEnd) {
  const FamilyCase fc = GetParam();
  const std::string bin = hotkey::test_support::coordinator_binary();
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << bin << " is not built";
  const std::string topic = std::string("fam-") + fc.family;
  const HashFamily family = *parse_hash_family(fc.family);
  constexpr int kP = 8;
  auto dir = std::filesystem::temp_directory_path() /
             ("hotkey-e2e-" + topic + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  nlohmann::json topics;
  topics[topic] = {{"hash", fc.family}, {"separator", fc.separator}};
  CoordinatorProcess coordinator(free_port(), dir, topics.dump());
  ASSERT_TRUE(coordinator.start()) << "see " << (dir / "coordinator.log");

  // The first answer, before any report, already carries the configured family/separator.
  nlohmann::json list;
  auto r = get_json(coordinator.port(), "/v1/hotkeys?topic=" + topic, &list);
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(list["hash"], fc.family) << list.dump();
  EXPECT_EQ(list["separator"], fc.separator) << list.dump();
  EXPECT_EQ(list["version"], 0);

  test::MockCluster mc;
  mc.create_topic(topic, kP);
  Producer producer(Properties{{"bootstrap.servers", mc.bootstraps()},
                               {"partitioner", fc.partitioner},
                               {"hotkey.hash", fc.family},
                               {"linger.ms", "5"},
                               {"hotkey.coordinator.url", coordinator.url()},
                               {"hotkey.producer.id", "family-" + std::string(fc.family)},
                               {"hotkey.report.interval.ms", "100"},
                               {"hotkey.poll.wait.ms", "500"},
                               {"hotkey.backoff.initial.ms", "20"},
                               {"hotkey.backoff.max.ms", "200"},
                               {"hotkey.http.timeout.ms", "5000"}});
  uint64_t sent = 0;
  auto send_some = [&] {
    for (int i = 0; i < 200; ++i, ++sent) {
      const std::string key = sent % 2 == 0 ? "hot-tenant" : "cold-" + std::to_string(sent % 40);
      ProduceResult pr = producer.produce(topic, key, "v");
      ASSERT_TRUE(pr.ok());
    }
    producer.poll(0);
  };
  auto hot_listed = [&] {
    auto l = producer.client().router().list(0);
    if (!l || l->version == 0) return false;
    for (const auto& k : l->keys) {
      if (k.key == "hot-tenant") return true;
    }
    return false;
  };
  ASSERT_TRUE(eventually(
      [&] {
        send_some();
        std::this_thread::sleep_for(milliseconds(20));
        return hot_listed();
      },
      std::chrono::seconds(60)))
      << "the hot key was never listed; see " << (dir / "coordinator.log");
  const uint64_t salted_from = sent;
  for (int i = 0; i < 10; ++i) send_some();
  ASSERT_TRUE(producer.flush(30000).ok());
  EXPECT_EQ(producer.stats().reports_rejected, 0u);

  // The published list is in the topic's family and separator.
  ASSERT_TRUE(get_json(coordinator.port(), "/v1/hotkeys?topic=" + topic, &list));
  EXPECT_EQ(list["hash"], fc.family);
  EXPECT_EQ(list["separator"], fc.separator);
  ASSERT_FALSE(list["keys"].empty()) << list.dump();

  // Every record in Kafka: a salted one carries key<separator><salt> and sits on the
  // partition the family's hash of that key gives; the hot key was spread.
  auto records = test::consume_all(mc.bootstraps(), topic, kP, sent, std::chrono::seconds(60));
  ASSERT_EQ(records.size(), sent);
  std::set<int32_t> hot_partitions;
  size_t salted = 0;
  for (const auto& c : records) {
    ASSERT_TRUE(c.has_key);
    EXPECT_EQ(c.partition, partition_for(family, c.key, kP)) << c.key;
    const RecoveredKey k = c.recovered(fc.separator);  // either merge contract version
    if (!k.salted) continue;
    ++salted;
    EXPECT_EQ(c.key, "hot-tenant" + std::string(fc.separator) + std::to_string(k.salt));
    hot_partitions.insert(c.partition);
  }
  EXPECT_GT(salted, 0u);
  EXPECT_LE(salted, sent - salted_from);
  EXPECT_GE(hot_partitions.size(), 2u);

  // The effective settings, and where the family and separator come from.
  nlohmann::json summary;
  ASSERT_TRUE(get_json(coordinator.port(), "/v1/topics/" + topic, &summary));
  const nlohmann::json& s = summary["settings"];
  EXPECT_EQ(s["hash"], fc.family) << summary.dump();
  EXPECT_EQ(s["hash_source"], "config");
  EXPECT_EQ(s["separator"], fc.separator);
  EXPECT_EQ(s["separator_source"], "config");
  EXPECT_EQ(s["from"], "topics." + topic);
  EXPECT_EQ(s["min_rate"], 1);
  EXPECT_EQ(s["hold_ms"], 60000);
  EXPECT_EQ(summary["hash"], fc.family);
  EXPECT_EQ(summary["separator"], fc.separator);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Families, ConfiguredFamily,
                         ::testing::Values(FamilyCase{"murmur2", "murmur2_random", "~"},
                                           FamilyCase{"crc32", "consistent_random", "::"},
                                           FamilyCase{"fnv1a", "fnv1a_random", "|"}),
                         [](const auto& param_info) {
                           return std::string(param_info.param.family);
                         });

// A report refused for its hash family (409: the topic is configured with another) is dropped
// and counted, not retried: sent again it is refused again, and the retries backed the
// producer's other topics off with it (a mixed fleet's wrong partitioner, docs/CLIENT.md "Mixed
// fleets").
TEST(CoordinatorE2E, AReportRefusedForItsHashFamilyIsDroppedAndTheOtherTopicsKeepReporting) {
  const std::string bin = hotkey::test_support::coordinator_binary();
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << bin << " is not built";
  auto dir =
      std::filesystem::temp_directory_path() / ("hotkey-e2e-mismatch-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  nlohmann::json topics;
  topics["crc-topic"] = {{"hash", "crc32"}};
  CoordinatorProcess coordinator(free_port(), dir, topics.dump());
  ASSERT_TRUE(coordinator.start()) << "see " << (dir / "coordinator.log");
  Client c(Properties{{"hotkey.coordinator.url", coordinator.url()},
                      {"hotkey.producer.id", "mismatch"},
                      {"hotkey.hash", "murmur2"},
                      {"hotkey.report.interval.ms", "3600000"},  // rounds by report_now only
                      {"hotkey.poll.wait.ms", "2000"},
                      {"hotkey.http.timeout.ms", "30000"}});
  const TopicId wrong = c.topic("crc-topic");
  const TopicId fine = c.topic("murmur-topic");
  constexpr uint64_t kRounds = 3;
  for (uint64_t round = 0; round < kRounds; ++round) {
    for (TopicId id : {wrong, fine}) {
      for (int r = 0; r < 40; ++r) {
        std::string key = "k-" + std::to_string(r);
        c.route(id, key.data(), key.size(), {}, kPartitions);
      }
    }
    c.report_now();
  }
  const ClientStats s = c.stats();
  EXPECT_EQ(s.reports_rejected, kRounds);
  EXPECT_EQ(s.reports_failed, 0u);
  EXPECT_EQ(reports_by_topic(coordinator.port())["murmur-topic"], kRounds);
}

// Issue #14: one client writing N topics; a healthy coordinator must receive every topic's
// report every round (the reporter used to keep only the last hotkey.report.queue.max = 4
// topics' reports of each round, dropping the others before they were ever sent).
class EveryTopicReported : public ::testing::TestWithParam<int> {};

TEST_P(EveryTopicReported, EveryRound) {
  const std::string bin = hotkey::test_support::coordinator_binary();
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << bin << " is not built";
  const int topics = GetParam();
  auto dir = std::filesystem::temp_directory_path() /
             ("hotkey-e2e-topics-" + std::to_string(topics) + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  CoordinatorProcess coordinator(free_port(), dir);
  ASSERT_TRUE(coordinator.start()) << "see " << (dir / "coordinator.log");

  Client c(Properties{{"hotkey.coordinator.url", coordinator.url()},
                      {"hotkey.producer.id", "multi-topic"},
                      {"hotkey.report.interval.ms", "3600000"},  // rounds by report_now only
                      {"hotkey.poll.wait.ms", "2000"},
                      // A loaded disk can hold a first store write for seconds: a slow answer
                      // is retried from the queue, never dropped (3 rounds < the queue bound).
                      {"hotkey.http.timeout.ms", "30000"}});
  std::vector<TopicId> ids;
  for (int i = 0; i < topics; ++i) ids.push_back(c.topic("multi-" + std::to_string(i)));
  constexpr uint64_t kRounds = 3;
  for (uint64_t round = 0; round < kRounds; ++round) {
    for (TopicId id : ids) {
      for (int r = 0; r < 40; ++r) {
        std::string key = r % 2 == 0 ? "hot" : "cold-" + std::to_string(r);
        c.route(id, key.data(), key.size(), {}, kPartitions);
      }
    }
    c.report_now();
  }
  std::map<std::string, uint64_t> got;
  auto complete = [&] {
    got = reports_by_topic(coordinator.port());
    for (int i = 0; i < topics; ++i) {
      if (got["multi-" + std::to_string(i)] < kRounds) return false;
    }
    return true;
  };
  // Retries (if any answer was slow) go out with the next round; empty windows add none.
  EXPECT_TRUE(eventually(
      [&] {
        if (complete()) return true;
        c.report_now();
        return complete();
      },
      std::chrono::seconds(180)));
  for (int i = 0; i < topics; ++i) {
    EXPECT_EQ(got["multi-" + std::to_string(i)], kRounds)
        << "topic multi-" << i << " of " << topics;
  }
  ClientStats s = c.stats();
  EXPECT_EQ(s.reports_dropped, 0u);
  EXPECT_EQ(s.reports_rejected, 0u);
  EXPECT_EQ(s.reports_sent, kRounds * static_cast<uint64_t>(topics));
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Topics, EveryTopicReported, ::testing::Values(1, 8, 200));

}  // namespace
}  // namespace hotkey::client
