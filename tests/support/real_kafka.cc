#include "support/real_kafka.h"

#include <librdkafka/rdkafka.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <thread>

#include "support/child_process.h"

namespace hotkey::test_support {
namespace {

constexpr int kAdminTimeoutMs = 30000;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A producer handle for admin calls and metadata; freed on scope exit.
class AdminHandle {
 public:
  explicit AdminHandle(const std::string& bootstrap) {
    char errstr[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "log_level", "2", errstr, sizeof errstr);
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk_) throw std::runtime_error(std::string("rd_kafka_new: ") + errstr);
  }
  ~AdminHandle() { rd_kafka_destroy(rk_); }
  AdminHandle(const AdminHandle&) = delete;
  AdminHandle& operator=(const AdminHandle&) = delete;
  rd_kafka_t* get() const { return rk_; }

  // Metadata of one topic (nullptr when the call failed); the caller frees it.
  const rd_kafka_metadata_t* metadata(const std::string& topic) const {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t err = rd_kafka_metadata(rk_, 0, rkt, &md, kAdminTimeoutMs);
    rd_kafka_topic_destroy(rkt);
    return err == RD_KAFKA_RESP_ERR_NO_ERROR ? md : nullptr;
  }

 private:
  rd_kafka_t* rk_ = nullptr;
};

// Waits for the admin result event on `q` (nullptr on timeout).
rd_kafka_event_t* await(rd_kafka_queue_t* q) { return rd_kafka_queue_poll(q, kAdminTimeoutMs); }

}  // namespace

std::filesystem::path RealKafka::script() {
  return std::filesystem::path(HOTKEY_SOURCE_DIR) / "scripts" / "kafka.sh";
}

RealKafka::RealKafka(RealKafkaOptions options) : options_(std::move(options)) {
  ChildSpec spec;
  spec.binary = "/bin/bash";
  spec.args = {script().string(),
               "start",
               (dir_.path() / "cluster").string(),
               "--nodes",
               std::to_string(options_.nodes),
               "--owner",
               std::to_string(getpid())};
  for (const auto& s : options_.broker_settings) {
    spec.args.push_back("--set");
    spec.args.push_back(s);
  }
  const Captured c = run_capturing(spec, dir_.path(), "", std::chrono::minutes(4));
  if (c.code != 0) {
    throw std::runtime_error("scripts/kafka.sh start failed (exit " + std::to_string(c.code) +
                             "): " + c.err + c.out);
  }
  bootstrap_ = trim(read_file(dir_.path() / "cluster" / "bootstrap"));
  if (bootstrap_.empty()) throw std::runtime_error("scripts/kafka.sh wrote no bootstrap");
}

RealKafka::~RealKafka() {
  ChildSpec spec;
  spec.binary = "/bin/bash";
  spec.args = {script().string(), "stop", (dir_.path() / "cluster").string()};
  run_capturing(spec, dir_.path(), "", std::chrono::seconds(60));
}

int RealKafka::node_pid(int i) const {
  const std::string text =
      trim(read_file(dir_.path() / "cluster" / ("node-" + std::to_string(i)) / "pid"));
  return text.empty() ? 0 : std::atoi(text.c_str());
}

std::string RealKafka::node_bootstrap(int i) const {
  return "127.0.0.1:" +
         trim(read_file(dir_.path() / "cluster" / ("node-" + std::to_string(i)) / "port"));
}

void RealKafka::kill_node(int i) {
  ChildSpec spec;
  spec.binary = "/bin/bash";
  spec.args = {script().string(), "kill-node", (dir_.path() / "cluster").string(),
               std::to_string(i)};
  const Captured c = run_capturing(spec, dir_.path(), "", std::chrono::seconds(30));
  if (c.code != 0) throw std::runtime_error("kafka.sh kill-node: " + c.err);
}

void RealKafka::start_node(int i) {
  ChildSpec spec;
  spec.binary = "/bin/bash";
  spec.args = {script().string(), "start-node", (dir_.path() / "cluster").string(),
               std::to_string(i)};
  const Captured c = run_capturing(spec, dir_.path(), "", std::chrono::minutes(2));
  if (c.code != 0) throw std::runtime_error("kafka.sh start-node: " + c.err + c.out);
}

