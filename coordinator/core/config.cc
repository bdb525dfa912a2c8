#include "config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace hotkey::coordinator {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

// "config: 'topics.t.max_salts' must be 1..100000, got -3" for a known setting, else a plain
// "must be" message.
[[noreturn]] void fail_number(const std::string& path, const json& j, const char* otherwise) {
  const std::string name =
      path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
  for (const SettingInfo& s : config_settings()) {
    if (name == s.name) fail("config: '" + path + "' must be " + s.range() + ", got " + j.dump());
  }
  fail("config: '" + path + "' " + otherwise);
}

template <typename T>
T get_number(const json& j, const std::string& name) {
  if (!j.is_number()) fail("config: '" + name + "' must be a number");
  if constexpr (std::is_integral_v<T>) {
    if (!j.is_number_integer() && !j.is_number_unsigned()) {
      fail("config: '" + name + "' must be an integer (" + j.dump() + " is not)");
    }
    if (j.is_number_unsigned()) {
      auto v = j.get<uint64_t>();
      if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
        fail_number(name, j, "is too large");
      }
      return static_cast<T>(v);
    }
    auto v = j.get<int64_t>();
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (v > 0 &&
         static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
      fail_number(name, j, "is out of range");
    }
    return static_cast<T>(v);
  } else {
    return j.get<T>();
  }
}

std::string get_string(const json& j, const std::string& name) {
  if (!j.is_string()) fail("config: '" + name + "' must be a string");
  return j.get<std::string>();
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// "config: unknown setting ..." with a hint: where the setting belongs when it exists at the
// other level, else the closest known name. `where` is "" (top level), "defaults" or
// "topics.<name>".
std::string unknown_setting(const std::string& where, const std::string& name) {
  const bool top = where.empty();
  const std::string path = top ? name : where + "." + name;
  std::string msg = "config: unknown setting '" + path + "'";
  const SettingInfo* best = nullptr;
  size_t best_distance = 3;  // suggest names within two edits
  for (const SettingInfo& s : config_settings()) {
    const bool topic_setting = std::string_view(s.section) == "topic";
    if (name == s.name) {
      if (top && topic_setting) {
        return msg + ": it is a per-topic setting; did you mean 'defaults." + name +
               "' (every topic) or 'topics.<topic>." + name + "'?";
      }
      if (!top && !topic_setting) {
        return msg + ": '" + name + "' is a top-level setting, not a per-topic one";
      }
    }
    if (topic_setting == top) continue;
    if (size_t d = edit_distance(name, s.name); d < best_distance) {
      best_distance = d;
      best = &s;
    }
  }
  if (top && (name == "topics" || name == "defaults")) return msg;
  if (best != nullptr) {
    msg += "; did you mean '" + (top ? std::string() : where + ".") + best->name + "'?";
  }
  return msg + " (hotkey-coordinator --help-config lists every setting)";
}

// The table row of a config-file setting at the top level (topic == false) or under defaults /
// topics.<name> (topic == true); nullptr when there is none.
const SettingInfo* find_setting(std::string_view name, bool topic) {
  for (const SettingInfo& s : config_settings()) {
    if (name == s.name && (std::string_view(s.section) == "topic") == topic) return &s;
  }
  return nullptr;
}

void apply_topic_settings(TopicSettings& s, const json& j, const std::string& where) {
  if (!j.is_object()) fail("config: '" + where + "' must be an object");
  for (const auto& [name, v] : j.items()) {
    const SettingInfo* setting = find_setting(name, true);
    if (setting == nullptr) fail(unknown_setting(where, name));
    setting->apply_topic(s, v, where + "." + name);
  }
  try {
    s.validate();
  } catch (const std::invalid_argument& e) {
    fail(std::string(e.what()) + " (in '" + where + "')");
  }
}

void parse_listen(CoordinatorConfig& c, const std::string& value) {
  // A URL is a common slip ("http://127.0.0.1:8470"); it used to pass as host "http://..."
  // and fail later as "cannot bind" (exit 4) instead of a usage error.
  if (value.find("://") != std::string::npos || value.find('/') != std::string::npos) {
    fail("listen address must be HOST:PORT without a scheme or path, got '" + value +
         "' (e.g. 127.0.0.1:8470; TLS is turned on with tls_cert_file/tls_key_file, not "
         "https://)");
  }
  auto colon = value.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == value.size()) {
    fail("listen address must be HOST:PORT, got '" + value + "'");
  }
  std::string host = value.substr(0, colon);
  std::string port = value.substr(colon + 1);
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (*end != '\0' || p < 0 || p > 65535) fail("listen port must be 0..65535, got '" + port + "'");
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  c.listen_host = host;
  c.listen_port = static_cast<int>(p);
}

