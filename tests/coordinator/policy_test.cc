// Operator policies by key prefix (issue 26 item 5): never_salt, a prefix's own hot_fraction and
// max_salts, the longest prefix winning, an exact pin or deny winning over a prefix, the list's
// never_salt field, persistence across a restart, the audit log, and the HTTP calls with their
// refusals. Core tests drive a ManualClock over a real RocksDB store; HTTP tests run on loopback.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hotkey/api_model.h"
#include "hotkey/partitioner.h"
#include "policy_index.h"
#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

using nlohmann::json;
constexpr const char* kTopic = "orders";
const httplib::Headers kOperator{{"Authorization", "Bearer alice-operator-token"}};

// Sends one report per producer (routed with the published list), advances one epoch and ticks.
void round(Harness& h, int producers, int32_t partitions, uint64_t seq,
           const std::function<std::map<std::string, uint64_t>(int)>& counts) {
  HotKeyList list = h.list(kTopic);
  for (int p = 0; p < producers; ++p) {
    Report r = make_report("producer-" + std::to_string(p), kTopic, partitions, seq, counts(p),
                           256, &list);
    CallResult res = h.coord().ingest(std::move(r));
    ASSERT_TRUE(res.ok()) << res.error;
  }
  h.clock().advance_ms(1000);
  h.coord().tick();
}

// 1,000 records per report: `keys` (records each) and a tail of 200 keys (fewer than the
// sketch's capacity, so every count is exact).
std::function<std::map<std::string, uint64_t>(int)> traffic(std::map<std::string, uint64_t> keys) {
  return [keys](int p) {
    std::map<std::string, uint64_t> c = keys;
    uint64_t used = 0;
    for (const auto& [k, n] : keys) used += n;
    add_tail(c, 1000 - used, 200, 11u + static_cast<uint32_t>(p));
    return c;
  };
}

Policy never_salt(const std::string& prefix) {
  Policy p;
  p.prefix = prefix;
  p.never_salt = true;
  p.reason = "ordering";
  return p;
}

Policy own(const std::string& prefix, double hot_fraction, uint32_t max_salts) {
  Policy p;
  p.prefix = prefix;
  p.hot_fraction = hot_fraction;
  p.max_salts = max_salts;
  p.reason = "tuning";
  return p;
}

// Threshold detection only (the balance-driven selection has its own test below).
CoordinatorConfig detection_only() {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.balance_target = 1000;
  return cfg;
}

TEST(Policies, NeverSaltKeepsAFortyPercentKeyOffTheListAndTheListSaysWhy) {
  Harness h(detection_only());
  auto load = traffic({{"account:1", 400}, {"other", 200}});
  uint64_t seq = 1;
  round(h, 3, 8, seq++, load);
  ASSERT_NE(find(h.list(kTopic), "account:1"), nullptr) << "the key is hot without a policy";
  const uint64_t before = h.list(kTopic).version;

  CallResult r = h.coord().set_policy(kTopic, never_salt("account:"), "alice");
  ASSERT_TRUE(r.ok()) << r.error;
  HotKeyList list = h.list(kTopic);
  EXPECT_GT(list.version, before);
  EXPECT_EQ(r.version, list.version);
  EXPECT_EQ(find(list, "account:1"), nullptr);
  EXPECT_EQ(list.never_salt, std::vector<std::string>{"account:"});
  EXPECT_NE(list_to_json(list).find(R"("never_salt":[{"key":"account:"}])"), std::string::npos)
      << list_to_json(list);
  EXPECT_NE(find(list, "other"), nullptr) << "a key outside the prefix keeps its salts";
  for (int i = 0; i < 5; ++i) {
    round(h, 3, 8, seq++, load);
    EXPECT_EQ(find(h.list(kTopic), "account:1"), nullptr) << "round " << i;
  }
  auto top = h.coord().top(kTopic, 3);
  ASSERT_TRUE(top.has_value());
  ASSERT_EQ((*top)[0].key, "account:1");
  EXPECT_TRUE((*top)[0].never_salt);
  EXPECT_FALSE((*top)[1].never_salt);

  // Removed: detected again, and the list no longer names the prefix.
  ASSERT_TRUE(h.coord().remove_policy(kTopic, "account:", "alice").ok());
  round(h, 3, 8, seq++, load);
  EXPECT_NE(find(h.list(kTopic), "account:1"), nullptr);
  EXPECT_TRUE(h.list(kTopic).never_salt.empty());
  EXPECT_EQ(h.coord().remove_policy(kTopic, "account:", "alice").status, Status::kNotFound);
}

