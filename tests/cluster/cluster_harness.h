// Pieces of the cluster-mode tests: a real Apache Kafka per test (scripts/kafka.sh; the
// librdkafka mock only where a test injects faults the real broker cannot), coordinator
// processes in cluster mode, a producer of binary reports and a reader of the lists topic that
// keeps the highest version per topic as clients do. Not thread-safe unless stated.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hotkey/hotkey_list.h"
#include "hotkey/kafka_contract.h"
#include "hotkey/partitioner.h"
#include "hotkey/report.h"
#include "support/coordinator_process.h"
#include "support/eventually.h"
#include "support/real_kafka.h"
#include "support/temp_dir.h"
#include "test_util.h"

namespace hotkey::coordinator::cluster_test {

using nlohmann::json;
using Steady = std::chrono::steady_clock;
using coordinator::test::TempDir;
using test_support::eventually;
// The cluster tests poll every 100 ms: their conditions ask several coordinators over HTTP.
inline constexpr std::chrono::milliseconds kPollStep{100};

inline constexpr int kPartitions = 6;
inline constexpr int kSessionTimeoutMs = 6000;
inline constexpr const char* kOperatorToken = "cluster-test-operator";

using test_support::read_file;

// A librdkafka client of `type` on `bootstrap` with `settings` (its own log at errors only);
// throws when librdkafka refuses to create it. The caller destroys it.
inline rd_kafka_t* new_rdkafka(rd_kafka_type_t type, const std::string& bootstrap,
                               const std::map<std::string, std::string>& settings = {}) {
  char errstr[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "log_level", "2", errstr, sizeof errstr);
  for (const auto& [k, v] : settings) {
    rd_kafka_conf_set(conf, k.c_str(), v.c_str(), errstr, sizeof errstr);
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  if (!rk) throw std::runtime_error(errstr);
  return rk;
}

// The Kafka of one scenario: a real Apache Kafka cluster of its own (one node, or three with
// replication factor 3 and min.insync.replicas=2), with the coordinator's internal topics
// created as an operator would (`lists_partitions` != kPartitions breaks the co-partitioning
// on purpose, 0 leaves a topic out; `create_internal` false leaves them all to the coordinator,
// whose own CreateTopics path KafkaBroker.* tests).
struct KafkaOptions {
  int nodes = 1;
  bool create_internal = true;
  int lists_partitions = kPartitions;
  int state_partitions = 1;
  // Topic configs of the lists and state topics besides cleanup.policy=compact.
  std::map<std::string, std::string> compacted_configs{};
  std::vector<std::string> broker_settings{};
};

class Kafka {
 public:
  explicit Kafka(KafkaOptions o = {})
      : options_(o), real_(test_support::RealKafkaOptions{o.nodes, o.broker_settings}) {
    if (!o.create_internal) return;
    auto compacted = o.compacted_configs;
    compacted["cleanup.policy"] = "compact";
    real_.create_topic("__hotkey_reports", kPartitions);
    if (o.lists_partitions > 0)
      real_.create_topic("__hotkey_lists", o.lists_partitions, -1, compacted);
    if (o.state_partitions > 0)
      real_.create_topic("__hotkey_state", o.state_partitions, -1, compacted);
  }
  std::string bootstrap() const { return real_.bootstrap(); }
  test_support::RealKafka& real() { return real_; }
  // What Node passes with --kafka-set so that topics the coordinator creates fit this cluster.
  std::vector<std::string> coordinator_settings() const {
    return {"topic_partitions=" + std::to_string(kPartitions),
            "replication_factor=" + std::to_string(options_.nodes >= 3 ? 3 : 1)};
  }

 private:
  KafkaOptions options_;
  test_support::RealKafka real_;
};

// librdkafka's mock cluster, for the one scenario that injects faults a real broker cannot
// (request errors, leader moves at will, a broker down for seconds).
class MockKafka {
 public:
  // The internal topics with their default names; `lists_partitions` != kPartitions breaks the
  // co-partitioning on purpose, 0 leaves a topic out.
  explicit MockKafka(int brokers = 3, int lists_partitions = kPartitions,
                     int state_partitions = 1) {
    char errstr[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "2", errstr, sizeof errstr);
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk_) throw std::runtime_error(errstr);
    mc_ = rd_kafka_mock_cluster_new(rk_, brokers);
    if (!mc_) throw std::runtime_error("rd_kafka_mock_cluster_new failed");
    for (const auto& [t, n] :
         std::vector<std::pair<std::string, int>>{{"__hotkey_reports", kPartitions},
                                                  {"__hotkey_lists", lists_partitions},
                                                  {"__hotkey_state", state_partitions}}) {
      if (n == 0) continue;
      if (rd_kafka_mock_topic_create(mc_, t.c_str(), n, 1) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        throw std::runtime_error("cannot create " + t);
      }
    }
  }
  ~MockKafka() {
    rd_kafka_mock_cluster_destroy(mc_);
    rd_kafka_destroy(rk_);
  }
  MockKafka(const MockKafka&) = delete;
  MockKafka& operator=(const MockKafka&) = delete;
  std::string bootstrap() const { return rd_kafka_mock_cluster_bootstraps(mc_); }
  rd_kafka_mock_cluster_t* handle() { return mc_; }

 private:
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* mc_ = nullptr;
};

// One hotkey-coordinator process in cluster mode.
class Node {
 public:
  // `must_start` false: a start that fails is not an error (see exit_status()). `settings`:
  // config-file settings added to (or replacing) the tests' defaults.
  // `kafka_sets`: more --kafka-set KEY=VALUE after the tests' defaults (a later one wins).
  // `group_defaults`: the coordinator's own group settings (session.timeout.ms,
  // heartbeat.interval.ms, max.poll.interval.ms) instead of the tests' shorter ones.
  Node(const std::string& name, const std::filesystem::path& dir, const std::string& bootstrap,
       bool must_start = true, const json& settings = json::object(),
       const std::vector<std::string>& kafka_sets = {}, bool group_defaults = false)
      : name_(name), data_(dir / name), log_(dir / (name + ".log")), must_start_(must_start) {
    const auto cfg = dir / (name + ".json");
    json config = {{"warmup_ms", 0},
                   {"plan_interval_ms", 500},
                   {"epoch_ms", 500},
                   {"defaults", {{"min_rate", 1}, {"hold_ms", 5000}}}};
    config.update(settings);
    std::ofstream(cfg) << config.dump();
    config_ = cfg;
    args_ = {"--kafka", bootstrap};
    std::vector<std::string> defaults = {"republish_interval_ms=2000", "log_level=3",
                                         // Topics it creates fit the tests' single-node clusters.
                                         "topic_partitions=" + std::to_string(kPartitions),
                                         "replication_factor=1"};
    if (!group_defaults) {
      defaults.insert(defaults.begin(),
                      {"session.timeout.ms=" + std::to_string(kSessionTimeoutMs),
                       "heartbeat.interval.ms=1000", "max.poll.interval.ms=7000"});
    }
    for (const std::string& d : defaults) {
      args_.push_back("--kafka-set");
      args_.push_back(d);
    }
    // HOTKEY_TEST_KAFKA_SET="K=V,K=V": the same for every member of every test, between the
    // defaults and the test's own (e.g. the whole suite with kafka.lists_fencing=1).
    std::vector<std::string> sets;
    if (const char* env = std::getenv("HOTKEY_TEST_KAFKA_SET")) {
      std::string all(env);
      for (size_t at = 0; at < all.size();) {
        const size_t comma = std::min(all.find(',', at), all.size());
        if (comma > at) sets.push_back(all.substr(at, comma - at));
        at = comma + 1;
      }
    }
    sets.insert(sets.end(), kafka_sets.begin(), kafka_sets.end());
    for (const auto& s : sets) {
      args_.push_back("--kafka-set");
      args_.push_back(s);
    }
    start();
  }
  ~Node() { kill9(); }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Starts (again, after kill9()/terminate()) on the same data dir, appending to the same log.
  void start() {
    test_support::CoordinatorOptions o;
    o.data = data_;
    o.log = log_;
    o.config = config_;
    o.append_log = true;
    o.extra_args = args_;
    o.env["HOTKEY_OPERATOR_TOKEN"] = std::string("ops=") + kOperatorToken;
    proc_ = std::make_unique<test_support::CoordinatorProcess>(o);
    port_ = proc_->wait_port(std::chrono::seconds(60));
    if (port_ == 0 && !proc_->running()) {
      exit_status_ = proc_->exit_status().value_or(-1);
      proc_.reset();
    }
    if (port_ == 0 && !must_start_) return;
    if (port_ == 0) throw std::runtime_error(name_ + " did not start: " + read_file(log_));
    url_ = "http://127.0.0.1:" + std::to_string(port_);
  }
  void kill9() {
    if (proc_) proc_->kill9();
    proc_.reset();
  }
  int terminate() {
    const int status = proc_ ? proc_->terminate() : -1;
    proc_.reset();
    return status;
  }
  void pause() { proc_->pause(); }
  void resume() { proc_->resume(); }
  // False once the test stopped or killed it (or it exited during start).
  bool running() const { return proc_ != nullptr; }
  // Whether the process is still there (false once it exited on its own, too).
  bool alive() const { return proc_ && proc_->running(); }
  pid_t pid() const { return proc_ ? proc_->pid() : -1; }
  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }
  int port() const { return port_; }
  std::string log() const { return read_file(log_); }
  // Its log's warnings and errors only, each line prefixed with the member's name (for a
  // failing test's output: a whole log of a long run is mostly list changes).
  std::string problems() const {
    std::istringstream in(log());
    std::string line, out;
    while (std::getline(in, line)) {
      if (line.find("\"level\":\"warn\"") != std::string::npos ||
          line.find("\"level\":\"error\"") != std::string::npos) {
        out += name_ + ": " + line + "\n";
      }
    }
    return out;
  }
  // The exit status of a process that exited during start (-1 otherwise).
  int exit_status() const { return exit_status_; }

