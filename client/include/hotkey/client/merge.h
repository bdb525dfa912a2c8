// Consumer side of the merge contract (docs/CLIENT.md, "Merge contract", versions 1 and 2):
// recover a salted record's logical key, and merge the salted sub-streams of a key back
// together; plus the writer's rule (merge_mark), shared by the wrapper and the test vectors.
//
// Contract v1: a salted record carries header `hotkey.salt` (ASCII decimal uint32) and header
// `hotkey.version` (ASCII decimal uint64, the list version it was routed with). In rekey mode
// its key is <logical key><separator><decimal salt>; in route mode its key is the logical key.
// Unsalted records carry neither header and keep their key. A record salted while its producer
// routed the topic with a local table (its list stale: docs/CLIENT.md, "Local tables") carries
// hotkey.version = kLocalTableVersionBit + the version of the last list it had (0: none).
//
// Contract v2 (the default writer): as v1, except that a record rekeyed with its coordinator's
// list carries no header (its key's suffix <separator><salt> is the mark), and a record sent
// with its logical key (unsalted) whose key ends in <separator><digits> carries the header
// `hotkey.unsalted` (empty value), so the suffix rule is exact. Readers read both versions.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/client/config.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/partitioner.h"

namespace hotkey::client {

// Both point at NUL-terminated literals (usable as C strings).
inline constexpr std::string_view kSaltHeader = "hotkey.salt";
inline constexpr std::string_view kVersionHeader = "hotkey.version";
// v2: on a record sent with its logical key (unsalted) that ends in <separator><digits>.
inline constexpr std::string_view kUnsaltedHeader = "hotkey.unsalted";
// The version writers use by default (hotkey.merge.contract); readers read 1 and 2.
inline constexpr uint32_t kMergeContractVersion = 2;

// Coordinator versions stay below 2^63 (docs/CONTRACTS.md, "Versions"); hotkey.version values
// at or above it (hotkey::kLocalTableVersionBit, hotkey_list.h) mark records salted by a
// producer's local table, built on top of the list of version (value - kLocalTableVersionBit)
// while that list was stale.
using hotkey::kLocalTableVersionBit;
constexpr bool is_local_table_version(uint64_t version) noexcept {
  return version >= kLocalTableVersionBit;
}
// The list version a local table was built on (0: none); `version` itself for a coordinator's.
constexpr uint64_t list_version_of(uint64_t version) noexcept {
  return version & ~kLocalTableVersionBit;
}

// Whether `key` ends in <separator><digits> as split_salted_key reads it (merge contract rule 3:
// 1-10 digits, canonical, at most 2^32-1, right after the separator), read from the end: a
// separator has no digit, so the one a trailing digit run follows is the last. A key that ends
// in no digit costs one compare.
inline bool ends_like_salted(std::string_view key, std::string_view separator) noexcept {
  const char* k = key.data();
  const size_t n = key.size();
  const size_t lo = n > 11 ? n - 11 : 0;  // 11 digits are already too many
  size_t i = n;
  while (i > lo && static_cast<unsigned char>(k[i - 1] - '0') < 10) --i;
  const size_t digits = n - i;
  if (digits == 0 || digits > 10 || (digits > 1 && k[i] == '0')) return false;
  if (digits == 10 && key.substr(i) > std::string_view("4294967295")) return false;
  return !separator.empty() && i >= separator.size() &&
         key.substr(i - separator.size(), separator.size()) == separator;
}

// What a writer of merge contract `contract` (1 or 2) puts on one record.
enum class MergeMark : uint8_t {
  kNone = 0,            // no merge header
  kSaltAndVersion = 1,  // hotkey.salt and hotkey.version
  kUnsalted = 2,        // hotkey.unsalted (v2)
};
// `salted`/`version`: the route decision; `logical_key_looks_salted`: the record goes out with
// its logical key (unsalted) and that key ends in <separator><digits> (ends_like_salted).
constexpr MergeMark merge_mark(uint32_t contract, RoutingMode mode, bool salted, uint64_t version,
                               bool logical_key_looks_salted) noexcept {
  if (contract < 2) return salted ? MergeMark::kSaltAndVersion : MergeMark::kNone;
  if (salted) {
    return mode == RoutingMode::kRekey && !is_local_table_version(version)
               ? MergeMark::kNone
               : MergeMark::kSaltAndVersion;
  }
  return logical_key_looks_salted ? MergeMark::kUnsalted : MergeMark::kNone;
}

enum class KeyRecovery : uint8_t {
  kHeadersThenSuffix = 0,  // headers; without them, a trailing <sep><digits> is a salt
  kHeadersOnly = 1,        // only headers: for topics whose cold keys may end in <sep><digits>
};

struct RecoveredKey {
  std::string_view logical_key;  // points into the record's key
  bool salted = false;
  uint32_t salt = 0;
  uint64_t version = 0;       // from hotkey.version; 0 when absent (is_local_table_version:
                              // salted by the producer's local table)
  bool from_headers = false;  // the salt came from the hotkey.salt header
};

// The merge headers of one record, as found (the last of each name).
struct MergeHeaders {
  std::optional<std::string_view> salt;     // hotkey.salt
  std::optional<std::string_view> version;  // hotkey.version
  bool unsalted = false;                    // hotkey.unsalted present (v2)
};

// Pure function, both contract versions. A valid hotkey.salt decides (v1 rule 3); else
// hotkey.unsalted means the key is the logical key, unsalted (v2); else the mode's rule. A
// hotkey.salt / hotkey.version that is not a plain decimal number is ignored (as if absent).
RecoveredKey recover_logical_key(std::string_view key, const MergeHeaders& headers,
                                 std::string_view separator = kDefaultSeparator,
                                 KeyRecovery mode = KeyRecovery::kHeadersThenSuffix) noexcept;
// The same without hotkey.unsalted (the v1 form): `salt_header` / `version_header` are the
// header values when present.
RecoveredKey recover_logical_key(std::string_view key, std::optional<std::string_view> salt_header,
                                 std::optional<std::string_view> version_header,
                                 std::string_view separator = kDefaultSeparator,
                                 KeyRecovery mode = KeyRecovery::kHeadersThenSuffix) noexcept;

// Buffers consumed records and hands them back grouped per logical key. Within one sub-stream
// (logical key, salt, partition) the order is the order the records were added in (the
// partition's order, which salting keeps), even where producer timestamps go back; across
// sub-streams records are merged by producer timestamp, then partition, then offset: the best
// a consumer can do, since salting trades a hot key's total order for throughput.
// Not thread-safe: one per consuming thread.
class SubstreamMerger {
 public:
  struct Record {
    std::string logical_key;
    bool salted = false;
    uint32_t salt = 0;
    int32_t partition = 0;
    int64_t offset = 0;
    int64_t timestamp_ms = 0;
    std::string value;
  };

  // max_buffered >= 1, std::invalid_argument otherwise.
  explicit SubstreamMerger(size_t max_buffered = 100000);

  // Buffers a record; false (record not taken) when max_buffered records are waiting.
  bool add(Record record);
  // Removes and returns the buffered records with timestamp_ms <= watermark_ms, grouped per
  // logical key, each group in merge order. A record waits, whatever its timestamp, while an
  // earlier record of its sub-stream is stamped after the watermark.
  std::map<std::string, std::vector<Record>> drain(int64_t watermark_ms);
  size_t buffered() const noexcept { return buffered_; }
  // Distinct salts seen so far for a logical key (unsalted records count as one sub-stream).
  size_t substreams(std::string_view logical_key) const;

 private:
  size_t max_buffered_;
  size_t buffered_ = 0;
  // Per logical key, per sub-stream (salt, -1 unsalted; partition): records in arrival order.
  using Substream = std::pair<int64_t, int32_t>;
  std::map<std::string, std::map<Substream, std::deque<Record>>, std::less<>> pending_;
  std::map<std::string, std::vector<int64_t>, std::less<>> seen_salts_;
};

}  // namespace hotkey::client