TEST(Policies, BalanceSelectionLeavesANeverSaltKeysPartitionAlone) {
  // Default balance settings: the never_salt key's partition stays far above the average
  // whatever is salted, so salting the small keys homed there would cost their order for
  // nothing (the same rule as for a denied key).
  Harness h;
  const int32_t P = 8;
  auto load = traffic({{"account:1", 400}});
  ASSERT_TRUE(h.coord().set_policy(kTopic, never_salt("account:"), "alice").ok());
  for (uint64_t seq = 1; seq <= 8; ++seq) round(h, 3, P, seq, load);
  const int32_t home = partition_for(HashFamily::kMurmur2, "account:1", P);
  for (const auto& k : h.list(kTopic).keys) {
    EXPECT_NE(partition_for(HashFamily::kMurmur2, k.key, P), home)
        << k.key << " (" << to_string(k.source) << ") salted off the never_salt key's partition";
  }
  EXPECT_EQ(find(h.list(kTopic), "account:1"), nullptr);
}

TEST(Policies, APrefixHotFractionMovesTheThresholdForItsKeysOnly) {
  // 8 partitions, hot_fraction 0.5: a key is hot at 6.25%.
  Harness h(detection_only());
  ASSERT_TRUE(h.coord().set_policy(kTopic, own("vip:", 0.1, 0), "alice").ok());   // 1.25%
  ASSERT_TRUE(h.coord().set_policy(kTopic, own("bulk:", 4.0, 0), "alice").ok());  // 50%
  auto load = traffic({{"vip:a", 30}, {"std:a", 30}, {"bulk:x", 200}, {"plain", 200}});
  for (uint64_t seq = 1; seq <= 3; ++seq) round(h, 3, 8, seq, load);
  HotKeyList list = h.list(kTopic);
  const HotKey* vip = find(list, "vip:a");
  ASSERT_NE(vip, nullptr) << "3% is over the prefix's 1.25%: " << list_to_json(list);
  EXPECT_EQ(vip->source, KeySource::kDetected);
  EXPECT_EQ(find(list, "std:a"), nullptr) << "3% is under the topic's 6.25%";
  EXPECT_EQ(find(list, "bulk:x"), nullptr) << "20% is under the prefix's 50%";
  EXPECT_NE(find(list, "plain"), nullptr) << "20% is over the topic's 6.25%";
  EXPECT_TRUE(list.never_salt.empty());
}

TEST(Policies, MaxSaltsCapsTheSaltsOfThePrefixsKeys) {
  Harness h(detection_only());
  const int32_t P = 16;
  auto load = traffic({{"wide:k", 300}, {"free", 300}});
  uint64_t seq = 1;
  for (; seq <= 3; ++seq) round(h, 3, P, seq, load);
  ASSERT_NE(find(h.list(kTopic), "wide:k"), nullptr);
  ASSERT_GT(find(h.list(kTopic), "wide:k")->salts.size(), 2u) << "the topic's cap allows more";

  // Lowered below the published table: republished at once with at most 2 salts.
  const uint64_t before = h.list(kTopic).version;
  ASSERT_TRUE(h.coord().set_policy(kTopic, own("wide:", 0, 2), "alice").ok());
  EXPECT_GT(h.list(kTopic).version, before);
  for (int i = 0; i < 3; ++i) {
    round(h, 3, P, seq++, load);
    HotKeyList list = h.list(kTopic);
    ASSERT_NE(find(list, "wide:k"), nullptr);
    EXPECT_LE(find(list, "wide:k")->salts.size(), 2u);
    ASSERT_NE(find(list, "free"), nullptr);
    EXPECT_GT(find(list, "free")->salts.size(), 2u);
  }
}

