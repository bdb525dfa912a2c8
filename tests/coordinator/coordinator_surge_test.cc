// How fast and how well the coordinator follows traffic that changes: a surge is listed in the
// first plan after the epoch that shows it, with a table sized for its current share (not its
// window average); a brief spike stays unlisted; unambiguous keys skip most of the warm-up;
// a report showing a new hot key is planned before the next tick. ManualClock, real RocksDB.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

constexpr const char* kTopic = "sales";

// One report per producer (routed with the published list), then no tick.
std::vector<uint64_t> send(Harness& h, int producers, int32_t partitions, uint64_t seq,
                           const std::function<std::map<std::string, uint64_t>(int)>& counts) {
  HotKeyList list = h.list(kTopic);
  std::vector<uint64_t> load(static_cast<size_t>(partitions), 0);
  for (int p = 0; p < producers; ++p) {
    Report r = make_report("producer-" + std::to_string(p), kTopic, partitions, seq, counts(p), 256,
                           &list);
    for (size_t i = 0; i < load.size(); ++i) load[i] += r.partition_counts[i];
    CallResult res = h.coord().ingest(std::move(r));
    EXPECT_TRUE(res.ok()) << res.error;
  }
  return load;
}

// send(), then one epoch passes and the regular plan runs. Returns the round's partition load.
std::vector<uint64_t> round(Harness& h, int producers, int32_t partitions, uint64_t seq,
                            const std::function<std::map<std::string, uint64_t>(int)>& counts) {
  std::vector<uint64_t> load = send(h, producers, partitions, seq, counts);
  h.clock().advance_ms(1000);
  h.coord().tick();
  return load;
}

double max_avg(const std::vector<uint64_t>& load) {
  double sum = 0, mx = 0;
  for (uint64_t v : load) {
    sum += static_cast<double>(v);
    mx = std::max(mx, static_cast<double>(v));
  }
  return sum > 0 ? mx / (sum / static_cast<double>(load.size())) : 1.0;
}

// `hot` records of each named key, the rest of `records` spread over a large uniform tail
// (a different draw every round and producer).
std::function<std::map<std::string, uint64_t>(int)> traffic(uint64_t seq, uint64_t records,
                                                            std::map<std::string, uint64_t> hot) {
  return [seq, records, hot](int p) {
    std::map<std::string, uint64_t> c = hot;
    uint64_t used = 0;
    for (const auto& [k, n] : hot) used += n;
    add_tail(c, records - used, 200000, static_cast<uint32_t>(seq * 131 + p));
    return c;
  };
}

TEST(CoordinatorSurge, SurgeIsListedInOnePlanSizedForItsCurrentShare) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.balance_target = 1000;  // threshold detection only
  cfg.defaults.hold_ms = 60000;
  Harness h(cfg);
  const int32_t P = 64;
  const int kProducers = 8;
  const uint64_t kRecords = 10000;  // per producer and epoch
  uint64_t seq = 1;
  // A full window of cold traffic first: the surge's window share starts at a tenth.
  for (int i = 0; i < 10; ++i, ++seq) round(h, kProducers, P, seq, traffic(seq, kRecords, {}));
  ASSERT_TRUE(h.list(kTopic).keys.empty()) << list_to_json(h.list(kTopic));

  const auto surge = [&](uint64_t s) { return traffic(s, kRecords, {{"seller-7", 4500}}); };
  round(h, kProducers, P, seq, surge(seq));
  ++seq;
  HotKeyList first = h.list(kTopic);
  const HotKey* k = find(first, "seller-7");
  ASSERT_NE(k, nullptr) << "not listed in the plan right after the surge's first epoch";
  // Sized for what it carries now (45%), not its window average (about 4.5%).
  EXPECT_GT(k->share, 0.40);
  EXPECT_GE(k->salts.size(), static_cast<size_t>(P / 2));
  // What the producers send with that very list is balanced: tail noise only (the tail
  // alone on 64 partitions at this volume shows about 1.1).
  std::vector<uint64_t> load = round(h, kProducers, P, seq, surge(seq));
  ++seq;
  EXPECT_LE(max_avg(load), 1.2) << list_to_json(first);

  // Steady surge: balanced, and the list settles instead of changing every plan.
  const uint64_t settled_from = h.list(kTopic).version;
  double worst = 0;
  for (int i = 0; i < 8; ++i, ++seq) {
    load = round(h, kProducers, P, seq, surge(seq));
    worst = std::max(worst, max_avg(load));
  }
  EXPECT_LE(worst, 1.2);
  EXPECT_LE(h.list(kTopic).version - settled_from, 3u)
      << "list versions while the traffic stayed the same";
}

