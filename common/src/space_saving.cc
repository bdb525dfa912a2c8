#include "hotkey/space_saving.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace hotkey {
namespace {

__extension__ typedef unsigned __int128 U128;

// 64x64->128 multiply folded to 64 bits (the wyhash mixing step): a few cycles per 16 bytes.
inline uint64_t mum(uint64_t a, uint64_t b) noexcept {
  U128 r = static_cast<U128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

inline uint64_t load64(const unsigned char* p) noexcept {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline uint64_t load32(const unsigned char* p) noexcept {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Index hash for key bytes. Only the in-memory index depends on it (never the output order,
// which is defined by counts and key bytes), so it needs speed and spread, not stability.
uint64_t key_hash(std::string_view key) noexcept {
  constexpr uint64_t kP0 = 0xa0761d6478bd642full;
  constexpr uint64_t kP1 = 0xe7037ed1a0b428dbull;
  constexpr uint64_t kP2 = 0x8ebc6af09c88c6e3ull;
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());
  size_t len = key.size();
  uint64_t seed = kP0 ^ (static_cast<uint64_t>(len) * kP2);
  uint64_t a;
  uint64_t b;
  if (len <= 16) {
    if (len >= 4) {
      a = (load32(p) << 32) | load32(p + ((len >> 3) << 2));
      b = (load32(p + len - 4) << 32) | load32(p + len - 4 - ((len >> 3) << 2));
    } else if (len > 0) {
      a = (static_cast<uint64_t>(p[0]) << 16) | (static_cast<uint64_t>(p[len >> 1]) << 8) |
          p[len - 1];
      b = 0;
    } else {
      a = b = 0;
    }
  } else {
    size_t i = len;
    while (i > 16) {
      seed = mum(load64(p) ^ kP1, load64(p + 8) ^ seed);
      p += 16;
      i -= 16;
    }
    a = load64(p + i - 16);
    b = load64(p + i - 8);
  }
  return mum(kP1 ^ len, mum(a ^ kP1, b ^ seed));
}

// Key equality without a libc call for typical key sizes: word compares, the last word
// overlapping.
inline bool same_bytes(const char* a, const char* b, size_t n) noexcept {
  const auto* x = reinterpret_cast<const unsigned char*>(a);
  const auto* y = reinterpret_cast<const unsigned char*>(b);
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8) {
      if (load64(x + i) != load64(y + i)) return false;
    }
    return load64(x + n - 8) == load64(y + n - 8);
  }
  if (n >= 4) return load32(x) == load32(y) && load32(x + n - 4) == load32(y + n - 4);
  for (size_t i = 0; i < n; ++i) {
    if (x[i] != y[i]) return false;
  }
  return true;
}

// Counts and totals saturate at UINT64_MAX instead of wrapping: a merge of summaries that each
// claim 2^63 records must not report a count of 0. Saturation keeps error <= count <= total
// (sums of smaller terms never exceed sums of larger ones).
inline uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<uint64_t>::max() : sum;
}

// Output order of items(): count descending, then key bytes ascending.
inline bool item_before(uint64_t ca, std::string_view ka, uint64_t cb, std::string_view kb) {
  if (ca != cb) return ca > cb;
  return ka < kb;
}

uint32_t check_capacity(uint64_t capacity) {
  if (capacity < 1 || capacity > SpaceSaving::kMaxCapacity) {
    throw std::invalid_argument("space-saving capacity must be in [1, " +
                                std::to_string(SpaceSaving::kMaxCapacity) + "], got " +
                                std::to_string(capacity));
  }
  return static_cast<uint32_t>(capacity);
}

size_t table_size_for(size_t entries) {
  // Load factor <= 1/2 keeps linear-probe chains short.
  size_t n = 8;
  while (n < 2 * entries) n <<= 1;
  return n;
}

void put_u32(std::string& out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xffu);
  out.append(b, 4);
}

void put_u64(std::string& out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xffu);
  out.append(b, 8);
}

// Bounds-checked little-endian reader for deserialize().
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  size_t remaining() const { return bytes_.size() - pos_; }
  size_t pos() const { return pos_; }
  uint64_t get(size_t width, const char* what) {
    need(width, what);
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) {
      v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i])) << (8 * i);
    }
    pos_ += width;
    return v;
  }
  std::string_view get_bytes(size_t n, const char* what) {
    need(n, what);
    auto s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  void need(size_t n, const char* what) const {
    if (remaining() < n) {
      throw std::invalid_argument(std::string("space-saving bytes truncated: need ") +
                                  std::to_string(n) + " bytes for " + what + " at offset " +
                                  std::to_string(pos_) + ", have " + std::to_string(remaining()));
    }
  }
  std::string_view bytes_;
  size_t pos_ = 0;
};

}  // namespace

