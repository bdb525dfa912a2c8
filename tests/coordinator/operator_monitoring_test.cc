// Issue 18, operator items 2, 3, 7 and 8 (skew after a change): monitoring keeps working after
// a restore, audit entries of expired pins name their version, labelled series exist from the
// start, /readyz's write is measured, and a pin does not blank the measured skew.
#include <gtest/gtest.h>

#include <functional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

constexpr const char* kTopic = "orders";

// The value of the first sample of `series` (a metric name with its labels as printed by the
// text exposition) in `text`, or -1.
double sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

// Skewed traffic: "big" carries 30% of the records, a uniform tail the rest.
std::map<std::string, uint64_t> skewed(int p) {
  std::map<std::string, uint64_t> c{{"big", 3000}};
  add_tail(c, 7000, 400, 11u + static_cast<uint32_t>(p));
  return c;
}

// One report round of `producers` routing with `list_version` (their routing follows the
// list the harness publishes when `follow` is set, else they claim `list_version` and route
// every key by its plain hash, as producers of a version the coordinator does not know).
void round(Harness& h, int producers, uint64_t seq, uint64_t list_version, bool follow) {
  HotKeyList list = h.list(kTopic);
  for (int p = 0; p < producers; ++p) {
    Report r = make_report("producer-" + std::to_string(p), kTopic, 16, seq, skewed(p), 512,
                           follow ? &list : nullptr);
    if (!follow) r.list_version = list_version;
    CallResult res = h.coord().ingest(std::move(r));
    ASSERT_TRUE(res.ok()) << res.error;
  }
  h.clock().advance_ms(1000);
  h.coord().tick();
}

TEST(OperatorMonitoring, RestoredCoordinatorPublishesAboveTheFleetsVersionAndMeasuresAgain) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.max_hot_keys = 1;  // keeps "big" listed, nothing else: a stable list
  Harness h(cfg);
  // The fleet still routes with version 16 of a list this (restored) store never issued.
  round(h, 4, 1, 16, false);
  round(h, 4, 2, 16, false);
  const HotKeyList list = h.list(kTopic);
  ASSERT_GT(list.version, 16u) << "published " << list.version << " under the fleet's 16";
  const std::string m = h.metrics().serialize();
  EXPECT_EQ(sample(m, "hotkey_producer_list_version_newest{topic=\"orders\"}"), 16);
  EXPECT_EQ(sample(m, "hotkey_producer_list_version_oldest{topic=\"orders\"}"), 16);

  // Once producers route with the new version, their loads count: skew is measured (the
  // tail alone is far from 1.00 on 16 partitions with "big" salted) and partitions are not
  // all "idle".
  for (uint64_t seq = 3; seq < 8; ++seq) round(h, 4, seq, 0, true);
  auto s = h.coord().topic(kTopic);
  ASSERT_TRUE(s);
  EXPECT_LT(s->idle_ratio, 0.5);
  const std::string after = h.metrics().serialize();
  EXPECT_EQ(sample(after, "hotkey_producer_list_version_newest{topic=\"orders\"}"),
            static_cast<double>(h.list(kTopic).version));
  EXPECT_LT(sample(after, "hotkey_idle_partitions_ratio{topic=\"orders\"}"), 0.5);
}

TEST(OperatorMonitoring, ProducersOnAnOldVersionShowInTheOldestGauge) {
  Harness h;
  round(h, 2, 1, 0, true);
  round(h, 2, 2, 0, true);
  // One producer stuck on version 0 while another routes with the published list.
  HotKeyList list = h.list(kTopic);
  ASSERT_TRUE(h.coord().pin(kTopic, "pinned", 2, 0, "test", "alice").ok());
  list = h.list(kTopic);
  ASSERT_TRUE(h.coord().ingest(make_report("new", kTopic, 16, 1, skewed(0), 512, &list)).ok());
  ASSERT_TRUE(h.coord().ingest(make_report("stuck", kTopic, 16, 1, skewed(1), 512)).ok());
  h.clock().advance_ms(1000);
  h.coord().tick();
  const std::string m = h.metrics().serialize();
  EXPECT_EQ(sample(m, "hotkey_producer_list_version_oldest{topic=\"orders\"}"), 0);
  EXPECT_EQ(sample(m, "hotkey_producer_list_version_newest{topic=\"orders\"}"),
            static_cast<double>(list.version));
}

