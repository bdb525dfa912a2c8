// Fault tests for the producer client: a loopback coordinator peer that answers garbage or
// answers too late (past the client's HTTP timeout). The send path must keep its rate and keep
// routing with the last good list; the first good answer afterwards must be taken at once.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "../client/test_util.h"
#include "hotkey/client/client.h"
#include "hotkey/hotkey_list.h"

namespace hotkey::client {
namespace {

using std::chrono::milliseconds;
using test::make_list;

enum class Mode { kGood, kGarbage, kSlow };

constexpr uint32_t kClientTimeoutMs = 300;
constexpr uint32_t kSlowAnswerMs = 3 * kClientTimeoutMs;

// A coordinator that can go bad. The answer is chosen by the mode at the request's arrival, so
// a slow request never delivers a good list after the test switched back to good.
class FlakyCoordinator {
 public:
  FlakyCoordinator() {
    server_.server().Get(
        "/v1/hotkeys", [this](const httplib::Request& req, httplib::Response& res) {
          const uint64_t since = std::stoull(req.get_param_value("since"));
          std::unique_lock lock(mu_);
          const Mode mode = mode_;
          ++polls_;
          if (mode == Mode::kSlow) {
            cv_.wait_for(lock, milliseconds(kSlowAnswerMs), [&] { return stopping_; });
            res.set_content(list_body_, "application/json");
            return;
          }
          if (mode == Mode::kGarbage) {
            answer_garbage(res);
            return;
          }
          cv_.wait_for(lock, milliseconds(200),
                       [&] { return version_ > since || stopping_ || mode_ != Mode::kGood; });
          if (version_ > since && mode_ == Mode::kGood) {
            res.set_content(list_body_, "application/json");
            ++good_answers_[version_];
          } else {
            res.status = 304;
          }
        });
    server_.server().Post("/v1/reports", [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock lock(mu_);
      ++reports_;
      if (mode_ == Mode::kSlow) {
        cv_.wait_for(lock, milliseconds(kSlowAnswerMs), [&] { return stopping_; });
      } else if (mode_ == Mode::kGarbage) {
        answer_garbage(res);
        return;
      }
      res.status = 204;
    });
  }
  ~FlakyCoordinator() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    server_.stop();
  }
  std::string url() const { return server_.url(); }
  void serve(const HotKeyList& list) {
    std::lock_guard lock(mu_);
    list_body_ = list_to_json(list);
    version_ = list.version;
    mode_ = Mode::kGood;
    cv_.notify_all();
  }
  void set_mode(Mode mode) {
    std::lock_guard lock(mu_);
    mode_ = mode;
    cv_.notify_all();
  }
  uint64_t polls() {
    std::lock_guard lock(mu_);
    return polls_;
  }
  uint64_t reports() {
    std::lock_guard lock(mu_);
    return reports_;
  }
  uint64_t good_answers(uint64_t version) {
    std::lock_guard lock(mu_);
    return good_answers_[version];
  }

 private:
  // Cycles through the ways a broken peer or proxy answers.
  void answer_garbage(httplib::Response& res) {
    static const char* const kBodies[] = {
        "{\"topic\":\"orders\",\"version\":99,\"partitions\":",  // truncated
        "<html><body>502 Bad Gateway</body></html>", "\xff\xfe\x00\x01 binary noise",
        "{\"topic\":\"orders\",\"version\":99,\"partitions\":8,\"hash\":\"murmur2\","
        "\"separator\":\"#\",\"keys\":[{\"key\":\"hot\",\"salts\":[{\"salt\":0,\"partition\":7,"
        "\"weight\":1},{\"salt\":1,\"partition\":7,\"weight\":1}],\"source\":\"detected\","
        "\"rate\":1,\"share\":1}],\"denied\":[]}",  // unverified salts: must be refused
    };
    const size_t i = garbage_++ % std::size(kBodies);
    res.status = i == 1 ? 502 : 200;
    res.set_content(kBodies[i], "application/json");
  }

