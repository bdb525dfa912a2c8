// Writes the shared test vectors of tests/data/vectors/ (murmur2 and the other families,
// salted keys and first-fit salt plans, hot-key lists accepted and refused, smooth weighted
// round-robin sequences, binary report and batch encodings, the merge contract's writer marks and
// key recovery) from the C++ code itself. The Java
// client's tests read the same files; the ctest `shared_vectors_unchanged` regenerates them
// and fails when any byte differs, so neither side can drift without a test failing.
//
// Usage: hotkey-test-vectors OUT_DIR
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hotkey/client/merge.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/key_codec.h"
#include "hotkey/partitioner.h"
#include "hotkey/report.h"
#include "hotkey/report_batch.h"
#include "hotkey/salt_planner.h"
#include "local_plan.h"
#include "routing_table.h"

namespace {

using Json = nlohmann::ordered_json;

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// Deterministic bytes (xorshift64), so regenerating gives identical files.
struct Bytes {
  uint64_t state;
  unsigned char next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<unsigned char>(state >> 56);
  }
};

const std::vector<int32_t> kPartitionCounts = {1, 2, 3, 7, 12, 24, 100, 1009};

Json partitions_of(std::string_view key) {
  Json out = Json::array();
  for (int32_t p : kPartitionCounts) {
    out.push_back({p, hotkey::partition_for(hotkey::HashFamily::kMurmur2, key, p)});
  }
  return out;
}

Json hash_entry(std::string_view key, std::string_view cls) {
  Json j;
  j["class"] = std::string(cls);
  j["hex"] = hex(key);
  j["murmur2"] = hotkey::murmur2(key.data(), key.size());
  j["crc32"] = hotkey::crc32(key.data(), key.size());
  j["fnv1a"] = hotkey::fnv1a(key.data(), key.size());
  j["murmur2_partitions"] = partitions_of(key);
  return j;
}

Json hashes() {
  Json keys = Json::array();
  const std::vector<size_t> lengths = {0,  1,  2,   3,   4,   5,   6,   7,    8,   9,  10,
                                       11, 12, 13,  14,  15,  16,  17,  31,   32,  33, 63,
                                       64, 65, 127, 128, 255, 256, 257, 1000, 4096};
  Bytes rng{0x243f6a8885a308d3ull};
  for (size_t len : lengths) {
    std::string ascii, high, random, zeros(len, '\0'), ones(len, '\xff');
    for (size_t i = 0; i < len; ++i) {
      ascii.push_back(static_cast<char>('a' + (i * 7 + len) % 26));
      high.push_back(static_cast<char>(0x80 | ((i * 13 + len) & 0x7f)));
      random.push_back(static_cast<char>(rng.next()));
    }
    keys.push_back(hash_entry(ascii, "ascii"));
    keys.push_back(hash_entry(high, "high_bytes"));
    keys.push_back(hash_entry(random, "random"));
    if (len > 0 && len <= 17) {
      keys.push_back(hash_entry(zeros, "zeros"));
      keys.push_back(hash_entry(ones, "0xff"));
    }
  }
  for (std::string_view text : {"kafka", "giberish123456789", "loan-42", "book-B1001",
                                "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5", "hot-1#3"}) {
    keys.push_back(hash_entry(text, "text"));
  }
  Json doc;
  doc["description"] =
      "Family hashes (raw 32-bit: murmur2 as Kafka's Utils.murmur2 & 0xffffffff, crc32, fnv1a "
      "as librdkafka) and murmur2-family partitions [P, partition] for keys of every length "
      "class and byte content. Keys are hex.";
  doc["keys"] = std::move(keys);
  return doc;
}

