// The coordinator's RocksDB record formats (store_records.h) and the findings of their fuzz
// targets: every encoder round-trips, damaged records are refused with a DecodeError naming the
// field, a damaged data dir fails Store::load with the record's key, and the config file
// parser turns every JSON library error into std::invalid_argument.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include "../coordinator/test_util.h"
#include "config.h"
#include "hotkey/key_codec.h"
#include "hotkey/salt_planner.h"
#include "store_records.h"

namespace hotkey::coordinator::test {
namespace {

template <typename F>
std::string decode_error_of(F&& f) {
  try {
    f();
  } catch (const DecodeError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(StoreRecords, EncodersRoundTrip) {
  const Pin pin{std::string("\xff\x00k", 3), 3, 1700000360000, "sale", "alice", 1700000000000};
  EXPECT_EQ(decode_pin_record(encode_pin_record(pin)), pin);
  const Deny deny{"account-1", "balances", "alice", -5};  // a clock set before 1970 still reads
  EXPECT_EQ(decode_deny_record(encode_deny_record(deny)), deny);
  const TopicMeta meta{12, HashFamily::kCrc32, "|"};
  const TopicMeta back = decode_topic_meta_record(encode_topic_meta_record(meta));
  EXPECT_EQ(back.partitions, 12);
  EXPECT_EQ(back.hash, HashFamily::kCrc32);
  EXPECT_EQ(back.separator, "|");
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{42}, UINT64_MAX}) {
    EXPECT_EQ(decode_version_record(encode_version_record(v)), v);
  }
  AuditEntry a;
  a.seq = 9;
  a.at_ms = 1700000000000;
  a.who = "system";
  a.action = "pin_expired";
  a.topic = "orders";
  a.key = std::string("\x80", 1);
  a.detail = R"({"reason":"r"})";
  a.version = 4;
  const AuditEntry b = decode_audit_record(audit_to_json(a));
  EXPECT_EQ(b.seq, a.seq);
  EXPECT_EQ(b.key, a.key);
  EXPECT_EQ(b.detail, a.detail);
  EXPECT_EQ(b.version, a.version);
}

TEST(StoreRecords, DamagedRecordsAreRefusedWithTheField) {
  // std::stoull used to read these as versions (-1 as 18446744073709551615).
  for (const char* bad : {"-1", " 5", "+5", "007", "", "5x", "18446744073709551616"}) {
    EXPECT_NE(decode_error_of([&] { decode_version_record(bad); }), "(accepted)") << bad;
  }
  EXPECT_NE(decode_error_of([] {
              decode_topic_meta_record(R"({"partitions":0,"hash":"murmur2","separator":"#"})");
            }).find("partitions"),
            std::string::npos);
  EXPECT_NE(decode_error_of([] {
              decode_topic_meta_record(R"({"partitions":-3,"hash":"murmur2","separator":"#"})");
            }).find("partitions"),
            std::string::npos);
  EXPECT_NE(decode_error_of([] {
              decode_topic_meta_record(R"({"partitions":4,"hash":"murmur2","separator":"7"})");
            }).find("separator"),
            std::string::npos);
  EXPECT_NE(decode_error_of([] {
              decode_pin_record(R"({"key":"a","key_b64":"Yg==","salts":1,"expires_at_ms":0,)"
                                R"("reason":"r","by":"b","created_at_ms":1})");
            }).find("exactly one"),
            std::string::npos);
  EXPECT_NE(decode_error_of([] {
              decode_pin_record(R"({"key":"a","salts":1.5,"expires_at_ms":0,)"
                                R"("reason":"r","by":"b","created_at_ms":1})");
            }).find("salts"),
            std::string::npos);
  EXPECT_NE(decode_error_of([] { decode_deny_record("{not json"); }).find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(decode_error_of([] {
              decode_audit_record(R"({"seq":0,"at_ms":1,"who":"w","action":"pin","topic":"t",)"
                                  R"("detail":{}})");
            }).find("seq"),
            std::string::npos);
  EXPECT_NE(decode_error_of([] {
              decode_audit_record(R"({"seq":1,"at_ms":1,"who":"w","action":"pin","topic":"t",)"
                                  R"("detail":[1]})");
            }).find("detail"),
            std::string::npos);
}

TEST(StoreRecords, LoadRecordChecksTheRecordKeyAgainstTheValue) {
  std::map<std::string, StoredTopic> topics;
  const Pin pin{"tenant-7", 2, 0, "r", "alice", 1};
  load_record("p/orders/" + base64_encode(pin.key), encode_pin_record(pin), topics);
  ASSERT_EQ(topics["orders"].pins.count("tenant-7"), 1u);
  load_record("m/format", "anything", topics);  // not a topic record: skipped
  load_record("a/00000000000000000001", "not even json", topics);
  EXPECT_EQ(topics.size(), 1u);
  EXPECT_NE(decode_error_of([&] {
              load_record("p/orders/" + base64_encode("other"), encode_pin_record(pin), topics);
            }).find("does not match"),
            std::string::npos);
  EXPECT_NE(decode_error_of([&] {
              load_record("p/orders", encode_pin_record(pin), topics);
            }).find("no key part"),
            std::string::npos);
  EXPECT_NE(decode_error_of([&] {
              load_record("p/bad topic!/" + base64_encode(pin.key), encode_pin_record(pin), topics);
            }).find("valid topic"),
            std::string::npos);
  EXPECT_NE(decode_error_of([&] { load_record("x/orders", "{}", topics); }).find("unknown"),
            std::string::npos);
  HotKeyList list;
  list.topic = "orders";
  list.version = 3;
  list.partitions = 4;
  EXPECT_NE(decode_error_of([&] {
              load_record("l/payments", list_to_json(list), topics);
            }).find("another topic"),
            std::string::npos);
}

TEST(StoreRecords, PolicyRecordsRoundTripAndAreChecked) {
  const Policy never{"account:", true, 0, 0, "ordering", "alice", 1700000000000};
  EXPECT_EQ(decode_policy_record(encode_policy_record(never)), never);
  const Policy tuned{std::string("\xff\x00", 2), false, 0.25, 4, "vip", "bob", -1};
  EXPECT_EQ(decode_policy_record(encode_policy_record(tuned)), tuned);
  std::map<std::string, StoredTopic> topics;
  load_record("r/orders/" + base64_encode(tuned.prefix), encode_policy_record(tuned), topics);
  ASSERT_EQ(topics["orders"].policies.count(tuned.prefix), 1u);
  EXPECT_EQ(topics["orders"].policies.at(tuned.prefix), tuned);
  EXPECT_NE(decode_error_of([&] {
              load_record("r/orders/" + base64_encode("other"), encode_policy_record(tuned), topics);
            }).find("does not match"),
            std::string::npos);
  for (const char* bad :
       {R"({"key":"","never_salt":true,"hot_fraction":0,"max_salts":0,"reason":"r","by":"b","created_at_ms":1})",
        R"({"key":"a","never_salt":1,"hot_fraction":0,"max_salts":0,"reason":"r","by":"b","created_at_ms":1})",
        R"({"key":"a","never_salt":false,"hot_fraction":-1,"max_salts":0,"reason":"r","by":"b","created_at_ms":1})",
        R"({"key":"a","never_salt":false,"hot_fraction":0.5,"max_salts":-2,"reason":"r","by":"b","created_at_ms":1})",
        R"({"key":"a","never_salt":false,"max_salts":2,"reason":"r","by":"b","created_at_ms":1})"}) {
    EXPECT_NE(decode_error_of([&] { decode_policy_record(bad); }), "(accepted)") << bad;
  }
}

// A damaged record in a real data dir: the store refuses to load it and names the record,
// instead of reading a negative version as 18446744073709551615.
TEST(StoreRecords, StoreLoadRefusesADamagedRecordByName) {
  TempDir dir;
  const std::string data = (dir.path() / "data").string();
  {
    std::string error;
    auto store = Store::open(data, &error);
    ASSERT_TRUE(store) << error;
    StoreBatch batch;
    batch.put_pin("orders", Pin{"k", 2, 0, "r", "alice", 1});
    ASSERT_TRUE(store->write(batch).ok);
  }
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), data, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "v/orders", "-1").ok());
    ASSERT_TRUE(db->Close().ok());
  }
  std::string error;
  auto store = Store::open(data, &error);
  ASSERT_TRUE(store) << error;
  const auto loaded = store->load(&error);
  EXPECT_TRUE(loaded.empty());
  EXPECT_NE(error.find("corrupt record 'v/orders'"), std::string::npos) << error;
  EXPECT_NE(error.find("version record"), std::string::npos) << error;
}

// restamp_audit rewrites an entry in place (cluster mode: a member that does not plan the topic
// learns the version later): same seq, same place in the log, and the next entry still gets the
// next seq, also after a reopen.
TEST(StoreRecords, RestampedAuditEntryKeepsItsSeqAndPlace) {
  TempDir dir;
  const std::string data = (dir.path() / "data").string();
  std::string error;
  {
    auto store = Store::open(data, &error);
    ASSERT_TRUE(store) << error;
    StoreBatch first;
    first.append_audit(AuditEntry{0, 10, "ops", "pin", "orders", "vip", "{}", 0});
    first.append_audit(AuditEntry{0, 11, "ops", "deny", "orders", "bot", "{}", 0});
    ASSERT_TRUE(store->write(first).ok);
    AuditEntry pin = first.audits()[0];
    ASSERT_EQ(pin.seq, 1u);
    pin.version = 42;
    StoreBatch restamp;
    restamp.restamp_audit(pin);
    ASSERT_TRUE(store->write(restamp).ok);
  }
  auto store = Store::open(data, &error);
  ASSERT_TRUE(store) << error;
  StoreBatch next;
  next.append_audit(AuditEntry{0, 12, "ops", "allow", "orders", "bot", "{}", 0});
  ASSERT_TRUE(store->write(next).ok);
  const std::vector<AuditEntry> log = store->audit(10);  // newest first
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].seq, 3u);
  EXPECT_EQ(log[0].action, "allow");
  EXPECT_EQ(log[1].seq, 2u);
  EXPECT_EQ(log[1].version, 0u);
  EXPECT_EQ(log[2].seq, 1u);
  EXPECT_EQ(log[2].action, "pin");
  EXPECT_EQ(log[2].key, "vip");
  EXPECT_EQ(log[2].version, 42u);
}

