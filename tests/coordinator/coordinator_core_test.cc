// Detection, hysteresis, pins, denies, partition changes, balance and persistence of the
// coordinator core, driven with a ManualClock over a real RocksDB store (no sleeps).
#include <gtest/gtest.h>

#include <cmath>

#include "hotkey/salt_planner.h"
#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

constexpr const char* kTopic = "orders";

bool tables_verified(const HotKeyList& list) {
  SaltSpace space;
  space.family = list.hash;
  space.partitions = list.partitions;
  space.separator = list.separator;
  for (const auto& k : list.keys) {
    SaltTable t;
    t.salts = k.salts;
    if (!verify_table(k.key, t, space)) return false;
  }
  return true;
}

// Sends one report per producer, advances the clock one epoch and runs detection.
void round(Harness& h, int producers, int32_t partitions, uint64_t seq,
           const std::function<std::map<std::string, uint64_t>(int)>& counts,
           uint32_t capacity = 256) {
  HotKeyList list = h.list(kTopic);
  for (int p = 0; p < producers; ++p) {
    Report r = make_report("producer-" + std::to_string(p), kTopic, partitions, seq, counts(p),
                           capacity, &list);
    CallResult res = h.coord().ingest(std::move(r));
    ASSERT_TRUE(res.ok()) << res.error;
  }
  h.clock().advance_ms(1000);
  h.coord().tick();
}

TEST(CoordinatorCore, FleetWideKeyIsListedAndSingleProducerKeyIsNot) {
  CoordinatorConfig cfg = test_config();
  // Per producer the fleet key runs at 50 msg/s: under min_rate, so no single process would
  // call it hot. Fleet-wide it is 2,500 msg/s and 5% of a 20-partition topic.
  cfg.defaults.min_rate = 100;
  cfg.defaults.hot_fraction = 0.5;
  // This test isolates threshold detection; balance-driven selection has its own test.
  cfg.defaults.balance_target = 1000;
  Harness h(cfg);
  const int kProducers = 50;
  auto counts = [](int p) {
    std::map<std::string, uint64_t> c;
    c["fleet"] = 50;
    c["local-" + std::to_string(p)] = 200;  // 20% of this producer, 0.4% of the fleet
    add_tail(c, 750, 5000, static_cast<uint32_t>(p) * 7919u + 1);
    return c;
  };
  for (uint64_t seq = 1; seq <= 3; ++seq) round(h, kProducers, 20, seq, counts);

  HotKeyList list = h.list(kTopic);
  const HotKey* fleet = find(list, "fleet");
  ASSERT_NE(fleet, nullptr) << list_to_json(list);
  EXPECT_EQ(fleet->source, KeySource::kDetected);
  EXPECT_GT(fleet->salts.size(), 1u);
  EXPECT_GT(fleet->share, 0.025);
  EXPECT_LE(fleet->share, 0.05 + 1e-9);  // guaranteed counts never overstate
  for (const auto& k : list.keys) EXPECT_EQ(k.key.rfind("local-", 0), std::string::npos) << k.key;
  EXPECT_TRUE(tables_verified(list));
  EXPECT_GE(list.version, 1u);
}

TEST(CoordinatorCore, DuplicateReportIsIgnored) {
  Harness h;
  std::map<std::string, uint64_t> c{{"a", 10}, {"b", 5}};
  ASSERT_TRUE(h.coord().ingest(make_report("p", kTopic, 4, 7, c)).ok());
  CallResult dup = h.coord().ingest(make_report("p", kTopic, 4, 7, c));
  EXPECT_TRUE(dup.ok());
  EXPECT_TRUE(dup.duplicate);
  h.coord().tick();
  auto s = h.coord().topic(kTopic);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->window_reports, 1u);
  EXPECT_DOUBLE_EQ(s->window_total, 15.0);
}

