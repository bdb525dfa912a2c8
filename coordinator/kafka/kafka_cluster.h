// Cluster mode (docs/CLUSTER.md): this coordinator as one member of a consumer group on the
// reports topic. It owns data topic T exactly while it holds T's reports partition: it feeds
// that partition's reports to the coordinator core, rebuilds the window on assignment from the
// last window of reports, reads the co-partitioned lists partition to its end, and publishes
// the owned topics' lists there with versions (epoch << 32 | sequence) above everything the
// partition held. A tailer reads every lists partition so that any member can answer list
// reads and GET /v1/cluster. Thread-safe; start() and stop() from one thread.
#pragma once

#include <memory>
#include <string>

#include "coordinator.h"

namespace hotkey::coordinator {

class KafkaCluster {
 public:
  // `advertised_url` is how the other members and operators reach this coordinator's HTTP API.
  KafkaCluster(const CoordinatorConfig& config, Coordinator& coordinator,
               std::string advertised_url);
  ~KafkaCluster();
  KafkaCluster(const KafkaCluster&) = delete;
  KafkaCluster& operator=(const KafkaCluster&) = delete;

  // Installs the coordinator's cluster hooks, connects, checks the internal topics (creating
  // them when missing and the broker supports CreateTopics) and joins the group. False and
  // *error (what is wrong and what to do) when it cannot.
  bool start(std::string* error);
  // Leaves the group (the partitions move to the other members at once) and flushes.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Version arithmetic of the lists topic (docs/CLUSTER.md, "Versions").
inline constexpr uint64_t version_epoch(uint64_t version) { return version >> 32; }
inline constexpr uint64_t epoch_floor(uint64_t epoch) { return epoch << 32; }

}  // namespace hotkey::coordinator