// A list as the planner published it before issue #17's fix: one report with sample_rate
// 1e-300 gave its key a share of 9.2e9.
HotKeyList list_with_share(double share) {
  HotKeyList list;
  list.topic = "orders";
  list.version = 5;
  list.partitions = 4;
  SaltSpace space;
  space.partitions = 4;
  HotKey k;
  k.key = "hot";
  k.salts = plan_salts("hot", 2, space).salts;
  k.share = share;
  k.rate = 1e3;
  list.keys.push_back(k);
  list.updated_at_ms = 1700000000000;
  return list;
}

// Nothing is written that the store's own decoder would refuse at the next start (issue #17
// item 1: the coordinator persisted such a list and then refused its data dir for good).
TEST(StoreRecords, ListsAreValidatedWithTheDecodersRulesBeforeTheyAreWritten) {
  const HotKeyList good = list_with_share(0.5);
  EXPECT_EQ(decode_list_record(encode_list_record(good)), good);
  for (double share : {9.2e9, -0.1, std::nan("")}) {
    EXPECT_EQ(decode_error_of([&] { encode_list_record(list_with_share(share)); }),
              "keys[0].share: must be a number in [0, 1]");
    StoreBatch batch;
    EXPECT_THROW(batch.put_list(list_with_share(share)), DecodeError);
    EXPECT_TRUE(batch.empty());
  }
  HotKeyList before_1970 = good;
  before_1970.updated_at_ms = -1;
  EXPECT_THROW(encode_list_record(before_1970), DecodeError);
  // The store reads what a coordinator configured past the default report limits wrote.
  HotKeyList wide = good;
  wide.partitions = 200000;
  SaltSpace space;
  space.partitions = wide.partitions;
  wide.keys[0].salts = plan_salts("hot", 2, space).salts;
  EXPECT_EQ(decode_list_record(encode_list_record(wide)), wide);
}

