// An existing librdkafka producer adopting hot-key routing through its configuration object
// only: RdkafkaPartitioner::install(conf) sets a route-mode partitioner callback; the produce
// code does not change.
//
//   hotkey_example_partitioner --bootstrap HOST:PORT --topic orders [--coordinator
//   http://127.0.0.1:7070]
//       [--records 100000]
#include <librdkafka/rdkafka.h>

#include <cstdio>
#include <random>
#include <string>

#include "example_args.h"
#include "hotkey/client/rdkafka.h"

int main(int argc, char** argv) {
  using hotkey::examples::arg;
  std::string bootstrap = arg(argc, argv, "--bootstrap", "");
  std::string topic = arg(argc, argv, "--topic", "orders");
  long records = std::stol(arg(argc, argv, "--records", "100000"));
  if (bootstrap.empty()) {
    std::fprintf(stderr, "usage: %s --bootstrap HOST:PORT [--topic T] [--coordinator URL]\n",
                 argv[0]);
    return 2;
  }
  // Lives as long as the producer: it owns the sampler, reporter and subscriber.
  hotkey::client::RdkafkaPartitioner partitioner(
      {{"hotkey.coordinator.url", arg(argc, argv, "--coordinator", "")},
       {"hotkey.hash", "crc32"}});  // librdkafka's default partitioner family

  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err)) !=
      RD_KAFKA_CONF_OK) {
    std::fprintf(stderr, "%s\n", err);
    return 2;
  }
  partitioner.install(conf);  // the one line an existing producer adds
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == nullptr) {
    std::fprintf(stderr, "%s\n", err);
    return 2;
  }
  std::mt19937 rng(2);
  for (long i = 0; i < records; ++i) {
    std::string key = rng() % 10 < 3 ? "tenant-42" : "tenant-" + std::to_string(rng() % 5000);
    while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()),
                             RD_KAFKA_V_KEY(key.data(), key.size()),
                             RD_KAFKA_V_VALUE(const_cast<char*>("payload"), 7),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                             RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(rk, 10);
    }
    rd_kafka_poll(rk, 0);
  }
  rd_kafka_flush(rk, 30000);
  rd_kafka_destroy(rk);
  for (const auto& t : partitioner.client().stats().topics) {
    std::printf("topic %s: list version %llu, %llu salted, %llu cold\n", t.topic.c_str(),
                static_cast<unsigned long long>(t.list_version),
                static_cast<unsigned long long>(t.salted), static_cast<unsigned long long>(t.cold));
  }
  return 0;
}
