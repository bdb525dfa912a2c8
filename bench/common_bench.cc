// Benchmarks for the common core: partitioning against librdkafka's own partitioner, the
// Space-Saving update path (time and heap allocations) and the fleet-wide n-way merge.
// Run: build/bin/common_bench (see docs/BENCHMARKS.md for the figures and how to read them).
#include <benchmark/benchmark.h>
#include <librdkafka/rdkafka.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "hotkey/partitioner.h"
#include "hotkey/salt_planner.h"
#include "hotkey/space_saving.h"

namespace hotkey {
namespace {

// Printable keys of exactly `len` bytes (binary-safe code never cares, but this keeps them
// comparable with what producers send).
std::vector<std::string> make_keys(size_t count, size_t len, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> keys(count, std::string(len, 'a'));
  for (auto& k : keys) {
    for (auto& c : k) c = static_cast<char>('a' + rng() % 26);
  }
  return keys;
}

void BM_PartitionMurmur2_Hotkey(benchmark::State& state) {
  const auto keys = make_keys(1024, static_cast<size_t>(state.range(0)), 1);
  size_t i = 0;
  for (auto _ : state) {
    const auto& k = keys[i++ & 1023];
    benchmark::DoNotOptimize(partition_for(HashFamily::kMurmur2, k, 64));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PartitionMurmur2_Hotkey)->Arg(8)->Arg(16)->Arg(32)->Arg(64);

void BM_PartitionMurmur2_Librdkafka(benchmark::State& state) {
  const auto keys = make_keys(1024, static_cast<size_t>(state.range(0)), 1);
  size_t i = 0;
  for (auto _ : state) {
    const auto& k = keys[i++ & 1023];
    benchmark::DoNotOptimize(
        rd_kafka_msg_partitioner_murmur2(nullptr, k.data(), k.size(), 64, nullptr, nullptr));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PartitionMurmur2_Librdkafka)->Arg(8)->Arg(16)->Arg(32)->Arg(64);

// A stream of Zipf(s) draws over `universe` keys of `key_len` bytes, laid out back to back so
// the benchmark reads keys sequentially (a producer has the key in cache when it records it).
struct ZipfStream {
  std::string bytes;
  size_t key_len;
  size_t count;
  std::string_view at(size_t i) const { return {bytes.data() + i * key_len, key_len}; }
};

ZipfStream make_zipf_stream(double s, size_t universe, size_t count, size_t key_len,
                            uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> cdf(universe);
  double acc = 0;
  for (size_t i = 0; i < universe; ++i) {
    acc += 1.0 / std::pow(static_cast<double>(i + 1), s);
    cdf[i] = acc;
  }
  std::uniform_real_distribution<double> u(0, acc);
  ZipfStream z{std::string(), key_len, count};
  z.bytes.reserve(count * key_len);
  char buf[32];
  for (size_t i = 0; i < count; ++i) {
    size_t r = static_cast<size_t>(std::upper_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
    // Scramble the rank so key order carries no information; fixed width keeps every key the
    // same length.
    uint64_t id = (static_cast<uint64_t>(r) * 0x9E3779B97F4A7C15ull) >> 20;
    std::snprintf(buf, sizeof buf, "tenant-%017llu", static_cast<unsigned long long>(id));
    z.bytes.append(buf, key_len);
  }
  return z;
}

constexpr size_t kStreamLen = size_t{1} << 20;
constexpr size_t kUniverse = size_t{1} << 20;

const ZipfStream& zipf_stream_1() {
  static const ZipfStream z = make_zipf_stream(1.0, kUniverse, kStreamLen, 24, 42);
  return z;
}

// Space-Saving update on Zipf(1.0) keys (24 bytes, beyond small-string storage, so a replaced
// key's buffer really is reused). The sketch is warmed with one pass first; allocations are
// counted only inside the timed loop.
void BM_SpaceSavingUpdate(benchmark::State& state) {
  const auto& z = zipf_stream_1();
  SpaceSaving ss(static_cast<uint32_t>(state.range(0)));
  for (size_t i = 0; i < z.count; ++i) ss.update(z.at(i));
  size_t i = 0;
  const uint64_t before = allocation_count();
  for (auto _ : state) {
    ss.update(z.at(i));
    i = (i + 1) & (kStreamLen - 1);
  }
  const uint64_t allocs = allocation_count() - before;
  state.counters["allocs_per_update"] =
      benchmark::Counter(static_cast<double>(allocs) / static_cast<double>(state.iterations()));
  state.counters["allocs"] = benchmark::Counter(static_cast<double>(allocs));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SpaceSavingUpdate)->Arg(256)->Arg(1024)->Arg(4096)->Arg(16384);

// Skew sweep at k=1024: how much of the cost is eviction (misses) vs. increments (hits).
void BM_SpaceSavingUpdateSkew(benchmark::State& state) {
  const double s = static_cast<double>(state.range(0)) / 10.0;
  const auto z = make_zipf_stream(s, kUniverse, kStreamLen / 4, 24, 7);
  SpaceSaving ss(1024);
  for (size_t i = 0; i < z.count; ++i) ss.update(z.at(i));
  size_t i = 0;
  for (auto _ : state) {
    ss.update(z.at(i));
    if (++i == z.count) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SpaceSavingUpdateSkew)->Arg(8)->Arg(10)->Arg(12)->Arg(15);

// The coordinator's fleet-wide merge: 100 producer sketches of k=1024, each fed its own slice
// of a Zipf(1.0) stream (so they share the head and differ in the tail).
void BM_SpaceSavingMergeAll(benchmark::State& state) {
  const auto parts = static_cast<size_t>(state.range(0));
  const auto k = static_cast<uint32_t>(state.range(1));
  const auto& z = zipf_stream_1();
  std::vector<SpaceSaving> sketches(parts, SpaceSaving(k));
  for (size_t i = 0; i < z.count; ++i) sketches[i % parts].update(z.at(i));
  std::vector<const SpaceSaving*> ptrs;
  for (const auto& s : sketches) ptrs.push_back(&s);
  for (auto _ : state) {
    auto merged = SpaceSaving::merge_all(ptrs, k);
    benchmark::DoNotOptimize(merged.min_count());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(parts));
}
BENCHMARK(BM_SpaceSavingMergeAll)
    ->Args({10, 1024})
    ->Args({100, 1024})
    ->Args({200, 1024})
    ->Args({100, 4096})
    ->Unit(benchmark::kMicrosecond);

void BM_SpaceSavingSerializeRoundTrip(benchmark::State& state) {
  const auto& z = zipf_stream_1();
  SpaceSaving ss(static_cast<uint32_t>(state.range(0)));
  for (size_t i = 0; i < z.count; ++i) ss.update(z.at(i));
  for (auto _ : state) {
    auto back = SpaceSaving::deserialize(ss.serialize());
    benchmark::DoNotOptimize(back.total());
  }
}
BENCHMARK(BM_SpaceSavingSerializeRoundTrip)->Arg(1024)->Unit(benchmark::kMicrosecond);

void BM_PlanSalts(benchmark::State& state) {
  SaltSpace space{HashFamily::kMurmur2, static_cast<int32_t>(state.range(0)), "#"};
  const auto count = static_cast<uint32_t>(state.range(1));
  for (auto _ : state) benchmark::DoNotOptimize(plan_salts("tenant-000000000042", count, space));
}
BENCHMARK(BM_PlanSalts)->Args({64, 8})->Args({1000, 32})->Unit(benchmark::kMicrosecond);

void BM_PlanLoadAware(benchmark::State& state) {
  const auto p = static_cast<int32_t>(state.range(0));
  SaltSpace space{HashFamily::kMurmur2, p, "#"};
  std::mt19937_64 rng(5);
  std::vector<double> cold(static_cast<size_t>(p));
  for (auto& c : cold) c = static_cast<double>(rng() % 1000);
  std::vector<HotKeyDemand> demands;
  for (int i = 0; i < 20; ++i) {
    demands.push_back({"hot-" + std::to_string(i), 5000.0 / (i + 1), 0});
  }
  for (auto _ : state) benchmark::DoNotOptimize(plan_load_aware(cold, demands, space));
}
BENCHMARK(BM_PlanLoadAware)->Arg(64)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hotkey

BENCHMARK_MAIN();
