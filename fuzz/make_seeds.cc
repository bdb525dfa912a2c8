// Writes the seed corpora under fuzz/corpus/<target>/ from the real encoders (reports, lists,
// sketches, the coordinator's store records), real documents (config file, hotkeyctl export)
// and hand-made edge cases. Run by hand after a format change: make_seeds <fuzz/corpus dir>. The
// committed files are what the replay tests use; this program only documents how they were made.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hotkey/hotkey_list.h"
#include "hotkey/key_codec.h"
#include "hotkey/report.h"
#include "hotkey/salt_planner.h"
#include "hotkey/space_saving.h"
#include "store_records.h"

namespace {

namespace fs = std::filesystem;

void write(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

hotkey::Report make_report(int variant) {
  hotkey::Report r;
  r.producer = "producer-" + std::to_string(variant);
  r.topic = variant == 2 ? "orders.v2_eu-1" : "orders";
  r.partitions = variant == 1 ? 1 : 12;
  r.hash = static_cast<hotkey::HashFamily>(variant % 3);
  r.window_ms = 10000;
  r.sample_rate = variant == 3 ? 0.25 : 1.0;
  r.seq = 41 + variant;
  r.sent_at_ms = 1700000000000 + variant;
  r.list_version = variant;
  r.partition_counts.assign(r.partitions, 0);
  hotkey::SpaceSaving sketch(variant == 4 ? 2 : 16);
  const std::vector<std::string> keys = {"tenant-7", "tenant-9", std::string("\xff\xfe\x00k", 4),
                                         "",         "user:42",  "seller#3"};
  uint64_t total = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint64_t w = (i + 1) * 10;
    sketch.update(keys[i], w);
    total += w;
    r.partition_counts[i % r.partitions] += w;
  }
  r.total = total;
  r.sketch_capacity = sketch.capacity();
  r.sketch_min = sketch.min_count();
  r.sketch_total = sketch.total();
  for (const auto& it : sketch.items()) r.items.push_back({it.key, it.count, it.error});
  if (variant == 5) {
    r.items.clear();
    r.sketch_min = 0;
    r.sketch_total = 0;
  }
  return r;
}

hotkey::HotKeyList make_list(int variant) {
  hotkey::HotKeyList list;
  list.topic = "orders";
  list.version = 7 + variant;
  list.partitions = variant == 1 ? 3 : 24;
  list.hash = static_cast<hotkey::HashFamily>(variant % 3);
  list.separator = variant == 2 ? "|" : "#";
  list.updated_at_ms = 1700000000000;
  const std::vector<std::string> keys = {"tenant-7", std::string("\x80\x81", 2), "user:42"};
  for (size_t i = 0; i < keys.size() && variant != 3; ++i) {
    hotkey::SaltSpace space;
    space.family = list.hash;
    space.partitions = list.partitions;
    space.separator = list.separator;
    hotkey::HotKey key;
    key.key = keys[i];
    key.salts = hotkey::plan_salts(keys[i], static_cast<uint32_t>(2 + i), space).salts;
    key.source = i == 1 ? hotkey::KeySource::kPinned : hotkey::KeySource::kDetected;
    key.rate = 1234.5 * static_cast<double>(i + 1);
    key.share = 0.1 * static_cast<double>(i + 1);
    list.keys.push_back(key);
  }
  list.denied = {"account-1"};
  if (variant == 4) list.denied.push_back(std::string("\xc3\x28", 2));
  return list;
}

// A store record as the store_records target reads it: RocksDB key, newline, value.
std::string record(const std::string& key, const std::string& value) { return key + "\n" + value; }

void write_store_seeds(const fs::path& dir) {
  using namespace hotkey::coordinator;
  const std::string bin_key("\xff\x00k", 3);
  const Pin pin{"tenant-7", 3, 0, "black friday", "alice", 1700000000000};
  const Pin pin_ttl{bin_key, 0, 1700000360000, "expires", "ops", 1700000000000};
  const Deny deny{"account-1", "balances need order", "alice", 1700000000000};
  const auto b64 = [](const std::string& k) { return hotkey::base64_encode(k); };
  write(dir, "seed-pin", record("p/orders/" + b64(pin.key), encode_pin_record(pin)));
  write(dir, "seed-pin-binary-ttl",
        record("p/orders/" + b64(pin_ttl.key), encode_pin_record(pin_ttl)));
  write(dir, "seed-deny", record("d/orders/" + b64(deny.key), encode_deny_record(deny)));
  write(dir, "seed-meta",
        record("t/orders", encode_topic_meta_record({12, hotkey::HashFamily::kMurmur2, "#"})));
  write(dir, "seed-meta-fnv1a",
        record("t/pay.v2_eu-1", encode_topic_meta_record({1, hotkey::HashFamily::kFnv1a, "|"})));
  write(dir, "seed-version", record("v/orders", encode_version_record(42)));
  write(dir, "seed-version-max", record("v/orders", encode_version_record(UINT64_MAX)));
  AuditEntry a;
  a.seq = 7;
  a.at_ms = 1700000000000;
  a.who = "alice";
  a.action = "pin";
  a.topic = "orders";
  a.key = "tenant-7";
  a.detail = "{\"reason\":\"black friday\",\"salts\":3,\"ttl_s\":0}";
  a.version = 12;
  write(dir, "seed-audit-pin", record("a/00000000000000000007", audit_to_json(a)));
  a.seq = 8;
  a.action = "pin_expired";
  a.who = "system";
  a.key = bin_key;
  a.detail = "{}";
  write(dir, "seed-audit-expired-binary", record("a/00000000000000000008", audit_to_json(a)));
  write(dir, "seed-list", record("l/orders", hotkey::list_to_json(make_list(0))));
  write(dir, "seed-format", record("m/format", "hotkey-coordinator-store/1"));
  // Edge cases: what a damaged or foreign data dir may hold.
  write(dir, "edge-empty", "");
  write(dir, "edge-version-negative", record("v/orders", "-1"));
  write(dir, "edge-version-space", record("v/orders", " 5"));
  write(dir, "edge-version-overflow", record("v/orders", "18446744073709551616"));
  write(dir, "edge-meta-zero-partitions",
        record("t/orders", "{\"partitions\":0,\"hash\":\"murmur2\",\"separator\":\"#\"}"));
  write(dir, "edge-meta-negative-partitions",
        record("t/orders", "{\"partitions\":-3,\"hash\":\"crc32\",\"separator\":\"#\"}"));
  write(dir, "edge-meta-digit-separator",
        record("t/orders", "{\"partitions\":4,\"hash\":\"crc32\",\"separator\":\"7\"}"));
  write(dir, "edge-pin-both-keys",
        record("p/orders/YQ==",
               "{\"key\":\"a\",\"key_b64\":\"Yg==\",\"salts\":1,"
               "\"expires_at_ms\":0,\"reason\":\"r\",\"by\":\"b\","
               "\"created_at_ms\":1}"));
  write(dir, "edge-pin-key-mismatch", record("p/orders/" + b64("other"), encode_pin_record(pin)));
  write(dir, "edge-pin-no-key-part", record("p/orders", encode_pin_record(pin)));
  write(dir, "edge-pin-bad-topic",
        record("p/no such topic/" + b64(pin.key), encode_pin_record(pin)));
  write(dir, "edge-pin-float-salts",
        record("p/orders/YQ==",
               "{\"key\":\"a\",\"salts\":1.5,\"expires_at_ms\":0,"
               "\"reason\":\"r\",\"by\":\"b\",\"created_at_ms\":1}"));
  write(dir, "edge-list-other-topic", record("l/payments", hotkey::list_to_json(make_list(1))));
  write(dir, "edge-unknown-kind", record("x/orders", "{}"));
  write(dir, "edge-audit-seq-zero",
        record("a/00000000000000000000",
               "{\"seq\":0,\"at_ms\":1,\"who\":\"w\",\"action\":\"pin\",\"topic\":\"t\","
               "\"key\":\"k\",\"detail\":{},\"version\":1}"));
  write(dir, "edge-audit-detail-not-object",
        record("a/00000000000000000001",
               "{\"seq\":1,\"at_ms\":1,\"who\":\"w\",\"action\":\"pin\",\"topic\":\"t\","
               "\"key\":\"k\",\"detail\":[1],\"version\":\"1\"}"));
}

void write_config_seeds(const fs::path& dir) {
  write(dir, "seed-full.json",
        R"({"listen":"127.0.0.1:8470","data_dir":"/var/lib/hotkey","http_threads":16,)"
        R"("max_waiters":512,"max_wait_ms":60000,"max_body_bytes":8388608,)"
        R"("keep_alive_max_count":1000,"keep_alive_timeout_s":10,"max_items":65536,)"
        R"("max_key_bytes":4096,"max_partitions":100000,"epoch_ms":1000,"window_epochs":10,)"
        R"("sketch_capacity":4096,"producer_timeout_ms":30000,"warmup_ms":5000,)"
        R"("plan_interval_ms":1000,"max_topics":10000,"audit_max_limit":1000,)"
        R"("operator_tokens":{"alice":"alice-operator-token"},"producer_token":"producer-tok",)"
        R"("defaults":{"hot_fraction":0.5,"min_rate":10,"cold_fraction":0.25,"hold_ms":30000,)"
        R"("balance_target":1.03,"balance_min_fraction":0.02,"churn_tolerance":0.02,)"
        R"("max_hot_keys":64,"min_salts":2,"max_salts":256,"salt_share":0.05,)"
        R"("salt_search_limit":65536},)"
        R"("topics":{"orders":{"hash":"crc32","separator":"|","min_salts":3},)"
        R"("payments.v2":{"max_hot_keys":0}}})");
  write(dir, "seed-limits.json",
        R"({"max_connections":1024,"max_connections_per_client":64,"read_timeout_s":5,)"
        R"("write_timeout_s":5,"request_timeout_s":30,"rate_limit_max_clients":10000,)"
        R"("report_rate_per_client":100,"report_burst_per_client":200,)"
        R"("operator_rate_per_client":5,"operator_burst_per_client":20})");
  write(dir, "seed-files.json",
        R"({"operator_tokens_file":"/nonexistent/tokens","producer_token_file":"/nonexistent/p",)"
        R"("tls_cert_file":"/nonexistent/cert.pem","tls_key_file":"/nonexistent/key.pem",)"
        R"("tls_client_ca_file":"/nonexistent/ca.pem"})");
  write(dir, "seed-topic-before-defaults.json",
        R"({"topics":{"orders":{"hold_ms":1}},"defaults":{"hot_fraction":0.9}})");
  write(dir, "edge-empty", "");
  write(dir, "edge-not-object", "[1,2]");
  write(dir, "edge-unknown", R"({"no_such_setting":1})");
  write(dir, "edge-types",
        R"({"http_threads":"16","epoch_ms":-1,"max_body_bytes":1e400,)"
        R"("max_topics":18446744073709551616,"warmup_ms":1.5})");
  write(dir, "edge-topics",
        R"({"topics":{"bad topic!":{},"x":{"hash":"sha1"},"y":{"separator":"7"},)"
        R"("z":{"cold_fraction":2,"hot_fraction":1},"w":[]}})");
  write(dir, "edge-tokens", R"({"operator_tokens":{"a":"short","=b":"long-enough-token"}})");
  write(dir, "edge-listen", R"({"listen":"[::1]:99999"})");
  write(dir, "edge-deep", std::string(4000, '[') + std::string(4000, ']'));
  // Found by this target: nlohmann's out_of_range (not a parse_error) escaped and aborted.
  write(dir, "regress-number-overflow", R"({"max_body_bytes":1e400})");
}

void write_import_seeds(const fs::path& dir) {
  write(dir, "seed-export.json",
        R"({"format":"hotkey-operator-state/1","exported_at_ms":1700000000000,)"
        R"("source":"http://127.0.0.1:8470","topics":[{"topic":"orders","pins":[)"
        R"({"key":"tenant-7","reason":"black friday","salts":3,"ttl_s":7200,"by":"alice"},)"
        R"({"key_b64":"/wBr","reason":"binary"}],"denies":[{"key":"account-1",)"
        R"("reason":"balances need order","by":"alice"}]},{"topic":"payments","pins":[],)"
        R"("denies":[]}]})");
  write(dir, "seed-minimal.json", R"({"format":"hotkey-operator-state/1","topics":[]})");
  write(dir, "edge-empty", "");
  write(dir, "edge-wrong-format", R"({"format":"hotkey-operator-state/2","topics":[]})");
  write(dir, "edge-bad-items",
        R"({"format":"hotkey-operator-state/1","topics":[{"topic":"orders","pins":[)"
        R"({"key":"a","salts":-1},{"key":"b","ttl_s":0},{"key_b64":"!!"},{"key":""},7]}]})");
  write(dir, "edge-bad-topic",
        R"({"format":"hotkey-operator-state/1","topics":[{"topic":"../etc","pins":[]},[]]})");
  write(dir, "edge-deep", std::string(4000, '{') + std::string(4000, '}'));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FUZZ_CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  for (int v = 0; v < 6; ++v) {
    const auto r = make_report(v);
    hotkey::validate_report(r);
    write(root / "report_json", "seed-" + std::to_string(v) + ".json", hotkey::report_to_json(r));
    write(root / "report_binary", "seed-" + std::to_string(v) + ".bin",
          hotkey::encode_report_binary(r));
  }
  // Edge cases: the shortest inputs and near-misses that must be rejected cleanly.
  const auto good = hotkey::encode_report_binary(make_report(0));
  write(root / "report_binary", "edge-empty", "");
  write(root / "report_binary", "edge-magic-only", good.substr(0, 3));
  write(root / "report_binary", "edge-truncated", good.substr(0, good.size() / 2));
  write(root / "report_binary", "edge-trailing", good + "x");
  write(root / "report_json", "edge-empty", "");
  write(root / "report_json", "edge-not-object", "[1,2,3]");
  write(root / "report_json", "edge-deep", std::string(5000, '[') + std::string(5000, ']'));
  write(root / "report_json", "edge-nan",
        "{\"producer\":\"p\",\"topic\":\"t\",\"partitions\":1,\"hash\":\"murmur2\","
        "\"window_ms\":1,\"sample_rate\":NaN,\"total\":0,\"partition_counts\":[0],"
        "\"sketch\":{\"capacity\":1,\"min\":0,\"items\":[]}}");
  write(root / "report_json", "edge-negative",
        "{\"producer\":\"p\",\"topic\":\"t\",\"partitions\":1,\"hash\":\"murmur2\","
        "\"window_ms\":1,\"sample_rate\":1,\"total\":-1,\"partition_counts\":[-1],"
        "\"sketch\":{\"capacity\":1,\"min\":0,\"items\":[{\"key_b64\":\"!!\",\"count\":1e300,"
        "\"error\":0}]}}");
  for (int v = 0; v < 5; ++v) {
    const auto list = make_list(v);
    hotkey::validate_list(list);
    write(root / "list_json", "seed-" + std::to_string(v) + ".json", hotkey::list_to_json(list));
  }
  write(root / "list_json", "edge-empty", "");
  write(root / "list_json", "edge-bad-salt",
        "{\"topic\":\"orders\",\"version\":1,\"partitions\":4,\"hash\":\"murmur2\","
        "\"separator\":\"#\",\"keys\":[{\"key\":\"k\",\"salts\":[{\"salt\":0,\"partition\":3,"
        "\"weight\":1}],\"source\":\"detected\",\"rate\":1,\"share\":0.5}],\"denied\":[]}");
  for (uint32_t cap : {1u, 4u, 64u}) {
    hotkey::SpaceSaving s(cap);
    for (uint32_t i = 0; i < cap * 3; ++i) s.update("k" + std::to_string(i % (cap + 2)), i + 1);
    write(root / "space_saving", "seed-cap" + std::to_string(cap), s.serialize());
  }
  write(root / "space_saving", "seed-empty-sketch", hotkey::SpaceSaving(8).serialize());
  write(root / "space_saving", "edge-empty", "");
  write(root / "space_saving", "edge-version-2", std::string("\x02", 1));
  const auto ss = [] {
    hotkey::SpaceSaving s(4);
    s.update("a", 5);
    s.update("b", 3);
    return s.serialize();
  }();
  write(root / "space_saving", "edge-truncated", ss.substr(0, ss.size() - 1));
  write(root / "space_saving", "edge-trailing", ss + "\x00");
  write_store_seeds(root / "store_records");
  write_config_seeds(root / "config_json");
  write_import_seeds(root / "import_json");
  std::printf("seed corpora written under %s\n", root.c_str());
  return 0;
}