  // GET /v1/cluster (null on failure).
  json cluster() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(5, 0);
    c.set_connection_timeout(2, 0);
    auto r = c.Get("/v1/cluster");
    if (!r || r->status != 200) return json();
    return json::parse(r->body, nullptr, false);
  }
  // Owned reports partitions per /v1/cluster (empty when it does not answer).
  std::set<int> owned() const {
    std::set<int> out;
    json j = cluster();
    if (!j.is_object()) return out;
    for (const auto& [p, epoch] : j["owned_partitions"].items()) out.insert(std::stoi(p));
    return out;
  }

 private:
  std::string name_;
  std::filesystem::path data_;
  std::filesystem::path log_;
  std::filesystem::path config_;
  std::vector<std::string> args_;  // after --listen, --data, --config
  std::unique_ptr<test_support::CoordinatorProcess> proc_;
  int port_ = 0;
  std::string url_;
  bool must_start_ = true;
  int exit_status_ = -1;
};

// The last lines of a member's log (what it wrote before it exited, for a failing test).
inline std::string tail_of(const std::string& log, size_t bytes = 4000) {
  return log.size() <= bytes ? log : log.substr(log.size() - bytes);
}

inline int32_t partition_of(const std::string& topic) {
  return partition_for(HashFamily::kMurmur2, topic, kPartitions);
}

