#include "topic_admin.h"

#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "kafka_io.h"

namespace hotkey::coordinator::kafka {
namespace {

constexpr int kMetadataTimeoutMs = 10000;

// Partition count of `topic` (0: missing, -1: metadata unavailable). Asks for all topics: a
// request naming the topic would make a broker with auto.create.topics.enable create it with
// default settings (not compacted, default partition count).
int32_t topic_partitions(rd_kafka_t* producer, const ClusterConfig& cc, const std::string& topic,
                         std::string* error) {
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(producer, 1, nullptr, &md, kMetadataTimeoutMs);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    *error = "cannot reach Kafka at " + cc.bootstrap + " (--kafka) within " +
             std::to_string(kMetadataTimeoutMs / 1000) + " s: " + rd_kafka_err2str(err);
    return -1;
  }
  int32_t n = 0;
  for (int i = 0; i < md->topic_cnt; ++i) {
    if (topic == md->topics[i].topic && md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      n = md->topics[i].partition_cnt;
    }
  }
  rd_kafka_metadata_destroy(md);
  return n;
}

// CreateTopics for the missing internal topics (a broker without it, like the test mock,
// answers with an error or not at all: the caller then reports what to create by hand).
bool create_topics(rd_kafka_t* producer, const ClusterConfig& cc,
                   const std::vector<std::pair<std::string, int32_t>>& missing,
                   std::string* error) {
  std::vector<rd_kafka_NewTopic_t*> topics;
  char errstr[512];
  for (const auto& [name, parts] : missing) {
    rd_kafka_NewTopic_t* nt =
        rd_kafka_NewTopic_new(name.c_str(), parts, cc.replication_factor, errstr, sizeof errstr);
    if (!nt) {
      *error = errstr;
      for (auto* t : topics) rd_kafka_NewTopic_destroy(t);
      return false;
    }
    if (name != cc.reports_topic) rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
    topics.push_back(nt);
  }
  rd_kafka_queue_t* q = rd_kafka_queue_new(producer);
  rd_kafka_AdminOptions_t* opts =
      rd_kafka_AdminOptions_new(producer, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_request_timeout(opts, 5000, errstr, sizeof errstr);
  rd_kafka_AdminOptions_set_operation_timeout(opts, 5000, errstr, sizeof errstr);
  rd_kafka_CreateTopics(producer, topics.data(), topics.size(), opts, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 12000);
  bool ok = false;
  if (!ev) {
    *error = "CreateTopics got no answer";
  } else if (rd_kafka_event_error(ev)) {
    *error = std::string("CreateTopics: ") + rd_kafka_event_error_string(ev);
  } else {
    ok = true;
    const rd_kafka_CreateTopics_result_t* res = rd_kafka_event_CreateTopics_result(ev);
    size_t n = 0;
    const rd_kafka_topic_result_t** results = rd_kafka_CreateTopics_result_topics(res, &n);
    for (size_t i = 0; i < n; ++i) {
      rd_kafka_resp_err_t e = rd_kafka_topic_result_error(results[i]);
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        ok = false;
        *error = std::string("CreateTopics ") + rd_kafka_topic_result_name(results[i]) + ": " +
                 rd_kafka_err2str(e);
      }
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_queue_destroy(q);
  for (auto* t : topics) rd_kafka_NewTopic_destroy(t);
  return ok;
}

// A broker to ask about `topic`: the leader of its first partition, else any broker the
// metadata names (-1: none).
int32_t broker_for(rd_kafka_t* producer, const std::string& topic) {
  const rd_kafka_metadata_t* md = nullptr;
  if (rd_kafka_metadata(producer, 1, nullptr, &md, kMetadataTimeoutMs) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    return -1;
  }
  int32_t id = md->broker_cnt > 0 ? md->brokers[0].id : -1;
  for (int i = 0; i < md->topic_cnt; ++i) {
    if (topic == md->topics[i].topic && md->topics[i].partition_cnt > 0 &&
        md->topics[i].partitions[0].leader >= 0) {
      id = md->topics[i].partitions[0].leader;
    }
  }
  rd_kafka_metadata_destroy(md);
  return id;
}

// The cleanup.policy of `topic` per DescribeConfigs; nullopt when the broker cannot say (a
// broker without DescribeConfigs, like the test mock, answers at once with an error).
// Asked of a broker the metadata names, not of the controller librdkafka targets by default:
// any broker answers for a topic, and librdkafka 2.0.2, when its wait for a controller times
// out (the mock names none), can fail an assertion later (rd_kafka_enq_once_del_source_return:
// `eonce->refcnt > 0`) and abort the coordinator; that was the mock BrokerFaults test's flake.
std::optional<std::string> cleanup_policy(rd_kafka_t* producer, const std::string& topic,
                                          LogSink& log) {
  rd_kafka_ConfigResource_t* res =
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  rd_kafka_queue_t* q = rd_kafka_queue_new(producer);
  char errstr[256];
  rd_kafka_AdminOptions_t* opts =
      rd_kafka_AdminOptions_new(producer, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  rd_kafka_AdminOptions_set_request_timeout(opts, 5000, errstr, sizeof errstr);
  if (const int32_t broker = broker_for(producer, topic); broker >= 0) {
    rd_kafka_AdminOptions_set_broker(opts, broker, errstr, sizeof errstr);
  }
  rd_kafka_DescribeConfigs(producer, &res, 1, opts, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 10000);
  std::optional<std::string> policy;
  if (ev && !rd_kafka_event_error(ev)) {
    size_t n = 0;
    const rd_kafka_ConfigResource_t** rs =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
    for (size_t i = 0; i < n && rd_kafka_ConfigResource_error(rs[i]) == 0; ++i) {
      size_t cnt = 0;
      const rd_kafka_ConfigEntry_t** entries = rd_kafka_ConfigResource_configs(rs[i], &cnt);
      for (size_t j = 0; j < cnt; ++j) {
        if (std::strcmp(rd_kafka_ConfigEntry_name(entries[j]), "cleanup.policy") == 0) {
          const char* v = rd_kafka_ConfigEntry_value(entries[j]);
          policy = v ? v : "";
        }
      }
    }
  } else {
    log_now(log, {{"level", "warn"},
                  {"event", "topic_config_unknown"},
                  {"topic", topic},
                  {"error", ev ? rd_kafka_event_error_string(ev) : "no answer"}});
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_queue_destroy(q);
  rd_kafka_ConfigResource_destroy(res);
  return policy;
}

// "1 partition", "12 partitions".
std::string partitions_text(int32_t n) {
  return std::to_string(n) + (n == 1 ? " partition" : " partitions");
}

}  // namespace

bool check_topics(rd_kafka_t* producer, const ClusterConfig& cc, LogSink& log, TopicLayout* layout,
                  std::string* error) {
  const std::vector<std::pair<std::string, int32_t>> wanted = {
      {cc.reports_topic, cc.topic_partitions},
      {cc.lists_topic, cc.topic_partitions},
      {cc.state_topic, 1}};
  std::vector<std::pair<std::string, int32_t>> missing;
  std::map<std::string, int32_t> counts;
  for (const auto& [name, parts] : wanted) {
    const int32_t n = topic_partitions(producer, cc, name, error);
    if (n < 0) return false;
    if (n == 0) missing.emplace_back(name, parts);
    counts[name] = n;
  }
  if (!missing.empty()) {
    std::string why;
    if (!create_topics(producer, cc, missing, &why)) {
      std::string names;
      for (const auto& [name, parts] : missing) {
        names += (names.empty() ? "" : ", ") + name + " (" + partitions_text(parts) +
                 (name == cc.reports_topic ? "" : ", cleanup.policy=compact") + ")";
      }
      *error = "internal topics missing and not created (" + why + "): create " + names +
               " (docs/CLUSTER.md)";
      return false;
    }
    log_now(log, {{"level", "info"}, {"event", "kafka_topics_created"}, {"count", missing.size()}});
    for (const auto& [name, parts] : missing) {
      for (int i = 0; i < 50 && counts[name] <= 0; ++i) {
        counts[name] = topic_partitions(producer, cc, name, error);
        if (counts[name] <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      if (counts[name] <= 0) {
        *error = "topic " + name + " was created but does not show in the metadata";
        return false;
      }
    }
  }
  if (counts[cc.reports_topic] != counts[cc.lists_topic]) {
    *error = "topics " + cc.reports_topic + " (" + partitions_text(counts[cc.reports_topic]) +
             ") and " + cc.lists_topic + " (" + partitions_text(counts[cc.lists_topic]) +
             ") must be co-partitioned: give them the same partition count "
             "(docs/CLUSTER.md)";
    return false;
  }
  // Lists and operator writes must outlive any retention: Kafka may delete from a topic whose
  // policy has "delete" (pins would vanish after retention.ms).
  for (const std::string& name : {cc.lists_topic, cc.state_topic}) {
    const std::optional<std::string> policy = cleanup_policy(producer, name, log);
    if (policy && *policy != "compact") {
      *error = "topic " + name + " has cleanup.policy=" + *policy +
               "; it must be cleanup.policy=compact alone (kafka-configs --alter --entity-type "
               "topics --entity-name " +
               name +
               " --add-config cleanup.policy=compact; "
               "docs/CLUSTER.md)";
      return false;
    }
  }
  layout->partitions = counts[cc.reports_topic];
  layout->state_partitions = counts[cc.state_topic];
  return true;
}

}  // namespace hotkey::coordinator::kafka