// Slots hold the monitored keys; `heap` is a 4-ary min-heap of (count, slot id) kept in one array
// so sifting reads contiguous memory; `pos` maps a slot id to its heap position; `index` is an
// open-addressing (linear probing) table of slot ids keyed by key bytes. Slots beyond `size`
// are spares whose std::string buffers are reused, so steady-state updates never allocate.
struct SpaceSaving::Impl {
  struct Slot {
    std::string key;
    uint64_t error = 0;
    uint64_t hash = 0;
  };
  struct HeapEntry {
    uint64_t count;
    uint32_t id;
  };
  // Index entries: 0 is empty, otherwise (hash high 32 bits << 32) | (slot id + 1).
  static constexpr uint64_t kEmpty = 0;
  static constexpr uint64_t kTagMask = 0xffffffff00000000ull;
  // A 4-ary heap halves the depth a replaced minimum sifts through (with Zipf streams many
  // slots tie at the minimum, so a newcomer usually sinks to a leaf), and a node's children
  // share a cache line or two.
  static constexpr uint32_t kArity = 4;

  uint32_t capacity;
  uint32_t size = 0;
  uint64_t total = 0;
  std::vector<Slot> slots;
  std::vector<HeapEntry> heap;
  std::vector<uint32_t> pos;
  std::vector<uint64_t> index;
  size_t mask = 0;

  explicit Impl(uint32_t cap) : capacity(cap) {
    index.assign(table_size_for(std::min<size_t>(cap, 64)), kEmpty);
    mask = index.size() - 1;
  }

  uint64_t count_of(uint32_t id) const { return heap[pos[id]].count; }

  // An entry's home bucket comes from the same high hash bits as its tag, so an index entry
  // alone says where it belongs: deletion's backward shift never touches the slots.
  size_t home_of(uint64_t hash_or_entry) const {
    return static_cast<size_t>(hash_or_entry >> 32) & mask;
  }

  // Overwrites a slot's key in place. Producers' keys often share one length, and then a plain
  // copy beats the general std::string::assign path; either way the buffer is reused when big
  // enough.
  static void set_key(std::string& dst, std::string_view key) {
    if (dst.size() == key.size()) {
      std::memcpy(dst.data(), key.data(), key.size());
    } else {
      dst.assign(key.data(), key.size());
    }
  }

  // Returns the index position holding key, or the empty position where it would go.
  size_t probe(std::string_view key, uint64_t hash, bool* found) const {
    const uint64_t tag = hash & kTagMask;
    size_t i = home_of(hash);
    while (true) {
      uint64_t e = index[i];
      if (e == kEmpty) {
        *found = false;
        return i;
      }
      if ((e & kTagMask) == tag) {
        const Slot& s = slots[static_cast<uint32_t>(e) - 1];
        if (s.key.size() == key.size() && same_bytes(s.key.data(), key.data(), key.size())) {
          *found = true;
          return i;
        }
      }
      i = (i + 1) & mask;
    }
  }

  void index_insert(uint32_t slot_id) {
    const Slot& s = slots[slot_id];
    size_t i = home_of(s.hash);
    while (index[i] != kEmpty) i = (i + 1) & mask;
    index[i] = (s.hash & kTagMask) | (static_cast<uint64_t>(slot_id) + 1);
  }

  // Backward-shift deletion keeps probe chains intact without tombstones.
  void index_erase_at(size_t i) {
    size_t hole = i;
    size_t j = i;
    while (true) {
      j = (j + 1) & mask;
      uint64_t e = index[j];
      if (e == kEmpty) break;
      size_t home = home_of(e);
      // Move e into the hole unless its home lies cyclically in (hole, j].
      bool home_between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
      if (!home_between) {
        index[hole] = e;
        hole = j;
      }
    }
    index[hole] = kEmpty;
  }

  // Finds a slot's entry by id (no key comparison needed).
  void index_erase(uint32_t slot_id) {
    const uint64_t want = static_cast<uint64_t>(slot_id) + 1;
    size_t i = home_of(slots[slot_id].hash);
    while ((index[i] & 0xffffffffull) != want) i = (i + 1) & mask;
    index_erase_at(i);
  }