TEST(CoordinatorSurge, BriefSpikeUnderTheThresholdIsNotListed) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.balance_target = 1000;
  Harness h(cfg);
  const int32_t P = 16;  // hot threshold 0.5/16 = 3.1%; the fast path needs twice that
  const int kProducers = 8;
  const uint64_t kRecords = 2000;
  uint64_t seq = 1;
  for (int i = 0; i < 10; ++i, ++seq) round(h, kProducers, P, seq, traffic(seq, kRecords, {}));
  // One epoch at 5%: above the threshold inside that epoch, 0.5% of the window.
  round(h, kProducers, P, seq, traffic(seq, kRecords, {{"spike", 100}}));
  ++seq;
  for (int i = 0; i < 3; ++i, ++seq) {
    EXPECT_EQ(find(h.list(kTopic), "spike"), nullptr) << "listed " << i << " epochs after";
    round(h, kProducers, P, seq, traffic(seq, kRecords, {}));
  }
  EXPECT_EQ(h.list(kTopic).version, 0u);

  // The same 5% sustained is listed once its window share crosses the threshold.
  bool listed = false;
  for (int i = 0; i < 12 && !listed; ++i, ++seq) {
    round(h, kProducers, P, seq, traffic(seq, kRecords, {{"steady", 100}}));
    listed = find(h.list(kTopic), "steady") != nullptr;
  }
  EXPECT_TRUE(listed);
}

TEST(CoordinatorSurge, UnambiguousKeyIsListedBeforeTheWarmUpEnds) {
  CoordinatorConfig cfg = test_config();
  cfg.warmup_ms = 5000;
  cfg.defaults.balance_target = 1000;
  Harness h(cfg);
  const int32_t P = 16;
  uint64_t seq = 1;
  // "big" is far above the threshold (3.1%), "mid" just above it.
  const auto t = [&](uint64_t s) { return traffic(s, 2000, {{"big", 800}, {"mid", 80}}); };
  round(h, 4, P, seq, t(seq));
  ++seq;
  HotKeyList list = h.list(kTopic);
  EXPECT_NE(find(list, "big"), nullptr) << "not listed one epoch after the first report";
  EXPECT_EQ(find(list, "mid"), nullptr) << "an ambiguous key skipped the warm-up";
  // The window path starts once the topic has had reports for warmup_ms (the first came at
  // t0; these plans run at t0 + 2, 3, 4 s).
  for (int i = 0; i < 3; ++i, ++seq) {
    round(h, 4, P, seq, t(seq));
    EXPECT_EQ(find(h.list(kTopic), "mid"), nullptr) << "listed during the warm-up, epoch " << i;
  }
  round(h, 4, P, seq, t(seq));  // plans at t0 + 5 s
  EXPECT_NE(find(h.list(kTopic), "mid"), nullptr) << "not listed after the warm-up";
}

