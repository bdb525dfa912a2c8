// POST /v1/hotkeys/subscribe over real loopback HTTP (docs/API.md): one parked request per
// client for all its topics. Every topic's change is delivered, only the subscriptions holding
// a topic wake, a closed connection frees its waiter at once, topics come and go between
// requests and while the coordinator drops them, and every bad input is a 400 with a reason.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/eventually.h"
#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

using nlohmann::json;
using test_support::eventually;
const httplib::Headers kOperator{{"Authorization", "Bearer alice-operator-token"}};

json subscription(const std::vector<std::pair<std::string, uint64_t>>& topics, uint64_t wait_ms) {
  json t = json::array();
  for (const auto& [topic, since] : topics) t.push_back({{"topic", topic}, {"since", since}});
  return {{"topics", t}, {"wait_ms", wait_ms}};
}

httplib::Result subscribe(httplib::Client& c, const json& body) {
  return c.Post("/v1/hotkeys/subscribe", body.dump(), "application/json");
}

// topic -> version of the lists of a 200 answer.
std::vector<std::pair<std::string, uint64_t>> lists_of(const httplib::Result& r) {
  std::vector<std::pair<std::string, uint64_t>> out;
  if (!r || r->status != 200) {
    out.emplace_back(r ? "status " + std::to_string(r->status) + ": " + r->body : "no answer", 0);
    return out;
  }
  const json answer = json::parse(r->body);
  for (const json& l : answer.at("lists")) {
    out.emplace_back(l.at("topic").get<std::string>(), l.at("version").get<uint64_t>());
  }
  return out;
}

using Lists = std::vector<std::pair<std::string, uint64_t>>;

TEST(Subscription, AnswersEveryNewerTopicAtOnceAndParksOtherwise) {
  Harness h(test_config(), true);
  auto c = h.client();
  for (const char* t : {"a", "b", "c"}) post_report(*c, t);
  const uint64_t va = post_pin(*c, "a", "k1");
  const uint64_t vb = post_pin(*c, "b", "k1");
  const uint64_t vc = post_pin(*c, "c", "k1");

  // Nothing held: every topic with a list, in request order, at once; "d" has none.
  auto r = subscribe(*c, subscription({{"c", 0}, {"d", 0}, {"a", 0}, {"b", 0}}, 60000));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(lists_of(r), (Lists{{"c", vc}, {"a", va}, {"b", vb}}));
  // The documents are GET /v1/hotkeys's.
  EXPECT_EQ(json::parse(r->body)["lists"][1], json::parse(c->Get("/v1/hotkeys?topic=a")->body));

  // Only b is behind.
  r = subscribe(*c, subscription({{"a", va}, {"b", vb - 1}, {"c", vc}}, 60000));
  EXPECT_EQ(lists_of(r), (Lists{{"b", vb}}));

  // All current: nothing within the wait.
  r = subscribe(*c, subscription({{"a", va}, {"b", vb}, {"c", vc}}, 50));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body), json::parse(R"({"lists": []})"));

  // Parked on three topics; each change in turn is answered to the next request.
  uint64_t held[3] = {va, vb, vc};
  const char* names[3] = {"a", "b", "c"};
  for (int i : {2, 0, 1}) {
    auto sc = h.client();
    auto parked = std::async(std::launch::async, [&] {
      return subscribe(*sc, subscription({{"a", held[0]}, {"b", held[1]}, {"c", held[2]}}, 60000));
    });
    ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 1; }));
    held[i] = post_pin(*c, names[i], "k2");
    EXPECT_EQ(lists_of(parked.get()), (Lists{{names[i], held[i]}}));
  }
  EXPECT_EQ(h.coord().board().waiters(), 0u);
}

