// The balance benchmark's Zipf scenarios, offline (issue 16): four producers send Zipf(z)
// records over 100,000 keys "user-<rank>" to 32 partitions at 16,000 records/s, reporting
// every 500 ms with the client's default sketch (256 counters); the coordinator (real core,
// real RocksDB, ManualClock, the default topic settings and warm-up) plans every second and
// the producers route with its latest list. Measured over the bench's steady window (7-16 s):
// the expected per-partition load under the lists in force (the workload's exact key shares
// routed by each list: no sampling noise, what the planner controls) and the keys salted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <unordered_map>

#include "planner.h"
#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

constexpr const char* kTopic = "zipf";
constexpr int32_t kPartitions = 32;
constexpr uint32_t kKeys = 100000;
constexpr int kProducers = 4;
constexpr int kRecordsPerReport = 2000;  // 4,000 records/s per producer, a report every 500 ms
constexpr int kReportMs = 500;
// The bench's 16 s runs: the steady window opens 7 s in.
constexpr int kWindowFromMs = 7000;

struct ZipfRun {
  double expected_skew = 0;  // max/avg of the expected load over the steady window
  double sampled_skew = 0;   // the same from the records routed (with sampling noise)
  size_t keys = 0;           // keys listed at the end
  size_t balance = 0;        // of them, salted for balance (below the hot threshold)
  double max_balance_share = 0;  // the largest true share of a balance key
  double min_detected_share = 1;  // the smallest true share of a detected key
  uint64_t versions = 0;
  size_t distinct = 0;  // distinct keys sent
};

