#include "hotkey/api_model.h"

#include "hotkey/key_codec.h"

namespace hotkey::api {
namespace {

// Reads `name` into `out` when present and not null; a wrong JSON type throws.
template <typename T>
void read(const Json& j, const char* name, T& out) {
  if (!j.is_object()) return;
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return;
  it->get_to(out);
}

}  // namespace

void put_key(Json& j, const std::string& key) {
  EncodedKey enc = encode_key(key);
  j[std::string(enc.field)] = std::move(enc.value);
}

std::string get_key(const Json& j) {
  if (!j.is_object()) return "";
  if (auto it = j.find("key_b64"); it != j.end() && it->is_string()) {
    return base64_decode(it->get<std::string>()).value_or("");
  }
  if (auto it = j.find("key"); it != j.end() && it->is_string()) return it->get<std::string>();
  return "";
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

void to_json(Json& j, const Error& v) {
  j = Json{{"error", v.error}};
  if (!v.reason.empty()) j["reason"] = v.reason;
}
void from_json(const Json& j, Error& v) {
  read(j, "error", v.error);
  read(j, "reason", v.reason);
}

void to_json(Json& j, const TopicSummary& v) {
  j = Json{{"topic", v.topic},
           {"partitions", v.partitions},
           {"hash", v.hash},
           {"separator", v.separator},
           {"rate", v.rate},
           {"skew", v.skew},
           {"predicted_skew", v.predicted_skew},
           {"idle_partitions_ratio", v.idle_partitions_ratio},
           {"producers", v.producers},
           {"version", v.version},
           {"hot_keys", v.hot_keys},
           {"balance_keys", v.balance_keys},
           {"pins", v.pins},
           {"denies", v.denies},
           {"policies", v.policies},
           {"window_reports", v.window_reports},
           {"window_total", v.window_total}};
  if (v.owner) {
    j["owner"] = *v.owner;
    j["owner_answered"] = v.owner_answered;
  }
}
void from_json(const Json& j, TopicSummary& v) {
  read(j, "topic", v.topic);
  read(j, "partitions", v.partitions);
  read(j, "hash", v.hash);
  read(j, "separator", v.separator);
  read(j, "rate", v.rate);
  read(j, "skew", v.skew);
  v.predicted_skew = v.skew;  // an answer without a prediction predicts no change
  read(j, "predicted_skew", v.predicted_skew);
  read(j, "idle_partitions_ratio", v.idle_partitions_ratio);
  read(j, "producers", v.producers);
  read(j, "version", v.version);
  read(j, "hot_keys", v.hot_keys);
  read(j, "balance_keys", v.balance_keys);
  read(j, "pins", v.pins);
  read(j, "denies", v.denies);
  read(j, "policies", v.policies);
  read(j, "window_reports", v.window_reports);
  read(j, "window_total", v.window_total);
  if (j.is_object() && j.contains("owner") && !j["owner"].is_null()) {
    v.owner = j["owner"].get<std::string>();
  }
  read(j, "owner_answered", v.owner_answered);
}

void to_json(Json& j, const Pin& v) {
  j = Json::object();
  put_key(j, v.key);
  j["salts"] = v.salts;
  j["expires_at_ms"] = v.expires_at_ms;
  j["reason"] = v.reason;
  j["by"] = v.by;
  j["created_at_ms"] = v.created_at_ms;
}
void from_json(const Json& j, Pin& v) {
  v.key = get_key(j);
  read(j, "salts", v.salts);
  read(j, "expires_at_ms", v.expires_at_ms);
  read(j, "reason", v.reason);
  read(j, "by", v.by);
  read(j, "created_at_ms", v.created_at_ms);
}

void to_json(Json& j, const Deny& v) {
  j = Json::object();
  put_key(j, v.key);
  j["reason"] = v.reason;
  j["by"] = v.by;
  j["created_at_ms"] = v.created_at_ms;
}
void from_json(const Json& j, Deny& v) {
  v.key = get_key(j);
  read(j, "reason", v.reason);
  read(j, "by", v.by);
  read(j, "created_at_ms", v.created_at_ms);
}

void to_json(Json& j, const Policy& v) {
  j = Json::object();
  put_key(j, v.prefix);
  j["never_salt"] = v.never_salt;
  j["hot_fraction"] = v.hot_fraction;
  j["max_salts"] = v.max_salts;
  j["reason"] = v.reason;
  j["by"] = v.by;
  j["created_at_ms"] = v.created_at_ms;
}
void from_json(const Json& j, Policy& v) {
  v.prefix = get_key(j);
  read(j, "never_salt", v.never_salt);
  read(j, "hot_fraction", v.hot_fraction);
  read(j, "max_salts", v.max_salts);
  read(j, "reason", v.reason);
  read(j, "by", v.by);
  read(j, "created_at_ms", v.created_at_ms);
}

void to_json(Json& j, const Rejection& v) {
  j = Json::object();
  j["producer"] = v.producer;
  j["reason"] = v.reason;
  j["count"] = v.count;
  j["last_at_ms"] = v.last_at_ms;
  j["error"] = v.error;
}
void from_json(const Json& j, Rejection& v) {
  read(j, "producer", v.producer);
  read(j, "reason", v.reason);
  read(j, "count", v.count);
  read(j, "last_at_ms", v.last_at_ms);
  read(j, "error", v.error);
}

void to_json(Json& j, const TopicDetail& v) {
  to_json(j, v.summary);
  j["pinned"] = v.pinned;
  j["denied"] = v.denied;
  j["partition_load"] = v.partition_load;
  j["settings"] = v.settings;
  j["rejected"] = v.rejected;
}
void from_json(const Json& j, TopicDetail& v) {
  from_json(j, v.summary);
  read(j, "pinned", v.pinned);
  read(j, "denied", v.denied);
  read(j, "partition_load", v.partition_load);
  read(j, "settings", v.settings);
  read(j, "rejected", v.rejected);
}

void to_json(Json& j, const TopEntry& v) {
  j = Json::object();
  put_key(j, v.key);
  j["count"] = v.count;
  j["error"] = v.error;
  j["guaranteed"] = v.count - v.error;
  j["rate"] = v.rate;
  j["share"] = v.share;
  j["partition"] = v.partition;
  j["hot"] = v.hot;
  if (!v.source.empty()) j["source"] = v.source;
  j["pinned"] = v.pinned;
  j["denied"] = v.denied;
  j["never_salt"] = v.never_salt;
}
void from_json(const Json& j, TopEntry& v) {
  v.key = get_key(j);
  read(j, "count", v.count);
  read(j, "error", v.error);
  read(j, "rate", v.rate);
  read(j, "share", v.share);
  read(j, "partition", v.partition);
  read(j, "hot", v.hot);
  read(j, "source", v.source);
  read(j, "pinned", v.pinned);
  read(j, "denied", v.denied);
  read(j, "never_salt", v.never_salt);
}

void to_json(Json& j, const TopAnswer& v) {
  j = Json{
      {"topic", v.topic}, {"rate", v.rate}, {"window_total", v.window_total}, {"items", v.items}};
}
void from_json(const Json& j, TopAnswer& v) {
  read(j, "topic", v.topic);
  read(j, "rate", v.rate);
  read(j, "window_total", v.window_total);
  read(j, "items", v.items);
}

void to_json(Json& j, const TopicsAnswer& v) { j = Json{{"topics", v.topics}}; }
void from_json(const Json& j, TopicsAnswer& v) { read(j, "topics", v.topics); }

void to_json(Json& j, const PinsAnswer& v) { j = Json{{"pins", v.pins}}; }
void from_json(const Json& j, PinsAnswer& v) { read(j, "pins", v.pins); }

void to_json(Json& j, const DeniesAnswer& v) { j = Json{{"denies", v.denies}}; }
void from_json(const Json& j, DeniesAnswer& v) { read(j, "denies", v.denies); }

void to_json(Json& j, const PoliciesAnswer& v) { j = Json{{"policies", v.policies}}; }
void from_json(const Json& j, PoliciesAnswer& v) { read(j, "policies", v.policies); }

void to_json(Json& j, const OperatorResult& v) { j = Json{{"ok", true}, {"version", v.version}}; }
void from_json(const Json& j, OperatorResult& v) { read(j, "version", v.version); }

void to_json(Json& j, const AuditEntry& v) {
  j = Json::object();
  j["seq"] = v.seq;
  j["at_ms"] = v.at_ms;
  j["who"] = v.who;
  j["action"] = v.action;
  j["topic"] = v.topic;
  put_key(j, v.key);
  j["detail"] = v.detail;
  j["version"] = v.version;
}
void from_json(const Json& j, AuditEntry& v) {
  read(j, "seq", v.seq);
  read(j, "at_ms", v.at_ms);
  read(j, "who", v.who);
  read(j, "action", v.action);
  read(j, "topic", v.topic);
  v.key = get_key(j);
  read(j, "detail", v.detail);
  read(j, "version", v.version);
}

void to_json(Json& j, const AuditAnswer& v) { j = Json{{"entries", v.entries}}; }
void from_json(const Json& j, AuditAnswer& v) { read(j, "entries", v.entries); }

void to_json(Json& j, const ReportResult& v) {
  j = Json{
      {"accepted", !v.duplicate}, {"duplicate", v.duplicate}, {"list_version", v.list_version}};
}
void from_json(const Json& j, ReportResult& v) {
  read(j, "duplicate", v.duplicate);
  read(j, "list_version", v.list_version);
}

void to_json(Json& j, const GroupMember& v) {
  j = Json{{"member_id", v.member_id},
           {"url", v.url},
           {"partitions", v.partitions},
           {"heartbeat_age_ms", v.heartbeat_age_ms},
           {"writes_lists", v.writes_lists}};
}
void from_json(const Json& j, GroupMember& v) {
  read(j, "member_id", v.member_id);
  read(j, "url", v.url);
  read(j, "heartbeat_age_ms", v.heartbeat_age_ms);
  read(j, "partitions", v.partitions);
  read(j, "writes_lists", v.writes_lists);
}

void to_json(Json& j, const ClusterView& v) {
  j = Json{{"mode", v.mode},       {"member_id", v.member_id},
           {"url", v.url},         {"generation", v.generation},
           {"members", v.members}, {"owners", v.owners}};
  if (!v.cluster()) return;
  j["group"] = v.group;
  j["owned_partitions"] = v.owned_partitions;
  j["partitions"] = v.partitions;
  j["reports_ingested"] = v.reports_ingested;
  j["reports_forwarded"] = v.reports_forwarded;
  j["reports_skipped"] = v.reports_skipped;
  j["lists_produced"] = v.lists_produced;
  j["lists_dropped"] = v.lists_dropped;
  j["group_members"] = v.group_members;
}
void from_json(const Json& j, ClusterView& v) {
  read(j, "mode", v.mode);
  read(j, "member_id", v.member_id);
  read(j, "url", v.url);
  read(j, "group", v.group);
  read(j, "generation", v.generation);
  read(j, "members", v.members);
  read(j, "owners", v.owners);
  read(j, "owned_partitions", v.owned_partitions);
  read(j, "partitions", v.partitions);
  read(j, "reports_ingested", v.reports_ingested);
  read(j, "reports_forwarded", v.reports_forwarded);
  read(j, "reports_skipped", v.reports_skipped);
  read(j, "lists_produced", v.lists_produced);
  read(j, "lists_dropped", v.lists_dropped);
  read(j, "group_members", v.group_members);
}

void to_json(Json& j, const Health& v) { j = Json{{"status", v.status}}; }
void from_json(const Json& j, Health& v) { read(j, "status", v.status); }

void to_json(Json& j, const Readiness& v) {
  j = Json{{"status", v.ready ? "ready" : "not ready"}, {"checked_at_ms", v.checked_at_ms}};
  if (!v.ready) j["error"] = v.error;
}
void from_json(const Json& j, Readiness& v) {
  std::string status;
  read(j, "status", status);
  v.ready = status == "ready";
  read(j, "error", v.error);
  read(j, "checked_at_ms", v.checked_at_ms);
}

}  // namespace hotkey::api
