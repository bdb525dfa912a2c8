// The versioned per-topic hot-key list the coordinator publishes and clients route with.
// Value types; the codecs are pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/partitioner.h"
#include "hotkey/report.h"
#include "hotkey/salt_planner.h"

namespace hotkey {

// Why a key is salted: detected (at or above the hot threshold, or a surge), balance (below it,
// salted by the balance-driven selection to level the partitions) or pinned (an operator pin).
// On the wire a balance key is written "source": "detected" with "balance": true, so that
// clients which know only detected|pinned keep accepting the list (docs/CONTRACTS.md section 6).
enum class KeySource : uint8_t { kDetected = 0, kPinned = 1, kBalance = 2 };
std::string_view to_string(KeySource source) noexcept;

struct HotKey {
  std::string key;
  std::vector<SaltAssignment> salts;  // verified: each salt recomputes to its partition
  KeySource source = KeySource::kDetected;
  double rate = 0;   // fleet-wide messages/s
  double share = 0;  // fraction of the topic's traffic, [0, 1]
  bool operator==(const HotKey&) const = default;
};

// Versions a coordinator issues stay below 2^63 (single node below 2^32; cluster mode epoch <<
// 32 | sequence). A version with this bit set names a producer's local table, built on the list
// of version (value - kLocalTableVersionBit) while that list was stale: the hotkey.version
// header of the records it salted and the list_version of its reports (docs/CONTRACTS.md,
// "Versions"). Clients refuse lists at or above it.
inline constexpr uint64_t kLocalTableVersionBit = uint64_t{1} << 63;

struct HotKeyList {
  std::string topic;
  uint64_t version = 0;
  int32_t partitions = 0;
  HashFamily hash = HashFamily::kMurmur2;
  std::string separator = std::string(kDefaultSeparator);
  std::vector<HotKey> keys;
  std::vector<std::string> denied;
  // Prefixes under an operator's never_salt policy: no key starting with one is listed unless
  // pinned (docs/CONTRACTS.md section 6). Informational for clients; sent only when not empty,
  // and readers before it ignore it.
  std::vector<std::string> never_salt;
  int64_t updated_at_ms = 0;
  bool operator==(const HotKeyList&) const = default;
};

// Checks bounds and invariants: topic name, partitions in [1, max_partitions], separator,
// every salt table verified with the list's family and separator, no duplicate keys, weights
// positive. Throws DecodeError.
void validate_list(const HotKeyList& list, const ReportLimits& limits = {});

std::string list_to_json(const HotKeyList& list);
// Decodes and validates (including recomputing every salt's partition).
HotKeyList parse_list_json(std::string_view json, const ReportLimits& limits = {});

}  // namespace hotkey
