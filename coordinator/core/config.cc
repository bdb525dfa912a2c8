#include "config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
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

void apply_topic_settings(TopicSettings& s, const json& j, const std::string& where) {
  if (!j.is_object()) fail("config: '" + where + "' must be an object");
  for (const auto& [name, v] : j.items()) {
    const std::string path = where + "." + name;
    if (name == "hot_fraction") {
      s.hot_fraction = get_number<double>(v, path);
    } else if (name == "min_rate") {
      s.min_rate = get_number<double>(v, path);
    } else if (name == "cold_fraction") {
      s.cold_fraction = get_number<double>(v, path);
    } else if (name == "hold_ms") {
      s.hold_ms = get_number<int64_t>(v, path);
    } else if (name == "balance_target") {
      s.balance_target = get_number<double>(v, path);
    } else if (name == "balance_min_fraction") {
      s.balance_min_fraction = get_number<double>(v, path);
    } else if (name == "churn_tolerance") {
      s.churn_tolerance = get_number<double>(v, path);
    } else if (name == "max_hot_keys") {
      s.max_hot_keys = get_number<uint32_t>(v, path);
    } else if (name == "min_salts") {
      s.min_salts = get_number<uint32_t>(v, path);
    } else if (name == "max_salts") {
      s.max_salts = get_number<uint32_t>(v, path);
    } else if (name == "salt_share") {
      s.salt_share = get_number<double>(v, path);
    } else if (name == "salt_search_limit") {
      s.salt_search_limit = get_number<uint32_t>(v, path);
    } else if (name == "hash") {
      auto family = parse_hash_family(get_string(v, path));
      if (!family) fail("config: '" + path + "' must be murmur2, crc32 or fnv1a");
      s.hash = *family;
    } else if (name == "separator") {
      s.separator = get_string(v, path);
    } else {
      fail(unknown_setting(where, name));
    }
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

void add_operator_token(CoordinatorConfig& c, const std::string& spec) {
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

std::string read_file(const std::string& path, const std::string& what = "config file") {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read " + what + " '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("cannot read " + what + " '" + path + "'");
  return ss.str();
}

// A secret file must not be readable or writable by other users, nor writable by its group:
// anyone who can read it acts as an operator, anyone who can write it chooses the token.
std::string read_secret_file(const std::string& path, const std::string& setting) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    fail(setting + ": cannot read '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) fail(setting + ": '" + path + "' is not a regular file");
  if ((st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    fail(setting + ": '" + path + "' has mode " + mode +
         ": other users can read or change it; chmod 600 (or 640 for a trusted group)");
  }
  return read_file(path, setting);
}

std::string trim(std::string s) {
  while (!s.empty() &&
         (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) {
    s.pop_back();
  }
  size_t start = 0;
  while (start < s.size() && (s[start] == ' ' || s[start] == '\t')) ++start;
  return s.substr(start);
}

void check_readable(const std::string& path, const std::string& setting) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(setting + ": cannot read '" + path + "': " + std::strerror(errno));
}

}  // namespace

#define HK_GET(field) [](const CoordinatorConfig& c) { return static_cast<double>(c.field); }
#define HK_TOPIC(field) [](const TopicSettings& t) { return static_cast<double>(t.field); }
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<SettingInfo>& config_settings() {
  static const std::vector<SettingInfo> all = {
      {"listen", "service", "\"127.0.0.1:8470\"", "HOST:PORT, port 0..65535"},
      {"data_dir", "service", "—", "a directory path (required here or as --data)"},
      {"operator_tokens", "service", "{}", "{\"name\": \"token\"}, tokens >= 8 bytes"},
      {"producer_token", "service", "\"\"", "a token"},
      {"metrics_require_token", "service", "false", "true or false"},
      {"operator_tokens_file", "service", "\"\"", "a file path (mode 0600 or 0640)"},
      {"producer_token_file", "service", "\"\"", "a file path (mode 0600 or 0640)"},
      {"tls_cert_file", "service", "\"\"", "a PEM file path"},
      {"tls_key_file", "service", "\"\"", "a PEM file path"},
      {"tls_client_ca_file", "service", "\"\"", "a PEM file path"},
      {"kafka", "service", "—", "an object of cluster-mode settings (see Cluster mode)"},
      {"http_threads", "service", "16", nullptr, 2, 10000, false, HK_GET(http_threads)},
      {"max_waiters", "service", "512", nullptr, 1, 100000, false, HK_GET(max_waiters)},
      {"max_wait_ms", "service", "60000", nullptr, 1, 3600000, false, HK_GET(max_wait_ms)},
      {"max_body_bytes", "service", "8388608", nullptr, 1024, 1073741824, false,
       HK_GET(max_body_bytes)},
      {"keep_alive_max_count", "service", "1000", nullptr, 1, 1000000, false,
       HK_GET(keep_alive_max_count)},
      {"keep_alive_timeout_s", "service", "10", nullptr, 1, 3600, false,
       HK_GET(keep_alive_timeout_s)},
      {"max_connections", "service", "0", nullptr, 0, 1000000, false, HK_GET(max_connections)},
      {"max_connections_per_client", "service", "0", nullptr, 0, 1000000, false,
       HK_GET(max_connections_per_client)},
      {"read_timeout_s", "service", "5", nullptr, 1, 3600, false, HK_GET(read_timeout_s)},
      {"write_timeout_s", "service", "5", nullptr, 1, 3600, false, HK_GET(write_timeout_s)},
      {"request_timeout_s", "service", "30", nullptr, 1, 86400, false, HK_GET(request_timeout_s)},
      {"report_rate_per_client", "service", "0", nullptr, 0, 1000000, false,
       HK_GET(report_rate_per_client)},
      {"report_burst_per_client", "service", "100", nullptr, 1, 1000000, false,
       HK_GET(report_burst_per_client)},
      {"operator_rate_per_client", "service", "0", nullptr, 0, 1000000, false,
       HK_GET(operator_rate_per_client)},
      {"operator_burst_per_client", "service", "100", nullptr, 1, 1000000, false,
       HK_GET(operator_burst_per_client)},
      {"rate_limit_max_clients", "service", "100000", nullptr, 1, 10000000, false,
       HK_GET(rate_limit_max_clients)},
      {"max_items", "service", "65536", nullptr, 1, 1048576, false, HK_GET(limits.max_items)},
      {"max_key_bytes", "service", "4096", nullptr, 1, 65536, false, HK_GET(limits.max_key_bytes)},
      {"max_partitions", "service", "100000", nullptr, 1, 100000, false,
       HK_GET(limits.max_partitions)},
      {"max_topics", "service", "10000", nullptr, 1, 1000000, false, HK_GET(max_topics)},
      {"max_tracked_partitions", "service", "1000000", nullptr, 1, 1000000000, false,
       HK_GET(max_tracked_partitions)},
      {"audit_max_limit", "service", "1000", nullptr, 1, 100000, false, HK_GET(audit_max_limit)},
      {"epoch_ms", "window", "1000", nullptr, 10, 3600000, false, HK_GET(epoch_ms)},
      {"window_epochs", "window", "10", nullptr, 1, 3600, false, HK_GET(window_epochs)},
      {"sketch_capacity", "window", "4096", nullptr, 16, 1048576, false, HK_GET(sketch_capacity)},
      {"producer_timeout_ms", "window", "30000", nullptr, 1, 86400000, false,
       HK_GET(producer_timeout_ms)},
      {"plan_interval_ms", "window", "1000", nullptr, 10, 3600000, false, HK_GET(plan_interval_ms)},
      {"warmup_ms", "window", "5000", nullptr, 0, 86400000, false, HK_GET(warmup_ms)},
      {"topic_idle_ttl_ms", "window", "86400000", nullptr, 0, 31536000000.0, false,
       HK_GET(topic_idle_ttl_ms)},
      {"hot_fraction", "topic", "0.5", nullptr, 0, 1000, true, nullptr, HK_TOPIC(hot_fraction)},
      {"min_rate", "topic", "10", nullptr, 0, 1e12, false, nullptr, HK_TOPIC(min_rate)},
      {"cold_fraction", "topic", "0.25", nullptr, 0, 1000, true, nullptr, HK_TOPIC(cold_fraction)},
      {"hold_ms", "topic", "30000", nullptr, 0, 86400000, false, nullptr, HK_TOPIC(hold_ms)},
      {"balance_target", "topic", "1.03", nullptr, 1, 1000, false, nullptr,
       HK_TOPIC(balance_target)},
      {"balance_min_fraction", "topic", "0.02", nullptr, 0, 1000, false, nullptr,
       HK_TOPIC(balance_min_fraction)},
      {"churn_tolerance", "topic", "0.02", nullptr, 0, 1000, false, nullptr,
       HK_TOPIC(churn_tolerance)},
      {"max_hot_keys", "topic", "64", nullptr, 1, 100000, false, nullptr, HK_TOPIC(max_hot_keys)},
      {"min_salts", "topic", "2", nullptr, 1, 100000, false, nullptr, HK_TOPIC(min_salts)},
      {"max_salts", "topic", "256", nullptr, 1, 100000, false, nullptr, HK_TOPIC(max_salts)},
      {"salt_share", "topic", "0.05", nullptr, 0, 1000, true, nullptr, HK_TOPIC(salt_share)},
      {"salt_search_limit", "topic", "65536", nullptr, 1, 4294967295.0, false, nullptr,
       HK_TOPIC(salt_search_limit)},
      {"hash", "topic", "—", "murmur2, crc32 or fnv1a"},
      {"separator", "topic", "—", "1-8 bytes, no decimal digit"},
  };
  return all;
}
#undef HK_GET
#undef HK_TOPIC

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
    } else if (name == "listen") {
      parse_listen(c, get_string(v, name));
    } else if (name == "data_dir") {
      c.data_dir = get_string(v, name);
    } else if (name == "http_threads") {
      c.http_threads = get_number<uint32_t>(v, name);
    } else if (name == "max_waiters") {
      c.max_waiters = get_number<uint32_t>(v, name);
    } else if (name == "max_wait_ms") {
      c.max_wait_ms = get_number<uint32_t>(v, name);
    } else if (name == "max_body_bytes") {
      c.max_body_bytes = get_number<size_t>(v, name);
    } else if (name == "keep_alive_max_count") {
      c.keep_alive_max_count = get_number<uint32_t>(v, name);
    } else if (name == "keep_alive_timeout_s") {
      c.keep_alive_timeout_s = get_number<uint32_t>(v, name);
    } else if (name == "max_items") {
      c.limits.max_items = get_number<uint32_t>(v, name);
    } else if (name == "max_key_bytes") {
      c.limits.max_key_bytes = get_number<uint32_t>(v, name);
    } else if (name == "max_partitions") {
      c.limits.max_partitions = get_number<int32_t>(v, name);
    } else if (name == "epoch_ms") {
      c.epoch_ms = get_number<uint32_t>(v, name);
    } else if (name == "window_epochs") {
      c.window_epochs = get_number<uint32_t>(v, name);
    } else if (name == "sketch_capacity") {
      c.sketch_capacity = get_number<uint32_t>(v, name);
    } else if (name == "producer_timeout_ms") {
      c.producer_timeout_ms = get_number<int64_t>(v, name);
    } else if (name == "warmup_ms") {
      c.warmup_ms = get_number<int64_t>(v, name);
    } else if (name == "plan_interval_ms") {
      c.plan_interval_ms = get_number<uint32_t>(v, name);
    } else if (name == "max_topics") {
      c.max_topics = get_number<uint32_t>(v, name);
    } else if (name == "max_tracked_partitions") {
      c.max_tracked_partitions = get_number<uint64_t>(v, name);
    } else if (name == "topic_idle_ttl_ms") {
      c.topic_idle_ttl_ms = get_number<int64_t>(v, name);
    } else if (name == "audit_max_limit") {
      c.audit_max_limit = get_number<uint32_t>(v, name);
    } else if (name == "operator_tokens") {
      if (!v.is_object()) fail("config: 'operator_tokens' must be an object of name: token");
      for (const auto& [who, tok] : v.items()) {
        add_operator_token(c, who + "=" + get_string(tok, "operator_tokens." + who));
      }
    } else if (name == "producer_token") {
      c.producer_token = get_string(v, name);
    } else if (name == "operator_tokens_file") {
      c.operator_tokens_file = get_string(v, name);
    } else if (name == "producer_token_file") {
      c.producer_token_file = get_string(v, name);
    } else if (name == "tls_cert_file") {
      c.tls_cert_file = get_string(v, name);
    } else if (name == "tls_key_file") {
      c.tls_key_file = get_string(v, name);
    } else if (name == "tls_client_ca_file") {
      c.tls_client_ca_file = get_string(v, name);
    } else if (name == "report_rate_per_client") {
      c.report_rate_per_client = get_number<double>(v, name);
    } else if (name == "report_burst_per_client") {
      c.report_burst_per_client = get_number<uint32_t>(v, name);
    } else if (name == "operator_rate_per_client") {
      c.operator_rate_per_client = get_number<double>(v, name);
    } else if (name == "operator_burst_per_client") {
      c.operator_burst_per_client = get_number<uint32_t>(v, name);
    } else if (name == "rate_limit_max_clients") {
      c.rate_limit_max_clients = get_number<uint32_t>(v, name);
    } else if (name == "metrics_require_token") {
      if (!v.is_boolean()) fail("config: 'metrics_require_token' must be true or false");
      c.metrics_require_token = v.get<bool>();
    } else if (name == "max_connections") {
      c.max_connections = get_number<uint32_t>(v, name);
    } else if (name == "max_connections_per_client") {
      c.max_connections_per_client = get_number<uint32_t>(v, name);
    } else if (name == "read_timeout_s") {
      c.read_timeout_s = get_number<uint32_t>(v, name);
    } else if (name == "write_timeout_s") {
      c.write_timeout_s = get_number<uint32_t>(v, name);
    } else if (name == "request_timeout_s") {
      c.request_timeout_s = get_number<uint32_t>(v, name);
    } else if (name == "kafka") {
      apply_cluster_json(c.cluster, v);
    } else if (name == "topics") {
      if (!v.is_object()) fail("config: 'topics' must be an object of topic: settings");
      for (const auto& [topic, sv] : v.items()) {
        if (!valid_topic_name(topic)) fail("config: 'topics." + topic + "' is not a topic name");
        TopicSettings s = c.defaults;
        apply_topic_settings(s, sv, "topics." + topic);
        c.topic_overrides[topic] = s;
      }
    } else {
      fail(unknown_setting("", name));
    }
  }
}

