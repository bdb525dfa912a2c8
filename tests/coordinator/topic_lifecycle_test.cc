// Issue #17 (black-box probe), the topic lifecycle and its budgets over real loopback HTTP and
// a real RocksDB store: a refused operator call changes nothing (item 8), pins count against
// max_hot_keys (item 11), idle topics expire and operators delete topics (item 7), and the
// partitions tracked are bounded (item 6).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

using nlohmann::json;
const httplib::Headers kOperator{{"Authorization", "Bearer alice-operator-token"}};

json body_of(const httplib::Result& r) {
  if (!r) return json();
  json j = json::parse(r->body, nullptr, false);
  return j.is_discarded() ? json() : j;
}

std::set<std::string> topic_names(httplib::Client& c) {
  std::set<std::string> out;
  auto r = c.Get("/v1/topics");
  EXPECT_TRUE(r && r->status == 200);
  const json doc = body_of(r);
  for (const auto& t : doc["topics"]) out.insert(t["topic"].get<std::string>());
  return out;
}

// Every /metrics line of a per-topic series (name{topic="..."} value), sorted.
std::set<std::string> topic_series(httplib::Client& c) {
  std::set<std::string> out;
  auto r = c.Get("/metrics");
  EXPECT_TRUE(r && r->status == 200);
  if (!r) return out;
  size_t pos = 0;
  while (pos < r->body.size()) {
    size_t end = r->body.find('\n', pos);
    if (end == std::string::npos) end = r->body.size();
    const std::string line = r->body.substr(pos, end - pos);
    if (!line.starts_with("#") && line.find("topic=\"") != std::string::npos) out.insert(line);
    pos = end + 1;
  }
  return out;
}

httplib::Result pin(httplib::Client& c, const std::string& topic, const std::string& key) {
  return c.Post("/v1/topics/" + topic + "/pins", kOperator,
                json{{"key", key}, {"reason", "test"}}.dump(), "application/json");
}

int post_report(httplib::Client& c, const Report& r) {
  auto res = c.Post("/v1/reports", report_to_json(r), "application/json");
  return res ? res->status : -1;
}

// Issue #17 item 8: an unpin or allow answered 404 created the topic (a max_topics slot and its
// metric series). Refused operator calls of every kind leave topics, series and store as they
// were, and the slot stays free for a real topic.
TEST(TopicLifecycle, RefusedOperatorCallsCreateNoTopicNoSeriesAndNoRecord) {
  CoordinatorConfig cfg = test_config();
  cfg.max_topics = 2;
  Harness h(cfg, /*http=*/true);
  auto c = h.client();
  ASSERT_EQ(post_report(*c, make_report("p", "orders", 8, 1, {{"a", 5}, {"b", 3}})), 200);
  const std::set<std::string> topics_before = topic_names(*c);
  const std::set<std::string> series_before = topic_series(*c);
  ASSERT_EQ(topics_before, std::set<std::string>{"orders"});
  ASSERT_FALSE(series_before.empty());

  for (const char* path : {"/v1/topics/ghost/pins?key=x", "/v1/topics/ghost/denies?key=x",
                           "/v1/topics/ghost/pins?key_b64=eA%3D%3D", "/v1/topics/orders/pins?key=x",
                           "/v1/topics/orders/denies?key=x"}) {
    auto r = c->Delete(path, kOperator);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path << " " << r->body;
    EXPECT_EQ(body_of(r)["reason"], "not_found") << path << " " << r->body;
    EXPECT_TRUE(body_of(r)["error"].is_string()) << r->body;
  }
  // Refused before the coordinator: bad input, no token, bad key.
  auto no_reason =
      c->Post("/v1/topics/ghost/pins", kOperator, R"({"key":"x"})", "application/json");
  ASSERT_TRUE(no_reason);
  EXPECT_EQ(no_reason->status, 400);
  auto no_token =
      c->Post("/v1/topics/ghost/denies", R"({"key":"x","reason":"r"})", "application/json");
  ASSERT_TRUE(no_token);
  EXPECT_EQ(no_token->status, 401);
  auto no_key = c->Delete("/v1/topics/ghost/pins", kOperator);
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 400);

  EXPECT_EQ(topic_names(*c), topics_before);
  EXPECT_EQ(topic_series(*c), series_before);
  auto ghost = c->Get("/v1/topics/ghost");
  ASSERT_TRUE(ghost);
  EXPECT_EQ(ghost->status, 404);
  EXPECT_TRUE(h.coord().audit(10).empty());

  // The slot is still free (max_topics = 2): a real topic takes it, a third is refused.
  ASSERT_EQ(post_report(*c, make_report("p", "payments", 8, 1, {{"a", 5}})), 200);
  auto third = pin(*c, "ghost", "x");
  ASSERT_TRUE(third);
  EXPECT_EQ(third->status, 429) << third->body;
  EXPECT_EQ(body_of(third)["reason"], "too_many_topics") << third->body;
  EXPECT_EQ(topic_names(*c), (std::set<std::string>{"orders", "payments"}));

  // Nothing of ghost reached the store.
  h.restart();
  c = h.client();
  EXPECT_FALSE(topic_names(*c).contains("ghost"));
  EXPECT_TRUE(h.coord().audit(10).empty());
}

