// The coordinator's HTTP API answers as values (docs/API.md, docs/openapi.yaml): one struct per
// JSON shape with its nlohmann/json codec, used by the server to write them, by hotkeyctl to
// read them and by the tests. Keys travel as "key" (UTF-8) or "key_b64" (anything else); the
// structs hold the key's bytes. Value types; the codecs are pure functions.
//
// Reading is lenient about absence (a missing field keeps its default, so an older or newer
// coordinator still reads) and strict about type (a present field of the wrong JSON type
// throws nlohmann::json::type_error). Writing produces exactly the fields the API documents.
//
// Not installed with the client library: it is the contract between this repository's
// programs, and it needs nlohmann/json.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hotkey::api {

using Json = nlohmann::json;

// The body of every refusal: {"error": message, "reason"?: machine-readable reason}.
struct Error {
  std::string error;
  std::string reason;  // empty: not sent (too_many_pins, not_found... when there is one)
  bool operator==(const Error&) const = default;
};

// One topic in GET /v1/topics, and the head of GET /v1/topics/{topic}.
struct TopicSummary {
  std::string topic;
  int32_t partitions = 0;
  std::string hash;  // hash family name (murmur2, ...)
  std::string separator;
  double rate = 0;
  double skew = 1.0;
  double predicted_skew = 1.0;
  double idle_partitions_ratio = 0;
  uint32_t producers = 0;
  uint64_t version = 0;
  uint32_t hot_keys = 0;
  uint32_t balance_keys = 0;  // of hot_keys, those salted for balance (source "balance")
  uint32_t pins = 0;
  uint32_t denies = 0;
  uint32_t policies = 0;  // prefix policies (GET /v1/topics/{topic}/policies)
  uint64_t window_reports = 0;
  double window_total = 0;
  // Cluster mode only (absent in single-node mode): the advertised URL of the member that owns
  // the topic (empty: nobody known to own it), and whether the summary is that owner's. When the
  // owner did not answer, the member that was asked built it from the topic's last list and the
  // pins and denies it applied: rate, skew, producers and window fields are then 0.
  std::optional<std::string> owner;
  bool owner_answered = true;  // written with `owner`
  bool operator==(const TopicSummary&) const = default;
};

// An operator pin as the API shows it.
struct Pin {
  std::string key;
  uint32_t salts = 0;         // 0: computed from the key's share
  int64_t expires_at_ms = 0;  // 0: never
  std::string reason;
  std::string by;
  int64_t created_at_ms = 0;
  bool operator==(const Pin&) const = default;
};

// An operator deny as the API shows it.
struct Deny {
  std::string key;
  std::string reason;
  std::string by;
  int64_t created_at_ms = 0;
  bool operator==(const Deny&) const = default;
};

// An operator policy for every key that starts with `prefix` (docs/API.md, "Policies"): never
// salt them, or detect them at their own hot_fraction and salt them over at most max_salts
// partitions. On the wire the prefix travels as "key" (UTF-8) or "key_b64", as keys do.
struct Policy {
  std::string prefix;
  bool never_salt = false;
  double hot_fraction = 0;  // 0: the topic's
  uint32_t max_salts = 0;   // 0: the topic's
  std::string reason;
  std::string by;
  int64_t created_at_ms = 0;
  bool operator==(const Policy&) const = default;
};

// Reports of one producer the coordinator refused for one reason (hash_mismatch, ...): how
// many, when last, and the last refusal's message. Kept per topic, for its view.
struct Rejection {
  std::string producer;
  std::string reason;
  uint64_t count = 0;
  int64_t last_at_ms = 0;
  std::string error;
  bool operator==(const Rejection&) const = default;
};

// GET /v1/topics/{topic}: the summary's fields plus the operator state, the per-partition load,
// the settings in force (an object of setting name -> value, with hash/separator sources) and
// the refused reports by producer and reason.
struct TopicDetail {
  TopicSummary summary;
  std::vector<Pin> pinned;
  std::vector<Deny> denied;
  std::vector<double> partition_load;
  Json settings = Json::object();
  std::vector<Rejection> rejected;
  bool operator==(const TopicDetail&) const = default;
};

// One key of GET /v1/topics/{topic}/top ("guaranteed" = count - error is derived).
struct TopEntry {
  std::string key;
  uint64_t count = 0;
  uint64_t error = 0;
  double rate = 0;
  double share = 0;
  int32_t partition = -1;
  bool hot = false;
  bool pinned = false;
  bool denied = false;
  std::string source;       // why a listed key is salted: detected, balance or pinned ("" unlisted)
  bool never_salt = false;  // under a never_salt policy (and not pinned or denied)
  bool operator==(const TopEntry&) const = default;
};

// GET /v1/topics/{topic}/top.
struct TopAnswer {
  std::string topic;
  double rate = 0;
  double window_total = 0;
  std::vector<TopEntry> items;
  bool operator==(const TopAnswer&) const = default;
};

// GET /v1/topics.
struct TopicsAnswer {
  std::vector<TopicSummary> topics;
  bool operator==(const TopicsAnswer&) const = default;
};

// GET /v1/topics/{topic}/pins.
struct PinsAnswer {
  std::vector<Pin> pins;
  bool operator==(const PinsAnswer&) const = default;
};

// GET /v1/topics/{topic}/denies.
struct DeniesAnswer {
  std::vector<Deny> denies;
  bool operator==(const DeniesAnswer&) const = default;
};

// GET /v1/topics/{topic}/policies, by prefix.
struct PoliciesAnswer {
  std::vector<Policy> policies;
  bool operator==(const PoliciesAnswer&) const = default;
};

