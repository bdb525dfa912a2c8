// Byte formats of the records the Store keeps in RocksDB: one JSON object per pin, deny, policy, topic
// meta and audit entry, decimal text per version counter, the list's own JSON per list. Pure
// functions, safe from any thread. Decoders check every field and throw hotkey::DecodeError
// naming what is wrong, so a damaged data dir is refused with a message (and fuzzed: fuzz/).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "hotkey/hotkey_list.h"
#include "hotkey/report.h"
#include "state_store.h"

namespace hotkey::coordinator {

// The bounds the list and topic-meta decoders apply: list_invariant_limits() (state_store.h).
ReportLimits store_limits();

// A list as the store keeps it: validated with exactly the rules decode_list_record applies,
// so nothing is ever written that a restart would refuse. Throws DecodeError (and writes
// nothing) for a list that breaks them.
std::string encode_list_record(const HotKeyList& list);
HotKeyList decode_list_record(std::string_view text);

std::string encode_pin_record(const Pin& pin);
Pin decode_pin_record(std::string_view text);

std::string encode_deny_record(const Deny& deny);
Deny decode_deny_record(std::string_view text);

std::string encode_policy_record(const Policy& policy);
Policy decode_policy_record(std::string_view text);

std::string encode_topic_meta_record(const TopicMeta& meta);
TopicMeta decode_topic_meta_record(std::string_view text);

std::string encode_version_record(uint64_t version);
uint64_t decode_version_record(std::string_view text);

std::string audit_to_json(const AuditEntry& entry);
AuditEntry decode_audit_record(std::string_view text);

// One record as Store::load reads it: `key` is its RocksDB key ("l/<topic>", "v/<topic>",
// "t/<topic>", "p/<topic>/<base64 key>", "d/<topic>/<base64 key>", "r/<topic>/<base64
// prefix>"); the decoded value is
// added to `topics`. Format, probe and audit records ("m/...", "a/...") and keys of no known
// shape are skipped. Throws DecodeError for a damaged record or a key its value contradicts.
void load_record(std::string_view key, std::string_view value,
                 std::map<std::string, StoredTopic>& topics);

}  // namespace hotkey::coordinator
