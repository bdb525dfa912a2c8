// Fixed-count routing driver for instruction counting under callgrind (repeatable on a loaded
// machine, unlike wall-clock timings). Routes N records and prints a checksum:
//
//   route_instructions MODE N     MODE: librdkafka | cold | hot
//
// Cost per record = (instructions at N=200000 - instructions at N=100000) / 100000, e.g.
//   for n in 100000 200000; do
//     valgrind --tool=callgrind --callgrind-out-file=cg.$n build/bin/route_instructions cold $n
//   done
// The same keys and list as client_bench's BM_Route_* (1,024 cold keys, 16 hot keys with 8
// salts, 64 partitions, murmur2). Figures in docs/BENCHMARKS.md, "Client".
#include <librdkafka/rdkafka.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hotkey/client/router.h"
#include "hotkey/salt_planner.h"

namespace {

using hotkey::HashFamily;
constexpr int32_t kPartitions = 64;

std::vector<std::string> make_keys(size_t n, const char* prefix) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < n; ++i) keys.push_back(prefix + std::to_string(i * 2654435761u));
  return keys;
}

hotkey::HotKeyList make_list(const std::vector<std::string>& hot) {
  hotkey::HotKeyList list;
  list.topic = "bench";
  list.version = 1;
  list.partitions = kPartitions;
  list.hash = HashFamily::kMurmur2;
  for (const auto& k : hot) {
    hotkey::HotKey hk;
    hk.key = k;
    hk.salts =
        hotkey::plan_salts(k, 8, hotkey::SaltSpace{HashFamily::kMurmur2, kPartitions, "#"}).salts;
    list.keys.push_back(std::move(hk));
  }
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode != "librdkafka" && mode != "cold" && mode != "hot") {
    std::fprintf(stderr, "usage: route_instructions librdkafka|cold|hot N\n");
    return 2;
  }
  const long n = std::atol(argv[2]);
  const int m = mode == "librdkafka" ? 0 : mode == "cold" ? 1 : 2;  // no string compare per record
  hotkey::client::Router router(hotkey::client::RouterOptions{HashFamily::kMurmur2});
  const auto topic = router.topic("bench");
  const auto hot = make_keys(16, "hot-");
  router.publish(make_list(hot));
  const auto cold = make_keys(1024, "user-");
  router.route(topic, "w", 1, {}, kPartitions);  // warm the per-thread snapshot cache
  long sink = 0;
  for (long i = 0; i < n; ++i) {
    if (m == 0) {
      const std::string& k = cold[static_cast<size_t>(i & 1023)];
      sink += rd_kafka_msg_partitioner_murmur2_random(nullptr, k.data(), k.size(), kPartitions,
                                                      nullptr, nullptr);
    } else if (m == 1) {
      const std::string& k = cold[static_cast<size_t>(i & 1023)];
      sink += router.route(topic, k.data(), k.size(), {}, kPartitions).partition;
    } else {
      const std::string& k = hot[static_cast<size_t>(i & 15)];
      sink += router.route(topic, k.data(), k.size(), {}, kPartitions).partition;
    }
  }
  std::printf("%ld\n", sink);
  return 0;
}
