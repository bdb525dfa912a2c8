// Fuzz target: the decoders of the coordinator's RocksDB records (pins, denies, topic meta,
// version counters, audit entries, lists), which Store::open/load/audit run on whatever a data
// dir holds after a crash, a disk fault or a foreign writer. Input: RECORD_KEY '\n' VALUE.
// Every decoder sees VALUE; load_record (what Store::load runs per record) sees both. Accepted
// records must survive their encoder's round trip; rejection must be a DecodeError.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/report.h"
#include "store_records.h"

namespace {

using namespace hotkey::coordinator;

bool same(const AuditEntry& a, const AuditEntry& b) {
  return a.seq == b.seq && a.at_ms == b.at_ms && a.who == b.who && a.action == b.action &&
         a.topic == b.topic && a.key == b.key && a.detail == b.detail && a.version == b.version;
}

bool same(const TopicMeta& a, const TopicMeta& b) {
  return a.partitions == b.partitions && a.hash == b.hash && a.separator == b.separator;
}

template <typename F>
void rejects_cleanly(F&& f) {
  try {
    f();
  } catch (const hotkey::DecodeError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view key = input.substr(0, newline);
  const std::string_view value =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);

  rejects_cleanly([&] {
    const Pin p = decode_pin_record(value);
    HOTKEY_FUZZ_CHECK(decode_pin_record(encode_pin_record(p)) == p);
  });
  rejects_cleanly([&] {
    const Deny d = decode_deny_record(value);
    HOTKEY_FUZZ_CHECK(decode_deny_record(encode_deny_record(d)) == d);
  });
  rejects_cleanly([&] {
    const TopicMeta m = decode_topic_meta_record(value);
    HOTKEY_FUZZ_CHECK(m.partitions >= 1);
    HOTKEY_FUZZ_CHECK(hotkey::valid_separator(m.separator));
    HOTKEY_FUZZ_CHECK(same(decode_topic_meta_record(encode_topic_meta_record(m)), m));
  });
  rejects_cleanly([&] {
    const uint64_t v = decode_version_record(value);
    HOTKEY_FUZZ_CHECK(encode_version_record(v) == value);
  });
  rejects_cleanly([&] {
    const AuditEntry a = decode_audit_record(value);
    HOTKEY_FUZZ_CHECK(a.seq >= 1);
    HOTKEY_FUZZ_CHECK(same(decode_audit_record(audit_to_json(a)), a));
  });

  std::map<std::string, StoredTopic> topics;
  try {
    load_record(key, value, topics);
  } catch (const hotkey::DecodeError&) {
    return 0;
  }
  HOTKEY_FUZZ_CHECK(topics.size() <= 1);
  for (const auto& [topic, t] : topics) {
    HOTKEY_FUZZ_CHECK(hotkey::valid_topic_name(topic));
    if (t.list) {
      HOTKEY_FUZZ_CHECK(t.list->topic == topic);
      hotkey::validate_list(*t.list);
      HOTKEY_FUZZ_CHECK(hotkey::parse_list_json(hotkey::list_to_json(*t.list)) == *t.list);
    }
    for (const auto& [k, p] : t.pins) HOTKEY_FUZZ_CHECK(k == p.key);
    for (const auto& [k, d] : t.denies) HOTKEY_FUZZ_CHECK(k == d.key);
  }
  return 0;
}