TEST(CoordinatorCore, HysteresisKeepsKeyUntilBelowExitForHoldTime) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.hold_ms = 5000;
  cfg.defaults.balance_target = 1000;
  Harness h(cfg);
  const int32_t P = 8;
  auto with_share = [](uint64_t hot) {
    return [hot](int p) {
      std::map<std::string, uint64_t> c;
      if (hot) c["h"] = hot;
      add_tail(c, 1000 - hot, 400, 17u + static_cast<uint32_t>(p));
      return c;
    };
  };
  uint64_t seq = 1;
  for (int i = 0; i < 3; ++i) round(h, 5, P, seq++, with_share(400));
  ASSERT_NE(find(h.list(kTopic), "h"), nullptr);
  const uint64_t listed_version = h.list(kTopic).version;

  // 5% share: under the entry threshold (6.25%) but above the exit one (3.125%): stays.
  for (int i = 0; i < 15; ++i) {
    round(h, 5, P, seq++, with_share(50));
    ASSERT_NE(find(h.list(kTopic), "h"), nullptr) << "dropped at 5% share, round " << i;
  }
  // Gone from traffic: stays listed for hold_ms after its share fell below the exit share.
  const double exit_share = std::min(cfg.defaults.cold_fraction / P, 0.5 * 0.4);
  int64_t below_since = -1;
  bool removed = false;
  for (int i = 0; i < 40 && !removed; ++i) {
    HotKeyList before = h.list(kTopic);
    round(h, 5, P, seq++, with_share(0));
    const int64_t now = h.clock().now_ms();
    auto top = h.coord().top(kTopic, 500);
    double share = 0;
    for (const auto& e : *top) {
      if (e.key == "h") share = e.share;
    }
    if (share < exit_share && below_since < 0) below_since = now;
    const bool listed = find(h.list(kTopic), "h") != nullptr;
    if (below_since < 0 || now - below_since < cfg.defaults.hold_ms) {
      EXPECT_TRUE(listed) << "left before the hold time, round " << i;
    } else {
      removed = !listed;
      EXPECT_TRUE(removed) << "still listed after the hold time";
      EXPECT_GT(h.list(kTopic).version, before.version);
    }
  }
  EXPECT_TRUE(removed);
  EXPECT_GT(h.list(kTopic).version, listed_version);
}

TEST(CoordinatorCore, PinOverridesThresholdsAndExpiresWithTtl) {
  Harness h;
  auto cold = [](int p) {
    std::map<std::string, uint64_t> c{{"rare", 1}};
    add_tail(c, 999, 300, 5u + static_cast<uint32_t>(p));
    return c;
  };
  round(h, 3, 16, 1, cold);
  EXPECT_EQ(find(h.list(kTopic), "rare"), nullptr);

  CallResult r = h.coord().pin(kTopic, "rare", 4, 10, "launch day", "alice");
  ASSERT_TRUE(r.ok()) << r.error;
  HotKeyList list = h.list(kTopic);
  const HotKey* k = find(list, "rare");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->source, KeySource::kPinned);
  EXPECT_EQ(k->salts.size(), 4u);
  EXPECT_EQ(r.version, list.version);
  EXPECT_TRUE(tables_verified(list));

  // A pin without a count gets a computed one.
  ASSERT_TRUE(h.coord().pin(kTopic, "other", 0, 0, "why not", "alice").ok());
  EXPECT_GE(find(h.list(kTopic), "other")->salts.size(), 2u);

  h.clock().advance_ms(8000);
  h.coord().tick();
  ASSERT_NE(find(h.list(kTopic), "rare"), nullptr);
  h.clock().advance_ms(2000);
  h.coord().tick();
  EXPECT_EQ(find(h.list(kTopic), "rare"), nullptr);
  EXPECT_NE(find(h.list(kTopic), "other"), nullptr);
  auto audit = h.coord().audit(10);
  ASSERT_FALSE(audit.empty());
  EXPECT_EQ(audit.front().action, "pin_expired");
  EXPECT_EQ(audit.front().who, "system");
  EXPECT_EQ(audit.front().key, "rare");
}