TEST(Subscription, AChangeWakesOnlyTheSubscriptionsHoldingItsTopic) {
  Harness h(test_config(), true);
  auto c = h.client();
  for (const char* t : {"a", "b", "c"}) post_report(*c, t);
  constexpr int kPerGroup = 20;
  std::atomic<int> ab_answered{0};
  std::vector<std::thread> ab;
  std::vector<std::unique_ptr<httplib::Client>> ab_clients;
  for (int i = 0; i < kPerGroup; ++i) ab_clients.push_back(h.client());
  for (int i = 0; i < kPerGroup; ++i) {
    ab.emplace_back([&, i] {
      auto r =
          subscribe(*ab_clients[static_cast<size_t>(i)], subscription({{"a", 0}, {"b", 0}}, 60000));
      if (r && r->status == 200 && !lists_of(r).empty()) ab_answered.fetch_add(1);
    });
  }
  std::vector<std::future<httplib::Result>> cs;
  std::vector<std::unique_ptr<httplib::Client>> c_clients;
  for (int i = 0; i < kPerGroup; ++i) c_clients.push_back(h.client());
  for (int i = 0; i < kPerGroup; ++i) {
    cs.push_back(std::async(std::launch::async, [&, i] {
      return subscribe(*c_clients[static_cast<size_t>(i)], subscription({{"c", 0}}, 60000));
    }));
  }
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 2 * kPerGroup; }));
  const uint64_t vc = post_pin(*c, "c", "k");
  for (auto& f : cs) EXPECT_EQ(lists_of(f.get()), (Lists{{"c", vc}}));
  // The a+b subscriptions are still parked.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(h.coord().board().waiters(), static_cast<uint32_t>(kPerGroup));
  EXPECT_EQ(ab_answered.load(), 0);
  const uint64_t vb = post_pin(*c, "b", "k");
  for (auto& t : ab) t.join();
  EXPECT_EQ(ab_answered.load(), kPerGroup);
  EXPECT_GE(vb, 1u);
}

// A client changing its topics closes the connection and subscribes again: the coordinator
// frees the old waiter at once (not after the 60 s wait), and the new set is what counts.
TEST(Subscription, TopicsAddedAndRemovedWhileParked) {
  Harness h(test_config(), true);
  auto c = h.client();
  for (const char* t : {"a", "b", "c"}) post_report(*c, t);
  auto old_client = h.client();
  auto old_parked = std::async(std::launch::async, [&] {
    return subscribe(*old_client, subscription({{"a", 0}, {"b", 0}}, 60000));
  });
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 1; }));
  old_client->stop();  // closes the socket under the parked request
  EXPECT_FALSE(old_parked.get());
  const auto closed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 0; }))
      << "the closed subscription's waiter was not freed";
  EXPECT_LT(std::chrono::steady_clock::now() - closed_at, std::chrono::seconds(5));

  // b removed, c added.
  auto sc = h.client();
  auto parked = std::async(std::launch::async, [&] {
    return subscribe(*sc, subscription({{"a", 0}, {"c", 0}}, 60000));
  });
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 1; }));
  post_pin(*c, "b", "k");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(h.coord().board().waiters(), 1u) << "a change of a topic not held woke the request";
  const uint64_t vc = post_pin(*c, "c", "k");
  EXPECT_EQ(lists_of(parked.get()), (Lists{{"c", vc}}));
}

// A topic dropped by an operator while a subscription holds it stays held: its recreation
// publishes a higher version (the counter is kept), which is answered.
TEST(Subscription, ATopicDroppedWhileParkedIsAnsweredWhenRecreated) {
  Harness h(test_config(), true);
  auto c = h.client();
  post_report(*c, "a");
  const uint64_t v1 = post_pin(*c, "a", "k");
  auto sc = h.client();
  auto parked = std::async(std::launch::async, [&] {
    return subscribe(*sc, subscription({{"a", v1}, {"z", 0}}, 60000));
  });
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 1; }));
  auto r = c->Delete("/v1/topics/a?reason=test", kOperator);
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(h.coord().board().waiters(), 1u);
  post_report(*c, "a");
  const uint64_t v2 = post_pin(*c, "a", "k");
  ASSERT_GT(v2, v1);
  EXPECT_EQ(lists_of(parked.get()), (Lists{{"a", v2}}));
}

TEST(Subscription, ShutdownReleasesParkedSubscriptionsWithNoLists) {
  Harness h(test_config(), true);
  auto sc = h.client();
  auto parked = std::async(std::launch::async, [&] {
    return subscribe(*sc, subscription({{"a", 0}}, 60000));
  });
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 1; }));
  const auto start = std::chrono::steady_clock::now();
  h.shutdown();
  auto r = parked.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, R"({"lists":[]})");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(Subscription, MaxWaitersCountsASubscriptionOnceAndRefusesBeyond) {
  CoordinatorConfig cfg = test_config();
  cfg.max_waiters = 2;
  Harness h(cfg, true);
  std::vector<std::unique_ptr<httplib::Client>> clients;
  std::vector<std::future<httplib::Result>> parked;
  for (int i = 0; i < 2; ++i) {
    clients.push_back(h.client());
    httplib::Client* sc = clients.back().get();
    parked.push_back(std::async(std::launch::async, [sc] {
      return subscribe(*sc, subscription({{"a", 0}, {"b", 0}, {"c", 0}, {"d", 0}}, 60000));
    }));
  }
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 2; }));
  auto c = h.client();
  auto r = subscribe(*c, subscription({{"a", 0}}, 60000));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_NE(json::parse(r->body)["error"].get<std::string>().find("max_waiters"),
            std::string::npos);
  h.shutdown();
  for (auto& f : parked) EXPECT_EQ(f.get()->status, 200);
}

