// Issue #17 (black-box probe) in the coordinator core: extreme reports never crash the planner
// or publish figures the store would refuse, a failed plan is contained to its topic, counters
// saturate, and failed operator calls change nothing. ManualClock over a real RocksDB store.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "store_records.h"
#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

constexpr const char* kTopic = "orders";

// Every figure of `list` is what the store's decoder accepts (shares in [0, 1], finite rates,
// verified tables): the list survives a restart.
void expect_storable(const HotKeyList& list) {
  for (const auto& k : list.keys) {
    EXPECT_GE(k.share, 0.0) << k.key;
    EXPECT_LE(k.share, 1.0) << k.key;
    EXPECT_TRUE(std::isfinite(k.rate)) << k.key;
  }
  EXPECT_NO_THROW(decode_list_record(list_to_json(list))) << list_to_json(list);
}

double metric_value(Metrics& m, const std::string& name) {
  const std::string text = m.serialize();
  for (size_t pos = text.find(name); pos != std::string::npos; pos = text.find(name, pos + 1)) {
    if (pos > 0 && text[pos - 1] != '\n') continue;
    const size_t sp = text.find(' ', pos);
    if (text.compare(pos, sp - pos, name) != 0) continue;
    return std::stod(text.substr(sp + 1));
  }
  return -1;
}

// Issue #17 item 1. A subnormal sample_rate made 1/sample_rate infinite and the next plan threw
// out of the detection thread (the process aborted); 1e-300 published and persisted a share of
// 9.2e9 that the next start refused. Both are refused at validation now; the smallest valid
// rate, claiming its whole sketch total stands for a million times more records than the report
// sent, still gives shares in [0, 1] that survive a restart.
TEST(CoordinatorHardening, ExtremeSampleRatesNeitherCrashNorPoisonTheStore) {
  Harness h;
  ASSERT_TRUE(h.coord().ingest(make_report("p", kTopic, 4, 1, {{"a", 900}, {"b", 100}})).ok());
  for (double rate : {5e-324, 1e-300, 9.9e-7}) {
    Report r = make_report("q", kTopic, 4, 1, {{"a", 900}, {"b", 100}});
    r.sample_rate = rate;
    CallResult res = h.coord().ingest(std::move(r));
    EXPECT_EQ(res.status, Status::kInvalid) << rate;
    EXPECT_NE(res.error.find("sample_rate"), std::string::npos) << res.error;
  }
  EXPECT_NO_THROW(h.coord().tick());

  for (uint64_t seq = 1; seq <= 4; ++seq) {
    for (const char* producer : {"x", "y"}) {
      Report r = make_report(producer, kTopic, 4, seq, {{"a", 900}, {"b", 100}});
      r.sample_rate = kMinSampleRate;
      CallResult res = h.coord().ingest(std::move(r));
      ASSERT_TRUE(res.ok()) << res.error;
    }
    h.clock().advance_ms(1000);
    ASSERT_NO_THROW(h.coord().tick());
    ASSERT_NO_THROW(h.coord().plan_triggered());
    expect_storable(h.list(kTopic));
  }
  const HotKeyList before = h.list(kTopic);
  ASSERT_NE(find(before, "a"), nullptr) << list_to_json(before);
  const auto top = h.coord().top(kTopic, 10);
  ASSERT_TRUE(top.has_value());
  for (const auto& e : *top) {
    EXPECT_LE(e.share, 1.0) << e.key;
    EXPECT_TRUE(std::isfinite(e.rate)) << e.key;
  }
  ASSERT_NO_THROW(h.restart());
  EXPECT_EQ(h.list(kTopic), before);
}

// Issue #17 item 1: a list the store's own decoder would refuse is never written. Here the
// clock reads before 1970, so a new list's updated_at_ms is negative: the pin that would
// publish one fails as a whole (500, nothing written, nothing audited), the detection tick
// logs and counts each topic's failure instead of throwing, and the data dir still loads.
TEST(CoordinatorHardening, AListTheStoreWouldRefuseIsNeverPersisted) {
  Harness h;
  for (const char* topic : {kTopic, "other"}) {
    ASSERT_TRUE(h.coord().ingest(make_report("p", topic, 4, 1, {{"a", 10}, {"b", 10}})).ok());
    ASSERT_TRUE(h.coord().pin(topic, "vip", 2, 0, "test", "alice").ok());
    ASSERT_EQ(h.list(topic).version, 1u);
    // A producer that sees 8 partitions: the next tick re-plans every table (a new version).
    ASSERT_TRUE(h.coord().ingest(make_report("q", topic, 8, 1, {{"a", 10}, {"b", 10}})).ok());
  }
  const int64_t now = h.clock().now_ms();
  h.clock().set_ms(-5000);
  CallResult r = h.coord().pin(kTopic, "vip2", 2, 0, "test", "alice");
  EXPECT_EQ(r.status, Status::kInternal);
  EXPECT_EQ(r.reason, "plan_failed");
  EXPECT_NE(r.error.find("updated_at_ms"), std::string::npos) << r.error;
  EXPECT_FALSE(h.coord().pins(kTopic)->contains("vip2"));
  EXPECT_EQ(h.coord().audit(10).size(), 2u);  // the two earlier pins only
  // Both topics fail their plan; neither takes the tick (or the thread running it) down.
  EXPECT_NO_THROW(h.coord().tick());
  EXPECT_EQ(metric_value(h.metrics(), "hotkey_plan_errors_total"), 3.0);
  EXPECT_EQ(h.list(kTopic).version, 1u);
  EXPECT_EQ(h.list("other").version, 1u);
  ASSERT_NO_THROW(h.restart());
  EXPECT_EQ(h.list(kTopic).version, 1u);
  h.clock().set_ms(now);
  ASSERT_TRUE(h.coord().pin(kTopic, "vip2", 2, 0, "test", "alice").ok());
  EXPECT_NE(find(h.list(kTopic), "vip2"), nullptr);
  EXPECT_EQ(h.list(kTopic).version, 2u);
}

