#include "hotkey/client/router.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "hotkey/report.h"
#include "hotkey/salt_planner.h"
#include "routing_table.h"

namespace hotkey::client {
namespace {

using detail::RoutingTable;

std::atomic<uint64_t> g_next_uid{1};

struct TopicState {
  explicit TopicState(std::string n, HashFamily family)
      : name(std::move(n)), uid(g_next_uid.fetch_add(1)) {
    table = std::make_shared<const RoutingTable>(family, 0);
  }
  using Clock = std::chrono::steady_clock;
  std::shared_ptr<const RoutingTable> load_table() const {
    std::lock_guard lock(table_mu);
    return table;
  }
  void store_table(std::shared_ptr<const RoutingTable> next) {
    std::shared_ptr<const RoutingTable> old;
    {
      std::lock_guard lock(table_mu);
      old = std::exchange(table, std::move(next));
    }
  }
  std::string name;
  const uint64_t uid;
  // Bumped after every store to `table`; readers compare it with their cached copy.
  std::atomic<uint64_t> gen{1};
  // A mutex, not std::atomic<std::shared_ptr>: readers take it only when `gen` moved (once per
  // publish per thread), and libstdc++ 12's atomic<shared_ptr> unlocks with relaxed order after
  // load(), a data race by the memory model that TSan reports (tests run under TSan in CI).
  mutable std::mutex table_mu;
  std::shared_ptr<const RoutingTable> table;  // guarded by table_mu
  std::atomic<int32_t> live_partitions{0};
  std::atomic<uint64_t> version{0};
  std::atomic<bool> plain{false};
  // Serializes writers (publish, set_plain, rebuild for a new partition count).
  std::mutex write_mu;
  std::shared_ptr<const HotKeyList> list;  // guarded by write_mu
  // Local tables (docs/CLIENT.md, "Local tables"), routed with while they fit the live count.
  std::shared_ptr<const LocalTables> local;  // guarded by write_mu
  std::atomic<uint64_t> local_gen{0};        // bumped under write_mu by every list/local change
  std::atomic<uint64_t> local_sets{0};
  // Picks of local entries: tables no longer installed are read again for a while (a thread
  // that loaded one just before the swap may still pick from it), then folded into the sum.
  struct Retired {
    std::shared_ptr<const RoutingTable> table;
    Clock::time_point at;
  };
  uint64_t local_folded = 0;     // guarded by write_mu
  std::vector<Retired> retired;  // guarded by write_mu
};

// Per-thread cache of the routing table each topic had when this thread last looked: a hit costs
// one acquire load of the topic's generation, no reference-count traffic. The hit path reads
// only trivially destructible thread-locals (no TLS init guard); the references that keep the
// cached tables alive live apart and are touched on a miss only.
struct CacheEntry {
  uint64_t uid = 0;
  uint64_t gen = 0;
  const RoutingTable* table = nullptr;
};
constexpr size_t kCacheSlots = 16;
thread_local CacheEntry t_cache[kCacheSlots];
thread_local std::array<std::shared_ptr<const RoutingTable>, kCacheSlots> t_keep;

uint32_t thread_random() noexcept {
  thread_local uint64_t state =
      0x9E3779B97F4A7C15ull ^ reinterpret_cast<uintptr_t>(&state) ^ g_next_uid.load();
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return static_cast<uint32_t>(state >> 32);
}

}  // namespace

size_t RouteDecision::write_salted_key(std::string_view key, char* out) const noexcept {
  std::memcpy(out, key.data(), key.size());
  return key.size() + write_salt_suffix(out + key.size(), separator_view(), salt);
}

int32_t cold_partition(HashFamily family, const void* key, size_t keylen,
                       int32_t partition_cnt) noexcept {
  if (key == nullptr || partition_cnt < 1) return -1;
  // consistent_random treats an empty key like a null one; murmur2_random and fnv1a_random
  // hash it.
  if (keylen == 0 && family == HashFamily::kCrc32) return -1;
  return static_cast<int32_t>(family_hash(family, key, keylen) %
                              static_cast<uint32_t>(partition_cnt));
}

struct Router::Impl {
  RouterOptions options;
  std::unique_ptr<std::atomic<TopicState*>[]> topics =
      std::make_unique<std::atomic<TopicState*>[]>(kMaxTopics);
  std::atomic<uint32_t> count{0};
  mutable std::mutex names_mu;
  std::unordered_map<std::string, TopicId> names;  // guarded by names_mu

