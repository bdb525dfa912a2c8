// The coordinator's settings: defaults, the JSON config file, per-topic overrides and the
// command-line flags. Plain values; parse functions are pure and throw std::invalid_argument
// with a message naming the offending setting.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cluster_config.h"
#include "hotkey/partitioner.h"
#include "hotkey/report.h"
#include "hotkey/salt_planner.h"

namespace hotkey::coordinator {

// Detection and planning knobs. Every field can be overridden per topic.
struct TopicSettings {
  // A key enters the list when its guaranteed share of the topic reaches
  // hot_fraction * (1 / partitions) ...
  double hot_fraction = 0.5;
  // ... and its fleet-wide rate is at least min_rate messages/s.
  double min_rate = 10.0;
  // A listed key leaves after its share stayed below
  // min(cold_fraction / partitions, half its entry share) for hold_ms.
  double cold_fraction = 0.25;
  int64_t hold_ms = 30000;
  // Balance-driven selection: while the predicted max/avg partition load exceeds
  // balance_target, salt the largest key homed on the most loaded partition whose share is at
  // least balance_min_fraction / partitions.
  double balance_target = 1.03;
  double balance_min_fraction = 0.02;
  // At most this many keys listed by the balance-driven selection (source "balance"); 0 turns
  // it off (only keys at the hot threshold, surges and pins are salted).
  uint32_t max_balance_keys = 32;
  // A published table is kept (no new version) while its predicted max/avg stays within
  // churn_tolerance of the fresh plan's, or under balance_target.
  double churn_tolerance = 0.02;
  uint32_t max_hot_keys = 64;
  // Salt count: clamp(ceil(share * partitions / salt_share), min_salts, max_salts), at most P.
  uint32_t min_salts = kDefaultMinSalts;
  uint32_t max_salts = kDefaultMaxSalts;
  double salt_share = kDefaultSaltShare;
  // Salts 0..salt_search_limit-1 are searched for a verified table.
  uint32_t salt_search_limit = 1u << 16;
  // Fixed hash family / separator for the topic; when unset the first report's are adopted.
  std::optional<HashFamily> hash;
  std::optional<std::string> separator;

  // Throws std::invalid_argument when a value is out of range.
  void validate() const;
};

struct CoordinatorConfig {
  std::string listen_host = "127.0.0.1";
  int listen_port = 8470;
  std::string data_dir;

  // HTTP worker threads besides long-poll waiters; the pool holds http_threads + max_waiters.
  uint32_t http_threads = 16;
  uint32_t max_waiters = 4096;
  uint32_t max_wait_ms = 60000;
  size_t max_body_bytes = 8u << 20;
  uint32_t keep_alive_max_count = 1000;
  uint32_t keep_alive_timeout_s = 10;
  ReportLimits limits;

  // Aggregation window: window_epochs epochs of epoch_ms each.
  uint32_t epoch_ms = 1000;
  uint32_t window_epochs = 10;
  uint32_t sketch_capacity = 4096;
  // Producers silent for this long are forgotten.
  int64_t producer_timeout_ms = 30000;
  // After a start, detection neither adds nor drops keys until the topic has had reports for
  // this long (the window refills; persisted lists stay as they were).
  int64_t warmup_ms = 5000;
  // Log every report-triggered plan (event `surge_plan`: what it listed, and the latest
  // reports' leading unlisted keys against the fast-entry bar). Off by default: a topic whose
  // reports keep showing locally hot keys runs several such plans a second.
  bool log_surge_plans = false;
  // How often detection and planning run.
  uint32_t plan_interval_ms = 1000;
  uint32_t max_topics = 10000;
  // The sum of partition counts over tracked topics (per-partition state is kept per topic and
  // window epoch): a report for a new topic, or one growing a topic, beyond it gets 429.
  uint64_t max_tracked_partitions = 1000000;
  // A topic without reports, pins and denies for this long is dropped from memory and store
  // (its version counter stays); 0 keeps idle topics forever.
  int64_t topic_idle_ttl_ms = 86400000;
  uint32_t audit_max_limit = 1000;

  TopicSettings defaults;
  std::map<std::string, TopicSettings, std::less<>> topic_overrides;

  // Operator tokens: name -> token. Every configured token works; the name only labels the
  // audit entries, and one name may carry several tokens (rotation: the new token alongside
  // the old one until every client has it). Optional producer token.
  std::multimap<std::string, std::string, std::less<>> operator_tokens;
  std::string producer_token;
  // Files the tokens are read from at start-up (docs/SECURITY.md): operator tokens one per
  // line as NAME=TOKEN (or a bare TOKEN named "operator"), the producer token alone. Files
  // that other users can read or write are refused.
  std::string operator_tokens_file;
  std::string producer_token_file;