Json salted() {
  Json encodings = Json::array();
  const std::vector<std::string> keys = {"", "hot-1", std::string("\x00\xff\x80k", 4),
                                         "\xc3\xa9t\xc3\xa9", std::string(300, 'x')};
  const std::vector<std::string> separators = {"#", "::", "|sep|", "\xc2\xa7", "abcdefgh"};
  const std::vector<uint32_t> salts = {0, 1, 9, 10, 99, 12345, 4294967295u};
  for (const auto& key : keys) {
    for (const auto& sep : separators) {
      for (uint32_t salt : salts) {
        std::string s = hotkey::salted_key(key, sep, salt);
        Json j;
        j["key"] = hex(key);
        j["separator"] = hex(sep);
        j["salt"] = salt;
        j["salted"] = hex(s);
        j["murmur2_partitions"] = partitions_of(s);
        encodings.push_back(std::move(j));
      }
    }
  }
  Json plans = Json::array();
  for (const auto& key :
       {std::string("hot-1"), std::string("seller-77"), std::string("\x00\xff\x80k", 4)}) {
    for (int32_t p : {1, 3, 12, 24, 100}) {
      for (uint32_t count : {1u, 3u, 8u, 24u}) {
        for (std::string sep : {"#", "::"}) {
          hotkey::SaltSpace space;
          space.family = hotkey::HashFamily::kMurmur2;
          space.partitions = p;
          space.separator = sep;
          hotkey::SaltTable t = hotkey::plan_salts(key, count, space);
          Json salts_json = Json::array();
          for (const auto& s : t.salts) salts_json.push_back({s.salt, s.partition, s.weight});
          plans.push_back({{"key", hex(key)},
                           {"partitions", p},
                           {"count", count},
                           {"separator", hex(sep)},
                           {"salts", std::move(salts_json)}});
        }
      }
    }
  }
  Json doc;
  doc["description"] =
      "Salted keys <key><separator><decimal salt> (hex) with their murmur2-family partitions "
      "[P, partition]; first-fit salt plans (plan_salts, murmur2) as [salt, partition, weight].";
  doc["encodings"] = std::move(encodings);
  doc["plans"] = std::move(plans);
  return doc;
}

// A list document for `partitions` whose salts are verified for murmur2 (or `family`).
hotkey::HotKeyList base_list(hotkey::HashFamily family = hotkey::HashFamily::kMurmur2) {
  hotkey::HotKeyList list;
  list.topic = "orders";
  list.version = 7;
  list.partitions = 12;
  list.hash = family;
  list.separator = "#";
  list.updated_at_ms = 1700000000000;
  hotkey::SaltSpace space;
  space.family = family;
  space.partitions = 12;
  hotkey::HotKey a;
  a.key = "hot-1";
  a.salts = hotkey::plan_salts(a.key, 3, space).salts;
  a.salts[0].weight = 5000;
  a.salts[1].weight = 3000;
  a.salts[2].weight = 2000;
  a.rate = 1234.5;
  a.share = 0.25;
  hotkey::HotKey b;
  b.key = std::string("\x00\xff\x80k", 4);
  b.salts = hotkey::plan_salts(b.key, 2, space).salts;
  b.source = hotkey::KeySource::kPinned;
  list.keys = {a, b};
  list.denied = {"blocked"};
  return list;
}

Json parsed_list(const hotkey::HotKeyList& list) {
  Json keys = Json::array();
  for (const auto& hk : list.keys) {
    Json salts = Json::array();
    for (const auto& s : hk.salts) salts.push_back({s.salt, s.partition, s.weight});
    keys.push_back({{"key", hex(hk.key)},
                    {"source", std::string(hotkey::to_string(hk.source))},
                    {"salts", std::move(salts)}});
  }
  Json denied = Json::array();
  for (const auto& d : list.denied) denied.push_back(hex(d));
  return {{"topic", list.topic},
          {"version", list.version},
          {"partitions", list.partitions},
          {"hash", std::string(hotkey::to_string(list.hash))},
          {"separator", hex(list.separator)},
          {"keys", std::move(keys)},
          {"denied", std::move(denied)}};
}

void replace(std::string& s, std::string_view from, std::string_view to) {
  size_t at = s.find(from);
  if (at == std::string::npos) {
    std::cerr << "vector generator: \"" << from << "\" not in " << s << "\n";
    std::exit(2);
  }
  s.replace(at, from.size(), to);
}

Json list_case(std::string name, std::string text) {
  Json j;
  j["name"] = std::move(name);
  j["json"] = text;
  try {
    hotkey::HotKeyList list = hotkey::parse_list_json(text);
    j["accepted"] = true;
    j["parsed"] = parsed_list(list);
  } catch (const hotkey::DecodeError& e) {
    j["accepted"] = false;
    std::string reason = e.what();
    j["reason"] = reason;
    // The field the reason names (the part before ": "), when it names one: decoders in other
    // languages must refuse for the same field; JSON syntax errors name none.
    size_t colon = reason.find(": ");
    bool names_field = colon != std::string::npos && reason.find_first_of(" \"'") > colon &&
                       reason.rfind("hot-key list", 0) != 0;
    j["field"] = names_field ? Json(reason.substr(0, colon)) : Json(nullptr);
  }
  return j;
}

