#include "hotkey/client/client.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "hotkey/report.h"
#include "hotkey/report_batch.h"
#include "test_util.h"

namespace hotkey::client {
namespace {

using std::chrono::milliseconds;
using test::eventually;
using test::LoopbackServer;
using test::make_list;

// A coordinator peer speaking the v1 HTTP API: GET /v1/hotkeys long-polls on the body the test
// sets; POST /v1/reports decodes and keeps what it receives (or fails with a set status).
class CoordinatorPeer {
 public:
  CoordinatorPeer() {
    LoopbackServer& server = server_;
    server.server().Get("/v1/hotkeys", [this](const httplib::Request& req, httplib::Response& res) {
      uint64_t since = std::stoull(req.get_param_value("since"));
      uint64_t wait_ms = std::stoull(req.get_param_value("wait_ms"));
      std::unique_lock lock(mu_);
      ++polls_;
      last_auth_ = req.get_header_value("Authorization");
      cv_.wait_for(lock, milliseconds(std::min<uint64_t>(wait_ms, 300)),
                   [&] { return version_ > since || garbage_ || stopping_; });
      if (garbage_) {
        res.set_content(body_, "application/json");
      } else if (version_ > since) {
        res.set_content(body_, "application/json");
      } else {
        res.status = 304;
      }
    });
    server.server().Post(
        "/v1/reports", [this](const httplib::Request& req, httplib::Response& res) {
          std::lock_guard lock(mu_);
          last_auth_ = req.get_header_value("Authorization");
          ++singles_;
          if (report_status_ != 200) {
            res.status = report_status_;
            return;
          }
          try {
            reports_.push_back(decode_report_binary(req.body));
            res.status = 204;
          } catch (const DecodeError& e) {
            res.status = 400;
            res.set_content(std::string("{\"error\":\"") + e.what() + "\"}", "application/json");
          }
        });
    // The batch form, only once enable_batch() was called (an older coordinator answers 404).
    server.server().Post("/v1/reports/batch",
                         [this](const httplib::Request& req, httplib::Response& res) {
                           std::lock_guard lock(mu_);
                           if (!batch_enabled_) {
                             res.status = 404;
                             return;
                           }
                           ++batches_;
                           std::string results = "{\"results\":[";
                           for (std::string_view one : split_report_batch_binary(req.body)) {
                             Report r = decode_report_binary(one);
                             int status = 200;
                             if (auto it = item_status_.find(r.topic); it != item_status_.end())
                               status = it->second;
                             if (status == 200) reports_.push_back(std::move(r));
                             if (results.back() != '[') results += ",";
                             results += "{\"status\":" + std::to_string(status) + "}";
                           }
                           res.set_content(results + "]}", "application/json");
                         });
  }
  ~CoordinatorPeer() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    server_.stop();  // handlers finish before the state they use goes away
  }
  std::string url() const { return server_.url(); }
  int port() const { return server_.port(); }
  void serve(const HotKeyList& list) {
    std::lock_guard lock(mu_);
    body_ = list_to_json(list);
    version_ = list.version;
    garbage_ = false;
    cv_.notify_all();
  }
  // Answers 200 with this body whatever `since` says.
  void serve_garbage(std::string body) {
    std::lock_guard lock(mu_);
    body_ = std::move(body);
    garbage_ = true;
    cv_.notify_all();
  }
  void set_report_status(int status) {
    std::lock_guard lock(mu_);
    report_status_ = status;
  }
  void enable_batch() {
    std::lock_guard lock(mu_);
    batch_enabled_ = true;
  }
  // In a batch, reports for `topic` get this per-report status.
  void set_item_status(const std::string& topic, int status) {
    std::lock_guard lock(mu_);
    item_status_[topic] = status;
  }
  uint64_t batches() {
    std::lock_guard lock(mu_);
    return batches_;
  }
  uint64_t singles() {
    std::lock_guard lock(mu_);
    return singles_;
  }
  std::vector<Report> reports() {
    std::lock_guard lock(mu_);
    return reports_;
  }
  uint64_t polls() {
    std::lock_guard lock(mu_);
    return polls_;
  }
  std::string last_auth() {
    std::lock_guard lock(mu_);
    return last_auth_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string body_;
  uint64_t version_ = 0;
  bool garbage_ = false;
  bool stopping_ = false;
  int report_status_ = 200;
  uint64_t polls_ = 0;
  std::string last_auth_;
  std::vector<Report> reports_;
  bool batch_enabled_ = false;
  std::map<std::string, int> item_status_;
  uint64_t batches_ = 0;
  uint64_t singles_ = 0;
  LoopbackServer server_;  // last: stopped and destroyed first
};

Properties props_for(const CoordinatorPeer& server, Properties extra = {}) {
  Properties p{{"hotkey.coordinator.url", server.url()}, {"hotkey.producer.id", "test-producer"},
               {"hotkey.poll.wait.ms", "200"},           {"hotkey.report.interval.ms", "50"},
               {"hotkey.backoff.initial.ms", "10"},      {"hotkey.backoff.max.ms", "50"},
               {"hotkey.http.timeout.ms", "1000"},       {"hotkey.hash", "murmur2"}};
  for (auto& [k, v] : extra) p[k] = v;
  return p;
}

RouteDecision send(Client& c, TopicId t, const std::string& key, int32_t partitions = 8) {
  return c.route(t, key.data(), key.size(), {}, partitions);
}

// One record each of `n` background keys u0, u1, ...
void send_background(Client& c, TopicId t, int n) {
  for (int i = 0; i < n; ++i) send(c, t, "u" + std::to_string(i));
}

// Sends `key` 20 records at a time until `done()` holds (or eventually() gives up): a surge.
template <class Done>
bool surge_until(Client& c, TopicId t, const std::string& key, Done done) {
  return eventually([&] {
    for (int i = 0; i < 20; ++i) send(c, t, key);
    return done();
  });
}

TEST(Client, WithoutCoordinatorRoutesColdAndStartsNothing) {
  Client c(Properties{{"hotkey.hash", "murmur2"}});
  TopicId t = c.topic("orders");
  RouteDecision d = send(c, t, "k");
  EXPECT_EQ(d.partition, partition_for(HashFamily::kMurmur2, "k", 8));
  EXPECT_FALSE(d.salted);
  EXPECT_EQ(c.stats().topics.at(0).cold, 1u);
}

TEST(Client, SubscriberPublishesKeepsLastGoodAndNeverRegresses) {
  CoordinatorPeer peer;
  CoordinatorPeer& server = peer;
  peer.serve(make_list("orders", 3, 8, HashFamily::kMurmur2, {"hot"}, 4));
  Client c(props_for(server, {{"hotkey.topics", "orders"}, {"hotkey.token", "tok"}}));
  TopicId t = c.topic("orders");
  ASSERT_TRUE(c.wait_for_version(t, 3, std::chrono::seconds(10)));
  EXPECT_TRUE(send(c, t, "hot").salted);
  EXPECT_EQ(peer.last_auth(), "Bearer tok");

  // Garbage, a list for another topic and an older version are all refused; v3 stays.
  uint64_t errors = c.stats().list_errors;
  peer.serve_garbage("{not json");
  ASSERT_TRUE(eventually([&] { return c.stats().list_errors >= errors + 2; }));
  peer.serve_garbage(list_to_json(make_list("other", 9, 8, HashFamily::kMurmur2, {"x"}, 2)));
  ASSERT_TRUE(eventually([&] { return c.stats().list_errors >= errors + 4; }));
  peer.serve_garbage(list_to_json(make_list("orders", 2, 8, HashFamily::kMurmur2, {"x"}, 2)));
  ASSERT_TRUE(eventually([&] { return c.stats().list_errors >= errors + 6; }));
  EXPECT_EQ(c.router().version(t), 3u);
  EXPECT_TRUE(send(c, t, "hot").salted);
  EXPECT_FALSE(send(c, t, "x").salted);

  peer.serve(make_list("orders", 4, 8, HashFamily::kMurmur2, {"x"}, 4));
  ASSERT_TRUE(c.wait_for_version(t, 4, std::chrono::seconds(10)));
  EXPECT_TRUE(send(c, t, "x").salted);
  EXPECT_FALSE(send(c, t, "hot").salted);
  EXPECT_EQ(c.stats().list_updates, 2u);
}

TEST(Client, CoordinatorDownKeepsRoutingWithTheLastList) {
  auto peer = std::make_unique<CoordinatorPeer>();
  peer->serve(make_list("orders", 1, 8, HashFamily::kMurmur2, {"hot"}, 4));
  Client c(props_for(*peer));
  TopicId t = c.topic("orders");
  ASSERT_TRUE(c.wait_for_version(t, 1, std::chrono::seconds(10)));
  peer.reset();
  uint64_t errors = c.stats().list_errors;
  ASSERT_TRUE(eventually([&] { return c.stats().list_errors > errors + 2; }));
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(send(c, t, "hot").salted);
  EXPECT_FALSE(c.router().plain(t));  // default policy: keep
}

TEST(Client, ExpiredListFallsBackToPlainUnderPolicyPlainAndRecovers) {
  // The client talks to a fixed address; a relay in front of the peer lets the test take the
  // coordinator away and bring it back without the port changing.
  auto peer = std::make_unique<CoordinatorPeer>();
  HotKeyList list = make_list("orders", 1, 8, HashFamily::kMurmur2, {"hot"}, 4);
  peer->serve(list);
  std::atomic<bool> up{true};
  std::string upstream = peer->url();
  LoopbackServer relay;
  relay.server().Get("/v1/hotkeys", [&](const httplib::Request& req, httplib::Response& res) {
    if (!up.load()) {
      res.status = 503;
      return;
    }
    httplib::Client cli(upstream);
    auto r = cli.Get(req.target);
    if (!r) {
      res.status = 502;
      return;
    }
    res.status = r->status;
    res.body = r->body;
  });
  Client c(Properties{{"hotkey.coordinator.url", relay.url()},
                      {"hotkey.poll.wait.ms", "100"},
                      {"hotkey.backoff.initial.ms", "10"},
                      {"hotkey.backoff.max.ms", "50"},
                      {"hotkey.hash", "murmur2"},
                      {"hotkey.list.ttl.ms", "200"},
                      {"hotkey.list.expired.policy", "plain"}});
  TopicId t = c.topic("orders");
  ASSERT_TRUE(c.wait_for_version(t, 1, std::chrono::seconds(10)));
  up.store(false);
  ASSERT_TRUE(eventually([&] { return c.router().plain(t); }));
  EXPECT_FALSE(send(c, t, "hot").salted);
  EXPECT_EQ(c.router().version(t), 1u);

  up.store(true);
  ASSERT_TRUE(eventually([&] { return !c.router().plain(t); }));
  EXPECT_TRUE(send(c, t, "hot").salted);
}

TEST(Client, ReporterShipsWindowsWithTotalsPartitionsAndSketch) {
  CoordinatorPeer peer;
  CoordinatorPeer& server = peer;
  // Surges off: "hot" is 2/3 of the window, a surge, and the reporter woken by it could ship
  // part of the window before report_now() (seen under TSan on a loaded machine).
  Client c(props_for(server, {{"hotkey.token", "tok"},
                              {"hotkey.report.interval.ms", "60000"},
                              {"hotkey.surge.interval.ms", "0"}}));
  TopicId t = c.topic("orders");
  for (int i = 0; i < 300; ++i) send(c, t, i % 3 == 0 ? "k" + std::to_string(i) : "hot");
  c.route(t, nullptr, 0, {}, 8);
  c.report_now();
  auto reports = peer.reports();
  ASSERT_EQ(reports.size(), 1u);
  const Report& r = reports[0];
  EXPECT_EQ(r.producer, "test-producer");
  EXPECT_EQ(r.topic, "orders");
  EXPECT_EQ(r.partitions, 8);
  EXPECT_EQ(r.hash, HashFamily::kMurmur2);
  EXPECT_EQ(r.total, 300u);
  EXPECT_EQ(r.sketch_total, 300u);
  EXPECT_EQ(r.seq, 1u);
  uint64_t sum = 0;
  for (uint64_t x : r.partition_counts) sum += x;
  EXPECT_EQ(sum, 300u);
  EXPECT_GE(r.partition_counts.at(partition_for(HashFamily::kMurmur2, "hot", 8)), 200u);
  ASSERT_FALSE(r.items.empty());
  EXPECT_EQ(r.items[0].key, "hot");
  EXPECT_EQ(r.items[0].count, 200u);
  EXPECT_EQ(peer.last_auth(), "Bearer tok");
  EXPECT_EQ(c.stats().reports_sent, 1u);

  // An empty window sends nothing.
  c.report_now();
  EXPECT_EQ(peer.reports().size(), 1u);
}

// Issue #14 part 3: the default hotkey.sample.rate=auto samples a busy topic's next window at
// about capacity^2/4 records and the report says the realized rate, so the coordinator's
// 1/sample_rate scaling gives the key's records; hotkey.sample.rate=1 samples everything.
TEST(Client, ReportsCarryTheAdaptiveSampleRate) {
  for (const bool automatic : {true, false}) {
    CoordinatorPeer peer;
    Properties extra{{"hotkey.report.interval.ms", "60000"}, {"hotkey.surge.interval.ms", "0"}};
    if (!automatic) extra["hotkey.sample.rate"] = "1";
    Client c(props_for(peer, extra));
    TopicId t = c.topic("orders");
    for (int window = 0; window < 2; ++window) {
      for (int i = 0; i < 200000; ++i) {
        send(c, t, i % 2 == 0 ? std::string("hot") : "k" + std::to_string(i % 1000));
      }
      c.report_now();
    }
    auto reports = peer.reports();
    ASSERT_EQ(reports.size(), 2u);
    // The first window was sampled at rate 1 either way (nothing was known before it).
    EXPECT_EQ(reports[0].sketch_total, 200000u);
    EXPECT_EQ(reports[0].sample_rate, 1.0);
    const Report& r = reports[1];
    EXPECT_EQ(r.total, 200000u);
    if (automatic) {
      // 256^2 / 4 = 16,384 of 200,000 expected (sd ~123).
      EXPECT_GT(r.sketch_total, 15000u);
      EXPECT_LT(r.sketch_total, 18000u);
      EXPECT_DOUBLE_EQ(r.sample_rate, static_cast<double>(r.sketch_total) / 200000.0);
    } else {
      EXPECT_EQ(r.sketch_total, 200000u);
      EXPECT_EQ(r.sample_rate, 1.0);
    }
    ASSERT_FALSE(r.items.empty());
    EXPECT_EQ(r.items[0].key, "hot");
    // Scaled as the coordinator scales it: "hot" sent 100,000 times (sd of the estimate ~1%).
    EXPECT_NEAR(static_cast<double>(r.items[0].count) / r.sample_rate, 100000.0, 5000.0);
  }
}

TEST(Client, ReporterBacksOffAndDropsInsteadOfQueueing) {
  CoordinatorPeer peer;
  CoordinatorPeer& server = peer;
  peer.set_report_status(503);
  Client c(props_for(server, {{"hotkey.report.interval.ms", "10"},
                              {"hotkey.report.queue.max", "2"},
                              {"hotkey.backoff.initial.ms", "400"},
                              {"hotkey.backoff.max.ms", "400"}}));
  TopicId t = c.topic("orders");
  // Keep every window non-empty while the coordinator fails.
  ASSERT_TRUE(eventually([&] {
    send(c, t, "k");
    return c.stats().reports_dropped >= 3 && c.stats().reports_failed >= 1;
  }));
  EXPECT_EQ(c.stats().reports_sent, 0u);
  // Back up: the queued (at most 2) reports and new ones get through.
  peer.set_report_status(200);
  ASSERT_TRUE(eventually([&] {
    send(c, t, "k");
    return c.stats().reports_sent >= 2;
  }));
}

// Issue #14: the queue bound used to be one shared queue trimmed inside the per-topic loop, so
// a client with more topics than hotkey.report.queue.max lost the first topics' reports every
// round, healthy coordinator or not.
TEST(Client, EveryTopicIsReportedEachRoundWhateverTheQueueBound) {
  CoordinatorPeer peer;
  Client c(
      props_for(peer, {{"hotkey.report.interval.ms", "60000"}, {"hotkey.report.queue.max", "2"}}));
  constexpr int kTopics = 8;
  std::vector<TopicId> ids;
  for (int i = 0; i < kTopics; ++i) ids.push_back(c.topic("t" + std::to_string(i)));
  for (int round = 0; round < 3; ++round) {
    for (TopicId id : ids) send(c, id, "k");
    c.report_now();
  }
  std::map<std::string, int> per_topic;
  for (const auto& r : peer.reports()) ++per_topic[r.topic];
  for (int i = 0; i < kTopics; ++i) EXPECT_EQ(per_topic["t" + std::to_string(i)], 3) << i;
  EXPECT_EQ(c.stats().reports_dropped, 0u);
  EXPECT_EQ(c.stats().reports_sent, 3u * kTopics);
}

// Under an outage each topic keeps its own newest hotkey.report.queue.max reports: the oldest
// of that topic is dropped and counted, per topic and in total.
TEST(Client, QueueBoundIsPerTopicAndDropsThatTopicsOldest) {
  CoordinatorPeer peer;
  peer.set_report_status(503);
  Client c(props_for(peer, {{"hotkey.report.interval.ms", "60000"},
                            {"hotkey.report.queue.max", "2"},
                            {"hotkey.backoff.initial.ms", "60000"},
                            {"hotkey.backoff.max.ms", "60000"}}));
  std::vector<TopicId> ids = {c.topic("a"), c.topic("b"), c.topic("c")};
  // Five rounds while failing (report_now sends even during the backoff); topic "c" only has
  // records in the first round.
  for (int round = 0; round < 5; ++round) {
    for (TopicId id : ids) {
      if (id != ids[2] || round == 0) send(c, id, "k");
    }
    c.report_now();
  }
  ClientStats s = c.stats();
  EXPECT_EQ(s.reports_sent, 0u);
  EXPECT_EQ(s.reports_dropped, 6u);  // a and b: 5 built, 2 kept, 3 dropped each
  ASSERT_EQ(s.topics.size(), 3u);
  EXPECT_EQ(s.topics[0].reports_dropped, 3u);
  EXPECT_EQ(s.topics[1].reports_dropped, 3u);
  EXPECT_EQ(s.topics[2].reports_dropped, 0u);
  peer.set_report_status(200);
  c.report_now();
  std::map<std::string, std::vector<uint64_t>> seqs;  // topic -> report seqs, in arrival order
  for (const auto& r : peer.reports()) seqs[r.topic].push_back(r.seq);
  // Seqs are given a, b, c per round: a and b kept rounds 4 and 5, c its one report of round 1.
  EXPECT_EQ(seqs["a"], (std::vector<uint64_t>{8, 10}));
  EXPECT_EQ(seqs["b"], (std::vector<uint64_t>{9, 11}));
  EXPECT_EQ(seqs["c"], (std::vector<uint64_t>{3}));
  EXPECT_EQ(c.stats().reports_sent, 5u);
}

// Issue #14: one request per round for all topics, with per-report results.
TEST(Client, OneBatchRequestPerRoundWithPerReportResults) {
  CoordinatorPeer peer;
  peer.enable_batch();
  peer.set_item_status("t1", 400);  // invalid: dropped, not retried
  peer.set_item_status("t2", 503);  // not taken this time: retried next round
  // A generous HTTP timeout: on a loaded host the peer's answer can take over a second, and a
  // timed-out batch counts nothing as sent although the peer took it (seen as a flake).
  Client c(props_for(
      peer, {{"hotkey.report.interval.ms", "60000"}, {"hotkey.http.timeout.ms", "10000"}}));
  constexpr int kTopics = 8;
  std::vector<TopicId> ids;
  for (int i = 0; i < kTopics; ++i) ids.push_back(c.topic("t" + std::to_string(i)));
  for (TopicId id : ids) send(c, id, "k");
  c.report_now();
  EXPECT_EQ(peer.batches(), 1u);
  EXPECT_EQ(peer.singles(), 0u);
  EXPECT_EQ(peer.reports().size(), kTopics - 2u);
  ClientStats s = c.stats();
  EXPECT_EQ(s.reports_sent, kTopics - 2u);
  EXPECT_EQ(s.reports_rejected, 1u);
  EXPECT_EQ(s.reports_failed, 1u);
  // t2's report is still queued; once taken it arrives with the next round's.
  peer.set_item_status("t2", 200);
  send(c, ids[2], "k");
  c.report_now();
  EXPECT_EQ(peer.batches(), 2u);
  size_t t2 = 0;
  for (const auto& r : peer.reports()) t2 += r.topic == "t2";
  EXPECT_EQ(t2, 2u);
  EXPECT_EQ(c.stats().reports_sent, kTopics - 2u + 2u);
}

// A coordinator without the batch form (404) gets single reports, the new client works.
TEST(Client, FallsBackToSingleReportsWithoutTheBatchForm) {
  CoordinatorPeer peer;  // batch not enabled: 404
  Client c(props_for(
      peer, {{"hotkey.report.interval.ms", "60000"}, {"hotkey.http.timeout.ms", "10000"}}));
  std::vector<TopicId> ids = {c.topic("a"), c.topic("b"), c.topic("c")};
  for (int round = 0; round < 2; ++round) {
    for (TopicId id : ids) send(c, id, "k");
    c.report_now();
  }
  EXPECT_EQ(peer.singles(), 6u);
  EXPECT_EQ(peer.reports().size(), 6u);
  EXPECT_EQ(c.stats().reports_sent, 6u);
  EXPECT_EQ(c.stats().reports_failed, 0u);
}

TEST(Client, RejectedReportsAreNotRetried) {
  CoordinatorPeer peer;
  CoordinatorPeer& server = peer;
  peer.set_report_status(400);
  Client c(props_for(server, {{"hotkey.report.interval.ms", "60000"}}));
  TopicId t = c.topic("orders");
  send(c, t, "k");
  c.report_now();
  EXPECT_EQ(c.stats().reports_rejected, 1u);
  EXPECT_EQ(c.stats().reports_failed, 0u);
}

// Issue #14: a key that surges is reported at once, not at the next report interval, so the
// coordinator's triggered plan runs on it; one hotkey.surge.interval.ms later a follow-up
// report carries what came since, where the key's share is no longer diluted by the round
// before the surge. Then the key is muted.
TEST(Client, SurgingKeySendsAnEarlyReportAndOneFollowUp) {
  CoordinatorPeer peer;
  peer.enable_batch();
  Client c(props_for(peer, {{"hotkey.report.interval.ms", "60000"}}));
  TopicId t = c.topic("orders");
  send_background(c, t, 1000);
  ASSERT_TRUE(surge_until(c, t, "hot", [&] { return !peer.reports().empty(); }));
  std::vector<Report> reports = peer.reports();
  ASSERT_EQ(reports.size(), 1u);
  ASSERT_FALSE(reports[0].items.empty());
  EXPECT_EQ(reports[0].items[0].key, "hot");
  EXPECT_GE(reports[0].total, 1000u);
  // The follow-up: only what was sent since the early report, nearly all of it the hot key.
  for (int i = 0; i < 500; ++i) send(c, t, "hot");
  ASSERT_TRUE(eventually([&] { return peer.reports().size() == 2; }));
  const Report follow_up = peer.reports()[1];
  ASSERT_FALSE(follow_up.items.empty());
  EXPECT_EQ(follow_up.items[0].key, "hot");
  EXPECT_LT(follow_up.total, 1000u);
  EXPECT_GE(static_cast<double>(follow_up.items[0].count) / follow_up.sample_rate,
            0.9 * static_cast<double>(follow_up.total));
  EXPECT_EQ(c.stats().reports_surge, 2u);
  ASSERT_TRUE(eventually([&] { return c.stats().reports_sent == 2; }));
  // The key is muted after its early report: more of it sends nothing more early.
  for (int i = 0; i < 2000; ++i) send(c, t, "hot");
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(c.stats().reports_surge, 2u);
  // Another key surging is reported (hotkey.surge.interval.ms, 100 ms, has passed).
  ASSERT_TRUE(surge_until(c, t, "next", [&] { return c.stats().reports_surge >= 3; }));
  ASSERT_TRUE(eventually([&] { return peer.reports().size() >= 3; }));
  const Report r = peer.reports()[2];
  EXPECT_TRUE(std::any_of(r.items.begin(), r.items.end(), [](const ReportItem& item) {
    return item.key == "next" && item.count >= 32;
  }));
}

// Keys on the list (salted) are no surge; hotkey.surge.interval.ms=0 turns surges off; within
// hotkey.surge.interval.ms a topic sends at most one early report, whatever surges.
TEST(Client, SurgeReportsSkipListedKeysAndAreRateLimited) {
  CoordinatorPeer peer;
  peer.serve(make_list("orders", 3, 8, HashFamily::kMurmur2, {"listed"}, 4));
  {
    Client c(props_for(
        peer, {{"hotkey.report.interval.ms", "60000"}, {"hotkey.surge.interval.ms", "600000"}}));
    TopicId t = c.topic("orders");
    ASSERT_TRUE(c.wait_for_version(t, 3, std::chrono::seconds(10)));
    send_background(c, t, 100);
    for (int round = 0; round < 10; ++round) {
      for (int i = 0; i < 200; ++i) EXPECT_TRUE(send(c, t, "listed").salted);
      std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_EQ(c.stats().reports_surge, 0u);
    EXPECT_TRUE(peer.reports().empty());
    // An unlisted key surging is: the control for the above.
    ASSERT_TRUE(surge_until(c, t, "a", [&] {
      return c.stats().reports_surge == 1 && peer.reports().size() == 1;
    }));
    // Another key surges within hotkey.surge.interval.ms: no second early report.
    for (int round = 0; round < 20; ++round) {
      for (int i = 0; i < 200; ++i) send(c, t, "b");
      std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_EQ(c.stats().reports_surge, 1u);
    EXPECT_EQ(peer.reports().size(), 1u);
  }
  {
    Client c(props_for(
        peer, {{"hotkey.report.interval.ms", "60000"}, {"hotkey.surge.interval.ms", "0"}}));
    TopicId t = c.topic("orders");
    for (int round = 0; round < 20; ++round) {
      for (int i = 0; i < 200; ++i) send(c, t, "a");
      std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_EQ(c.stats().reports_surge, 0u);
    EXPECT_EQ(peer.reports().size(), 1u);
  }
}

// The voluntary context switches of this process's thread named `name` (-1: no such thread).
long thread_switches(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string n;
    if (!std::getline(comm, n) || n != name) continue;
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::stol(line.substr(24));
    }
  }
  return -1;
}

// An idle reporter sleeps until its next deadline: the sampler that notices a surge wakes it,
// so it does not poll for surges (it used to wake every 10 ms, about 2.4 ms of CPU a second
// per producer). Counted in wake-ups, which a slow machine cannot raise.
TEST(Client, IdleReporterSleepsAndASurgeWakesIt) {
  CoordinatorPeer peer;
  peer.enable_batch();
  Client c(props_for(peer, {{"hotkey.report.interval.ms", "60000"}}));
  TopicId t = c.topic("orders");
  send_background(c, t, 1000);
  // The reporter names itself once it runs: on a loaded machine that can be after this point.
  ASSERT_TRUE(eventually([] { return thread_switches("hotkey-reporter") >= 0; }))
      << "no thread named hotkey-reporter";
  const long before = thread_switches("hotkey-reporter");
  std::this_thread::sleep_for(milliseconds(1000));
  EXPECT_LE(thread_switches("hotkey-reporter") - before, 10);
  // Woken, it sends the early report at once (the next round is a minute away).
  ASSERT_TRUE(surge_until(c, t, "hot", [&] { return !peer.reports().empty(); }));
  EXPECT_EQ(c.stats().reports_surge, 1u);
}

}  // namespace
}  // namespace hotkey::client
