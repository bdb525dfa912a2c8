// Fixed-count routing driver for instruction counting under callgrind (repeatable on a loaded
// machine, unlike wall-clock timings). Routes N records and prints a checksum, then the heap
// allocations made inside the loop:
//
//   route_instructions MODE N     MODE: librdkafka | cold | hot | sampled_cold | sampled_hot |
//                                       auto_cold | auto_hot
//
// cold / hot: Router::route alone; sampled_*: the whole send path of hotkey::client::Client
// (route, then the sampler at rate 1 with surge detection on), as Client::route does with
// hotkey.sample.rate=1; auto_*: the same with the default hotkey.sample.rate=auto at 1M
// records/s on the topic (500,000 records in a 500 ms window: rate 16,384 / 500,000 = 1/30.5).
// Only the loop is counted under callgrind (CALLGRIND_TOGGLE_COLLECT), so
//   instructions per record = Ir / N of
//   valgrind --tool=callgrind --collect-atstart=no build/bin/route_instructions MODE N
// (without --collect-atstart=no, take the difference of two N instead). The same keys and list
// as client_bench's BM_Route_* (1,024 cold keys, 16 hot keys with 8 salts, 64 partitions,
// murmur2). Figures in docs/BENCHMARKS.md, "Client"; guarded by bench/route_cost_check.py
// (ctest perf.route_instructions).
#include <librdkafka/rdkafka.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "bench_lists.h"
#include "callgrind_toggle.h"
#include "hotkey/client/router.h"
#include "hotkey/client/sampler.h"
#include "hotkey/salt_planner.h"

namespace {

using hotkey::HashFamily;
using hotkey::bench::kPartitions;
using hotkey::bench::make_keys;
using hotkey::bench::make_list;

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  // No string compare per record.
  const int m = mode == "librdkafka"     ? 0
                : mode == "cold"         ? 1
                : mode == "hot"          ? 2
                : mode == "sampled_cold" ? 3
                : mode == "sampled_hot"  ? 4
                : mode == "auto_cold"    ? 5
                : mode == "auto_hot"     ? 6
                                         : -1;
  if (m < 0) {
    std::fprintf(stderr,
                 "usage: route_instructions "
                 "librdkafka|cold|hot|sampled_cold|sampled_hot|auto_cold|auto_hot N\n");
    return 2;
  }
  const long n = std::atol(argv[2]);
  hotkey::client::Router router(hotkey::client::RouterOptions{HashFamily::kMurmur2});
  const auto topic = router.topic("bench");
  const auto hot = make_keys(16, "hot-");
  router.publish(make_list(hot));
  const auto cold = make_keys(1024, "user-");
  // Client's defaults (capacity 256, surge factor 1 as with a coordinator URL), rate 1 or auto.
  hotkey::client::Sampler sampler(
      256,
      m >= 5 ? hotkey::client::SampleRate::automatic() : hotkey::client::SampleRate::fixed(1.0),
      1.0);
  sampler.set_partitions(kPartitions);
  if (m >= 5) {
    // One window of 500,000 records (1M records/s at the default 500 ms interval) sets the
    // adaptive rate of the next.
    for (int i = 0; i < 500000; ++i) sampler.record(cold[static_cast<size_t>(i & 1023)], 0, false);
    sampler.drain(kPartitions, 500, 500);
  }
  router.route(topic, "w", 1, {}, kPartitions);  // warm the per-thread snapshot cache
  // Warm the sampler's shard: its sketch full of the keys the loop sends, every partition seen.
  for (int round = 0; round < 2; ++round) {
    for (const auto& keys : {cold, hot}) {
      for (const auto& k : keys) {
        auto d = router.route(topic, k.data(), k.size(), {}, kPartitions);
        sampler.record(k, d.partition, d.salted);
      }
    }
  }
  long sink = 0;
  const uint64_t allocs_before = hotkey::allocation_count();
  CALLGRIND_TOGGLE_COLLECT;
  for (long i = 0; i < n; ++i) {
    if (m == 0) {
      const std::string& k = cold[static_cast<size_t>(i & 1023)];
      sink += rd_kafka_msg_partitioner_murmur2_random(nullptr, k.data(), k.size(), kPartitions,
                                                      nullptr, nullptr);
    } else if (m == 1 || m == 3 || m == 5) {
      const std::string& k = cold[static_cast<size_t>(i & 1023)];
      auto d = router.route(topic, k.data(), k.size(), {}, kPartitions);
      if (m != 1) sampler.record(k, d.partition, d.salted);
      sink += d.partition;
    } else {
      const std::string& k = hot[static_cast<size_t>(i & 15)];
      auto d = router.route(topic, k.data(), k.size(), {}, kPartitions);
      if (m != 2) sampler.record(k, d.partition, d.salted);
      sink += d.partition;
    }
  }
  CALLGRIND_TOGGLE_COLLECT;
  const uint64_t allocs = hotkey::allocation_count() - allocs_before;
  std::printf("%ld\nallocations %llu\n", sink, static_cast<unsigned long long>(allocs));
  return 0;
}
