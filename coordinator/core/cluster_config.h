// Cluster-mode settings (docs/CLUSTER.md): the Kafka bootstrap that turns cluster mode on, the
// group and internal topic names, and every other kafka.* setting, passed to librdkafka as is.
// Plain values; the parse functions throw std::invalid_argument naming the setting.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace hotkey::coordinator {

struct ClusterConfig {
  // Empty: single-node HTTP mode (the default); cluster mode otherwise.
  std::string bootstrap;
  std::string group = "hotkey.coordinators";
  std::string reports_topic = "__hotkey_reports";
  std::string lists_topic = "__hotkey_lists";
  std::string state_topic = "__hotkey_state";
  // The URL other members and hotkeyctl reach this coordinator at (default
  // http://LISTEN_HOST:PORT with the bound port).
  std::string advertised_url;
  // Every owned list is written again this often, so the compacted lists topic always ends
  // with the current owner's record.
  uint32_t republish_interval_ms = 30000;
  // The owner of a lists partition writes its ownership heartbeat there this often
  // (hotkey/kafka_contract.h): members and producers learn within a few intervals that an owner
  // is gone, without asking Kafka's group coordinator.
  uint32_t owner_heartbeat_ms = 1000;
  // On SIGTERM, leaving the group and flushing the producer end within this, whatever the
  // brokers do; the process then exits (docs/CLUSTER.md, "Stopping").
  uint32_t drain_timeout_ms = 10000;
  // Partitions of the reports and lists topics when the coordinator creates them.
  int32_t topic_partitions = 12;
  int16_t replication_factor = 3;
  // 1: every lists partition is written by a transactional producer whose transactional.id is
  // derived from the partition, so a new owner's init fences the previous one's writes at the
  // broker (docs/CLUSTER.md, "Versions"); 0 (the default until it has run on real clusters):
  // plain idempotent writes, ordered by epoch alone.
  int32_t lists_fencing = 0;
  // Any other kafka.* setting, without the prefix (e.g. "session.timeout.ms").
  std::map<std::string, std::string> librdkafka;

  bool enabled() const { return !bootstrap.empty(); }
  void validate() const;
};

// One named cluster-mode setting. cluster_settings() holds every one; it drives the "kafka"
// object of the config file and --kafka-set (names not in it go to librdkafka as they are), the
// flags, the environment variables, the integer ranges validate() enforces, the usage text and
// the cluster table of docs/CONFIGURATION.md.
struct ClusterSettingInfo {
  const char* name;               // in the "kafka" object and --kafka-set (kafka.NAME)
  const char* alias = nullptr;    // librdkafka's name for the same setting
  const char* flag = nullptr;     // command-line flag
  const char* metavar = nullptr;  // the flag's value in the usage text
  const char* env = nullptr;      // environment variable
  std::string default_value;      // as documented ("—": none)
  const char* usage = nullptr;    // the flag's usage text (continuation lines pre-indented)
  const char* doc = "";           // the meaning, Markdown
  // Sets the setting from its text form; `name` is the name as given (for messages).
  void (*set)(ClusterConfig&, const std::string& name, const std::string& value) = nullptr;
  // Integer settings: the value and its accepted range lo..hi (hi 0: no upper bound).
  int64_t (*get)(const ClusterConfig&) = nullptr;
  int64_t lo = 0;
  int64_t hi = 0;
  // ">= 100" or "1..10000".
  std::string range() const;
};
const std::vector<ClusterSettingInfo>& cluster_settings();

// Applies the config file's "kafka" object.
void apply_cluster_json(ClusterConfig& c, const nlohmann::json& j);
// Applies one "kafka.NAME=VALUE" (or "NAME=VALUE") assignment from --kafka-set.
void apply_cluster_setting(ClusterConfig& c, const std::string& assignment);
}  // namespace hotkey::coordinator
