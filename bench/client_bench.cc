// Client send-path costs (figures in docs/BENCHMARKS.md, "Client"):
//   - routing one record, cold and hot, next to librdkafka's own murmur2 partitioner, with heap
//     allocations per record counted (goal: cold <= 1.1x, hot <= 2x, zero allocations);
//   - the sampler under 1, 2 and 4 producing threads;
//   - produce rate to the librdkafka mock cluster, hotkey::Producer vs plain librdkafka.
#include <benchmark/benchmark.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <memory>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "bench_lists.h"
#include "hotkey/client/client.h"
#include "hotkey/client/producer.h"
#include "hotkey/client/router.h"
#include "hotkey/client/sampler.h"
#include "hotkey/salt_planner.h"

namespace {

using hotkey::HashFamily;
using hotkey::client::Router;
using hotkey::client::RouterOptions;

using hotkey::bench::kPartitions;
using hotkey::bench::make_keys;
using hotkey::bench::make_list;

void report_allocs(benchmark::State& state, uint64_t before) {
  state.counters["allocs_per_record"] =
      benchmark::Counter(static_cast<double>(hotkey::allocation_count() - before) /
                         static_cast<double>(state.iterations()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// librdkafka's murmur2_random partitioner, called directly: the baseline.
void BM_Route_Librdkafka_Murmur2(benchmark::State& state) {
  auto keys = make_keys(1024, "user-");
  size_t i = 0;
  uint64_t before = hotkey::allocation_count();
  for (auto _ : state) {
    const std::string& k = keys[i++ & 1023];
    benchmark::DoNotOptimize(rd_kafka_msg_partitioner_murmur2_random(
        nullptr, k.data(), k.size(), kPartitions, nullptr, nullptr));
  }
  report_allocs(state, before);
}
BENCHMARK(BM_Route_Librdkafka_Murmur2);

// A cold key with 16 hot keys listed: hash once, probe the hot table, reduce.
void BM_Route_Cold(benchmark::State& state) {
  Router router(RouterOptions{HashFamily::kMurmur2});
  auto topic = router.topic("bench");
  router.publish(make_list(make_keys(16, "hot-")));
  auto keys = make_keys(1024, "user-");
  size_t i = 0;
  // Warm the per-thread snapshot cache outside the measured loop.
  router.route(topic, "w", 1, {}, kPartitions);
  uint64_t before = hotkey::allocation_count();
  for (auto _ : state) {
    const std::string& k = keys[i++ & 1023];
    benchmark::DoNotOptimize(router.route(topic, k.data(), k.size(), {}, kPartitions));
  }
  report_allocs(state, before);
}
BENCHMARK(BM_Route_Cold);

// A hot key: table hit plus the smooth weighted round-robin pick.
void BM_Route_Hot(benchmark::State& state) {
  Router router(RouterOptions{HashFamily::kMurmur2});
  auto topic = router.topic("bench");
  auto hot = make_keys(16, "hot-");
  router.publish(make_list(hot));
  size_t i = 0;
  router.route(topic, "w", 1, {}, kPartitions);
  uint64_t before = hotkey::allocation_count();
  for (auto _ : state) {
    const std::string& k = hot[i++ & 15];
    benchmark::DoNotOptimize(router.route(topic, k.data(), k.size(), {}, kPartitions));
  }
  report_allocs(state, before);
}
BENCHMARK(BM_Route_Hot);

// Routing plus sampling (what hotkey::Client::route does per record), sample rate 1.
void BM_ClientRoute_Sampled(benchmark::State& state) {
  static hotkey::client::Client* client = nullptr;
  static hotkey::client::TopicId topic = 0;
  if (state.thread_index() == 0) {
    client = new hotkey::client::Client(hotkey::client::Properties{{"hotkey.hash", "murmur2"}});
    topic = client->topic("bench");
    client->router().publish(make_list(make_keys(16, "hot-")));
  }
  auto keys = make_keys(1024, "user-");
  size_t i = 0;
  // Warm-up: the shard's sketch fills with these keys before measuring.
  for (const auto& k : keys) client->route(topic, k.data(), k.size(), {}, kPartitions);
  uint64_t before = hotkey::allocation_count();
  for (auto _ : state) {
    const std::string& k = keys[i++ & 1023];
    benchmark::DoNotOptimize(client->route(topic, k.data(), k.size(), {}, kPartitions));
  }
  if (state.thread_index() == 0) report_allocs(state, before);
}
BENCHMARK(BM_ClientRoute_Sampled)->UseRealTime();

// The sampler alone under concurrent producing threads (one shard per thread).
void BM_Sampler_Record(benchmark::State& state) {
  static hotkey::client::Sampler* sampler = nullptr;
  if (state.thread_index() == 0) sampler = new hotkey::client::Sampler(256, 1.0);
  auto keys = make_keys(200, "user-");
  size_t i = 0;
  for (auto _ : state) {
    sampler->record(keys[i % keys.size()], static_cast<int32_t>(i & 63), false);
    ++i;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_Sampler_Record)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// Produce rate to a 3-broker mock cluster over loopback TCP: 20000 records per iteration,
// flushed; one key takes 30% of the records. Arg 0: plain librdkafka (murmur2_random);
// arg 1: hotkey::Producer salting that key over 6 partitions (rekey, two headers per salted
// record); arg 2: hotkey::Producer with an empty list (the wrapper's own overhead).
void BM_Produce_MockCluster(benchmark::State& state) {
  char err[256];
  rd_kafka_t* mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof(err));
  rd_kafka_mock_cluster_t* mc = rd_kafka_mock_cluster_new(mock_rk, 3);
  rd_kafka_mock_topic_create(mc, "bench", 12, 1);
  std::string bootstraps = rd_kafka_mock_cluster_bootstraps(mc);
  auto keys = make_keys(1000, "user-");
  constexpr int kRecords = 20000;
  const bool wrapped = state.range(0) >= 1;
  std::unique_ptr<hotkey::Producer> producer;
  rd_kafka_t* rk = nullptr;
  if (wrapped) {
    producer = std::make_unique<hotkey::Producer>(
        hotkey::client::Properties{{"bootstrap.servers", bootstraps},
                                   {"partitioner", "murmur2_random"},
                                   {"linger.ms", "5"},
                                   {"log_level", "3"}});
    producer->produce("bench", "warm", "v");
    producer->flush(10000);
    hotkey::HotKeyList list = make_list({"hot"});
    list.partitions = 12;
    list.keys[0].salts =
        hotkey::plan_salts("hot", 6, hotkey::SaltSpace{HashFamily::kMurmur2, 12, "#"}).salts;
    if (state.range(0) == 1) producer->client().router().publish(list);
  } else {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps.c_str(), err, sizeof(err));
    rd_kafka_conf_set(conf, "partitioner", "murmur2_random", err, sizeof(err));
    rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof(err));
    rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  }
  std::string value(100, 'v');
  for (auto _ : state) {
    for (int i = 0; i < kRecords; ++i) {
      const std::string& k =
          (i % 10 < 3) ? std::string("hot") : keys[static_cast<size_t>(i) % 1000];
      if (wrapped) {
        while (producer->produce("bench", k, value).error == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
          producer->poll(1);
        }
      } else {
        while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("bench"), RD_KAFKA_V_KEY(k.data(), k.size()),
                                 RD_KAFKA_V_VALUE(value.data(), value.size()),
                                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                 RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
          rd_kafka_poll(rk, 1);
        }
      }
    }
    if (wrapped) {
      producer->flush(30000);
    } else {
      rd_kafka_flush(rk, 30000);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kRecords);
  state.SetLabel(state.range(0) == 0   ? "librdkafka"
                 : state.range(0) == 1 ? "hotkey::Producer, hot key salted"
                                       : "hotkey::Producer, empty list");
  producer.reset();
  if (rk != nullptr) rd_kafka_destroy(rk);
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(mock_rk);
}
BENCHMARK(BM_Produce_MockCluster)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