Json lists() {
  const std::string good = hotkey::list_to_json(base_list());
  hotkey::HotKeyList l = base_list();
  const auto& s0 = l.keys[0].salts[0];
  const std::string salt0 =
      "{\"salt\":" + std::to_string(s0.salt) + ",\"partition\":" + std::to_string(s0.partition);
  Json cases = Json::array();
  cases.push_back(list_case("valid", good));
  cases.push_back(
      list_case("valid_crc32", hotkey::list_to_json(base_list(hotkey::HashFamily::kCrc32))));
  cases.push_back(
      list_case("valid_fnv1a", hotkey::list_to_json(base_list(hotkey::HashFamily::kFnv1a))));
  {
    hotkey::HotKeyList empty = base_list();
    empty.keys.clear();
    empty.denied.clear();
    empty.version = 0;
    cases.push_back(list_case("valid_empty_version_0", hotkey::list_to_json(empty)));
  }
  cases.push_back(list_case(
      "valid_minimal",
      R"({"topic":"t.1_x-y","version":18446744073709551615,"partitions":1,"hash":"murmur2","keys":[{"key":"k","salts":[{"salt":0,"partition":0,"weight":10000}]}]})"));
  cases.push_back(list_case(
      "valid_unknown_fields_ignored",
      R"({"topic":"t","version":1,"partitions":3,"hash":"murmur2","keys":[],"extra":{"a":[1,2]}})"));
  {
    // Prefixes under never_salt policies (issue 26): informational; a reader that does not know
    // the field accepts the list as if it were absent.
    hotkey::HotKeyList with_policies = base_list();
    with_policies.never_salt = {"account:", std::string("\x00\xff", 2)};
    cases.push_back(list_case("valid_never_salt_prefixes", hotkey::list_to_json(with_policies)));
  }
  auto mutate = [&](std::string name, std::string_view from, std::string_view to) {
    std::string t = good;
    replace(t, from, to);
    cases.push_back(list_case(std::move(name), t));
  };
  const int32_t wrong = (s0.partition + 1) % 12;
  mutate("tampered_salt_partition", salt0,
         "{\"salt\":" + std::to_string(s0.salt) + ",\"partition\":" + std::to_string(wrong));
  mutate("salt_partition_out_of_range", salt0,
         "{\"salt\":" + std::to_string(s0.salt) + ",\"partition\":12");
  mutate("weight_zero", "\"weight\":5000", "\"weight\":0");
  mutate("weight_negative", "\"weight\":5000", "\"weight\":-1");
  mutate("salt_over_u32", salt0,
         "{\"salt\":4294967296,\"partition\":" + std::to_string(s0.partition));
  mutate("unknown_hash", "\"hash\":\"murmur2\"", "\"hash\":\"xxhash\"");
  mutate("hash_not_string", "\"hash\":\"murmur2\"", "\"hash\":2");
  mutate("separator_with_digit", "\"separator\":\"#\"", "\"separator\":\"#1\"");
  mutate("separator_empty", "\"separator\":\"#\"", "\"separator\":\"\"");
  mutate("separator_too_long", "\"separator\":\"#\"", "\"separator\":\"#########\"");
  mutate("partitions_zero", "\"partitions\":12", "\"partitions\":0");
  mutate("partitions_negative", "\"partitions\":12", "\"partitions\":-3");
  mutate("partitions_too_many", "\"partitions\":12", "\"partitions\":100001");
  mutate("version_negative", "\"version\":7", "\"version\":-7");
  mutate("version_string", "\"version\":7", "\"version\":\"7\"");
  mutate("version_fraction", "\"version\":7", "\"version\":7.5");
  mutate("topic_invalid", "\"topic\":\"orders\"", "\"topic\":\"or ders\"");
  mutate("topic_missing", "\"topic\":\"orders\",", "");
  mutate("keys_missing", "\"keys\":[", "\"keyz\":[");
  mutate("key_and_key_b64", "{\"key\":\"hot-1\"", "{\"key\":\"hot-1\",\"key_b64\":\"aG90LTE=\"");
  mutate("key_b64_invalid", "\"key_b64\":\"AP+Aaw==\"", "\"key_b64\":\"AP+Aaw\"");
  mutate("key_missing", "{\"key\":\"hot-1\",", "{");
  {
    hotkey::HotKeyList dup = base_list();
    dup.keys[1] = dup.keys[0];
    cases.push_back(list_case("duplicate_key", hotkey::list_to_json(dup)));
  }
  mutate("denied_also_hot", "{\"key\":\"blocked\"}", "{\"key\":\"hot-1\"}");
  mutate("denied_duplicate", "{\"key\":\"blocked\"}",
         "{\"key\":\"blocked\"},{\"key\":\"blocked\"}");
  mutate("salts_empty", "\"salts\":[{", "\"salts\":[],\"x\":[{");
  mutate("source_unknown", "\"source\":\"detected\"", "\"source\":\"guessed\"");
  mutate("share_over_one", "\"share\":0.25", "\"share\":1.5");
  mutate("rate_negative", "\"rate\":1234.5", "\"rate\":-1.0");
  mutate("updated_at_negative", "\"updated_at_ms\":1700000000000", "\"updated_at_ms\":-1");
  {
    std::string t = good;
    const std::string salt1 = "\"partition\":" + std::to_string(l.keys[0].salts[1].partition) + ",";
    const std::string p0 = "\"partition\":" + std::to_string(s0.partition) + ",";
    // The second salt claims the first salt's partition: refused as a duplicate partition (or
    // as a tampered salt: whichever check the decoder meets first, both name keys[0].salts[1]).
    size_t at = t.find(salt1);
    if (at == std::string::npos) std::exit(2);
    t.replace(at, salt1.size(), p0);
    cases.push_back(list_case("duplicate_partition", t));
  }
  cases.push_back(list_case("not_json", "{\"topic\": "));
  cases.push_back(list_case("not_an_object", "[1,2,3]"));
  cases.push_back(list_case("trailing_garbage", good + "x"));
  Json doc;
  doc["description"] =
      "Hot-key list documents as parse_list_json sees them: accepted ones with their parsed "
      "content (keys and separator hex, salts [salt, partition, weight]), refused ones with the "
      "C++ reason and the field it names (null for syntax errors).";
  doc["cases"] = std::move(cases);
  return doc;
}

