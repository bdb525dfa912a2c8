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
    bad(name, value, "expected auto or a number");
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

// Setters of the property table: each parses and checks one value (messages name the
// property and the value, see bad()).
using Setter = void (*)(ClientConfig&, std::string_view name, std::string_view value);

template <auto M, uint32_t Lo, uint32_t Hi>
void set_u32(ClientConfig& c, std::string_view name, std::string_view value) {
  c.*M = parse_u32(name, value, Lo, Hi);
}
template <auto M>
void set_string(ClientConfig& c, std::string_view, std::string_view value) {
  c.*M = std::string(value);
}
template <auto M>
void set_topic(ClientConfig& c, std::string_view name, std::string_view value) {
  if (!valid_topic_name(value)) bad(name, value, "invalid topic name");
  c.*M = std::string(value);
}
void set_transport(ClientConfig& c, std::string_view name, std::string_view value) {
  if (value == "http") {
    c.transport = Transport::kHttp;
  } else if (value == "kafka") {
    c.transport = Transport::kKafka;
  } else {
    bad(name, value, "expected http or kafka");
  }
}
void set_coordinator_url(ClientConfig& c, std::string_view name, std::string_view value) {
  if (!value.empty() && !value.starts_with("http://") && !value.starts_with("https://")) {
    bad(name, value, "expected http://HOST:PORT or https://HOST:PORT");
  }
  c.coordinator_url = std::string(value);
  while (c.coordinator_url.ends_with('/')) c.coordinator_url.pop_back();
}
void set_producer_id(ClientConfig& c, std::string_view name, std::string_view value) {
  if (value.empty() || value.size() > ReportLimits{}.max_id_bytes) {
    bad(name, value, "must be 1..256 bytes");
  }
  c.producer_id = std::string(value);
}
void set_sample_rate(ClientConfig& c, std::string_view name, std::string_view value) {
  if (value == "auto") {
    c.sample_auto = true;
    return;
  }
  c.sample_rate = parse_rate(name, value);
  c.sample_auto = false;
}
void set_routing_mode(ClientConfig& c, std::string_view name, std::string_view value) {
  if (value == "rekey") {
    c.routing_mode = RoutingMode::kRekey;
  } else if (value == "route") {
    c.routing_mode = RoutingMode::kRoute;
  } else {
    bad(name, value, "expected rekey or route");
  }
}
void set_salt_policy(ClientConfig& c, std::string_view name, std::string_view value) {
  if (value == "wrr") {
    c.salt_policy = SaltPolicy::kWeightedRoundRobin;
  } else if (value == "value_hash") {
    c.salt_policy = SaltPolicy::kValueHash;
  } else if (value == "random") {
    c.salt_policy = SaltPolicy::kRandom;
  } else {
    bad(name, value, "expected wrr, value_hash or random");
  }
}
void set_expired_policy(ClientConfig& c, std::string_view name, std::string_view value) {
  if (value == "keep") {
    c.expired_policy = ExpiredPolicy::kKeep;
  } else if (value == "plain") {
    c.expired_policy = ExpiredPolicy::kPlain;
  } else {
    bad(name, value, "expected keep or plain");
  }
}
void set_hash(ClientConfig& c, std::string_view name, std::string_view value) {
  auto family = parse_hash_family(value);
  if (!family) bad(name, value, "expected murmur2, crc32 or fnv1a");
  c.hash = *family;
  c.hash_set = true;
}
void set_salt_headers(ClientConfig& c, std::string_view name, std::string_view value) {
  if (value == "true") {
    c.salt_headers = true;
  } else if (value == "false") {
    c.salt_headers = false;
  } else {
    bad(name, value, "expected true or false");
  }
}
void set_surge_factor(ClientConfig& c, std::string_view name, std::string_view value) {
  c.surge_factor = parse_factor(name, value);
}
void set_report_format(ClientConfig& c, std::string_view name, std::string_view value) {
  if (value == "json") {
    c.report_json = true;
  } else if (value == "binary") {
    c.report_json = false;
  } else {
    bad(name, value, "expected binary or json");
  }
}
void set_topics(ClientConfig& c, std::string_view name, std::string_view value) {
  c.topics = split_list(value);
  for (const auto& t : c.topics) {
    if (!valid_topic_name(t)) bad(name, value, "invalid topic name \"" + t + "\"");
  }
}

