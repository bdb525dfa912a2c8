// Cluster-mode ingest through Kafka (run by hand; docs/BENCHMARKS.md "Cluster mode"): M real
// coordinator processes in one group on a real Apache Kafka (scripts/kafka.sh, one node; --mock:
// librdkafka's mock cluster), then R binary reports of 12 data topics written to the reports
// topic as fast as possible; prints the coordinators' CPU seconds (utime + stime from /proc,
// minus their idle CPU over as long a stretch) until every report is ingested, and sketch
// entries merged per CPU-second.
//   cluster_bench [--coordinators M] [--reports R] [--items K] [--mock]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cluster_harness.h"

namespace {

using namespace hotkey::coordinator::cluster_test;

double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  std::istringstream rest(text.substr(close + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15; ++i) {
    rest >> f;
    if (i == 14 || i == 15) ticks += std::stod(f);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

int main(int argc, char** argv) {
  int coordinators = 1;
  int reports = 10000;
  int items = 256;
  bool mock = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--mock") {
      mock = true;
      continue;
    }
    if (i + 1 >= argc) break;
    if (a == "--coordinators") coordinators = std::atoi(argv[++i]);
    else if (a == "--reports") reports = std::atoi(argv[++i]);
    else if (a == "--items") items = std::atoi(argv[++i]);
  }
  std::unique_ptr<Kafka> real_kafka;
  std::unique_ptr<MockKafka> mock_kafka;
  if (mock) {
    mock_kafka = std::make_unique<MockKafka>();
  } else {
    real_kafka = std::make_unique<Kafka>();
  }
  struct {
    std::string b;
    const std::string& bootstrap() const { return b; }
  } kafka{mock ? mock_kafka->bootstrap() : real_kafka->bootstrap()};
  std::printf("Kafka: %s\n", mock ? "librdkafka mock cluster" : "Apache Kafka (scripts/kafka.sh)");
  TempDir dir;
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<Node*> raw;
  for (int i = 0; i < coordinators; ++i) {
    nodes.push_back(std::make_unique<Node>("c" + std::to_string(i), dir.path(), kafka.bootstrap()));
    raw.push_back(nodes.back().get());
  }
  std::map<int, size_t> owner;
  auto stable_all = [&] {
    owner.clear();
    for (size_t i = 0; i < raw.size(); ++i) {
      for (int p : raw[i]->owned()) owner[p] = i;
    }
    return owner.size() == static_cast<size_t>(kPartitions);
  };
  if (!eventually(stable_all, std::chrono::milliseconds(120000), kPollStep)) {
    std::fprintf(stderr, "group did not form\n");
    return 1;
  }
  auto ingested = [&] {
    uint64_t n = 0;
    for (Node* nd : raw) n += nd->cluster().value("reports_ingested", uint64_t{0});
    return n;
  };
  auto cpu = [&] {
    double s = 0;
    for (Node* nd : raw) s += cpu_seconds(nd->pid());
    return s;
  };
  // Idle cost over 5 s (group heartbeats, fetch polling, republish, planning ticks).
  const double idle0 = cpu();
  std::this_thread::sleep_for(std::chrono::seconds(5));
  const double idle_per_s = (cpu() - idle0) / 5.0;

  // Reports made up front, so that the producer's own work is not on the clock.
  const auto topics = data_topics(12);
  std::vector<std::pair<std::string, std::string>> encoded;
  for (int i = 0; i < reports; ++i) {
    const std::string& topic = topics[static_cast<size_t>(i) % topics.size()];
    std::map<std::string, uint64_t> counts{{"hot", 5000}};
    hotkey::coordinator::test::add_tail(counts, 20000, static_cast<uint32_t>(items * 4),
                                        static_cast<uint32_t>(i));
    hotkey::Report r = hotkey::coordinator::test::make_report(
        "p" + std::to_string(i % 200), topic, 12, static_cast<uint64_t>(i / 200 + 1), counts,
        static_cast<uint32_t>(items));
    encoded.emplace_back(topic, hotkey::encode_report_binary(r));
  }
  char errstr[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", kafka.bootstrap().c_str(), errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "partitioner", "murmur2_random", errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "linger.ms", "20", errstr, sizeof errstr);
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  const uint64_t before = ingested();
  const double cpu0 = cpu();
  const auto t0 = Steady::now();
  for (auto& [topic, value] : encoded) {
    while (rd_kafka_producev(producer, RD_KAFKA_V_TOPIC("__hotkey_reports"),
                             RD_KAFKA_V_KEY(topic.data(), topic.size()),
                             RD_KAFKA_V_VALUE(value.data(), value.size()),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                             RD_KAFKA_V_HEADER("hotkey.report.v", "1", 1),
                             RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(producer, 10);
    }
  }
  rd_kafka_flush(producer, 60000);
  rd_kafka_destroy(producer);
  if (!eventually([&] { return ingested() >= before + static_cast<uint64_t>(reports); },
                  std::chrono::milliseconds(600000), kPollStep)) {
    std::fprintf(stderr, "not every report was ingested: %llu of %d\n",
                 static_cast<unsigned long long>(ingested() - before), reports);
    return 1;
  }
  const double wall = std::chrono::duration<double>(Steady::now() - t0).count();
  const double used = cpu() - cpu0;
  const double busy = std::max(used - idle_per_s * wall, 1e-9);
  const double entries = static_cast<double>(reports) * items;
  std::printf(
      "coordinators=%d reports=%d items/report=%d entries=%.0f wall_s=%.2f cpu_s=%.2f "
      "idle_cpu_per_s=%.3f cpu_s_minus_idle=%.2f entries_per_cpu_s=%.0f "
      "entries_per_cpu_s_incl_idle=%.0f\n",
      coordinators, reports, items, entries, wall, used, idle_per_s, busy, entries / busy,
      entries / used);
  return 0;
}