  std::mutex mu_;
  std::condition_variable cv_;
  Mode mode_ = Mode::kGood;
  std::string list_body_;
  uint64_t version_ = 0;
  bool stopping_ = false;
  uint64_t polls_ = 0;
  uint64_t reports_ = 0;
  uint64_t garbage_ = 0;
  std::map<uint64_t, uint64_t> good_answers_;
  test::LoopbackServer server_;  // last: stopped first
};

struct Workload {
  std::vector<std::string> keys;  // every 4th is the hot key
  Workload() {
    for (int i = 0; i < 1024; ++i) keys.push_back(i % 4 == 0 ? "hot" : "k" + std::to_string(i));
  }
};

// Records per second through the send path, best of `rounds` (the least disturbed by the
// other builds on a shared machine). Checks every hot-key decision on the way.
double send_rate(Client& c, TopicId t, const Workload& w, uint64_t want_version,
                 uint64_t* wrong_decisions, int rounds = 5, size_t per_round = 400'000) {
  double best = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < per_round; ++i) {
      const std::string& k = w.keys[i & 1023];
      RouteDecision d = c.route(t, k.data(), k.size(), {}, 8);
      if ((i & 3) == 0 && (!d.salted || d.version != want_version)) ++*wrong_decisions;
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(per_round) / s);
  }
  return best;
}

Properties props_for(const FlakyCoordinator& peer) {
  return {{"hotkey.coordinator.url", peer.url()},
          {"hotkey.producer.id", "flaky-test"},
          {"hotkey.poll.wait.ms", "200"},
          {"hotkey.report.interval.ms", "20"},
          {"hotkey.backoff.initial.ms", "10"},
          {"hotkey.backoff.max.ms", "50"},
          {"hotkey.http.timeout.ms", std::to_string(kClientTimeoutMs)},
          {"hotkey.hash", "murmur2"},
          {"hotkey.topics", "orders"}};
}

TEST(ClientFaults, GarbageAndSlowCoordinatorKeepSendRateAndLastListThenRecoverInOnePoll) {
  FlakyCoordinator peer;
  peer.serve(make_list("orders", 1, 8, HashFamily::kMurmur2, {"hot"}, 4));
  Client c(props_for(peer));
  const TopicId t = c.topic("orders");
  ASSERT_TRUE(c.wait_for_version(t, 1, std::chrono::seconds(10)));
  const Workload w;

  uint64_t wrong = 0;
  const double healthy = send_rate(c, t, w, 1, &wrong);
  ASSERT_EQ(wrong, 0u);

  // Garbage: every poll and report gets nonsense; the client refuses it all.
  const uint64_t errors_before = c.stats().list_errors;
  const uint64_t polls_before = peer.polls();
  peer.set_mode(Mode::kGarbage);
  ASSERT_TRUE(test::eventually([&] { return peer.polls() >= polls_before + 4; }));
  const double garbage = send_rate(c, t, w, 1, &wrong);
  EXPECT_EQ(wrong, 0u) << "decisions left the last good list while the peer sent garbage";
  EXPECT_GT(c.stats().list_errors, errors_before);
  EXPECT_EQ(c.router().version(t), 1u);

  // Slow: every answer comes after the client's timeout.
  const uint64_t polls_slow = peer.polls();
  peer.set_mode(Mode::kSlow);
  ASSERT_TRUE(test::eventually([&] { return peer.polls() >= polls_slow + 2; }));
  const double slow = send_rate(c, t, w, 1, &wrong);
  EXPECT_EQ(wrong, 0u) << "decisions left the last good list while the peer was slow";
  EXPECT_EQ(c.router().version(t), 1u);

  // Back to good with a new list: the first good answer is taken, no second poll needed.
  peer.serve(make_list("orders", 2, 8, HashFamily::kMurmur2, {"hot", "warm"}, 4));
  ASSERT_TRUE(c.wait_for_version(t, 2, std::chrono::seconds(10)));
  EXPECT_EQ(peer.good_answers(2), 1u);
  const std::string warm = "warm";
  EXPECT_TRUE(c.route(t, warm.data(), warm.size(), {}, 8).salted);
  EXPECT_GT(peer.reports(), 0u);

  const double garbage_ratio = garbage / healthy;
  const double slow_ratio = slow / healthy;
  std::printf("send rate: healthy %.0f/s, garbage %.0f/s (%.3fx), slow %.0f/s (%.3fx)\n", healthy,
              garbage, garbage_ratio, slow, slow_ratio);
  RecordProperty("healthy_per_s", std::to_string(static_cast<uint64_t>(healthy)));
  RecordProperty("garbage_ratio", std::to_string(garbage_ratio));
  RecordProperty("slow_ratio", std::to_string(slow_ratio));
  // Throughput ratios depend on what else the machine runs; the 0.95x goal is asserted only
  // where the run is known to be quiet (HOTKEY_STRICT_TIMING=1), always printed above.
  if (const char* strict = std::getenv("HOTKEY_STRICT_TIMING"); strict && *strict == '1') {
    EXPECT_GE(garbage_ratio, 0.95);
    EXPECT_GE(slow_ratio, 0.95);
  }
}

}  // namespace
}  // namespace hotkey::client
