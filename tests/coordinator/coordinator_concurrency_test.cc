// Concurrent ingest, detection ticks, operator writes and long-poll waiters on one
// coordinator (run under TSan via the "tsan" label): versions seen by waiters only grow, and
// the persisted state equals the served state afterwards.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

TEST(CoordinatorConcurrency, IngestTickOperatorsAndWaitersTogether) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.hold_ms = 0;
  Harness h(cfg);
  constexpr const char* kTopic = "orders";
  ASSERT_TRUE(h.coord().ingest(make_report("seed", kTopic, 8, 1, {{"a", 1}})).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;

  for (int s = 0; s < 2; ++s) {
    threads.emplace_back([&, s] {
      for (uint64_t seq = 1; seq <= 300; ++seq) {
        std::map<std::string, uint64_t> c{{"hot-" + std::to_string(seq % 3), 400}};
        add_tail(c, 100, 50, static_cast<uint32_t>(seq));
        if (!h.coord().ingest(make_report("p" + std::to_string(s), kTopic, 8, seq, c)).ok()) {
          failures.fetch_add(1);
        }
      }
    });
  }
  threads.emplace_back([&] {
    while (!stop.load()) {
      h.clock().advance_ms(250);
      h.coord().tick();
    }
  });
  threads.emplace_back([&] {
    for (int i = 0; i < 40; ++i) {
      const std::string key = "pin-" + std::to_string(i % 4);
      if (!h.coord().pin(kTopic, key, 2, 0, "load", "alice").ok()) failures.fetch_add(1);
      if (i % 2 && !h.coord().unpin(kTopic, key, "alice").ok()) failures.fetch_add(1);
      if (i % 5 == 0 && !h.coord().deny(kTopic, "deny-" + key, "order", "alice").ok()) {
        failures.fetch_add(1);
      }
    }
  });
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&] {
      uint64_t seen = 0;
      while (!stop.load()) {
        auto r = h.coord().board().wait_newer(kTopic, seen, std::chrono::milliseconds(20));
        if (r.status == ListBoard::WaitStatus::kNewer) {
          if (r.list->list.version <= seen) failures.fetch_add(1);
          seen = r.list->list.version;
        }
      }
    });
  }
  threads[0].join();
  threads[1].join();
  threads[3].join();
  stop = true;
  for (size_t i = 0; i < threads.size(); ++i) {
    if (i != 0 && i != 1 && i != 3) threads[i].join();
  }
  EXPECT_EQ(failures.load(), 0);
  HotKeyList served = h.list(kTopic);
  EXPECT_GE(served.version, 40u);
  h.restart();
  EXPECT_EQ(h.list(kTopic), served);
}

}  // namespace
}  // namespace hotkey::coordinator::test
