// Salt planners: every (salt, partition) pair recomputes with the family's own partitioner on
// the salted key, and the load-aware plan reaches the water level computed independently here.
#include "hotkey/salt_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace hotkey {
namespace {

constexpr HashFamily kFamilies[] = {HashFamily::kMurmur2, HashFamily::kCrc32, HashFamily::kFnv1a};
constexpr int32_t kPartitionCounts[] = {1, 2, 3, 12, 32, 64, 1000};
const char* const kSeparators[] = {"#", "::", "|"};

std::vector<std::string> sample_keys(size_t n) {
  std::vector<std::string> keys = {"", "tenant-42", std::string("bin\0\xff\x01", 5),
                                   std::string(300, 'k')};
  std::mt19937_64 rng(3);
  while (keys.size() < n) {
    std::string k(1 + rng() % 40, '\0');
    for (auto& c : k) c = static_cast<char>(rng() & 0xff);
    keys.push_back(k);
  }
  return keys;
}

uint64_t weight_sum(const SaltTable& t) {
  uint64_t s = 0;
  for (const auto& a : t.salts) s += a.weight;
  return s;
}

// The oracle: the allocating salted_key + partition_for path, not the planner's own.
void expect_recomputes(std::string_view key, const SaltTable& t, const SaltSpace& space) {
  std::set<int32_t> seen;
  uint32_t prev_salt = 0;
  for (size_t i = 0; i < t.salts.size(); ++i) {
    const auto& a = t.salts[i];
    EXPECT_EQ(
        partition_for(space.family, salted_key(key, space.separator, a.salt), space.partitions),
        a.partition)
        << "salt " << a.salt;
    EXPECT_TRUE(seen.insert(a.partition).second) << "partition repeated: " << a.partition;
    EXPECT_GT(a.weight, 0u);
    if (i > 0) {
      EXPECT_GT(a.salt, prev_salt) << "salts not in salt order";
    }
    prev_salt = a.salt;
  }
  EXPECT_TRUE(verify_table(key, t, space));
}

TEST(SaltPlanner, FirstFitTablesRecomputeForEveryFamilyAndSeparator) {
  const auto keys = sample_keys(10);
  for (HashFamily family : kFamilies) {
    for (int32_t p : kPartitionCounts) {
      for (const char* sep : kSeparators) {
        SaltSpace space{family, p, sep};
        for (size_t ki = 0; ki < (p >= 1000 ? 1 : keys.size()); ++ki) {
          const auto& key = keys[ki];
          for (uint32_t count : {1u, 3u, static_cast<uint32_t>(p), static_cast<uint32_t>(p) + 5}) {
            SCOPED_TRACE(std::string(to_string(family)) + " P=" + std::to_string(p) + " sep=" +
                         sep + " count=" + std::to_string(count) + " key#" + std::to_string(ki));
            auto t = plan_salts(key, count, space);
            ASSERT_FALSE(t.search_limit_reached);
            ASSERT_EQ(t.salts.size(), std::min<size_t>(count, static_cast<size_t>(p)));
            expect_recomputes(key, t, space);
            EXPECT_EQ(weight_sum(t), kWeightScale);
            // Equal weights: they differ by at most one unit of rounding.
            auto [lo, hi] = std::minmax_element(
                t.salts.begin(), t.salts.end(),
                [](const auto& a, const auto& b) { return a.weight < b.weight; });
            EXPECT_LE(hi->weight - lo->weight, 1u);
            // First fit: every skipped salt lands on a partition an earlier kept salt took.
            std::set<int32_t> taken;
            size_t next = 0;
            for (uint32_t s = 0; s <= t.salts.back().salt; ++s) {
              int32_t part = partition_for(family, salted_key(key, sep, s), p);
              if (next < t.salts.size() && t.salts[next].salt == s) {
                taken.insert(part);
                ++next;
              } else {
                EXPECT_TRUE(taken.count(part)) << "salt " << s << " was skipped but is new";
              }
            }
          }
        }
      }
    }
  }
}

TEST(SaltPlanner, SaltPerPartitionFindsTheSmallestSalt) {
  const auto keys = sample_keys(4);
  for (HashFamily family : kFamilies) {
    for (int32_t p : kPartitionCounts) {
      for (const char* sep : kSeparators) {
        SaltSpace space{family, p, sep};
        for (size_t ki = 0; ki < (p >= 1000 ? 1 : keys.size()); ++ki) {
          const auto& key = keys[ki];
          auto table = salt_per_partition(key, space);
          ASSERT_EQ(table.size(), static_cast<size_t>(p));
          uint32_t last = 0;
          for (uint32_t s : table) {
            ASSERT_NE(s, std::numeric_limits<uint32_t>::max()) << "P=" << p;
            last = std::max(last, s);
          }
          std::vector<uint32_t> first(static_cast<size_t>(p), std::numeric_limits<uint32_t>::max());
          for (uint32_t s = 0; s <= last; ++s) {
            auto part = static_cast<size_t>(partition_for(family, salted_key(key, sep, s), p));
            if (first[part] == std::numeric_limits<uint32_t>::max()) first[part] = s;
          }
          EXPECT_EQ(table, first);
        }
      }
    }
  }
}

TEST(SaltPlanner, EqualWeightsStayPositiveBeyondTheWeightScale) {
  // More partitions than weight units: the table stops at kWeightScale salts of weight 1.
  SaltSpace space{HashFamily::kMurmur2, 20000, "#"};
  auto t = plan_salts("wide", 15000, space);
  EXPECT_FALSE(t.search_limit_reached);
  ASSERT_EQ(t.salts.size(), kWeightScale);
  EXPECT_EQ(weight_sum(t), kWeightScale);
  EXPECT_TRUE(verify_table("wide", t, space));
}

TEST(SaltPlanner, SearchLimitIsReported) {
  SaltSpace space{HashFamily::kMurmur2, 64, "#", 2};
  auto t = plan_salts("k", 5, space);
  EXPECT_TRUE(t.search_limit_reached);
  EXPECT_LE(t.salts.size(), 2u);
  EXPECT_FALSE(t.salts.empty());
  expect_recomputes("k", t, space);
  EXPECT_EQ(weight_sum(t), kWeightScale);

  space.search_limit = 0;
  auto none = plan_salts("k", 1, space);
  EXPECT_TRUE(none.search_limit_reached);
  EXPECT_TRUE(none.salts.empty());
  auto per = salt_per_partition("k", space);
  EXPECT_TRUE(std::all_of(per.begin(), per.end(),
                          [](uint32_t s) { return s == std::numeric_limits<uint32_t>::max(); }));

  // Only the partitions the limited search reached are used by the load-aware planner.
  space.search_limit = 3;
  std::vector<double> cold(64, 1.0);
  std::vector<HotKeyDemand> d = {{"k", 100.0, 0}};
  auto tables = plan_load_aware(cold, d, space);
  EXPECT_TRUE(tables[0].search_limit_reached);
  EXPECT_LE(tables[0].salts.size(), 3u);
  expect_recomputes("k", tables[0], space);
}

// Minimum achievable max load when `rate` may be split freely over the `m` least-loaded
// entries of `loads`: bisection on the level, independent of the planner's closed form.
double ideal_max(std::vector<double> loads, double rate, size_t m) {
  std::sort(loads.begin(), loads.end());
  const double top = loads.back();
  loads.resize(std::min(m, loads.size()));
  double lo = loads.front();
  double hi = loads.back() + rate;
  for (int i = 0; i < 200; ++i) {
    double mid = (lo + hi) / 2;
    double room = 0;
    for (double l : loads) room += std::max(0.0, mid - l);
    (room >= rate ? hi : lo) = mid;
  }
  return std::max(hi, top);
}

std::vector<double> skewed_cold(size_t p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> cold(p);
  for (size_t i = 0; i < p; ++i) {
    // A few very busy partitions, many idle-ish ones.
    cold[i] = (rng() % 5 == 0) ? 500.0 + static_cast<double>(rng() % 500)
                               : static_cast<double>(rng() % 50);
  }
  return cold;
}

TEST(SaltPlanner, LoadAwareReachesTheWaterLevel) {
  for (HashFamily family : kFamilies) {
    for (int32_t p : {1, 2, 3, 12, 32, 64, 1000}) {
      for (const char* sep : kSeparators) {
        SaltSpace space{family, p, sep};
        const auto cold = skewed_cold(static_cast<size_t>(p), static_cast<uint64_t>(p));
        const double cold_sum = std::accumulate(cold.begin(), cold.end(), 0.0);
        SCOPED_TRACE(std::string(to_string(family)) + " P=" + std::to_string(p) + " sep=" + sep);

        // One hot key, free to use every partition.
        const double rate = 3000;
        std::vector<HotKeyDemand> one = {{"hot-key", rate, 0}};
        auto t1 = plan_load_aware(cold, one, space);
        ASSERT_EQ(t1.size(), 1u);
        expect_recomputes("hot-key", t1[0], space);
        EXPECT_EQ(weight_sum(t1[0]), kWeightScale);
        auto load = predicted_load(cold, one, t1);
        // Each weight is within one unit of its exact share: rate / kWeightScale.
        const double tol = rate / kWeightScale + 1e-6;
        EXPECT_LE(*std::max_element(load.begin(), load.end()),
                  ideal_max(cold, rate, static_cast<size_t>(p)) + tol);
        EXPECT_NEAR(std::accumulate(load.begin(), load.end(), 0.0), cold_sum + rate, 1e-6);

        // Capped at 3 salts: the best 3 partitions are the 3 least loaded.
        std::vector<HotKeyDemand> capped = {{"hot-key", rate, 3}};
        auto t3 = plan_load_aware(cold, capped, space);
        expect_recomputes("hot-key", t3[0], space);
        EXPECT_LE(t3[0].salts.size(), 3u);
        auto load3 = predicted_load(cold, capped, t3);
        EXPECT_LE(*std::max_element(load3.begin(), load3.end()), ideal_max(cold, rate, 3) + tol);

        // Several keys, largest first: sequential water-filling over a shared set reaches the
        // level of their pooled rate.
        std::vector<HotKeyDemand> many = {
            {"a", 400, 0}, {"b", 2500, 0}, {"c", 90, 0}, {"d", 1200, 0}, {"e", 0, 0}};
        auto tm = plan_load_aware(cold, many, space);
        ASSERT_EQ(tm.size(), many.size());
        double pooled = 0;
        for (size_t i = 0; i < many.size(); ++i) {
          expect_recomputes(many[i].key, tm[i], space);
          EXPECT_EQ(weight_sum(tm[i]), kWeightScale);
          EXPECT_FALSE(tm[i].salts.empty()) << "at least one salt is always used";
          pooled += many[i].rate;
        }
        auto loadm = predicted_load(cold, many, tm);
        EXPECT_LE(*std::max_element(loadm.begin(), loadm.end()),
                  ideal_max(cold, pooled, static_cast<size_t>(p)) + pooled / kWeightScale + 1e-6);
      }
    }
  }
}

TEST(SaltPlanner, LoadAwarePrefersIdlePartitions) {
  SaltSpace space{HashFamily::kMurmur2, 8, "#"};
  std::vector<double> cold = {100, 100, 0, 100, 100, 100, 100, 100};
  std::vector<HotKeyDemand> d = {{"k", 50, 0}};
  auto t = plan_load_aware(cold, d, space);
  ASSERT_EQ(t[0].salts.size(), 1u);
  EXPECT_EQ(t[0].salts[0].partition, 2);
  EXPECT_EQ(t[0].salts[0].weight, kWeightScale);
}

TEST(SaltPlanner, VerifyTableRejectsBrokenTables) {
  SaltSpace space{HashFamily::kCrc32, 12, "::"};
  auto good = plan_salts("acct", 4, space);
  ASSERT_TRUE(verify_table("acct", good, space));
  EXPECT_FALSE(verify_table("other-key", good, space));
  auto bad = good;
  bad.salts[1].partition = (bad.salts[1].partition + 1) % 12;
  EXPECT_FALSE(verify_table("acct", bad, space));
  bad = good;
  bad.salts[1].weight = 0;
  EXPECT_FALSE(verify_table("acct", bad, space));
  bad = good;
  bad.salts.push_back(bad.salts[0]);
  EXPECT_FALSE(verify_table("acct", bad, space));
  bad = good;
  bad.salts[0].partition = 12;
  EXPECT_FALSE(verify_table("acct", bad, space));
  EXPECT_FALSE(verify_table("acct", SaltTable{}, space));
}

TEST(SaltPlanner, BadArgumentsThrow) {
  SaltSpace space{HashFamily::kMurmur2, 0, "#"};
  EXPECT_THROW(plan_salts("k", 1, space), std::invalid_argument);
  EXPECT_THROW(salt_per_partition("k", space), std::invalid_argument);
  space.partitions = 4;
  EXPECT_THROW(plan_salts("k", 0, space), std::invalid_argument);
  for (const char* sep : {"", "7", "a1", "toolong-sep"}) {
    SaltSpace s = space;
    s.separator = sep;
    EXPECT_THROW(plan_salts("k", 1, s), std::invalid_argument) << sep;
    EXPECT_FALSE(verify_table("k", plan_salts("k", 1, space), s)) << sep;
  }
  std::vector<double> cold = {1, 2, 3};
  std::vector<HotKeyDemand> d = {{"k", 5, 0}};
  EXPECT_THROW(plan_load_aware(cold, d, space), std::invalid_argument);  // size != P
  cold = {1, 2, 3, -1};
  EXPECT_THROW(plan_load_aware(cold, d, space), std::invalid_argument);
  cold = {1, 2, 3, std::nan("")};
  EXPECT_THROW(plan_load_aware(cold, d, space), std::invalid_argument);
  cold = {1, 2, 3, 4};
  d[0].rate = -3;
  EXPECT_THROW(plan_load_aware(cold, d, space), std::invalid_argument);
  d[0].rate = std::numeric_limits<double>::infinity();
  EXPECT_THROW(plan_load_aware(cold, d, space), std::invalid_argument);
  d[0].rate = 5;
  auto tables = plan_load_aware(cold, d, space);
  std::vector<SaltTable> two = {tables[0], tables[0]};
  EXPECT_THROW(predicted_load(cold, d, two), std::invalid_argument);
  tables[0].salts[0].partition = 9;
  EXPECT_THROW(predicted_load(cold, d, tables), std::invalid_argument);
}

}  // namespace
}  // namespace hotkey
