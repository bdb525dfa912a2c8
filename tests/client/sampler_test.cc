#include "hotkey/client/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

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

// Issue #14 part 3: the adaptive rate samples everything while a window holds fewer records
// than the sketch needs, then about target_samples() a window, reporting the realized rate.
TEST(Sampler, AdaptiveRateFollowsTheRecordRate) {
  Sampler sampler(64, SampleRate::automatic(), 0);
  EXPECT_TRUE(sampler.adaptive());
  EXPECT_EQ(sampler.target_samples(), Sampler::kAdaptiveMinSamples);  // 64^2 / 4 < 4096
  EXPECT_EQ(sampler.sample_rate(), 1.0);
  // A small window: every record sampled, rate 1 reported, and the next window stays at 1.
  for (int i = 0; i < 1000; ++i) sampler.record("k" + std::to_string(i % 10), 0, false);
  Sampler::Window w = sampler.drain(1, 500, 500);
  EXPECT_EQ(w.total, 1000u);
  EXPECT_EQ(w.sketch_total, 1000u);
  EXPECT_EQ(w.sample_rate, 1.0);
  EXPECT_EQ(sampler.sample_rate(), 1.0);
  // 100,000 records in a window: still all sampled (the rate was decided before), then the
  // next window samples target / 100,000.
  for (int i = 0; i < 100000; ++i) sampler.record("k" + std::to_string(i % 10), 0, false);
  w = sampler.drain(1, 500, 500);
  EXPECT_EQ(w.sketch_total, 100000u);
  EXPECT_NEAR(sampler.sample_rate(), 4096.0 / 100000, 1e-12);
  for (int i = 0; i < 100000; ++i) sampler.record("k" + std::to_string(i % 10), 0, false);
  w = sampler.drain(1, 500, 500);
  EXPECT_EQ(w.total, 100000u);
  // Binomial(100000, 0.04096): mean 4096, sd 63.
  EXPECT_GT(w.sketch_total, 3700u);
  EXPECT_LT(w.sketch_total, 4500u);
  EXPECT_DOUBLE_EQ(w.sample_rate, static_cast<double>(w.sketch_total) / 100000.0);
  // A window twice the report interval (a late reporter) means half the records in the next;
  // a window half the interval (a surge report, a burst) is not scaled up.
  for (int i = 0; i < 100000; ++i) sampler.record("k", 0, false);
  sampler.drain(1, 1000, 500);
  EXPECT_NEAR(sampler.sample_rate(), 4096.0 / 50000, 1e-12);
  for (int i = 0; i < 100000; ++i) sampler.record("k", 0, false);
  sampler.drain(1, 20, 500);
  EXPECT_NEAR(sampler.sample_rate(), 4096.0 / 100000, 1e-12);
  // Traffic falls: back to rate 1.
  for (int i = 0; i < 100; ++i) sampler.record("k", 0, false);
  sampler.drain(1, 500, 500);
  EXPECT_EQ(sampler.sample_rate(), 1.0);
  // The fixed form reports its configured rate.
  Sampler fixed(64, 0.25);
  EXPECT_FALSE(fixed.adaptive());
  fixed.record("k", 0, false);
  EXPECT_EQ(fixed.drain(1).sample_rate, 0.25);
}