void add_token(CoordinatorConfig& c, const std::string& spec) {
  // NAME=TOKEN, or a bare TOKEN named "operator".
  auto eq = spec.find('=');
  std::string name = "operator";
  std::string token = spec;
  if (eq != std::string::npos && eq > 0) {
    name = spec.substr(0, eq);
    token = spec.substr(eq + 1);
  }
  if (token.size() < 8) fail("operator token for '" + name + "' must be at least 8 bytes");
  // Every token works; a second token under one name is rotation, not a replacement.
  auto [first, last] = c.operator_tokens.equal_range(name);
  for (auto it = first; it != last; ++it) {
    if (it->second == token) return;
  }
  c.operator_tokens.emplace(name, token);
}

}  // namespace

namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.15g", v);
  return buf;
}

template <typename T>
void apply_value(T& into, const json& v, const std::string& path) {
  into = get_number<T>(v, path);
}

template <auto M>
double get_member(const CoordinatorConfig& c) {
  return static_cast<double>(c.*M);
}
template <auto M>
void apply_member(CoordinatorConfig& c, const json& v, const std::string& path) {
  apply_value(c.*M, v, path);
}
template <auto M>
double get_limit(const CoordinatorConfig& c) {
  return static_cast<double>(c.limits.*M);
}
template <auto M>
void apply_limit(CoordinatorConfig& c, const json& v, const std::string& path) {
  apply_value(c.limits.*M, v, path);
}
template <auto M>
double get_topic_member(const TopicSettings& t) {
  return static_cast<double>(t.*M);
}
template <auto M>
void apply_topic_member(TopicSettings& t, const json& v, const std::string& path) {
  apply_value(t.*M, v, path);
}
template <auto M>
void apply_string(CoordinatorConfig& c, const json& v, const std::string& path) {
  c.*M = get_string(v, path);
}

void apply_listen(CoordinatorConfig& c, const json& v, const std::string& path) {
  parse_listen(c, get_string(v, path));
}
void apply_operator_tokens(CoordinatorConfig& c, const json& v, const std::string&) {
  if (!v.is_object()) fail("config: 'operator_tokens' must be an object of name: token");
  for (const auto& [who, tok] : v.items()) {
    add_token(c, who + "=" + get_string(tok, "operator_tokens." + who));
  }
}
void apply_metrics_require_token(CoordinatorConfig& c, const json& v, const std::string&) {
  if (!v.is_boolean()) fail("config: 'metrics_require_token' must be true or false");
  c.metrics_require_token = v.get<bool>();
}
void apply_log_surge_plans(CoordinatorConfig& c, const json& v, const std::string&) {
  if (!v.is_boolean()) fail("config: 'log_surge_plans' must be true or false");
  c.log_surge_plans = v.get<bool>();
}
void apply_kafka(CoordinatorConfig& c, const json& v, const std::string&) {
  apply_cluster_json(c.cluster, v);
}
void apply_hash(TopicSettings& s, const json& v, const std::string& path) {
  auto family = parse_hash_family(get_string(v, path));
  if (!family) fail("config: '" + path + "' must be murmur2, crc32 or fnv1a");
  s.hash = *family;
}
void apply_separator(TopicSettings& s, const json& v, const std::string& path) {
  s.separator = get_string(v, path);
}

