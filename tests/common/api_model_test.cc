// The API model (hotkey/api_model.h): every answer survives a write and a read unchanged,
// writes exactly the documented field names with their JSON types, carries binary keys as
// key_b64, and reads leniently about absence but strictly about type.
#include "hotkey/api_model.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace hotkey::api {
namespace {

std::set<std::string> keys_of(const Json& j) {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}

template <typename T>
T round_trip(const T& v) {
  // Through text, as between the server and hotkeyctl.
  return Json::parse(dump(Json(v))).template get<T>();
}

TopicSummary sample_summary() {
  TopicSummary s;
  s.topic = "orders";
  s.partitions = 12;
  s.hash = "murmur2";
  s.separator = "#";
  s.rate = 1234.5;
  s.skew = 3.25;
  s.predicted_skew = 1.5;
  s.idle_partitions_ratio = 0.25;
  s.producers = 7;
  s.version = (uint64_t{3} << 32) + 9;
  s.hot_keys = 2;
  s.balance_keys = 1;
  s.pins = 1;
  s.denies = 1;
  s.policies = 3;
  s.window_reports = 99;
  s.window_total = 5.0e6;
  return s;
}

Pin sample_pin(std::string key) {
  return Pin{std::move(key), 4, 1'900'000'000'000, "black friday", "alice", 1'800'000'000'000};
}

TEST(ApiModel, TopicSummaryRoundTripsWithTheDocumentedFields) {
  const TopicSummary s = sample_summary();
  EXPECT_EQ(round_trip(s), s);
  const Json j = s;
  EXPECT_EQ(keys_of(j),
            (std::set<std::string>{"topic", "partitions", "hash", "separator", "rate", "skew",
                                   "predicted_skew", "idle_partitions_ratio", "producers",
                                   "version", "hot_keys", "balance_keys", "pins", "denies",
                                   "policies", "window_reports", "window_total"}));
  EXPECT_TRUE(j["rate"].is_number_float());
  EXPECT_TRUE(j["version"].is_number_unsigned());
  EXPECT_TRUE(j["partitions"].is_number_integer());
}

TEST(ApiModel, TopicSummaryNamesItsOwnerOnlyInClusterMode) {
  TopicSummary s = sample_summary();
  s.owner = "http://10.0.0.2:8470";
  s.owner_answered = false;
  EXPECT_EQ(round_trip(s), s);
  const Json j = s;
  EXPECT_EQ(j["owner"], "http://10.0.0.2:8470");
  EXPECT_EQ(j["owner_answered"], false);
  // Single-node mode: neither field.
  const Json single = sample_summary();
  EXPECT_FALSE(single.contains("owner"));
  EXPECT_FALSE(single.contains("owner_answered"));
}

TEST(ApiModel, PinAndDenyRoundTripAndWriteTheExactBytes) {
  const Pin p = sample_pin("user-42");
  EXPECT_EQ(round_trip(p), p);
  // Object keys are written sorted: the same bytes the server always sent.
  EXPECT_EQ(dump(Json(p)),
            R"({"by":"alice","created_at_ms":1800000000000,"expires_at_ms":1900000000000,)"
            R"("key":"user-42","reason":"black friday","salts":4})");
  const Deny d{"acct-7", "ordering", "bob", 1'700'000'000'000};
  EXPECT_EQ(round_trip(d), d);
  EXPECT_EQ(dump(Json(d)),
            R"({"by":"bob","created_at_ms":1700000000000,"key":"acct-7","reason":"ordering"})");
}

TEST(ApiModel, BinaryKeysTravelAsKeyB64) {
  const std::string binary("\xff\x00k\x80", 4);
  const Pin p = sample_pin(binary);
  const Json j = p;
  EXPECT_FALSE(j.contains("key"));
  ASSERT_TRUE(j.contains("key_b64"));
  EXPECT_EQ(j["key_b64"], "/wBrgA==");
  EXPECT_EQ(round_trip(p).key, binary);
  TopEntry e;
  e.key = binary;
  EXPECT_EQ(round_trip(e).key, binary);
  AuditEntry a;
  a.key = binary;
  EXPECT_EQ(round_trip(a).key, binary);
}

TEST(ApiModel, TopicDetailRoundTrips) {
  TopicDetail d;
  d.summary = sample_summary();
  d.pinned = {sample_pin("a"), sample_pin(std::string("\x01\x02", 2))};
  d.denied = {Deny{"b", "keep order", "carol", 5}};
  d.partition_load = {0.5, 0.25, 0.25};
  d.settings = Json{{"hot_share", 0.05}, {"hash", "murmur2"}, {"from", "defaults"}};
  d.rejected = {Rejection{"java-1", "hash_mismatch", 211, 1765050000000, "partitioned with crc32"}};
  EXPECT_EQ(round_trip(d), d);
  const Json j = d;
  for (const char* name : {"topic", "pinned", "denied", "partition_load", "settings", "rejected"}) {
    EXPECT_TRUE(j.contains(name)) << name;
  }
  for (const char* name : {"producer", "reason", "count", "last_at_ms", "error"}) {
    EXPECT_TRUE(j["rejected"][0].contains(name)) << name;
  }
  // No pins: empty arrays, never null.
  const Json empty = TopicDetail{};
  EXPECT_TRUE(empty["pinned"].is_array());
  EXPECT_TRUE(empty["denied"].is_array());
  EXPECT_TRUE(empty["partition_load"].is_array());
  EXPECT_TRUE(empty["settings"].is_object());
  EXPECT_TRUE(empty["rejected"].is_array());
}

TEST(ApiModel, TopAnswerRoundTripsAndDerivesGuaranteed) {
  TopAnswer t;
  t.topic = "orders";
  t.rate = 100.5;
  t.window_total = 1e6;
  t.items.push_back(TopEntry{"k1", 1000, 30, 50.5, 0.5, 3, true, false, false, "", false});
  t.items.push_back(TopEntry{"k2", 10, 0, 1.0, 0.01, -1, false, true, true, "", true});
  EXPECT_EQ(round_trip(t), t);
  const Json j = t;
  EXPECT_EQ(keys_of(j), (std::set<std::string>{"topic", "rate", "window_total", "items"}));
  EXPECT_EQ(keys_of(j["items"][0]),
            (std::set<std::string>{"key", "count", "error", "guaranteed", "rate", "share",
                                   "partition", "hot", "pinned", "denied", "never_salt"}));
  EXPECT_EQ(j["items"][0]["guaranteed"], 970u);
  // A listed key says why it is salted (issue 26): detected, balance or pinned.
  t.items.push_back(TopEntry{"k3", 500, 0, 20.0, 0.02, 7, true, false, false, "balance", false});
  EXPECT_EQ(round_trip(t), t);
  const Json with_source = t;
  EXPECT_EQ(with_source["items"][2]["source"], "balance");
}

TEST(ApiModel, PoliciesRoundTripWithThePrefixAsAKey) {
  PoliciesAnswer a{{Policy{"account:", true, 0, 0, "ordering", "alice", 1'800'000'000'000},
                    Policy{std::string("\0\xff", 2), false, 0.25, 4, "vip", "bob", 7}}};
  EXPECT_EQ(round_trip(a), a);
  const Json j = a;
  EXPECT_EQ(keys_of(j["policies"][0]),
            (std::set<std::string>{"key", "never_salt", "hot_fraction", "max_salts", "reason", "by",
                                   "created_at_ms"}));
  EXPECT_EQ(j["policies"][1]["key_b64"], "AP8=");
  EXPECT_EQ(dump(Json(PoliciesAnswer{})), R"({"policies":[]})");
}

TEST(ApiModel, ListAnswersRoundTrip) {
  TopicsAnswer topics{{sample_summary(), TopicSummary{}}};
  EXPECT_EQ(round_trip(topics), topics);
  PinsAnswer pins{{sample_pin("x")}};
  EXPECT_EQ(round_trip(pins), pins);
  DeniesAnswer denies{{Deny{"y", "r", "w", 1}}};
  EXPECT_EQ(round_trip(denies), denies);
  EXPECT_EQ(dump(Json(TopicsAnswer{})), R"({"topics":[]})");
  EXPECT_EQ(dump(Json(PinsAnswer{})), R"({"pins":[]})");
  EXPECT_EQ(dump(Json(DeniesAnswer{})), R"({"denies":[]})");
}

TEST(ApiModel, AuditEntryRoundTripsWithItsDetailObject) {
  AuditEntry a;
  a.seq = 7;
  a.at_ms = 1'800'000'000'000;
  a.who = "alice";
  a.action = "pin";
  a.topic = "orders";
  a.key = "user-42";
  a.detail = Json{{"salts", 4}, {"ttl_s", 3600}, {"reason", "sale"}};
  a.version = 12;
  EXPECT_EQ(round_trip(a), a);
  AuditAnswer answer{{a, AuditEntry{}}};
  EXPECT_EQ(round_trip(answer), answer);
  EXPECT_EQ(keys_of(Json(a)), (std::set<std::string>{"seq", "at_ms", "who", "action", "topic",
                                                     "key", "detail", "version"}));
  EXPECT_TRUE(Json(AuditEntry{})["detail"].is_object());
}

TEST(ApiModel, OperatorAndReportResults) {
  EXPECT_EQ(dump(Json(OperatorResult{42})), R"({"ok":true,"version":42})");
  EXPECT_EQ(round_trip(OperatorResult{42}), OperatorResult{42});
  EXPECT_EQ(dump(Json(ReportResult{false, 9})),
            R"({"accepted":true,"duplicate":false,"list_version":9})");
  EXPECT_EQ(dump(Json(ReportResult{true, 0})),
            R"({"accepted":false,"duplicate":true,"list_version":0})");
  EXPECT_EQ(round_trip(ReportResult{true, 5}), (ReportResult{true, 5}));
}

TEST(ApiModel, ErrorCarriesItsReasonOnlyWhenThereIsOne) {
  EXPECT_EQ(dump(Json(Error{"no such pin", ""})), R"({"error":"no such pin"})");
  EXPECT_EQ(dump(Json(Error{"too many", "too_many_pins"})),
            R"({"error":"too many","reason":"too_many_pins"})");
  EXPECT_EQ(round_trip(Error{"x", "not_found"}), (Error{"x", "not_found"}));
}

TEST(ApiModel, ClusterViewSingleAndClusterMode) {
  EXPECT_EQ(dump(Json(ClusterView{})),
            R"({"generation":0,"member_id":"","members":[],"mode":"single","owners":{},"url":""})");
  ClusterView c;
  c.mode = "cluster";
  c.member_id = "m-1";
  c.url = "http://10.0.0.1:8470";
  c.group = "hotkey";
  c.generation = 3;
  c.members = {"http://10.0.0.1:8470", "http://10.0.0.2:8470"};
  c.owners = {{"orders", "http://10.0.0.2:8470"}};
  c.owned_partitions = {{"0", 4}, {"5", 4}};
  c.partitions = 8;
  c.reports_ingested = 10;
  c.reports_forwarded = 2;
  c.reports_skipped = 1;
  c.lists_produced = 6;
  c.lists_dropped = 0;
  EXPECT_EQ(round_trip(c), c);
  // The 14 fields before the group's members, and group_members.
  EXPECT_EQ(keys_of(Json(c)).size(), 15u);
  c.group_members = {GroupMember{"m-1", "http://10.0.0.1:8470", {0, 5}, 0, true},
                     GroupMember{"m-2", "http://10.0.0.9:8470", {1}, 2400, false}};
  EXPECT_EQ(round_trip(c), c);
  EXPECT_EQ(keys_of(Json(c).at("group_members").at(0)).size(), 5u);
}

TEST(ApiModel, HealthAndReadiness) {
  EXPECT_EQ(dump(Json(Health{})), R"({"status":"ok"})");
  EXPECT_EQ(dump(Json(Readiness{true, "", 5})), R"({"checked_at_ms":5,"status":"ready"})");
  EXPECT_EQ(dump(Json(Readiness{false, "disk full", 5})),
            R"({"checked_at_ms":5,"error":"disk full","status":"not ready"})");
  EXPECT_EQ(round_trip(Readiness{false, "disk full", 5}), (Readiness{false, "disk full", 5}));
  EXPECT_EQ(round_trip(Readiness{true, "", 5}), (Readiness{true, "", 5}));
}

TEST(ApiModel, ReadingIsLenientAboutAbsenceAndStrictAboutType) {
  // A missing field keeps its default (an older or newer coordinator still reads).
  const auto s = Json::parse(R"({"topic":"t","skew":2.5,"extra":1})").get<TopicSummary>();
  EXPECT_EQ(s.topic, "t");
  EXPECT_EQ(s.partitions, 0);
  EXPECT_EQ(s.predicted_skew, 2.5);  // no prediction: no change predicted
  EXPECT_EQ(Json::parse("{}").get<TopEntry>().partition, -1);
  // A field of the wrong type is an error, not a silent default.
  EXPECT_THROW((void)Json::parse(R"({"topic":5})").get<TopicSummary>(), Json::type_error);
  EXPECT_THROW((void)Json::parse(R"({"pins":{}})").get<PinsAnswer>(), Json::type_error);
  EXPECT_THROW((void)Json::parse(R"({"entries":[{"who":[]}]})").get<AuditAnswer>(),
               Json::type_error);
}

}  // namespace
}  // namespace hotkey::api
