// Cluster-mode settings as librdkafka sees them (issue 25): --kafka-set reaches only the handles
// a setting applies to, the settings the coordinator owns are refused, a malformed bootstrap is
// a usage error and an unreachable one ends the start with one clear line.
#include <gtest/gtest.h>

#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kafka_io.h"
#include "support/child_process.h"
#include "support/coordinator_process.h"
#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

// Keeps every event written to it.
class Collected final : public LogSink {
 public:
  void write(const api::Json& event) override {
    std::lock_guard lock(mu_);
    events_.push_back(event);
  }
  std::vector<api::Json> events() {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  std::mutex mu_;
  std::vector<api::Json> events_;
};

std::string conf_value(rd_kafka_t* rk, const char* name) {
  char buf[256];
  size_t size = sizeof buf;
  if (rd_kafka_conf_get(rd_kafka_conf(rk), name, buf, &size) != RD_KAFKA_CONF_OK) return "?";
  return buf;
}

CoordinatorConfig parse(std::vector<std::string> args) {
  std::vector<const char*> argv{"hotkey-coordinator", "--data", "/tmp/x"};
  for (auto& a : args) argv.push_back(a.c_str());
  auto c = parse_command_line(static_cast<int>(argv.size()), argv.data());
  if (!c) throw std::runtime_error("--help");
  return *c;
}

void no_rebalance(rd_kafka_t*, rd_kafka_resp_err_t, rd_kafka_topic_partition_list_t*, void*) {}

// session.timeout.ms is a consumer setting and linger.ms a producer one: each reaches its own
// handles only (librdkafka warned at every start that the producer ignores session.timeout.ms),
// and linger.ms given by the operator wins over the coordinator's default.
TEST(KafkaSettings, EachSettingReachesOnlyTheHandlesItAppliesTo) {
  ClusterConfig cc;
  cc.bootstrap = "127.0.0.1:1";
  cc.librdkafka = {{"session.timeout.ms", "6000"}, {"linger.ms", "7"}};
  Collected log;
  std::string error;
  {
    kafka::Handles h;
    ASSERT_TRUE(h.create(cc, log, &no_rebalance, nullptr, &error)) << error;
    h.release_log();
    EXPECT_EQ(conf_value(h.consumer, "session.timeout.ms"), "6000");
    EXPECT_EQ(conf_value(h.state, "session.timeout.ms"), "6000");
    EXPECT_EQ(conf_value(h.producer, "session.timeout.ms"), "45000");  // librdkafka's default
    EXPECT_EQ(conf_value(h.producer, "linger.ms"), "7");
  }
  for (const auto& e : log.events()) {
    EXPECT_EQ(e.value("message", "").find("ignored"), std::string::npos) << e.dump();
  }
}

TEST(KafkaSettings, SettingsTheCoordinatorOwnsAreRefused) {
  for (const char* owned :
       {"acks=0", "request.required.acks=1", "enable.idempotence=false", "group.id=mine",
        "enable.auto.commit=true", "enable.auto.offset.store=true", "auto.offset.reset=earliest",
        "partition.assignment.strategy=range", "enable.partition.eof=true",
        "transactional.id=x"}) {
    SCOPED_TRACE(owned);
    try {
      parse({"--kafka", "k:9092", "--kafka-set", owned});
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      const std::string name = std::string(owned).substr(0, std::string(owned).find('='));
      EXPECT_NE(std::string(e.what()).find("kafka." + name), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(parse({"--kafka", "k:9092", "--kafka-set", "session.timeout.ms=6000"}));
}

TEST(KafkaSettings, MalformedBootstrapIsAUsageError) {
  for (const char* bad : {"http://host:9092", "https://host:9092", "host:9092/", "host:port",
                          "host:0", "host:70000", ":9092", "a:9092,,b:9092", "host 1:9092"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(parse({"--kafka", bad}), std::invalid_argument);
  }
  for (const char* good : {"host:9092", "host", "a:9092,b:9093", "a:9092, b:9093",
                           "SSL://broker:9093", "sasl_ssl://b1:9093,sasl_ssl://b2:9093",
                           "[::1]:9092", "10.0.0.1:9092"}) {
    SCOPED_TRACE(good);
    EXPECT_NO_THROW(parse({"--kafka", good}));
  }
  TempDir dir;
  test_support::ChildSpec spec;
  spec.binary = test_support::coordinator_binary();
  spec.args = {"--listen", "127.0.0.1:0", "--data", (dir.path() / "data").string(), "--kafka",
               "http://127.0.0.1:9092"};
  const auto run = test_support::run_capturing(spec, dir.path());
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_NE(run.err.find("kafka.bootstrap"), std::string::npos) << run.err;
}

// Nothing listens on port 1: the start fails (exit 5) after the metadata timeout with the fatal
// JSON event and one line for the operator, not librdkafka's connection errors.
TEST(KafkaSettings, UnreachableBootstrapEndsWithOneClearLine) {
  TempDir dir;
  test_support::ChildSpec spec;
  spec.binary = test_support::coordinator_binary();
  spec.args = {"--listen", "127.0.0.1:0", "--data", (dir.path() / "data").string(), "--kafka",
               "127.0.0.1:1"};
  const auto run = test_support::run_capturing(spec, dir.path());
  EXPECT_EQ(run.code, 5) << run.err;
  std::istringstream lines(run.err);
  std::string line;
  std::vector<std::string> plain;
  int fatal = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      plain.push_back(line);
    } else if (j.value("event", "") == "cluster_start_failed") {
      ++fatal;
    } else {
      EXPECT_NE(j.value("event", ""), "librdkafka") << line;
    }
  }
  EXPECT_EQ(fatal, 1) << run.err;
  ASSERT_EQ(plain.size(), 1u) << run.err;
  EXPECT_NE(plain[0].find("cannot reach Kafka at 127.0.0.1:1"), std::string::npos) << plain[0];
}

}  // namespace
}  // namespace hotkey::coordinator::test