  TopicState* state(TopicId id) const noexcept {
    if (id >= count.load(std::memory_order_acquire)) return nullptr;
    return topics[id].load(std::memory_order_acquire);
  }

  TopicState& checked(TopicId id) const {
    TopicState* s = state(id);
    if (s == nullptr) throw std::invalid_argument("unknown topic id " + std::to_string(id));
    return *s;
  }

  // Caller holds s.write_mu.
  void install(TopicState& s, std::shared_ptr<const RoutingTable> table) {
    std::shared_ptr<const RoutingTable> old = s.load_table();
    s.store_table(std::move(table));
    s.gen.fetch_add(1, std::memory_order_acq_rel);
    if (old && old->has_local()) {
      fold_retired(s, TopicState::Clock::now());
      s.retired.push_back({std::move(old), TopicState::Clock::now()});
    }
  }

  // Caller holds s.write_mu. Tables retired a while ago are read one last time.
  static void fold_retired(TopicState& s, TopicState::Clock::time_point now) {
    std::erase_if(s.retired, [&](const TopicState::Retired& r) {
      if (now - r.at < kRetiredReadFor) return false;
      s.local_folded += r.table->local_picks();
      return true;
    });
  }
  static constexpr std::chrono::seconds kRetiredReadFor{2};

  // Caller holds s.write_mu: drops the local tables (the list or the contact wins).
  void forget_local(TopicState& s) {
    s.local.reset();
    s.local_gen.fetch_add(1, std::memory_order_acq_rel);
  }

  // Caller holds s.write_mu.
  std::shared_ptr<const RoutingTable> build(const TopicState& s, int32_t partitions) const {
    return build(s, partitions, s.plain.load());
  }
  std::shared_ptr<const RoutingTable> build(const TopicState& s, int32_t partitions,
                                            bool plain) const {
    if (!plain && s.local && (partitions < 1 || partitions == s.local->partitions)) {
      return std::make_shared<const RoutingTable>(s.list.get(), *s.local, options.family,
                                                  s.local->partitions);
    }
    if (!s.list || plain) {
      return std::make_shared<const RoutingTable>(options.family, s.list ? s.list->version : 0);
    }
    if (partitions < 1) partitions = s.list->partitions;
    return std::make_shared<const RoutingTable>(*s.list, options.family, partitions);
  }

  // Inlined into route() (the send path's instruction guard counts the call otherwise).
  [[gnu::always_inline]] const RoutingTable* current(const TopicState& s) const noexcept {
    const size_t slot = s.uid % kCacheSlots;
    CacheEntry& e = t_cache[slot];
    uint64_t gen = s.gen.load(std::memory_order_acquire);
    if (e.uid == s.uid && e.gen == gen) [[likely]] {
      return e.table;
    }
    std::shared_ptr<const RoutingTable>& keep = t_keep[slot];
    keep = s.load_table();
    e.uid = s.uid;
    e.gen = gen;
    e.table = keep.get();
    return e.table;
  }

