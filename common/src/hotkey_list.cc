#include "hotkey/hotkey_list.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>

#include "json_fields.h"

namespace hotkey {
namespace {

using json_fields::fail;
using json_fields::index;

std::optional<KeySource> parse_key_source(std::string_view name) {
  if (name == "detected") return KeySource::kDetected;
  if (name == "pinned") return KeySource::kPinned;
  if (name == "balance") return KeySource::kBalance;
  return std::nullopt;
}

void validate_hot_key(const HotKey& hk, const std::string& path, const HotKeyList& list,
                      const ReportLimits& limits) {
  if (hk.key.size() > limits.max_key_bytes) {
    fail(path + ".key", "key longer than " + std::to_string(limits.max_key_bytes) + " bytes");
  }
  if (parse_key_source(to_string(hk.source)) == std::nullopt) {
    fail(path + ".source", "must be \"detected\", \"balance\" or \"pinned\"");
  }
  if (!std::isfinite(hk.rate) || hk.rate < 0) fail(path + ".rate", "must be a finite number >= 0");
  if (!std::isfinite(hk.share) || hk.share < 0 || hk.share > 1) {
    fail(path + ".share", "must be a number in [0, 1]");
  }
  const std::string salts_path = path + ".salts";
  if (hk.salts.empty()) fail(salts_path, "must hold at least one salt");
  if (hk.salts.size() > static_cast<size_t>(list.partitions)) {
    fail(salts_path, "has " + std::to_string(hk.salts.size()) + " salts for " +
                         std::to_string(list.partitions) + " partitions");
  }
  std::unordered_map<int32_t, size_t> used;
  used.reserve(hk.salts.size());
  for (size_t i = 0; i < hk.salts.size(); ++i) {
    const SaltAssignment& s = hk.salts[i];
    const std::string sp = index(salts_path, i);
    if (s.partition < 0 || s.partition >= list.partitions) {
      fail(sp + ".partition", "must be in [0, " + std::to_string(list.partitions) + ")");
    }
    if (s.weight == 0) fail(sp + ".weight", "must be >= 1");
    auto [it, inserted] = used.emplace(s.partition, i);
    if (!inserted) {
      fail(sp + ".partition", "partition " + std::to_string(s.partition) + " already used by " +
                                  index(salts_path, it->second));
    }
    // The table is only useful if producers land where it says: recompute with their family.
    int32_t actual =
        salted_partition_for(list.hash, hk.key, list.separator, s.salt, list.partitions);
    if (actual != s.partition) {
      fail(sp, "salt " + std::to_string(s.salt) + " lands on partition " + std::to_string(actual) +
                   ", not " + std::to_string(s.partition) + " (" +
                   std::string(to_string(list.hash)) + ", " + std::to_string(list.partitions) +
                   " partitions, separator '" + list.separator + "')");
    }
  }
}

}  // namespace

std::string_view to_string(KeySource source) noexcept {
  switch (source) {
    case KeySource::kDetected:
      return "detected";
    case KeySource::kPinned:
      return "pinned";
    case KeySource::kBalance:
      return "balance";
  }
  return "unknown";
}

void validate_list(const HotKeyList& list, const ReportLimits& limits) {
  if (list.topic.size() > limits.max_id_bytes || !valid_topic_name(list.topic)) {
    fail("topic", "must be 1-" + std::to_string(std::min<size_t>(249, limits.max_id_bytes)) +
                      " characters of [A-Za-z0-9._-]");
  }
  if (list.partitions < 1 || list.partitions > limits.max_partitions) {
    fail("partitions", "must be in [1, " + std::to_string(limits.max_partitions) + "], got " +
                           std::to_string(list.partitions));
  }
  if (to_string(list.hash) == "unknown") fail("hash", "unknown hash family");
  if (!valid_separator(list.separator)) {
    fail("separator",
         "must be 1-" + std::to_string(kMaxSeparatorBytes) + " bytes with no decimal digit");
  }
  if (list.updated_at_ms < 0) fail("updated_at_ms", "must be a non-negative integer");
  if (list.keys.size() > limits.max_items) {
    fail("keys", "has " + std::to_string(list.keys.size()) + " elements, at most " +
                     std::to_string(limits.max_items) + " allowed");
  }
  if (list.denied.size() > limits.max_items) {
    fail("denied", "has " + std::to_string(list.denied.size()) + " elements, at most " +
                       std::to_string(limits.max_items) + " allowed");
  }
  if (list.never_salt.size() > limits.max_items) {
    fail("never_salt", "has " + std::to_string(list.never_salt.size()) + " elements, at most " +
                           std::to_string(limits.max_items) + " allowed");
  }
  std::unordered_map<std::string_view, size_t> prefixes;
  for (size_t i = 0; i < list.never_salt.size(); ++i) {
    const std::string path = index("never_salt", i);
    const std::string& prefix = list.never_salt[i];
    if (prefix.empty()) fail(path + ".key", "must not be empty");
    if (prefix.size() > limits.max_key_bytes) {
      fail(path + ".key", "prefix longer than " + std::to_string(limits.max_key_bytes) + " bytes");
    }
    auto [it, inserted] = prefixes.emplace(prefix, i);
    if (!inserted) fail(path + ".key", "duplicate of " + index("never_salt", it->second));
  }
  std::unordered_map<std::string_view, size_t> keys;
  keys.reserve(list.keys.size());
  for (size_t i = 0; i < list.keys.size(); ++i) {
    const std::string path = index("keys", i);
    validate_hot_key(list.keys[i], path, list, limits);
    auto [it, inserted] = keys.emplace(list.keys[i].key, i);
    if (!inserted) fail(path + ".key", "duplicate of " + index("keys", it->second));
  }
  std::unordered_map<std::string_view, size_t> denied;
  denied.reserve(list.denied.size());
  for (size_t i = 0; i < list.denied.size(); ++i) {
    const std::string path = index("denied", i);
    const std::string& key = list.denied[i];
    if (key.size() > limits.max_key_bytes) {
      fail(path + ".key", "key longer than " + std::to_string(limits.max_key_bytes) + " bytes");
    }
    auto [it, inserted] = denied.emplace(key, i);
    if (!inserted) fail(path + ".key", "duplicate of " + index("denied", it->second));
    // A denied key is never salted: it cannot also carry a salt table.
    if (auto hot = keys.find(key); hot != keys.end()) {
      fail(path + ".key", "is also listed as hot in " + index("keys", hot->second));
    }
  }
}

std::string list_to_json(const HotKeyList& list) {
  nlohmann::ordered_json doc;
  doc["topic"] = list.topic;
  doc["version"] = list.version;
  doc["partitions"] = list.partitions;
  doc["hash"] = std::string(to_string(list.hash));
  doc["separator"] = list.separator;
  nlohmann::ordered_json keys = nlohmann::ordered_json::array();
  for (const HotKey& hk : list.keys) {
    nlohmann::ordered_json j;
    json_fields::write_key(j, hk.key);
    nlohmann::ordered_json salts = nlohmann::ordered_json::array();
    for (const SaltAssignment& s : hk.salts) {
      salts.push_back({{"salt", s.salt}, {"partition", s.partition}, {"weight", s.weight}});
    }
    j["salts"] = std::move(salts);
    // Clients before the balance source refuse a list with an unknown source: a balance key
    // reads as detected to them, and the flag tells newer readers.
    if (hk.source == KeySource::kBalance) {
      j["source"] = std::string(to_string(KeySource::kDetected));
      j["balance"] = true;
    } else {
      j["source"] = std::string(to_string(hk.source));
    }
    j["rate"] = hk.rate;
    j["share"] = hk.share;
    keys.push_back(std::move(j));
  }
  doc["keys"] = std::move(keys);
  nlohmann::ordered_json denied = nlohmann::ordered_json::array();
  for (const std::string& key : list.denied) {
    nlohmann::ordered_json j;
    json_fields::write_key(j, key);
    denied.push_back(std::move(j));
  }
  doc["denied"] = std::move(denied);
  if (!list.never_salt.empty()) {
    nlohmann::ordered_json prefixes = nlohmann::ordered_json::array();
    for (const std::string& prefix : list.never_salt) {
      nlohmann::ordered_json j;
      json_fields::write_key(j, prefix);
      prefixes.push_back(std::move(j));
    }
    doc["never_salt"] = std::move(prefixes);
  }
  doc["updated_at_ms"] = list.updated_at_ms;
  return json_fields::dump(doc, "hot-key list");
}

HotKeyList parse_list_json(std::string_view text, const ReportLimits& limits) {
  using namespace json_fields;
  const Json doc = parse_object(text, "hot-key list");
  HotKeyList list;
  list.topic = as_string(require(doc, "", "topic"), "topic");
  list.version = as_u64(require(doc, "", "version"), "version");
  list.partitions = static_cast<int32_t>(
      as_u64(require(doc, "", "partitions"), "partitions",
             static_cast<uint64_t>(std::max(limits.max_partitions, int32_t{1}))));
  if (list.partitions < 1)
    fail("partitions", "must be in [1, " + std::to_string(limits.max_partitions) + "], got 0");
  list.hash = as_hash(require(doc, "", "hash"), "hash");
  if (const Json* v = find(doc, "separator")) list.separator = as_string(*v, "separator");
  if (const Json* v = find(doc, "updated_at_ms")) {
    list.updated_at_ms = as_nonneg_i64(*v, "updated_at_ms");
  }
  const Json& keys = as_array(require(doc, "", "keys"), "keys", limits.max_items);
  list.keys.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string path = index("keys", i);
    const Json& j = as_object(keys[i], path);
    HotKey hk;
    hk.key = read_key(j, path, limits.max_key_bytes);
    const std::string salts_path = path + ".salts";
    const Json& salts = as_array(require(j, path, "salts"), salts_path,
                                 static_cast<size_t>(std::max(list.partitions, 1)));
    hk.salts.reserve(salts.size());
    for (size_t k = 0; k < salts.size(); ++k) {
      const std::string sp = index(salts_path, k);
      const Json& s = as_object(salts[k], sp);
      SaltAssignment a;
      a.salt = as_u32(require(s, sp, "salt"), sp + ".salt");
      a.partition =
          static_cast<int32_t>(as_u64(require(s, sp, "partition"), sp + ".partition",
                                      static_cast<uint64_t>(std::numeric_limits<int32_t>::max())));
      a.weight = as_u32(require(s, sp, "weight"), sp + ".weight");
      hk.salts.push_back(a);
    }
    if (const Json* v = find(j, "source")) {
      auto source = parse_key_source(as_string(*v, path + ".source"));
      if (!source) fail(path + ".source", "must be \"detected\", \"balance\" or \"pinned\"");
      hk.source = *source;
    }
    if (const Json* v = find(j, "balance"); v && hk.source == KeySource::kDetected) {
      if (!v->is_boolean()) fail(path + ".balance", "must be a boolean");
      if (v->get<bool>()) hk.source = KeySource::kBalance;
    }
    if (const Json* v = find(j, "rate")) hk.rate = as_double(*v, path + ".rate");
    if (const Json* v = find(j, "share")) hk.share = as_double(*v, path + ".share");
    list.keys.push_back(std::move(hk));
  }
  if (const Json* v = find(doc, "denied")) {
    const Json& denied = as_array(*v, "denied", limits.max_items);
    list.denied.reserve(denied.size());
    for (size_t i = 0; i < denied.size(); ++i) {
      const std::string path = index("denied", i);
      list.denied.push_back(read_key(as_object(denied[i], path), path, limits.max_key_bytes));
    }
  }
  if (const Json* v = find(doc, "never_salt")) {
    const Json& prefixes = as_array(*v, "never_salt", limits.max_items);
    list.never_salt.reserve(prefixes.size());
    for (size_t i = 0; i < prefixes.size(); ++i) {
      const std::string path = index("never_salt", i);
      list.never_salt.push_back(
          read_key(as_object(prefixes[i], path), path, limits.max_key_bytes));
    }
  }
  validate_list(list, limits);
  return list;
}

}  // namespace hotkey