void load_token_files(CoordinatorConfig& c) {
  if (!c.operator_tokens_file.empty()) {
    std::istringstream lines(read_secret_file(c.operator_tokens_file, "operator_tokens_file"));
    std::string line;
    int n = 0, found = 0;
    while (std::getline(lines, line)) {
      ++n;
      line = trim(line);
      if (line.empty() || line[0] == '#') continue;
      try {
        add_operator_token(c, line);
      } catch (const std::invalid_argument& e) {
        fail("operator_tokens_file '" + c.operator_tokens_file + "' line " + std::to_string(n) +
             ": " + e.what());
      }
      ++found;
    }
    if (found == 0) {
      fail("operator_tokens_file '" + c.operator_tokens_file +
           "' holds no token (one NAME=TOKEN per line)");
    }
  }
  if (!c.producer_token_file.empty()) {
    std::string token = trim(read_secret_file(c.producer_token_file, "producer_token_file"));
    if (token.empty() || token.find_first_of(" \t\r\n") != std::string::npos) {
      fail("producer_token_file '" + c.producer_token_file + "' must hold one token on one line");
    }
    if (token.size() < 8) {
      fail("producer_token_file '" + c.producer_token_file +
           "': the token must be at least 8 bytes");
    }
    c.producer_token = token;
  }
}

