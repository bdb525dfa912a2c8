// A real Apache Kafka cluster (KRaft, on loopback) for one test or benchmark, started and
// stopped through scripts/kafka.sh (the broker comes from Maven Central, see tools/kafka/):
// one node for most tests, three (replication factor 3, min.insync.replicas=2) where a fault
// needs replicas. The destructor kills every node; a process that dies first leaves none
// behind either (kafka.sh's owner watchdog). Plus the admin calls tests need (CreateTopics,
// leaders, configs). Not thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace hotkey::test_support {

struct RealKafkaOptions {
  int nodes = 1;
  // Broker settings added to (or replacing) kafka.sh's defaults, "key=value".
  std::vector<std::string> broker_settings;
};

class RealKafka {
 public:
  // Starts the cluster and waits until every node serves metadata; throws std::runtime_error
  // with kafka.sh's message when it cannot.
  explicit RealKafka(RealKafkaOptions options = {});
  ~RealKafka();
  RealKafka(const RealKafka&) = delete;
  RealKafka& operator=(const RealKafka&) = delete;

  // "127.0.0.1:port,..." of every node.
  const std::string& bootstrap() const { return bootstrap_; }
  int nodes() const { return options_.nodes; }
  // The bootstrap of node `i` alone (0-based).
  std::string node_bootstrap(int i) const;
  // The process id of node `i`'s JVM (0 when it is not known).
  int node_pid(int i) const;
  // kill -9 of node `i`; start_node() brings it back on its data and ports and waits for it.
  void kill_node(int i);
  void start_node(int i);

  // CreateTopics, then waits until the metadata shows the topic; throws with the broker's
  // answer on failure. replication -1: the cluster's default.
  void create_topic(const std::string& topic, int partitions, int replication = -1,
                    const std::map<std::string, std::string>& configs = {}) const;
  // Partition count of `topic` (0 when it does not exist).
  int partitions(const std::string& topic) const;
  // The node (0-based) leading topic/partition, -1 when none does.
  int leader(const std::string& topic, int partition) const;
  // The node (0-based) that is consumer group `group`'s coordinator, -1 when none answers.
  int group_coordinator(const std::string& group) const;
  // The node (0-based) that is the active controller (the KRaft quorum's leader); throws when
  // the quorum cannot be described.
  int controller() const;
  // The topic's effective configuration (DescribeConfigs), e.g. "cleanup.policy".
  std::map<std::string, std::string> topic_config(const std::string& topic) const;
  // The low watermark (log start offset) and the high watermark of topic/partition.
  std::pair<int64_t, int64_t> watermarks(const std::string& topic, int partition) const;

  // scripts/kafka.sh of this source tree.
  static std::filesystem::path script();

 private:
  RealKafkaOptions options_;
  TempDir dir_{"hotkey-kafka"};
  std::string bootstrap_;
};

}  // namespace hotkey::test_support