// Round `round` of a skewed report for `topic` from reporter `p` (ids `id`): `hot` carries half
// the records, a tail of 200 keys the rest (as the client reports a skewed topic).
inline Report skewed_report(const std::string& id, const std::string& topic, uint64_t round, int p,
                            const std::string& hot = "hot") {
  std::map<std::string, uint64_t> counts{{hot, 500}};
  coordinator::test::add_tail(counts, 500, 200, static_cast<uint32_t>(round * 7 + p));
  Report r = coordinator::test::make_report(id, topic, 12, round, counts, 64);
  r.window_ms = 300;
  return r;
}

// Writes binary reports straight to the reports topic (as the client's kafka transport
// does): every topic has one hot key "hot" carrying half its records. Thread-safe start/stop.
class ReportProducer {
 public:
  ReportProducer(const std::string& bootstrap, std::vector<std::string> topics)
      : topics_(std::move(topics)),
        rk_(new_rdkafka(RD_KAFKA_PRODUCER, bootstrap,
                        {{"partitioner", "murmur2_random"},
                         {"enable.idempotence", "true"},
                         {"linger.ms", "5"}})) {
    thread_ = std::thread([this] { run(); });
  }
  ~ReportProducer() {
    stop_ = true;
    thread_.join();
    rd_kafka_flush(rk_, 5000);
    rd_kafka_destroy(rk_);
  }
  uint64_t sent() const { return sent_.load(); }
  // Stops (and starts again) reporting `topic`.
  void pause(const std::string& topic) {
    std::lock_guard lock(mu_);
    paused_.insert(topic);
  }
  void resume(const std::string& topic) {
    std::lock_guard lock(mu_);
    paused_.erase(topic);
  }
  // Writes one round of `topic`'s reports now, stamped `timestamp_ms` (a report written late, or
  // read again from the reports topic); `round` must differ from earlier calls.
  void send_stamped(const std::string& topic, int64_t timestamp_ms, uint64_t round) {
    for (int producer = 0; producer < 2; ++producer) {
      std::map<std::string, uint64_t> counts{{"hot", 500}};
      Report r = coordinator::test::make_report("late" + std::to_string(producer) + "-" + topic,
                                                topic, 12, round, counts, 64);
      r.window_ms = 300;
      const std::string value = encode_report_binary(r);
      rd_kafka_producev(
          rk_, RD_KAFKA_V_TOPIC("__hotkey_reports"), RD_KAFKA_V_KEY(topic.data(), topic.size()),
          RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_TIMESTAMP(timestamp_ms),
          RD_KAFKA_V_HEADER("hotkey.report.v", "1", 1), RD_KAFKA_V_END);
    }
    rd_kafka_flush(rk_, 5000);
  }

