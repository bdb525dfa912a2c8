// The load generator's workload: the benchmark's scenarios are only comparable if the key
// stream has the shares and the schedule it claims, deterministically per seed.
#include "workload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

namespace hl = hotkey::loadgen;

namespace {

std::map<std::string, int> sample(hl::Workload& w, double t_s, int n) {
  std::map<std::string, int> counts;
  std::string key;
  for (int i = 0; i < n; ++i) {
    w.key_of(w.next(t_s), key);
    ++counts[key];
  }
  return counts;
}

}  // namespace

TEST(LoadgenWorkload, ZipfSharesMatchTheExponent) {
  hl::WorkloadSpec spec;
  spec.keys = 1000;
  spec.zipf = 1.2;
  hl::Workload w(spec);
  double h = 0;
  for (int r = 1; r <= 1000; ++r) h += std::pow(r, -1.2);
  EXPECT_NEAR(w.background_share(0), 1.0 / h, 1e-12);
  EXPECT_NEAR(w.background_share(9), std::pow(10, -1.2) / h, 1e-12);
  constexpr int kN = 200000;
  auto counts = sample(w, 0, kN);
  // Binomial standard deviation of rank 0's count is ~200; allow 5 sigma.
  EXPECT_NEAR(counts["user-0"], kN / h, 1000);
  EXPECT_LE(counts.size(), 1000u);
}

TEST(LoadgenWorkload, UniformBackgroundCoversTheKeySpace) {
  hl::WorkloadSpec spec;
  spec.keys = 50;
  spec.zipf = 0;
  hl::Workload w(spec);
  auto counts = sample(w, 0, 50000);
  EXPECT_EQ(counts.size(), 50u);
  for (const auto& [k, c] : counts) EXPECT_NEAR(c, 1000, 200) << k;
}

TEST(LoadgenWorkload, SurgeStartsAndMovesOnSchedule) {
  hl::WorkloadSpec spec;
  spec.keys = 100000;
  spec.zipf = 0;
  spec.hot_share = 0.45;
  spec.hot_start_s = 4;
  spec.hot_move_s = 10;
  spec.hot_prefix = "flash-";
  hl::Workload w(spec);
  EXPECT_EQ(sample(w, 3.9, 10000).count("flash-0"), 0u);
  auto during = sample(w, 5, 100000);
  EXPECT_NEAR(during["flash-0"], 45000, 800);
  EXPECT_EQ(during.count("flash-1"), 0u);
  auto moved = sample(w, 14.5, 100000);
  EXPECT_EQ(moved.count("flash-0"), 0u);
  EXPECT_NEAR(moved["flash-1"], 45000, 800);
}

TEST(LoadgenWorkload, HotSetSharesTheOverlayEqually) {
  hl::WorkloadSpec spec;
  spec.keys = 1000;
  spec.zipf = 0;
  spec.hot_share = 0.5;
  spec.hot_keys = 4;
  spec.hot_prefix = "trend-";
  hl::Workload w(spec);
  auto counts = sample(w, 0, 100000);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(counts["trend-" + std::to_string(j)], 12500, 600);
}

TEST(LoadgenWorkload, SameSeedSameStream) {
  hl::WorkloadSpec spec;
  spec.seed = 7;
  hl::Workload a(spec), b(spec);
  spec.seed = 8;
  hl::Workload c(spec);
  int same_c = 0;
  for (int i = 0; i < 1000; ++i) {
    auto ka = a.next(1), kb = b.next(1), kc = c.next(1);
    ASSERT_EQ(ka.index, kb.index);
    ASSERT_EQ(ka.overlay, kb.overlay);
    same_c += ka.index == kc.index ? 1 : 0;
  }
  EXPECT_LT(same_c, 500);
}

TEST(LoadgenWorkload, DesignatedHotKeysFollowTheSchedule) {
  hl::WorkloadSpec spec;
  spec.keys = 100000;
  spec.zipf = 1.0;
  spec.hot_share = 0.45;
  spec.hot_start_s = 15;
  spec.hot_move_s = 30;
  spec.hot_prefix = "flash-";
  hl::Workload w(spec);
  auto hot = w.designated_hot_keys(1.0 / 32, 75);
  ASSERT_GE(hot.size(), 3u);
  EXPECT_EQ(hot[0].key, "flash-0");
  EXPECT_DOUBLE_EQ(hot[0].hot_since_s, 15);
  EXPECT_EQ(hot[1].key, "flash-1");
  EXPECT_DOUBLE_EQ(hot[1].hot_since_s, 45);
  EXPECT_EQ(hot[2].key, "user-0");  // Zipf(1.0) rank 0 holds ~8% > 1/32
  for (const auto& h : hot) EXPECT_GE(h.share, 1.0 / 32) << h.key;
}

TEST(LoadgenWorkload, RejectsInconsistentSpecs) {
  hl::WorkloadSpec spec;
  spec.keys = 0;
  EXPECT_THROW(hl::Workload{spec}, std::invalid_argument);
  spec = {};
  spec.hot_share = 1.0;
  EXPECT_THROW(hl::Workload{spec}, std::invalid_argument);
  spec = {};
  spec.hot_keys = 0;
  EXPECT_THROW(hl::Workload{spec}, std::invalid_argument);
  spec = {};
  spec.zipf = -1;
  EXPECT_THROW(hl::Workload{spec}, std::invalid_argument);
}