TEST(CoordinatorSurge, ReportWithANewHotKeyIsPlannedBeforeTheNextTick) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.balance_target = 1000;
  cfg.plan_interval_ms = 1000;
  Harness h(cfg);
  const int32_t P = 16;
  const int kProducers = 4;
  uint64_t seq = 1;
  for (int i = 0; i < 3; ++i, ++seq) round(h, kProducers, P, seq, traffic(seq, 2000, {}));
  EXPECT_EQ(h.coord().plan_triggered(), -1) << "cold traffic asked for a plan";
  const uint64_t before = h.list(kTopic).version;

  // Mid-epoch, every producer reports a flash sale at 30%.
  h.clock().advance_ms(600);
  send(h, kProducers, P, seq, traffic(seq, 2000, {{"flash", 600}}));
  ++seq;
  EXPECT_EQ(h.coord().plan_triggered(), -1);
  HotKeyList after = h.list(kTopic);
  ASSERT_NE(find(after, "flash"), nullptr) << "not planned before the next tick";
  EXPECT_EQ(after.version, before + 1);

  // Listed now: more of the same asks for nothing.
  send(h, kProducers, P, seq, traffic(seq, 2000, {{"flash", 600}}));
  ++seq;
  EXPECT_EQ(h.coord().plan_triggered(), -1);
  EXPECT_EQ(h.list(kTopic).version, after.version);

  // A second new key right away, in one producer's report, waits out the rate limit (a
  // quarter of plan_interval_ms) ...
  h.clock().advance_ms(100);
  const auto flash_only = traffic(seq, 2000, {{"flash", 600}});
  const auto with_other = traffic(seq, 2000, {{"flash", 600}, {"other", 600}});
  send(h, kProducers, P, seq, [&](int p) { return p == 0 ? with_other(p) : flash_only(p); });
  ++seq;
  const int64_t wait = h.coord().plan_triggered();
  EXPECT_GT(wait, 0);
  EXPECT_LE(wait, 250);
  EXPECT_EQ(find(h.list(kTopic), "other"), nullptr);
  h.clock().advance_ms(wait);
  EXPECT_EQ(h.coord().plan_triggered(), -1);
  EXPECT_NE(find(h.list(kTopic), "other"), nullptr);

  // ... unless a quarter of the fleet (at least two reports) shows it: a third new key, right
  // after that publication, in two producers' reports, is planned at once.
  h.clock().advance_ms(20);
  send(h, 2, P, seq, traffic(seq, 2000, {{"flash", 600}, {"other", 600}, {"third", 600}}));
  ++seq;
  EXPECT_EQ(h.coord().plan_triggered(), -1);
  EXPECT_NE(find(h.list(kTopic), "third"), nullptr) << "held back although the fleet showed it";
}

// The first report of each producer after it switched lists is left out of the partition
// loads (it mixes two lists), and in a surge those reports carry most of the new key's
// records. The key's records still at its home partition must come from the reports that
// were counted, not from its window share scaled by the counted fraction: that estimate took
// the surge's records out of home twice, home looked idle, and the next tables sent it three
// times its share (balance bench seller45: home at 1.76x the average for seconds).
TEST(CoordinatorSurge, HomePartitionIsNotOverloadedWhileProducersSwitchLists) {
  CoordinatorConfig cfg = test_config();
  Harness h(cfg);
  const int32_t P = 64;
  const int kProducers = 16;
  const uint64_t kRecords = 1000;  // per producer and epoch
  const std::string kKey = "seller-0";
  const auto home = static_cast<size_t>(partition_for(HashFamily::kMurmur2, kKey, P));
  uint64_t seq = 1;
  for (int i = 0; i < 10; ++i, ++seq) round(h, kProducers, P, seq, traffic(seq, kRecords, {}));
  ASSERT_TRUE(h.list(kTopic).keys.empty());

  double worst_weight = 0, worst_load = 0;
  std::string worst_list;
  for (int i = 0; i < 10; ++i, ++seq) {
    // The key ramps up (6% of the first epoch, then 45%), so the first table is too small
    // and the next plan must size it while the fleet switches lists. Half the fleet reports first;
    // a plan can publish between the halves (a surge report triggers one), so the second half
    // switches lists mid-epoch like a real fleet.
    std::vector<uint64_t> load(static_cast<size_t>(P), 0);
    for (int half = 0; half < 2; ++half) {
      HotKeyList list = h.list(kTopic);
      for (int p = half * kProducers / 2; p < (half + 1) * kProducers / 2; ++p) {
        Report r =
            make_report("producer-" + std::to_string(p), kTopic, P, seq,
                        traffic(seq, kRecords, {{kKey, i == 0 ? 60u : 450u}})(p), 256, &list);
        for (size_t j = 0; j < load.size(); ++j) load[j] += r.partition_counts[j];
        ASSERT_TRUE(h.coord().ingest(std::move(r)).ok());
      }
      h.clock().advance_ms(500);
      h.coord().plan_triggered();
    }
    h.coord().tick();
    if (i >= 2) worst_load = std::max(worst_load, max_avg(load));
    const HotKeyList list = h.list(kTopic);
    const HotKey* k = find(list, kKey);
    if (!k) continue;
    uint64_t sum = 0, at_home = 0;
    for (const auto& s : k->salts) {
      sum += s.weight;
      if (static_cast<size_t>(s.partition) == home) at_home += s.weight;
    }
    const double ratio = static_cast<double>(at_home) * static_cast<double>(k->salts.size()) /
                         static_cast<double>(sum);
    if (ratio > worst_weight) {
      worst_weight = ratio;
      worst_list = list_to_json(list);
    }
  }
  ASSERT_NE(find(h.list(kTopic), kKey), nullptr);
  // Home's weight relative to the key's mean salt weight: about 1 when home carries the
  // same cold load as the rest.
  EXPECT_LE(worst_weight, 1.5) << worst_list;
  EXPECT_LE(worst_load, 1.25);
  // One list for the ramp, one sized for it, and then no churn (the old estimate chased
  // its own error for five versions).
  EXPECT_LE(h.list(kTopic).version, 3u);
}