// Table rows. A numeric setting's default is printed from the struct's own default, so the
// table, --help-config and the docs cannot drift from the code.
template <auto M>
SettingInfo numeric(const char* name, const char* section, double lo, double hi, bool lo_open,
                    const char* doc) {
  SettingInfo s{};
  s.name = name;
  s.section = section;
  s.default_value = number_text(static_cast<double>(CoordinatorConfig{}.*M));
  s.lo = lo;
  s.hi = hi;
  s.lo_open = lo_open;
  s.get = &get_member<M>;
  s.apply = &apply_member<M>;
  s.doc = doc;
  return s;
}
template <auto M>
SettingInfo limit(const char* name, const char* section, double lo, double hi, bool lo_open,
                  const char* doc) {
  SettingInfo s{};
  s.name = name;
  s.section = section;
  s.default_value = number_text(static_cast<double>(ReportLimits{}.*M));
  s.lo = lo;
  s.hi = hi;
  s.lo_open = lo_open;
  s.get = &get_limit<M>;
  s.apply = &apply_limit<M>;
  s.doc = doc;
  return s;
}
template <auto M>
SettingInfo topic_numeric(const char* name, double lo, double hi, bool lo_open, const char* doc) {
  SettingInfo s{};
  s.name = name;
  s.section = "topic";
  s.default_value = number_text(static_cast<double>(TopicSettings{}.*M));
  s.lo = lo;
  s.hi = hi;
  s.lo_open = lo_open;
  s.get_topic = &get_topic_member<M>;
  s.apply_topic = &apply_topic_member<M>;
  s.doc = doc;
  return s;
}
SettingInfo form(const char* name, const char* section, const char* default_value,
                 const char* accepted,
                 void (*apply)(CoordinatorConfig&, const json&, const std::string&),
                 const char* doc) {
  SettingInfo s{};
  s.name = name;
  s.section = section;
  s.default_value = default_value;
  s.form = accepted;
  s.apply = apply;
  s.doc = doc;
  return s;
}
SettingInfo form_topic(const char* name, const char* default_value, const char* accepted,
                       void (*apply)(TopicSettings&, const json&, const std::string&),
                       const char* doc) {
  SettingInfo s{};
  s.name = name;
  s.section = "topic";
  s.default_value = default_value;
  s.form = accepted;
  s.apply_topic = apply;
  s.doc = doc;
  return s;
}

}  // namespace