 private:
  void run() {
    uint64_t seq = 0;
    while (!stop_) {
      ++seq;
      std::set<std::string> paused;
      {
        std::lock_guard lock(mu_);
        paused = paused_;
      }
      for (const auto& topic : topics_) {
        if (paused.contains(topic)) continue;
        for (int producer = 0; producer < 2; ++producer) {
          const std::string value = encode_report_binary(
              skewed_report("p" + std::to_string(producer) + "-" + topic, topic, seq, producer));
          rd_kafka_producev(rk_, RD_KAFKA_V_TOPIC("__hotkey_reports"),
                            RD_KAFKA_V_KEY(topic.data(), topic.size()),
                            RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_HEADER("hotkey.report.v", "1", 1), RD_KAFKA_V_END);
          sent_.fetch_add(1);
        }
      }
      rd_kafka_poll(rk_, 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  }

  std::vector<std::string> topics_;
  rd_kafka_t* rk_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> sent_{0};
  std::mutex mu_;
  std::set<std::string> paused_;
  std::thread thread_;
};

// One record of the lists topic as read, in partition order.
struct ListRecord {
  std::string topic;
  uint64_t version = 0;
  std::string member;
  std::string keys;    // the listed keys, sorted, joined: identity of the content
  std::string denied;  // the denied keys, sorted, joined
  int32_t partition = 0;
  int64_t offset = 0;
  bool accepted = false;   // a client keeping the highest version would take it
  bool tombstone = false;  // a null value: the topic was deleted (version: the one kept)
  Steady::time_point at;
};

// Follows every lists partition from the beginning; validates every list like the client
// (parse_list_json recomputes every salt) and keeps the highest version per topic. A tombstone
// becomes the topic's latest record (tombstone set, no keys) with the version kept, as the
// client drops the list and keeps the version. Ownership heartbeats (key /owner) are kept apart,
// with when they arrived; one that does not parse counts as invalid, as a bad list does.
class ListsReader {
 public:
  explicit ListsReader(const std::string& bootstrap)
      : rk_(new_rdkafka(RD_KAFKA_CONSUMER, bootstrap,
                        {{"group.id", "cluster-test-reader"}, {"enable.auto.commit", "false"}})) {
    rd_kafka_poll_set_consumer(rk_);
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(kPartitions);
    for (int p = 0; p < kPartitions; ++p) {
      rd_kafka_topic_partition_list_add(parts, "__hotkey_lists", p)->offset =
          RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(rk_, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    thread_ = std::thread([this] { run(); });
  }
  ~ListsReader() {
    stop_ = true;
    thread_.join();
    rd_kafka_consumer_close(rk_);
    rd_kafka_destroy(rk_);
  }

  std::vector<ListRecord> records() const {
    std::lock_guard lock(mu_);
    return records_;
  }
  // The highest version per topic and who wrote it (or the tombstone that followed it).
  std::map<std::string, ListRecord> latest() const {
    std::lock_guard lock(mu_);
    return latest_;
  }
  size_t invalid() const { return invalid_.load(); }
  struct Heard {
    OwnerHeartbeat beat;
    Steady::time_point at;
  };
  std::vector<Heard> heartbeats() const {
    std::lock_guard lock(mu_);
    return heartbeats_;
  }

 private:
  void run() {
    while (!stop_) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 100);
      if (!m) continue;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && (m->payload || m->key)) {
        ListRecord rec;
        rec.partition = m->partition;
        rec.offset = m->offset;
        rec.at = Steady::now();
        rd_kafka_headers_t* hdrs = nullptr;
        const void* v = nullptr;
        size_t n = 0;
        if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
            rd_kafka_header_get_last(hdrs, "hotkey.member", &v, &n) == RD_KAFKA_RESP_ERR_NO_ERROR) {
          rec.member.assign(static_cast<const char*>(v), n);
        }
        if (m->key &&
            std::string_view(static_cast<const char*>(m->key), m->key_len) == kOwnerHeartbeatKey) {
          auto beat = m->payload ? parse_owner_heartbeat(std::string_view(
                                       static_cast<const char*>(m->payload), m->len))
                                 : std::nullopt;
          if (beat) {
            std::lock_guard lock(mu_);
            heartbeats_.push_back(Heard{*beat, rec.at});
          } else {
            invalid_.fetch_add(1);
          }
          rd_kafka_message_destroy(m);
          continue;
        }
        if (!m->payload) {
          rec.topic.assign(static_cast<const char*>(m->key), m->key_len);
          rec.tombstone = true;
          std::lock_guard lock(mu_);
          ListRecord& latest = latest_[rec.topic];
          rec.version = latest.version;
          latest = rec;
          records_.push_back(rec);
          rd_kafka_message_destroy(m);
          continue;
        }
        try {
          HotKeyList list =
              parse_list_json(std::string_view(static_cast<const char*>(m->payload), m->len));
          rec.topic = list.topic;
          rec.version = list.version;
          std::set<std::string> keys;
          for (const auto& k : list.keys) keys.insert(k.key);
          for (const auto& k : keys) rec.keys += k + ",";
          for (const auto& d : std::set<std::string>(list.denied.begin(), list.denied.end())) {
            rec.denied += d + ",";
          }
          std::lock_guard lock(mu_);
          auto it = latest_.find(rec.topic);
          rec.accepted = it == latest_.end() || rec.version > it->second.version;
          if (rec.accepted) latest_[rec.topic] = rec;
          records_.push_back(rec);
        } catch (const std::exception&) {
          invalid_.fetch_add(1);
        }
      }
      rd_kafka_message_destroy(m);
    }
  }

