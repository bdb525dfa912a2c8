// Local tables (docs/CLIENT.md, "Local tables"): the planning decision (client/src/local_plan.h)
// and its shared vectors, and the router's side (set, route, mark, count, drop).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hotkey/client/client.h"
#include "hotkey/client/router.h"
#include "hotkey/report.h"
#include "hotkey/report_batch.h"
#include "hotkey/salt_planner.h"
#include "local_plan.h"
#include "test_util.h"

namespace hotkey::client {
namespace {

using detail::LocalPlan;
using detail::LocalPlanInput;
using detail::plan_local_tables;
using test::make_list;

// A window of `cold` records spread evenly over the partitions plus `keys` (key, records),
// each on its home partition, sampled completely.
LocalPlanInput window(int32_t partitions, HashFamily family, uint64_t cold,
                      const std::vector<std::pair<std::string, uint64_t>>& keys) {
  LocalPlanInput in;
  in.partitions = partitions;
  in.family = family;
  in.partition_counts.assign(static_cast<size_t>(partitions), cold / partitions);
  in.partition_counts[0] += cold % partitions;
  in.total = cold;
  for (const auto& [key, n] : keys) {
    in.partition_counts[static_cast<size_t>(partition_for(family, key, partitions))] += n;
    in.total += n;
    in.items.push_back(ReportItem{key, n, 0});
  }
  in.sketch_total = in.total;
  return in;
}

SaltSpace space_of(const LocalPlanInput& in) {
  SaltSpace s;
  s.family = in.family;
  s.partitions = in.partitions;
  s.separator = in.separator;
  return s;
}

double max_over_avg(const std::vector<double>& load) {
  double sum = 0, mx = 0;
  for (double v : load) {
    sum += v;
    mx = std::max(mx, v);
  }
  return mx / (sum / static_cast<double>(load.size()));
}

TEST(LocalPlan, AKeyAtTheThresholdGetsAVerifiedTableThatLevelsTheWindow) {
  // One key at half the records of 12 partitions: unsalted, its home carries 7x the average.
  LocalPlanInput in = window(12, HashFamily::kMurmur2, 6000, {{"seller-42", 6000}});
  LocalPlan plan = plan_local_tables(in);
  ASSERT_EQ(plan.keys.size(), 1u);
  EXPECT_EQ(plan.added, std::vector<std::string>{"seller-42"});
  const HotKey& k = plan.keys[0];
  SaltTable table;
  table.salts = k.salts;
  EXPECT_TRUE(verify_table(k.key, table, space_of(in)));  // distinct partitions, recomputed
  EXPECT_GE(k.salts.size(), 6u);
  uint64_t weights = 0;
  std::vector<double> load(12, 500.0);  // the cold records
  for (const auto& s : k.salts) {
    weights += s.weight;
    load[static_cast<size_t>(s.partition)] += 6000.0 * s.weight / kWeightScale;
  }
  EXPECT_EQ(weights, kWeightScale);
  EXPECT_LT(max_over_avg(load), 1.05);
}

TEST(LocalPlan, ListedDeniedAndNeverSaltKeysAreLeftAlone) {
  for (int rule = 0; rule < 3; ++rule) {
    LocalPlanInput in = window(12, HashFamily::kMurmur2, 6000, {{"seller-42", 6000}});
    if (rule == 0) in.listed = {"seller-42"};
    if (rule == 1) in.denied = {"seller-42"};
    if (rule == 2) in.never_salt = {"seller-"};
    LocalPlan plan = plan_local_tables(in);
    EXPECT_TRUE(plan.keys.empty()) << "rule " << rule;
    EXPECT_FALSE(plan.changed());
  }
}

TEST(LocalPlan, TheThresholdIsTheSurgeReportsOne) {
  // hotkey.surge.factor / partitions of the window: 1/12 = 8.3% at the default factor.
  LocalPlanInput below = window(12, HashFamily::kMurmur2, 9200, {{"k", 800}});  // 8.0%
  EXPECT_TRUE(plan_local_tables(below).keys.empty());
  LocalPlanInput at = window(12, HashFamily::kMurmur2, 9150, {{"k", 850}});  // 8.5%
  EXPECT_EQ(plan_local_tables(at).keys.size(), 1u);
  at.surge_factor = 2.0;  // 16.7% needed
  EXPECT_TRUE(plan_local_tables(at).keys.empty());
  // A guaranteed count: the Space-Saving error bound comes off.
  LocalPlanInput err = window(12, HashFamily::kMurmur2, 9150, {{"k", 850}});
  err.items[0].error = 100;
  EXPECT_TRUE(plan_local_tables(err).keys.empty());
  // At least Sampler::kSurgeMinRecords records.
  EXPECT_TRUE(plan_local_tables(window(12, HashFamily::kMurmur2, 10, {{"k", 31}})).keys.empty());
  EXPECT_EQ(plan_local_tables(window(12, HashFamily::kMurmur2, 10, {{"k", 32}})).keys.size(), 1u);
}

TEST(LocalPlan, CurrentKeysKeepTheirTablesUntilTheyCoolBelowHalfTheThreshold) {
  LocalPlan first = plan_local_tables(window(12, HashFamily::kMurmur2, 6000, {{"a", 6000}}));
  ASSERT_EQ(first.keys.size(), 1u);
  // Still hot (now spread by its table, the same share): kept as it was, nothing changes.
  LocalPlanInput in = window(12, HashFamily::kMurmur2, 6000, {{"a", 6000}});
  in.current = first.keys;
  LocalPlan same = plan_local_tables(in);
  EXPECT_FALSE(same.changed());
  ASSERT_EQ(same.keys.size(), 1u);
  EXPECT_EQ(same.keys[0], first.keys[0]);
  // At 5% (below 1/12 but above half of it): kept.
  in = window(12, HashFamily::kMurmur2, 9500, {{"a", 500}});
  in.current = first.keys;
  EXPECT_FALSE(plan_local_tables(in).changed());
  // At 3%: dropped; and a key that left the sketch altogether too.
  in = window(12, HashFamily::kMurmur2, 9700, {{"a", 300}});
  in.current = first.keys;
  LocalPlan cooled = plan_local_tables(in);
  EXPECT_TRUE(cooled.keys.empty());
  EXPECT_EQ(cooled.dropped, std::vector<std::string>{"a"});
  in = window(12, HashFamily::kMurmur2, 9700, {});
  in.current = first.keys;
  EXPECT_EQ(plan_local_tables(in).dropped, std::vector<std::string>{"a"});
}

TEST(LocalPlan, NewKeysAreLeveledAroundTheKeysAlreadySalted) {
  // The window already carries "a" spread by its table; "b" surges now: its table fills the
  // partitions "a" left lightest, and "a"'s table is not touched.
  LocalPlan first = plan_local_tables(window(8, HashFamily::kCrc32, 4000, {{"a", 4000}}));
  ASSERT_EQ(first.keys.size(), 1u);
  LocalPlanInput in;
  in.partitions = 8;
  in.family = HashFamily::kCrc32;
  in.partition_counts.assign(8, 250);  // cold 2000
  for (const auto& s : first.keys[0].salts) {
    in.partition_counts[static_cast<size_t>(s.partition)] += 2000 * s.weight / kWeightScale;
  }
  const int32_t home_b = partition_for(HashFamily::kCrc32, "b", 8);
  in.partition_counts[static_cast<size_t>(home_b)] += 2000;
  in.total = 6000;
  in.sketch_total = 6000;
  in.items = {{"a", 2000, 0}, {"b", 2000, 0}};
  in.current = first.keys;
  LocalPlan plan = plan_local_tables(in);
  ASSERT_EQ(plan.keys.size(), 2u);
  EXPECT_EQ(plan.keys[0], first.keys[0]);
  EXPECT_EQ(plan.added, std::vector<std::string>{"b"});
  std::vector<double> load(8, 0.0);
  for (size_t p = 0; p < 8; ++p) load[p] = static_cast<double>(in.partition_counts[p]);
  load[static_cast<size_t>(home_b)] -= 2000;
  for (const auto& s : plan.keys[1].salts) {
    load[static_cast<size_t>(s.partition)] += 2000.0 * s.weight / kWeightScale;
  }
  EXPECT_LT(max_over_avg(load), 1.05);
}

TEST(LocalPlan, AtMostMaxLocalKeysLargestFirst) {
  std::vector<std::pair<std::string, uint64_t>> keys;
  // 100 keys each far above 1/256 of the window.
  for (int i = 0; i < 100; ++i) keys.emplace_back("k" + std::to_string(i), 1000 + i);
  LocalPlanInput in = window(256, HashFamily::kMurmur2, 0, keys);
  LocalPlan plan = plan_local_tables(in);
  ASSERT_EQ(plan.keys.size(), detail::kMaxLocalKeys);
  EXPECT_EQ(plan.keys.front().key, "k99");
  std::set<std::string> chosen;
  for (const auto& k : plan.keys) chosen.insert(k.key);
  EXPECT_FALSE(chosen.contains("k0"));
}

TEST(LocalPlan, BadInputIsRefused) {
  LocalPlanInput in = window(12, HashFamily::kMurmur2, 6000, {{"a", 6000}});
  in.partition_counts.pop_back();
  EXPECT_THROW(plan_local_tables(in), std::invalid_argument);
  in = window(12, HashFamily::kMurmur2, 6000, {{"a", 6000}});
  in.separator = "7";  // a digit: no valid salted key form
  EXPECT_THROW(plan_local_tables(in), std::invalid_argument);
}

// ---- shared vectors (the Java client reads the same file) ------------------------------------

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::vector<std::string> unhex_all(const nlohmann::json& a) {
  std::vector<std::string> out;
  for (const auto& x : a) out.push_back(unhex(x.get<std::string>()));
  return out;
}

std::vector<HotKey> keys_of(const nlohmann::json& a) {
  std::vector<HotKey> out;
  for (const auto& k : a) {
    HotKey hk;
    hk.key = unhex(k.at("key").get<std::string>());
    for (const auto& s : k.at("salts")) {
      hk.salts.push_back(
          SaltAssignment{s[0].get<uint32_t>(), s[1].get<int32_t>(), s[2].get<uint32_t>()});
    }
    out.push_back(std::move(hk));
  }
  return out;
}

TEST(LocalPlan, SharedVectors) {
  std::ifstream f(std::string(HOTKEY_TEST_DATA_DIR) + "/vectors/local_tables.json");
  ASSERT_TRUE(f) << "tests/data/vectors/local_tables.json";
  const nlohmann::json doc = nlohmann::json::parse(f);
  size_t with_tables = 0;
  for (const auto& c : doc.at("cases")) {
    const auto& j = c.at("input");
    LocalPlanInput in;
    in.partitions = j.at("partitions").get<int32_t>();
    in.family = *parse_hash_family(j.at("hash").get<std::string>());
    in.separator = unhex(j.at("separator").get<std::string>());
    in.partition_counts = j.at("partition_counts").get<std::vector<uint64_t>>();
    in.total = j.at("total").get<uint64_t>();
    in.sketch_total = j.at("sketch_total").get<uint64_t>();
    for (const auto& i : j.at("items")) {
      in.items.push_back(
          ReportItem{unhex(i[0].get<std::string>()), i[1].get<uint64_t>(), i[2].get<uint64_t>()});
    }
    in.surge_factor = j.at("surge_factor").get<double>();
    in.listed = unhex_all(j.at("listed"));
    in.denied = unhex_all(j.at("denied"));
    in.never_salt = unhex_all(j.at("never_salt"));
    in.current = keys_of(j.at("current"));
    const LocalPlan plan = plan_local_tables(in);
    const auto& want = c.at("output");
    const std::string name = c.at("name").get<std::string>();
    const std::vector<HotKey> keys = keys_of(want.at("keys"));
    ASSERT_EQ(plan.keys.size(), keys.size()) << name;
    for (size_t i = 0; i < keys.size(); ++i) {
      EXPECT_EQ(plan.keys[i].key, keys[i].key) << name;
      EXPECT_EQ(plan.keys[i].salts, keys[i].salts) << name;
      SaltTable t;
      t.salts = keys[i].salts;
      EXPECT_TRUE(verify_table(keys[i].key, t, space_of(in))) << name;
    }
    EXPECT_EQ(plan.added, unhex_all(want.at("added"))) << name;
    EXPECT_EQ(plan.dropped, unhex_all(want.at("dropped"))) << name;
    with_tables += keys.empty() ? 0 : 1;
  }
  EXPECT_GE(doc.at("cases").size(), 10u);
  EXPECT_GE(with_tables, 4u);
}

// ---- the router --------------------------------------------------------------------------------

LocalTables local_for(const Router& router, TopicId id, int32_t partitions,
                      const std::vector<std::string>& keys) {
  LocalTables t;
  auto list = router.list(id);
  t.base_version = list ? list->version : 0;
  t.partitions = partitions;
  for (const auto& k : keys) {
    LocalPlan plan =
        plan_local_tables(window(partitions, router.options().family, 1000, {{k, 1000}}));
    t.keys.push_back(plan.keys.at(0));
  }
  return t;
}

// Local tables for `keys` set on the router's current state.
bool set_local(Router& router, TopicId t, int32_t partitions,
               const std::vector<std::string>& keys) {
  return router.set_local_tables(t, local_for(router, t, partitions, keys),
                                 router.local_generation(t));
}

RouteDecision route(const Router& r, TopicId id, const std::string& key, int32_t partitions) {
  return r.route(id, key.data(), key.size(), {}, partitions);
}

TEST(RouterLocalTables, LocalKeysRouteOverTheirTableAndTheTableIsMarked) {
  Router router(RouterOptions{HashFamily::kMurmur2});
  TopicId t = router.topic("orders");
  ASSERT_TRUE(router.publish(make_list("orders", 7, 12, HashFamily::kMurmur2, {"listed"}, 4)));
  route(router, t, "x", 12);  // the live count
  LocalTables local = local_for(router, t, 12, {"surge"});
  const std::vector<SaltAssignment> salts = local.keys[0].salts;
  ASSERT_TRUE(router.set_local_tables(t, local, router.local_generation(t)));
  std::map<int32_t, int> seen;
  for (int i = 0; i < 2000; ++i) {
    RouteDecision d = route(router, t, "surge", 12);
    ASSERT_TRUE(d.salted);
    EXPECT_EQ(d.version, kLocalTableVersionBit + 7);
    EXPECT_TRUE(is_local_table_version(d.version));
    EXPECT_EQ(list_version_of(d.version), 7u);
    auto it = std::find_if(salts.begin(), salts.end(),
                           [&](const SaltAssignment& s) { return s.salt == d.salt; });
    ASSERT_NE(it, salts.end());
    EXPECT_EQ(it->partition, d.partition);
    ++seen[d.partition];
  }
  EXPECT_EQ(seen.size(), salts.size());  // every salt used: distinct partitions
  // The list's keys still route over the list's salts; cold keys where they always went.
  RouteDecision listed = route(router, t, "listed", 12);
  EXPECT_TRUE(listed.salted);
  RouteDecision cold = route(router, t, "user-1", 12);
  EXPECT_FALSE(cold.salted);
  EXPECT_EQ(cold.partition, partition_for(HashFamily::kMurmur2, "user-1", 12));
  EXPECT_EQ(router.version(t), 7u);  // the list's version: what the client asks for
  EXPECT_EQ(router.local_salted(t), 2000u);
  EXPECT_EQ(router.local_tables_set(t), 1u);
}

TEST(RouterLocalTables, AFreshListWinsAndDropRoutesTheKeyColdAgain) {
  Router router(RouterOptions{HashFamily::kCrc32});
  TopicId t = router.topic("orders");
  route(router, t, "x", 8);
  ASSERT_TRUE(set_local(router, t, 8, {"surge"}));
  EXPECT_TRUE(route(router, t, "surge", 8).salted);
  EXPECT_EQ(route(router, t, "user", 8).version, kLocalTableVersionBit);  // on no list
  // A list arrives (not naming the key): the local table is gone with it.
  ASSERT_TRUE(router.publish(make_list("orders", 3, 8, HashFamily::kCrc32, {"other"}, 4)));
  EXPECT_EQ(router.local_tables(t), nullptr);
  RouteDecision d = route(router, t, "surge", 8);
  EXPECT_FALSE(d.salted);
  EXPECT_EQ(d.version, 3u);
  // Set again on that list, then dropped (contact back).
  ASSERT_TRUE(set_local(router, t, 8, {"surge"}));
  EXPECT_TRUE(route(router, t, "surge", 8).salted);
  EXPECT_TRUE(router.drop_local_tables(t));
  EXPECT_FALSE(router.drop_local_tables(t));
  EXPECT_FALSE(route(router, t, "surge", 8).salted);
  EXPECT_EQ(route(router, t, "other", 8).version, 3u);
  // A tombstone drops them too.
  ASSERT_TRUE(set_local(router, t, 8, {"surge"}));
  EXPECT_TRUE(router.remove_list(t));
  EXPECT_EQ(router.local_tables(t), nullptr);
  EXPECT_FALSE(route(router, t, "surge", 8).salted);
}

TEST(RouterLocalTables, TablesFromAStaleViewOrNotVerifiedAreRefused) {
  Router router(RouterOptions{HashFamily::kMurmur2});
  TopicId t = router.topic("orders");
  ASSERT_TRUE(router.publish(make_list("orders", 5, 12, HashFamily::kMurmur2, {"listed"}, 4)));
  route(router, t, "x", 12);
  const uint64_t gen = router.local_generation(t);
  LocalTables planned = local_for(router, t, 12, {"surge"});
  // A list came in after the reporter read the generation: refused.
  ASSERT_TRUE(router.publish(make_list("orders", 6, 12, HashFamily::kMurmur2, {"listed"}, 4)));
  EXPECT_FALSE(router.set_local_tables(t, planned, gen));
  planned.base_version = 6;
  EXPECT_FALSE(router.set_local_tables(t, planned, gen));  // the generation still moved
  const uint64_t now = router.local_generation(t);
  LocalTables other_base = planned;
  other_base.base_version = 5;
  EXPECT_FALSE(router.set_local_tables(t, other_base, now));
  LocalTables other_count = local_for(router, t, 16, {"surge"});
  EXPECT_FALSE(router.set_local_tables(t, other_count, now));  // live count is 12
  LocalTables listed = local_for(router, t, 12, {"listed"});
  EXPECT_FALSE(router.set_local_tables(t, listed, now));  // the list's key stays the list's
  LocalTables forged = planned;
  forged.keys[0].salts[0].partition = (forged.keys[0].salts[0].partition + 1) % 12;
  EXPECT_FALSE(router.set_local_tables(t, forged, now));  // a salt that does not recompute
  EXPECT_EQ(router.local_tables(t), nullptr);
  EXPECT_TRUE(router.set_local_tables(t, planned, now));
  EXPECT_FALSE(router.set_local_tables(t, planned, now));  // the set moved it too
}

TEST(RouterLocalTables, ANewPartitionCountRoutesTheLocalKeyColdUntilReplanned) {
  Router router(RouterOptions{HashFamily::kMurmur2});
  TopicId t = router.topic("orders");
  route(router, t, "x", 12);
  ASSERT_TRUE(set_local(router, t, 12, {"surge"}));
  RouteDecision d = route(router, t, "surge", 16);
  EXPECT_FALSE(d.salted);
  EXPECT_EQ(d.partition, partition_for(HashFamily::kMurmur2, "surge", 16));
  ASSERT_NE(router.local_tables(t), nullptr);  // kept for the reporter to see and replan
  EXPECT_EQ(router.local_tables(t)->partitions, 12);
}

TEST(RouterLocalTables, ListsAtTheLocalMarkAreRefused) {
  Router router(RouterOptions{HashFamily::kMurmur2});
  router.topic("orders");
  EXPECT_FALSE(router.publish(
      make_list("orders", kLocalTableVersionBit + 1, 12, HashFamily::kMurmur2, {"a"}, 2)));
  EXPECT_EQ(router.version(0), 0u);
}

class RouterLocalPolicies : public ::testing::TestWithParam<SaltPolicy> {};

TEST_P(RouterLocalPolicies, LocallySaltedRecordsAreCountedExactlyFromEveryThread) {
  Router router(RouterOptions{HashFamily::kMurmur2, GetParam()});
  TopicId t = router.topic("orders");
  ASSERT_TRUE(router.publish(make_list("orders", 2, 12, HashFamily::kMurmur2, {"listed"}, 4)));
  route(router, t, "x", 12);
  ASSERT_TRUE(set_local(router, t, 12, {"a", "b"}));
  std::atomic<uint64_t> local{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      uint64_t mine = 0;
      for (int i = 0; i < 5000; ++i) {
        const std::string key = i % 3 == 0 ? "a" : i % 3 == 1 ? "b" : "listed";
        RouteDecision d = router.route(t, key.data(), key.size(), std::to_string(i * 4 + th), 12);
        mine += d.salted && key != "listed" ? 1 : 0;
      }
      local += mine;
    });
  }
  // Replaced while the threads send: a fresh list (local tables dropped: "a" and "b" cold),
  // then new local tables on it.
  ASSERT_TRUE(router.publish(make_list("orders", 3, 12, HashFamily::kMurmur2, {"listed"}, 4)));
  ASSERT_TRUE(set_local(router, t, 12, {"a", "b"}));
  for (auto& th : threads) th.join();
  EXPECT_EQ(router.local_salted(t), local.load());
  for (int i = 0; i < 1000; ++i) route(router, t, "a", 12);
  EXPECT_EQ(router.local_salted(t), local.load() + 1000);
  for (int i = 0; i < 1000; ++i) route(router, t, "listed", 12);
  EXPECT_EQ(router.local_salted(t), local.load() + 1000);  // the list's key is not local
}