// A moving hot set (balance bench "moving"): four new keys at 12.5% each go to their home
// partitions unsalted until the plan their reports trigger lists them; half the fleet's
// reports of that epoch carry them at home. Those records are on the brokers: the planner must
// balance them out over the rest of the window (home gets less of the salted keys' weight for
// a while), not plan as if they had never been sent. Before, every home partition ended the
// window about 1.2x the average (the debt, never repaid).
TEST(CoordinatorSurge, RecordsSentHomeBeforeSaltingAreRepaidOverTheWindow) {
  CoordinatorConfig cfg = test_config();
  Harness h(cfg);
  const int32_t P = 32;
  const int kProducers = 4;
  const uint64_t kRecords = 8000;  // per producer and epoch
  const std::map<std::string, uint64_t> kHot = {
      {"trend-4", 1000}, {"trend-5", 1000}, {"trend-6", 1000}, {"trend-7", 1000}};
  uint64_t seq = 1;
  for (int i = 0; i < 10; ++i, ++seq) round(h, kProducers, P, seq, traffic(seq, kRecords, {}));
  ASSERT_TRUE(h.list(kTopic).keys.empty());

  // The surge's epoch: half the fleet reports it (routed unsalted), the plan it triggers
  // lists the keys, the other half sends with that list.
  std::vector<uint64_t> total(static_cast<size_t>(P), 0);
  auto add = [&](const std::vector<uint64_t>& load) {
    for (size_t j = 0; j < total.size(); ++j) total[j] += load[j];
  };
  h.clock().advance_ms(300);
  {
    HotKeyList list = h.list(kTopic);
    for (int p = 0; p < kProducers; ++p) {
      if (p == kProducers / 2) {
        h.coord().plan_triggered();
        list = h.list(kTopic);
        for (const auto& [k, n] : kHot) ASSERT_NE(find(list, k), nullptr) << k;
      }
      Report r = make_report("producer-" + std::to_string(p), kTopic, P, seq,
                             traffic(seq, kRecords, kHot)(p), 256, &list);
      add(r.partition_counts);
      ASSERT_TRUE(h.coord().ingest(std::move(r)).ok());
    }
  }
  const double after_surge = max_avg(total);
  h.clock().advance_ms(700);
  h.coord().tick();
  ++seq;
  // The rest of the window (the debt stays in it for ten epochs).
  for (int i = 0; i < 9; ++i, ++seq)
    add(round(h, kProducers, P, seq, traffic(seq, kRecords, kHot)));
  EXPECT_GT(after_surge, 1.5) << "the surge's epoch should overload the home partitions";
  // Tail noise alone over these ten epochs is about 1.02-1.03.
  EXPECT_LE(max_avg(total), 1.07) << list_to_json(h.list(kTopic));
  EXPECT_LE(h.list(kTopic).version, 4u);
}