// Issue 37, item 3: a producer whose list went stale routes with a local table on it and
// reports list_version 2^63 + V. The gauges name V, and the version is never a floor: the next
// list stays in the coordinator's own range.
TEST(OperatorMonitoring, ReportsRoutedWithALocalTableNameTheirListAndRaiseNoFloor) {
  Harness h;
  round(h, 2, 1, 0, true);
  round(h, 2, 2, 0, true);
  const uint64_t v = h.list(kTopic).version;
  ASSERT_GT(v, 0u);
  round(h, 2, 3, kLocalTableVersionBit + v, false);
  round(h, 2, 4, kLocalTableVersionBit + v, false);
  const std::string m = h.metrics().serialize();
  EXPECT_EQ(sample(m, "hotkey_producer_list_version_newest{topic=\"orders\"}"),
            static_cast<double>(v));
  EXPECT_EQ(sample(m, "hotkey_producer_list_version_oldest{topic=\"orders\"}"),
            static_cast<double>(v));
  ASSERT_TRUE(h.coord().pin(kTopic, "pinned", 2, 0, "test", "alice").ok());
  EXPECT_GT(h.list(kTopic).version, v);
  EXPECT_LT(h.list(kTopic).version, kLocalTableVersionBit);
}

TEST(OperatorMonitoring, ExpiredPinAuditEntryNamesTheVersionInForce) {
  Harness h;
  round(h, 2, 1, 0, true);
  ASSERT_TRUE(h.coord().pin(kTopic, "rare", 2, 5, "short", "alice").ok());
  h.clock().advance_ms(6000);
  h.coord().tick();
  auto audit = h.coord().audit(5);
  ASSERT_FALSE(audit.empty());
  ASSERT_EQ(audit.front().action, "pin_expired");
  EXPECT_EQ(audit.front().version, h.list(kTopic).version);
  EXPECT_GT(audit.front().version, 0u);
}

TEST(OperatorMonitoring, PinDoesNotBlankTheMeasuredSkew) {
  CoordinatorConfig cfg = test_config();
  cfg.defaults.max_hot_keys = 1;
  cfg.defaults.balance_target = 1000;
  Harness h(cfg);
  for (uint64_t seq = 1; seq < 6; ++seq) round(h, 4, seq, 0, true);
  auto before = h.coord().topic(kTopic);
  ASSERT_TRUE(before);
  ASSERT_GT(before->skew, 1.0) << "test setup: the tail should leave measurable skew";
  ASSERT_TRUE(h.coord().pin(kTopic, "t7", 2, 0, "test", "alice").ok());
  h.clock().advance_ms(1000);
  h.coord().tick();  // no report under the new list yet
  auto after = h.coord().topic(kTopic);
  ASSERT_TRUE(after);
  EXPECT_DOUBLE_EQ(after->skew, before->skew);
  EXPECT_DOUBLE_EQ(after->idle_ratio, before->idle_ratio);
}

TEST(OperatorMonitoring, EveryRejectionReasonSeriesExistsFromTheStart) {
  Metrics metrics;
  const std::string m = metrics.serialize();
  for (const char* reason : kReportRejectionReasons) {
    EXPECT_EQ(sample(m, std::string("hotkey_reports_rejected_total{reason=\"") + reason + "\"}"), 0)
        << reason;
  }
  EXPECT_EQ(sample(m, "hotkey_requests_rejected_total{reason=\"rate_limit\",scope=\"reports\"}"),
            0);
}

TEST(OperatorMonitoring, ReadyzWriteIsInTheStoreLatencyHistogram) {
  Harness h(test_config(), true);
  const double before = sample(h.metrics().serialize(), "hotkey_store_write_latency_seconds_count");
  auto r = h.client()->Get("/readyz");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(sample(h.metrics().serialize(), "hotkey_store_write_latency_seconds_count"),
            before + 1);
}

}  // namespace
}  // namespace hotkey::coordinator::test