INSTANTIATE_TEST_SUITE_P(Policies, RouterLocalPolicies,
                         ::testing::Values(SaltPolicy::kWeightedRoundRobin, SaltPolicy::kValueHash,
                                           SaltPolicy::kRandom));

// ---- the client: staleness from its list source, over HTTP -------------------------------------

using std::chrono::milliseconds;
using test::eventually;

// A coordinator speaking POST /v1/hotkeys/subscribe (with `stale` on every answer, as a cluster
// member does) and POST /v1/reports/batch, on a port that stays the same across stop() and
// start(): stopped, the client's requests are refused by the kernel (connection refused), as
// after a kill -9.
class SubscriptionPeer {
 public:
  SubscriptionPeer() { start(); }
  ~SubscriptionPeer() { stop(); }

  void start() {
    std::lock_guard slock(server_mu_);
    if (server_) return;
    server_ = std::make_unique<httplib::Server>();
    server_->set_socket_options([](socket_t sock) {
      int yes = 1;
      (void)setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    server_->Post("/v1/hotkeys/subscribe", [this](const httplib::Request& req,
                                                  httplib::Response& res) { subscribe(req, res); });
    server_->Post("/v1/reports/batch", [this](const httplib::Request& req, httplib::Response& res) {
      std::string results = "{\"results\":[";
      for (std::string_view one : split_report_batch_binary(req.body)) {
        Report r = decode_report_binary(one);
        {
          std::lock_guard lock(mu_);
          reports_.push_back(r);
        }
        if (results.back() != '[') results += ",";
        results += "{\"status\":200}";
      }
      res.set_content(results + "]}", "application/json");
    });
    {
      std::lock_guard lock(mu_);
      stopping_ = false;
    }
    if (port_ == 0) {
      port_ = server_->bind_to_any_port("127.0.0.1");
    } else {
      // The old socket may linger in TIME_WAIT for a moment.
      ASSERT_TRUE(eventually([&] { return server_->bind_to_port("127.0.0.1", port_); }));
    }
    thread_ = std::thread([s = server_.get()] { s->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(milliseconds(1));
  }

  void stop() {
    std::lock_guard slock(server_mu_);
    if (!server_) return;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    server_->stop();
    thread_.join();
    server_.reset();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void serve(const HotKeyList& list) {
    std::lock_guard lock(mu_);
    lists_[list.topic] = list;
    cv_.notify_all();
  }
  void set_stale(std::vector<std::string> topics) {
    std::lock_guard lock(mu_);
    stale_ = std::move(topics);
    cv_.notify_all();
  }
  std::vector<Report> reports() {
    std::lock_guard lock(mu_);
    return reports_;
  }

 private:
  void subscribe(const httplib::Request& req, httplib::Response& res) {
    const auto body = nlohmann::json::parse(req.body);
    const auto wait = milliseconds(std::min<uint64_t>(body.value("wait_ms", 0u), 300));
    std::unique_lock lock(mu_);
    const std::vector<std::string> stale_then = stale_;
    auto newer = [&] {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& t : body.at("topics")) {
        auto it = lists_.find(t.at("topic").get<std::string>());
        if (it != lists_.end() && it->second.version > t.at("since").get<uint64_t>()) {
          out.push_back(nlohmann::json::parse(list_to_json(it->second)));
        }
      }
      return out;
    };
    cv_.wait_for(lock, wait, [&] { return stopping_ || !newer().empty() || stale_ != stale_then; });
    nlohmann::json answer{{"lists", newer()}, {"stale", stale_}};
    res.set_content(answer.dump(), "application/json");
  }

  std::mutex server_mu_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, HotKeyList> lists_;
  std::vector<std::string> stale_;
  std::vector<Report> reports_;
};

Properties props_for(const std::string& url, Properties extra = {}) {
  Properties p{{"hotkey.coordinator.url", url},     {"hotkey.producer.id", "local-test"},
               {"hotkey.poll.wait.ms", "1000"},     {"hotkey.report.interval.ms", "100"},
               {"hotkey.backoff.initial.ms", "10"}, {"hotkey.backoff.max.ms", "100"},
               {"hotkey.http.timeout.ms", "1000"},  {"hotkey.hash", "murmur2"},
               {"hotkey.list.stale.ms", "300"}};
  for (auto& [k, v] : extra) p[k] = v;
  return p;
}

constexpr int32_t kPartitions = 12;

RouteDecision send(Client& c, TopicId t, const std::string& key) {
  return c.route(t, key.data(), key.size(), {}, kPartitions);
}

// A producer thread: `surge` (when set) is half of its records, the rest spread over 500 keys.
class Traffic {
 public:
  Traffic(Client& c, TopicId t, std::string surge)
      : loop_([&c, t, surge = std::move(surge), i = uint64_t{0}]() mutable {
          for (int j = 0; j < 100; ++j) {
            send(c, t, j % 2 == 0 ? surge : "user-" + std::to_string((i * 100 + j) % 500));
          }
          ++i;
          std::this_thread::sleep_for(milliseconds(5));
        }) {}

 private:
  test::Looper loop_;
};

const TopicStats& stats_of(const ClientStats& s) { return s.topics.at(0); }

// A coordinator peer serving version 4 of "orders" (its key "listed" salted), and a client that
// holds it.
class ClientLocalTables : public ::testing::Test {
 protected:
  void start(Properties extra = {}, HotKeyList list = base_list()) {
    peer_.serve(list);
    client_ = std::make_unique<Client>(props_for(peer_.url(), std::move(extra)));
    t_ = client_->topic("orders");
    ASSERT_TRUE(client_->wait_for_version(t_, list.version, std::chrono::seconds(10)));
  }
  static HotKeyList base_list() {
    return make_list("orders", 4, kPartitions, HashFamily::kMurmur2, {"listed"}, 4);
  }
  TopicStats topic_stats() const { return stats_of(client_->stats()); }

  SubscriptionPeer peer_;
  std::unique_ptr<Client> client_;
  TopicId t_ = 0;
};

// The partitions `key` goes to over `n` records, and whether every one carried the local mark
// of list `base`.
std::set<int32_t> partitions_of(Client& c, TopicId t, const std::string& key, uint64_t base,
                                bool* all_marked, int n = 300) {
  std::set<int32_t> out;
  *all_marked = true;
  for (int i = 0; i < n; ++i) {
    RouteDecision d = send(c, t, key);
    out.insert(d.partition);
    *all_marked = *all_marked && d.salted && d.version == kLocalTableVersionBit + base;
  }
  return out;
}

TEST_F(ClientLocalTables, AnUnreachableCoordinatorsSurgeIsSaltedLocallyUntilContactIsBack) {
  start();
  Client& c = *client_;
  Traffic traffic(c, t_, "surge");
  // With the coordinator there, the client leaves the key to it (this peer never lists it).
  std::this_thread::sleep_for(milliseconds(600));
  EXPECT_FALSE(topic_stats().stale);
  EXPECT_EQ(topic_stats().local_keys, 0u);
  EXPECT_FALSE(send(c, t_, "surge").salted);

  peer_.stop();  // connection refused from now on
  ASSERT_TRUE(eventually([&] { return topic_stats().local_keys == 1; }));
  EXPECT_TRUE(topic_stats().stale);
  bool marked = false;
  std::set<int32_t> spread = partitions_of(c, t_, "surge", 4, &marked);
  EXPECT_TRUE(marked);
  EXPECT_GE(spread.size(), 6u);  // half of the records on one key: spread over many partitions
  EXPECT_TRUE(send(c, t_, "listed").salted);  // the list's keys keep their salts
  EXPECT_FALSE(send(c, t_, "user-7").salted);
  ASSERT_TRUE(eventually([&] { return topic_stats().local_salted > 1000; }));
  EXPECT_EQ(topic_stats().local_tables, 1u);

  peer_.start();  // the same list: contact alone ends the local table
  ASSERT_TRUE(eventually([&] { return topic_stats().local_keys == 0; }));
  EXPECT_FALSE(topic_stats().stale);
  RouteDecision d = send(c, t_, "surge");
  EXPECT_FALSE(d.salted);
  EXPECT_EQ(d.version, 4u);
  // The reports of the outage's windows reached the coordinator once it was back, marked: they
  // were routed with the local table.
  ASSERT_TRUE(eventually([&] {
    for (const Report& r : peer_.reports()) {
      if (r.list_version == kLocalTableVersionBit + 4) return true;
    }
    return false;
  }));
}

TEST_F(ClientLocalTables, AFreshListReplacesTheLocalTable) {
  start();
  Client& c = *client_;
  Traffic traffic(c, t_, "surge");
  peer_.set_stale({"orders"});  // the owner is gone (cluster mode): stale at once, in contact
  ASSERT_TRUE(eventually([&] { return topic_stats().local_keys == 1; }));
  EXPECT_TRUE(topic_stats().stale);
  // The new owner publishes: its list wins at once, whatever the stale set still says.
  const uint64_t fresh = (uint64_t{2} << 32) | 1;
  peer_.serve(make_list("orders", fresh, kPartitions, HashFamily::kMurmur2, {"surge"}, 6));
  ASSERT_TRUE(c.wait_for_version(t_, fresh, std::chrono::seconds(10)));
  RouteDecision d = send(c, t_, "surge");
  EXPECT_TRUE(d.salted);
  EXPECT_FALSE(is_local_table_version(d.version));
  // The stale set still names the topic: a new local table may follow, planned on the new
  // list, and it leaves "surge" (now listed) to the list.
  if (auto local = c.router().local_tables(t_)) {
    EXPECT_EQ(local->base_version, fresh);
    for (const auto& k : local->keys) EXPECT_NE(k.key, "surge");
  }
  peer_.set_stale({});
  ASSERT_TRUE(eventually([&] { return !topic_stats().stale; }));
  EXPECT_EQ(topic_stats().local_keys, 0u);
}

TEST_F(ClientLocalTables, DeniedAndNeverSaltKeysStayHomeAndNothingIsSaltedWithoutAListState) {
  HotKeyList list = base_list();
  list.denied = {"acct-1"};
  list.never_salt = {"order:"};
  start({}, list);
  Client& c = *client_;
  {
    Traffic denied(c, t_, "acct-1"), prefixed(c, t_, "order:9"), other(c, t_, "surge");
    peer_.set_stale({"orders"});
    ASSERT_TRUE(eventually([&] { return topic_stats().local_keys >= 1; }));
    std::this_thread::sleep_for(milliseconds(500));  // a few more windows
    auto local = c.router().local_tables(t_);
    ASSERT_NE(local, nullptr);
    ASSERT_EQ(local->keys.size(), 1u);
    EXPECT_EQ(local->keys[0].key, "surge");
    EXPECT_FALSE(send(c, t_, "acct-1").salted);
    EXPECT_FALSE(send(c, t_, "order:9").salted);
  }

  // A client that never reached its coordinator knows nothing the list denies: it stays stale
  // and plain, whatever it sees hot.
  peer_.stop();
  Client lost(props_for(peer_.url()));
  TopicId lt = lost.topic("orders");
  Traffic traffic(lost, lt, "surge");
  ASSERT_TRUE(eventually([&] { return stats_of(lost.stats()).stale; }));
  std::this_thread::sleep_for(milliseconds(800));
  EXPECT_EQ(stats_of(lost.stats()).local_keys, 0u);
  EXPECT_FALSE(send(lost, lt, "surge").salted);
}

TEST_F(ClientLocalTables, StaleMsZeroTurnsThemOff) {
  start({{"hotkey.list.stale.ms", "0"}});
  Client& c = *client_;
  Traffic traffic(c, t_, "surge");
  peer_.stop();
  const uint64_t errors = c.stats().list_errors;
  ASSERT_TRUE(eventually([&] { return c.stats().list_errors > errors + 3; }));
  std::this_thread::sleep_for(milliseconds(800));
  EXPECT_FALSE(topic_stats().stale);
  EXPECT_EQ(topic_stats().local_keys, 0u);
  EXPECT_FALSE(send(c, t_, "surge").salted);
}

TEST_F(ClientLocalTables, StatsJsonNamesEveryField) {
  start();
  send(*client_, t_, "listed");
  const auto doc = nlohmann::json::parse(to_json(client_->stats()));
  EXPECT_EQ(doc.at("list_updates"), 1);
  const auto& topic = doc.at("topics").at(0);
  EXPECT_EQ(topic.at("topic"), "orders");
  EXPECT_EQ(topic.at("list_version"), 4);
  EXPECT_EQ(topic.at("salted"), 1);
  EXPECT_EQ(topic.at("stale"), false);
  EXPECT_EQ(topic.at("local_keys"), 0);
  EXPECT_EQ(topic.at("local_salted"), 0);
  EXPECT_EQ(topic.at("local_tables"), 0);
}

}  // namespace
}  // namespace hotkey::client