struct Property {
  PropertyInfo info;
  Setter set = nullptr;  // nullptr: the hotkey.kafka.<name> prefix (parse_client_config)
};

Property text(const char* name, const char* default_value, const char* values, Setter set,
              const char* doc) {
  return Property{PropertyInfo{name, default_value, values, doc}, set};
}

// A uint32 property: its default is printed from ClientConfig's own, its range from the
// bounds the setter checks.
template <auto M, uint32_t Lo, uint32_t Hi>
Property u32(const char* name, const char* note, const char* doc) {
  const std::string hi = Hi == UINT32_MAX ? "2^32-1" : std::to_string(Hi);
  return Property{PropertyInfo{name, std::to_string(ClientConfig{}.*M),
                               std::to_string(Lo) + "-" + hi + note, doc},
                  &set_u32<M, Lo, Hi>};
}

// Every hotkey.* property, in the order docs/CLIENT.md lists them.
const std::vector<Property>& property_table() {
  static const std::vector<Property> all = {
      text("hotkey.coordinator.url", "empty", "`http://HOST:PORT`, `https://…`",
           &set_coordinator_url,
           "coordinator base URL; empty: no reports, no lists (plain routing)"),
      text("hotkey.producer.id", "`<hostname>-<pid>`", "1-256 bytes", &set_producer_id,
           "stable producer id in reports"),
      text("hotkey.token", "empty", "", &set_string<&ClientConfig::token>,
           "`Authorization: Bearer` token for reports and list reads"),
      text("hotkey.coordinator.ssl.ca.location", "empty (system trust store)", "readable PEM file",
           &set_string<&ClientConfig::ssl_ca_location>,
           "CA certificate(s) that vouch for an `https://` coordinator (see TLS below)"),
      text("hotkey.coordinator.ssl.certificate.location", "empty", "readable PEM file",
           &set_string<&ClientConfig::ssl_certificate_location>,
           "client certificate for a coordinator that requires mutual TLS; needs "
           "`…ssl.key.location`"),
      text("hotkey.coordinator.ssl.key.location", "empty", "readable PEM file",
           &set_string<&ClientConfig::ssl_key_location>,
           "the client certificate's private key (unencrypted)"),
      u32<&ClientConfig::report_interval_ms, 10, 3600000>("hotkey.report.interval.ms", "",
                                                          "report window length"),
      text("hotkey.sample.rate", "`auto`", "`auto`, [1e-6, 1]", &set_sample_rate,
           "`auto`: each window samples at the rate its sketch needs (about capacity^2/4 "
           "records a window, see \"Sampling\" below) and reports the realized rate; a number: "
           "one keyed record in round(1/rate) feeds the sketch. Totals always count all records"),
      u32<&ClientConfig::sketch_capacity, 1, 65536>("hotkey.sketch.capacity", "",
                                                    "Space-Saving capacity per topic"),
      text("hotkey.routing.mode", "`rekey`", "`rekey`, `route`", &set_routing_mode,
           "how salted records travel (wrapper)"),
      text("hotkey.salt.policy", "`wrr`", "`wrr`, `value_hash`, `random`", &set_salt_policy,
           "which salt a hot record takes"),
      u32<&ClientConfig::list_ttl_ms, 0, UINT32_MAX>(
          "hotkey.list.ttl.ms", " (0: never)", "silence after which the expired policy applies"),
      u32<&ClientConfig::list_stale_ms, 0, 3600000>(
          "hotkey.list.stale.ms", " (0: off)",
          "a topic's list is stale after this long without contact with its list source (or at "
          "once when the source says the topic's owner is gone); while it is, keys the "
          "producer's own sampler sees at the hot threshold (`hotkey.surge.factor`) are salted "
          "with local tables (see \"Local tables\" below)"),
      text("hotkey.list.expired.policy", "`keep`", "`keep`, `plain`", &set_expired_policy,
           "routing after the TTL"),
      text("hotkey.hash", "from `partitioner`, else `crc32`", "`murmur2`, `crc32`, `fnv1a`",
           &set_hash, "the producer's family; must agree with `partitioner` when both are set"),
      u32<&ClientConfig::poll_wait_ms, 0, 300000>("hotkey.poll.wait.ms", "",
                                                  "long-poll wait per list request"),
      u32<&ClientConfig::http_timeout_ms, 10, 600000>(
          "hotkey.http.timeout.ms", "", "connect/read/write timeout (reads add the poll wait)"),
      u32<&ClientConfig::backoff_initial_ms, 1, 600000>("hotkey.backoff.initial.ms", "",
                                                        "first retry delay after a failure"),
      u32<&ClientConfig::backoff_max_ms, 1, 3600000>(
          "hotkey.backoff.max.ms", ", >= initial",
          "retry delay cap (delays double, jittered in [d/2, d])"),
      text("hotkey.salt.headers", "`true`", "`true`, `false`", &set_salt_headers,
           "the wrapper adds the merge contract's headers (`hotkey.merge.contract`); `false` "
           "leaves every one off (on contract 1 the two headers of a salted record are 36% of "
           "its producer instructions, all in librdkafka; docs/BENCHMARKS.md), for consumers "
           "that do not merge sub-streams, or that recover rekeyed keys by their suffix and "
           "have no cold key ending in `<separator><digits>` (merge contract rule 3)"),
      u32<&ClientConfig::merge_contract, 1, 2>(
          "hotkey.merge.contract", "",
          "the merge contract version the wrapper writes (see \"Merge contract\" below): `2` "
          "marks a rekeyed record by its key's suffix alone and an unsalted record whose key "
          "ends in `<separator><digits>` with the `hotkey.unsalted` header; `1` puts the two "
          "headers on every salted record (what consumers reading with `kHeadersOnly` need)"),
      u32<&ClientConfig::surge_interval_ms, 0, 3600000>(
          "hotkey.surge.interval.ms", " (0: off)",
          "at most one early (surge) report per topic per this interval"),
      text("hotkey.surge.factor", "1.0", "0.01-1000", &set_surge_factor,
           "an unsalted key reaching this many fair shares (`1 / partitions`) of the "
           "current window's records is a surge: its topic's report goes at once"),
      u32<&ClientConfig::report_queue_max, 1, 1024>(
          "hotkey.report.queue.max", "",
          "reports waiting per topic while the coordinator fails; beyond, that topic's "
          "oldest is dropped"),
      text("hotkey.report.format", "`binary`", "`binary`, `json`", &set_report_format,
           "report encoding"),
      text("hotkey.topics", "empty", "comma-separated topic names", &set_topics,
           "subscribe before the first record"),
      text("hotkey.transport", "`http`", "`http`, `kafka`", &set_transport,
           "how reports and lists travel (see \"Kafka transport\" below); with `kafka`, "
           "`hotkey.coordinator.url` is not needed"),
      text("hotkey.reports.topic", "`__hotkey_reports`", "topic name",
           &set_topic<&ClientConfig::reports_topic>, "kafka transport: where reports are produced"),
      text("hotkey.lists.topic", "`__hotkey_lists`", "topic name",
           &set_topic<&ClientConfig::lists_topic>, "kafka transport: where lists are read"),
      text("hotkey.kafka.<name>", "", "any librdkafka property", nullptr,
           "kafka transport: sets `<name>` on its producer and consumer, over the settings it "
           "inherits (e.g. `hotkey.kafka.bootstrap.servers`, `hotkey.kafka.sasl.password`, "
           "`hotkey.kafka.group.id`); refused with the `http` transport"),
  };
  return all;
}

const Property* find_property(std::string_view name) {
  for (const Property& p : property_table()) {
    if (p.set != nullptr && name == p.info.name) return &p;
  }
  return nullptr;
}

}  // namespace

const std::vector<PropertyInfo>& client_properties() {
  static const std::vector<PropertyInfo> all = [] {
    std::vector<PropertyInfo> out;
    for (const Property& p : property_table()) out.push_back(p.info);
    return out;
  }();
  return all;
}

std::string client_properties_markdown() {
  std::string out =
      "| property | default | range / values | meaning |\n"
      "|---|---|---|---|\n";
  for (const PropertyInfo& p : client_properties()) {
    std::string row = "| `" + p.name + "` | " + p.default_value + " | " + p.values + " | " + p.doc;
    // An empty cell is "| |", as Markdown tables are written by hand.
    for (size_t at; (at = row.find("|  |")) != std::string::npos;) row.erase(at + 1, 1);
    out += row + " |\n";
  }
  return out;
}

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
    } else if (const Property* p = find_property(name)) {
      p->set(c, name, value);
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