// Every config-file setting, in the order --help-config and docs/CONFIGURATION.md list them.
const std::vector<SettingInfo>& config_settings() {
  static const std::vector<SettingInfo> all = {
      form("listen", "service", "\"127.0.0.1:8470\"", "HOST:PORT, port 0..65535", apply_listen,
           "as `--listen`"),
      form("data_dir", "service", "—", "a directory path (required here or as --data)",
           apply_string<&CoordinatorConfig::data_dir>, "as `--data`"),
      form("operator_tokens", "service", "{}", "{\"name\": \"token\"}, tokens >= 8 bytes",
           apply_operator_tokens,
           "`{\"name\": \"token\"}`; the name goes into the audit log, tokens are never "
           "logged; these add to the tokens of the flags, env and token file"),
      form("producer_token", "service", "\"\"", "a token",
           apply_string<&CoordinatorConfig::producer_token>, "as `--producer-token`"),
      form("metrics_require_token", "service", "false", "true or false",
           apply_metrics_require_token,
           "`true`: `GET /metrics` needs `Authorization: Bearer` with the producer token or "
           "an operator token (401 otherwise; with neither configured nobody can scrape). "
           "The default leaves it open: it shows topic names and rates, which the `/v1` "
           "reads protect when a producer token is set (docs/SECURITY.md)."),
      form("operator_tokens_file", "service", "\"\"", "a file path (mode 0600 or 0640)",
           apply_string<&CoordinatorConfig::operator_tokens_file>,
           "as `--operator-token-file` (its tokens are added to `operator_tokens`)"),
      form("producer_token_file", "service", "\"\"", "a file path (mode 0600 or 0640)",
           apply_string<&CoordinatorConfig::producer_token_file>, "as `--producer-token-file`"),
      form("tls_cert_file", "service", "\"\"", "a PEM file path",
           apply_string<&CoordinatorConfig::tls_cert_file>,
           "as `--tls-cert`; with `tls_key_file` the coordinator serves HTTPS only (TLS "
           "1.2+), never plain HTTP on the same port"),
      form("tls_key_file", "service", "\"\"", "a PEM file path",
           apply_string<&CoordinatorConfig::tls_key_file>, "as `--tls-key`"),
      form("tls_client_ca_file", "service", "\"\"", "a PEM file path",
           apply_string<&CoordinatorConfig::tls_client_ca_file>,
           "as `--tls-client-ca` (mutual TLS)"),
      form("kafka", "service", "—", "an object of cluster-mode settings (see Cluster mode)",
           apply_kafka,
           "cluster mode: the `kafka` settings in \"Cluster mode\" below; absent: "
           "single-node HTTP mode"),
      numeric<&CoordinatorConfig::http_threads>(
          "http_threads", "service", 2, 10000, false,
          "HTTP workers kept running: they serve requests being read, handled and answered. "
          "Parked long-polls and subscriptions, and kept-alive connections between "
          "requests, hold none (one epoll thread holds them); more workers start only while "
          "every one is held by a slow sender, and end after 2 s idle."),
      numeric<&CoordinatorConfig::max_waiters>(
          "max_waiters", "service", 1, 100000, false,
          "long-polls and subscriptions that may be parked at once (together); one more "
          "answers `503` + `Retry-After: 1`. A parked request holds a connection, no "
          "thread. Workers may grow to `http_threads + max_waiters` under slow senders."),
      numeric<&CoordinatorConfig::max_wait_ms>("max_wait_ms", "service", 1, 3600000, false,
                                               "cap on a long-poll's `wait_ms`"),
      numeric<&CoordinatorConfig::max_body_bytes>("max_body_bytes", "service", 1024, 1073741824,
                                                  false, "larger request bodies get `413`"),
      numeric<&CoordinatorConfig::keep_alive_max_count>("keep_alive_max_count", "service", 1,
                                                        1000000, false,
                                                        "requests per keep-alive connection"),
      numeric<&CoordinatorConfig::keep_alive_timeout_s>(
          "keep_alive_timeout_s", "service", 1, 3600, false, "idle keep-alive connection timeout"),
      numeric<&CoordinatorConfig::max_connections>(
          "max_connections", "service", 0, 1000000, false,
          "connections open at once (served, queued, parked or idle between requests); "
          "`0` means `http_threads + max_waiters`. One more is answered `503` + "
          "`Retry-After: 1` + "
          "`Connection: close` at once by a separate overflow pool instead of waiting for "
          "a worker."),
      numeric<&CoordinatorConfig::max_connections_per_client>(
          "max_connections_per_client", "service", 0, 1000000, false,
          "connections at once from one client address (`0`: no limit); more are answered "
          "like `max_connections`. Producers behind one NAT or proxy share an address: "
          "allow one connection per producer plus one per long-poll subscriber."),
      numeric<&CoordinatorConfig::read_timeout_s>("read_timeout_s", "service", 1, 3600, false,
                                                  "one socket read may wait this long (1..3600)"),
      numeric<&CoordinatorConfig::write_timeout_s>("write_timeout_s", "service", 1, 3600, false,
                                                   "one socket write may wait this long (1..3600)"),
      numeric<&CoordinatorConfig::request_timeout_s>(
          "request_timeout_s", "service", 1, 86400, false,
          "longest stretch a connection may spend outside a request handler: waiting in "
          "the queue, idle between requests, sending its request headers and body, reading "
          "the answer (1..86400). Then it is closed (`hotkey_http_connections_cut_total`; "
          "an idle one, or one still sending its request head, is closed at the shorter of "
          "this and `keep_alive_timeout_s` and not counted). "
          "A parked long-poll is inside its handler and is not cut. This is what bounds "
          "slow-loris clients, which stay under `read_timeout_s` by sending a byte at a "
          "time."),
      numeric<&CoordinatorConfig::report_rate_per_client>(
          "report_rate_per_client", "service", 0, 1000000, false,
          "`POST /v1/reports` per second per client address (token bucket; `0`: no limit). "
          "Over it: `429` + `Retry-After`."),
      numeric<&CoordinatorConfig::report_burst_per_client>(
          "report_burst_per_client", "service", 1, 1000000, false,
          "bucket size for `report_rate_per_client`"),
      numeric<&CoordinatorConfig::operator_rate_per_client>(
          "operator_rate_per_client", "service", 0, 1000000, false,
          "operator writes (`POST`/`DELETE` of pins and denies) per second per client "
          "address (`0`: no limit); counted before the token is checked, so it also slows "
          "token guessing."),
      numeric<&CoordinatorConfig::operator_burst_per_client>(
          "operator_burst_per_client", "service", 1, 1000000, false,
          "bucket size for `operator_rate_per_client`"),
      numeric<&CoordinatorConfig::rate_limit_max_clients>(
          "rate_limit_max_clients", "service", 1, 10000000, false,
          "client addresses whose buckets are kept; the least recently seen is dropped "
          "first (it starts again with a full bucket)"),
      limit<&ReportLimits::max_items>("max_items", "service", 1, 1048576, false,
                                      "sketch items per report; more → `413`"),
      limit<&ReportLimits::max_key_bytes>("max_key_bytes", "service", 1, 65536, false,
                                          "bytes per key"),
      limit<&ReportLimits::max_partitions>("max_partitions", "service", 1, 100000, false,
                                           "largest partition count accepted"),
      numeric<&CoordinatorConfig::max_topics>(
          "max_topics", "service", 1, 1000000, false,
          "topics tracked; a report for one more → `429` (idle topics expire, see "
          "`topic_idle_ttl_ms`; operators free a slot with `DELETE /v1/topics/{t}`)"),
      numeric<&CoordinatorConfig::max_tracked_partitions>(
          "max_tracked_partitions", "service", 1, 1000000000, false,
          "sum of partition counts over tracked topics (per-partition state is kept per "
          "topic and window epoch; sizing in OPERATIONS.md): a report for a new topic, or "
          "one growing a topic's partition count, beyond it → `429` with reason "
          "`too_many_partitions`"),
      numeric<&CoordinatorConfig::audit_max_limit>("audit_max_limit", "service", 1, 100000, false,
                                                   "largest `limit` of `GET /v1/audit`"),
      numeric<&CoordinatorConfig::epoch_ms>(
          "epoch_ms", "window", 10, 3600000, false,
          "epoch length; reports are merged into the epoch they arrive in"),
      numeric<&CoordinatorConfig::window_epochs>(
          "window_epochs", "window", 1, 3600, false,
          "epochs in the sliding window (window = `epoch_ms × window_epochs`)"),
      numeric<&CoordinatorConfig::sketch_capacity>(
          "sketch_capacity", "window", 16, 1048576, false,
          "capacity k of each epoch's merged Space-Saving summary (error ≤ N/k). Memory "
          "per topic is at most about `window_epochs × k × (key bytes + ~80 B)`, "
          "independent of the producer count."),
      numeric<&CoordinatorConfig::producer_timeout_ms>(
          "producer_timeout_ms", "window", 1, 86400000, false,
          "producers silent this long are forgotten (rate, partition count, dedup state)"),
      numeric<&CoordinatorConfig::plan_interval_ms>(
          "plan_interval_ms", "window", 10, 3600000, false,
          "how often detection and planning run; a report that shows an unlisted key at "
          "twice the hot threshold also plans its topic at once, at most every "
          "`plan_interval_ms / 4` after a plan that published (`/ 16` after one that "
          "published nothing), sooner (from `/ 64`) once a quarter of the producers' reports "
          "showed such a key since the last plan"),
      numeric<&CoordinatorConfig::warmup_ms>(
          "warmup_ms", "window", 0, 86400000, false,
          "after a start, detection neither adds nor drops keys until a topic has had "
          "reports this long (persisted lists keep being served while the window refills); "
          "a key at twice the hot threshold in the latest reports (and at least 16 "
          "records) is listed from the topic's first report on"),
      form("log_surge_plans", "window", "false", "true or false", apply_log_surge_plans,
           "`true`: log every report-triggered plan as a `surge_plan` line: the keys it "
           "listed and the latest reports' leading unlisted keys with their shares against "
           "the fast-entry bar (docs/OPERATIONS.md, \"Why was a key listed late?\"). Off by "
           "default: such plans can run several times a second per topic"),
      numeric<&CoordinatorConfig::topic_idle_ttl_ms>(
          "topic_idle_ttl_ms", "window", 0, 31536000000.0, false,
          "a topic with no accepted report, no pin, no deny and no operator change for "
          "this long is dropped from memory and store (list, metadata, metric series, its "
          "`max_topics` slot; log line `topic_expired`); its version counter is kept, so a "
          "topic of that name that returns publishes above every version it had. `0`: "
          "topics never expire. Cluster mode: only the topic's owner expires it, through the "
          "state topic, and every member drops it (docs/CLUSTER.md)"),
      topic_numeric<&TopicSettings::hot_fraction>(
          "hot_fraction", 0, 1000, true,
          "a key enters when its guaranteed window share ≥ `hot_fraction / partitions` (or "
          "its share of the latest reports ≥ twice that: a surge is listed without waiting "
          "for the window) …"),
      topic_numeric<&TopicSettings::min_rate>("min_rate", 0, 1e12, false,
                                              "… and its fleet-wide rate ≥ this many messages/s"),
      topic_numeric<&TopicSettings::cold_fraction>(
          "cold_fraction", 0, 1000, true,
          "a listed key leaves after its share stayed below `min(cold_fraction / "
          "partitions, entry share / 2)` … (must be ≤ `hot_fraction`)"),
      topic_numeric<&TopicSettings::hold_ms>(
          "hold_ms", 0, 86400000, false,
          "… for this long (hysteresis); a key below that share that no longer sends leaves "
          "earlier, with the next version published for another reason"),
      topic_numeric<&TopicSettings::balance_target>(
          "balance_target", 1, 1000, false,
          "balance-driven selection adds keys while the predicted max/avg partition load "
          "exceeds this"),
      topic_numeric<&TopicSettings::balance_min_fraction>(
          "balance_min_fraction", 0, 1000, false,
          "smallest share (× 1/partitions) a key needs to be added for balance"),
      topic_numeric<&TopicSettings::max_balance_keys>(
          "max_balance_keys", 0, 100000, false,
          "most keys the balance-driven selection lists (source `balance`, below the hot "
          "threshold); `0` turns balance salting off"),
      topic_numeric<&TopicSettings::churn_tolerance>(
          "churn_tolerance", 0, 1000, false,
          "with unchanged keys, a re-planned table is published only when the published "
          "one predicts a max/avg worse by more than this (and above `balance_target`)"),
      topic_numeric<&TopicSettings::max_hot_keys>(
          "max_hot_keys", 1, 100000, false,
          "keys per topic list, pins included: a pin beyond it is refused (`409`, reason "
          "`too_many_pins`); detected keys get the room pins leave"),
      topic_numeric<&TopicSettings::min_salts>("min_salts", 1, 100000, false,
                                               "fewest salts a listed key gets"),
      topic_numeric<&TopicSettings::max_salts>(
          "max_salts", 1, 100000, false,
          "most salts a listed key gets (never more than the partition count)"),
      topic_numeric<&TopicSettings::salt_share>(
          "salt_share", 0, 1000, true,
          "salts = `ceil(share × partitions / salt_share)` clamped to `[min_salts, "
          "max_salts]`; water-filling drops salts it does not need"),
      topic_numeric<&TopicSettings::salt_search_limit>(
          "salt_search_limit", 1, 4294967295.0, false,
          "salts `0 … limit-1` are tried when building verified tables"),
      form_topic("hash", "—", "murmur2, crc32 or fnv1a", apply_hash,
                 "fix the topic's partitioner family (`murmur2`, `crc32`, `fnv1a`); reports "
                 "naming another get `409`. Unset: the first report's family is adopted and later "
                 "reports must match it. Set, it holds from the first answer: the version-0 list "
                 "of `GET /v1/hotkeys` (before any report) and every list carry it. Producers "
                 "must use the same family (the client's `hotkey.hash` or librdkafka's "
                 "`partitioner`)."),
      form_topic("separator", "—", "1-8 bytes, no decimal digit", apply_separator,
                 "fix the salted-key separator (1–8 bytes, no digits). Unset: the first report's. "
                 "Set, every list (the version-0 one included) carries it, and the client salts "
                 "with the separator of the list it receives, so producers need no setting of "
                 "their own. A report naming another separator is still accepted (the separator "
                 "does not change what a report counts; a client that has not received its first "
                 "list yet reports the default `#`), unlike a report in another hash family. `GET "
                 "/v1/topics/{t}` shows the effective hash, separator and settings (`settings`).")};
  return all;
}

