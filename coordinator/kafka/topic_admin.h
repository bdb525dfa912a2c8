// The internal topics at start (docs/CLUSTER.md, "Topics"): the reports, lists and state topics
// are looked up, created when missing (CreateTopics, compacted lists and state topics) and
// checked for co-partitioning. Runs once, before any other thread uses the producer.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <string>

#include "cluster_config.h"
#include "log_sink.h"

namespace hotkey::coordinator::kafka {

struct TopicLayout {
  int32_t partitions = 0;  // of the reports and lists topics (the same count)
  int32_t state_partitions = 0;
};

// Fills *layout; false and *error (what is wrong and what to do) when the topics cannot be
// found or made, or are not co-partitioned.
bool check_topics(rd_kafka_t* producer, const ClusterConfig& cc, LogSink& log, TopicLayout* layout,
                  std::string* error);

}  // namespace hotkey::coordinator::kafka