  void maybe_grow_index() {
    if (2 * static_cast<size_t>(size) < index.size()) return;
    index.assign(index.size() * 2, kEmpty);
    mask = index.size() - 1;
    for (uint32_t id = 0; id < size; ++id) index_insert(id);
  }

  void sift_up(uint32_t p) {
    const HeapEntry e = heap[p];
    while (p > 0) {
      uint32_t parent = (p - 1) / kArity;
      if (heap[parent].count <= e.count) break;
      heap[p] = heap[parent];
      pos[heap[p].id] = p;
      p = parent;
    }
    heap[p] = e;
    pos[e.id] = p;
  }

  void sift_down(uint32_t p) {
    HeapEntry* h = heap.data();
    uint32_t* where = pos.data();
    const HeapEntry e = h[p];
    const uint32_t n = size;
    while (true) {
      const uint32_t first = kArity * p + 1;
      if (first >= n) break;
      uint32_t child = first;
      uint64_t cc = h[first].count;
      if (first + kArity <= n) {
        // Full node (the common case): a branch-free tournament over the four children.
        const uint64_t c0 = cc;
        const uint64_t c1 = h[first + 1].count;
        const uint64_t c2 = h[first + 2].count;
        const uint64_t c3 = h[first + 3].count;
        const uint32_t i01 = c1 < c0 ? 1 : 0;
        const uint64_t m01 = c1 < c0 ? c1 : c0;
        const uint32_t i23 = c3 < c2 ? 3 : 2;
        const uint64_t m23 = c3 < c2 ? c3 : c2;
        child = first + (m23 < m01 ? i23 : i01);
        cc = m23 < m01 ? m23 : m01;
      } else {
        for (uint32_t c = first + 1; c < n; ++c) {
          if (h[c].count < cc) {
            cc = h[c].count;
            child = c;
          }
        }
      }
      if (e.count <= cc) break;
      h[p] = h[child];
      where[h[p].id] = p;
      p = child;
    }
    h[p] = e;
    where[e.id] = p;
  }

  // Bulk load: append without heap order, then heapify() once (O(k) instead of O(k log k)).
  void push_unordered(std::string_view key, uint64_t hash, uint64_t count, uint64_t error) {
    uint32_t id = size;
    if (id == slots.size()) {
      slots.emplace_back();
      heap.emplace_back();
      pos.emplace_back();
    }
    Slot& s = slots[id];
    s.key.assign(key.data(), key.size());
    s.error = error;
    s.hash = hash;
    ++size;
    heap[id] = HeapEntry{count, id};
    pos[id] = id;
    maybe_grow_index();
    index_insert(id);
  }

  void heapify() {
    for (uint32_t p = size / kArity + 1; p-- > 0;) {
      if (p < size) sift_down(p);
    }
  }

  // Adds weight to key; returns the key's entry after the update.
  Updated update(std::string_view key, uint64_t weight) {
    total = sat_add(total, weight);
    const uint64_t h = key_hash(key);
    bool found = false;
    size_t at = probe(key, h, &found);
    if (found) {
      const uint32_t id = static_cast<uint32_t>(index[at]) - 1;
      const uint32_t p = pos[id];
      heap[p].count = sat_add(heap[p].count, weight);
      const Updated out{heap[p].count, slots[id].error, h};
      sift_down(p);
      return out;
    }
    if (size < capacity) {
      push_unordered(key, h, weight, 0);
      sift_up(size - 1);
      return Updated{weight, 0, h};
    }
    // Replace the minimum: the newcomer inherits its count as error (Metwally et al.).
    const uint32_t id = heap[0].id;
    Slot& s = slots[id];
    index_erase(id);
    set_key(s.key, key);
    s.hash = h;
    s.error = heap[0].count;
    heap[0].count = sat_add(heap[0].count, weight);
    const Updated out{heap[0].count, s.error, h};
    index_insert(id);
    sift_down(0);
    return out;
  }

  // The slot id holding key, or -1.
  int64_t lookup(std::string_view key) const {
    bool found = false;
    size_t at = probe(key, key_hash(key), &found);
    return found ? static_cast<int64_t>(static_cast<uint32_t>(index[at]) - 1) : -1;
  }

  Item item_of(uint32_t id) const { return Item{slots[id].key, count_of(id), slots[id].error}; }

  uint64_t min_count() const { return size == capacity ? heap[0].count : 0; }

