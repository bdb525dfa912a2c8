// Consumer side of the merge contract (docs/CLIENT.md, "Merge contract", version 1): recover a
// salted record's logical key, and merge the salted sub-streams of a key back together.
//
// Contract v1: a salted record carries header `hotkey.salt` (ASCII decimal uint32) and header
// `hotkey.version` (ASCII decimal uint64, the list version it was routed with). In rekey mode
// its key is <logical key><separator><decimal salt>; in route mode its key is the logical key.
// Unsalted records carry neither header and keep their key. A record salted while its producer
// routed the topic with a local table (its list stale: docs/CLIENT.md, "Local tables") carries
// hotkey.version = kLocalTableVersionBit + the version of the last list it had (0: none).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/hotkey_list.h"
#include "hotkey/partitioner.h"

namespace hotkey::client {

// Both point at NUL-terminated literals (usable as C strings).
inline constexpr std::string_view kSaltHeader = "hotkey.salt";
inline constexpr std::string_view kVersionHeader = "hotkey.version";
inline constexpr uint32_t kMergeContractVersion = 1;

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

// Pure function. `salt_header` / `version_header` are the header values when present. A header
// that is not a plain decimal number is ignored (as if absent).
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