// Counts scaled by the reported rate are unbiased, also when the keys come in a fixed cycle
// (a 1-in-n countdown would see one key of a cycle of n only), and the scaled sketch total is
// the total.
TEST(Sampler, AdaptiveRateScaledCountsAreUnbiased) {
  Sampler sampler(64, SampleRate::automatic(), 0);
  // Push the rate down to 4096 / 163,840 = 1 in 40, the length of the cycle below.
  for (int i = 0; i < 163840; ++i) sampler.record("warm", 0, false);
  sampler.drain(1, 500, 500);
  ASSERT_LT(sampler.sample_rate(), 0.03);
  // A cycle of 40 records: "a" 20 times, "b" 10, "c" 5, five others once each.
  std::vector<std::string> cycle;
  for (int i = 0; i < 20; ++i) cycle.push_back("a");
  for (int i = 0; i < 10; ++i) cycle.push_back("b");
  for (int i = 0; i < 5; ++i) cycle.push_back("c");
  for (int i = 0; i < 5; ++i) cycle.push_back("x" + std::to_string(i));
  std::map<std::string, double> scaled_sum;
  double total_sum = 0;
  double scaled_total_sum = 0;
  constexpr int kWindows = 40;
  constexpr int kCycles = 4096;  // 163,840 records a window: the rate stays put
  for (int win = 0; win < kWindows; ++win) {
    for (int cyc = 0; cyc < kCycles; ++cyc) {
      for (size_t i = 0; i < cycle.size(); ++i) {
        sampler.record(cycle[i], 0, false);
      }
    }
    Sampler::Window w = sampler.drain(1, 500, 500);
    ASSERT_EQ(w.total, uint64_t{kCycles} * cycle.size());
    ASSERT_LT(w.sample_rate, 0.03);
    ASSERT_GT(w.sample_rate, 0.02);
    total_sum += static_cast<double>(w.total);
    scaled_total_sum += static_cast<double>(w.sketch_total) / w.sample_rate;
    for (const auto& key : {"a", "b", "c"}) {
      scaled_sum[key] += static_cast<double>(w.sketch.estimate(key)) / w.sample_rate;
    }
  }
  EXPECT_NEAR(scaled_total_sum, total_sum, 1e-6 * total_sum);
  // True records: a 1/2, b 1/4, c 1/8 of the total. ~4,100 samples a window, 40 windows:
  // the relative standard error of c's estimate is about sqrt(7 / 164,000) = 0.65%; allow 4%.
  EXPECT_NEAR(scaled_sum["a"] / total_sum, 0.5, 0.02);
  EXPECT_NEAR(scaled_sum["b"] / total_sum, 0.25, 0.01);
  EXPECT_NEAR(scaled_sum["c"] / total_sum, 0.125, 0.005);
}

// A key surging at a high record rate is still noticed promptly after sampling: at 1 in ~61
// within about a thousand of its records, and never from a handful of samples.
TEST(Sampler, AdaptiveRateStillNoticesASurge) {
  Sampler sampler(256, SampleRate::automatic(), 1.0);
  sampler.set_partitions(12);
  // 1,000,000 records over 100,000 keys: the rate drops to 256^2 / 4 / 1,000,000.
  EXPECT_EQ(sampler.target_samples(), 16384u);
  for (int i = 0; i < 1000000; ++i) sampler.record("u" + std::to_string(i % 100000), 0, false);
  EXPECT_EQ(sampler.take_surge(), 0u);
  sampler.drain(12, 500, 500);
  const double rate = sampler.sample_rate();
  ASSERT_NEAR(rate, 16384.0 / 1000000, 1e-9);
  // Uniform traffic in the new window is no surge.
  for (int i = 0; i < 200000; ++i) sampler.record("u" + std::to_string(i % 100000), 0, false);
  EXPECT_EQ(sampler.take_surge(), 0u);
  // Now "hot" takes 90% of the records. It needs 1/12 of the window's sampled records:
  // 200,000 uniform records in front mean about 200,000 / 11 / 0.9 = 20,000 records in.
  int sent = 0;
  uint64_t fingerprint = 0;
  for (int i = 0; i < 200000 && fingerprint == 0; ++i) {
    sampler.record(i % 10 == 9 ? "u" + std::to_string(i) : std::string("hot"), 0, false);
    ++sent;
    fingerprint = sampler.take_surge();
  }
  EXPECT_NE(fingerprint, 0u);
  EXPECT_LT(sent, 30000);
  // A fresh window at about the same rate (the window filled up to ~1,000,000 records): the
  // surge is noticed after kSurgeMinSampled samples of the key (~16 / rate = 977 records, sd
  // ~250), not at its first sample.
  for (int i = 0; i < 800000 - sent; ++i)
    sampler.record("u" + std::to_string(i % 100000), 0, false);
  sampler.drain(12, 500, 500);
  ASSERT_NEAR(sampler.sample_rate(), rate, rate * 0.1);
  sent = 0;
  fingerprint = 0;
  for (int i = 0; i < 100000 && fingerprint == 0; ++i) {
    sampler.record("hot", 0, false);
    ++sent;
    fingerprint = sampler.take_surge();
  }
  EXPECT_NE(fingerprint, 0u);
  EXPECT_GT(sent, 150);
  EXPECT_LT(sent, 4000);
}

}  // namespace
}  // namespace hotkey::client