// Issue #17 item 1: the background thread survives plans that fail, counts them, and plans
// the topic once the cause is gone.
TEST(CoordinatorHardening, BackgroundThreadSurvivesFailingPlans) {
  CoordinatorConfig cfg = test_config();
  cfg.plan_interval_ms = 20;
  Harness h(cfg);
  ASSERT_TRUE(h.coord().ingest(make_report("p", kTopic, 4, 1, {{"a", 10}, {"b", 10}})).ok());
  ASSERT_TRUE(h.coord().pin(kTopic, "vip", 2, 0, "test", "alice").ok());
  ASSERT_TRUE(h.coord().ingest(make_report("q", kTopic, 8, 1, {{"a", 10}, {"b", 10}})).ok());
  const uint64_t version = h.list(kTopic).version;
  const int64_t now = h.clock().now_ms();
  h.clock().set_ms(-5000);
  h.coord().start_background();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (metric_value(h.metrics(), "hotkey_plan_errors_total") < 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(metric_value(h.metrics(), "hotkey_plan_errors_total"), 2.0);
  EXPECT_EQ(h.list(kTopic).version, version);
  h.clock().set_ms(now);
  while (h.list(kTopic).version == version && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(h.list(kTopic).version, version) << "the thread stopped planning";
  EXPECT_EQ(h.list(kTopic).partitions, 8);
  h.coord().stop_background();
}

// Issue #17 item 9: reports that each claim 2^63 records (total, one partition, one key) from
// two producers wrapped the merged count to 0; counts saturate now and every derived figure
// stays finite, shares in [0, 1].
TEST(CoordinatorHardening, HugeCountsSaturateInsteadOfWrapping) {
  Harness h;
  constexpr uint64_t kHalf = uint64_t{1} << 63;
  for (const char* producer : {"p", "q"}) {
    Report r = make_report(producer, kTopic, 2, 1, {{"hot", 1}});
    r.total = kHalf;
    r.partition_counts = {kHalf, 0};
    r.sketch_total = kHalf;
    r.items = {{"hot", kHalf, 0}};
    CallResult res = h.coord().ingest(std::move(r));
    ASSERT_TRUE(res.ok()) << res.error;
  }
  h.clock().advance_ms(1000);
  ASSERT_NO_THROW(h.coord().tick());
  auto top = h.coord().top(kTopic, 5);
  ASSERT_TRUE(top.has_value());
  ASSERT_FALSE(top->empty());
  EXPECT_EQ(top->front().key, "hot");
  EXPECT_EQ(top->front().count, std::numeric_limits<uint64_t>::max());
  EXPECT_LE(top->front().share, 1.0);
  auto load = h.coord().partition_load(kTopic);
  ASSERT_TRUE(load.has_value());
  ASSERT_EQ(load->size(), 2u);
  EXPECT_GE((*load)[0], 1.8e19);  // saturated, not wrapped to 0
  expect_storable(h.list(kTopic));
  auto s = h.coord().topic(kTopic);
  EXPECT_TRUE(std::isfinite(s->rate));
  EXPECT_TRUE(std::isfinite(s->skew));
}

// Issue #17 item 9: what API.md promises about counts and totals is validated. Reports reach
// the core through the decoders (HTTP and the Kafka reports topic alike), which validate; the
// core's ingest takes decoded reports and does not check them twice.
TEST(CoordinatorHardening, CountsInconsistentWithTotalsAreRefused) {
  Report r = make_report("p", kTopic, 4, 1, {{"a", 900}, {"b", 100}});
  r.partition_counts[0] += 1;  // sum 1001 > total 1000
  EXPECT_THROW(decode_report_binary(encode_report_binary(r)), DecodeError);
  EXPECT_THROW(parse_report_json(report_to_json(r)), DecodeError);
  r = make_report("p", kTopic, 4, 1, {{"a", 900}, {"b", 100}});
  r.total = 999;  // below the sketch's own total
  r.partition_counts = {999, 0, 0, 0};
  EXPECT_THROW(decode_report_binary(encode_report_binary(r)), DecodeError);
  EXPECT_THROW(parse_report_json(report_to_json(r)), DecodeError);
}

}  // namespace
}  // namespace hotkey::coordinator::test
