#include "routing_table.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>

#include "hotkey/salt_planner.h"
#include "splitmix64.h"

namespace hotkey::client::detail {

namespace {

// Where a new table's round-robin cursors start: a different place in every process, table
// and key. Started at 0, every producer of the fleet sent its first records of each new list to
// the same salts (the sequence's heaviest, in step), and the coordinator, which leaves out each
// producer's report that straddles a switch, saw those salts' partitions carry less of the
// key than their weights: on a small topic re-tabled every second (a handful of the key's
// records per producer and version) that read as cold load missing there, the next table gave
// them more weight, and the loop ran away (tests/cluster/client_cluster_test.cc: a 20% salt
// with its partition at 1.4x the average). From anywhere in the cycle, the records a report
// leaves out are as likely any salt's as their weights say. The entropy is read once, by the
// first table with a hot key, which publish() builds: the send path's rebuild for a new
// partition count only replaces a table that has hot keys, so it never pays for that read.
uint64_t next_cursor_seed() noexcept {
  static std::atomic<uint64_t> counter{[]() -> uint64_t {
    try {
      std::random_device rd;
      return (static_cast<uint64_t>(rd()) << 32) ^ rd();
    } catch (...) {  // no entropy source: the clock and this process's layout still differ
      return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
             reinterpret_cast<uintptr_t>(&counter);
    }
  }()};
  return splitmix64(counter.fetch_add(1, std::memory_order_relaxed));
}

}  // namespace

std::vector<uint16_t> smooth_wrr_sequence(const std::vector<uint32_t>& weights, uint32_t max_len) {
  std::vector<uint64_t> w(weights.begin(), weights.end());
  uint64_t g = 0;
  for (uint64_t x : w) g = std::gcd(g, x);
  if (g == 0) return {};
  uint64_t total = 0;
  for (auto& x : w) {
    x /= g;
    total += x;
  }
  if (total > max_len) {
    // Proportional scale-down, keeping every salt (weight >= 1).
    uint64_t scaled_total = 0;
    for (auto& x : w) {
      x = std::max<uint64_t>(1, (x * max_len + total / 2) / total);
      scaled_total += x;
    }
    total = scaled_total;
  }
  std::vector<uint16_t> seq;
  seq.reserve(total);
  std::vector<int64_t> current(w.size(), 0);
  for (uint64_t n = 0; n < total; ++n) {
    size_t best = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      current[i] += static_cast<int64_t>(w[i]);
      if (current[i] > current[best]) best = i;
    }
    current[best] -= static_cast<int64_t>(total);
    seq.push_back(static_cast<uint16_t>(best));
  }
  return seq;
}

void RoutingTable::set_separator(std::string_view sep) noexcept {
  // valid_separator caps a separator at kMaxSeparatorBytes; the min only keeps this local.
  separator_len_ = static_cast<uint8_t>(std::min(sep.size(), separator_.size()));
  separator_.fill('\0');
  std::memcpy(separator_.data(), sep.data(), separator_len_);
}

RoutingTable::RoutingTable(HashFamily family, uint64_t version)
    : family_(family), version_(version) {
  set_separator(kDefaultSeparator);
}

RoutingTable::RoutingTable(const HotKeyList& list, HashFamily family, int32_t partitions)
    : family_(family), version_(list.version), partitions_(partitions) {
  add_list(list, partitions);
  index();
}

RoutingTable::RoutingTable(const HotKeyList* list, const LocalTables& local, HashFamily family,
                           int32_t partitions)
    : family_(family),
      version_(kLocalTableVersionBit | local.base_version),
      partitions_(partitions) {
  if (list) {
    add_list(*list, partitions);
  } else {
    set_separator(kDefaultSeparator);
  }
  local_begin_ = entries_.size();
  for (const HotKey& hk : local.keys) {
    if (!hk.salts.empty()) add(hk.key, hk.salts);
  }
  count_picks_ = true;
  index();
  cursor_start_.resize(entries_.size() - local_begin_);
  for (size_t i = local_begin_; i < entries_.size(); ++i) {
    cursor_start_[i - local_begin_] = cursors_[i].next.load(std::memory_order_relaxed);
  }
}