TEST(Policies, TheLongestMatchingPrefixWins) {
  Harness h(detection_only());
  ASSERT_TRUE(h.coord().set_policy(kTopic, never_salt("acct:"), "alice").ok());
  ASSERT_TRUE(h.coord().set_policy(kTopic, own("acct:vip:", 0, 3), "alice").ok());
  ASSERT_TRUE(h.coord().set_policy(kTopic, own("acct:vip:x", 0, 1), "alice").ok());
  auto load = traffic({{"acct:vip:1", 300}, {"acct:2", 300}});
  for (uint64_t seq = 1; seq <= 3; ++seq) round(h, 3, 16, seq, load);
  HotKeyList list = h.list(kTopic);
  const HotKey* vip = find(list, "acct:vip:1");
  ASSERT_NE(vip, nullptr) << "acct:vip: is longer than the never_salt acct:";
  EXPECT_LE(vip->salts.size(), 3u);
  EXPECT_GT(vip->salts.size(), 1u) << "acct:vip:x does not match acct:vip:1";
  EXPECT_EQ(find(list, "acct:2"), nullptr);
  EXPECT_EQ(list.never_salt, std::vector<std::string>{"acct:"});
}

TEST(Policies, AnExactPinBeatsANeverSaltPrefix) {
  Harness h(detection_only());
  ASSERT_TRUE(h.coord().set_policy(kTopic, never_salt("acct:"), "alice").ok());
  ASSERT_TRUE(h.coord().pin(kTopic, "acct:1", 3, 0, "launch", "alice").ok());
  auto load = traffic({{"acct:1", 300}, {"acct:2", 300}});
  for (uint64_t seq = 1; seq <= 3; ++seq) round(h, 3, 8, seq, load);
  HotKeyList list = h.list(kTopic);
  const HotKey* pinned = find(list, "acct:1");
  ASSERT_NE(pinned, nullptr);
  EXPECT_EQ(pinned->source, KeySource::kPinned);
  EXPECT_EQ(pinned->salts.size(), 3u);
  EXPECT_EQ(find(list, "acct:2"), nullptr);
  auto top = h.coord().top(kTopic, 2);
  for (const auto& e : *top) EXPECT_EQ(e.never_salt, e.key == "acct:2") << e.key;
}

TEST(Policies, AnExactDenyBeatsAPrefixHotFraction) {
  Harness h(detection_only());
  ASSERT_TRUE(h.coord().set_policy(kTopic, own("vip:", 0.1, 0), "alice").ok());
  ASSERT_TRUE(h.coord().deny(kTopic, "vip:a", "ordering", "alice").ok());
  auto load = traffic({{"vip:a", 30}, {"vip:b", 30}});
  for (uint64_t seq = 1; seq <= 3; ++seq) round(h, 3, 8, seq, load);
  HotKeyList list = h.list(kTopic);
  EXPECT_EQ(find(list, "vip:a"), nullptr);
  EXPECT_EQ(list.denied, std::vector<std::string>{"vip:a"});
  EXPECT_NE(find(list, "vip:b"), nullptr);
}