TEST(Subscription, BadInputIsA400WithAReason) {
  Harness h(test_config(), true);
  auto c = h.client();
  json too_many = json::array();
  for (int i = 0; i < 1025; ++i)
    too_many.push_back({{"topic", "t" + std::to_string(i)}, {"since", 0}});
  json max_ok = too_many;
  max_ok.erase(max_ok.size() - 1);
  struct Case {
    std::string body;
    std::string says;  // part of the error message
  };
  const std::vector<Case> cases = {
      {R"({"topics": [{"topic": "bad topic!", "since": 0}]})", "topics[0].topic"},
      {R"({"topics": [{"topic": "", "since": 0}]})", "topics[0].topic"},
      {R"({"topics": [{"topic": ")" + std::string(250, 'x') + R"(", "since": 0}]})",
       "topics[0].topic"},
      {R"({"topics": [{"topic": 7, "since": 0}]})", "topics[0].topic"},
      {R"({"topics": [{"since": 0}]})", "topics[0].topic"},
      {json{{"topics", too_many}}.dump(), "at most 1024 topics"},
      {R"({"topics": []})", "non-empty array"},
      {R"({"topics": {"a": 0}})", "non-empty array"},
      {R"({"wait_ms": 10})", "non-empty array"},
      {R"({"topics": [{"topic": "a", "since": -1}]})", "topics[0].since"},
      {R"({"topics": [{"topic": "a", "since": 1.5}]})", "topics[0].since"},
      {R"({"topics": [{"topic": "a", "since": "3"}]})", "topics[0].since"},
      {R"({"topics": [{"topic": "a", "since": 18446744073709551616}]})", "topics[0].since"},
      {R"({"topics": [{"topic": "a"}]})", "topics[0].since"},
      {R"({"topics": [{"topic": "a", "since": 0}, {"topic": "a", "since": 2}]})", "named twice"},
      {R"({"topics": [{"topic": "a", "since": 0, "v": 1}]})", "unknown member \"v\""},
      {R"({"topics": [{"topic": "a", "since": 0}], "wait_ms": -5})", "wait_ms"},
      {R"({"topics": [{"topic": "a", "since": 0}], "wait_ms": "10"})", "wait_ms"},
      {R"({"topics": [{"topic": "a", "since": 0}], "wait_ms": 0.5})", "wait_ms"},
      {R"({"topics": [{"topic": "a", "since": 0}], "extra": true})", "unknown member \"extra\""},
      {R"({"topics": ["a"]})", "topics[0] must be an object"},
      {R"([1, 2])", "JSON object"},
      {R"({"topics": )", "not valid JSON"},
  };
  for (const Case& k : cases) {
    auto r = c->Post("/v1/hotkeys/subscribe", k.body, "application/json");
    ASSERT_TRUE(r) << k.body.substr(0, 80);
    EXPECT_EQ(r->status, 400) << k.body.substr(0, 80);
    std::string error;
    try {
      error = json::parse(r->body).at("error").get<std::string>();
    } catch (...) {
      error = "<no JSON error: " + r->body + ">";
    }
    EXPECT_NE(error.find(k.says), std::string::npos) << k.body.substr(0, 80) << " -> " << error;
  }
  auto r =
      c->Post("/v1/hotkeys/subscribe", R"({"topics": [{"topic": "a", "since": 0}]})", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415);
  // The largest set and the largest version are fine; nothing was created by the refusals.
  r = subscribe(*c, json{{"topics", max_ok}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = c->Post("/v1/hotkeys/subscribe",
              R"({"topics": [{"topic": "a", "since": 18446744073709551615}], "wait_ms": 0})",
              "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  // The refusals created no topic: "a" and the 1,024 were only waited on.
  EXPECT_EQ(json::parse(c->Get("/v1/topics")->body).dump(),
            json::parse(R"({"topics": []})").dump());
}

TEST(Subscription, ProducerTokenGuardsIt) {
  CoordinatorConfig cfg = test_config();
  cfg.producer_token = "producer-secret";
  Harness h(cfg, true);
  auto c = h.client();
  const std::string body = subscription({{"a", 0}}, 0).dump();
  auto r = c->Post("/v1/hotkeys/subscribe", body, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = c->Post("/v1/hotkeys/subscribe", {{"Authorization", "Bearer producer-secret"}}, body,
              "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

}  // namespace
}  // namespace hotkey::coordinator::test
