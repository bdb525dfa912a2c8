#include "hotkey/client/config.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "hotkey/report.h"

namespace hotkey::client {
namespace {

constexpr std::string_view kPrefix = "hotkey.";

[[noreturn]] void bad(std::string_view name, std::string_view value, std::string_view why) {
  throw std::invalid_argument("property " + std::string(name) + "=\"" + std::string(value) +
                              "\": " + std::string(why));
}

uint32_t parse_u32(std::string_view name, std::string_view value, uint32_t lo, uint32_t hi) {
  uint32_t out = 0;
  auto res = std::from_chars(value.data(), value.data() + value.size(), out);
  if (value.empty() || res.ec != std::errc() || res.ptr != value.data() + value.size()) {
    bad(name, value, "expected a non-negative integer");
  }
  if (out < lo || out > hi) {
    bad(name, value, "out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return out;
}

double parse_rate(std::string_view name, std::string_view value) {
  double out = 0;
  auto res = std::from_chars(value.data(), value.data() + value.size(), out);
  if (value.empty() || res.ec != std::errc() || res.ptr != value.data() + value.size()) {
    bad(name, value, "expected a number");
  }
  // The coordinator refuses reports below kMinSampleRate.
  if (!(out >= kMinSampleRate && out <= 1.0)) bad(name, value, "must be in [1e-06, 1]");
  return out;
}

double parse_factor(std::string_view name, std::string_view value) {
  double out = 0;
  auto res = std::from_chars(value.data(), value.data() + value.size(), out);
  if (value.empty() || res.ec != std::errc() || res.ptr != value.data() + value.size()) {
    bad(name, value, "expected a number");
  }
  if (!(out >= 0.01 && out <= 1000.0)) bad(name, value, "must be in [0.01, 1000]");
  return out;
}

std::string default_producer_id() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') std::snprintf(host, 8, "host");
  return std::string(host) + "-" + std::to_string(static_cast<long>(getpid()));
}

std::vector<std::string> split_list(std::string_view value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    std::string_view item = value.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    start = comma + 1;
  }
  return out;
}

constexpr std::string_view kKafkaPrefix = "hotkey.kafka.";

// The application's librdkafka settings the kafka transport shares: where the cluster is and
// how to authenticate to it. Producer tuning (acks, partitioner, transactional.id, ...) stays
// the application's own.
bool connection_setting(std::string_view name) noexcept {
  return name == "bootstrap.servers" || name == "metadata.broker.list" ||
         name == "security.protocol" || name.starts_with("ssl.") || name.starts_with("ssl_") ||
         name.starts_with("sasl.") || name == "enable.ssl.certificate.verification" ||
         name == "broker.address.family" || name == "client.rack" || name == "client.id";
}

}  // namespace

std::string_view to_string(Transport transport) noexcept {
  return transport == Transport::kKafka ? "kafka" : "http";
}

std::string_view to_string(RoutingMode mode) noexcept {
  return mode == RoutingMode::kRoute ? "route" : "rekey";
}

std::string_view to_string(SaltPolicy policy) noexcept {
  switch (policy) {
    case SaltPolicy::kWeightedRoundRobin:
      return "wrr";
    case SaltPolicy::kValueHash:
      return "value_hash";
    case SaltPolicy::kRandom:
      return "random";
  }
  return "unknown";
}

std::string_view to_string(ExpiredPolicy policy) noexcept {
  return policy == ExpiredPolicy::kPlain ? "plain" : "keep";
}

bool is_client_property(std::string_view name) noexcept { return name.starts_with(kPrefix); }

HashFamily family_of_rdkafka_partitioner(std::string_view p) {
  if (p == "murmur2" || p == "murmur2_random") return HashFamily::kMurmur2;
  if (p == "consistent" || p == "consistent_random") return HashFamily::kCrc32;
  if (p == "fnv1a" || p == "fnv1a_random") return HashFamily::kFnv1a;
  throw std::invalid_argument("librdkafka partitioner \"" + std::string(p) +
                              "\" has no hash family: use murmur2_random, consistent_random or "
                              "fnv1a_random (or their non-random forms)");
}

ClientConfig parse_client_config(const Properties& props) {
  ClientConfig c;
  std::vector<std::pair<std::string, std::string>> kafka_overrides;
  for (const auto& [name, value] : props) {
    if (!is_client_property(name)) continue;
    if (name.starts_with(kKafkaPrefix)) {
      std::string setting = name.substr(kKafkaPrefix.size());
      if (setting.empty()) bad(name, value, "expected hotkey.kafka.<librdkafka property>");
      kafka_overrides.emplace_back(std::move(setting), value);
    } else if (name == "hotkey.transport") {
      if (value == "http") {
        c.transport = Transport::kHttp;
      } else if (value == "kafka") {
        c.transport = Transport::kKafka;
      } else {
        bad(name, value, "expected http or kafka");
      }
    } else if (name == "hotkey.reports.topic" || name == "hotkey.lists.topic") {
      if (!valid_topic_name(value)) bad(name, value, "invalid topic name");
      (name == "hotkey.reports.topic" ? c.reports_topic : c.lists_topic) = value;
    } else if (name == "hotkey.coordinator.url") {
      if (!value.empty() && !value.starts_with("http://") && !value.starts_with("https://")) {
        bad(name, value, "expected http://HOST:PORT or https://HOST:PORT");
      }
      c.coordinator_url = value;
      while (c.coordinator_url.ends_with('/')) c.coordinator_url.pop_back();
    } else if (name == "hotkey.producer.id") {
      if (value.empty() || value.size() > ReportLimits{}.max_id_bytes) {
        bad(name, value, "must be 1..256 bytes");
      }
      c.producer_id = value;
    } else if (name == "hotkey.token") {
      c.token = value;
    } else if (name == "hotkey.coordinator.ssl.ca.location") {
      c.ssl_ca_location = value;
    } else if (name == "hotkey.coordinator.ssl.certificate.location") {
      c.ssl_certificate_location = value;
    } else if (name == "hotkey.coordinator.ssl.key.location") {
      c.ssl_key_location = value;
    } else if (name == "hotkey.report.interval.ms") {
      c.report_interval_ms = parse_u32(name, value, 10, 3600000);
    } else if (name == "hotkey.sample.rate") {
      c.sample_rate = parse_rate(name, value);
    } else if (name == "hotkey.sketch.capacity") {
      c.sketch_capacity = parse_u32(name, value, 1, 65536);
    } else if (name == "hotkey.routing.mode") {
      if (value == "rekey") {
        c.routing_mode = RoutingMode::kRekey;
      } else if (value == "route") {
        c.routing_mode = RoutingMode::kRoute;
      } else {
        bad(name, value, "expected rekey or route");
      }
    } else if (name == "hotkey.salt.policy") {
      if (value == "wrr") {
        c.salt_policy = SaltPolicy::kWeightedRoundRobin;
      } else if (value == "value_hash") {
        c.salt_policy = SaltPolicy::kValueHash;
      } else if (value == "random") {
        c.salt_policy = SaltPolicy::kRandom;
      } else {
        bad(name, value, "expected wrr, value_hash or random");
      }
    } else if (name == "hotkey.list.ttl.ms") {
      c.list_ttl_ms = parse_u32(name, value, 0, UINT32_MAX);
    } else if (name == "hotkey.list.expired.policy") {
      if (value == "keep") {
        c.expired_policy = ExpiredPolicy::kKeep;
      } else if (value == "plain") {
        c.expired_policy = ExpiredPolicy::kPlain;
      } else {
        bad(name, value, "expected keep or plain");
      }
    } else if (name == "hotkey.hash") {
      auto family = parse_hash_family(value);
      if (!family) bad(name, value, "expected murmur2, crc32 or fnv1a");
      c.hash = *family;
      c.hash_set = true;
    } else if (name == "hotkey.poll.wait.ms") {
      c.poll_wait_ms = parse_u32(name, value, 0, 300000);
    } else if (name == "hotkey.http.timeout.ms") {
      c.http_timeout_ms = parse_u32(name, value, 10, 600000);
    } else if (name == "hotkey.backoff.initial.ms") {
      c.backoff_initial_ms = parse_u32(name, value, 1, 600000);
    } else if (name == "hotkey.backoff.max.ms") {
      c.backoff_max_ms = parse_u32(name, value, 1, 3600000);
    } else if (name == "hotkey.salt.headers") {
      if (value == "true") {
        c.salt_headers = true;
      } else if (value == "false") {
        c.salt_headers = false;
      } else {
        bad(name, value, "expected true or false");
      }
    } else if (name == "hotkey.surge.interval.ms") {
      c.surge_interval_ms = parse_u32(name, value, 0, 3600000);
    } else if (name == "hotkey.surge.factor") {
      c.surge_factor = parse_factor(name, value);
    } else if (name == "hotkey.report.queue.max") {
      c.report_queue_max = parse_u32(name, value, 1, 1024);
    } else if (name == "hotkey.report.format") {
      if (value == "json") {
        c.report_json = true;
      } else if (value == "binary") {
        c.report_json = false;
      } else {
        bad(name, value, "expected binary or json");
      }
    } else if (name == "hotkey.topics") {
      c.topics = split_list(value);
      for (const auto& t : c.topics) {
        if (!valid_topic_name(t)) bad(name, value, "invalid topic name \"" + t + "\"");
      }
    } else {
      throw std::invalid_argument("unknown property " + name +
                                  " (see docs/CLIENT.md for the hotkey.* properties)");
    }
  }
  if (c.backoff_max_ms < c.backoff_initial_ms) {
    throw std::invalid_argument(
        "property hotkey.backoff.max.ms must be >= hotkey.backoff.initial.ms");
  }
  if (c.ssl_certificate_location.empty() != c.ssl_key_location.empty()) {
    throw std::invalid_argument(
        "properties hotkey.coordinator.ssl.certificate.location and "
        "hotkey.coordinator.ssl.key.location go together (client certificate and its key)");
  }
  const bool tls_setting = !c.ssl_ca_location.empty() || !c.ssl_certificate_location.empty();
  if (tls_setting && c.coordinator_url.starts_with("http://")) {
    throw std::invalid_argument(
        "hotkey.coordinator.ssl.* properties need an https:// hotkey.coordinator.url");
  }
  using Setting = std::pair<std::string_view, const std::string*>;
  for (const auto& [name, path] :
       {Setting{"hotkey.coordinator.ssl.ca.location", &c.ssl_ca_location},
        Setting{"hotkey.coordinator.ssl.certificate.location", &c.ssl_certificate_location},
        Setting{"hotkey.coordinator.ssl.key.location", &c.ssl_key_location}}) {
    if (!path->empty() && access(path->c_str(), R_OK) != 0)
      bad(name, *path, "cannot read the file");
  }
  if (c.transport == Transport::kKafka) {
    const bool own_cluster =
        std::any_of(kafka_overrides.begin(), kafka_overrides.end(), [](const auto& kv) {
          return kv.first == "bootstrap.servers" || kv.first == "metadata.broker.list";
        });
    if (!own_cluster) {
      for (const auto& [name, value] : props) {
        if (!is_client_property(name) && connection_setting(name)) {
          c.kafka_settings.emplace_back(name, value);
        }
      }
    }
    for (auto& [name, value] : kafka_overrides) {
      std::erase_if(c.kafka_settings, [&](const auto& kv) { return kv.first == name; });
      c.kafka_settings.emplace_back(name, value);
    }
    const bool has_bootstrap =
        std::any_of(c.kafka_settings.begin(), c.kafka_settings.end(), [](const auto& kv) {
          return (kv.first == "bootstrap.servers" || kv.first == "metadata.broker.list") &&
                 !kv.second.empty();
        });
    if (!has_bootstrap) {
      throw std::invalid_argument(
          "hotkey.transport=kafka needs the cluster: bootstrap.servers (the producer's own) or "
          "hotkey.kafka.bootstrap.servers");
    }
    if (c.report_json) {
      throw std::invalid_argument(
          "hotkey.report.format=json is for the http transport; the reports topic carries the "
          "binary encoding");
    }
    if (c.reports_topic == c.lists_topic) {
      throw std::invalid_argument("hotkey.reports.topic and hotkey.lists.topic must differ");
    }
  } else if (!kafka_overrides.empty()) {
    throw std::invalid_argument("property " + std::string(kKafkaPrefix) +
                                kafka_overrides.front().first + " needs hotkey.transport=kafka");
  }
  if (c.producer_id.empty()) c.producer_id = default_producer_id();
  return c;
}

std::vector<std::pair<std::string, std::string>> kafka_properties(const Properties& props) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : props) {
    if (!is_client_property(name)) out.emplace_back(name, value);
  }
  return out;
}

}  // namespace hotkey::client
