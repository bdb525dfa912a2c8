// Cluster-mode settings: flags, config file "kafka" object, environment, precedence, refusals.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "config.h"
#include "test_util.h"

namespace hotkey::coordinator {
namespace {

CoordinatorConfig parse(std::vector<std::string> args) {
  std::vector<const char*> argv{"hotkey-coordinator"};
  for (auto& a : args) argv.push_back(a.c_str());
  auto c = parse_command_line(static_cast<int>(argv.size()), argv.data());
  if (!c) throw std::runtime_error("--help");
  return *c;
}

TEST(ClusterConfig, OffByDefault) {
  CoordinatorConfig c = parse({"--data", "/tmp/x"});
  EXPECT_FALSE(c.cluster.enabled());
  EXPECT_EQ(c.cluster.group, "hotkey.coordinators");
  EXPECT_EQ(c.cluster.reports_topic, "__hotkey_reports");
  EXPECT_EQ(c.cluster.lists_topic, "__hotkey_lists");
  EXPECT_EQ(c.cluster.state_topic, "__hotkey_state");
}

TEST(ClusterConfig, FlagsFileAndPassThroughSettings) {
  test::TempDir dir;
  const auto file = dir.path() / "c.json";
  std::ofstream(file) << R"({"kafka": {"bootstrap": "file:9092", "group": "g-file",
      "session.timeout.ms": 6000, "republish_interval_ms": 500, "security.protocol": "SSL"}})";
  CoordinatorConfig c =
      parse({"--data", "/tmp/x", "--config", file.string(), "--group", "g-flag", "--lists-topic",
             "l", "--kafka-set", "kafka.linger.ms=7", "--kafka-set=fetch.wait.max.ms=10"});
  EXPECT_TRUE(c.cluster.enabled());
  EXPECT_EQ(c.cluster.bootstrap, "file:9092");
  EXPECT_EQ(c.cluster.group, "g-flag");  // the flag wins over the file
  EXPECT_EQ(c.cluster.lists_topic, "l");
  EXPECT_EQ(c.cluster.republish_interval_ms, 500u);
  EXPECT_EQ(c.cluster.librdkafka.at("session.timeout.ms"), "6000");
  EXPECT_EQ(c.cluster.librdkafka.at("security.protocol"), "SSL");
  EXPECT_EQ(c.cluster.librdkafka.at("linger.ms"), "7");
  EXPECT_EQ(c.cluster.librdkafka.at("fetch.wait.max.ms"), "10");
}

TEST(ClusterConfig, EnvironmentBetweenFileAndFlags) {
  setenv("HOTKEY_KAFKA_BOOTSTRAP", "env:9092", 1);
  setenv("HOTKEY_KAFKA_STATE_TOPIC", "st", 1);
  CoordinatorConfig c = parse({"--data", "/tmp/x", "--state-topic", "st-flag"});
  unsetenv("HOTKEY_KAFKA_BOOTSTRAP");
  unsetenv("HOTKEY_KAFKA_STATE_TOPIC");
  EXPECT_EQ(c.cluster.bootstrap, "env:9092");
  EXPECT_EQ(c.cluster.state_topic, "st-flag");
}

TEST(ClusterConfig, RefusesManagedSettingsAndBadTopics) {
  EXPECT_THROW(parse({"--data", "/tmp/x", "--kafka", "k:1", "--kafka-set",
                      "partition.assignment.strategy=range"}),
               std::invalid_argument);
  EXPECT_THROW(
      parse({"--data", "/tmp/x", "--kafka", "k:1", "--kafka-set", "enable.auto.commit=true"}),
      std::invalid_argument);
  EXPECT_THROW(parse({"--data", "/tmp/x", "--kafka", "k:1", "--lists-topic", "bad topic"}),
               std::invalid_argument);
  EXPECT_THROW(parse({"--data", "/tmp/x", "--kafka", "k:1", "--lists-topic", "__hotkey_reports"}),
               std::invalid_argument);
  EXPECT_THROW(parse({"--data", "/tmp/x", "--kafka-set", "novalue"}), std::invalid_argument);
  EXPECT_THROW(
      parse({"--data", "/tmp/x", "--kafka", "k:1", "--kafka-set", "republish_interval_ms=abc"}),
      std::invalid_argument);
}

}  // namespace
}  // namespace hotkey::coordinator