// `max_balance_keys` >= 0 replaces the setting's default.
ZipfRun run_zipf(double z, uint32_t seed, int run_ms = 16000, int max_balance_keys = -1) {
  CoordinatorConfig cfg = test_config();
  cfg.warmup_ms = 5000;  // the service defaults
  cfg.defaults = TopicSettings{};
  // Exploring the balance-driven selection's target (docs/BENCHMARKS.md, Zipf section): the
  // bounds below are for the default.
  if (const char* target = std::getenv("HOTKEY_ZIPF_BALANCE_TARGET")) {
    cfg.defaults.balance_target = std::atof(target);
  }
  if (const char* churn = std::getenv("HOTKEY_ZIPF_CHURN_TOLERANCE")) {
    cfg.defaults.churn_tolerance = std::atof(churn);
  }
  if (const char* floor = std::getenv("HOTKEY_ZIPF_BALANCE_MIN_FRACTION")) {
    cfg.defaults.balance_min_fraction = std::atof(floor);
  }
  if (const char* cap = std::getenv("HOTKEY_ZIPF_MAX_BALANCE_KEYS")) {
    cfg.defaults.max_balance_keys = static_cast<uint32_t>(std::atoi(cap));
  }
  if (max_balance_keys >= 0) cfg.defaults.max_balance_keys = static_cast<uint32_t>(max_balance_keys);
  Harness h(cfg);
  // The workload's exact shares and each key's home partition.
  std::vector<double> share(kKeys), cdf(kKeys);
  double sum = 0;
  for (uint32_t r = 0; r < kKeys; ++r) sum += std::pow(static_cast<double>(r + 1), -z);
  double acc = 0;
  for (uint32_t r = 0; r < kKeys; ++r) {
    share[r] = std::pow(static_cast<double>(r + 1), -z) / sum;
    acc += share[r];
    cdf[r] = acc;
  }
  cdf.back() = 1.0;
  std::vector<std::string> names(kKeys);
  std::vector<double> naive(static_cast<size_t>(kPartitions), 0.0);
  std::vector<int32_t> home(kKeys);
  for (uint32_t r = 0; r < kKeys; ++r) {
    names[r] = "user-" + std::to_string(r);
    home[r] = partition_for(HashFamily::kMurmur2, names[r], kPartitions);
    naive[static_cast<size_t>(home[r])] += share[r];
  }
  std::unordered_map<std::string, uint32_t> rank_of;
  for (uint32_t r = 0; r < 256; ++r) rank_of[names[r]] = r;

  // The expected load under `list`: every key at home, listed keys moved from home to their
  // salts by weight.
  auto expected_under = [&](const HotKeyList& list) {
    std::vector<double> e = naive;
    for (const auto& k : list.keys) {
      auto it = rank_of.find(k.key);
      if (it == rank_of.end() || k.salts.empty()) continue;
      const double s = share[it->second];
      e[static_cast<size_t>(home[it->second])] -= s;
      uint64_t w = 0;
      for (const auto& salt : k.salts) w += salt.weight;
      for (const auto& salt : k.salts) {
        e[static_cast<size_t>(salt.partition)] +=
            s * static_cast<double>(salt.weight) / static_cast<double>(w);
      }
    }
    return e;
  };
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<uint64_t> seq(kProducers, 0);
  std::vector<double> expected(static_cast<size_t>(kPartitions), 0.0);
  std::vector<uint64_t> sampled(static_cast<size_t>(kPartitions), 0);
  std::vector<bool> seen(kKeys, false);
  ZipfRun out;
  for (int t = kReportMs; t <= run_ms; t += kReportMs) {
    h.clock().advance_ms(kReportMs);
    const HotKeyList list = h.list(kTopic);
    for (int p = 0; p < kProducers; ++p) {
      // The client's sketch sees the records one at a time in their order (bulk updates per
      // key would give other errors); partitions as the client routes them.
      std::map<std::string, uint64_t> counts;
      SpaceSaving sketch(256);
      for (int i = 0; i < kRecordsPerReport; ++i) {
        const auto r = static_cast<uint32_t>(std::lower_bound(cdf.begin(), cdf.end(), unit(rng)) -
                                             cdf.begin());
        const uint32_t k = std::min(r, kKeys - 1);
        seen[k] = true;
        counts[names[k]] += 1;
        sketch.update(names[k], 1);
      }
      Report rep = make_report("producer-" + std::to_string(p), kTopic, kPartitions, ++seq[p], {},
                               256, &list);
      for (const auto& [key, n] : counts) {
        rep.total += n;
        route(&list, HashFamily::kMurmur2, kPartitions, key, n, rep.partition_counts);
      }
      rep.sketch_min = sketch.min_count();
      rep.sketch_total = sketch.total();
      for (const auto& it : sketch.items()) rep.items.push_back({it.key, it.count, it.error});
      rep.window_ms = kReportMs;
      if (t > kWindowFromMs) {
        for (size_t j = 0; j < sampled.size(); ++j) sampled[j] += rep.partition_counts[j];
      }
      CallResult res = h.coord().ingest(std::move(rep));
      EXPECT_TRUE(res.ok()) << res.error;
    }
    if (t > kWindowFromMs) {
      std::vector<double> e = expected_under(list);
      for (size_t j = 0; j < e.size(); ++j) expected[j] += e[j];
    }
    if (t % 1000 == 0) h.coord().tick();
  }
  out.expected_skew = skew_of(expected);
  std::vector<double> s(sampled.begin(), sampled.end());
  out.sampled_skew = skew_of(s);
  const HotKeyList list = h.list(kTopic);
  out.keys = list.keys.size();
  out.versions = list.version;
  for (bool b : seen) out.distinct += b ? 1 : 0;
  std::string keys;
  for (const auto& k : list.keys) {
    keys += " " + k.key;
    out.balance += k.source == KeySource::kBalance ? 1 : 0;
    auto it = rank_of.find(k.key);
    const double true_share = it == rank_of.end() ? 0.0 : share[it->second];
    if (k.source == KeySource::kBalance) {
      out.max_balance_share = std::max(out.max_balance_share, true_share);
    }
    if (k.source == KeySource::kDetected) {
      out.min_detected_share = std::min(out.min_detected_share, true_share);
    }
  }
  std::printf(
      "zipf %.1f seed %u: expected max/avg %.4f, sampled %.4f, %zu keys (%zu balance; %.3f%% of "
      "%zu distinct), version %llu:%s\n",
      z, seed, out.expected_skew, out.sampled_skew, out.keys, out.balance,
      100.0 * static_cast<double>(out.keys) / static_cast<double>(out.distinct), out.distinct,
      static_cast<unsigned long long>(out.versions), keys.c_str());
  return out;
}

