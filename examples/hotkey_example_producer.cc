// A producer using hotkey::Producer: librdkafka and hotkey.* properties in one map; hot keys
// get salted as soon as the coordinator lists them.
//
//   hotkey_example_producer --bootstrap HOST:PORT --topic orders [--coordinator
//   http://127.0.0.1:7070]
//       [--records 100000] [--mode rekey|route] [--transport http|kafka]
//
// --transport kafka (cluster mode, docs/CLUSTER.md): reports and lists travel over the
// __hotkey_reports / __hotkey_lists topics of the same cluster; --coordinator is not needed.
//
// Without --bootstrap it starts a librdkafka mock cluster (3 brokers, 8 partitions) in-process.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <cstdio>
#include <random>
#include <string>

#include "example_args.h"
#include "hotkey/client/producer.h"

int main(int argc, char** argv) {
  using hotkey::examples::arg;
  std::string bootstrap = arg(argc, argv, "--bootstrap", "");
  std::string topic = arg(argc, argv, "--topic", "orders");
  std::string coordinator = arg(argc, argv, "--coordinator", "");
  long records = std::stol(arg(argc, argv, "--records", "100000"));

  rd_kafka_t* mock_rk = nullptr;
  rd_kafka_mock_cluster_t* mock = nullptr;
  if (bootstrap.empty()) {
    char err[256];
    mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof(err));
    mock = rd_kafka_mock_cluster_new(mock_rk, 3);
    rd_kafka_mock_topic_create(mock, topic.c_str(), 8, 1);
    bootstrap = rd_kafka_mock_cluster_bootstraps(mock);
    std::printf("mock cluster at %s\n", bootstrap.c_str());
  }

  try {
    hotkey::Producer producer(
        {{"bootstrap.servers", bootstrap},
         {"partitioner", "murmur2_random"},  // the family hot-key lists are planned with
         {"linger.ms", "5"},
         {"hotkey.transport", arg(argc, argv, "--transport", "http")},
         {"hotkey.coordinator.url", coordinator},
         {"hotkey.routing.mode", arg(argc, argv, "--mode", "rekey")},
         {"hotkey.report.interval.ms", "500"}},
        [](const hotkey::DeliveryReport& r) {
          if (r.error != 0) {
            std::fprintf(stderr, "delivery failed: %.*s\n",
                         static_cast<int>(r.error_message.size()), r.error_message.data());
          }
        });
    // A skewed workload: 30% of the records carry one key.
    std::mt19937 rng(1);
    for (long i = 0; i < records; ++i) {
      std::string key = rng() % 10 < 3 ? "tenant-42" : "tenant-" + std::to_string(rng() % 5000);
      for (;;) {
        hotkey::ProduceResult r = producer.produce(topic, key, "payload");
        if (r.ok()) break;
        if (r.error != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
          std::fprintf(stderr, "produce: %s\n", r.message().c_str());
          return 1;
        }
        producer.poll(10);  // local queue full: serve deliveries, then retry
      }
      producer.poll(0);
    }
    producer.flush(30000);
    producer.client().report_now();
    for (const auto& t : producer.stats().topics) {
      std::printf("topic %s: list version %llu, %llu salted, %llu cold, %llu without key\n",
                  t.topic.c_str(), static_cast<unsigned long long>(t.list_version),
                  static_cast<unsigned long long>(t.salted),
                  static_cast<unsigned long long>(t.cold),
                  static_cast<unsigned long long>(t.null_key));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  if (mock != nullptr) {
    rd_kafka_mock_cluster_destroy(mock);
    rd_kafka_destroy(mock_rk);
  }
  return 0;
}