void RealKafka::create_topic(const std::string& topic, int partitions, int replication,
                             const std::map<std::string, std::string>& configs) const {
  AdminHandle admin(bootstrap_);
  char errstr[256];
  rd_kafka_NewTopic_t* nt =
      rd_kafka_NewTopic_new(topic.c_str(), partitions, replication, errstr, sizeof errstr);
  if (!nt) throw std::runtime_error(std::string("NewTopic: ") + errstr);
  for (const auto& [k, v] : configs) rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
  rd_kafka_queue_t* q = rd_kafka_queue_new(admin.get());
  rd_kafka_AdminOptions_t* opts =
      rd_kafka_AdminOptions_new(admin.get(), RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(opts, kAdminTimeoutMs, errstr, sizeof errstr);
  rd_kafka_CreateTopics(admin.get(), &nt, 1, opts, q);
  rd_kafka_event_t* ev = await(q);
  std::string error;
  if (!ev) {
    error = "no answer";
  } else if (rd_kafka_event_error(ev)) {
    error = rd_kafka_event_error_string(ev);
  } else {
    size_t n = 0;
    const rd_kafka_topic_result_t** res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    for (size_t i = 0; i < n; ++i) {
      if (rd_kafka_topic_result_error(res[i])) {
        error = rd_kafka_err2str(rd_kafka_topic_result_error(res[i]));
        if (const char* s = rd_kafka_topic_result_error_string(res[i]))
          error += std::string(": ") + s;
      }
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_queue_destroy(q);
  rd_kafka_NewTopic_destroy(nt);
  if (!error.empty()) throw std::runtime_error("CreateTopics " + topic + ": " + error);
  // The controller has the topic; wait until the brokers' metadata shows it too, so that a
  // program started next finds it (a coordinator would otherwise take it for missing).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    try {
      if (this->partitions(topic) == partitions) break;
    } catch (const std::runtime_error&) {
      // Metadata not answered this time: asked again below.
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("topic " + topic + " created but not in the metadata after 30 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int RealKafka::partitions(const std::string& topic) const {
  AdminHandle admin(bootstrap_);
  const rd_kafka_metadata_t* md = admin.metadata(topic);
  if (!md) throw std::runtime_error("metadata of " + topic + " failed");
  int n = 0;
  if (md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    n = md->topics[0].partition_cnt;
  }
  rd_kafka_metadata_destroy(md);
  return n;
}

int RealKafka::leader(const std::string& topic, int partition) const {
  AdminHandle admin(bootstrap_);
  const rd_kafka_metadata_t* md = admin.metadata(topic);
  if (!md) return -1;
  int node = -1;
  if (md->topic_cnt == 1) {
    const auto& t = md->topics[0];
    for (int i = 0; i < t.partition_cnt; ++i) {
      if (t.partitions[i].id == partition && t.partitions[i].leader > 0) {
        node = t.partitions[i].leader - 1;  // kafka.sh gives node i the id i + 1
      }
    }
  }
  rd_kafka_metadata_destroy(md);
  return node;
}

int RealKafka::group_coordinator(const std::string& group) const {
  AdminHandle admin(bootstrap_);
  const rd_kafka_group_list* list = nullptr;
  if (rd_kafka_list_groups(admin.get(), group.c_str(), &list, kAdminTimeoutMs) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    return -1;
  }
  int node = -1;
  if (list->group_cnt == 1 && list->groups[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    node = list->groups[0].broker.id - 1;  // kafka.sh gives node i the id i + 1
  }
  rd_kafka_group_list_destroy(list);
  return node;
}

int RealKafka::controller() const {
  ChildSpec spec;
  spec.binary = "/bin/bash";
  spec.args = {script().string(), "controller", (dir_.path() / "cluster").string()};
  const Captured c = run_capturing(spec, dir_.path(), "", std::chrono::seconds(60));
  if (c.code != 0) throw std::runtime_error("kafka.sh controller: " + c.err);
  return std::stoi(c.out);
}

std::map<std::string, std::string> RealKafka::topic_config(const std::string& topic) const {
  AdminHandle admin(bootstrap_);
  rd_kafka_ConfigResource_t* res =
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  rd_kafka_queue_t* q = rd_kafka_queue_new(admin.get());
  rd_kafka_DescribeConfigs(admin.get(), &res, 1, nullptr, q);
  rd_kafka_event_t* ev = await(q);
  std::map<std::string, std::string> out;
  std::string error;
  if (!ev) {
    error = "no answer";
  } else if (rd_kafka_event_error(ev)) {
    error = rd_kafka_event_error_string(ev);
  } else {
    size_t n = 0;
    const rd_kafka_ConfigResource_t** rs =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
    for (size_t i = 0; i < n; ++i) {
      if (rd_kafka_ConfigResource_error(rs[i])) {
        error = rd_kafka_err2str(rd_kafka_ConfigResource_error(rs[i]));
        continue;
      }
      size_t cnt = 0;
      const rd_kafka_ConfigEntry_t** entries = rd_kafka_ConfigResource_configs(rs[i], &cnt);
      for (size_t j = 0; j < cnt; ++j) {
        const char* v = rd_kafka_ConfigEntry_value(entries[j]);
        out[rd_kafka_ConfigEntry_name(entries[j])] = v ? v : "";
      }
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_ConfigResource_destroy(res);
  if (!error.empty()) throw std::runtime_error("DescribeConfigs " + topic + ": " + error);
  return out;
}

std::pair<int64_t, int64_t> RealKafka::watermarks(const std::string& topic, int partition) const {
  AdminHandle admin(bootstrap_);
  int64_t low = -1, high = -1;
  const rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
      admin.get(), topic.c_str(), partition, &low, &high, kAdminTimeoutMs);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw std::runtime_error("watermarks of " + topic + ": " + rd_kafka_err2str(err));
  }
  return {low, high};
}

}  // namespace hotkey::test_support