Json wrr() {
  const std::vector<std::vector<uint32_t>> tables = {
      {10000},
      {5000, 5000},
      {3334, 3333, 3333},
      {5000, 3000, 2000},
      {9000, 500, 500},
      {1, 2, 3, 4},
      {7, 1},
      {6, 4, 2},
      {9999, 1},
      {2500, 2500, 2500, 2500},
      {1234, 2345, 3456, 2965},
      {769, 769, 769, 769, 769, 769, 769, 769, 769, 769, 769, 769, 772}};
  Json cases = Json::array();
  for (const auto& w : tables) {
    std::vector<uint16_t> seq = hotkey::client::detail::smooth_wrr_sequence(w);
    Json picks = Json::array();
    // From a fixed start (here 5): what a cursor started at step 5 picks, twice round.
    const size_t start = 5 % seq.size();
    for (size_t i = 0; i < 2 * seq.size() && i < 64; ++i)
      picks.push_back(seq[(start + i) % seq.size()]);
    cases.push_back({{"weights", w},
                     {"max_len", 1024},
                     {"sequence", seq},
                     {"start", start},
                     {"picks_from_start", std::move(picks)}});
  }
  Json doc;
  doc["description"] =
      "Smooth weighted round-robin sequences (nginx's algorithm, weights reduced by their gcd "
      "and scaled to at most max_len steps): salt indices in pick order, and the picks of a "
      "cursor started at `start` (each routing table starts every key's cursor at a random step).";
  doc["cases"] = std::move(cases);
  return doc;
}

