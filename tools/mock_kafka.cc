// hotkey-mock-kafka: runs librdkafka's mock Kafka cluster (real Kafka protocol over loopback
// TCP) until SIGINT/SIGTERM, for the demo, the benchmarks and tests. kcat and any Kafka client
// can talk to it through the bootstrap address it prints.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: hotkey-mock-kafka [--brokers N] [--topic NAME:PARTITIONS]... "
               "[--bootstrap-file FILE]\n"
               "  Runs librdkafka's mock Kafka cluster on loopback until SIGINT/SIGTERM.\n"
               "  --brokers N             brokers in the cluster (default 3)\n"
               "  --topic NAME:PARTITIONS create a topic (repeatable; replication factor 1)\n"
               "  --bootstrap-file FILE   write the bootstrap address there once ready\n"
               "  Prints 'bootstrap.servers=HOST:PORT,...' on stdout when ready.\n");
}

}  // namespace

int main(int argc, char** argv) {
  int brokers = 3;
  std::vector<std::pair<std::string, int>> topics;
  std::string bootstrap_file;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "hotkey-mock-kafka: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--brokers") {
      brokers = std::atoi(value().c_str());
      if (brokers < 1 || brokers > 32) {
        std::fprintf(stderr, "hotkey-mock-kafka: --brokers must be 1..32\n");
        return 2;
      }
    } else if (a == "--topic") {
      std::string t = value();
      auto colon = t.rfind(':');
      int parts = colon == std::string::npos ? 0 : std::atoi(t.c_str() + colon + 1);
      if (colon == 0 || parts < 1 || parts > 10000) {
        std::fprintf(stderr,
                     "hotkey-mock-kafka: --topic wants NAME:PARTITIONS (1..10000), got '%s'\n",
                     t.c_str());
        return 2;
      }
      topics.emplace_back(t.substr(0, colon), parts);
    } else if (a == "--bootstrap-file") {
      bootstrap_file = value();
    } else {
      std::fprintf(stderr, "hotkey-mock-kafka: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }

  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // The handle only hosts the mock cluster; it never produces.
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) {
    std::fprintf(stderr, "hotkey-mock-kafka: %s\n", errstr);
    return 1;
  }
  rd_kafka_mock_cluster_t* mcluster = rd_kafka_mock_cluster_new(rk, brokers);
  if (!mcluster) {
    std::fprintf(stderr, "hotkey-mock-kafka: could not start the mock cluster\n");
    rd_kafka_destroy(rk);
    return 1;
  }
  for (const auto& [name, parts] : topics) {
    rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mcluster, name.c_str(), parts, 1);
    if (err) {
      std::fprintf(stderr, "hotkey-mock-kafka: topic %s: %s\n", name.c_str(),
                   rd_kafka_err2str(err));
      rd_kafka_mock_cluster_destroy(mcluster);
      rd_kafka_destroy(rk);
      return 1;
    }
  }
  std::string bootstraps = rd_kafka_mock_cluster_bootstraps(mcluster);
  if (!bootstrap_file.empty()) {
    std::string tmp = bootstrap_file + ".tmp";
    std::ofstream(tmp) << bootstraps << "\n";
    std::rename(tmp.c_str(), bootstrap_file.c_str());
  }
  std::printf("bootstrap.servers=%s\n", bootstraps.c_str());
  std::fflush(stdout);

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));

  rd_kafka_mock_cluster_destroy(mcluster);
  rd_kafka_destroy(rk);
  return 0;
}
