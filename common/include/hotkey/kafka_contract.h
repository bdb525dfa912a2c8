// The Kafka wire contract between producers and coordinators (docs/CONTRACTS.md, "Reports
// through Kafka"; docs/CLUSTER.md): the client's kafka transport and the librdkafka plugin
// write each report (hotkey/report.h, binary form) to the reports topic keyed by its data
// topic, in that topic's partition, with the report format version in a header; the lists topic
// is co-partitioned, so a data topic's lists sit in the same partition number, keyed by the
// topic, and the member owning that partition owns the topic. The one definition both sides
// use. Pure constants and functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "hotkey/partitioner.h"

namespace hotkey {

// The header names view NUL-terminated literals: .data() is a C string for librdkafka.
// Record header carrying the report format version; consumers skip reports with another value.
inline constexpr std::string_view kReportVersionHeader = "hotkey.report.v";
inline constexpr std::string_view kReportVersion = "1";
// Record header naming the coordinator (its advertised URL) that wrote a lists or state record.
inline constexpr std::string_view kMemberHeader = "hotkey.member";

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
