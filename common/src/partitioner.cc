#include "hotkey/partitioner.h"

#include <array>
#include <bit>
#include <charconv>
#include <cstring>
#include <stdexcept>

#include "hotkey/key_codec.h"

namespace hotkey {
namespace {

constexpr std::array<uint32_t, 256> make_crc32_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrc32Table = make_crc32_table();

int32_t check_partitions(int32_t partitions) {
  if (partitions < 1) {
    throw std::invalid_argument("partition count must be >= 1, got " + std::to_string(partitions));
  }
  return partitions;
}

}  // namespace

std::string_view to_string(HashFamily family) noexcept {
  switch (family) {
    case HashFamily::kMurmur2:
      return "murmur2";
    case HashFamily::kCrc32:
      return "crc32";
    case HashFamily::kFnv1a:
      return "fnv1a";
  }
  return "unknown";
}

std::optional<HashFamily> parse_hash_family(std::string_view name) noexcept {
  if (name == "murmur2") return HashFamily::kMurmur2;
  if (name == "crc32") return HashFamily::kCrc32;
  if (name == "fnv1a") return HashFamily::kFnv1a;
  return std::nullopt;
}

uint32_t murmur2(const void* data, size_t len) noexcept {
  // Kafka's Utils.murmur2 (and librdkafka's rd_murmur2): 4-byte little-endian blocks.
  constexpr uint32_t kSeed = 0x9747b28cu;
  constexpr uint32_t kM = 0x5bd1e995u;
  constexpr int kR = 24;
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t h = kSeed ^ static_cast<uint32_t>(len);
  size_t blocks = len / 4;
  for (size_t i = 0; i < blocks; ++i) {
    uint32_t k;
    std::memcpy(&k, p + 4 * i, 4);
    if constexpr (std::endian::native == std::endian::big) k = __builtin_bswap32(k);
    k *= kM;
    k ^= k >> kR;
    k *= kM;
    h *= kM;
    h ^= k;
  }
  const unsigned char* tail = p + 4 * blocks;
  switch (len & 3u) {
    case 3:
      h ^= static_cast<uint32_t>(tail[2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= static_cast<uint32_t>(tail[1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= static_cast<uint32_t>(tail[0]);
      h *= kM;
  }
  h ^= h >> 13;
  h *= kM;
  h ^= h >> 15;
  return h;
}

uint32_t crc32(const void* data, size_t len) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < len; ++i) c = kCrc32Table[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t fnv1a(const void* data, size_t len) noexcept {
  constexpr uint32_t kPrime = 0x01000193u;
  constexpr uint32_t kOffset = 0x811C9DC5u;
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t h = kOffset;
  for (size_t i = 0; i < len; ++i) {
    h ^= p[i];
    h *= kPrime;
  }
  // librdkafka takes the absolute value of the signed hash to match sarama.
  auto s = static_cast<int32_t>(h);
  if (s < 0) h = 0u - h;
  return h;
}

int32_t partition_for(HashFamily family, std::string_view key, int32_t partitions) {
  check_partitions(partitions);
  // family_hash answers 0 for a value outside the enumeration; a partition must not.
  if (static_cast<uint8_t>(family) > static_cast<uint8_t>(HashFamily::kFnv1a)) {
    throw std::invalid_argument("unknown hash family");
  }
  return static_cast<int32_t>(family_hash(family, key.data(), key.size()) %
                              static_cast<uint32_t>(partitions));
}

size_t write_salt_suffix(char* out, std::string_view separator, uint32_t salt) noexcept {
  size_t n = separator.size() > kMaxSeparatorBytes ? kMaxSeparatorBytes : separator.size();
  std::memcpy(out, separator.data(), n);
  auto res = std::to_chars(out + n, out + kMaxSaltSuffixBytes, salt);
  return static_cast<size_t>(res.ptr - out);
}

std::string salted_key(std::string_view key, std::string_view separator, uint32_t salt) {
  char suffix[kMaxSaltSuffixBytes];
  size_t n = write_salt_suffix(suffix, separator, salt);
  std::string out;
  out.reserve(key.size() + n);
  out.append(key);
  out.append(suffix, n);
  return out;
}

int32_t salted_partition_for(HashFamily family, std::string_view key, std::string_view separator,
                             uint32_t salt, int32_t partitions) {
  constexpr size_t kStackKey = 256;
  if (key.size() <= kStackKey) {
    char buf[kStackKey + kMaxSaltSuffixBytes];
    std::memcpy(buf, key.data(), key.size());
    size_t n = write_salt_suffix(buf + key.size(), separator, salt);
    return partition_for(family, std::string_view(buf, key.size() + n), partitions);
  }
  return partition_for(family, salted_key(key, separator, salt), partitions);
}

bool split_salted_key(std::string_view salted, std::string_view separator,
                      std::string_view* logical_key, uint32_t* salt) noexcept {
  if (separator.empty()) return false;
  size_t pos = salted.rfind(separator);
  if (pos == std::string_view::npos) return false;
  std::string_view digits = salted.substr(pos + separator.size());
  if (digits.empty() || digits.size() > 10) return false;
  // Canonical decimal only: what write_salt_suffix produces ("0" or no leading zero).
  if (digits.size() > 1 && digits[0] == '0') return false;
  uint32_t value = 0;
  auto res = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (res.ec != std::errc() || res.ptr != digits.data() + digits.size()) return false;
  *logical_key = salted.substr(0, pos);
  *salt = value;
  return true;
}

bool valid_separator(std::string_view separator) noexcept {
  if (separator.empty() || separator.size() > kMaxSeparatorBytes) return false;
  for (char c : separator) {
    if (c >= '0' && c <= '9') return false;
  }
  // Lists and reports carry the separator as a JSON string, so it must be valid UTF-8.
  return is_valid_utf8(separator);
}

}  // namespace hotkey