uint64_t RoutingTable::local_picks() const noexcept {
  uint64_t n = 0;
  for (size_t i = local_begin_; i < entries_.size(); ++i) {
    // Counted modulo 2^32 from the cursor's random start; read far more often than that wraps.
    n += cursors_[i].next.load(std::memory_order_relaxed) - cursor_start_[i - local_begin_];
  }
  return n;
}

void RoutingTable::add_list(const HotKeyList& list, int32_t partitions) {
  bool same_space =
      list.partitions == partitions && list.hash == family_ && valid_separator(list.separator);
  set_separator(valid_separator(list.separator) ? std::string_view(list.separator)
                                                : std::string_view(kDefaultSeparator));
  recomputed_ = !same_space;
  for (const HotKey& hk : list.keys) {
    if (hk.salts.empty()) continue;
    if (same_space) {
      std::vector<SaltAssignment> kept;
      for (const auto& s : hk.salts) {
        if (s.partition >= 0 && s.partition < partitions && s.weight > 0) kept.push_back(s);
      }
      if (!kept.empty()) add(hk.key, kept);
    } else {
      SaltSpace space;
      space.family = family_;
      space.partitions = partitions;
      space.separator = std::string(separator());
      auto count =
          static_cast<uint32_t>(std::min<size_t>(hk.salts.size(), static_cast<size_t>(partitions)));
      SaltTable table = plan_salts(hk.key, count, space);
      if (!table.salts.empty()) add(hk.key, table.salts);
    }
  }
}

void RoutingTable::add(std::string_view key, const std::vector<SaltAssignment>& salts) {
  // Salt indices in the sequence are uint16_t; a table never has more salts than partitions
  // it can use, and more than 65535 salts for one key would be meaningless.
  size_t n = std::min<size_t>(salts.size(), 65535);
  Entry e;
  e.key = std::string(key);
  e.hash = family_hash(family_, key.data(), key.size());
  e.salts_begin = static_cast<uint32_t>(salts_.size());
  std::vector<uint32_t> weights;
  for (size_t i = 0; i < n; ++i) {
    salts_.push_back({salts[i].salt, salts[i].partition});
    weights.push_back(std::max<uint32_t>(1, salts[i].weight));
  }
  auto seq = smooth_wrr_sequence(weights);
  e.seq_begin = static_cast<uint32_t>(seq_.size());
  e.seq_len = static_cast<uint32_t>(seq.size());
  seq_.insert(seq_.end(), seq.begin(), seq.end());
  entries_.push_back(std::move(e));
}

void RoutingTable::index() {
  if (entries_.empty()) return;
  size_t cap = 4;
  while (cap < entries_.size() * 2) cap <<= 1;
  slots_.assign(cap, 0);
  mask_ = static_cast<uint32_t>(cap - 1);
  for (size_t i = 0; i < entries_.size(); ++i) {
    const uint32_t mixed = mix(entries_[i].hash);
    const uint32_t bit = mixed >> (32 - kFilterBitsLog2);
    filter_[bit >> 6] |= uint64_t{1} << (bit & 63);
    uint32_t slot = mixed & mask_;
    while (slots_[slot] != 0) slot = (slot + 1) & mask_;
    slots_[slot] = static_cast<uint32_t>(i + 1);
  }
  cursors_ = std::make_unique<Cursor[]>(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].seq_len > 0) {
      cursors_[i].next.store(static_cast<uint32_t>(next_cursor_seed() % entries_[i].seq_len),
                             std::memory_order_relaxed);
    }
  }
}

std::vector<RoutingTable::Salt> RoutingTable::salts_of(const Entry& e) const {
  std::vector<Salt> out;
  uint32_t n = 0;
  // The sequence covers every salt of the entry at least once; its largest index is n-1.
  for (uint32_t i = 0; i < e.seq_len; ++i) n = std::max<uint32_t>(n, seq_[e.seq_begin + i] + 1u);
  for (uint32_t i = 0; i < n; ++i) out.push_back(salts_[e.salts_begin + i]);
  return out;
}

}  // namespace hotkey::client::detail
