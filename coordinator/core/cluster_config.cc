#include "cluster_config.h"

#include <charconv>
#include <cstdlib>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace hotkey::coordinator {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

bool valid_topic(const std::string& t) {
  if (t.empty() || t.size() > 249) return false;
  for (char ch : t) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

template <typename T>
T parse_int(const std::string& name, const std::string& text) {
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) {
    fail("kafka." + name + " must be an integer, got '" + text + "'");
  }
  return v;
}

void set(ClusterConfig& c, std::string name, const std::string& value) {
  if (name.rfind("kafka.", 0) == 0) name = name.substr(6);
  if (name == "bootstrap" || name == "bootstrap.servers") {
    c.bootstrap = value;
  } else if (name == "group" || name == "group.id") {
    c.group = value;
  } else if (name == "reports_topic") {
    c.reports_topic = value;
  } else if (name == "lists_topic") {
    c.lists_topic = value;
  } else if (name == "state_topic") {
    c.state_topic = value;
  } else if (name == "advertised_url") {
    c.advertised_url = value;
  } else if (name == "republish_interval_ms") {
    c.republish_interval_ms = parse_int<uint32_t>(name, value);
  } else if (name == "topic_partitions") {
    c.topic_partitions = parse_int<int32_t>(name, value);
  } else if (name == "replication_factor") {
    c.replication_factor = parse_int<int16_t>(name, value);
  } else if (name.empty()) {
    fail("kafka setting without a name");
  } else {
    c.librdkafka[name] = value;
  }
}

}  // namespace

void ClusterConfig::validate() const {
  if (!enabled()) return;
  for (const auto* t : {&reports_topic, &lists_topic, &state_topic}) {
    if (!valid_topic(*t)) fail("kafka topic name '" + *t + "' is not a valid Kafka topic name");
  }
  if (reports_topic == lists_topic || reports_topic == state_topic || lists_topic == state_topic) {
    fail("kafka.reports_topic, kafka.lists_topic and kafka.state_topic must differ");
  }
  if (group.empty()) fail("kafka.group must not be empty");
  if (republish_interval_ms < 100) fail("kafka.republish_interval_ms must be >= 100");
  if (topic_partitions < 1 || topic_partitions > 10000) {
    fail("kafka.topic_partitions must be 1..10000");
  }
  if (replication_factor < 1) fail("kafka.replication_factor must be >= 1");
  for (const char* managed : {"group.id", "enable.auto.commit", "partition.assignment.strategy"}) {
    if (librdkafka.contains(managed)) {
      fail(std::string("kafka.") + managed + " is managed by the coordinator and cannot be set");
    }
  }
}

void apply_cluster_json(ClusterConfig& c, const json& j) {
  if (!j.is_object()) fail("config: 'kafka' must be an object of setting: value");
  for (const auto& [name, v] : j.items()) {
    if (v.is_string()) {
      set(c, name, v.get<std::string>());
    } else if (v.is_number_integer() || v.is_number_unsigned() || v.is_boolean()) {
      set(c, name, v.dump());
    } else {
      fail("config: 'kafka." + name + "' must be a string, an integer or a boolean");
    }
  }
}

void apply_cluster_setting(ClusterConfig& c, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    fail("--kafka-set wants NAME=VALUE (e.g. session.timeout.ms=6000), got '" + assignment + "'");
  }
  set(c, assignment.substr(0, eq), assignment.substr(eq + 1));
}

void apply_cluster_env(ClusterConfig& c) {
  auto env = [](const char* name, std::string& into) {
    if (const char* v = std::getenv(name); v && *v) into = v;
  };
  env("HOTKEY_KAFKA_BOOTSTRAP", c.bootstrap);
  env("HOTKEY_KAFKA_GROUP", c.group);
  env("HOTKEY_KAFKA_REPORTS_TOPIC", c.reports_topic);
  env("HOTKEY_KAFKA_LISTS_TOPIC", c.lists_topic);
  env("HOTKEY_KAFKA_STATE_TOPIC", c.state_topic);
  env("HOTKEY_ADVERTISED_URL", c.advertised_url);
}

bool is_cluster_flag(const std::string& flag) {
  return flag == "--kafka" || flag == "--group" || flag == "--reports-topic" ||
         flag == "--lists-topic" || flag == "--state-topic" || flag == "--advertised-url" ||
         flag == "--kafka-set";
}

bool apply_cluster_flag(ClusterConfig& c, const std::string& flag, const std::string& value) {
  if (flag == "--kafka") {
    c.bootstrap = value;
  } else if (flag == "--group") {
    c.group = value;
  } else if (flag == "--reports-topic") {
    c.reports_topic = value;
  } else if (flag == "--lists-topic") {
    c.lists_topic = value;
  } else if (flag == "--state-topic") {
    c.state_topic = value;
  } else if (flag == "--advertised-url") {
    c.advertised_url = value;
  } else if (flag == "--kafka-set") {
    apply_cluster_setting(c, value);
  } else {
    return false;
  }
  return true;
}

const char* cluster_usage_text() {
  return "cluster mode (docs/CLUSTER.md):\n"
         "  --kafka BOOTSTRAP      join the coordinator cluster on this Kafka (env\n"
         "                         HOTKEY_KAFKA_BOOTSTRAP); without it: single node\n"
         "  --group NAME           consumer group (default hotkey.coordinators)\n"
         "  --reports-topic T      default __hotkey_reports\n"
         "  --lists-topic T        default __hotkey_lists\n"
         "  --state-topic T        default __hotkey_state\n"
         "  --advertised-url URL   how others reach this coordinator (default http://LISTEN)\n"
         "  --kafka-set NAME=VALUE any librdkafka setting (repeatable), e.g.\n"
         "                         session.timeout.ms=6000\n";
}

}  // namespace hotkey::coordinator
