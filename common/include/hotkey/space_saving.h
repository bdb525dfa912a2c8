// Space-Saving top-k summary (Metwally et al. 2005) with weighted updates and the
// mergeable-summaries merge rule (Agarwal et al. 2012; Cafaro et al. 2016).
//
// A value type: copy it, merge it, serialize it. Not thread-safe; callers that share one
// instance across threads must serialize access (the client keeps one per thread/shard).
// A moved-from sketch may only be assigned to or destroyed.
//
// Guarantees, for a summary that has seen total weight N with capacity k:
//   - every monitored key x has count(x) - error(x) <= true(x) <= count(x);
//   - every key with true(x) > N/k is monitored;
//   - min_count() <= N/k.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hotkey {

class SpaceSaving {
 public:
  // One monitored key. `count` is an upper bound of its true weight, `count - error` a lower
  // bound (its guaranteed count).
  struct Item {
    std::string key;
    uint64_t count = 0;
    uint64_t error = 0;
    uint64_t guaranteed() const noexcept { return count - error; }
    bool operator==(const Item&) const = default;
  };

  // Largest capacity accepted anywhere (constructor and deserialize).
  static constexpr uint32_t kMaxCapacity = 1u << 20;
  // Largest key accepted by deserialize (update accepts any size).
  static constexpr uint32_t kMaxKeyBytes = 1u << 16;
  // First byte of serialize()'s output.
  static constexpr uint8_t kFormatVersion = 1;

  // capacity in [1, kMaxCapacity], std::invalid_argument otherwise.
  explicit SpaceSaving(uint32_t capacity);

  SpaceSaving(const SpaceSaving&);
  SpaceSaving& operator=(const SpaceSaving&);
  SpaceSaving(SpaceSaving&&) noexcept;
  SpaceSaving& operator=(SpaceSaving&&) noexcept;
  ~SpaceSaving();

  // Adds `weight` (>= 1; 0 is ignored) to `key`. Amortised O(1) for keys already monitored at
  // the top, O(log k) worst case; no allocation after warm-up for keys that fit the slot's
  // existing buffer.
  void update(std::string_view key, uint64_t weight = 1);
  // update() that also returns the key's entry after it (weight 0: nothing added, {0, 0}) and
  // the key's 64-bit hash (a fingerprint for callers that remember keys without copying
  // them), at no extra lookup: a sampler's per-record check of one key's share.
  struct Updated {
    uint64_t count = 0;
    uint64_t error = 0;
    uint64_t hash = 0;
  };
  Updated update_and_get(std::string_view key, uint64_t weight = 1);

  // Merges `other` into this summary (capacity stays this->capacity()): a key missing from one
  // side counts that side's minimum (0 when that side is not full), counts and errors add,
  // then the k largest counts are kept (ties broken by key bytes, ascending). Commutative.
  void merge(const SpaceSaving& other);

  // The n-way merge of `parts` into a summary of `capacity`: every part contributes its count
  // or, for keys it does not monitor, its minimum. The result does not depend on the order of
  // `parts`. Null pointers are skipped.
  static SpaceSaving merge_all(std::span<const SpaceSaving* const> parts, uint32_t capacity);

  // Builds a summary from decoded items (e.g. a producer report). Validates: capacity range,
  // items.size() <= capacity, error <= count, no duplicate keys, sum of counts consistent with
  // total (>= count of each item), min_count equal to the smallest count when full.
  // std::invalid_argument with a message saying which rule failed.
  static SpaceSaving from_items(uint32_t capacity, uint64_t total, std::vector<Item> items);
  // The same from items whose keys live elsewhere (a decoded report's): no key is copied
  // twice, the summary's own slots are the only copy.
  struct ItemView {
    std::string_view key;
    uint64_t count = 0;
    uint64_t error = 0;
  };
  static SpaceSaving from_items(uint32_t capacity, uint64_t total, std::span<const ItemView> items);

  uint32_t capacity() const noexcept;
  size_t size() const noexcept;
  bool empty() const noexcept { return size() == 0; }
  // Total weight ever added, including merged summaries' totals.
  uint64_t total() const noexcept;
  // The smallest monitored count when full, 0 otherwise: the most any unmonitored key can have.
  uint64_t min_count() const noexcept;

  // The monitored entry for key, if any.
  std::optional<Item> find(std::string_view key) const;
  // Upper bound for any key: its count if monitored, else min_count().
  uint64_t estimate(std::string_view key) const;

  // All monitored items, count descending then key ascending.
  std::vector<Item> items() const;
  // The first n of items().
  std::vector<Item> top(size_t n) const;
  // All monitored items in no particular order (a caller that ranks them itself skips the
  // sort: 4,096 items are about 8M instructions through items()).
  std::vector<Item> unordered_items() const;

  // Removes everything (keeps capacity and buffers).
  void clear() noexcept;

  // Binary form: version byte, then little-endian fixed-width fields and length-prefixed keys.
  std::string serialize() const;
  // Rejects anything serialize() could not have produced (wrong version, truncation, counts
  // out of order, duplicate keys, trailing bytes) with std::invalid_argument.
  static SpaceSaving deserialize(std::string_view bytes);

  // Same monitored items and total (capacity may differ).
  bool operator==(const SpaceSaving& other) const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace hotkey
