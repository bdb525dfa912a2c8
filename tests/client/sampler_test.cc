#include "hotkey/client/sampler.h"

#include <gtest/gtest.h>

#include <thread>

namespace hotkey::client {
namespace {

TEST(Sampler, CountsTotalsPartitionsAndTopKeysAcrossThreads) {
  Sampler sampler(64, 1.0);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        // Half of the traffic is one key; the rest spreads over 1000 keys.
        if (i % 2 == 0) {
          sampler.record("hot", 3, true);
        } else {
          std::string key = "k" + std::to_string((i * 7 + t) % 1000);
          sampler.record(key, i % 8, false);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  sampler.record_null();

  Sampler::Window w = sampler.drain(8);
  EXPECT_EQ(w.total, uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(w.sketch_total, w.total);
  ASSERT_EQ(w.partition_counts.size(), 8u);
  uint64_t sum = 0;
  for (uint64_t c : w.partition_counts) sum += c;
  EXPECT_EQ(sum, w.total);
  EXPECT_GE(w.partition_counts[3], uint64_t{kThreads} * kPerThread / 2);
  auto top = w.sketch.top(1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].key, "hot");
  EXPECT_GE(top[0].count, uint64_t{kThreads} * kPerThread / 2);
  EXPECT_LE(top[0].guaranteed(), uint64_t{kThreads} * kPerThread / 2);

  auto c = sampler.counters();
  EXPECT_EQ(c.salted, uint64_t{kThreads} * kPerThread / 2);
  EXPECT_EQ(c.cold, uint64_t{kThreads} * kPerThread / 2);
  EXPECT_EQ(c.null_key, 1u);

  // drain() starts a new window; counters are for the lifetime.
  Sampler::Window empty = sampler.drain(8);
  EXPECT_EQ(empty.total, 0u);
  EXPECT_TRUE(empty.sketch.empty());
  EXPECT_EQ(sampler.counters().salted, c.salted);
}

TEST(Sampler, SamplesOneInN) {
  Sampler sampler(16, 0.1);
  for (int i = 0; i < 1000; ++i) sampler.record("k", 0, false);
  Sampler::Window w = sampler.drain(1);
  EXPECT_EQ(w.total, 1000u);
  EXPECT_EQ(w.sketch_total, 100u);
  EXPECT_EQ(w.sketch.estimate("k"), 100u);
}

TEST(Sampler, DropsCountsBeyondThePartitionCount) {
  Sampler sampler(4, 1.0);
  sampler.record("a", 9, false);
  sampler.record("b", 1, false);
  Sampler::Window w = sampler.drain(4);
  EXPECT_EQ(w.partition_counts, (std::vector<uint64_t>{0, 1, 0, 0}));
}

TEST(Sampler, RejectsBadArguments) {
  EXPECT_THROW(Sampler(0, 1.0), std::invalid_argument);
  EXPECT_THROW(Sampler(8, 0.0), std::invalid_argument);
  EXPECT_THROW(Sampler(8, 2.0), std::invalid_argument);
}

// Issue #14: the sampler notices an unsalted key that reaches factor / partitions of the
// window's sampled records (and kSurgeMinRecords), and nothing else.
TEST(Sampler, NoticesASurgingUnsaltedKeyOnly) {
  Sampler sampler(64, 1.0, 1.0);
  for (int i = 0; i < 400; ++i) sampler.record("k" + std::to_string(i), i % 8, false);
  // Partitions unknown: nothing is noticed, whatever the key does.
  for (int i = 0; i < 100; ++i) sampler.record("hot", 1, false);
  EXPECT_EQ(sampler.take_surge(), 0u);
  sampler.drain(8);
  sampler.set_partitions(8);
  // Uniform traffic is no surge; 40 records of "hot" in a window of 440 (< 1/8) are none yet.
  for (int i = 0; i < 400; ++i) sampler.record("k" + std::to_string(i), i % 8, false);
  for (int i = 0; i < 40; ++i) sampler.record("hot", 1, false);
  EXPECT_EQ(sampler.take_surge(), 0u);
  // 1/8 of the window: noticed, once per take.
  for (int i = 0; i < 30; ++i) sampler.record("hot", 1, false);
  uint64_t fingerprint = sampler.take_surge();
  EXPECT_NE(fingerprint, 0u);
  EXPECT_EQ(sampler.take_surge(), 0u);
  sampler.record("hot", 1, false);
  EXPECT_EQ(sampler.take_surge(), fingerprint);
  // Muted: not noticed again; salted records (the key is on the list) are never noticed.
  sampler.set_muted(3, fingerprint);
  sampler.record("hot", 1, false);
  sampler.record("hot", 1, true);
  EXPECT_EQ(sampler.take_surge(), 0u);
  sampler.set_muted(3, 0);
  sampler.record("hot", 1, false);
  EXPECT_EQ(sampler.take_surge(), fingerprint);
  // A short window needs kSurgeMinRecords of the key, not only the share.
  sampler.drain(8);
  for (int i = 0; i < 31; ++i) sampler.record("hot", 1, false);
  EXPECT_EQ(sampler.take_surge(), 0u);
  sampler.record("hot", 1, false);
  EXPECT_EQ(sampler.take_surge(), fingerprint);
  // Factor 0: surges are not looked for.
  Sampler off(64, 1.0);
  off.set_partitions(8);
  for (int i = 0; i < 100; ++i) off.record("hot", 1, false);
  EXPECT_EQ(off.take_surge(), 0u);
  EXPECT_THROW(Sampler(64, 1.0, -1.0), std::invalid_argument);
}

}  // namespace
}  // namespace hotkey::client