TEST(CoordinatorCore, DenyOverridesDetectionAndAllowRestoresIt) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.balance_target = 1000;
  Harness h(cfg);
  auto hot = [](int p) {
    std::map<std::string, uint64_t> c{{"acct-1", 500}};
    add_tail(c, 500, 300, 9u + static_cast<uint32_t>(p));
    return c;
  };
  uint64_t seq = 1;
  round(h, 3, 8, seq++, hot);
  ASSERT_NE(find(h.list(kTopic), "acct-1"), nullptr);
  const uint64_t v1 = h.list(kTopic).version;

  ASSERT_TRUE(h.coord().deny(kTopic, "acct-1", "balances need order", "alice").ok());
  HotKeyList list = h.list(kTopic);
  EXPECT_EQ(find(list, "acct-1"), nullptr);
  EXPECT_EQ(list.denied, std::vector<std::string>{"acct-1"});
  EXPECT_GT(list.version, v1);
  for (int i = 0; i < 5; ++i) {
    round(h, 3, 8, seq++, hot);
    EXPECT_EQ(find(h.list(kTopic), "acct-1"), nullptr);
  }
  // A pin is refused in effect too: deny wins until allowed.
  ASSERT_TRUE(h.coord().allow(kTopic, "acct-1", "alice").ok());
  round(h, 3, 8, seq++, hot);
  EXPECT_NE(find(h.list(kTopic), "acct-1"), nullptr);
  EXPECT_TRUE(h.list(kTopic).denied.empty());
  EXPECT_EQ(h.coord().allow(kTopic, "acct-1", "alice").status, Status::kNotFound);
}

TEST(CoordinatorCore, PartitionCountChangeRecomputesEveryTable) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.balance_target = 1000;
  Harness h(cfg);
  auto hot = [](int p) {
    std::map<std::string, uint64_t> c{{"big", 300}, {"bigger", 400}};
    add_tail(c, 300, 300, 11u + static_cast<uint32_t>(p));
    return c;
  };
  uint64_t seq = 1;
  round(h, 4, 8, seq++, hot);
  ASSERT_TRUE(h.coord().pin(kTopic, "pinned", 3, 0, "test", "alice").ok());
  HotKeyList before = h.list(kTopic);
  ASSERT_EQ(before.partitions, 8);
  ASSERT_EQ(before.keys.size(), 3u);

  round(h, 4, 12, seq++, hot);
  HotKeyList after = h.list(kTopic);
  EXPECT_EQ(after.partitions, 12);
  EXPECT_GT(after.version, before.version);
  EXPECT_EQ(after.keys.size(), 3u);
  EXPECT_TRUE(tables_verified(after));
  bool uses_new_partition = false;
  for (const auto& k : after.keys) {
    for (const auto& s : k.salts) uses_new_partition |= s.partition >= 8;
  }
  EXPECT_TRUE(uses_new_partition);
}

TEST(CoordinatorCore, ZipfTrafficIsBalancedWithFewSaltedKeys) {
  Harness h;  // default detection and balance settings
  const int32_t P = 16;
  const uint32_t kKeys = 20000;
  // Zipf(1.0) sampled with a seeded RNG per producer.
  std::vector<double> cdf(kKeys);
  double sum = 0;
  for (uint32_t i = 0; i < kKeys; ++i) cdf[i] = (sum += 1.0 / (i + 1));
  for (auto& v : cdf) v /= sum;
  auto zipf = [&](int p, uint64_t seq) {
    std::mt19937 rng(static_cast<uint32_t>(p * 1000003 + seq));
    std::uniform_real_distribution<double> u(0, 1);
    std::map<std::string, uint64_t> c;
    for (int i = 0; i < 20000; ++i) {
      auto idx = std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin();
      c["user-" + std::to_string(idx)] += 1;
    }
    return c;
  };
  std::vector<uint64_t> last_counts(P, 0);
  for (uint64_t seq = 1; seq <= 12; ++seq) {
    HotKeyList list = h.list(kTopic);
    std::fill(last_counts.begin(), last_counts.end(), 0);
    for (int p = 0; p < 8; ++p) {
      Report r = make_report("p" + std::to_string(p), kTopic, P, seq, zipf(p, seq), 1024, &list);
      for (int32_t i = 0; i < P; ++i) last_counts[i] += r.partition_counts[i];
      ASSERT_TRUE(h.coord().ingest(std::move(r)).ok());
    }
    h.clock().advance_ms(1000);
    h.coord().tick();
  }
  HotKeyList list = h.list(kTopic);
  std::vector<double> load(last_counts.begin(), last_counts.end());
  double measured = 0, mx = 0, total = 0;
  for (double v : load) {
    mx = std::max(mx, v);
    total += v;
  }
  measured = mx / (total / P);
  auto summary = h.coord().topic(kTopic);
  std::cout << "zipf: keys listed " << list.keys.size() << ", predicted max/avg "
            << summary->predicted_skew << ", measured max/avg of the last round " << measured
            << "\n";
  EXPECT_LE(summary->predicted_skew, 1.05);
  // Sampling noise of a 160k-record round is about 1% per partition.
  EXPECT_LE(measured, 1.08);
  // 0.1% of the distinct keys.
  EXPECT_LE(list.keys.size(), kKeys / 1000);
  EXPECT_TRUE(tables_verified(list));
}