  // TLS: PEM certificate chain and private key; both or neither (neither: plain HTTP). With
  // tls_client_ca_file, clients must present a certificate signed by one of its CAs.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;

  // Per-client (remote address) token buckets: requests per second and burst size; a rate of
  // 0 (the default for both) turns the limit off. Operator writes are POST/DELETE on pins and
  // denies. Off by default because many producers can share one address (NAT, a proxy) and
  // scripted operator imports burst; docs/SECURITY.md gives values to start from.
  double report_rate_per_client = 0;
  uint32_t report_burst_per_client = 100;
  double operator_rate_per_client = 0;
  uint32_t operator_burst_per_client = 100;
  // Buckets kept at most (idle ones are evicted first).
  uint32_t rate_limit_max_clients = 100000;

  // /metrics carries topic names and rates. When true it needs a bearer token like the /v1
  // reads (the producer token or an operator token); false (the default) keeps it open for
  // scrapers without credentials.
  bool metrics_require_token = false;

  // Cluster mode over Kafka (off unless cluster.bootstrap is set; docs/CLUSTER.md).
  ClusterConfig cluster;

  // Connections served or queued at once; 0 means http_threads + max_waiters (the pool).
  // Connections beyond it, or beyond max_connections_per_client from one address (0: no
  // per-address limit), are answered 503 with Retry-After and closed.
  uint32_t max_connections = 0;
  uint32_t max_connections_per_client = 0;
  // Socket read/write timeouts (per read or write call), and the longest a connection may
  // spend outside request handlers in one stretch (waiting in the queue, idle between
  // requests, receiving a request, sending an answer) before it is cut: bounds slow-loris.
  uint32_t read_timeout_s = 5;
  uint32_t write_timeout_s = 5;
  uint32_t request_timeout_s = 30;

  // max_connections with 0 resolved.
  uint32_t connection_limit() const;
  bool tls() const { return !tls_cert_file.empty(); }

  // The settings in force for `topic`.
  const TopicSettings& settings_for(std::string_view topic) const;
  void validate() const;
};

// Applies a JSON config document on top of `config`. Per-topic overrides start from the
// "defaults" section (whatever order the file lists them in).
void apply_config_json(CoordinatorConfig& config, std::string_view json);

// Adds one operator token from "NAME=TOKEN" (or a bare TOKEN, named "operator"); a second
// token under one name is kept beside the first (rotation). Throws std::invalid_argument when
// the token is shorter than 8 bytes.
void add_operator_token(CoordinatorConfig& config, const std::string& spec);

// Sets listen_host and listen_port from "HOST:PORT" ("[::1]:8470" for IPv6); throws
// std::invalid_argument for a URL or a bad port.
void apply_listen(CoordinatorConfig& config, const std::string& host_port);

// One config-file setting: the table config_settings() holds every one of them, and drives the
// config-file parser (apply / apply_topic), validate() (the numeric range [lo, hi], lo excluded
// when lo_open), --help-config and the setting tables of docs/CONFIGURATION.md
// (config_docs_markdown(), compared with the page by a test). Non-numeric settings describe
// what they accept in `form`.
struct SettingInfo {
  const char* name = "";
  const char* section = "";    // "service", "window" or "topic" (under defaults / topics.<name>)
  std::string default_value;   // as documented; numeric ones are printed from the struct's default
  const char* form = nullptr;  // non-numeric settings: what is accepted
  double lo = 0;
  double hi = 0;
  bool lo_open = false;
  double (*get)(const CoordinatorConfig&) = nullptr;    // numeric service and window settings
  double (*get_topic)(const TopicSettings&) = nullptr;  // numeric topic settings
  // Reads the JSON value at `path` ("max_waiters", "topics.t.max_salts") into the config; throws
  // std::invalid_argument naming `path` when its type is wrong (ranges: validate()).
  void (*apply)(CoordinatorConfig&, const nlohmann::json&, const std::string& path) = nullptr;
  void (*apply_topic)(TopicSettings&, const nlohmann::json&, const std::string& path) = nullptr;
  const char* doc = "";  // the meaning, Markdown (docs/CONFIGURATION.md)
  // "1..100000", "> 0 and <= 1000", or `form`.
  std::string range() const;
};
const std::vector<SettingInfo>& config_settings();

}  // namespace hotkey::coordinator