// A damaged list record (derived data) is skipped and named, not fatal: the coordinator plans
// the topic again from fresh reports above its version counter, which still loads.
TEST(StoreRecords, StoreLoadSkipsADamagedListAndKeepsTheRest) {
  TempDir dir;
  const std::string data = (dir.path() / "data").string();
  {
    std::string error;
    auto store = Store::open(data, &error);
    ASSERT_TRUE(store) << error;
    StoreBatch batch;
    batch.put_list(list_with_share(0.5));
    batch.put_pin("orders", Pin{"k", 2, 0, "r", "alice", 1});
    ASSERT_TRUE(store->write(batch).ok);
  }
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), data, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(
        db->Put(rocksdb::WriteOptions(), "l/orders", list_to_json(list_with_share(9.2e9))).ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "t/orders", "{").ok());
    ASSERT_TRUE(db->Close().ok());
  }
  std::string error;
  auto store = Store::open(data, &error);
  ASSERT_TRUE(store) << error;
  std::vector<std::string> skipped;
  const auto loaded = store->load(&error, &skipped);
  EXPECT_EQ(error, "");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[0].find("corrupt record 'l/orders'"), std::string::npos) << skipped[0];
  EXPECT_NE(skipped[0].find("keys[0].share: must be a number in [0, 1]"), std::string::npos);
  EXPECT_NE(skipped[1].find("corrupt record 't/orders'"), std::string::npos) << skipped[1];
  ASSERT_TRUE(loaded.contains("orders"));
  const StoredTopic& t = loaded.at("orders");
  EXPECT_FALSE(t.list.has_value());
  EXPECT_FALSE(t.meta.has_value());
  EXPECT_EQ(t.version, 5u);  // the version counter survives: the next list is version 6
  EXPECT_TRUE(t.pins.contains("k"));
}

// Found by fuzz/config_json: a number too large for a double escaped as nlohmann's
// out_of_range and aborted hotkey-coordinator at start-up.
TEST(ConfigFile, NumberOverflowIsAClearError) {
  CoordinatorConfig c;
  try {
    apply_config_json(c, R"({"max_body_bytes":1e400})");
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hotkey::coordinator::test
