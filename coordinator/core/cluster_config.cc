#include "cluster_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>
#include <type_traits>
#include <utility>

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

template <auto M>
void set_string(ClusterConfig& c, const std::string&, const std::string& value) {
  c.*M = value;
}
template <auto M>
void set_int(ClusterConfig& c, const std::string& name, const std::string& value) {
  c.*M = parse_int<std::remove_reference_t<decltype(c.*M)>>(name, value);
}
template <auto M>
int64_t get_int(const ClusterConfig& c) {
  return static_cast<int64_t>(c.*M);
}

struct Text {
  const char* name;
  const char* alias;
  const char* flag;
  const char* metavar;
  const char* env;
  const char* usage;
  const char* doc;
};

// Table rows; defaults are printed from ClusterConfig's own.
template <auto M>
ClusterSettingInfo text(const Text& t, const char* shown_default = nullptr) {
  const std::string d = ClusterConfig{}.*M;
  ClusterSettingInfo s{};
  s.name = t.name;
  s.alias = t.alias;
  s.flag = t.flag;
  s.metavar = t.metavar;
  s.env = t.env;
  s.default_value = shown_default ? shown_default : d.empty() ? "—" : "`" + d + "`";
  s.usage = t.usage;
  s.doc = t.doc;
  s.set = &set_string<M>;
  return s;
}

template <auto M>
ClusterSettingInfo integer(const char* name, int64_t lo, int64_t hi, const char* doc) {
  ClusterSettingInfo s{};
  s.name = name;
  s.default_value = "`" + std::to_string(ClusterConfig{}.*M) + "`";
  s.doc = doc;
  s.set = &set_int<M>;
  s.get = &get_int<M>;
  s.lo = lo;
  s.hi = hi;
  return s;
}

const ClusterSettingInfo* find(const std::string& name) {
  for (const ClusterSettingInfo& s : cluster_settings()) {
    if (name == s.name || (s.alias != nullptr && name == s.alias)) return &s;
  }
  return nullptr;
}

void set(ClusterConfig& c, std::string name, const std::string& value) {
  if (name.rfind("kafka.", 0) == 0) name = name.substr(6);
  if (const ClusterSettingInfo* s = find(name)) {
    s->set(c, name, value);
  } else if (name.empty()) {
    fail("kafka setting without a name");
  } else {
    c.librdkafka[name] = value;
  }
}

// The librdkafka settings the coordinator sets itself and refuses in --kafka-set, with why.
constexpr std::pair<const char*, const char*> kOwnedSettings[] = {
    {"group.id", "the group is kafka.group (--group)"},
    {"acks", "lists and operator writes are written with acks=all"},
    {"request.required.acks", "lists and operator writes are written with acks=all"},
    {"enable.idempotence", "lists and operator writes are written by an idempotent producer"},
    {"transactional.id", "the coordinator's producer is not transactional"},
    {"enable.auto.commit", "the group never commits: ownership rebuilds the window from time"},
    {"enable.auto.offset.store", "the group never commits: ownership rebuilds the window"},
    {"auto.offset.reset", "each reader starts where the coordinator places it"},
    {"partition.assignment.strategy", "ownership moves by cooperative-sticky rebalances"},
    {"enable.partition.eof", "the readers track their ends themselves"},
};

// librdkafka's security protocols, accepted as a "PROTO://" prefix of a bootstrap entry.
bool known_protocol(std::string p) {
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return p == "plaintext" || p == "ssl" || p == "sasl_plaintext" || p == "sasl_ssl";
}

// bootstrap: HOST[:PORT] entries separated by commas (spaces around them allowed), each
// optionally prefixed by a security protocol (SSL://...); HOST may be a bracketed IPv6 address.
void check_bootstrap(const std::string& bootstrap) {
  const auto bad = [&](const std::string& why) {
    fail("kafka.bootstrap '" + bootstrap + "' " + why +
         ": give HOST:PORT[,HOST:PORT...] (e.g. --kafka broker1:9092,broker2:9092)");
  };
  size_t start = 0;
  while (start <= bootstrap.size()) {
    size_t end = bootstrap.find(',', start);
    if (end == std::string::npos) end = bootstrap.size();
    std::string entry = bootstrap.substr(start, end - start);
    entry.erase(0, entry.find_first_not_of(' '));
    entry.erase(entry.find_last_not_of(' ') + 1);
    if (entry.empty()) bad("has an empty entry");
    if (size_t scheme = entry.find("://"); scheme != std::string::npos) {
      if (!known_protocol(entry.substr(0, scheme))) {
        bad("is a URL (" + entry.substr(0, scheme) + "://), not a broker list");
      }
      entry = entry.substr(scheme + 3);
    }
    std::string host = entry;
    std::string port;
    if (!entry.empty() && entry.front() == '[') {
      const size_t close = entry.find(']');
      if (close == std::string::npos) bad("has an unclosed [IPv6] address");
      host = entry.substr(0, close + 1);
      if (close + 1 < entry.size()) {
        if (entry[close + 1] != ':') bad("has text after an [IPv6] address");
        port = entry.substr(close + 2);
      }
    } else if (size_t colon = entry.rfind(':'); colon != std::string::npos) {
      host = entry.substr(0, colon);
      port = entry.substr(colon + 1);
      if (port.empty()) bad("has an entry without a port after ':'");
    }
    if (host.empty()) bad("has an entry without a host");
    for (char ch : host) {
      if (ch == '/' || ch == ' ' || ch == '\t' || ch == '@' || ch == '?' || ch == '#') {
        bad("has a host that is not a host name or address ('" + host + "')");
      }
    }
    if (!port.empty()) {
      int p = 0;
      auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
      if (ec != std::errc() || ptr != port.data() + port.size() || p < 1 || p > 65535) {
        bad("has a port that is not 1..65535 ('" + port + "')");
      }
    }
    start = end + 1;
  }
}

}  // namespace