TEST(CoordinatorCore, LoadMeasuredUnderEarlierListsSurvivesANewVersion) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.balance_target = 1000;  // only threshold detection: the keys are a and b
  Harness h(cfg);
  const int32_t P = 8;
  // Cold keys that all hash to one partition (each far below the hot threshold) make it the
  // most loaded one: a table planned on the measured load keeps off it.
  std::vector<std::string> crowd;
  int32_t crowded = partition_for(HashFamily::kMurmur2, "crowd-0", P);
  for (int i = 0; crowd.size() < 30; ++i) {
    std::string k = "crowd-" + std::to_string(i);
    if (partition_for(HashFamily::kMurmur2, k, P) == crowded) crowd.push_back(k);
  }
  auto traffic = [&](bool with_b, int p) {
    std::map<std::string, uint64_t> c{{"a", 400}};
    if (with_b) c["b"] = 600;
    for (const auto& k : crowd) c[k] = 6;
    add_tail(c, 600, 300, 21u + static_cast<uint32_t>(p));
    return c;
  };
  double counted = 0;  // records of the reports routed with one known list all along
  auto send = [&](uint64_t seq, bool with_b, const HotKeyList* list, bool clean) {
    for (int p = 0; p < 3; ++p) {
      Report r = make_report("producer-" + std::to_string(p), kTopic, P, seq, traffic(with_b, p),
                             256, list);
      if (clean) counted += static_cast<double>(r.total);
      ASSERT_TRUE(h.coord().ingest(std::move(r)).ok());
    }
    h.clock().advance_ms(1000);
    h.coord().tick();
  };
  send(1, false, nullptr, true);  // no list yet: every key at home
  HotKeyList v1 = h.list(kTopic);
  ASSERT_NE(find(v1, "a"), nullptr);
  // The producers switch to v1 (their first report under it also covers records sent before
  // the switch: not counted) and b turns hot in the same round.
  send(2, true, &v1, false);
  HotKeyList v2 = h.list(kTopic);
  ASSERT_NE(find(v2, "b"), nullptr);
  EXPECT_GT(v2.version, v1.version);
  // b's table was planned on the load measured under no list: it keeps off the crowded
  // partition (before, a new version reset the load and b was spread blind).
  for (const auto& s : find(v2, "b")->salts) EXPECT_NE(s.partition, crowded) << s.salt;
  // Producers still on v1 after v2 is out: their reports count against v1's tables.
  send(3, true, &v1, true);
  send(4, true, &v1, true);
  auto load = h.coord().partition_load(kTopic);
  ASSERT_TRUE(load);
  double sum = 0;
  for (double v : *load) sum += v;
  EXPECT_DOUBLE_EQ(sum, counted);
  EXPECT_TRUE(tables_verified(h.list(kTopic)));
}