  // Loads validated items; rejects duplicate keys.
  template <typename Items>
  void load_items(const Items& items) {
    slots.reserve(items.size());
    heap.reserve(items.size());
    pos.reserve(items.size());
    for (const auto& it : items) {
      uint64_t h = key_hash(it.key);
      bool found = false;
      probe(it.key, h, &found);
      if (found) {
        throw std::invalid_argument("space-saving items contain a duplicate key (" +
                                    std::to_string(it.key.size()) + " bytes)");
      }
      push_unordered(it.key, h, it.count, it.error);
    }
    heapify();
  }

  void clear() {
    size = 0;
    total = 0;
    std::fill(index.begin(), index.end(), kEmpty);
  }
};

namespace {

template <typename ItemT>
void validate_item(const ItemT& it, size_t i) {
  if (it.count == 0) {
    throw std::invalid_argument("space-saving item " + std::to_string(i) + ": count must be >= 1");
  }
  if (it.error > it.count) {
    throw std::invalid_argument("space-saving item " + std::to_string(i) + ": error " +
                                std::to_string(it.error) + " exceeds count " +
                                std::to_string(it.count));
  }
}

// No key can have been seen more often than everything together. (The sum of counts may
// exceed the total: a merge result of wider capacity than its parts, or a report whose counts
// were scaled up for sampling and rounded one by one, are both legitimate.)
template <typename ItemT>
void check_count_within_total(const ItemT& it, size_t i, uint64_t total) {
  if (it.count > total) {
    throw std::invalid_argument("space-saving item " + std::to_string(i) + ": count " +
                                std::to_string(it.count) + " exceeds the total " +
                                std::to_string(total));
  }
}

}  // namespace

SpaceSaving::SpaceSaving(uint32_t capacity) : impl_(new Impl(check_capacity(capacity))) {}

SpaceSaving::SpaceSaving(const SpaceSaving& other)
    : impl_(other.impl_ ? new Impl(*other.impl_) : nullptr) {}

SpaceSaving& SpaceSaving::operator=(const SpaceSaving& other) {
  if (this != &other) {
    Impl* copy = other.impl_ ? new Impl(*other.impl_) : nullptr;
    delete impl_;
    impl_ = copy;
  }
  return *this;
}

SpaceSaving::SpaceSaving(SpaceSaving&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)) {}

SpaceSaving& SpaceSaving::operator=(SpaceSaving&& other) noexcept {
  std::swap(impl_, other.impl_);
  return *this;
}

SpaceSaving::~SpaceSaving() { delete impl_; }

void SpaceSaving::update(std::string_view key, uint64_t weight) {
  if (weight == 0) return;
  impl_->update(key, weight);
}

SpaceSaving::Updated SpaceSaving::update_and_get(std::string_view key, uint64_t weight) {
  if (weight == 0) return Updated{0, 0, key_hash(key)};
  return impl_->update(key, weight);
}

void SpaceSaving::merge(const SpaceSaving& other) {
  const SpaceSaving* parts[2] = {this, &other};
  *this = merge_all(parts, impl_->capacity);
}