// A denied key far above fair share keeps its home partition overloaded whatever is salted:
// the balance-driven selection must not salt the cold keys homed there trying to fix it
// (before, it listed every eligible tail key on that partition).
TEST(CoordinatorSurge, DeniedKeysHomeIsNotATargetForBalanceSelection) {
  CoordinatorConfig cfg = test_config();
  Harness h(cfg);
  const int32_t P = 16;
  const std::string kDenied = "ordered";
  ASSERT_TRUE(h.coord().deny(kTopic, kDenied, "ordering", "alice").ok());
  const auto home = partition_for(HashFamily::kMurmur2, kDenied, P);
  // 28% on the denied key; the rest on 8 keys per partition at 0.5% each (all eligible for
  // selection), the same on every partition: nothing else needs balancing.
  std::map<std::string, uint64_t> cold;
  std::vector<int> per_partition(static_cast<size_t>(P), 0);
  for (int i = 0; cold.size() < static_cast<size_t>(8 * P); ++i) {
    const std::string key = "cold-" + std::to_string(i);
    int& n = per_partition[static_cast<size_t>(partition_for(HashFamily::kMurmur2, key, P))];
    if (n < 8) {
      ++n;
      cold[key] = 20;
    }
  }
  auto t = [&](uint64_t) {
    return [&](int) {
      std::map<std::string, uint64_t> c = cold;
      c[kDenied] = 1000;
      return c;
    };
  };
  uint64_t seq = 1;
  for (int i = 0; i < 12; ++i, ++seq) round(h, 4, P, seq, t(seq));
  const HotKeyList list = h.list(kTopic);
  EXPECT_EQ(find(list, kDenied), nullptr);
  size_t on_home = 0;
  for (const auto& k : list.keys) on_home += partition_for(HashFamily::kMurmur2, k.key, P) == home;
  EXPECT_LE(on_home, 1u) << list_to_json(list);
  EXPECT_LE(list.keys.size(), 2u) << list_to_json(list);
}

// A host clock before 1970 (negative milliseconds, a misconfigured VM) crossing into 1970:
// the window's epochs stay inside their ring (a negative index went out of bounds) and a hot
// key is still found and listed.
TEST(CoordinatorSurge, ClockBefore1970KeepsTheWindowInBounds) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.balance_target = 1000;
  Harness h(cfg);
  const int32_t P = 16;
  h.clock().set_ms(-4500);
  uint64_t seq = 1;
  for (int i = 0; i < 8; ++i, ++seq) {
    round(h, 4, P, seq, traffic(seq, 2000, {{"hot", 400}}));
  }
  EXPECT_GT(h.clock().now_ms(), 0);
  const HotKeyList list = h.list(kTopic);
  const HotKey* k = find(list, "hot");
  ASSERT_NE(k, nullptr) << list_to_json(list);
  EXPECT_GE(k->salts.size(), 2u);
}

// The gap between triggered plans counts triggered plans only: a surge whose first reports
// arrive just after a regular tick is planned at once, not a quarter tick later.
TEST(CoordinatorSurge, SurgeRightAfterARegularTickIsPlannedAtOnce) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.balance_target = 1000;
  cfg.plan_interval_ms = 1000;
  Harness h(cfg);
  const int32_t P = 16;
  uint64_t seq = 1;
  for (int i = 0; i < 3; ++i, ++seq) round(h, 4, P, seq, traffic(seq, 2000, {}));
  h.clock().advance_ms(10);  // round() ticked 10 ms ago
  send(h, 4, P, seq, traffic(seq, 2000, {{"flash", 600}}));
  EXPECT_EQ(h.coord().plan_triggered(), -1) << "held back by the regular tick's plan";
  EXPECT_NE(find(h.list(kTopic), "flash"), nullptr);
}

// Cold start: a key far above the threshold in a topic's very first reports is listed by the
// plan those reports trigger (no epoch of waiting); a key just over the threshold waits for
// the window, and nothing below it is listed.
TEST(CoordinatorSurge, KeyHotFromTheTopicsFirstReportsIsListedByTheirPlan) {
  CoordinatorConfig cfg = test_config();
  cfg.warmup_ms = 5000;
  cfg.defaults.balance_target = 1000;
  Harness h(cfg);
  const int32_t P = 16;  // threshold 0.5 / 16 = 3.1%
  send(h, 4, P, 1, traffic(1, 2000, {{"big", 400}, {"mid", 80}, {"low", 40}}));
  EXPECT_EQ(h.coord().plan_triggered(), -1);
  const HotKeyList list = h.list(kTopic);
  EXPECT_NE(find(list, "big"), nullptr) << "not listed by the first reports' plan";
  EXPECT_EQ(find(list, "mid"), nullptr) << "an ambiguous key skipped the warm-up";
  EXPECT_EQ(find(list, "low"), nullptr);
  EXPECT_EQ(list.keys.size(), 1u) << list_to_json(list);
}

}  // namespace
}  // namespace hotkey::coordinator::test
