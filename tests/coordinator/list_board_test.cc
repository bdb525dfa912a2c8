// The list board's readers without a thread (ListBoard::park): a publication wakes exactly the
// readers holding its topic, below its version, each once, with that list; cancel, nudge,
// close and max_waiters; and many threads parking, cancelling and publishing at once (run
// under TSan with the concurrency tests).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "list_board.h"

namespace hotkey::coordinator::test {
namespace {

using Status = ListBoard::WaitStatus;

std::shared_ptr<const PublishedList> list(const std::string& topic, uint64_t version) {
  auto p = std::make_shared<PublishedList>();
  p->list.topic = topic;
  p->list.version = version;
  p->json = "{\"topic\":\"" + topic + "\",\"version\":" + std::to_string(version) + "}";
  return p;
}

// Records the answers its readers get.
struct Answers {
  std::mutex mu;
  std::vector<std::pair<int, ListBoard::AnyResult>> got;  // reader id, answer
  ListBoard::Wake wake(int id) {
    return [this, id](const ListBoard::AnyResult& r) {
      std::lock_guard lock(mu);
      got.emplace_back(id, r);
    };
  }
  size_t size() {
    std::lock_guard lock(mu);
    return got.size();
  }
};

TEST(ListBoardReaders, APublicationWakesOnlyTheReadersHoldingItsTopicOnceWithItsList) {
  ListBoard board(100000);
  Answers a;
  std::vector<std::shared_ptr<ListBoard::Reader>> readers;
  // 1,000 readers hold x and y, 10 hold z (and y).
  for (int i = 0; i < 1000; ++i) {
    auto p = board.park({{"x", 0}, {"y", 0}}, true, a.wake(i));
    ASSERT_TRUE(p.reader);
    readers.push_back(p.reader);
  }
  for (int i = 1000; i < 1010; ++i) {
    readers.push_back(board.park({{"y", 0}, {"z", 0}}, true, a.wake(i)).reader);
  }
  EXPECT_EQ(board.waiters(), 1010u);
  const auto z = list("z", 3);
  board.publish(z);
  ASSERT_EQ(a.size(), 10u);
  for (const auto& [id, r] : a.got) {
    EXPECT_GE(id, 1000);
    EXPECT_EQ(r.status, Status::kNewer);
    ASSERT_EQ(r.lists.size(), 1u);
    EXPECT_EQ(r.lists[0], z);
  }
  EXPECT_EQ(board.waiters(), 1000u);
  // Woken readers are off every topic they held: y wakes only the other 1,000.
  board.publish(list("y", 5));
  EXPECT_EQ(a.size(), 1010u);
  EXPECT_EQ(board.waiters(), 0u);
  // A woken reader cannot be cancelled any more.
  EXPECT_FALSE(board.cancel(readers[0], Status::kTimeout));
}

TEST(ListBoardReaders, ReadersAheadOfAPublicationKeepWaiting) {
  ListBoard board(10);
  Answers a;
  board.publish(list("t", 4));
  // Holding version 7 of t (a restarted coordinator without its store publishes 5).
  auto ahead = board.park({{"t", 7}}, true, a.wake(1)).reader;
  ASSERT_TRUE(ahead);
  board.publish(list("t", 5));
  EXPECT_EQ(a.size(), 0u);
  board.publish(list("t", 8));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a.got[0].second.lists[0]->list.version, 8u);
}

TEST(ListBoardReaders, AnswersAtOnceWithEveryNewerTopicInTheOrderAsked) {
  ListBoard board(10);
  Answers a;
  board.publish(list("a", 2));
  board.publish(list("b", 3));
  auto p = board.park({{"b", 0}, {"c", 0}, {"a", 1}}, true, a.wake(1));
  EXPECT_FALSE(p.reader);
  EXPECT_EQ(p.now.status, Status::kNewer);
  ASSERT_EQ(p.now.lists.size(), 2u);
  EXPECT_EQ(p.now.lists[0]->list.topic, "b");
  EXPECT_EQ(p.now.lists[1]->list.topic, "a");
  // Nothing newer and no wait: a timeout at once.
  p = board.park({{"a", 2}, {"b", 3}}, false, a.wake(2));
  EXPECT_FALSE(p.reader);
  EXPECT_EQ(p.now.status, Status::kTimeout);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(board.waiters(), 0u);
}

TEST(ListBoardReaders, CancelNudgeCloseAndMaxWaiters) {
  ListBoard board(3);
  Answers a;
  auto r1 = board.park({{"a", 0}}, true, a.wake(1)).reader;
  auto r2 = board.park({{"a", 0}, {"b", 0}}, true, a.wake(2)).reader;
  auto r3 = board.park({{"c", 0}}, true, a.wake(3)).reader;
  auto over = board.park({{"d", 0}}, true, a.wake(4));
  EXPECT_FALSE(over.reader);
  EXPECT_EQ(over.now.status, Status::kTooManyWaiters);

  EXPECT_TRUE(board.cancel(r1, Status::kTimeout));
  EXPECT_FALSE(board.cancel(r1, Status::kCancelled));  // once
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a.got[0].first, 1);
  EXPECT_EQ(a.got[0].second.status, Status::kTimeout);

