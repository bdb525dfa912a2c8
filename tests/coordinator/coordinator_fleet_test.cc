// Issue 26's fleet shape and the balance bench's moving hot set, offline. The fleet shape:
// 100 producers on one 32-partition topic, one key ("fleet") at 8% of every producer's records
// (hot fleet-wide), one key of each producer's own ("host-<i>") at 10% of that producer's
// records (0.1% of the fleet: a per-host or per-session key), and the rest spread over 100,000
// small keys (each producer's 256-counter sketch full of them). Producers report every 500 ms
// at their own phase, each report followed by the plan it may trigger, and the regular plan
// every second, as the service's background thread runs them (real core, real RocksDB,
// ManualClock, the service's default settings and warm-up).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>

#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

constexpr const char* kTopic = "fleet";
constexpr int32_t kPartitions = 32;
constexpr int kProducers = 100;
constexpr int kReportMs = 500;
constexpr uint32_t kSmallKeys = 100000;

struct FleetRun {
  size_t max_own_listed = 0;     // most per-producer keys listed at once
  int fleet_listed_ms = -1;      // when "fleet" was first listed
  uint64_t versions_steady = 0;  // versions published in the steady window
  int steady_ms = 0;
  HotKeyList last;
};

// `first_ms`: the time the steady window opens; `records`: each report's records (a multiple of
// 50: 8% of them are "fleet", 10% the producer's own key).
FleetRun run_fleet(int run_ms, int first_ms, uint64_t records) {
  const uint64_t fleet_key = records * 8 / 100, own_key = records / 10;
  CoordinatorConfig cfg = test_config();
  cfg.warmup_ms = 5000;  // the service defaults
  cfg.defaults = TopicSettings{};
  Harness h(cfg);
  std::vector<std::mt19937> rng;
  for (int p = 0; p < kProducers; ++p) rng.emplace_back(static_cast<uint32_t>(1000 + p));
  std::uniform_int_distribution<uint32_t> small(0, kSmallKeys - 1);
  std::vector<uint64_t> seq(kProducers, 0);
  const int64_t start = h.clock().now_ms();
  FleetRun out;
  uint64_t version_at_first = 0;
  int next_tick = 1000;
  for (int round = 0; round * kReportMs < run_ms; ++round) {
    for (int p = 0; p < kProducers; ++p) {
      // Producer p reports at round * 500 + p * 5 ms (phases spread over the interval).
      const int at = round * kReportMs + p * (kReportMs / kProducers);
      while (next_tick <= at) {
        h.clock().set_ms(start + next_tick);
        h.coord().tick();
        next_tick += 1000;
      }
      h.clock().set_ms(start + at);
      if (at >= first_ms && version_at_first == 0) version_at_first = h.list(kTopic).version + 1;
      const HotKeyList list = h.list(kTopic);
      std::map<std::string, uint64_t> counts;
      counts["fleet"] = fleet_key;
      counts["host-" + std::to_string(p)] = own_key;
      for (uint64_t i = 0; i < records - fleet_key - own_key; ++i) {
        counts["s" + std::to_string(small(rng[static_cast<size_t>(p)]))] += 1;
      }
      Report rep = make_report("producer-" + std::to_string(p), kTopic, kPartitions, ++seq[p],
                               counts, 256, &list);
      rep.window_ms = kReportMs;
      CallResult res = h.coord().ingest(std::move(rep));
      EXPECT_TRUE(res.ok()) << res.error;
      h.coord().plan_triggered();
      size_t own = 0;
      for (const auto& k : h.list(kTopic).keys) own += k.key.rfind("host-", 0) == 0 ? 1 : 0;
      if (out.fleet_listed_ms < 0 && find(h.list(kTopic), "fleet")) out.fleet_listed_ms = at;
      out.max_own_listed = std::max(out.max_own_listed, own);
    }
  }
  out.last = h.list(kTopic);
  out.steady_ms = run_ms - first_ms;
  out.versions_steady = out.last.version + 1 - version_at_first;
  size_t balance = 0;
  for (const auto& k : out.last.keys) balance += k.source == KeySource::kBalance ? 1 : 0;
  std::printf("fleet of %llu records/s: %zu keys listed (%zu balance), at most %zu per-producer keys at once, "
              "%llu versions in the last %d ms, version %llu\n",
              static_cast<unsigned long long>(records * kProducers * 1000 / kReportMs),
              out.last.keys.size(), balance, out.max_own_listed,
              static_cast<unsigned long long>(out.versions_steady), out.steady_ms,
              static_cast<unsigned long long>(out.last.version));
  return out;
}