Json reports() {
  hotkey::Report r;
  r.producer = "java-host-4242";
  r.topic = "orders";
  r.partitions = 4;
  r.hash = hotkey::HashFamily::kMurmur2;
  r.separator = "#";
  r.window_ms = 500;
  r.sample_rate = 0.25;
  r.total = 1000;
  r.partition_counts = {400, 200, 250, 150};
  r.seq = 17;
  r.sent_at_ms = 1700000000123;
  r.list_version = 9;
  r.sketch_capacity = 3;
  r.sketch_min = 5;
  r.sketch_total = 250;
  r.items = {{"hot-1", 120, 0}, {std::string("\x00\xff\x80k", 4), 30, 4}, {"cold", 5, 5}};
  hotkey::validate_report(r);
  hotkey::Report small = r;
  small.seq = 18;
  small.sketch_capacity = 256;
  small.sketch_min = 0;
  small.sample_rate = 1.0;
  small.partitions = 1;
  small.partition_counts = {3};
  small.total = 3;
  small.sketch_total = 3;
  small.list_version = 0;
  small.separator = "::";
  small.items = {{"a", 2, 0}, {"\xc3\xa9", 1, 0}};
  hotkey::validate_report(small);
  auto report_json = [](const hotkey::Report& x) {
    Json items = Json::array();
    for (const auto& i : x.items) items.push_back({hex(i.key), i.count, i.error});
    return Json{{"producer", x.producer},
                {"topic", x.topic},
                {"partitions", x.partitions},
                {"hash", std::string(hotkey::to_string(x.hash))},
                {"separator", hex(x.separator)},
                {"window_ms", x.window_ms},
                {"sample_rate", x.sample_rate},
                {"total", x.total},
                {"partition_counts", x.partition_counts},
                {"seq", x.seq},
                {"sent_at_ms", x.sent_at_ms},
                {"list_version", x.list_version},
                {"sketch_capacity", x.sketch_capacity},
                {"sketch_min", x.sketch_min},
                {"sketch_total", x.sketch_total},
                {"items", std::move(items)},
                {"binary", hex(hotkey::encode_report_binary(x))},
                {"json", hotkey::report_to_json(x)}};
  };
  const std::string b1 = hotkey::encode_report_binary(r);
  const std::string b2 = hotkey::encode_report_binary(small);
  std::vector<std::string_view> both = {b1, b2};
  Json doc;
  doc["description"] =
      "Reports (keys and separator hex; items [key, count, error]) with their binary encoding "
      "(application/x-hotkey-report, hex) and JSON form, and the binary batch of both "
      "(application/x-hotkey-report-batch, hex).";
  doc["reports"] = Json::array({report_json(r), report_json(small)});
  doc["batch_binary"] = hex(hotkey::encode_report_batch_binary(both));
  return doc;
}