// Cluster takeover: the new owner re-issues the previous owner's list under a higher version
// (adopt_list), and the fleet routes with the previous version until the new one reaches it.
// Those reports' partition counts are measured load (the same tables), not dropped as routed
// with a list this member never issued.
TEST(CoordinatorCore, ReportsRoutedWithAnAdoptedListsPreviousVersionAreCounted) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.balance_target = 1000;  // only threshold detection
  const int32_t P = 8;
  auto counts = [](int p) {
    std::map<std::string, uint64_t> c{{"hot", 600}};
    add_tail(c, 400, 2000, static_cast<uint32_t>(p) * 7919u + 1);
    return c;
  };
  HotKeyList previous;
  {
    Harness owner(cfg);
    for (uint64_t seq = 1; seq <= 3; ++seq) round(owner, 5, P, seq, counts);
    previous = owner.list(kTopic);
  }
  ASSERT_NE(find(previous, "hot"), nullptr) << list_to_json(previous);
  Harness h(cfg);
  struct Epoch2 : LocalPlacement {
    uint64_t version_floor(const std::string&) const override { return uint64_t{2} << 32; }
  } placement;
  h.coord().set_placement(placement);
  const uint64_t v = h.coord().adopt_list(previous);
  ASSERT_GT(v, previous.version);
  double counted = 0;
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    for (int p = 0; p < 5; ++p) {
      Report r =
          make_report("producer-" + std::to_string(p), kTopic, P, seq, counts(p), 256, &previous);
      counted += static_cast<double>(r.total);
      ASSERT_TRUE(h.coord().ingest(std::move(r)).ok());
    }
  }
  h.clock().advance_ms(1000);
  h.coord().tick();
  auto load = h.coord().partition_load(kTopic);
  ASSERT_TRUE(load);
  double sum = 0;
  for (double x : *load) sum += x;
  EXPECT_DOUBLE_EQ(sum, counted);
  EXPECT_EQ(h.list(kTopic).version, v);
}

TEST(CoordinatorCore, StateSurvivesRestartAndVersionsContinue) {
  Harness h;
  auto hot = [](int p) {
    std::map<std::string, uint64_t> c{{"hot", 600}};
    add_tail(c, 400, 300, 3u + static_cast<uint32_t>(p));
    return c;
  };
  round(h, 2, 8, 1, hot);
  ASSERT_TRUE(h.coord().pin(kTopic, "pinned", 2, 0, "keep", "alice").ok());
  ASSERT_TRUE(h.coord().deny(kTopic, "ordered", "ordering", "alice").ok());
  HotKeyList before = h.list(kTopic);
  ASSERT_NE(find(before, "hot"), nullptr);

  h.restart();
  // Served at once, before any report.
  HotKeyList after = h.list(kTopic);
  EXPECT_EQ(after, before);
  auto pins = h.coord().pins(kTopic);
  ASSERT_TRUE(pins.has_value());
  EXPECT_TRUE(pins->contains("pinned"));
  EXPECT_TRUE(h.coord().denies(kTopic)->contains("ordered"));
  // Detection does not drop the persisted key for lack of fresh reports within hold_ms.
  h.coord().tick();
  EXPECT_NE(find(h.list(kTopic), "hot"), nullptr);
  ASSERT_TRUE(h.coord().unpin(kTopic, "pinned", "alice").ok());
  EXPECT_EQ(h.list(kTopic).version, before.version + 1);
  EXPECT_EQ(h.coord().audit(10).front().action, "unpin");
  EXPECT_EQ(h.coord().audit(10).front().version, before.version + 1);
}

TEST(CoordinatorCore, RejectsHashMismatchAndBadSketch) {
  CoordinatorConfig cfg = test_config();
  Harness h(cfg);
  ASSERT_TRUE(h.coord().ingest(make_report("p", kTopic, 4, 1, {{"a", 3}})).ok());
  CallResult r = h.coord().ingest(
      make_report("q", kTopic, 4, 1, {{"a", 3}}, 256, nullptr, HashFamily::kCrc32));
  EXPECT_EQ(r.status, Status::kConflict);
  EXPECT_EQ(r.reason, "hash_mismatch");
  Report bad = make_report("q", kTopic, 4, 2, {{"a", 3}});
  bad.sketch_total = 1;  // less than an item's count
  r = h.coord().ingest(std::move(bad));
  EXPECT_EQ(r.status, Status::kInvalid);
  EXPECT_EQ(h.coord().topic(kTopic)->producers, 1u);
}

