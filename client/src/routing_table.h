// The immutable routing table of one topic, built from a hot-key list for one partition count:
// what Router::route reads on the send path (published by swapping a shared_ptr). Built off the
// send path; after construction only the per-key round-robin cursors change
// (atomics), so any number of threads may read one concurrently.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/client/config.h"
#include "hotkey/client/router.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/partitioner.h"

namespace hotkey::client::detail {

class RoutingTable {
 public:
  struct Entry {
    std::string key;
    uint32_t hash = 0;
    uint32_t salts_begin = 0;  // into salts_
    uint32_t seq_begin = 0;    // into seq_
    uint32_t seq_len = 0;
  };
  struct alignas(64) Cursor {
    std::atomic<uint32_t> next{0};
  };
  struct Salt {
    uint32_t salt = 0;
    int32_t partition = 0;
  };

  // Empty table: every key cold. version carries on for reporting.
  RoutingTable(HashFamily family, uint64_t version);
  // Table for `partitions` from `list`. When the list was planned for another partition count,
  // family or with an invalid separator, each hot key gets first-fit verified salts for this
  // count instead (as many as the list gave it, capped at the count).
  RoutingTable(const HotKeyList& list, HashFamily family, int32_t partitions);
  // The table of `list` (null: none) for `partitions` as above, plus the local tables' keys
  // (planned for `partitions`, with the list's separator): version kLocalTableVersionBit +
  // local.base_version. Its local entries count their picks (local_picks).
  RoutingTable(const HotKeyList* list, const LocalTables& local, HashFamily family,
               int32_t partitions);

  uint64_t version() const noexcept { return version_; }
  int32_t partitions() const noexcept { return partitions_; }
  HashFamily family() const noexcept { return family_; }
  bool empty() const noexcept { return entries_.empty(); }
  bool recomputed() const noexcept { return recomputed_; }
  bool has_local() const noexcept { return local_begin_ < entries_.size(); }
  // Records routed to a salt of a local entry so far (0 without local entries).
  uint64_t local_picks() const noexcept;
  std::string_view separator() const noexcept { return {separator_.data(), separator_len_}; }
  // The separator zero-padded to kMaxSeparatorBytes, so the send path copies it with a
  // fixed-size (inlined) move instead of a memcpy call.
  const char* separator_padded() const noexcept { return separator_.data(); }
  size_t size() const noexcept { return entries_.size(); }

  // The hot entry for `key` (whose hotkey::family_hash is `hash`), or null.
  const Entry* find(const void* key, size_t keylen, uint32_t hash) const noexcept {
    // Almost every key is cold: one bit of a 512-bit filter (high bits of the mixed hash; the
    // slot uses the low ones) answers most of them without probing the table. All-zero when
    // the table is empty.
    const uint32_t mixed = mix(hash);
    const uint32_t bit = mixed >> (32 - kFilterBitsLog2);
    if (((filter_[bit >> 6] >> (bit & 63)) & 1u) == 0) return nullptr;
    uint32_t slot = mixed & mask_;
    for (;;) {
      uint32_t idx = slots_[slot];
      if (idx == 0) return nullptr;
      const Entry& e = entries_[idx - 1];
      if (e.hash == hash && e.key.size() == keylen &&
          (keylen == 0 || std::memcmp(e.key.data(), key, keylen) == 0)) {
        return &e;
      }
      slot = (slot + 1) & mask_;
    }
  }

  // Picks a salt of `e` by policy. `value_hash` is used by kValueHash, `random` by kRandom.
  const Salt& pick(const Entry& e, SaltPolicy policy, uint32_t value_hash,
                   uint32_t random) const noexcept {
    uint32_t pos = 0;
    switch (policy) {
      case SaltPolicy::kWeightedRoundRobin:
        pos =
            cursors_[&e - entries_.data()].next.fetch_add(1, std::memory_order_relaxed) % e.seq_len;
        break;
      case SaltPolicy::kValueHash:
        pos = value_hash % e.seq_len;
        if (count_picks_) [[unlikely]]
          count_pick(e);
        break;
      case SaltPolicy::kRandom:
        pos = random % e.seq_len;
        if (count_picks_) [[unlikely]]
          count_pick(e);
        break;
    }
    return salts_[e.salts_begin + seq_[e.seq_begin + pos]];
  }

  // The salts of an entry, in table order (for tests and stats).
  std::vector<Salt> salts_of(const Entry& e) const;
  const std::vector<Entry>& entries() const noexcept { return entries_; }

 private:
  static constexpr uint32_t kFilterBitsLog2 = 9;
  static uint32_t mix(uint32_t h) noexcept { return (h ^ (h >> 16)) * 0x45d9f3bu; }
  void add(std::string_view key, const std::vector<SaltAssignment>& salts);
  void add_list(const HotKeyList& list, int32_t partitions);
  void index();
  // The wrr policy advances an entry's cursor on every pick; the others do it only in a table
  // with local entries, whose picks are counted from the cursors (local_picks).
  void count_pick(const Entry& e) const noexcept {
    cursors_[&e - entries_.data()].next.fetch_add(1, std::memory_order_relaxed);
  }

  HashFamily family_;
  uint64_t version_ = 0;
  int32_t partitions_ = 0;
  bool recomputed_ = false;
  void set_separator(std::string_view sep) noexcept;
  std::array<char, kMaxSeparatorBytes> separator_{};  // zero-padded
  uint8_t separator_len_ = 0;
  std::vector<Entry> entries_;
  std::vector<Salt> salts_;
  std::vector<uint16_t> seq_;
  std::vector<uint32_t> slots_;  // entry index + 1; 0 is empty
  uint32_t mask_ = 0;
  std::array<uint64_t, (1u << kFilterBitsLog2) / 64> filter_{};
  std::unique_ptr<Cursor[]> cursors_;
  // Local entries are entries_[local_begin_..]; their cursors started at cursor_start_.
  size_t local_begin_ = SIZE_MAX;
  bool count_picks_ = false;
  std::vector<uint32_t> cursor_start_;
};

// The smooth weighted round-robin order (nginx's algorithm) over `weights`: a sequence of
// indices in which index i appears weights[i] times (after reducing by the gcd and scaling the
// total down to at most max_len), spread as evenly as the weights allow.
std::vector<uint16_t> smooth_wrr_sequence(const std::vector<uint32_t>& weights,
                                          uint32_t max_len = 1024);

}  // namespace hotkey::client::detail