// Local tables (client/src/local_plan.h): one window's inputs and the decision, for cases that
// exercise each rule. Partition counts are a deterministic function of the case.
Json local_tables() {
  using hotkey::client::detail::LocalPlanInput;
  using hotkey::client::detail::plan_local_tables;
  auto salts_json = [](const std::vector<hotkey::SaltAssignment>& salts) {
    Json out = Json::array();
    for (const auto& s : salts) out.push_back({s.salt, s.partition, s.weight});
    return out;
  };
  auto keys_json = [&](const std::vector<hotkey::HotKey>& keys) {
    Json out = Json::array();
    for (const auto& k : keys) out.push_back({{"key", hex(k.key)}, {"salts", salts_json(k.salts)}});
    return out;
  };
  auto hex_all = [](const std::vector<std::string>& v) {
    Json out = Json::array();
    for (const auto& x : v) out.push_back(hex(x));
    return out;
  };
  // A window of `total` records: the given keys' records, the rest spread over cold keys
  // whose per-partition counts follow `skew` (0: even; larger: partition p gets 1 + skew * p
  // parts), every key's records on its home partition unless `salted_elsewhere`.
  struct Key {
    std::string key;
    uint64_t records;
    uint64_t error = 0;
  };
  auto window = [](int32_t partitions, hotkey::HashFamily family, uint64_t cold, double skew,
                   const std::vector<Key>& keys, double sample_every) {
    LocalPlanInput in;
    in.partitions = partitions;
    in.family = family;
    in.partition_counts.assign(static_cast<size_t>(partitions), 0);
    double parts = 0;
    for (int32_t p = 0; p < partitions; ++p) parts += 1 + skew * p;
    uint64_t given = 0;
    for (int32_t p = 0; p < partitions; ++p) {
      auto n = static_cast<uint64_t>(static_cast<double>(cold) * (1 + skew * p) / parts);
      in.partition_counts[static_cast<size_t>(p)] = n;
      given += n;
    }
    in.partition_counts[0] += cold - given;
    in.total = cold;
    for (const Key& k : keys) {
      in.partition_counts[static_cast<size_t>(hotkey::partition_for(family, k.key, partitions))] +=
          k.records;
      in.total += k.records;
    }
    in.sketch_total = static_cast<uint64_t>(static_cast<double>(in.total) / sample_every);
    for (const Key& k : keys) {
      in.items.push_back(hotkey::ReportItem{
          k.key, static_cast<uint64_t>(static_cast<double>(k.records) / sample_every), k.error});
    }
    // The sketch's tail: a few cold keys far below any threshold.
    for (int i = 0; i < 3; ++i) {
      in.items.push_back(hotkey::ReportItem{"user-" + std::to_string(i), 5, 2});
    }
    return in;
  };
  using hotkey::HashFamily;
  struct Case {
    std::string name;
    LocalPlanInput in;
  };
  std::vector<Case> cases;
  cases.push_back({"one key at half the records, 12 partitions, even cold load",
                   window(12, HashFamily::kMurmur2, 6000, 0, {{"seller-42", 6000}}, 1)});
  {
    Case c{"the same key on the list: left to the list",
           window(12, HashFamily::kMurmur2, 6000, 0, {{"seller-42", 6000}}, 1)};
    c.in.listed = {"seller-42", "other"};
    cases.push_back(c);
  }
  {
    Case c{"the same key denied by the list: never salted",
           window(12, HashFamily::kMurmur2, 6000, 0, {{"seller-42", 6000}}, 1)};
    c.in.denied = {"seller-42"};
    cases.push_back(c);
  }
  {
    Case c{"the same key under a never_salt prefix: never salted",
           window(12, HashFamily::kMurmur2, 6000, 0, {{"seller-42", 6000}}, 1)};
    c.in.never_salt = {"account:", "seller-"};
    cases.push_back(c);
  }
  cases.push_back({"below the hot threshold (5% of 12 partitions' records): nothing",
                   window(12, HashFamily::kMurmur2, 9500, 0, {{"seller-42", 500}}, 1)});
  cases.push_back({"at the threshold by share but under 32 records: nothing",
                   window(12, HashFamily::kMurmur2, 40, 0, {{"seller-42", 20}}, 1)});
  cases.push_back(
      {"two keys, crc32, 8 partitions, skewed cold load",
       window(8, HashFamily::kCrc32, 8000, 0.5, {{"tenant-a", 3000}, {"tenant-b", 2000}}, 1)});
  cases.push_back({"a window sampled at 1/8: counts scaled, error bounds kept",
                   window(24, HashFamily::kMurmur2, 160000, 0.1, {{"hot-1", 40000, 800}}, 8)});
  cases.push_back({"sampled below rate 1 with fewer than 16 samples of the key: nothing",
                   window(4, HashFamily::kMurmur2, 40, 0, {{"hot-1", 90}}, 8)});
  {
    Case c{"fnv1a, separator ::, one of two keys denied",
           window(16, HashFamily::kFnv1a, 10000, 0.2, {{"k-1", 4000}, {"k-2", 2000}}, 1)};
    c.in.separator = "::";
    c.in.denied = {"k-2"};
    cases.push_back(c);
  }
  {
    // The first case's table stays as it was (kept), a second key is added; a third current
    // key cooled below half the threshold and is dropped.
    Case first = cases.front();
    LocalPlanInput in = window(12, HashFamily::kMurmur2, 6000, 0,
                               {{"seller-42", 4000}, {"seller-7", 2000}, {"seller-9", 200}}, 1);
    in.current = plan_local_tables(first.in).keys;
    hotkey::client::detail::LocalPlanInput nine =
        window(12, HashFamily::kMurmur2, 6000, 0, {{"seller-9", 6000}}, 1);
    for (auto& k : plan_local_tables(nine).keys) in.current.push_back(k);
    cases.push_back({"kept, added and dropped", in});
  }
  {
    Case c{"an empty key under crc32 (librdkafka places it at random): nothing",
           window(8, HashFamily::kCrc32, 2000, 0, {{"", 2000}}, 1)};
    cases.push_back(c);
  }
  Json out = Json::array();
  for (const Case& c : cases) {
    const auto& in = c.in;
    Json items = Json::array();
    for (const auto& i : in.items) items.push_back({hex(i.key), i.count, i.error});
    Json input{{"partitions", in.partitions},
               {"hash", std::string(hotkey::to_string(in.family))},
               {"separator", hex(in.separator)},
               {"partition_counts", in.partition_counts},
               {"total", in.total},
               {"sketch_total", in.sketch_total},
               {"items", std::move(items)},
               {"surge_factor", in.surge_factor},
               {"listed", hex_all(in.listed)},
               {"denied", hex_all(in.denied)},
               {"never_salt", hex_all(in.never_salt)},
               {"current", keys_json(in.current)}};
    const auto plan = plan_local_tables(in);
    Json output{{"keys", keys_json(plan.keys)},
                {"added", hex_all(plan.added)},
                {"dropped", hex_all(plan.dropped)}};
    out.push_back({{"name", c.name}, {"input", std::move(input)}, {"output", std::move(output)}});
  }
  Json doc;
  doc["description"] =
      "Local tables (docs/CLIENT.md, \"Local tables\"; client/src/local_plan.h): one report "
      "window of a topic whose list is stale, the last list's listed and denied keys and "
      "never_salt prefixes, the keys salted locally now with their tables, and the decision: "
      "the local keys after the window (kept, then added) with their verified salt tables "
      "[salt, partition, weight], the keys added and dropped. Keys, prefixes and separators hex; "
      "items [key, count, error] in sampled records.";
  doc["cases"] = std::move(out);
  return doc;
}

