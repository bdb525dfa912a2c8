// Partitioner families against outside truth: the shared vectors (librdkafka's unit-test
// values and the Java client's published distribution) and librdkafka's own exported
// partitioners called as an oracle.
#include "hotkey/partitioner.h"

#include <librdkafka/rdkafka.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace hotkey {
namespace {

nlohmann::json load_vectors() {
  // tests/data/partitioner_vectors.json: librdkafka's murmur2 unit-test values and the Java
  // client's published distribution (tests/data/README.md says where each comes from).
  std::ifstream in(std::string(HOTKEY_TEST_DATA_DIR) + "/partitioner_vectors.json");
  EXPECT_TRUE(in.good()) << "partitioner_vectors.json not found";
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

TEST(Partitioner, Murmur2MatchesLibrdkafkaUnitTestValues) {
  auto v = load_vectors();
  const auto& raw = v.at("murmur2_raw_int32_from_librdkafka_unittest");
  ASSERT_GE(raw.size(), 8u);
  for (const auto& [key, hex] : raw.items()) {
    uint32_t expected = static_cast<uint32_t>(std::stoul(hex.get<std::string>(), nullptr, 16));
    EXPECT_EQ(murmur2(key.data(), key.size()), expected) << "key '" << key << "'";
  }
}

TEST(Partitioner, Murmur2MatchesJavaClientDistribution) {
  auto v = load_vectors();
  const auto& dist = v.at("java_client_distribution");
  int32_t p = dist.at("partitions").get<int32_t>();
  std::vector<int> counts(static_cast<size_t>(p), 0);
  for (int i = 0; i < 12000; ++i) {
    counts[static_cast<size_t>(
        partition_for(HashFamily::kMurmur2, "loan-" + std::to_string(i), p))]++;
  }
  EXPECT_EQ(counts, dist.at("counts").get<std::vector<int>>());

  const auto& single = v.at("java_client_single_key");
  EXPECT_EQ(partition_for(HashFamily::kMurmur2, single.at("key").get<std::string>(),
                          single.at("partitions").get<int32_t>()),
            single.at("partition").get<int32_t>());
}

using Oracle = int32_t (*)(const rd_kafka_topic_t*, const void*, size_t, int32_t, void*, void*);

struct FamilyOracle {
  HashFamily family;
  Oracle oracle;
};

// librdkafka's own partitioners on >= 100,000 generated keys of every length 0..64, printable
// and binary, for several partition counts. Zero disagreements allowed.
TEST(Partitioner, MatchesLibrdkafkaOracleOnGeneratedKeys) {
  const FamilyOracle families[] = {
      {HashFamily::kMurmur2, &rd_kafka_msg_partitioner_murmur2},
      {HashFamily::kCrc32, &rd_kafka_msg_partitioner_consistent},
      {HashFamily::kFnv1a, &rd_kafka_msg_partitioner_fnv1a},
  };
  const int32_t partition_counts[] = {1, 2, 3, 12, 32, 64, 1000};
  std::mt19937_64 rng(20261130);
  std::vector<std::string> keys;
  keys.reserve(104000);
  for (int round = 0; round < 1600; ++round) {
    for (size_t len = 0; len <= 64; ++len) {
      std::string k(len, '\0');
      bool binary = (round % 2) == 1;
      for (auto& c : k) {
        c = binary ? static_cast<char>(rng() & 0xFF) : static_cast<char>('!' + rng() % 94);
      }
      keys.push_back(std::move(k));
    }
  }
  ASSERT_GE(keys.size(), 100000u);
  size_t checked = 0;
  for (const auto& f : families) {
    for (int32_t p : partition_counts) {
      size_t disagreements = 0;
      for (const auto& k : keys) {
        // librdkafka treats a NULL key as "no key"; pass a valid pointer for empty keys.
        const void* data = k.empty() ? static_cast<const void*>("") : k.data();
        int32_t want = f.oracle(nullptr, data, k.size(), p, nullptr, nullptr);
        int32_t got = partition_for(f.family, k, p);
        // The router's cold path: family_hash reduced by the partition count.
        auto via_hash = static_cast<int32_t>(family_hash(f.family, k.data(), k.size()) %
                                             static_cast<uint32_t>(p));
        if ((want != got || want != via_hash) && ++disagreements <= 3) {
          ADD_FAILURE() << to_string(f.family) << " P=" << p << " len=" << k.size() << " want "
                        << want << " got " << got << " family_hash % P " << via_hash;
        }
        ++checked;
      }
      EXPECT_EQ(disagreements, 0u) << to_string(f.family) << " P=" << p;
    }
  }
  EXPECT_EQ(checked, keys.size() * 3 * 7);
}

TEST(Partitioner, SaltedKeysRecomputeWithTheFamily) {
  for (auto family : {HashFamily::kMurmur2, HashFamily::kCrc32, HashFamily::kFnv1a}) {
    for (uint32_t salt : {0u, 7u, 10u, 4294967295u}) {
      std::string sk = salted_key("seller-42", "#", salt);
      EXPECT_EQ(sk, "seller-42#" + std::to_string(salt));
      EXPECT_EQ(salted_partition_for(family, "seller-42", "#", salt, 64),
                partition_for(family, sk, 64));
    }
  }
  std::string long_key(1000, 'x');
  EXPECT_EQ(salted_partition_for(HashFamily::kMurmur2, long_key, "::", 3, 32),
            partition_for(HashFamily::kMurmur2, long_key + "::3", 32));
}

TEST(Partitioner, SplitSaltedKey) {
  std::string_view logical;
  uint32_t salt = 0;
  ASSERT_TRUE(split_salted_key("a#b#12", "#", &logical, &salt));
  EXPECT_EQ(logical, "a#b");
  EXPECT_EQ(salt, 12u);
  ASSERT_TRUE(split_salted_key(std::string_view("\0\xff#0", 4), "#", &logical, &salt));
  EXPECT_EQ(logical, std::string_view("\0\xff", 2));
  EXPECT_EQ(salt, 0u);
  EXPECT_FALSE(split_salted_key("plain", "#", &logical, &salt));
  EXPECT_FALSE(split_salted_key("k#", "#", &logical, &salt));
  EXPECT_FALSE(split_salted_key("k#1x", "#", &logical, &salt));
  EXPECT_FALSE(split_salted_key("k#01", "#", &logical, &salt));
  EXPECT_FALSE(split_salted_key("k#99999999999", "#", &logical, &salt));
}

TEST(Partitioner, FamilyHashIsTheFamilysPartitioningHash) {
  const std::string keys[] = {"", "a", "seller-42", std::string("\xff\0bin", 5)};
  for (const std::string& k : keys) {
    EXPECT_EQ(family_hash(HashFamily::kMurmur2, k.data(), k.size()),
              murmur2(k.data(), k.size()) & 0x7fffffffu);
    EXPECT_EQ(family_hash(HashFamily::kCrc32, k.data(), k.size()), crc32(k.data(), k.size()));
    EXPECT_EQ(family_hash(HashFamily::kFnv1a, k.data(), k.size()), fnv1a(k.data(), k.size()));
  }
  const auto unknown = static_cast<HashFamily>(7);
  EXPECT_EQ(family_hash(unknown, "k", 1), 0u);
  EXPECT_THROW(partition_for(unknown, "k", 4), std::invalid_argument);
}

TEST(Partitioner, RejectsBadArguments) {
  EXPECT_THROW(partition_for(HashFamily::kMurmur2, "k", 0), std::invalid_argument);
  EXPECT_THROW(partition_for(HashFamily::kCrc32, "k", -3), std::invalid_argument);
  EXPECT_EQ(parse_hash_family("murmur2"), HashFamily::kMurmur2);
  EXPECT_EQ(parse_hash_family("crc32"), HashFamily::kCrc32);
  EXPECT_EQ(parse_hash_family("fnv1a"), HashFamily::kFnv1a);
  EXPECT_FALSE(parse_hash_family("md5").has_value());
  EXPECT_TRUE(valid_separator("#"));
  EXPECT_FALSE(valid_separator(""));
  EXPECT_FALSE(valid_separator("1"));
  EXPECT_FALSE(valid_separator("123456789"));
}

}  // namespace
}  // namespace hotkey
