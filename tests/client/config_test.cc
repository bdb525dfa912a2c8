#include "hotkey/client/config.h"

#include <gtest/gtest.h>

#include <map>

namespace hotkey::client {
namespace {

TEST(ClientConfig, Defaults) {
  ClientConfig c = parse_client_config({});
  EXPECT_TRUE(c.coordinator_url.empty());
  EXPECT_EQ(c.report_interval_ms, 500u);
  EXPECT_EQ(c.sample_rate, 1.0);
  EXPECT_EQ(c.routing_mode, RoutingMode::kRekey);
  EXPECT_EQ(c.salt_policy, SaltPolicy::kWeightedRoundRobin);
  EXPECT_EQ(c.expired_policy, ExpiredPolicy::kKeep);
  EXPECT_FALSE(c.producer_id.empty());
  EXPECT_EQ(c.surge_interval_ms, 100u);
  EXPECT_EQ(c.surge_factor, 1.0);
  EXPECT_TRUE(c.salt_headers);
}

TEST(ClientConfig, ParsesEveryProperty) {
  ClientConfig c = parse_client_config({
      {"hotkey.coordinator.url", "http://127.0.0.1:8080/"},
      {"hotkey.report.interval.ms", "250"},
      {"hotkey.producer.id", "p-1"},
      {"hotkey.sample.rate", "0.25"},
      {"hotkey.sketch.capacity", "64"},
      {"hotkey.routing.mode", "route"},
      {"hotkey.salt.policy", "value_hash"},
      {"hotkey.list.ttl.ms", "1000"},
      {"hotkey.list.expired.policy", "plain"},
      {"hotkey.token", "secret"},
      {"hotkey.hash", "murmur2"},
      {"hotkey.topics", "a, b.c"},
      {"hotkey.report.format", "json"},
      {"hotkey.surge.interval.ms", "0"},
      {"hotkey.surge.factor", "2.5"},
      {"hotkey.salt.headers", "false"},
      {"bootstrap.servers", "ignored:9092"},
  });
  EXPECT_EQ(c.coordinator_url, "http://127.0.0.1:8080");
  EXPECT_EQ(c.report_interval_ms, 250u);
  EXPECT_EQ(c.producer_id, "p-1");
  EXPECT_EQ(c.sample_rate, 0.25);
  EXPECT_EQ(c.sketch_capacity, 64u);
  EXPECT_EQ(c.routing_mode, RoutingMode::kRoute);
  EXPECT_EQ(c.salt_policy, SaltPolicy::kValueHash);
  EXPECT_EQ(c.list_ttl_ms, 1000u);
  EXPECT_EQ(c.expired_policy, ExpiredPolicy::kPlain);
  EXPECT_EQ(c.token, "secret");
  EXPECT_EQ(c.hash, HashFamily::kMurmur2);
  EXPECT_TRUE(c.report_json);
  EXPECT_EQ(c.topics, (std::vector<std::string>{"a", "b.c"}));
  EXPECT_EQ(c.surge_interval_ms, 0u);
  EXPECT_EQ(c.surge_factor, 2.5);
  EXPECT_FALSE(c.salt_headers);
}

TEST(ClientConfig, RejectsUnknownAndBadValues) {
  EXPECT_THROW(parse_client_config({{"hotkey.no.such", "1"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.sample.rate", "0"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.sample.rate", "1.5"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.sample.rate", "x"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.report.interval.ms", "-1"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.report.interval.ms", "12ms"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.routing.mode", "salt"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.coordinator.url", "ftp://x"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.hash", "md5"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.topics", "bad topic"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.surge.factor", "0"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.salt.headers", "no"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.surge.factor", "1e4"}}), std::invalid_argument);
  EXPECT_THROW(parse_client_config({{"hotkey.surge.interval.ms", "x"}}), std::invalid_argument);
  try {
    parse_client_config({{"hotkey.sketch.capacity", "0"}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("hotkey.sketch.capacity"), std::string::npos);
  }
}

TEST(ClientConfig, SplitsKafkaProperties) {
  auto rest = kafka_properties({{"hotkey.token", "t"}, {"linger.ms", "5"}});
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].first, "linger.ms");
}

TEST(ClientConfig, KafkaTransportInheritsTheProducersConnectionSettings) {
  EXPECT_EQ(parse_client_config({}).transport, Transport::kHttp);
  ClientConfig c = parse_client_config({{"hotkey.transport", "kafka"},
                                        {"bootstrap.servers", "b1:9092"},
                                        {"security.protocol", "SASL_SSL"},
                                        {"sasl.mechanism", "PLAIN"},
                                        {"ssl.ca.location", "/ca.pem"},
                                        {"linger.ms", "50"},
                                        {"transactional.id", "app-tx"},
                                        {"hotkey.kafka.sasl.mechanism", "SCRAM-SHA-512"},
                                        {"hotkey.kafka.group.id", "g"}});
  EXPECT_EQ(c.transport, Transport::kKafka);
  EXPECT_EQ(c.reports_topic, "__hotkey_reports");
  EXPECT_EQ(c.lists_topic, "__hotkey_lists");
  std::map<std::string, std::string> k(c.kafka_settings.begin(), c.kafka_settings.end());
  EXPECT_EQ(k, (std::map<std::string, std::string>{{"bootstrap.servers", "b1:9092"},
                                                   {"security.protocol", "SASL_SSL"},
                                                   {"sasl.mechanism", "SCRAM-SHA-512"},
                                                   {"ssl.ca.location", "/ca.pem"},
                                                   {"group.id", "g"}}));
  // A cluster of its own: nothing of the producer's is inherited.
  c = parse_client_config({{"hotkey.transport", "kafka"},
                           {"bootstrap.servers", "b1:9092"},
                           {"security.protocol", "SASL_SSL"},
                           {"hotkey.kafka.bootstrap.servers", "meta:9092"},
                           {"hotkey.reports.topic", "r"},
                           {"hotkey.lists.topic", "l"}});
  EXPECT_EQ(c.kafka_settings,
            (std::vector<std::pair<std::string, std::string>>{{"bootstrap.servers", "meta:9092"}}));
  EXPECT_EQ(c.reports_topic, "r");
  EXPECT_EQ(c.lists_topic, "l");
  EXPECT_TRUE(c.coordinator_url.empty());
}

TEST(ClientConfig, KafkaTransportRejectsWhatCannotWork) {
  auto bad = [](Properties p) {
    EXPECT_THROW(parse_client_config(p), std::invalid_argument) << p.begin()->first;
  };
  bad({{"hotkey.transport", "grpc"}});
  bad({{"hotkey.transport", "kafka"}});  // no cluster
  bad({{"hotkey.transport", "kafka"},
       {"bootstrap.servers", "b:1"},
       {"hotkey.report.format", "json"}});
  bad({{"hotkey.transport", "kafka"}, {"bootstrap.servers", "b:1"}, {"hotkey.lists.topic", "a b"}});
  bad({{"hotkey.transport", "kafka"},
       {"bootstrap.servers", "b:1"},
       {"hotkey.lists.topic", "x"},
       {"hotkey.reports.topic", "x"}});
  bad({{"hotkey.kafka.bootstrap.servers", "b:1"}});  // http transport
  bad({{"hotkey.transport", "kafka"}, {"hotkey.kafka.", "b:1"}});
}

TEST(ClientConfig, FamilyOfRdkafkaPartitioner) {
  EXPECT_EQ(family_of_rdkafka_partitioner("murmur2_random"), HashFamily::kMurmur2);
  EXPECT_EQ(family_of_rdkafka_partitioner("consistent_random"), HashFamily::kCrc32);
  EXPECT_EQ(family_of_rdkafka_partitioner("fnv1a"), HashFamily::kFnv1a);
  EXPECT_THROW(family_of_rdkafka_partitioner("random"), std::invalid_argument);
}

}  // namespace
}  // namespace hotkey::client