std::string usage_text() {
  return "usage: hotkey-coordinator --listen HOST:PORT --data DIR [--config FILE]\n"
         "                          [--operator-token [NAME=]TOKEN]... [--producer-token TOKEN]\n"
         "                          [--operator-token-file FILE] [--producer-token-file FILE]\n"
         "                          [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n"
         "\n"
         "  --listen HOST:PORT     address to serve HTTP on (default 127.0.0.1:8470)\n"
         "  --data DIR             RocksDB data directory (created when missing)\n"
         "  --config FILE          JSON config file (docs/CONFIGURATION.md); flags win\n"
         "  --operator-token SPEC  operator bearer token, NAME=TOKEN (repeatable);\n"
         "                         env HOTKEY_OPERATOR_TOKEN works too\n"
         "  --producer-token TOK   require this bearer token on reports and list reads;\n"
         "                         env HOTKEY_PRODUCER_TOKEN works too\n"
         "  --operator-token-file FILE\n"
         "                         operator tokens, one NAME=TOKEN per line (mode 0600);\n"
         "                         env HOTKEY_OPERATOR_TOKENS_FILE\n"
         "  --producer-token-file FILE\n"
         "                         the producer token (mode 0600); env HOTKEY_PRODUCER_TOKEN_FILE\n"
         "  --tls-cert FILE        serve HTTPS with this PEM certificate chain (env "
         "HOTKEY_TLS_CERT)\n"
         "  --tls-key FILE         ... and this PEM private key (env HOTKEY_TLS_KEY)\n"
         "  --tls-client-ca FILE   require client certificates signed by these CAs (mutual TLS;\n"
         "                         env HOTKEY_TLS_CLIENT_CA)\n"
         "  --help                 this text\n"
         "  --help-config          every config-file setting with its default and range\n"
         "\n" +
         std::string(cluster_usage_text());
}

