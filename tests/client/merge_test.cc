#include "hotkey/client/merge.h"

#include <gtest/gtest.h>

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
