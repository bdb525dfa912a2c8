#include "store_records.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "hotkey/api_model.h"
#include "hotkey/key_codec.h"
#include "hotkey/report.h"

namespace hotkey::coordinator {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what) { throw DecodeError(what); }

json parse_object(std::string_view text, const std::string& what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(what + " record is not valid JSON");
  if (!j.is_object()) fail(what + " record is not a JSON object");
  return j;
}

const json& field(const json& j, const char* name, const std::string& what) {
  auto it = j.find(name);
  if (it == j.end()) fail(what + " record has no '" + name + "'");
  return *it;
}

std::string string_field(const json& j, const char* name, const std::string& what) {
  const json& v = field(j, name, what);
  if (!v.is_string()) fail(what + " record: '" + std::string(name) + "' must be a string");
  return v.get<std::string>();
}

uint64_t unsigned_field(const json& v, const char* name, const std::string& what,
                        uint64_t max = std::numeric_limits<uint64_t>::max()) {
  if (!v.is_number_unsigned() || v.get<uint64_t>() > max) {
    fail(what + " record: '" + std::string(name) + "' must be an integer from 0 to " +
         std::to_string(max));
  }
  return v.get<uint64_t>();
}

// Milliseconds on the coordinator's wall clock: any int64 the encoder may have written.
int64_t time_field(const json& j, const char* name, const std::string& what) {
  const json& v = field(j, name, what);
  if (v.is_number_unsigned()) {
    return static_cast<int64_t>(
        unsigned_field(v, name, what, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
  }
  if (!v.is_number_integer()) {
    fail(what + " record: '" + std::string(name) + "' must be an integer (milliseconds)");
  }
  return v.get<int64_t>();
}

void put_key(json& j, const std::string& key) {
  auto enc = encode_key(key);
  j[std::string(enc.field)] = enc.value;
}

// "key" (UTF-8 text) or "key_b64"; exactly one of them, as put_key writes.
std::string key_field(const json& j, const std::string& what) {
  auto text = j.find("key");
  auto b64 = j.find("key_b64");
  if ((text == j.end()) == (b64 == j.end())) {
    fail(what + " record must have exactly one of 'key' and 'key_b64'");
  }
  if (text != j.end()) {
    if (!text->is_string()) fail(what + " record: 'key' must be a string");
    return text->get<std::string>();
  }
  if (!b64->is_string()) fail(what + " record: 'key_b64' must be a string");
  auto decoded = base64_decode(b64->get<std::string>());
  if (!decoded) fail(what + " record: 'key_b64' is not valid base64");
  return *decoded;
}

// The topic part of a record key, checked like every topic name the coordinator accepts.
std::string topic_of(std::string_view rest, std::string_view record_key) {
  if (!valid_topic_name(rest)) {
    fail("record key '" + printable_key(record_key) + "' does not name a valid topic");
  }
  return std::string(rest);
}

}  // namespace

std::string audit_to_json(const AuditEntry& a) {
  json j;
  j["seq"] = a.seq;
  j["at_ms"] = a.at_ms;
  j["who"] = a.who;
  j["action"] = a.action;
  j["topic"] = a.topic;
  put_key(j, a.key);
  j["detail"] = a.detail.empty() ? json::object() : json::parse(a.detail);
  j["version"] = a.version;
  return j.dump();
}

ReportLimits store_limits() { return list_invariant_limits(); }

std::string encode_list_record(const HotKeyList& list) {
  validate_list(list, store_limits());
  return list_to_json(list);
}

HotKeyList decode_list_record(std::string_view text) {
  return parse_list_json(text, store_limits());
}

// Pins, denies and policies are stored as the API shows them (hotkey/api_model.h writes and
// reads their fields); a stored record is checked field by field first, since a damaged one
// must stop the load with a message rather than read as defaults.
namespace {

std::string encode_api_record(const api::Json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::strict);
}

void check_key(const json& j, const std::string& what) { key_field(j, what); }
void check_string(const json& j, const char* name, const std::string& what) {
  string_field(j, name, what);
}
void check_uint32(const json& j, const char* name, const std::string& what) {
  unsigned_field(field(j, name, what), name, what, std::numeric_limits<uint32_t>::max());
}
void check_time(const json& j, const char* name, const std::string& what) {
  time_field(j, name, what);
}
void check_authored(const json& j, const std::string& what) {
  check_string(j, "reason", what);
  check_string(j, "by", what);
  check_time(j, "created_at_ms", what);
}

}  // namespace

std::string encode_pin_record(const Pin& p) { return encode_api_record(p); }

Pin decode_pin_record(std::string_view text) {
  const std::string what = "pin";
  const json j = parse_object(text, what);
  check_key(j, what);
  check_uint32(j, "salts", what);
  check_time(j, "expires_at_ms", what);
  check_authored(j, what);
  return j.get<Pin>();
}

std::string encode_deny_record(const Deny& d) { return encode_api_record(d); }

Deny decode_deny_record(std::string_view text) {
  const std::string what = "deny";
  const json j = parse_object(text, what);
  check_key(j, what);
  check_authored(j, what);
  return j.get<Deny>();
}