// The README's promise on this shape: the fleet-wide hot key is salted (as detected), no
// producer's own key is, and the list settles (at most 20 versions a minute). Before issue 26
// the balance-driven selection listed 27 of the per-producer keys (as "detected") and published
// 17 versions in the last 30 s (34 a minute) at 200 records/s per producer; 8 keys at 1,000/s.
TEST(CoordinatorFleet, PerProducerKeysStayUnsaltedAndTheListSettles) {
  const FleetRun r = run_fleet(40000, 10000, 100);
  const HotKey* fleet = find(r.last, "fleet");
  ASSERT_NE(fleet, nullptr);
  EXPECT_EQ(fleet->source, KeySource::kDetected);
  EXPECT_EQ(r.max_own_listed, 0u);
  EXPECT_LE(static_cast<double>(r.versions_steady) * 60000.0 / r.steady_ms, 20.0);
}

// Cold start: the first producer's first report shows its own key at 10% of its records, twice
// the hot threshold and more, before any other producer reported; before issue 26 it was
// listed from that report on ("host-0", with "fleet"). It is not listed while the other
// producers report without it, and the fleet-wide key is listed by the second producer's
// report (5 ms later), well within the 0.5 s cold-start goal.
TEST(CoordinatorFleet, OneProducersKeyIsNotListedAtColdStart) {
  const FleetRun r = run_fleet(2000, 1000, 500);
  EXPECT_EQ(r.max_own_listed, 0u);
  EXPECT_GE(r.fleet_listed_ms, 0);
  EXPECT_LE(r.fleet_listed_ms, 500);
}

// The balance bench's "moving" scenario, offline: 4 producers on 32 partitions, 4,000 records/s
// each (2,000 per 500 ms report), from 4 s on half of them on a hot set of 4 keys (12.5% each)
// that moves to 4 new keys every 10 s; the rest over 100,000 small keys.
struct MovingRun {
  size_t max_listed = 0;         // most keys listed at once
  size_t max_stale = 0;          // most keys of earlier hot sets listed at once (steady window)
  size_t max_stale_balance = 0;  // ... of which salted for balance
  uint64_t versions_steady = 0;  // versions published in the steady window
  int steady_ms = 0;
  double max_avg = 0;  // of the records the producers routed in the steady window
  HotKeyList last;
};