TEST(Policies, PoliciesSurviveARestartAndAreAudited) {
  Harness h(detection_only());
  auto load = traffic({{"account:1", 400}});
  ASSERT_TRUE(h.coord().set_policy(kTopic, never_salt("account:"), "alice").ok());
  Policy tuned = own(std::string("bin\0\xff", 5), 0.25, 4);
  ASSERT_TRUE(h.coord().set_policy(kTopic, tuned, "alice").ok());
  for (uint64_t seq = 1; seq <= 2; ++seq) round(h, 3, 8, seq, load);
  const Policies before = *h.coord().policies(kTopic);
  ASSERT_EQ(before.size(), 2u);
  const uint64_t version = h.list(kTopic).version;

  h.restart();
  auto after = h.coord().policies(kTopic);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(*after, before);
  EXPECT_EQ(h.list(kTopic).version, version);
  EXPECT_EQ(h.list(kTopic).never_salt, std::vector<std::string>{"account:"});
  EXPECT_EQ(h.coord().topic(kTopic)->policies, 2u);
  for (uint64_t seq = 3; seq <= 5; ++seq) round(h, 3, 8, seq, load);
  EXPECT_EQ(find(h.list(kTopic), "account:1"), nullptr);

  ASSERT_TRUE(h.coord().remove_policy(kTopic, tuned.prefix, "alice").ok());
  auto audit = h.coord().audit(10);
  ASSERT_GE(audit.size(), 3u);
  EXPECT_EQ(audit[0].action, "policy_remove");
  EXPECT_EQ(audit[0].key, tuned.prefix);
  EXPECT_EQ(audit[1].action, "policy_add");
  EXPECT_EQ(audit[1].who, "alice");
  const json detail = json::parse(audit[1].detail);
  EXPECT_EQ(detail["hot_fraction"], 0.25);
  EXPECT_EQ(detail["max_salts"], 4);
  EXPECT_EQ(detail["never_salt"], false);
  EXPECT_EQ(detail["reason"], "tuning");
  EXPECT_EQ(audit[2].action, "policy_add");
  EXPECT_EQ(audit[2].key, "account:");
  EXPECT_EQ(json::parse(audit[2].detail)["never_salt"], true);
  h.restart();
  EXPECT_EQ(h.coord().policies(kTopic)->size(), 1u);
}

// A topic's delete drops its policies with its pins and denies; the audit entry says how many
// of each went, and none is back after a restart.
TEST(Policies, DeletingATopicDropsItsPoliciesAndTheAuditCountsThem) {
  Harness h(detection_only());
  round(h, 3, 8, 1, traffic({{"account:1", 400}}));
  ASSERT_TRUE(h.coord().set_policy(kTopic, never_salt("account:"), "alice").ok());
  ASSERT_TRUE(h.coord().set_policy(kTopic, own("user:", 0.25, 4), "alice").ok());
  ASSERT_TRUE(h.coord().deny(kTopic, "k", "ordering", "alice").ok());
  ASSERT_TRUE(h.coord().delete_topic(kTopic, "junk topic", "alice").ok());
  const auto audit = h.coord().audit(1);
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(audit[0].action, "delete_topic");
  const json detail = json::parse(audit[0].detail);
  EXPECT_EQ(detail["policies"], 2) << audit[0].detail;
  EXPECT_EQ(detail["denies"], 1) << audit[0].detail;
  EXPECT_EQ(detail["pins"], 0) << audit[0].detail;
  EXPECT_EQ(detail["reason"], "junk topic");
  h.restart();
  const auto left = h.coord().policies(kTopic);
  EXPECT_TRUE(!left.has_value() || left->empty());
}

TEST(Policies, ATopicHoldsAtMost256Policies) {
  Harness h;
  for (size_t i = 0; i < kMaxPoliciesPerTopic; ++i) {
    ASSERT_TRUE(h.coord().set_policy(kTopic, never_salt("p" + std::to_string(i) + ":"), "alice").ok());
  }
  CallResult r = h.coord().set_policy(kTopic, never_salt("one-more:"), "alice");
  EXPECT_EQ(r.status, Status::kConflict);
  EXPECT_EQ(r.reason, "too_many_policies");
  // Replacing one is not adding one.
  EXPECT_TRUE(h.coord().set_policy(kTopic, own("p0:", 1.0, 0), "alice").ok());
  EXPECT_EQ(h.coord().policies(kTopic)->size(), kMaxPoliciesPerTopic);
}

