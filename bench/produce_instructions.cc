// Fixed-count produce driver for instruction counting under callgrind: what one produce call
// costs the application thread, librdkafka's share included (its record and header copies),
// for plain librdkafka and for hotkey::client::Producer on cold and on salted hot keys.
//
//   produce_instructions MODE N     MODE: plain | cold | cold_v1 | hot | hot_v1 | hot_noheaders |
//                                         hot_1m | hot_v1_1m | hot_noheaders_1m
//
// plain: rd_kafka_producev (key, value copied, RD_KAFKA_PARTITION_UA); cold / hot:
// Producer::produce (rekey mode, sampler at rate 1) on 1,024 cold keys / 16 listed hot keys
// with 8 salts each (every hot record salted: key<sep><salt>; merge contract 2, the default: no
// header; *_v1: hotkey.merge.contract=1, the two merge headers; hot_noheaders:
// hotkey.salt.headers=false). Cold keys end in digits (user-N), so contract 2 looks for the
// separator on every one. No broker is reachable: records stay in
// librdkafka's queue, so only the produce call itself is measured. *_1m: the sampler at the rate
// hotkey.sample.rate=auto takes at 1M records/s on the topic (1 in 30.5: 16,384 samples in a
// 500 ms window of 500,000 records), given as a fixed rate (no reporter drains it here). Count only
// the calls (instructions per record = Ir / N):
//   valgrind --tool=callgrind --toggle-collect='*produce_one*' produce_instructions MODE N
// Figures in docs/BENCHMARKS.md, "Client".
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "bench_lists.h"
#include "hotkey/client/producer.h"
#include "hotkey/salt_planner.h"

namespace {

using hotkey::HashFamily;
using hotkey::bench::kPartitions;
using hotkey::bench::make_keys;
using hotkey::bench::make_list;

__attribute__((noinline)) int produce_one_plain(rd_kafka_t* rk, const std::string& key,
                                                const std::string& value) {
  return rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("bench"), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                           RD_KAFKA_V_KEY(key.data(), key.size()),
                           RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                           RD_KAFKA_V_END);
}

__attribute__((noinline)) int produce_one_hotkey(hotkey::client::Producer& p,
                                                 const std::string& key, const std::string& value) {
  return p.produce("bench", key, value).error;
}

const std::vector<std::pair<std::string, std::string>> kKafkaProps = {
    {"bootstrap.servers", "127.0.0.1:9"},  // nothing listens: records stay queued
    {"queue.buffering.max.messages", "2000000"},
    {"queue.buffering.max.kbytes", "2097151"},
    {"message.timeout.ms", "600000"},
    {"log_level", "0"},
};

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  static const char* const kModes[] = {"plain",  "cold",      "cold_v1",
                                       "hot",    "hot_v1",    "hot_noheaders",
                                       "hot_1m", "hot_v1_1m", "hot_noheaders_1m"};
  if (std::find(std::begin(kModes), std::end(kModes), mode) == std::end(kModes)) {
    std::fprintf(stderr,
                 "usage: produce_instructions plain|cold|cold_v1|hot|hot_v1|hot_noheaders|hot_1m|"
                 "hot_v1_1m|hot_noheaders_1m N\n");
    return 2;
  }
  const long n = std::atol(argv[2]);
  const std::string value(16, 'v');
  const auto cold = make_keys(1024, "user-");
  const auto hot = make_keys(16, "hot-");
  long failed = 0;
  if (mode == "plain") {
    char errstr[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    for (const auto& [k, v] : kKafkaProps) {
      rd_kafka_conf_set(conf, k.c_str(), v.c_str(), errstr, sizeof(errstr));
    }
    rd_kafka_conf_set(conf, "partitioner", "murmur2_random", errstr, sizeof(errstr));
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (rk == nullptr) {
      std::fprintf(stderr, "rd_kafka_new: %s\n", errstr);
      return 1;
    }
    for (long i = 0; i < n; ++i) {
      failed += produce_one_plain(rk, cold[static_cast<size_t>(i & 1023)], value) != 0;
    }
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE);
    rd_kafka_destroy(rk);
  } else {
    // Rate 1: the sampler's full cost (without a coordinator the default auto rate would
    // sample next to nothing).
    hotkey::client::Properties props{
        {"hotkey.hash", "murmur2"}, {"hotkey.routing.mode", "rekey"}, {"hotkey.sample.rate", "1"}};
    for (const auto& [k, v] : kKafkaProps) props[k] = v;
    if (mode.starts_with("hot_noheaders")) props["hotkey.salt.headers"] = "false";
    if (mode.find("_v1") != std::string::npos) props["hotkey.merge.contract"] = "1";
    if (mode.ends_with("_1m")) props["hotkey.sample.rate"] = "0.032768";
    hotkey::client::Producer p(props);
    p.client().router().publish(make_list(hot));
    // What librdkafka's metadata would tell the partitioner callback.
    p.client().router().observe_partitions(p.client().topic("bench"), kPartitions);
    const bool cold_mode = mode.starts_with("cold");  // every other mode sends hot keys
    const auto& keys = cold_mode ? cold : hot;
    const long mask = cold_mode ? 1023 : 15;
    for (long i = 0; i < n; ++i) {
      failed += produce_one_hotkey(p, keys[static_cast<size_t>(i & mask)], value) != 0;
    }
    rd_kafka_purge(p.handle(), RD_KAFKA_PURGE_F_QUEUE);
    const auto stats = p.stats();
    std::printf("salted %llu cold %llu\n",
                static_cast<unsigned long long>(stats.topics.at(0).salted),
                static_cast<unsigned long long>(stats.topics.at(0).cold));
  }
  std::printf("failed %ld\n", failed);
  return failed == 0 ? 0 : 1;
}