// The merge contract (docs/CLIENT.md, "Merge contract"), both versions: what a writer puts on
// a record (merge_mark) and what a reader recovers from a key and its headers.
Json merge_contract() {
  using hotkey::client::KeyRecovery;
  using hotkey::client::MergeHeaders;
  using hotkey::client::MergeMark;
  using hotkey::client::RoutingMode;
  const uint64_t local = hotkey::kLocalTableVersionBit + 7;
  struct Mark {
    uint32_t contract;
    RoutingMode mode;
    std::string key;  // as sent
    std::string separator;
    bool salted;
    uint64_t version;
  };
  const std::vector<Mark> marks = {
      {2, RoutingMode::kRekey, "book-7#3", "#", true, 7},
      {2, RoutingMode::kRekey, "book-7#3", "#", true, local},
      {2, RoutingMode::kRoute, "book-7", "#", true, 7},
      {2, RoutingMode::kRekey, "book-7", "#", false, 7},
      {2, RoutingMode::kRekey, "book#7", "#", false, 7},
      {2, RoutingMode::kRekey, "book#07", "#", false, 7},
      {2, RoutingMode::kRekey, "book#4294967296", "#", false, 7},
      {2, RoutingMode::kRekey, "a::12", "::", false, 0},
      {2, RoutingMode::kRekey, "a#12", "::", false, 0},
      {2, RoutingMode::kRoute, "book#7", "#", false, 7},
      {2, RoutingMode::kRekey, "#0", "#", false, 0},
      {2, RoutingMode::kRekey, "", "#", false, 0},
      {1, RoutingMode::kRekey, "book-7#3", "#", true, 7},
      {1, RoutingMode::kRekey, "book#7", "#", false, 7},
      {1, RoutingMode::kRoute, "book-7", "#", true, local},
  };
  Json mark_cases = Json::array();
  for (const Mark& m : marks) {
    std::string_view logical;
    uint32_t salt = 0;
    const bool looks = !m.salted && hotkey::split_salted_key(m.key, m.separator, &logical, &salt);
    const MergeMark mark =
        hotkey::client::merge_mark(m.contract, m.mode, m.salted, m.version, looks);
    Json headers = Json::array();
    if (mark == MergeMark::kSaltAndVersion) headers = {"hotkey.salt", "hotkey.version"};
    if (mark == MergeMark::kUnsalted) headers = {"hotkey.unsalted"};
    mark_cases.push_back({{"contract", m.contract},
                          {"mode", m.mode == RoutingMode::kRekey ? "rekey" : "route"},
                          {"key", hex(m.key)},
                          {"separator", hex(m.separator)},
                          {"salted", m.salted},
                          {"version", std::to_string(m.version)},
                          {"headers", std::move(headers)}});
  }
  struct Recover {
    std::string key;
    std::optional<std::string> salt, version;
    bool unsalted;
    std::string separator;
    KeyRecovery mode;
  };
  const auto none = std::nullopt;
  const std::vector<Recover> recovers = {
      {"order-1#3", "3", "12", false, "#", KeyRecovery::kHeadersThenSuffix},  // v1 rekey
      {"order-1", "3", "12", false, "#", KeyRecovery::kHeadersThenSuffix},    // v1 route
      {"acct#7#2", "2", "1", false, "#", KeyRecovery::kHeadersThenSuffix},
      {"k#5", "5", std::to_string(local), false, "#", KeyRecovery::kHeadersThenSuffix},
      {"order-1#3", none, none, false, "#", KeyRecovery::kHeadersThenSuffix},  // v2 rekey
      {"order-1#3", none, none, false, "#", KeyRecovery::kHeadersOnly},
      {"order#13", none, none, true, "#", KeyRecovery::kHeadersThenSuffix},  // v2 unsalted
      {"order#13", none, none, true, "#", KeyRecovery::kHeadersOnly},
      {"order-13", none, none, false, "#", KeyRecovery::kHeadersThenSuffix},
      {"k::4", none, none, false, "::", KeyRecovery::kHeadersThenSuffix},
      {"k#4", none, none, false, "::", KeyRecovery::kHeadersThenSuffix},
      {"k#04", none, none, false, "#", KeyRecovery::kHeadersThenSuffix},
      {"k#4294967296", none, none, false, "#", KeyRecovery::kHeadersThenSuffix},
      {"k#1", "x1", "-3", false, "#", KeyRecovery::kHeadersThenSuffix},
      {"k#1", "x1", "-3", true, "#", KeyRecovery::kHeadersThenSuffix},
      {"k#2", "2", "9", true, "#", KeyRecovery::kHeadersThenSuffix},  // a valid salt decides
      {"k", "99999999999", none, false, "#", KeyRecovery::kHeadersThenSuffix},
  };
  Json recover_cases = Json::array();
  for (const Recover& r : recovers) {
    MergeHeaders h;
    if (r.salt) h.salt = *r.salt;
    if (r.version) h.version = *r.version;
    h.unsalted = r.unsalted;
    const auto out = hotkey::client::recover_logical_key(r.key, h, r.separator, r.mode);
    Json headers = Json::object();
    if (r.salt) headers["hotkey.salt"] = *r.salt;
    if (r.version) headers["hotkey.version"] = *r.version;
    if (r.unsalted) headers["hotkey.unsalted"] = "";
    recover_cases.push_back(
        {{"key", hex(r.key)},
         {"headers", std::move(headers)},
         {"separator", hex(r.separator)},
         {"mode", r.mode == KeyRecovery::kHeadersOnly ? "headers_only" : "headers_then_suffix"},
         {"logical_key", hex(out.logical_key)},
         {"salted", out.salted},
         {"salt", out.salt},
         {"version", std::to_string(out.version)},
         {"from_headers", out.from_headers}});
  }
  Json doc;
  doc["description"] =
      "Merge contract (docs/CLIENT.md, \"Merge contract\"; client/include/hotkey/client/"
      "merge.h), versions 1 and 2. marks: what a writer of `contract` puts on one record (the "
      "merge headers by name) for its routing mode, the key as sent, the topic's separator, "
      "whether it was salted and the version it was routed with (decimal; 2^63 + V: a local "
      "table). recover: what a reader recovers from a key, its merge headers (values; "
      "hotkey.unsalted: present) and the separator, per key-recovery mode. Keys and separators "
      "hex; versions decimal strings.";
  doc["marks"] = std::move(mark_cases);
  doc["recover"] = std::move(recover_cases);
  return doc;
}

bool write(const std::string& dir, const std::string& name, const Json& doc) {
  std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
  out << doc.dump(1) << "\n";
  if (!out) {
    std::cerr << "cannot write " << dir << "/" << name << "\n";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: hotkey-test-vectors OUT_DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = write(dir, "hashes.json", hashes()) && write(dir, "salted_keys.json", salted()) &&
            write(dir, "lists.json", lists()) && write(dir, "wrr.json", wrr()) &&
            write(dir, "reports.json", reports()) &&
            write(dir, "local_tables.json", local_tables()) &&
            write(dir, "merge_contract.json", merge_contract());
  return ok ? 0 : 1;
}