std::string SettingInfo::range() const {
  if (form != nullptr) return form;
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.15g", v);
    return std::string(buf);
  };
  if (lo_open) return "> " + num(lo) + " and <= " + num(hi);
  return num(lo) + ".." + num(hi);
}

namespace {

void check_range(const SettingInfo& s, double v) {
  const bool ok = std::isfinite(v) && (s.lo_open ? v > s.lo : v >= s.lo) && v <= s.hi;
  if (!ok) {
    char got[32];
    std::snprintf(got, sizeof(got), "%.15g", v);
    fail(std::string(s.name) + " must be " + s.range() + ", got " + got);
  }
}

}  // namespace

void TopicSettings::validate() const {
  for (const SettingInfo& s : config_settings()) {
    if (s.get_topic != nullptr) check_range(s, s.get_topic(*this));
  }
  if (cold_fraction > hot_fraction) {
    fail("cold_fraction must be <= hot_fraction (" + std::to_string(hot_fraction) + ")");
  }
  if (max_salts < min_salts)
    fail("max_salts must be >= min_salts (" + std::to_string(min_salts) + ")");
  if (separator && !valid_separator(*separator)) {
    fail("separator must be 1-8 bytes, none of them a decimal digit");
  }
}

uint32_t CoordinatorConfig::connection_limit() const {
  return max_connections != 0 ? max_connections : http_threads + max_waiters;
}