const std::vector<ClusterSettingInfo>& cluster_settings() {
  static const std::vector<ClusterSettingInfo> all = {
      text<&ClusterConfig::bootstrap>(
          {"bootstrap", "bootstrap.servers", "--kafka", "BOOTSTRAP", "HOTKEY_KAFKA_BOOTSTRAP",
           "join the coordinator cluster on this Kafka (env\n"
           "                         HOTKEY_KAFKA_BOOTSTRAP); without it: single node",
           "join the coordinator cluster on this Kafka; unset: single-node HTTP mode"}),
      text<&ClusterConfig::group>({"group", nullptr, "--group", "NAME", "HOTKEY_KAFKA_GROUP",
                                   "consumer group (default hotkey.coordinators)",
                                   "consumer group of the coordinators (cooperative-sticky)"}),
      text<&ClusterConfig::reports_topic>({"reports_topic", nullptr, "--reports-topic", "T",
                                           "HOTKEY_KAFKA_REPORTS_TOPIC", "default __hotkey_reports",
                                           "reports from producers"}),
      text<&ClusterConfig::lists_topic>(
          {"lists_topic", nullptr, "--lists-topic", "T", "HOTKEY_KAFKA_LISTS_TOPIC",
           "default __hotkey_lists", "published lists; same partition count as the reports topic"}),
      text<&ClusterConfig::state_topic>({"state_topic", nullptr, "--state-topic", "T",
                                         "HOTKEY_KAFKA_STATE_TOPIC", "default __hotkey_state",
                                         "operator state log"}),
      text<&ClusterConfig::advertised_url>(
          {"advertised_url", nullptr, "--advertised-url", "URL", "HOTKEY_ADVERTISED_URL",
           "how others reach this coordinator (default http://LISTEN)",
           "how other members and operators reach this coordinator (shown by `GET "
           "/v1/cluster`)"},
          "`http(s)://LISTEN_HOST:PORT`"),
      integer<&ClusterConfig::republish_interval_ms>(
          "republish_interval_ms", 100, 0, "every owned list is written again this often"),
      integer<&ClusterConfig::owner_heartbeat_ms>(
          "owner_heartbeat_ms", 100, 60000,
          "the owner of a lists partition writes its ownership heartbeat (key `/owner`) there "
          "this often; members and producers on `hotkey.transport=kafka` take an owner silent "
          "for 3 intervals as gone"),
      integer<&ClusterConfig::drain_timeout_ms>(
          "drain_timeout_ms", 1000, 120000,
          "on SIGTERM, leaving the group (the partitions move at once) and flushing the producer "
          "end within this, whatever the brokers do; the coordinator then exits"),
      integer<&ClusterConfig::topic_partitions>(
          "topic_partitions", 1, 10000,
          "partitions of the reports and lists topics when the coordinator creates them"),
      integer<&ClusterConfig::replication_factor>("replication_factor", 1, 0,
                                                  "replication factor of the topics it creates"),
      integer<&ClusterConfig::lists_fencing>(
          "lists_fencing", 0, 1,
          "1: lists are written in transactions of a producer per lists partition "
          "(`transactional.id` GROUP.lists.P), so the broker refuses a former owner's writes "
          "once the new owner took the partition; 0: epochs alone (brokers without "
          "transactions)"),
  };
  return all;
}

std::string ClusterSettingInfo::range() const {
  if (hi == 0) return ">= " + std::to_string(lo);
  return std::to_string(lo) + ".." + std::to_string(hi);
}

void ClusterConfig::validate() const {
  if (!enabled()) return;
  for (const auto* t : {&reports_topic, &lists_topic, &state_topic}) {
    if (!valid_topic(*t)) fail("kafka topic name '" + *t + "' is not a valid Kafka topic name");
  }
  if (reports_topic == lists_topic || reports_topic == state_topic || lists_topic == state_topic) {
    fail("kafka.reports_topic, kafka.lists_topic and kafka.state_topic must differ");
  }
  if (group.empty()) fail("kafka.group must not be empty");
  for (const ClusterSettingInfo& s : cluster_settings()) {
    if (s.get == nullptr) continue;
    const int64_t v = s.get(*this);
    if (v < s.lo || (s.hi != 0 && v > s.hi)) {
      fail("kafka." + std::string(s.name) + " must be " + s.range());
    }
  }
  check_bootstrap(bootstrap);
  for (const auto& [name, why] : kOwnedSettings) {
    if (librdkafka.contains(name)) {
      fail("kafka." + std::string(name) + " is the coordinator's and cannot be set: " + why +
           " (docs/CLUSTER.md, \"Start\")");
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

}  // namespace hotkey::coordinator
