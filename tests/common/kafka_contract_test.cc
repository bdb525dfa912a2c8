#include "hotkey/kafka_contract.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace hotkey {
namespace {

OwnerHeartbeat sample() {
  OwnerHeartbeat b;
  b.owner = "http://10.0.0.7:8470";
  b.member_id = "rdkafka-3f1c";
  b.partition = 11;
  b.epoch = 4294967295u;  // the largest epoch a version can carry
  b.at_ms = 1764470001000;
  b.interval_ms = 1000;
  return b;
}

TEST(OwnerHeartbeat, RoundTripsAndKeepsEveryField) {
  const OwnerHeartbeat b = sample();
  const auto back = parse_owner_heartbeat(encode_owner_heartbeat(b));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, b);
}

TEST(OwnerHeartbeat, TheKeyCanNeverBeADataTopicsName) {
  // Kafka topic names are [A-Za-z0-9._-]: a reader keyed by topic never confuses the two.
  EXPECT_NE(kOwnerHeartbeatKey.find('/'), std::string_view::npos);
}

TEST(OwnerHeartbeat, RefusesWhatIsNotAVersionOneHeartbeat) {
  EXPECT_FALSE(parse_owner_heartbeat(""));
  EXPECT_FALSE(parse_owner_heartbeat("not json"));
  EXPECT_FALSE(parse_owner_heartbeat("[]"));
  // A list (what the lists topic mostly carries) is not a heartbeat.
  EXPECT_FALSE(parse_owner_heartbeat(
      R"({"topic":"orders","version":4294967297,"partitions":12,"hash":"murmur2","keys":[]})"));
  const std::string good = encode_owner_heartbeat(sample());
  for (const char* field : {"v", "owner", "partition", "epoch", "at_ms", "interval_ms"}) {
    auto j = nlohmann::json::parse(good);
    j.erase(field);
    EXPECT_FALSE(parse_owner_heartbeat(j.dump())) << "without " << field;
  }
  auto j = nlohmann::json::parse(good);
  j["v"] = 2;
  EXPECT_FALSE(parse_owner_heartbeat(j.dump())) << "a later format";
  j = nlohmann::json::parse(good);
  j["epoch"] = 4294967296ull;  // above what a version can carry
  EXPECT_FALSE(parse_owner_heartbeat(j.dump()));
  j = nlohmann::json::parse(good);
  j["partition"] = -1;
  EXPECT_FALSE(parse_owner_heartbeat(j.dump()));
  j = nlohmann::json::parse(good);
  j["owner"] = "";
  EXPECT_FALSE(parse_owner_heartbeat(j.dump()));
  // Members a later writer adds are ignored; member_id is optional.
  j = nlohmann::json::parse(good);
  j["zone"] = "eu-1";
  j.erase("member_id");
  const auto back = parse_owner_heartbeat(j.dump());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->member_id, "");
  EXPECT_EQ(back->partition, 11);
}

}  // namespace
}  // namespace hotkey