// Issue #17 item 11: 602 pins produced a list of 602 keys although max_hot_keys (pins
// included) was 64. A pin beyond the limit is refused with 409 too_many_pins naming it;
// replacing a pin fits; detected keys get the room pins leave.
TEST(TopicLifecycle, PinsCountAgainstMaxHotKeys) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.max_hot_keys = 3;
  Harness h(cfg, /*http=*/true);
  auto c = h.client();
  // Two hot keys the detector lists once there is room.
  std::map<std::string, uint64_t> counts{{"hot-a", 4000}, {"hot-b", 3000}};
  add_tail(counts, 2000, 500, 7);
  ASSERT_EQ(post_report(*c, make_report("p", "orders", 8, 1, counts)), 200);
  for (const std::string key : {"pin-1", "pin-2", "pin-3"}) {
    auto r = pin(*c, "orders", key);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  }
  auto refused = pin(*c, "orders", "pin-4");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 409) << refused->body;
  EXPECT_EQ(body_of(refused)["reason"], "too_many_pins") << refused->body;
  EXPECT_NE(body_of(refused)["error"].get<std::string>().find("max_hot_keys=3"), std::string::npos)
      << refused->body;
  auto again = pin(*c, "orders", "pin-2");  // replaces: the count stays 3
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200) << again->body;
  h.coord().tick();
  HotKeyList list = h.list("orders");
  EXPECT_EQ(list.keys.size(), 3u) << list_to_json(list);
  EXPECT_EQ(find(list, "pin-4"), nullptr);
  EXPECT_EQ(h.coord().pins("orders")->size(), 3u);

  // Unpinning two leaves room for the detected keys.
  for (const char* key : {"pin-1", "pin-2"}) {
    auto r = c->Delete(std::string("/v1/topics/orders/pins?key=") + key, kOperator);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  }
  for (uint64_t seq = 2; seq <= 4; ++seq) {
    h.clock().advance_ms(1000);
    ASSERT_EQ(post_report(*c, make_report("p", "orders", 8, seq, counts)), 200);
    h.coord().tick();
  }
  list = h.list("orders");
  EXPECT_LE(list.keys.size(), 3u) << list_to_json(list);
  EXPECT_NE(find(list, "pin-3"), nullptr) << list_to_json(list);
  EXPECT_NE(find(list, "hot-a"), nullptr) << list_to_json(list);
  // Pins take room from detected keys up to the limit, never beyond it.
  auto full = pin(*c, "orders", "pin-5");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 200) << full->body;  // two pins now: fits
  auto over = pin(*c, "orders", "pin-6");
  ASSERT_TRUE(over);
  EXPECT_EQ(over->status, 200) << over->body;  // three pins: fits
  auto beyond = pin(*c, "orders", "pin-7");
  ASSERT_TRUE(beyond);
  EXPECT_EQ(beyond->status, 409) << beyond->body;
}

json list_of(httplib::Client& c, const std::string& topic) {
  auto r = c.Get("/v1/hotkeys?topic=" + topic);
  EXPECT_TRUE(r && r->status == 200);
  return body_of(r);
}