// The answer to an accepted operator write (pin, unpin, deny, allow, policy, delete topic):
// {"ok": true, "version": list version after the call (0: no list yet)}.
struct OperatorResult {
  uint64_t version = 0;
  bool operator==(const OperatorResult&) const = default;
};

// One audit log entry (GET /v1/audit); detail is an object of action-specific fields.
struct AuditEntry {
  uint64_t seq = 0;
  int64_t at_ms = 0;
  std::string who;
  std::string action;
  std::string topic;
  std::string key;
  Json detail = Json::object();
  uint64_t version = 0;
  bool operator==(const AuditEntry&) const = default;
};

// GET /v1/audit.
struct AuditAnswer {
  std::vector<AuditEntry> entries;
  bool operator==(const AuditAnswer&) const = default;
};

// An accepted report (POST /v1/reports; in a batch each result also carries "status").
struct ReportResult {
  bool duplicate = false;  // "accepted" is its negation
  uint64_t list_version = 0;
  bool operator==(const ReportResult&) const = default;
};

// GET /v1/cluster. In single-node mode only mode, member_id, url, generation, members and
// owners are sent (empty); cluster mode sends every field.
// One member of the coordinators' group, as its ownership heartbeats show it (this member: as
// its own assignment does).
struct GroupMember {
  std::string member_id;
  std::string url;                  // its advertised URL
  std::vector<int32_t> partitions;  // the reports (and lists) partitions it owns
  int64_t heartbeat_age_ms = 0;     // since its oldest partition's last heartbeat arrived
  bool writes_lists = false;        // seen writing lists in the last 3 republish intervals
  bool operator==(const GroupMember&) const = default;
};

struct ClusterView {
  std::string mode = "single";  // single or cluster
  std::string member_id;
  std::string url;
  std::string group;
  uint64_t generation = 0;
  // The members seen writing lists in the last 3 republish intervals (and this one).
  std::vector<std::string> members;
  // The members owning partitions, from their ownership heartbeats (silent for 3 heartbeat
  // intervals: left out), and this member.
  std::vector<GroupMember> group_members;
  std::map<std::string, std::string> owners;         // topic -> owner's URL
  std::map<std::string, uint64_t> owned_partitions;  // reports partition -> epoch
  int32_t partitions = 0;
  uint64_t reports_ingested = 0;
  uint64_t reports_forwarded = 0;
  uint64_t reports_skipped = 0;
  uint64_t lists_produced = 0;
  uint64_t lists_dropped = 0;
  bool cluster() const { return mode == "cluster"; }
  bool operator==(const ClusterView&) const = default;
};

// GET /healthz.
struct Health {
  std::string status = "ok";
  bool operator==(const Health&) const = default;
};

// GET /readyz: {"status": "ready" | "not ready", "error"?: why, "checked_at_ms"}.
struct Readiness {
  bool ready = false;
  std::string error;  // sent when not ready
  int64_t checked_at_ms = 0;
  bool operator==(const Readiness&) const = default;
};

// Adds "key" or "key_b64" for `key`'s bytes to the object `j`.
void put_key(Json& j, const std::string& key);
// The key bytes of an object carrying "key" or "key_b64" ("" when neither; an invalid base64
// value also reads as "").
std::string get_key(const Json& j);

// The text the server sends: compact, invalid UTF-8 replaced (keys that are not UTF-8 travel as
// key_b64, so only free text could carry it).
std::string dump(const Json& j);

void to_json(Json& j, const Error& v);
void from_json(const Json& j, Error& v);
void to_json(Json& j, const TopicSummary& v);
void from_json(const Json& j, TopicSummary& v);
void to_json(Json& j, const Pin& v);
void from_json(const Json& j, Pin& v);
void to_json(Json& j, const Deny& v);
void from_json(const Json& j, Deny& v);
void to_json(Json& j, const Policy& v);
void from_json(const Json& j, Policy& v);
void to_json(Json& j, const Rejection& v);
void from_json(const Json& j, Rejection& v);
void to_json(Json& j, const TopicDetail& v);
void from_json(const Json& j, TopicDetail& v);
void to_json(Json& j, const TopEntry& v);
void from_json(const Json& j, TopEntry& v);
void to_json(Json& j, const TopAnswer& v);
void from_json(const Json& j, TopAnswer& v);
void to_json(Json& j, const TopicsAnswer& v);
void from_json(const Json& j, TopicsAnswer& v);
void to_json(Json& j, const PinsAnswer& v);
void from_json(const Json& j, PinsAnswer& v);
void to_json(Json& j, const DeniesAnswer& v);
void from_json(const Json& j, DeniesAnswer& v);
void to_json(Json& j, const PoliciesAnswer& v);
void from_json(const Json& j, PoliciesAnswer& v);
void to_json(Json& j, const OperatorResult& v);
void from_json(const Json& j, OperatorResult& v);
void to_json(Json& j, const AuditEntry& v);
void from_json(const Json& j, AuditEntry& v);
void to_json(Json& j, const AuditAnswer& v);
void from_json(const Json& j, AuditAnswer& v);
void to_json(Json& j, const ReportResult& v);
void from_json(const Json& j, ReportResult& v);
void to_json(Json& j, const GroupMember& v);
void from_json(const Json& j, GroupMember& v);
void to_json(Json& j, const ClusterView& v);
void from_json(const Json& j, ClusterView& v);
void to_json(Json& j, const Health& v);
void from_json(const Json& j, Health& v);
void to_json(Json& j, const Readiness& v);
void from_json(const Json& j, Readiness& v);

}  // namespace hotkey::api