// Every run and the means over seeds, for comparing settings and for 60 s runs (steady window
// 7-60 s, where the churn guard decides what is kept); prints only: HOTKEY_ZIPF_SEEDS (default
// 6), HOTKEY_ZIPF_RUN_MS (default 16000), with the overrides of run_zipf. For example
// HOTKEY_ZIPF_RUN_MS=60000 HOTKEY_ZIPF_SEEDS=10 build/bin/coordinator_zipf_tests
// --gtest_also_run_disabled_tests --gtest_filter=*Seeds (docs/BENCHMARKS.md).
TEST(CoordinatorZipf, DISABLED_MeansOverSeeds) {
  const char* seeds_env = std::getenv("HOTKEY_ZIPF_SEEDS");
  const char* ms_env = std::getenv("HOTKEY_ZIPF_RUN_MS");
  const int seeds = seeds_env ? std::max(1, std::atoi(seeds_env)) : 6;
  const int run_ms = ms_env ? std::max(kWindowFromMs + kReportMs, std::atoi(ms_env)) : 16000;
  for (double z : {0.8, 1.0, 1.2, 1.5}) {
    double sum = 0, worst = 0, sampled = 0, versions = 0, keys = 0, balance = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
      const ZipfRun r = run_zipf(z, static_cast<uint32_t>(seed), run_ms);
      sum += r.expected_skew;
      keys += static_cast<double>(r.keys);
      balance += static_cast<double>(r.balance);
      worst = std::max(worst, r.expected_skew);
      sampled += r.sampled_skew;
      versions += static_cast<double>(r.versions);
    }
    std::printf(
        "MEANS zipf %.1f over %d seeds of %d ms: expected max/avg mean %.4f, worst %.4f; "
        "sampled mean %.4f; %.1f versions/min; keys %.1f (balance %.1f)\n",
        z, seeds, run_ms, sum / seeds, worst, sampled / seeds, versions / seeds * 60000.0 / run_ms,
        keys / seeds, balance / seeds);
  }
}

// What the planner controls, without the brokers' counting noise: the expected max/avg over
// the steady window, two workload seeds per exponent. Before the fixes of issue 16 (session of
// 2026-12-01 late) it was 1.07-1.11 on every exponent (predicted 1.02 while the tables gave
// 1.07): a listed key's home records undercounted below the hot threshold, small keys sized on
// a second of noise, a steady key charged a surge's debt, and the selection ended on Zipf 0.8
// with keys left on the most loaded partition. After: 1.03-1.06.
TEST(CoordinatorZipf, TablesBalanceTheExpectedLoad) {
  for (double z : {0.8, 1.0, 1.2, 1.5}) {
    double sum = 0;
    for (uint32_t seed : {1u, 2u}) {
      const ZipfRun r = run_zipf(z, seed);
      sum += r.expected_skew;
      EXPECT_LE(r.expected_skew, 1.07) << "zipf " << z << " seed " << seed;
      if (z <= 1.2) {
        // At most 0.1% of the distinct keys sent are salted.
        EXPECT_LE(static_cast<double>(r.keys), 0.001 * static_cast<double>(r.distinct))
            << "zipf " << z << " seed " << seed;
      }
    }
    EXPECT_LE(sum / 2, 1.06) << "zipf " << z;
  }
}

// Over a minute the tables are re-planned on more of the topic's load (the churn guard lets a
// better plan through). Zipf 0.8 is where that went wrong: two or three balance-selected keys
// share a partition, each drops out of some producers' sketches (so less is taken out of the
// cold load for it than it sent), and the planner charged the difference to their home as
// records sent unsalted. It saw that partition 5-8% lighter than it was and filled it with
// salts (1.04-1.09 expected after 30 s in seed 1 with a looser churn guard). The mean of these
// four seeds is 1.027 charging it, 1.022 with keys listed before every list behind the load
// charged nothing.
TEST(CoordinatorZipf, TablesStayBalancedOverAMinute) {
  double sum = 0;
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    const ZipfRun r = run_zipf(0.8, seed, 60000);
    sum += r.expected_skew;
    EXPECT_LE(r.expected_skew, 1.04) << "seed " << seed;
    EXPECT_LE(static_cast<double>(r.keys), 0.001 * static_cast<double>(r.distinct));
    // Churn: at most 20 versions a minute (issue 16).
    EXPECT_LE(r.versions, 20u) << "seed " << seed;
  }
  EXPECT_LE(sum / 4, 1.025);
}

// Issue 26: the list says why each key is salted. Zipf 0.8's keys above the hot threshold
// (0.5 / 32 = 1.56%: user-0 at 2.2%) are "detected"; the keys the balance-driven selection adds
// to level the partitions (1.26% and below) are "balance". max_balance_keys caps them, and 0
// turns balance salting off (only the hot key is salted).
TEST(CoordinatorZipf, BalanceKeysAreLabelledCappedAndCanBeTurnedOff) {
  const double hot = 0.5 / kPartitions;
  const ZipfRun r = run_zipf(0.8, 1);
  EXPECT_GE(r.balance, 5u);
  EXPECT_LT(r.max_balance_share, hot);
  EXPECT_GE(r.min_detected_share, hot);
  const ZipfRun capped = run_zipf(0.8, 1, 16000, 3);
  EXPECT_EQ(capped.balance, 3u);
  const ZipfRun off = run_zipf(0.8, 1, 16000, 0);
  EXPECT_EQ(off.balance, 0u);
  EXPECT_GE(off.keys, 1u);
}

}  // namespace
}  // namespace hotkey::coordinator::test