// Issue #17 item 7: topics that once had a list were persisted and held a max_topics slot
// forever (after a restart new topics still got 429). A topic without reports, pins and denies
// for topic_idle_ttl_ms is dropped from memory and store; DELETE /v1/topics/{t} drops one on
// an operator's word (audited). Either way the slot is free, also after a restart, and a topic
// of that name coming back never publishes a lower version.
TEST(TopicLifecycle, IdleTopicsExpireAndDeletedTopicsFreeTheirSlotAcrossRestarts) {
  CoordinatorConfig cfg = test_config();
  cfg.max_topics = 2;
  cfg.topic_idle_ttl_ms = 60000;
  Harness h(cfg, /*http=*/true);
  auto c = h.client();
  // "junk" gets a persisted list (version 2 after a pin and an unpin), then goes idle.
  ASSERT_EQ(post_report(*c, make_report("p", "junk", 8, 1, {{"a", 5}})), 200);
  ASSERT_EQ(pin(*c, "junk", "k")->status, 200);
  auto unpin = c->Delete("/v1/topics/junk/pins?key=k", kOperator);
  ASSERT_TRUE(unpin);
  ASSERT_EQ(unpin->status, 200);
  ASSERT_EQ(list_of(*c, "junk")["version"], 2);
  // "kept" holds a pin: never idle.
  ASSERT_EQ(pin(*c, "kept", "vip")->status, 200);
  ASSERT_EQ(post_report(*c, make_report("p", "fresh", 8, 1, {{"a", 5}})), 429);

  h.clock().advance_ms(30000);
  h.coord().tick();
  EXPECT_EQ(topic_names(*c), (std::set<std::string>{"junk", "kept"}));
  h.clock().advance_ms(31000);
  h.coord().tick();
  EXPECT_EQ(topic_names(*c), (std::set<std::string>{"kept"}));
  EXPECT_EQ(list_of(*c, "junk")["version"], 0);
  for (const auto& line : topic_series(*c)) EXPECT_EQ(line.find("junk"), std::string::npos);
  ASSERT_EQ(post_report(*c, make_report("p", "fresh", 8, 1, {{"a", 5}})), 200);

  // Across a restart: junk stays gone, its slot free; back, it publishes above version 2.
  h.restart();
  c = h.client();
  EXPECT_EQ(topic_names(*c), (std::set<std::string>{"kept"}));
  ASSERT_EQ(post_report(*c, make_report("p", "junk", 8, 1, {{"a", 5}})), 200);
  auto back = pin(*c, "junk", "k");
  ASSERT_TRUE(back);
  ASSERT_EQ(back->status, 200) << back->body;
  EXPECT_EQ(body_of(back)["version"], 3) << back->body;

  // DELETE: operator token, a reason, audited; 404 JSON when unknown.
  auto no_token = c->Delete("/v1/topics/kept?reason=cleanup");
  ASSERT_TRUE(no_token);
  EXPECT_EQ(no_token->status, 401);
  auto no_reason = c->Delete("/v1/topics/kept", kOperator);
  ASSERT_TRUE(no_reason);
  EXPECT_EQ(no_reason->status, 400) << no_reason->body;
  auto unknown = c->Delete("/v1/topics/nosuch?reason=cleanup", kOperator);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(body_of(unknown)["reason"], "not_found") << unknown->body;
  EXPECT_FALSE(topic_names(*c).contains("nosuch"));
  auto del = c->Delete("/v1/topics/kept?reason=junk%20topic", kOperator);
  ASSERT_TRUE(del);
  ASSERT_EQ(del->status, 200) << del->body;
  auto gone = c->Get("/v1/topics/kept");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
  const auto audit = h.coord().audit(1);
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(audit[0].action, "delete_topic");
  EXPECT_EQ(audit[0].topic, "kept");
  EXPECT_EQ(audit[0].who, "alice");
  EXPECT_NE(audit[0].detail.find("junk topic"), std::string::npos) << audit[0].detail;

  h.restart();
  c = h.client();
  EXPECT_EQ(topic_names(*c), (std::set<std::string>{"junk"}));
  EXPECT_FALSE(h.coord().pins("kept").has_value());
  ASSERT_EQ(post_report(*c, make_report("p", "other", 8, 1, {{"a", 5}})), 200);
  ASSERT_EQ(list_of(*c, "junk")["version"], 3);
}

// Issue #17 item 6: 100 reports to new topics with 100,000 partitions each took RSS from 24 to
// 880 MB. The partitions tracked over all topics are bounded by max_tracked_partitions: a report
// for a new topic, or one growing a topic, beyond it gets 429 too_many_partitions and creates
// nothing; a dropped topic gives its partitions back, also across a restart.
TEST(TopicLifecycle, TrackedPartitionsAreBounded) {
  CoordinatorConfig cfg = test_config();
  cfg.max_tracked_partitions = 100;
  Harness h(cfg, /*http=*/true);
  auto c = h.client();
  ASSERT_EQ(post_report(*c, make_report("p", "a", 60, 1, {{"k", 5}})), 200);
  auto refused = c->Post("/v1/reports", report_to_json(make_report("p", "b", 60, 1, {{"k", 5}})),
                         "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429) << refused->body;
  EXPECT_EQ(body_of(refused)["reason"], "too_many_partitions") << refused->body;
  EXPECT_NE(refused->body.find("max_tracked_partitions=100"), std::string::npos) << refused->body;
  EXPECT_EQ(topic_names(*c), std::set<std::string>{"a"});
  for (const auto& line : topic_series(*c)) EXPECT_EQ(line.find("\"b\""), std::string::npos);
  auto m = c->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("hotkey_reports_rejected_total{reason=\"too_many_partitions\"} 1"),
            std::string::npos);

  ASSERT_EQ(post_report(*c, make_report("p", "a", 80, 2, {{"k", 5}})), 200);  // grows: 80
  ASSERT_EQ(post_report(*c, make_report("p", "b", 20, 1, {{"k", 5}})), 200);  // 100 in all
  EXPECT_EQ(post_report(*c, make_report("p", "a", 81, 3, {{"k", 5}})), 429);  // 101
  EXPECT_EQ(h.coord().topic("a")->partitions, 80);

  // A pin persists "b" (20 partitions) across the restart; its budget counts again.
  ASSERT_EQ(pin(*c, "b", "x")->status, 200);
  h.restart();
  c = h.client();
  EXPECT_EQ(post_report(*c, make_report("q", "c", 81, 1, {{"k", 5}})), 429);
  ASSERT_EQ(post_report(*c, make_report("q", "c", 80, 1, {{"k", 5}})), 200);
  // Deleting "b" gives its 20 back.
  auto del = c->Delete("/v1/topics/b?reason=budget", kOperator);
  ASSERT_TRUE(del);
  ASSERT_EQ(del->status, 200) << del->body;
  EXPECT_EQ(post_report(*c, make_report("q", "d", 20, 1, {{"k", 5}})), 200);
}

}  // namespace
}  // namespace hotkey::coordinator::test