// The topic's view keeps the refused reports by producer and reason (the dashboard's "Refused
// reports"): counted, with the last refusal's time and message. A refusal never creates a
// topic, and its view keeps at most kMaxRejectionsPerTopic pairs, the most recent.
TEST(CoordinatorCore, RefusedReportsAreKeptByProducerAndReason) {
  CoordinatorConfig cfg = test_config();
  cfg.topic_overrides["configured"] = cfg.defaults;
  cfg.topic_overrides["configured"].hash = HashFamily::kCrc32;
  Harness h(cfg);
  ASSERT_TRUE(h.coord().ingest(make_report("p", kTopic, 4, 1, {{"a", 3}})).ok());
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    EXPECT_EQ(h.coord()
                  .ingest(make_report("java-1", kTopic, 4, seq, {{"a", 3}}, 256, nullptr,
                                      HashFamily::kCrc32))
                  .reason,
              "hash_mismatch");
  }
  Report bad = make_report("java-2", kTopic, 4, 1, {{"a", 3}});
  bad.sketch_total = 1;
  EXPECT_EQ(h.coord().ingest(std::move(bad)).reason, "invalid_sketch");
  auto rejected = h.coord().rejections(kTopic);
  ASSERT_TRUE(rejected.has_value());
  ASSERT_EQ(rejected->size(), 2u);
  const Rejection& mismatch = (*rejected)[0];
  EXPECT_EQ(mismatch.producer, "java-1");
  EXPECT_EQ(mismatch.reason, "hash_mismatch");
  EXPECT_EQ(mismatch.count, 3u);
  EXPECT_GT(mismatch.last_at_ms, 0);
  EXPECT_NE(mismatch.error.find("partitioned with murmur2"), std::string::npos) << mismatch.error;
  EXPECT_EQ((*rejected)[1].producer, "java-2");
  EXPECT_EQ((*rejected)[1].reason, "invalid_sketch");
  EXPECT_EQ((*rejected)[1].count, 1u);
  // A configured family refuses before any topic exists: nothing is created for it ...
  EXPECT_EQ(h.coord().ingest(make_report("p", "configured", 4, 1, {{"a", 3}})).reason,
            "hash_mismatch");
  EXPECT_FALSE(h.coord().topic("configured").has_value());
  EXPECT_FALSE(h.coord().rejections("configured").has_value());
  // ... and once a producer of the right family created it, the refusals show.
  ASSERT_TRUE(h.coord()
                  .ingest(make_report("c", "configured", 4, 1, {{"a", 3}}, 256, nullptr,
                                      HashFamily::kCrc32))
                  .ok());
  EXPECT_EQ(h.coord().ingest(make_report("p", "configured", 4, 2, {{"a", 3}})).reason,
            "hash_mismatch");
  ASSERT_EQ(h.coord().rejections("configured")->size(), 1u);
  EXPECT_NE(h.coord().rejections("configured")->front().error.find("configured with hash crc32"),
            std::string::npos);
  // Bounded: the least recent pairs go.
  for (int i = 0; i < 40; ++i) {
    h.clock().advance_ms(1);
    h.coord().ingest(make_report("many-" + std::to_string(i), kTopic, 4, 1, {{"a", 3}}, 256,
                                 nullptr, HashFamily::kCrc32));
  }
  rejected = h.coord().rejections(kTopic);
  EXPECT_EQ(rejected->size(), 32u);  // kMaxRejectionsPerTopic
  for (const Rejection& r : *rejected) EXPECT_NE(r.producer, "java-1");
}

}  // namespace
}  // namespace hotkey::coordinator::test