MovingRun run_moving(int run_ms, int first_ms) {
  constexpr int kMovingProducers = 4, kHotStartMs = 4000, kMoveMs = 10000;
  constexpr uint64_t kRecords = 2000, kPerHot = 250;
  CoordinatorConfig cfg = test_config();
  cfg.warmup_ms = 5000;
  cfg.defaults = TopicSettings{};
  Harness h(cfg);
  std::vector<std::mt19937> rng;
  for (int p = 0; p < kMovingProducers; ++p) rng.emplace_back(static_cast<uint32_t>(2000 + p));
  std::uniform_int_distribution<uint32_t> small(0, kSmallKeys - 1);
  std::vector<uint64_t> seq(kMovingProducers, 0);
  std::vector<double> load(kPartitions, 0.0);
  const int64_t start = h.clock().now_ms();
  MovingRun out;
  uint64_t version_at_first = 0;
  int next_tick = 1000;
  auto hot_set = [&](int at) {
    std::vector<std::string> keys;
    if (at < kHotStartMs) return keys;
    const int epoch = (at - kHotStartMs) / kMoveMs;
    for (int i = 0; i < 4; ++i) keys.push_back("trend-" + std::to_string(epoch * 4 + i));
    return keys;
  };
  for (int round = 0; round * kReportMs < run_ms; ++round) {
    for (int p = 0; p < kMovingProducers; ++p) {
      const int at = round * kReportMs + p * (kReportMs / kMovingProducers);
      while (next_tick <= at) {
        h.clock().set_ms(start + next_tick);
        h.coord().tick();
        next_tick += 1000;
      }
      h.clock().set_ms(start + at);
      if (at >= first_ms && version_at_first == 0) version_at_first = h.list(kTopic).version + 1;
      const HotKeyList list = h.list(kTopic);
      std::map<std::string, uint64_t> counts;
      const std::vector<std::string> hot = hot_set(at);
      for (const auto& k : hot) counts[k] = kPerHot;
      for (uint64_t i = 0; i < kRecords - kPerHot * hot.size(); ++i) {
        counts["s" + std::to_string(small(rng[static_cast<size_t>(p)]))] += 1;
      }
      Report rep = make_report("producer-" + std::to_string(p), kTopic, kPartitions, ++seq[p],
                               counts, 256, &list);
      rep.window_ms = kReportMs;
      if (at >= first_ms) {
        for (size_t i = 0; i < load.size(); ++i) load[i] += rep.partition_counts[i];
      }
      CallResult res = h.coord().ingest(std::move(rep));
      EXPECT_TRUE(res.ok()) << res.error;
      h.coord().plan_triggered();
      const HotKeyList now = h.list(kTopic);
      size_t stale = 0, stale_balance = 0;
      for (const auto& k : now.keys) {
        if (std::find(hot.begin(), hot.end(), k.key) != hot.end()) continue;
        ++stale;
        stale_balance += k.source == KeySource::kBalance ? 1 : 0;
      }
      out.max_listed = std::max(out.max_listed, now.keys.size());
      if (at >= first_ms) {
        out.max_stale = std::max(out.max_stale, stale);
        out.max_stale_balance = std::max(out.max_stale_balance, stale_balance);
      }
    }
  }
  out.last = h.list(kTopic);
  out.steady_ms = run_ms - first_ms;
  out.versions_steady = out.last.version + 1 - version_at_first;
  double sum = 0, mx = 0;
  for (double v : load) {
    sum += v;
    mx = std::max(mx, v);
  }
  out.max_avg = sum > 0 ? mx / (sum / kPartitions) : 1.0;
  return out;
}

// The moving hot set in its steady state (the list has reached its size by 60 s): each move
// lists the four new keys (a surge, then the tables refined a second later). The keys of the
// sets that moved on carry no record once their set has left, yet hysteresis kept each
// listed for hold_ms (30 s) after its window share fell under its exit share, then dropped it
// in a version of its own: 16 keys of earlier sets listed beside the 4 live ones, and a third
// version per move (18.9 a minute offline, 18 in the bench's 60-120 s; the churn goal is 20).
// Keys that no longer send now leave with the next version that publishes anyway (the next
// move's): at most the set that moved on last is listed beside the live one, two versions a
// move, the same balance.
TEST(CoordinatorFleet, KeysOfAMovedHotSetLeaveWithTheNextVersion) {
  const MovingRun r = run_moving(130000, 60000);
  std::printf("moving hot set: at most %zu keys listed, %zu of earlier sets (%zu balance), "
              "%llu versions in the last %d ms, max/avg %.3f\n",
              r.max_listed, r.max_stale, r.max_stale_balance,
              static_cast<unsigned long long>(r.versions_steady), r.steady_ms, r.max_avg);
  EXPECT_LE(r.max_stale, 4u);
  EXPECT_EQ(r.max_stale_balance, 0u);
  // Six moves a minute, two versions each, and room for one more refinement.
  EXPECT_LE(static_cast<double>(r.versions_steady) * 60000.0 / r.steady_ms, 14.0);
  EXPECT_LE(r.max_avg, 1.03);
}

}  // namespace
}  // namespace hotkey::coordinator::test