std::string config_help_text() {
  std::string out =
      "Config file settings (--config FILE, a JSON object; docs/CONFIGURATION.md explains each).\n"
      "Detection settings go under \"defaults\" (every topic) or \"topics\": {\"<topic>\": "
      "{...}}.\n";
  const char* section = "";
  for (const SettingInfo& s : config_settings()) {
    if (std::string_view(section) != s.section) {
      section = s.section;
      std::string_view sv(section);
      out += sv == "service"  ? "\nService (top level):\n"
             : sv == "window" ? "\nAggregation window (top level):\n"
                              : "\nDetection and planning (under defaults or topics.<topic>):\n";
    }
    char line[256];
    std::snprintf(line, sizeof(line), "  %-28s default %-20s %s\n", s.name, s.default_value,
                  s.range().c_str());
    out += line;
  }
  return out;
}

std::optional<CoordinatorConfig> parse_command_line(int argc, const char* const* argv) {
  CoordinatorConfig c;
  std::optional<std::string> listen, data, config_file, producer_token;
  std::optional<std::string> operator_tokens_file, producer_token_file, tls_cert, tls_key,
      tls_client_ca;
  std::vector<std::string> operator_tokens;
  std::vector<std::pair<std::string, std::string>> cluster_flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_inline = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline = true;
    }
    auto next = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argc) fail("option " + arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h" || arg == "--help-config") return std::nullopt;
    if (arg == "--listen") {
      listen = next();
    } else if (arg == "--data") {
      data = next();
    } else if (arg == "--config") {
      config_file = next();
    } else if (arg == "--operator-token") {
      operator_tokens.push_back(next());
    } else if (arg == "--producer-token") {
      producer_token = next();
    } else if (arg == "--operator-token-file") {
      operator_tokens_file = next();
    } else if (arg == "--producer-token-file") {
      producer_token_file = next();
    } else if (arg == "--tls-cert") {
      tls_cert = next();
    } else if (arg == "--tls-key") {
      tls_key = next();
    } else if (arg == "--tls-client-ca") {
      tls_client_ca = next();
    } else if (is_cluster_flag(arg)) {
      cluster_flags.emplace_back(arg, next());
    } else {
      fail("unknown option '" + arg + "'");
    }
  }
  if (config_file) apply_config_json(c, read_file(*config_file));
  apply_cluster_env(c.cluster);
  for (const auto& [flag, v] : cluster_flags) apply_cluster_flag(c.cluster, flag, v);
  if (const char* env = std::getenv("HOTKEY_OPERATOR_TOKEN"); env && *env) {
    add_operator_token(c, env);
  }
  if (const char* env = std::getenv("HOTKEY_PRODUCER_TOKEN"); env && *env) {
    c.producer_token = env;
  }
  auto env_file = [](const char* name, std::string& into) {
    if (const char* env = std::getenv(name); env && *env) into = env;
  };
  env_file("HOTKEY_OPERATOR_TOKENS_FILE", c.operator_tokens_file);
  env_file("HOTKEY_PRODUCER_TOKEN_FILE", c.producer_token_file);
  env_file("HOTKEY_TLS_CERT", c.tls_cert_file);
  env_file("HOTKEY_TLS_KEY", c.tls_key_file);
  env_file("HOTKEY_TLS_CLIENT_CA", c.tls_client_ca_file);
  if (listen) parse_listen(c, *listen);
  if (data) c.data_dir = *data;
  if (operator_tokens_file) c.operator_tokens_file = *operator_tokens_file;
  if (producer_token_file) c.producer_token_file = *producer_token_file;
  if (tls_cert) c.tls_cert_file = *tls_cert;
  if (tls_key) c.tls_key_file = *tls_key;
  if (tls_client_ca) c.tls_client_ca_file = *tls_client_ca;
  // Token files first, so a token given on the command line wins over the file's.
  load_token_files(c);
  for (const auto& t : operator_tokens) add_operator_token(c, t);
  if (producer_token) c.producer_token = *producer_token;
  if (c.data_dir.empty()) fail("--data DIR is required (or data_dir in the config file)");
  c.validate();
  if (c.tls()) {
    check_readable(c.tls_cert_file, "tls_cert_file");
    check_readable(c.tls_key_file, "tls_key_file");
    if (!c.tls_client_ca_file.empty()) check_readable(c.tls_client_ca_file, "tls_client_ca_file");
  }
  return c;
}

}  // namespace hotkey::coordinator
