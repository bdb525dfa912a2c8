// The published hot-key list: round trips with binary keys, and a decoder that recomputes
// every salt with the producers' own partitioner before a client may route with it.
#include "hotkey/hotkey_list.h"

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace hotkey {
namespace {

using nlohmann::json;

// The salts of `key` on `want` distinct partitions, found by brute force with the partitioner
// itself (independent of the salt planner under test elsewhere).
std::vector<SaltAssignment> brute_force_salts(const std::string& key, HashFamily family,
                                              const std::string& sep, int32_t partitions,
                                              size_t want) {
  std::vector<SaltAssignment> out;
  std::vector<bool> used(static_cast<size_t>(partitions), false);
  for (uint32_t salt = 0; out.size() < want; ++salt) {
    int32_t p = partition_for(family, salted_key(key, sep, salt), partitions);
    if (used[static_cast<size_t>(p)]) continue;
    used[static_cast<size_t>(p)] = true;
    out.push_back({salt, p, static_cast<uint32_t>(1000 + out.size())});
  }
  return out;
}

HotKeyList sample_list() {
  HotKeyList list;
  list.topic = "payments";
  list.version = 18446744073709551615ull;
  list.partitions = 12;
  list.hash = HashFamily::kFnv1a;
  list.separator = "|";
  std::string binary("\x00\xff\xfe-key", 7);
  list.keys.push_back({"seller-9", brute_force_salts("seller-9", list.hash, "|", 12, 5),
                       KeySource::kDetected, 1234.5, 0.31});
  list.keys.push_back(
      {binary, brute_force_salts(binary, list.hash, "|", 12, 12), KeySource::kPinned, 0, 0});
  list.denied = {"account-1", std::string("\x80", 1)};
  list.updated_at_ms = 1764470000000;
  return list;
}

json sample_json() { return json::parse(list_to_json(sample_list())); }

TEST(HotKeyList, JsonRoundTripKeepsBinaryKeys) {
  HotKeyList list = sample_list();
  std::string text = list_to_json(list);
  EXPECT_EQ(parse_list_json(text), list);
  json doc = json::parse(text);
  EXPECT_EQ(doc["keys"][0]["key"], "seller-9");
  EXPECT_EQ(doc["keys"][0]["source"], "detected");
  EXPECT_EQ(doc["keys"][1]["key_b64"], "AP/+LWtleQ==");
  EXPECT_EQ(doc["keys"][1]["source"], "pinned");
  EXPECT_EQ(doc["keys"][1]["salts"].size(), 12u);
  EXPECT_EQ(doc["denied"][0]["key"], "account-1");
  EXPECT_EQ(doc["denied"][1]["key_b64"], "gA==");
  EXPECT_EQ(doc["hash"], "fnv1a");
  EXPECT_EQ(doc["version"], 18446744073709551615ull);
  for (const char* field :
       {"topic", "version", "partitions", "hash", "separator", "keys", "denied", "updated_at_ms"}) {
    EXPECT_TRUE(doc.contains(field)) << field;
  }
}

TEST(HotKeyList, EmptyListAndDefaults) {
  json doc = {{"topic", "t"},
              {"version", 0},
              {"partitions", 1},
              {"hash", "murmur2"},
              {"keys", json::array()}};
  HotKeyList list = parse_list_json(doc.dump());
  EXPECT_EQ(list.separator, "#");
  EXPECT_TRUE(list.keys.empty());
  EXPECT_TRUE(list.denied.empty());
  EXPECT_EQ(list.updated_at_ms, 0);
  doc = sample_json();
  doc["keys"][0].erase("source");
  doc["keys"][0].erase("rate");
  doc["keys"][0].erase("share");
  list = parse_list_json(doc.dump());
  EXPECT_EQ(list.keys[0].source, KeySource::kDetected);
  EXPECT_EQ(list.keys[0].rate, 0);
}

TEST(HotKeyList, SaltTablesAreCheckedWithEveryFamily) {
  for (auto family : {HashFamily::kMurmur2, HashFamily::kCrc32, HashFamily::kFnv1a}) {
    HotKeyList list;
    list.topic = "t";
    list.partitions = 32;
    list.hash = family;
    list.keys.push_back(
        {"k", brute_force_salts("k", family, "#", 32, 8), KeySource::kDetected, 1, 0.5});
    EXPECT_NO_THROW(validate_list(list));
    // The same table read with another family no longer recomputes.
    list.hash = family == HashFamily::kMurmur2 ? HashFamily::kCrc32 : HashFamily::kMurmur2;
    EXPECT_THROW(validate_list(list), DecodeError);
  }
}

struct Rule {
  const char* name;
  std::function<void(json&)> mutate;
  std::string message;
};

TEST(HotKeyList, ValidationRulesNameTheField) {
  HotKeyList base = sample_list();
  const auto& s0 = base.keys[0].salts;
  // A salt that lands somewhere else than claimed.
  int32_t wrong = (s0[0].partition + 1) % 12;
  int32_t actual_of_salt0 = s0[0].partition;
  const std::vector<Rule> rules = {
      {"topic missing", [](json& d) { d.erase("topic"); }, "topic: is required"},
      {"topic bad", [](json& d) { d["topic"] = "a b"; },
       "topic: must be 1-249 characters of [A-Za-z0-9._-]"},
      {"version negative", [](json& d) { d["version"] = -1; },
       "version: must be a non-negative integer"},
      {"version missing", [](json& d) { d.erase("version"); }, "version: is required"},
      {"partitions zero", [](json& d) { d["partitions"] = 0; },
       "partitions: must be in [1, 100000], got 0"},
      {"hash unknown", [](json& d) { d["hash"] = "xxhash"; },
       "hash: unknown hash family 'xxhash' (murmur2, crc32 or fnv1a)"},
      {"separator digit", [](json& d) { d["separator"] = "7"; },
       "separator: must be 1-8 bytes with no decimal digit"},
      {"updated negative", [](json& d) { d["updated_at_ms"] = -5; },
       "updated_at_ms: must be a non-negative integer"},
      {"keys missing", [](json& d) { d.erase("keys"); }, "keys: is required"},
      {"keys type", [](json& d) { d["keys"] = json::object(); }, "keys: must be an array"},
      {"key both", [](json& d) { d["keys"][0]["key_b64"] = "AA=="; },
       "keys[0]: has both key and key_b64; give one"},
      {"key neither", [](json& d) { d["keys"][1].erase("key_b64"); },
       "keys[1]: needs key or key_b64"},
      {"key bad base64", [](json& d) { d["keys"][1]["key_b64"] = "AP/+LWtleQ"; },
       "keys[1].key_b64: invalid base64 (standard alphabet, padded, no whitespace)"},
      {"salts missing", [](json& d) { d["keys"][0].erase("salts"); }, "keys[0].salts: is required"},
      {"salts empty", [](json& d) { d["keys"][0]["salts"] = json::array(); },
       "keys[0].salts: must hold at least one salt"},
      {"salts more than partitions",
       [](json& d) { d["keys"][1]["salts"].push_back(d["keys"][1]["salts"][0]); },
       "keys[1].salts: has 13 elements, at most 12 allowed"},
      {"salt negative", [](json& d) { d["keys"][0]["salts"][1]["salt"] = -1; },
       "keys[0].salts[1].salt: must be a non-negative integer"},
      {"salt too big", [](json& d) { d["keys"][0]["salts"][1]["salt"] = 4294967296ull; },
       "keys[0].salts[1].salt: must be at most 4294967295"},
      {"partition out of range", [](json& d) { d["keys"][0]["salts"][1]["partition"] = 12; },
       "keys[0].salts[1].partition: must be in [0, 12)"},
      {"weight zero", [](json& d) { d["keys"][0]["salts"][2]["weight"] = 0; },
       "keys[0].salts[2].weight: must be >= 1"},
      {"weight missing", [](json& d) { d["keys"][0]["salts"][2].erase("weight"); },
       "keys[0].salts[2].weight: is required"},
      {"salt element type", [](json& d) { d["keys"][0]["salts"][2] = 3; },
       "keys[0].salts[2]: must be an object"},
      {"duplicate partition", [](json& d) { d["keys"][0]["salts"][1] = d["keys"][0]["salts"][0]; },
       "keys[0].salts[1].partition: partition " + std::to_string(actual_of_salt0) +
           " already used by keys[0].salts[0]"},
      {"salt lands elsewhere", [wrong](json& d) { d["keys"][0]["salts"][0]["partition"] = wrong; },
       "keys[0].salts[0]: salt " + std::to_string(s0[0].salt) + " lands on partition " +
           std::to_string(actual_of_salt0) + ", not " + std::to_string(wrong) +
           " (fnv1a, 12 partitions, separator '|')"},
      {"partition count changed", [](json& d) { d["partitions"] = 13; }, "keys[0].salts[0]: "},
      {"separator changed", [](json& d) { d["separator"] = "#"; }, "keys[0].salts[0]: "},
      {"source unknown", [](json& d) { d["keys"][0]["source"] = "manual"; },
       "keys[0].source: must be \"detected\", \"balance\" or \"pinned\""},
      {"rate negative", [](json& d) { d["keys"][0]["rate"] = -1; },
       "keys[0].rate: must be a finite number >= 0"},
      {"rate type", [](json& d) { d["keys"][0]["rate"] = "fast"; },
       "keys[0].rate: must be a number"},
      {"share above one", [](json& d) { d["keys"][0]["share"] = 1.01; },
       "keys[0].share: must be a number in [0, 1]"},
      {"duplicate hot key", [](json& d) { d["keys"].push_back(d["keys"][0]); },
       "keys[2].key: duplicate of keys[0]"},
      {"denied type", [](json& d) { d["denied"] = "x"; }, "denied: must be an array"},
      {"denied element", [](json& d) { d["denied"][0] = "account-1"; },
       "denied[0]: must be an object"},
      {"denied neither", [](json& d) { d["denied"][0] = json::object(); },
       "denied[0]: needs key or key_b64"},
      {"denied duplicate",
       [](json& d) {
         d["denied"].push_back({{"key_b64", "gA=="}});
       },
       "denied[2].key: duplicate of denied[1]"},
      {"denied and hot",
       [](json& d) {
         d["denied"].push_back({{"key", "seller-9"}});
       },
       "denied[2].key: is also listed as hot in keys[0]"},
  };
  for (const Rule& rule : rules) {
    SCOPED_TRACE(rule.name);
    json doc = sample_json();
    rule.mutate(doc);
    try {
      parse_list_json(doc.dump());
      ADD_FAILURE() << "accepted";
    } catch (const DecodeError& e) {
      // Rules whose exact partitions depend on the hash give only the message's start.
      EXPECT_EQ(std::string(e.what()).substr(0, rule.message.size()), rule.message);
      if (rule.message.back() != ' ') {
        EXPECT_EQ(std::string(e.what()), rule.message);
      }
    }
  }
}

TEST(HotKeyList, RejectsMalformedJsonGracefully) {
  auto message = [](std::string_view text) {
    try {
      parse_list_json(text);
    } catch (const DecodeError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("[]"), "hot-key list: must be a JSON object");
  EXPECT_EQ(message("{").rfind("hot-key list: invalid JSON: ", 0), 0u);
  EXPECT_EQ(message("{\"keys\":" + std::string(100000, '[')),
            "hot-key list: JSON nested deeper than 16 levels");
}

TEST(HotKeyList, LimitsApply) {
  ReportLimits limits;
  limits.max_items = 1;
  EXPECT_THROW(parse_list_json(list_to_json(sample_list()), limits), DecodeError);
  limits = {};
  limits.max_partitions = 8;
  try {
    parse_list_json(list_to_json(sample_list()), limits);
    ADD_FAILURE();
  } catch (const DecodeError& e) {
    EXPECT_EQ(std::string(e.what()), "partitions: must be at most 8");
  }
}

TEST(HotKeyList, KeySourceNames) {
  EXPECT_EQ(to_string(KeySource::kDetected), "detected");
  EXPECT_EQ(to_string(KeySource::kPinned), "pinned");
  EXPECT_EQ(to_string(KeySource::kBalance), "balance");
}

// A key salted for balance travels as "source": "detected" plus "balance": true: clients that
// know only detected|pinned refuse a list with any other source (issue 26, CONTRACTS.md 6).
TEST(HotKeyList, BalanceKeysStayReadableByClientsThatKnowTwoSources) {
  HotKeyList list = sample_list();
  list.keys[0].source = KeySource::kBalance;
  const std::string text = list_to_json(list);
  const json doc = json::parse(text);
  EXPECT_EQ(doc["keys"][0]["source"], "detected");
  EXPECT_EQ(doc["keys"][0]["balance"], true);
  EXPECT_FALSE(doc["keys"][1].contains("balance"));
  const HotKeyList back = parse_list_json(text);
  EXPECT_EQ(back.keys[0].source, KeySource::kBalance);
  EXPECT_EQ(back, list);
  // Written "balance" directly (a later writer) reads the same; a non-boolean flag is refused.
  json direct = doc;
  direct["keys"][0]["source"] = "balance";
  direct["keys"][0].erase("balance");
  EXPECT_EQ(parse_list_json(direct.dump()).keys[0].source, KeySource::kBalance);
  json bad = doc;
  bad["keys"][0]["balance"] = "yes";
  EXPECT_THROW(parse_list_json(bad.dump()), DecodeError);
}

TEST(HotKeyList, CorruptedJsonIsRejectedCleanly) {
  std::mt19937_64 rng(11);
  const std::string text = list_to_json(sample_list());
  for (int round = 0; round < 500; ++round) {
    std::string b = text;
    for (int f = 0; f < 1 + static_cast<int>(rng() % 3); ++f) {
      size_t at = rng() % b.size();
      if (rng() % 2 == 0) {
        b[at] = static_cast<char>(rng() & 0xFF);
      } else {
        b.erase(at, 1 + rng() % 8);
      }
      if (b.empty()) b = "x";
    }
    std::optional<HotKeyList> list;
    try {
      list = parse_list_json(b);
    } catch (const DecodeError&) {
      continue;
    }
    // Whatever the decoder accepts holds every invariant. Outside the try: a validation
    // failure here must fail the test, not be taken for a rejected input.
    EXPECT_NO_THROW(validate_list(*list)) << "accepted input of round " << round;
  }
}

}  // namespace
}  // namespace hotkey