TEST(PoliciesHttp, PostGetDeleteWithTheOperatorToken) {
  Harness h(detection_only(), true);
  auto c = h.client();
  // A topic with reports (partitions known), so that lists are planned.
  ASSERT_EQ(c->Post("/v1/reports", report_to_json(make_report("p", kTopic, 8, 1, {{"a", 5}})),
                    "application/json")
                ->status,
            200);
  auto r = c->Post("/v1/topics/orders/policies", kOperator,
                   json{{"key", "account:"}, {"never_salt", true}, {"reason", "ordering"}}.dump(),
                   "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["ok"], true);
  r = c->Post("/v1/topics/orders/policies", kOperator,
              json{{"key_b64", "AP8="}, {"hot_fraction", 0.25}, {"max_salts", 4}, {"reason", "r"}}
                  .dump(),
              "application/json");
  ASSERT_EQ(r->status, 200) << r->body;

  r = c->Get("/v1/topics/orders/policies");
  ASSERT_EQ(r->status, 200) << r->body;
  const auto answer = json::parse(r->body).get<api::PoliciesAnswer>();
  ASSERT_EQ(answer.policies.size(), 2u);
  EXPECT_EQ(answer.policies[0].prefix, std::string("\0\xff", 2));
  EXPECT_EQ(answer.policies[0].hot_fraction, 0.25);
  EXPECT_EQ(answer.policies[0].max_salts, 4u);
  EXPECT_EQ(answer.policies[1].prefix, "account:");
  EXPECT_TRUE(answer.policies[1].never_salt);
  EXPECT_EQ(answer.policies[1].by, "alice");
  EXPECT_EQ(json::parse(r->body)["policies"][0]["key_b64"], "AP8=");
  EXPECT_EQ(json::parse(c->Get("/v1/topics/orders")->body)["policies"], 2);
  EXPECT_NE(c->Get("/v1/hotkeys?topic=orders")->body.find("\"never_salt\""), std::string::npos);

  EXPECT_EQ(c->Delete("/v1/topics/orders/policies?key=account:")->status, 401);
  EXPECT_EQ(c->Delete("/v1/topics/orders/policies?key=account:", kOperator)->status, 200);
  EXPECT_EQ(c->Delete("/v1/topics/orders/policies?key=account:", kOperator)->status, 404);
  EXPECT_EQ(c->Delete("/v1/topics/orders/policies?key_b64=AP8%3D", kOperator)->status, 200);
  EXPECT_EQ(c->Delete("/v1/topics/unknown/policies?key=a", kOperator)->status, 404);
  r = c->Get("/v1/topics/orders/policies");
  EXPECT_TRUE(json::parse(r->body)["policies"].empty());
  // Unknown topic: an empty answer, as for pins.
  r = c->Get("/v1/topics/nowhere/policies");
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(json::parse(r->body)["policies"].empty());
  EXPECT_EQ(h.coord().audit(10)[0].action, "policy_remove");
}

TEST(PoliciesHttp, BadInputIsRefusedWithAReasonAndChangesNothing) {
  Harness h(detection_only(), true);
  auto c = h.client();
  // Fill the topic to its limit first (the 257th is the "too many" case).
  for (size_t i = 0; i < kMaxPoliciesPerTopic; ++i) {
    ASSERT_TRUE(
        h.coord().set_policy(kTopic, never_salt("p" + std::to_string(i) + ":"), "alice").ok());
  }
  const auto before = *h.coord().policies(kTopic);
  const size_t audit_before = h.coord().audit(1000).size();
  const std::string too_long(h.config().limits.max_key_bytes + 1, 'x');
  struct Case {
    std::string name;
    json body;
    httplib::Headers headers;
    int status;
  };
  const json ok{{"key", "p0:"}, {"never_salt", true}, {"reason", "r"}};
  auto with = [&](const std::function<void(json&)>& edit) {
    json j = ok;
    edit(j);
    return j;
  };
  std::vector<Case> cases = {
      {"no token", ok, {}, 401},
      {"wrong token", ok, {{"Authorization", "Bearer nope"}}, 401},
      {"too long prefix", with([&](json& j) { j["key"] = too_long; }), kOperator, 400},
      {"empty prefix", with([](json& j) { j["key"] = ""; }), kOperator, 400},
      {"both key and key_b64", with([](json& j) { j["key_b64"] = "YQ=="; }), kOperator, 400},
      {"no key", with([](json& j) { j.erase("key"); }), kOperator, 400},
      {"no reason", with([](json& j) { j.erase("reason"); }), kOperator, 400},
      {"too many policies", with([](json& j) { j["key"] = "new:"; }), kOperator, 409},
      {"hot_fraction 0",
       json{{"key", "p0:"}, {"hot_fraction", 0}, {"reason", "r"}}, kOperator, 400},
      {"hot_fraction negative",
       json{{"key", "p0:"}, {"hot_fraction", -0.5}, {"reason", "r"}}, kOperator, 400},
      {"hot_fraction too big",
       json{{"key", "p0:"}, {"hot_fraction", 1001}, {"reason", "r"}}, kOperator, 400},
      {"hot_fraction text",
       json{{"key", "p0:"}, {"hot_fraction", "0.3"}, {"reason", "r"}}, kOperator, 400},
      {"max_salts 0", json{{"key", "p0:"}, {"max_salts", 0}, {"reason", "r"}}, kOperator, 400},
      {"max_salts above max_partitions",
       json{{"key", "p0:"}, {"max_salts", 1u << 30}, {"reason", "r"}}, kOperator, 400},
      {"never_salt with hot_fraction", with([](json& j) { j["hot_fraction"] = 0.5; }), kOperator,
       400},
      {"never_salt not a boolean", with([](json& j) { j["never_salt"] = "yes"; }), kOperator, 400},
      {"nothing to do", json{{"key", "p0:"}, {"reason", "r"}}, kOperator, 400},
      {"never_salt false alone", with([](json& j) { j["never_salt"] = false; }), kOperator, 400},
  };
  for (const auto& tc : cases) {
    auto r = c->Post("/v1/topics/orders/policies", tc.headers, tc.body.dump(), "application/json");
    ASSERT_TRUE(r) << tc.name;
    EXPECT_EQ(r->status, tc.status) << tc.name << ": " << r->body;
    EXPECT_EQ(error_of(r).rfind("<no", 0), std::string::npos) << tc.name << ": " << r->body;
  }
  auto r = c->Post("/v1/topics/orders/policies", kOperator,
                   json{{"key", "new:"}, {"never_salt", true}, {"reason", "r"}}.dump(),
                   "application/json");
  EXPECT_EQ(json::parse(r->body)["reason"], "too_many_policies");
  r = c->Post("/v1/topics/orders/policies", kOperator,
              json{{"key", "p0:"}, {"hot_fraction", 0}, {"reason", "r"}}.dump(),
              "application/json");
  EXPECT_EQ(json::parse(r->body)["reason"], "bad_hot_fraction");
  EXPECT_EQ(c->Delete("/v1/topics/orders/policies?key=a&key_b64=YQ==", kOperator)->status, 400);
  EXPECT_EQ(c->Delete("/v1/topics/orders/policies", kOperator)->status, 400);
  EXPECT_EQ(*h.coord().policies(kTopic), before);
  EXPECT_EQ(h.coord().audit(1000).size(), audit_before);
}

}  // namespace
}  // namespace hotkey::coordinator::test