  // Rebuilds the table for a new live partition count. False when another thread is already at
  // it (or building failed). Out of line: the send path only pays for it once per change.
  [[gnu::noinline, gnu::cold]] bool rebuild(TopicState& s, int32_t partitions) const noexcept {
    std::unique_lock lock(s.write_mu, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    try {
      auto cur = s.load_table();
      if (cur->partitions() == partitions || cur->empty()) return true;
      const_cast<Impl*>(this)->install(s, build(s, partitions));
      return true;
    } catch (...) {
      return false;
    }
  }
};

Router::Router(RouterOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
}

Router::~Router() {
  uint32_t n = impl_->count.load();
  for (uint32_t i = 0; i < n; ++i) delete impl_->topics[i].load();
}

const RouterOptions& Router::options() const noexcept { return impl_->options; }

TopicId Router::topic(std::string_view name) {
  std::lock_guard lock(impl_->names_mu);
  if (auto it = impl_->names.find(std::string(name)); it != impl_->names.end()) return it->second;
  if (!valid_topic_name(name)) {
    throw std::invalid_argument("invalid topic name \"" + std::string(name) +
                                "\": expected [A-Za-z0-9._-]{1,249}");
  }
  uint32_t id = impl_->count.load();
  if (id >= kMaxTopics) {
    throw std::invalid_argument("too many topics (limit " + std::to_string(kMaxTopics) + ")");
  }
  impl_->topics[id].store(new TopicState(std::string(name), impl_->options.family),
                          std::memory_order_release);
  impl_->count.store(id + 1, std::memory_order_release);
  impl_->names.emplace(std::string(name), id);
  return id;
}

std::optional<TopicId> Router::find_topic(std::string_view name) const {
  std::lock_guard lock(impl_->names_mu);
  if (auto it = impl_->names.find(std::string(name)); it != impl_->names.end()) return it->second;
  return std::nullopt;
}

std::string Router::topic_name(TopicId id) const { return impl_->checked(id).name; }

size_t Router::topic_count() const noexcept { return impl_->count.load(); }

bool Router::publish(const HotKeyList& list) {
  TopicState& s = impl_->checked(topic(list.topic));
  std::lock_guard lock(s.write_mu);
  // At or above kLocalTableVersionBit: no coordinator issues it (a local table's mark).
  if (list.version <= s.version.load() || list.version >= kLocalTableVersionBit) return false;
  s.list = std::make_shared<const HotKeyList>(list);
  s.version.store(list.version);
  impl_->forget_local(s);  // the fresh list wins
  int32_t live = s.live_partitions.load(std::memory_order_relaxed);
  impl_->install(s, impl_->build(s, live > 0 ? live : list.partitions));
  return true;
}

bool Router::remove_list(TopicId id) {
  TopicState& s = impl_->checked(id);
  std::lock_guard lock(s.write_mu);
  if (!s.list) return false;
  s.list.reset();
  impl_->forget_local(s);
  impl_->install(s, impl_->build(s, s.live_partitions.load(std::memory_order_relaxed)));
  return true;
}

void Router::set_plain(TopicId id, bool plain) {
  TopicState& s = impl_->checked(id);
  std::lock_guard lock(s.write_mu);
  if (s.plain.load() == plain) return;
  // The table first, then the flag: whoever sees plain() change already routes by it.
  int32_t live = s.live_partitions.load(std::memory_order_relaxed);
  impl_->install(s, impl_->build(s, live, plain));
  s.plain.store(plain);
}

bool Router::set_local_tables(TopicId id, LocalTables tables, uint64_t expected_generation) {
  TopicState& s = impl_->checked(id);
  // Verified before the lock: salts recomputed for the list's space (its family is ours).
  std::shared_ptr<const HotKeyList> list = this->list(id);
  SaltSpace space;
  space.family = impl_->options.family;
  space.partitions = tables.partitions;
  space.separator =
      list && valid_separator(list->separator) ? list->separator : std::string(kDefaultSeparator);
  if (tables.partitions < 1) return false;
  for (const HotKey& k : tables.keys) {
    SaltTable t;
    t.salts = k.salts;
    if (!verify_table(k.key, t, space)) return false;
    if (list && std::any_of(list->keys.begin(), list->keys.end(),
                            [&](const HotKey& l) { return l.key == k.key; })) {
      return false;
    }
  }
  std::lock_guard lock(s.write_mu);
  if (s.local_gen.load() != expected_generation || s.list != list ||
      tables.base_version != (s.list ? s.list->version : 0)) {
    return false;
  }
  const int32_t live = s.live_partitions.load(std::memory_order_relaxed);
  if (live > 0 && live != tables.partitions) return false;
  s.local = std::make_shared<const LocalTables>(std::move(tables));
  s.local_gen.fetch_add(1, std::memory_order_acq_rel);
  s.local_sets.fetch_add(1, std::memory_order_relaxed);
  impl_->install(s, impl_->build(s, s.local->partitions));
  return true;
}

bool Router::drop_local_tables(TopicId id) {
  TopicState& s = impl_->checked(id);
  std::lock_guard lock(s.write_mu);
  if (!s.local) return false;
  impl_->forget_local(s);
  impl_->install(s, impl_->build(s, s.live_partitions.load(std::memory_order_relaxed)));
  return true;
}

std::shared_ptr<const LocalTables> Router::local_tables(TopicId id) const {
  TopicState& s = impl_->checked(id);
  std::lock_guard lock(s.write_mu);
  return s.local;
}

uint64_t Router::local_generation(TopicId id) const noexcept {
  TopicState* s = impl_->state(id);
  return s ? s->local_gen.load() : 0;
}

uint64_t Router::local_tables_set(TopicId id) const noexcept {
  TopicState* s = impl_->state(id);
  return s ? s->local_sets.load(std::memory_order_relaxed) : 0;
}

uint64_t Router::local_salted(TopicId id) const {
  TopicState& s = impl_->checked(id);
  std::lock_guard lock(s.write_mu);
  Impl::fold_retired(s, TopicState::Clock::now());
  uint64_t n = s.local_folded;
  for (const auto& r : s.retired) n += r.table->local_picks();
  return n + s.load_table()->local_picks();
}

bool Router::plain(TopicId id) const { return impl_->checked(id).plain.load(); }

uint64_t Router::version(TopicId id) const noexcept {
  TopicState* s = impl_->state(id);
  return s ? s->version.load() : 0;
}

std::shared_ptr<const HotKeyList> Router::list(TopicId id) const {
  TopicState& s = impl_->checked(id);
  std::lock_guard lock(s.write_mu);
  return s.list;
}

int32_t Router::live_partitions(TopicId id) const noexcept {
  TopicState* s = impl_->state(id);
  return s ? s->live_partitions.load(std::memory_order_relaxed) : 0;
}

void Router::observe_partitions(TopicId id, int32_t partition_cnt) const noexcept {
  TopicState* s = impl_->state(id);
  if (s != nullptr && partition_cnt > 0 &&
      s->live_partitions.load(std::memory_order_relaxed) != partition_cnt) {
    s->live_partitions.store(partition_cnt, std::memory_order_relaxed);
  }
}

bool Router::looks_salted(TopicId id, const void* key, size_t keylen) const noexcept {
  if (key == nullptr || keylen == 0) return false;
  const char last = static_cast<const char*>(key)[keylen - 1];
  if (last < '0' || last > '9') return false;  // most keys stop here
  TopicState* s = impl_->state(id);
  const std::string_view sep = s ? impl_->current(*s)->separator() : kDefaultSeparator;
  return ends_like_salted({static_cast<const char*>(key), keylen}, sep);
}

RouteDecision Router::route(TopicId id, const void* key, size_t keylen, std::string_view value,
                            int32_t partition_cnt) const noexcept {
  RouteDecision d;
  TopicState* s = impl_->state(id);
  if (s == nullptr || partition_cnt < 1) return d;
  if (s->live_partitions.load(std::memory_order_relaxed) != partition_cnt) {
    s->live_partitions.store(partition_cnt, std::memory_order_relaxed);
  }
  const HashFamily family = impl_->options.family;
  if (key == nullptr || (keylen == 0 && family == HashFamily::kCrc32)) return d;
  const uint32_t hash = family_hash(family, key, keylen);
  d.partition = static_cast<int32_t>(hash % static_cast<uint32_t>(partition_cnt));

  const RoutingTable* table = impl_->current(*s);
  d.version = table->version();
  if (table->empty()) return d;
  if (table->partitions() != partition_cnt) [[unlikely]] {
    if (!impl_->rebuild(*s, partition_cnt)) return d;
    table = impl_->current(*s);
    if (table->empty() || table->partitions() != partition_cnt) return d;
  }
  const RoutingTable::Entry* e = table->find(key, keylen, hash);
  if (e == nullptr) return d;
  uint32_t value_hash = 0;
  uint32_t random = 0;
  if (impl_->options.policy == SaltPolicy::kValueHash) {
    value_hash = murmur2(value.data(), value.size());
  } else if (impl_->options.policy == SaltPolicy::kRandom) {
    random = thread_random();
  }
  const RoutingTable::Salt& salt = table->pick(*e, impl_->options.policy, value_hash, random);
  if (salt.partition < 0 || salt.partition >= partition_cnt) return d;
  d.partition = salt.partition;
  d.salted = true;
  d.salt = salt.salt;
  std::string_view sep = table->separator();
  d.separator_len = static_cast<uint8_t>(sep.size());
  static_assert(sizeof d.separator == kMaxSeparatorBytes);
  std::memcpy(d.separator, table->separator_padded(), sizeof d.separator);
  return d;
}

}  // namespace hotkey::client
