// Kafka partitioner families, byte-exact with the Java client and librdkafka.
//
// Pure functions, safe from any thread. Partition counts always come from live metadata:
// nothing here assumes one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hotkey {

// The hash family a topic's producers partition keyed records with.
enum class HashFamily : uint8_t {
  kMurmur2 = 0,  // Java client default, librdkafka murmur2 / murmur2_random
  kCrc32 = 1,    // librdkafka default consistent / consistent_random
  kFnv1a = 2,    // librdkafka fnv1a / fnv1a_random (sarama-compatible)
};

// "murmur2", "crc32", "fnv1a".
std::string_view to_string(HashFamily family) noexcept;
// Parses the names above; std::nullopt for anything else.
std::optional<HashFamily> parse_hash_family(std::string_view name) noexcept;

// Kafka's murmur2 (seed 0x9747b28c), the raw 32-bit value as Java's Utils.murmur2 returns it.
uint32_t murmur2(const void* data, size_t len) noexcept;
// CRC-32 (IEEE 802.3, as zlib's crc32 and librdkafka's rd_crc32).
uint32_t crc32(const void* data, size_t len) noexcept;
// librdkafka's rd_fnv1a: 32-bit FNV-1a, then the absolute value as a signed int (sarama).
uint32_t fnv1a(const void* data, size_t len) noexcept;

// The family's 32-bit partitioning hash: a keyed record lands on family_hash(...) % P.
// murmur2 masked to 31 bits (the Java client's toPositive), crc32 and fnv1a as they are.
// The one place the family switch lives: partition_for and the client's router both use it.
// Inline: the router calls it once per record on the send path. 0 for an unknown family.
inline uint32_t family_hash(HashFamily family, const void* data, size_t len) noexcept {
  switch (family) {
    case HashFamily::kMurmur2:
      return murmur2(data, len) & 0x7fffffffu;
    case HashFamily::kCrc32:
      return crc32(data, len);
    case HashFamily::kFnv1a:
      return fnv1a(data, len);
  }
  return 0;
}

// The partition a keyed record lands on, as the family's librdkafka partitioner computes it:
// family_hash(family, key) % partitions. `partitions` must be >= 1 and `family` one of the
// enumerators (std::invalid_argument otherwise).
int32_t partition_for(HashFamily family, std::string_view key, int32_t partitions);

// Salted keys: <key bytes><separator><decimal salt>.
inline constexpr std::string_view kDefaultSeparator = "#";
// Longest decimal salt plus the longest separator allowed (see max_separator_bytes).
inline constexpr size_t kMaxSeparatorBytes = 8;
inline constexpr size_t kMaxSaltSuffixBytes = kMaxSeparatorBytes + 10;

// Returns key + separator + decimal(salt).
std::string salted_key(std::string_view key, std::string_view separator, uint32_t salt);
// Writes the salt suffix (separator + decimal salt) to `out` (at least kMaxSaltSuffixBytes
// long) and returns its length. No allocation: for the send path.
size_t write_salt_suffix(char* out, std::string_view separator, uint32_t salt) noexcept;
// The family's partition of key+separator+salt, without allocating for keys up to 256 bytes.
int32_t salted_partition_for(HashFamily family, std::string_view key, std::string_view separator,
                             uint32_t salt, int32_t partitions);

// Splits a salted key at the last separator followed only by decimal digits.
// Returns false (and leaves the outputs untouched) when `salted` has no such suffix.
bool split_salted_key(std::string_view salted, std::string_view separator,
                      std::string_view* logical_key, uint32_t* salt) noexcept;

// Checks a separator: 1..kMaxSeparatorBytes bytes, none of them a decimal digit.
bool valid_separator(std::string_view separator) noexcept;

}  // namespace hotkey
