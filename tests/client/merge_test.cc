#include "hotkey/client/merge.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "hotkey/client/router.h"

namespace hotkey::client {
namespace {

TEST(RecoverLogicalKey, HeadersFirst) {
  auto r = recover_logical_key("order-1#3", "3", "12");
  EXPECT_EQ(r.logical_key, "order-1");
  EXPECT_TRUE(r.salted);
  EXPECT_TRUE(r.from_headers);
  EXPECT_EQ(r.salt, 3u);
  EXPECT_EQ(r.version, 12u);
  // Route mode: the key is already logical.
  r = recover_logical_key("order-1", "3", "12");
  EXPECT_EQ(r.logical_key, "order-1");
  EXPECT_TRUE(r.salted);
  // A logical key that itself ends in #<digits> is kept whole when the header says another salt.
  r = recover_logical_key("acct#7", "2", "1");
  EXPECT_EQ(r.logical_key, "acct#7");
  r = recover_logical_key("acct#7#2", "2", "1");
  EXPECT_EQ(r.logical_key, "acct#7");
}

TEST(RecoverLogicalKey, SuffixSecondAndHeadersOnly) {
  auto r = recover_logical_key("k#15", std::nullopt, std::nullopt);
  EXPECT_EQ(r.logical_key, "k");
  EXPECT_TRUE(r.salted);
  EXPECT_FALSE(r.from_headers);
  EXPECT_EQ(r.salt, 15u);
  r = recover_logical_key("k#15", std::nullopt, std::nullopt, "#", KeyRecovery::kHeadersOnly);
  EXPECT_EQ(r.logical_key, "k#15");
  EXPECT_FALSE(r.salted);
  r = recover_logical_key("plain", std::nullopt, std::nullopt);
  EXPECT_EQ(r.logical_key, "plain");
  EXPECT_FALSE(r.salted);
  r = recover_logical_key("k::4", std::nullopt, std::nullopt, "::");
  EXPECT_EQ(r.logical_key, "k");
}

TEST(RecoverLogicalKey, IgnoresMalformedHeaders) {
  auto r = recover_logical_key("k#1", "x1", "-3", "#", KeyRecovery::kHeadersOnly);
  EXPECT_FALSE(r.salted);
  EXPECT_EQ(r.version, 0u);
  EXPECT_EQ(r.logical_key, "k#1");
  r = recover_logical_key("k", "99999999999", std::nullopt);  // beyond uint32
  EXPECT_FALSE(r.salted);
}

// Contract v2: a rekeyed record has no header (its suffix is the mark); an unsalted record whose
// key ends in <sep><digits> carries hotkey.unsalted, which keeps that key whole.
TEST(RecoverLogicalKey, Version2UnsaltedHeaderKeepsTheKeyWhole) {
  MergeHeaders unsalted;
  unsalted.unsalted = true;
  auto r = recover_logical_key("order#13", unsalted);
  EXPECT_EQ(r.logical_key, "order#13");
  EXPECT_FALSE(r.salted);
  r = recover_logical_key("order#13", MergeHeaders{});
  EXPECT_EQ(r.logical_key, "order");
  EXPECT_TRUE(r.salted);
  EXPECT_EQ(r.salt, 13u);
  // A valid hotkey.salt still decides (v1 and v2 records share a topic).
  MergeHeaders both{"2", "9", true};
  r = recover_logical_key("k#2", both);
  EXPECT_TRUE(r.salted);
  EXPECT_EQ(r.logical_key, "k");
  EXPECT_EQ(r.version, 9u);
}

TEST(MergeMark, Version2MarksOnlyWhatTheSuffixCannotSay) {
  const uint64_t local = kLocalTableVersionBit + 3;
  EXPECT_EQ(merge_mark(2, RoutingMode::kRekey, true, 3, false), MergeMark::kNone);
  EXPECT_EQ(merge_mark(2, RoutingMode::kRekey, true, local, false), MergeMark::kSaltAndVersion);
  EXPECT_EQ(merge_mark(2, RoutingMode::kRoute, true, 3, false), MergeMark::kSaltAndVersion);
  EXPECT_EQ(merge_mark(2, RoutingMode::kRekey, false, 3, false), MergeMark::kNone);
  EXPECT_EQ(merge_mark(2, RoutingMode::kRekey, false, 3, true), MergeMark::kUnsalted);
  EXPECT_EQ(merge_mark(1, RoutingMode::kRekey, true, 3, false), MergeMark::kSaltAndVersion);
  EXPECT_EQ(merge_mark(1, RoutingMode::kRekey, false, 3, true), MergeMark::kNone);
}

TEST(Router, LooksSaltedUsesTheTopicsSeparator) {
  Router router;
  const TopicId id = router.topic("t");
  const auto looks = [&](std::string_view k) {
    return router.looks_salted(id, k.data(), k.size());
  };
  EXPECT_TRUE(looks("a#1"));
  EXPECT_TRUE(looks("#0"));
  EXPECT_FALSE(looks("a-1"));
  EXPECT_FALSE(looks("a#01"));
  EXPECT_FALSE(looks("a#4294967296"));
  EXPECT_TRUE(looks("a#4294967295"));
  EXPECT_FALSE(looks("a#12345678901"));
  EXPECT_FALSE(looks("12"));
  EXPECT_TRUE(looks("##7"));
  EXPECT_FALSE(looks("a#"));
  EXPECT_FALSE(router.looks_salted(id, nullptr, 0));
  // As split_salted_key reads them (merge contract rule 3), on keys of every shape.
  for (std::string k : {"a#1", "a1", "#", "#1", "a#0", "a#00", "a##12", "a#1#2", "#a1",
                        "x#9999999999", "x#1000000000", "x#0000000001", "1#2#3", "a#b1"}) {
    std::string_view logical;
    uint32_t salt = 0;
    EXPECT_EQ(looks(k), split_salted_key(k, "#", &logical, &salt)) << k;
    EXPECT_EQ(ends_like_salted(k, "#"), looks(k)) << k;
  }
  HotKeyList list;
  list.topic = "t";
  list.version = 1;
  list.partitions = 4;
  list.separator = "::";
  ASSERT_TRUE(router.publish(list));
  EXPECT_TRUE(looks("a::1"));
  EXPECT_FALSE(looks("a#1"));
}

std::string unhex_text(std::string_view h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// tests/data/vectors/merge_contract.json (also read by the Java client's tests).
TEST(MergeContract, SharedVectors) {
  std::ifstream f(std::string(HOTKEY_TEST_DATA_DIR) + "/vectors/merge_contract.json");
  ASSERT_TRUE(f) << "tests/data/vectors/merge_contract.json";
  const nlohmann::json doc = nlohmann::json::parse(f);
  size_t unsalted_marks = 0;
  for (const auto& c : doc.at("marks")) {
    const std::string key = unhex_text(c.at("key").get<std::string>());
    const std::string sep = unhex_text(c.at("separator").get<std::string>());
    const bool salted = c.at("salted").get<bool>();
    std::string_view logical;
    uint32_t salt = 0;
    const bool looks = !salted && split_salted_key(key, sep, &logical, &salt);
    const MergeMark m = merge_mark(
        c.at("contract").get<uint32_t>(),
        c.at("mode").get<std::string>() == "rekey" ? RoutingMode::kRekey : RoutingMode::kRoute,
        salted, std::stoull(c.at("version").get<std::string>()), looks);
    const auto headers = c.at("headers").get<std::vector<std::string>>();
    const std::vector<std::string> want =
        m == MergeMark::kSaltAndVersion ? std::vector<std::string>{"hotkey.salt", "hotkey.version"}
        : m == MergeMark::kUnsalted     ? std::vector<std::string>{"hotkey.unsalted"}
                                        : std::vector<std::string>{};
    EXPECT_EQ(headers, want) << c.dump();
    if (m == MergeMark::kUnsalted) ++unsalted_marks;
  }
  EXPECT_GE(unsalted_marks, 2u);
  for (const auto& c : doc.at("recover")) {
    const std::string key = unhex_text(c.at("key").get<std::string>());
    const std::string sep = unhex_text(c.at("separator").get<std::string>());
    const auto& h = c.at("headers");
    std::string salt_text, version_text;
    MergeHeaders headers;
    if (h.contains("hotkey.salt"))
      headers.salt = salt_text = h.at("hotkey.salt").get<std::string>();
    if (h.contains("hotkey.version")) {
      headers.version = version_text = h.at("hotkey.version").get<std::string>();
    }
    headers.unsalted = h.contains("hotkey.unsalted");
    const auto mode = c.at("mode").get<std::string>() == "headers_only"
                          ? KeyRecovery::kHeadersOnly
                          : KeyRecovery::kHeadersThenSuffix;
    const RecoveredKey r = recover_logical_key(key, headers, sep, mode);
    EXPECT_EQ(r.logical_key, unhex_text(c.at("logical_key").get<std::string>())) << c.dump();
    EXPECT_EQ(r.salted, c.at("salted").get<bool>()) << c.dump();
    EXPECT_EQ(r.salt, c.at("salt").get<uint32_t>()) << c.dump();
    EXPECT_EQ(r.version, std::stoull(c.at("version").get<std::string>())) << c.dump();
    EXPECT_EQ(r.from_headers, c.at("from_headers").get<bool>()) << c.dump();
  }
}

TEST(SubstreamMerger, GroupsPerLogicalKeyInTimestampOrderUpToTheWatermark) {
  SubstreamMerger m(100);
  // Two sub-streams of "hot" (salts 0 and 1 on partitions 2 and 5), one cold key.
  ASSERT_TRUE(m.add({"hot", true, 0, 2, 10, 100, "a"}));
  ASSERT_TRUE(m.add({"hot", true, 0, 2, 11, 300, "c"}));
  ASSERT_TRUE(m.add({"hot", true, 1, 5, 7, 200, "b"}));
  ASSERT_TRUE(m.add({"hot", true, 1, 5, 8, 400, "d"}));
  ASSERT_TRUE(m.add({"cold", false, 0, 1, 1, 150, "x"}));
  EXPECT_EQ(m.substreams("hot"), 2u);
  EXPECT_EQ(m.substreams("cold"), 1u);
  auto out = m.drain(300);
  ASSERT_EQ(out["hot"].size(), 3u);
  EXPECT_EQ(out["hot"][0].value, "a");
  EXPECT_EQ(out["hot"][1].value, "b");
  EXPECT_EQ(out["hot"][2].value, "c");
  EXPECT_EQ(out["cold"].size(), 1u);
  EXPECT_EQ(m.buffered(), 1u);
  out = m.drain(1000);
  ASSERT_EQ(out["hot"].size(), 1u);
  EXPECT_EQ(out["hot"][0].value, "d");
  EXPECT_EQ(m.buffered(), 0u);
}

// Producer timestamps can go back within a sub-stream (several producers write one salted key
// to one partition, their clocks apart): the partition's order holds regardless, and a record
// waits behind an earlier one stamped after the watermark.
TEST(SubstreamMerger, KeepsASubstreamsOrderWhereTimestampsGoBack) {
  SubstreamMerger m(100);
  ASSERT_TRUE(m.add({"hot", true, 0, 2, 10, 300, "first"}));
  ASSERT_TRUE(m.add({"hot", true, 0, 2, 11, 100, "second"}));  // stamped earlier, written later
  ASSERT_TRUE(m.add({"hot", true, 1, 5, 3, 200, "other"}));
  auto out = m.drain(250);
  // "second" is under the watermark but waits behind "first" (300).
  ASSERT_EQ(out["hot"].size(), 1u);
  EXPECT_EQ(out["hot"][0].value, "other");
  out = m.drain(1000);
  ASSERT_EQ(out["hot"].size(), 2u);
  EXPECT_EQ(out["hot"][0].value, "first");
  EXPECT_EQ(out["hot"][1].value, "second");
  EXPECT_EQ(m.buffered(), 0u);
}

TEST(SubstreamMerger, BoundedBuffer) {
  SubstreamMerger m(2);
  EXPECT_TRUE(m.add({"k", false, 0, 0, 0, 1, ""}));
  EXPECT_TRUE(m.add({"k", false, 0, 0, 1, 2, ""}));
  EXPECT_FALSE(m.add({"k", false, 0, 0, 2, 3, ""}));
  EXPECT_THROW(SubstreamMerger(0), std::invalid_argument);
}

}  // namespace
}  // namespace hotkey::client