const TopicSettings& CoordinatorConfig::settings_for(std::string_view topic) const {
  auto it = topic_overrides.find(topic);
  return it == topic_overrides.end() ? defaults : it->second;
}

void CoordinatorConfig::validate() const {
  for (const SettingInfo& s : config_settings()) {
    if (s.get != nullptr) check_range(s, s.get(*this));
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    fail("TLS needs both tls_cert_file (--tls-cert) and tls_key_file (--tls-key), got only " +
         std::string(tls_cert_file.empty() ? "the key" : "the certificate"));
  }
  if (!tls_client_ca_file.empty() && tls_cert_file.empty()) {
    fail("tls_client_ca_file needs tls_cert_file and tls_key_file (mutual TLS is TLS)");
  }
  try {
    defaults.validate();
  } catch (const std::invalid_argument& e) {
    fail(std::string(e.what()) + " (in 'defaults')");
  }
  cluster.validate();
  for (const auto& [name, s] : topic_overrides) {
    if (!valid_topic_name(name)) fail("topic override '" + name + "' is not a valid topic name");
    try {
      s.validate();
    } catch (const std::invalid_argument& e) {
      fail(std::string(e.what()) + " (in 'topics." + name + "')");
    }
  }
}

void apply_config_json(CoordinatorConfig& c, std::string_view text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail(std::string("config: not valid JSON: ") + e.what());
  }
  if (!j.is_object()) fail("config: the document must be a JSON object");
  // Defaults first so per-topic sections inherit them regardless of key order.
  if (auto it = j.find("defaults"); it != j.end())
    apply_topic_settings(c.defaults, *it, "defaults");
  for (const auto& [name, v] : j.items()) {
    if (name == "defaults") {
      continue;
    } else if (name == "topics") {
      if (!v.is_object()) fail("config: 'topics' must be an object of topic: settings");
      for (const auto& [topic, sv] : v.items()) {
        if (!valid_topic_name(topic)) fail("config: 'topics." + topic + "' is not a topic name");
        TopicSettings s = c.defaults;
        apply_topic_settings(s, sv, "topics." + topic);
        c.topic_overrides[topic] = s;
      }
    } else if (const SettingInfo* setting = find_setting(name, false)) {
      setting->apply(c, v, name);
    } else {
      fail(unknown_setting("", name));
    }
  }
}

void add_operator_token(CoordinatorConfig& c, const std::string& spec) { add_token(c, spec); }

void apply_listen(CoordinatorConfig& c, const std::string& host_port) {
  parse_listen(c, host_port);
}

}  // namespace hotkey::coordinator
