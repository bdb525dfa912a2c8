// The Kafka wire contract between producers and coordinators (docs/CONTRACTS.md, "Reports
// through Kafka"; docs/CLUSTER.md): the client's kafka transport and the librdkafka plugin
// write each report (hotkey/report.h, binary form) to the reports topic keyed by its data
// topic, in that topic's partition, with the report format version in a header; the lists topic
// is co-partitioned, so a data topic's lists sit in the same partition number, keyed by the
// topic, and the member owning that partition owns the topic. The one definition both sides
// use. Pure constants and functions, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hotkey/partitioner.h"

namespace hotkey {

// The header names view NUL-terminated literals: .data() is a C string for librdkafka.
// Record header carrying the report format version; consumers skip reports with another value.
inline constexpr std::string_view kReportVersionHeader = "hotkey.report.v";
inline constexpr std::string_view kReportVersion = "1";
// Record header naming the coordinator (its advertised URL) that wrote a lists or state record.
inline constexpr std::string_view kMemberHeader = "hotkey.member";

// The ownership heartbeat (docs/CONTRACTS.md, "Ownership heartbeat"): the member owning lists
// partition p writes, at takeover and every `interval_ms`, a record keyed kOwnerHeartbeatKey to
// partition p. A '/' never occurs in a Kafka topic name, so the key is never a data topic's; a
// reader of lists ignores it as a list. Readers learn from it who owns p with which epoch and,
// by their own receive clock (never `at_ms`: hosts' clocks differ), whether that owner is alive.
inline constexpr std::string_view kOwnerHeartbeatKey = "/owner";

struct OwnerHeartbeat {
  std::string owner;      // the member's advertised URL
  std::string member_id;  // its consumer group member id (empty when not known yet)
  int32_t partition = 0;
  uint64_t epoch = 0;        // the ownership's epoch (versions epoch << 32 | sequence)
  int64_t at_ms = 0;         // the writer's wall clock
  uint32_t interval_ms = 0;  // the next heartbeat is due within this
  bool operator==(const OwnerHeartbeat&) const = default;
};

// The heartbeat's value: {"v":1,"owner":...,"member_id":...,"partition":p,"epoch":E,"at_ms":T,
// "interval_ms":I}.
std::string encode_owner_heartbeat(const OwnerHeartbeat& beat);
// nullopt for anything but a well-formed version-1 heartbeat (readers skip such records, as they
// skip lists no client would accept). Unknown members are ignored.
std::optional<OwnerHeartbeat> parse_owner_heartbeat(std::string_view value);

// fetch.wait.max.ms of a producer's lists consumer (the C++ client's kafka transport; the
// Java client's fetch.max.wait.ms is the same value). Not wire format but the fleet's load on
// the lists partitions' leaders: a broker answers a parked fetch when a list is appended, so
// this sets only how often an idle producer asks (docs/BENCHMARKS.md, "List fan-out").
inline constexpr std::string_view kListsFetchWaitMs = "500";

// The reports and lists partition of data topic `topic`: (murmur2(topic) & 0x7fffffff) %
// partitions, where librdkafka's murmur2_random partitioner (and the Java client's default)
// puts a record keyed by the topic. -1 when partitions < 1.
inline int32_t topic_partition(std::string_view topic, int32_t partitions) noexcept {
  if (partitions < 1) return -1;
  return static_cast<int32_t>(family_hash(HashFamily::kMurmur2, topic.data(), topic.size()) %
                              static_cast<uint32_t>(partitions));
}

}  // namespace hotkey