  board.nudge([](std::string_view topic) { return topic == "b"; });
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a.got[1].first, 2);
  EXPECT_EQ(a.got[1].second.status, Status::kNudged);
  EXPECT_TRUE(a.got[1].second.lists.empty());

  board.close();
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a.got[2].first, 3);
  EXPECT_EQ(a.got[2].second.status, Status::kClosed);
  EXPECT_EQ(board.waiters(), 0u);
  EXPECT_EQ(board.park({{"a", 0}}, true, a.wake(5)).now.status, Status::kClosed);
}

// Parks, publications, cancels and nudges from many threads: every reader is answered exactly
// once, a kNewer answer is its topic's list above the version held, and nothing stays parked.
TEST(ListBoardReaders, ConcurrentParksPublicationsAndCancelsAnswerEachReaderOnce) {
  ListBoard board(1 << 20);
  constexpr int kTopics = 8;
  constexpr int kParkers = 4;
  constexpr int kPerParker = 3000;
  std::atomic<int> answers{0};
  std::atomic<int> bad{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int p = 0; p < kParkers; ++p) {
    threads.emplace_back([&, p] {
      std::mt19937 rng(static_cast<uint32_t>(p));
      for (int i = 0; i < kPerParker; ++i) {
        std::vector<ListBoard::Want> wants;
        for (int t = 0; t < kTopics; ++t) {
          if (rng() % 2 == 0) wants.push_back({"t" + std::to_string(t), 0});
        }
        if (wants.empty()) wants.push_back({"t0", 0});
        for (auto& w : wants) {
          auto cur = board.get(w.topic);
          w.since = cur ? cur->list.version : 0;
        }
        auto seen = std::make_shared<std::atomic<int>>(0);
        auto held = std::make_shared<std::vector<ListBoard::Want>>(wants);
        auto parked = board.park(wants, true, [&, seen, held](const ListBoard::AnyResult& r) {
          if (seen->fetch_add(1) != 0) bad.fetch_add(1);
          if (r.status == Status::kNewer) {
            bool held_topic = false;
            for (const auto& w : *held) {
              if (w.topic == r.lists.at(0)->list.topic) {
                held_topic = r.lists[0]->list.version > w.since;
              }
            }
            if (!held_topic || r.lists.size() != 1) bad.fetch_add(1);
          }
          answers.fetch_add(1);
        });
        if (!parked.reader) {
          answers.fetch_add(1);
          continue;
        }
        if (rng() % 3 == 0) board.cancel(parked.reader, Status::kCancelled);
      }
    });
  }
  std::thread publisher([&] {
    uint64_t v = 1;
    while (!stop.load()) {
      board.publish(list("t" + std::to_string(v % kTopics), v));
      if (v % 50 == 0) board.nudge([](std::string_view t) { return t == "t3"; });
      ++v;
    }
  });
  for (auto& t : threads) t.join();
  stop = true;
  publisher.join();
  board.close();
  EXPECT_EQ(answers.load(), kParkers * kPerParker);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(board.waiters(), 0u);
}

TEST(ListBoardReaders, BlockingWaitsStillWork) {
  ListBoard board(10);
  board.publish(list("a", 1));
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    board.publish(list("a", 2));
  });
  auto r = board.wait_newer("a", 1, std::chrono::seconds(30));
  later.join();
  EXPECT_EQ(r.status, Status::kNewer);
  EXPECT_EQ(r.list->list.version, 2u);
  r = board.wait_newer("a", 2, std::chrono::milliseconds(20));
  EXPECT_EQ(r.status, Status::kTimeout);
  EXPECT_EQ(r.list->list.version, 2u);
  ListBoard::Parking parking;
  std::thread canceller([&] {
    while (board.waiters() == 0) std::this_thread::yield();
    board.cancel(parking);
  });
  auto any = board.wait_any({{"a", 2}, {"b", 0}}, std::chrono::seconds(30), parking);
  canceller.join();
  EXPECT_EQ(any.status, Status::kCancelled);
  EXPECT_EQ(board.waiters(), 0u);
}

}  // namespace
}  // namespace hotkey::coordinator::test