SpaceSaving SpaceSaving::merge_all(std::span<const SpaceSaving* const> parts, uint32_t capacity) {
  check_capacity(capacity);
  // Every key's merged count is sum(min of every part) - sum(min of the parts holding it)
  // + sum(its counts); same for errors. Sums commute, and the final cut is by (count, key), so
  // the result does not depend on the order of parts.
  struct Acc {
    std::string_view key;
    uint64_t hash;
    uint64_t count;
    uint64_t error;
    uint64_t mins;  // sum of min_count() of the parts that hold the key
  };
  uint64_t sum_min = 0;
  uint64_t total = 0;
  size_t upper = 0;
  for (const SpaceSaving* p : parts) {
    if (p == nullptr || p->impl_ == nullptr) continue;
    sum_min = sat_add(sum_min, p->impl_->min_count());
    total = sat_add(total, p->impl_->total);
    upper += p->impl_->size;
  }
  std::vector<Acc> accs;
  accs.reserve(upper);
  // Entries as in Impl::index: (hash high 32 bits) | (accs index + 1), 0 empty.
  std::vector<uint64_t> table(table_size_for(upper), 0);
  constexpr uint32_t kPrefetchAhead = 8;
  const size_t mask = table.size() - 1;
  for (const SpaceSaving* p : parts) {
    if (p == nullptr || p->impl_ == nullptr) continue;
    const Impl& in = *p->impl_;
    const uint64_t m = in.min_count();
    for (uint32_t id = 0; id < in.size; ++id) {
      const Impl::Slot& s = in.slots[id];
      const uint64_t count = in.count_of(id);
      // The union table outgrows the caches for big fleets: fetch the slot a few keys ahead.
      if (id + kPrefetchAhead < in.size) {
        __builtin_prefetch(&table[static_cast<size_t>(in.slots[id + kPrefetchAhead].hash) & mask]);
      }
      const uint64_t tag = s.hash & Impl::kTagMask;
      size_t i = static_cast<size_t>(s.hash) & mask;
      while (true) {
        const uint64_t e = table[i];
        if (e == 0) {
          accs.push_back(Acc{s.key, s.hash, count, s.error, m});
          table[i] = tag | accs.size();
          break;
        }
        if ((e & Impl::kTagMask) == tag) {
          Acc& a = accs[static_cast<uint32_t>(e) - 1];
          if (a.key == s.key) {
            a.count = sat_add(a.count, count);
            a.error = sat_add(a.error, s.error);
            a.mins = sat_add(a.mins, m);
            break;
          }
        }
        i = (i + 1) & mask;
      }
    }
  }
  for (Acc& a : accs) {
    a.count = sat_add(a.count, sum_min - a.mins);
    a.error = sat_add(a.error, sum_min - a.mins);
  }
  if (accs.size() > capacity) {
    // Keep the `capacity` largest by (count desc, key asc). Select the cut-off count on plain
    // integers first, so key bytes are compared only within the tie group at the cut: the tails
    // of many producers tie a lot, and comparing their keys dominated the merge.
    std::vector<uint64_t> counts(accs.size());
    for (size_t i = 0; i < accs.size(); ++i) counts[i] = accs[i].count;
    std::nth_element(counts.begin(), counts.begin() + (capacity - 1), counts.end(),
                     std::greater<>());
    const uint64_t cut = counts[capacity - 1];
    auto above =
        std::partition(accs.begin(), accs.end(), [cut](const Acc& a) { return a.count > cut; });
    auto ties = std::partition(above, accs.end(), [cut](const Acc& a) { return a.count == cut; });
    const auto need = static_cast<ptrdiff_t>(capacity) - (above - accs.begin());
    if (need < ties - above) {
      std::nth_element(above, above + need, ties,
                       [](const Acc& x, const Acc& y) { return x.key < y.key; });
    }
    accs.resize(capacity);
  }
  SpaceSaving out(capacity);
  Impl& impl = *out.impl_;
  impl.total = total;
  impl.slots.reserve(accs.size());
  impl.heap.reserve(accs.size());
  impl.pos.reserve(accs.size());
  for (const Acc& a : accs) impl.push_unordered(a.key, a.hash, a.count, a.error);
  impl.heapify();
  return out;
}

SpaceSaving SpaceSaving::from_items(uint32_t capacity, uint64_t total, std::vector<Item> items) {
  check_capacity(capacity);
  if (items.size() > capacity) {
    throw std::invalid_argument("space-saving has " + std::to_string(items.size()) +
                                " items, more than its capacity " + std::to_string(capacity));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    validate_item(items[i], i);
    check_count_within_total(items[i], i, total);
  }
  SpaceSaving out(capacity);
  out.impl_->total = total;
  out.impl_->load_items(items);
  return out;
}

SpaceSaving SpaceSaving::from_items(uint32_t capacity, uint64_t total,
                                    std::span<const ItemView> items) {
  check_capacity(capacity);
  if (items.size() > capacity) {
    throw std::invalid_argument("space-saving has " + std::to_string(items.size()) +
                                " items, more than its capacity " + std::to_string(capacity));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    validate_item(items[i], i);
    check_count_within_total(items[i], i, total);
  }
  SpaceSaving out(capacity);
  out.impl_->total = total;
  out.impl_->load_items(items);
  return out;
}

uint32_t SpaceSaving::capacity() const noexcept { return impl_->capacity; }
size_t SpaceSaving::size() const noexcept { return impl_->size; }
uint64_t SpaceSaving::total() const noexcept { return impl_->total; }
uint64_t SpaceSaving::min_count() const noexcept { return impl_->min_count(); }

std::optional<SpaceSaving::Item> SpaceSaving::find(std::string_view key) const {
  const int64_t id = impl_->lookup(key);
  if (id < 0) return std::nullopt;
  return impl_->item_of(static_cast<uint32_t>(id));
}

uint64_t SpaceSaving::estimate(std::string_view key) const {
  const int64_t id = impl_->lookup(key);
  return id < 0 ? impl_->min_count() : impl_->count_of(static_cast<uint32_t>(id));
}