std::string encode_policy_record(const Policy& r) { return encode_api_record(r); }

Policy decode_policy_record(std::string_view text) {
  const std::string what = "policy";
  const json j = parse_object(text, what);
  if (key_field(j, what).empty()) fail("policy record: the prefix is empty");
  const json& never = field(j, "never_salt", what);
  if (!never.is_boolean()) fail("policy record: 'never_salt' must be a boolean");
  const json& hot = field(j, "hot_fraction", what);
  if (!hot.is_number() || !(hot.get<double>() >= 0) || !std::isfinite(hot.get<double>())) {
    fail("policy record: 'hot_fraction' must be a finite number >= 0");
  }
  check_uint32(j, "max_salts", what);
  check_authored(j, what);
  return j.get<Policy>();
}

std::string encode_topic_meta_record(const TopicMeta& m) {
  json j;
  j["partitions"] = m.partitions;
  j["hash"] = std::string(to_string(m.hash));
  j["separator"] = m.separator;
  return j.dump(-1, ' ', false, json::error_handler_t::strict);
}

TopicMeta decode_topic_meta_record(std::string_view text) {
  const std::string what = "topic meta";
  const json j = parse_object(text, what);
  TopicMeta m;
  const auto max_partitions = static_cast<uint64_t>(store_limits().max_partitions);
  m.partitions = static_cast<int32_t>(
      unsigned_field(field(j, "partitions", what), "partitions", what, max_partitions));
  if (m.partitions < 1) fail("topic meta record: 'partitions' must be at least 1");
  auto family = parse_hash_family(string_field(j, "hash", what));
  if (!family) fail("topic meta record: unknown hash family");
  m.hash = *family;
  m.separator = string_field(j, "separator", what);
  if (!valid_separator(m.separator)) fail("topic meta record: invalid separator");
  return m;
}

std::string encode_version_record(uint64_t version) { return std::to_string(version); }

uint64_t decode_version_record(std::string_view text) {
  // Exactly what encode_version_record writes: decimal digits, no sign, space or leading zero.
  if (text.empty() || text.size() > 20 || (text.size() > 1 && text[0] == '0')) {
    fail("version record is not a decimal number");
  }
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') fail("version record is not a decimal number");
    const auto digit = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      fail("version record is out of range");
    }
    v = v * 10 + digit;
  }
  return v;
}

AuditEntry decode_audit_record(std::string_view text) {
  const std::string what = "audit";
  const json j = parse_object(text, what);
  AuditEntry a;
  a.seq = unsigned_field(field(j, "seq", what), "seq", what);
  if (a.seq == 0) fail("audit record: 'seq' must be at least 1");
  a.at_ms = time_field(j, "at_ms", what);
  a.who = string_field(j, "who", what);
  a.action = string_field(j, "action", what);
  a.topic = string_field(j, "topic", what);
  if (j.contains("key") || j.contains("key_b64")) a.key = key_field(j, what);
  const json& detail = field(j, "detail", what);
  if (!detail.is_object()) fail("audit record: 'detail' must be an object");
  a.detail = detail.dump(-1, ' ', false, json::error_handler_t::strict);
  if (auto v = j.find("version"); v != j.end()) a.version = unsigned_field(*v, "version", what);
  return a;
}

void load_record(std::string_view key, std::string_view value,
                 std::map<std::string, StoredTopic>& topics) {
  if (key.size() < 3 || key[1] != '/') return;
  const char kind = key[0];
  if (kind == 'm' || kind == 'a') return;
  const std::string_view rest = key.substr(2);
  switch (kind) {
    case 'l': {
      const std::string topic = topic_of(rest, key);
      HotKeyList list = decode_list_record(value);
      if (list.topic != topic) fail("list record of '" + topic + "' holds another topic's list");
      topics[topic].list = std::move(list);
      return;
    }
    case 'v':
      topics[topic_of(rest, key)].version = decode_version_record(value);
      return;
    case 't':
      topics[topic_of(rest, key)].meta = decode_topic_meta_record(value);
      return;
    case 'p':
    case 'd':
    case 'r': {
      const size_t slash = rest.find('/');
      if (slash == std::string_view::npos) {
        fail("record key '" + printable_key(key) + "' has no key part");
      }
      const std::string topic = topic_of(rest.substr(0, slash), key);
      const std::string_view id = rest.substr(slash + 1);
      if (kind == 'p') {
        Pin p = decode_pin_record(value);
        if (base64_encode(p.key) != id) fail("pin record does not match its record key");
        std::string k = p.key;
        topics[topic].pins[k] = std::move(p);
      } else if (kind == 'r') {
        Policy r = decode_policy_record(value);
        if (base64_encode(r.prefix) != id) fail("policy record does not match its record key");
        std::string k = r.prefix;
        topics[topic].policies[k] = std::move(r);
      } else {
        Deny d = decode_deny_record(value);
        if (base64_encode(d.key) != id) fail("deny record does not match its record key");
        std::string k = d.key;
        topics[topic].denies[k] = std::move(d);
      }
      return;
    }
    default:
      fail("unknown record kind in record key '" + printable_key(key) + "'");
  }
}

}  // namespace hotkey::coordinator
