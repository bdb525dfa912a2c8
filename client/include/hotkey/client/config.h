// Client configuration: librdkafka-style "hotkey.*" properties, parsed and checked once.
// A value type; parse_client_config is a pure function, safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hotkey/partitioner.h"

namespace hotkey::client {

// Properties as the application gives them: name -> value, like librdkafka's conf.
using Properties = std::map<std::string, std::string, std::less<>>;

// How a salted record travels (docs/CONTRACTS.md "Keys and salted keys").
enum class RoutingMode : uint8_t {
  kRekey = 0,  // the key becomes key<sep><salt>; its partition is the family hash of that key
  kRoute = 1,  // the key stays; the partition comes from the salt table
};
// Which salt of a hot key a record takes.
enum class SaltPolicy : uint8_t {
  kWeightedRoundRobin = 0,  // smooth weighted round-robin per key: best balance
  kValueHash = 1,           // from the payload's hash: an application resend lands the same
  kRandom = 2,
};
// What routing does once the last good list is older than hotkey.list.ttl.ms without any
// successful contact with the coordinator.
enum class ExpiredPolicy : uint8_t {
  kKeep = 0,   // keep salting with the last good list
  kPlain = 1,  // fall back to plain hashing (every key cold)
};

// How reports and lists travel.
enum class Transport : uint8_t {
  kHttp = 0,   // POST /v1/reports and GET /v1/hotkeys long-polls to hotkey.coordinator.url
  kKafka = 1,  // reports produced to the reports topic, lists read from the lists topic
};

std::string_view to_string(Transport transport) noexcept;
std::string_view to_string(RoutingMode mode) noexcept;
std::string_view to_string(SaltPolicy policy) noexcept;
std::string_view to_string(ExpiredPolicy policy) noexcept;

struct ClientConfig {
  std::string coordinator_url;  // hotkey.coordinator.url; empty: no reports, no lists
  std::string producer_id;      // hotkey.producer.id; default host name + pid
  std::string token;            // hotkey.token: Bearer token for reports and list reads
  // TLS to an https:// coordinator. The server certificate is always verified (host name
  // included): against ssl_ca_location when set, else the system's trust store.
  std::string ssl_ca_location;           // hotkey.coordinator.ssl.ca.location: PEM CA file
  std::string ssl_certificate_location;  // hotkey.coordinator.ssl.certificate.location (mTLS)
  std::string ssl_key_location;          // hotkey.coordinator.ssl.key.location (mTLS)
  uint32_t report_interval_ms = 500;     // hotkey.report.interval.ms
  double sample_rate = 1.0;              // hotkey.sample.rate, (0, 1]: 1-in-round(1/rate) sampled
  // hotkey.sample.rate=auto (default): the rate follows the record rate, per topic and window
  // (hotkey::client::Sampler); sample_rate is then unused.
  bool sample_auto = true;
  uint32_t sketch_capacity = 256;                            // hotkey.sketch.capacity
  RoutingMode routing_mode = RoutingMode::kRekey;            // hotkey.routing.mode
  SaltPolicy salt_policy = SaltPolicy::kWeightedRoundRobin;  // hotkey.salt.policy
  uint32_t list_ttl_ms = 600000;                             // hotkey.list.ttl.ms
  ExpiredPolicy expired_policy = ExpiredPolicy::kKeep;       // hotkey.list.expired.policy
  // hotkey.list.stale.ms: a topic's list is stale after this long without contact with its list
  // source (or when the source says its owner is gone); stale topics get local tables for the
  // keys their producer sees hot (docs/CLIENT.md, "Local tables"). 0: off.
  uint32_t list_stale_ms = 3000;
  HashFamily hash = HashFamily::kCrc32;  // hotkey.hash; the family keyed records use
  bool hash_set = false;                 // hotkey.hash was given explicitly
  uint32_t poll_wait_ms = 30000;         // hotkey.poll.wait.ms: long-poll wait per request
  uint32_t http_timeout_ms = 5000;       // hotkey.http.timeout.ms: connect/read/write timeout
  uint32_t backoff_initial_ms = 100;     // hotkey.backoff.initial.ms
  uint32_t backoff_max_ms = 10000;       // hotkey.backoff.max.ms
  uint32_t report_queue_max = 4;         // hotkey.report.queue.max: pending reports per topic
  // hotkey.salt.headers: the wrapper adds the merge contract's headers (merge_contract below);
  // false leaves every one off, for consumers that do not merge sub-streams or recover rekeyed
  // keys by their suffix.
  bool salt_headers = true;
  // hotkey.merge.contract: the merge contract version the wrapper writes (docs/CLIENT.md,
  // "Merge contract"): 2 (default) marks a rekeyed record by its key's suffix alone and an
  // unsalted record whose key ends in <separator><digits> with hotkey.unsalted; 1 puts the
  // hotkey.salt / hotkey.version headers on every salted record.
  uint32_t merge_contract = 2;
  // Surge reports: a topic's report goes early (at most one per surge_interval_ms per topic;
  // 0: never) when an unsalted key reaches surge_factor / partitions of the window's records.
  uint32_t surge_interval_ms = 100;        // hotkey.surge.interval.ms
  double surge_factor = 1.0;               // hotkey.surge.factor
  bool report_json = false;                // hotkey.report.format=json|binary (default binary)
  std::vector<std::string> topics;         // hotkey.topics: subscribe before the first send
  Transport transport = Transport::kHttp;  // hotkey.transport=http|kafka
  std::string reports_topic = "__hotkey_reports";  // hotkey.reports.topic (kafka transport)
  std::string lists_topic = "__hotkey_lists";      // hotkey.lists.topic (kafka transport)
  // librdkafka settings of the kafka transport's own producer and consumer: the application's
  // connection settings (bootstrap.servers, security.protocol, ssl.*, sasl.*, ...) unless
  // hotkey.kafka.bootstrap.servers is given, then every hotkey.kafka.NAME as NAME on top.
  std::vector<std::pair<std::string, std::string>> kafka_settings;
};

// True for names this library owns ("hotkey." prefix).
bool is_client_property(std::string_view name) noexcept;

// Parses every "hotkey.*" entry of `props` (others are ignored: they belong to librdkafka).
// Unknown hotkey.* names and bad values throw std::invalid_argument naming the property.
ClientConfig parse_client_config(const Properties& props);

// One hotkey.* property as parse_client_config reads it. client_properties() lists every one,
// from the table that also drives the parser; docs/CLIENT.md "Configuration properties" is
// generated from it (client_properties_markdown(); a unit test compares the page).
struct PropertyInfo {
  std::string name;           // "hotkey.report.interval.ms"; "hotkey.kafka.<name>": a prefix
  std::string default_value;  // as documented
  std::string values;         // accepted range or values, as documented
  std::string doc;            // meaning (Markdown)
};
const std::vector<PropertyInfo>& client_properties();
// The property table of docs/CLIENT.md (Markdown, one row per client_properties() entry).
std::string client_properties_markdown();

// The entries of `props` that are not hotkey.* properties, for librdkafka.
std::vector<std::pair<std::string, std::string>> kafka_properties(const Properties& props);

// The family a librdkafka `partitioner` value hashes keyed records with ("murmur2_random" ->
// murmur2, "consistent_random" -> crc32, ...); std::invalid_argument for "random" and unknown.
HashFamily family_of_rdkafka_partitioner(std::string_view partitioner);

}  // namespace hotkey::client