std::vector<SpaceSaving::Item> SpaceSaving::items() const { return top(impl_->size); }

std::vector<SpaceSaving::Item> SpaceSaving::top(size_t n) const {
  const Impl& impl = *impl_;
  std::vector<uint32_t> ids(impl.size);
  for (uint32_t i = 0; i < impl.size; ++i) ids[i] = i;
  auto before = [&](uint32_t a, uint32_t b) {
    return item_before(impl.count_of(a), impl.slots[a].key, impl.count_of(b), impl.slots[b].key);
  };
  n = std::min(n, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n), ids.end(), before);
  std::vector<Item> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(impl.item_of(ids[i]));
  return out;
}

std::vector<SpaceSaving::Item> SpaceSaving::unordered_items() const {
  const Impl& impl = *impl_;
  std::vector<Item> out;
  out.reserve(impl.size);
  for (uint32_t i = 0; i < impl.size; ++i) out.push_back(impl.item_of(i));
  return out;
}

void SpaceSaving::clear() noexcept { impl_->clear(); }

std::string SpaceSaving::serialize() const {
  auto all = items();
  size_t bytes = 1 + 4 + 8 + 4;
  for (const auto& it : all) bytes += 4 + it.key.size() + 16;
  std::string out;
  out.reserve(bytes);
  out.push_back(static_cast<char>(kFormatVersion));
  put_u32(out, impl_->capacity);
  put_u64(out, impl_->total);
  put_u32(out, static_cast<uint32_t>(all.size()));
  for (const auto& it : all) {
    put_u32(out, static_cast<uint32_t>(it.key.size()));
    out.append(it.key);
    put_u64(out, it.count);
    put_u64(out, it.error);
  }
  return out;
}

SpaceSaving SpaceSaving::deserialize(std::string_view bytes) {
  Reader r(bytes);
  const auto version = static_cast<uint8_t>(r.get(1, "the format version"));
  if (version != kFormatVersion) {
    throw std::invalid_argument("space-saving format version " + std::to_string(version) +
                                " is not supported (expected " + std::to_string(kFormatVersion) +
                                ")");
  }
  const uint64_t capacity = r.get(4, "the capacity");
  check_capacity(capacity);
  const uint64_t total = r.get(8, "the total");
  const uint64_t n = r.get(4, "the item count");
  if (n > capacity) {
    throw std::invalid_argument("space-saving bytes declare " + std::to_string(n) +
                                " items, more than the capacity " + std::to_string(capacity));
  }
  constexpr size_t kMinItemBytes = 4 + 8 + 8;
  if (n > r.remaining() / kMinItemBytes) {
    throw std::invalid_argument("space-saving bytes truncated: " + std::to_string(n) +
                                " items declared but only " + std::to_string(r.remaining()) +
                                " bytes follow");
  }
  std::vector<Item> items;
  items.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t len = r.get(4, "a key length");
    if (len > kMaxKeyBytes) {
      throw std::invalid_argument("space-saving item " + std::to_string(i) + ": key of " +
                                  std::to_string(len) + " bytes exceeds the limit " +
                                  std::to_string(kMaxKeyBytes));
    }
    Item it;
    it.key = std::string(r.get_bytes(len, "a key"));
    it.count = r.get(8, "a count");
    it.error = r.get(8, "an error");
    validate_item(it, i);
    if (!items.empty()) {
      const Item& prev = items.back();
      if (!item_before(prev.count, prev.key, it.count, it.key)) {
        throw std::invalid_argument("space-saving item " + std::to_string(i) +
                                    " is out of order (items must be count descending, then key "
                                    "ascending, without duplicates)");
      }
    }
    check_count_within_total(it, i, total);
    items.push_back(std::move(it));
  }
  if (r.remaining() != 0) {
    throw std::invalid_argument("space-saving bytes have " + std::to_string(r.remaining()) +
                                " trailing bytes after offset " + std::to_string(r.pos()));
  }
  SpaceSaving out(static_cast<uint32_t>(capacity));
  out.impl_->total = total;
  out.impl_->load_items(items);
  return out;
}

bool SpaceSaving::operator==(const SpaceSaving& other) const {
  if (impl_->total != other.impl_->total || impl_->size != other.impl_->size) return false;
  for (uint32_t id = 0; id < impl_->size; ++id) {
    const int64_t o = other.impl_->lookup(impl_->slots[id].key);
    if (o < 0 || other.impl_->item_of(static_cast<uint32_t>(o)) != impl_->item_of(id)) return false;
  }
  return true;
}

}  // namespace hotkey