  rd_kafka_t* rk_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> invalid_{0};
  mutable std::mutex mu_;
  std::vector<ListRecord> records_;
  std::map<std::string, ListRecord> latest_;
  std::vector<Heard> heartbeats_;
  std::thread thread_;
};

inline std::vector<std::string> data_topics(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("data-" + std::to_string(i));
  return out;
}

// Every reports partition owned by exactly one of the running `nodes`, each of which owns at
// least one; fills `owner` (partition -> node index).
inline bool stable(const std::vector<Node*>& nodes, std::map<int, size_t>* owner) {
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
inline void expect_no_version_conflicts(const std::vector<ListRecord>& records) {
  std::map<std::pair<std::string, uint64_t>, const ListRecord*> seen;
  size_t conflicts = 0;
  for (const auto& r : records) {
    if (r.tombstone) continue;  // carries the version it ends, not a list of its own
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

inline std::string describe(const std::map<std::string, ListRecord>& latest) {
  std::string out;
  for (const auto& [t, r] : latest) {
    out += t + " v" + std::to_string(r.version >> 32) + "." +
           std::to_string(r.version & 0xffffffffu) + " by " + r.member +
           (r.tombstone ? " tombstone\n" : " [" + r.keys + "] denied [" + r.denied + "]\n");
  }
  return out;
}

inline httplib::Result operator_call(const Node& n, const std::string& method,
                                     const std::string& path, const json& body = json()) {
  httplib::Client c("127.0.0.1", n.port());
  c.set_read_timeout(30, 0);
  const httplib::Headers auth{{"Authorization", std::string("Bearer ") + kOperatorToken}};
  if (method == "DELETE") return c.Delete(path, auth);
  return c.Post(path, auth, body.dump(), "application/json");
}

// The newest "state_resumed" log line of a node.
inline json last_state_resumed(const Node& n) {
  std::istringstream lines(n.log());
  std::string line;
  json last;
  while (std::getline(lines, line)) {
    auto j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.value("event", "") == "state_resumed") last = j;
  }
  return last;
}

inline httplib::Result get(const Node& n, const std::string& path) {
  httplib::Client c("127.0.0.1", n.port());
  c.set_read_timeout(10, 0);
  return c.Get(path, {{"Authorization", std::string("Bearer ") + kOperatorToken}});
}

// Whether `n` holds a pin of `key` on `topic` (GET /v1/topics/T/pins).
inline bool holds_pin(const Node& n, const std::string& topic, const std::string& key) {
  auto r = get(n, "/v1/topics/" + topic + "/pins");
  return r && r->status == 200 && r->body.find("\"" + key + "\"") != std::string::npos;
}

// What `n` holds of `topic`: in GET /v1/topics, its pins, its denies (each an empty string when
// it holds nothing; "?" when it did not answer).
struct Held {
  bool listed = true;
  std::string pins = "?", denies = "?";
  bool none() const { return !listed && pins.empty() && denies.empty(); }
};
inline Held held_by(const Node& n, const std::string& topic) {
  Held h;
  auto topics = get(n, "/v1/topics");
  if (!topics || topics->status != 200) return h;
  h.listed = false;
  for (const auto& t : json::parse(topics->body, nullptr, false).value("topics", json::array())) {
    if (t.value("topic", "") == topic) h.listed = true;
  }
  auto pins = get(n, "/v1/topics/" + topic + "/pins");
  auto denies = get(n, "/v1/topics/" + topic + "/denies");
  if (pins && pins->status == 200) {
    json j = json::parse(pins->body, nullptr, false).value("pins", json::array());
    h.pins = j.empty() ? "" : j.dump();
  }
  if (denies && denies->status == 200) {
    json j = json::parse(denies->body, nullptr, false).value("denies", json::array());
    h.denies = j.empty() ? "" : j.dump();
  }
  return h;
}

// A node's log lines about partition ownership (for failure messages).
inline std::string ownership_lines(const Node& n) {
  std::istringstream lines(n.log());
  std::string line, out;
  while (std::getline(lines, line)) {
    if (line.find("partition") != std::string::npos ||
        line.find("rebalance") != std::string::npos || line.find("\"warn\"") != std::string::npos) {
      out += n.name() + ": " + line.substr(0, 400) + "\n";
    }
  }
  return out;
}

// Every reports partition owned by exactly one of `nodes` (see stable(), fills `owner`) and
// every topic's newest list written by the owner of its partition.
inline bool published_by_owners(const std::vector<Node*>& nodes, const ListsReader& reader,
                                const std::vector<std::string>& topics,
                                std::map<int, size_t>* owner) {
  if (!stable(nodes, owner)) return false;
  auto latest = reader.latest();
  for (const auto& t : topics) {
    auto it = latest.find(t);
    if (it == latest.end() || it->second.member != nodes[(*owner)[partition_of(t)]]->url()) {
      return false;
    }
  }
  return true;
}

struct ScenarioOptions {
  std::vector<std::string> topics;  // the data topics the ReportProducer reports
  int members = 2;
  json settings = json::object();         // every member's config-file settings (see Node)
  std::vector<std::string> kafka_sets{};  // every member's --kafka-set (see Node)
  bool group_defaults = false;            // see Node
};

// The setup most cluster scenarios share: a Kafka of their own (K: Kafka, or MockKafka where a
// test injects faults), a data directory, `topics` reported by a ReportProducer, a ListsReader
// and the members "a", "b", ... started in that order (member(i) and nodes[i] are the i-th).
// Scenarios that start their members otherwise (later, by other names, expecting a failed
// start, beside a client fleet) build these pieces themselves.
template <class K = Kafka>
class Scenario {
 public:
  // `kafka_args`: what K's constructor takes (KafkaOptions for Kafka).
  template <class... KafkaArgs>
  explicit Scenario(ScenarioOptions o, KafkaArgs&&... kafka_args)
      : kafka(std::forward<KafkaArgs>(kafka_args)...),
        topics(std::move(o.topics)),
        producer(kafka.bootstrap(), topics),
        reader(kafka.bootstrap()),
        settings_(std::move(o.settings)),
        kafka_sets_(std::move(o.kafka_sets)),
        group_defaults_(o.group_defaults) {
    for (int i = 0; i < o.members; ++i) add_member(std::string(1, static_cast<char>('a' + i)));
  }
  Scenario(const Scenario&) = delete;
  Scenario& operator=(const Scenario&) = delete;

  // Starts one more member with the scenario's settings and appends it to `nodes`.
  Node& add_member(const std::string& name) {
    members_.push_back(std::make_unique<Node>(name, dir.path(), kafka.bootstrap(),
                                              /*must_start=*/true, settings_, kafka_sets_,
                                              group_defaults_));
    nodes.push_back(members_.back().get());
    return *members_.back();
  }
  // The i-th member started (stays the same when a test changes `nodes`).
  Node& member(size_t i) { return *members_.at(i); }

  // published_by_owners() of `nodes` and `topics` (fills `owner`).
  bool published() { return published_by_owners(nodes, reader, topics, &owner); }
  // Every reports partition owned once by `nodes` (fills `owner`) and every topic listed, by
  // whichever member.
  bool listed() {
    if (!stable(nodes, &owner)) return false;
    auto latest = reader.latest();
    for (const auto& t : topics) {
      if (!latest.contains(t)) return false;
    }
    return true;
  }
  // eventually(done) at the cluster tests' poll step; a failure says what the reader holds and
  // every member's warnings and errors.
  testing::AssertionResult wait_until(const std::function<bool()>& done,
                                      std::chrono::milliseconds timeout) {
    if (eventually(done, timeout, kPollStep)) return testing::AssertionSuccess();
    testing::AssertionResult failure = testing::AssertionFailure() << describe(reader.latest());
    for (const auto& m : members_) failure << m->problems();
    return failure;
  }
  testing::AssertionResult wait_published(std::chrono::milliseconds timeout) {
    return wait_until([this] { return published(); }, timeout);
  }

  K kafka;
  TempDir dir;
  std::vector<std::string> topics;
  ReportProducer producer;
  ListsReader reader;
  std::vector<Node*> nodes;     // the members the checks ask: what `owner` indexes
  std::map<int, size_t> owner;  // reports partition -> index in `nodes`, as last seen

 private:
  json settings_;
  std::vector<std::string> kafka_sets_;
  bool group_defaults_ = false;
  std::vector<std::unique_ptr<Node>> members_;
};

// Per member and topic, versions in log order never go down (a republish repeats one).
inline void expect_versions_never_go_back(const std::vector<ListRecord>& records) {
  std::map<std::pair<std::string, std::string>, uint64_t> last;
  for (const auto& r : records) {
    uint64_t& v = last[{r.member, r.topic}];
    EXPECT_GE(r.version, v) << r.member << " " << r.topic << " went back";
    v = std::max(v, r.version);
  }
}

}  // namespace hotkey::coordinator::cluster_test
