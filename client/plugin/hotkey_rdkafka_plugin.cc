// libhotkey-rdkafka.so: a librdkafka plugin (plugin.library.paths=libhotkey-rdkafka) that gives
// any librdkafka-based producer (kcat, confluent-kafka-python, confluent-kafka-go, ...) hot-key
// routing in `route` mode by configuration alone. docs/CLIENT.md, "Adopting without code
// changes", is the user's page; this comment says how it hooks into librdkafka.
//
// Interceptors (rdkafka.h), one state object per configuration and one per producer handle:
//   conf_init      librdkafka calls it when plugin.library.paths names us: registers the
//                  configuration interceptors below on that rd_kafka_conf_t.
//   on_conf_set    takes and validates every hotkey.* property (a bad value or an unknown
//                  hotkey.* name is RD_KAFKA_CONF_INVALID naming the property); notes
//                  `partitioner`; everything else goes on to librdkafka.
//   on_conf_dup    a fresh state for the copy; librdkafka replays the hotkey.* values it saw
//                  accepted through on_conf_set (honouring the dup filter).
//   on_new         per producer: builds its own hotkey::client::Client (through
//                  RdkafkaPartitioner) and installs the partitioner callback on the handle's
//                  default topic configuration. Running after every conf_set call, it wins
//                  whatever the order of the application's properties. Missing
//                  hotkey.coordinator.url or an unusable configuration: nothing is installed
//                  (plain librdkafka routing) and the reason goes to librdkafka's log (an
//                  interceptor's on_new error is the one path a plugin has to that log).
//   on_send        topics created with the application's own topic configuration (kcat does
//                  this) never see the default topic configuration's callback: for those, a
//                  hot-key record's partition is set here, before librdkafka's partitioner
//                  runs (librdkafka only partitions records still at RD_KAFKA_PARTITION_UA).
//                  Their partition counts come from a metadata query on a background thread.
//   on_destroy     stops that producer's client (interrupting a pending long-poll).
// Nothing is global: two producers in one process have two clients.
//
// One librdkafka per process: the plugin calls the librdkafka that loaded it (rdkafka_forward.cc
// binds its rd_kafka_* calls in conf_init), so a binding with its own bundled copy (the PyPI
// confluent-kafka wheels) works like one on the system's; a copy it cannot reach (statically
// linked, symbols not exported: confluent-kafka-go's default build) is refused at conf_init.
#include <librdkafka/rdkafka.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "hotkey/client/client.h"
#include "hotkey/client/config.h"
#include "hotkey/client/rdkafka.h"
#include "rdkafka_forward.h"

namespace hotkey::client::plugin {
namespace {

constexpr const char* kIcName = "hotkey";
// Plugin-only property: how long rd_kafka_new() waits for the lists of hotkey.topics, so a
// short-lived producer (a kcat pipeline) routes its first records with the current list.
constexpr std::string_view kStartupWait = "hotkey.startup.wait.ms";
constexpr uint32_t kStartupWaitMax = 600000;
// Plugin-only property: a file the producer's statistics (hotkey::client::to_json) are written
// to every kStatsEvery and when the producer is destroyed, replaced atomically (a temporary
// file renamed over it). The plugin's application cannot call the client, so this is where
// its statistics (local tables among them) are read.
constexpr std::string_view kStatsFile = "hotkey.stats.file";
constexpr std::chrono::seconds kStatsEvery{1};

void copy_err(char* errstr, size_t errstr_size, const std::string& msg) {
  if (errstr == nullptr || errstr_size == 0) return;
  std::snprintf(errstr, errstr_size, "%s", msg.c_str());
}

uint32_t parse_startup_wait(std::string_view value) {
  uint32_t out = 0;
  bool ok = !value.empty() && value.size() <= 9;
  for (char c : value) {
    if (c < '0' || c > '9') ok = false;
  }
  if (ok) out = static_cast<uint32_t>(std::stoul(std::string(value)));
  if (!ok || out > kStartupWaitMax) {
    throw std::invalid_argument("property " + std::string(kStartupWait) + "=\"" +
                                std::string(value) + "\": expected an integer in [0, " +
                                std::to_string(kStartupWaitMax) + "]");
  }
  return out;
}

// Checks one hotkey.* property on its own (std::invalid_argument naming it). Checks that need
// several properties (backoff.max >= backoff.initial, ssl.* with https://) run in on_new, when
// the configuration is complete, so the order of conf_set calls never matters.
void check_stats_file(std::string_view value) {
  const std::filesystem::path path(value);
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  std::error_code ec;
  if (value.empty() || !path.has_filename() || !std::filesystem::is_directory(dir, ec)) {
    throw std::invalid_argument("property " + std::string(kStatsFile) + "=\"" + std::string(value) +
                                "\": expected a file path in an existing directory");
  }
}

void validate_property(const std::string& name, const std::string& value) {
  if (name == kStartupWait) {
    parse_startup_wait(value);
    return;
  }
  if (name == kStatsFile) {
    check_stats_file(value);
    return;
  }
  if (name == "hotkey.routing.mode" && value != "route") {
    throw std::invalid_argument("property hotkey.routing.mode=\"" + value +
                                "\": the librdkafka plugin routes in route mode only (the key "
                                "stays; rekey needs hotkey::Producer)");
  }
  if (name == "hotkey.salt.policy" && value == "value_hash") {
    throw std::invalid_argument(
        "property hotkey.salt.policy=\"value_hash\": the librdkafka plugin never sees the "
        "payload (use wrr or random)");
  }
  Properties one{{name, value}};
  // Companions that keep the single-property parse from tripping on a pairing rule.
  if (name == "hotkey.coordinator.ssl.certificate.location") {
    one["hotkey.coordinator.ssl.key.location"] = value;
  } else if (name == "hotkey.coordinator.ssl.key.location") {
    one["hotkey.coordinator.ssl.certificate.location"] = value;
  } else if (name == "hotkey.backoff.max.ms") {
    one["hotkey.backoff.initial.ms"] = "1";
  } else if (name == "hotkey.backoff.initial.ms") {
    one["hotkey.backoff.max.ms"] = "3600000";
  } else if (name == "hotkey.transport" && value == "kafka") {
    one["hotkey.kafka.bootstrap.servers"] = "placeholder:9092";  // on_new reads the real one
  } else if (name.starts_with("hotkey.kafka.")) {
    one["hotkey.transport"] = "kafka";
    if (name != "hotkey.kafka.bootstrap.servers") {
      one["hotkey.kafka.bootstrap.servers"] = "placeholder:9092";
    }
  }
  parse_client_config(one);
}

// Per rd_kafka_conf_t.
struct ConfState {
  Properties props;                        // accepted hotkey.* properties
  std::optional<std::string> partitioner;  // `partitioner` as set on this conf after loading
};

// Per rd_kafka_t (producer).
class RkState {
 public:
  RkState(rd_kafka_t* rk, std::unique_ptr<RdkafkaPartitioner> part, std::string stats_file)
      : rk_(rk),
        part_(std::move(part)),
        uid_(next_uid_.fetch_add(1)),
        stats_file_(std::move(stats_file)) {
    if (!stats_file_.empty()) stats_ = std::thread([this] { stats_loop(); });
  }
  ~RkState() { stop(); }
  RkState(const RkState&) = delete;
  RkState& operator=(const RkState&) = delete;

  RdkafkaPartitioner& partitioner() { return *part_; }

  // Stops the metadata thread, sends the current window's report (short-lived producers such
  // as a kcat pipeline would otherwise never be counted), then stops the client (its reporter
  // and subscribers, interrupting a pending long-poll).
  void stop() {
    if (part_) part_->client().report_now();
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (metadata_.joinable()) metadata_.join();
    if (stats_.joinable()) {
      stats_.join();
      write_stats();  // the last figures, after the final report
    }
    part_.reset();
  }

  // A record of a topic the default topic configuration's callback does not route.
  void on_send(rd_kafka_message_t* msg) noexcept {
    if (!part_) return;
    Client& client = part_->client();
    try {
      TopicId id = foreign_topic_id(msg->rkt);
      const Router& router = client.router();
      int32_t cnt = router.live_partitions(id);
      if (cnt < 1) {
        // No metadata answer yet: the coordinator's list knows the count it was planned for.
        if (auto list = router.list(id)) cnt = list->partitions;
      }
      if (cnt < 1) {
        client.record(id, msg->key, msg->key_len, -1, false);
        return;
      }
      RouteDecision d = client.route(id, msg->key, msg->key_len, {}, cnt);
      if (d.salted && d.partition >= 0 && d.partition < cnt) msg->partition = d.partition;
    } catch (...) {
      // Registration failed (too many topics, out of memory): librdkafka partitions it.
    }
  }

 private:
  struct CacheEntry {
    uint64_t owner = 0;
    const rd_kafka_topic_t* rkt = nullptr;
    TopicId id = 0;
  };
  static thread_local std::array<CacheEntry, 8> t_cache_;
  static std::atomic<uint64_t> next_uid_;

  TopicId foreign_topic_id(const rd_kafka_topic_t* rkt) {
    CacheEntry& e = t_cache_[(reinterpret_cast<uintptr_t>(rkt) >> 6) % t_cache_.size()];
    if (e.owner == uid_ && e.rkt == rkt) return e.id;
    std::string name = rd_kafka_topic_name(rkt);
    TopicId id = part_->client().topic(name);
    {
      std::lock_guard lock(mu_);
      bool known = false;
      for (const auto& [n, i] : foreign_) known = known || i == id;
      if (!known) {
        foreign_.emplace_back(name, id);
        // The handle is complete by the first send (on_new runs too early for a query).
        if (!metadata_.joinable()) metadata_ = std::thread([this] { metadata_loop(); });
      }
    }
    cv_.notify_all();
    e = CacheEntry{uid_, rkt, id};
    return id;
  }

  // Partition counts of the foreign topics from librdkafka's metadata: every second until
  // each has one, then every 30 s (partitions can be added to a live topic).
  void metadata_loop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      auto todo = foreign_;
      lock.unlock();
      bool all_known = true;
      for (const auto& [name, id] : todo) {
        int32_t cnt = query_partitions(name);
        if (cnt > 0) {
          part_->client().router().observe_partitions(id, cnt);
        } else {
          all_known = false;
        }
      }
      lock.lock();
      if (foreign_.size() != todo.size()) continue;
      cv_.wait_for(lock, all_known ? std::chrono::seconds(30) : std::chrono::seconds(1),
                   [&] { return stopping_ || foreign_.size() != todo.size(); });
    }
  }

  // hotkey.stats.file: the statistics every kStatsEvery until stop().
  void stats_loop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      write_stats();
      lock.lock();
      cv_.wait_for(lock, kStatsEvery, [&] { return stopping_; });
    }
  }

  void write_stats() noexcept {
    try {
      const std::string json = to_json(part_->client().stats()) + "\n";
      const std::string tmp = stats_file_ + ".tmp";
      {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << json;
        if (!out) return;
      }
      std::filesystem::rename(tmp, stats_file_);
    } catch (...) {
      // A full disk or a removed directory: the next write tries again.
    }
  }

  int32_t query_partitions(const std::string& name) {
    // Finds the application's handle (a new reference) rather than creating a second one.
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_, name.c_str(), nullptr);
    if (rkt == nullptr) return 0;
    const rd_kafka_metadata_t* md = nullptr;
    int32_t cnt = 0;
    if (rd_kafka_metadata(rk_, 0, rkt, &md, 2000) == RD_KAFKA_RESP_ERR_NO_ERROR && md != nullptr) {
      for (int i = 0; i < md->topic_cnt; ++i) {
        if (md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR && name == md->topics[i].topic) {
          cnt = md->topics[i].partition_cnt;
        }
      }
    }
    if (md != nullptr) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    return cnt;
  }

  rd_kafka_t* rk_;
  std::unique_ptr<RdkafkaPartitioner> part_;
  uint64_t uid_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                                 // guarded by mu_
  std::vector<std::pair<std::string, TopicId>> foreign_;  // guarded by mu_
  std::thread metadata_;                                  // started under mu_
  const std::string stats_file_;
  std::thread stats_;
};

thread_local std::array<RkState::CacheEntry, 8> RkState::t_cache_;
std::atomic<uint64_t> RkState::next_uid_{1};

// ---- producer handle interceptors -------------------------------------------------------------

rd_kafka_resp_err_t on_send(rd_kafka_t*, rd_kafka_message_t* msg, void* ic_opaque) {
  auto* st = static_cast<RkState*>(ic_opaque);
  if (msg == nullptr || msg->key == nullptr || msg->partition != RD_KAFKA_PARTITION_UA) {
    return RD_KAFKA_RESP_ERR_NO_ERROR;
  }
  // Topics from the default topic configuration carry our callback and its opaque.
  if (rd_kafka_topic_opaque(msg->rkt) == &st->partitioner()) return RD_KAFKA_RESP_ERR_NO_ERROR;
  st->on_send(msg);
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

rd_kafka_resp_err_t on_destroy(rd_kafka_t*, void* ic_opaque) {
  delete static_cast<RkState*>(ic_opaque);
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

// The family of the producer: librdkafka's `partitioner` (of the handle's default topic
// configuration), or hotkey.hash where the partitioner is left at its default (kcat passes
// `partitioner` to its own topic configuration, which the plugin never sees).
HashFamily producer_family(const rd_kafka_conf_t* conf, const ConfState& st) {
  std::string partitioner = "consistent_random";
  if (const rd_kafka_topic_conf_t* tconf =
          rd_kafka_conf_get_default_topic_conf(const_cast<rd_kafka_conf_t*>(conf))) {
    char buf[64];
    size_t size = sizeof(buf);
    if (rd_kafka_topic_conf_get(tconf, "partitioner", buf, &size) == RD_KAFKA_CONF_OK) {
      partitioner = buf;
    }
  }
  HashFamily from_partitioner = family_of_rdkafka_partitioner(partitioner);
  auto hash = st.props.find("hotkey.hash");
  if (hash == st.props.end()) return from_partitioner;
  HashFamily from_hash = *parse_hash_family(hash->second);
  if (from_hash != from_partitioner && partitioner != "consistent_random") {
    throw std::invalid_argument("hotkey.hash=" + hash->second + " disagrees with partitioner=" +
                                partitioner + " (set one of them, or both to the same family)");
  }
  return from_hash;
}

rd_kafka_resp_err_t on_new(rd_kafka_t* rk, const rd_kafka_conf_t* conf, void* ic_opaque,
                           char* errstr, size_t errstr_size) {
  const auto* st = static_cast<const ConfState*>(ic_opaque);
  if (rd_kafka_type(rk) != RD_KAFKA_PRODUCER) return RD_KAFKA_RESP_ERR_NO_ERROR;
  Properties props = st->props;
  uint32_t startup_wait = 0;
  if (auto it = props.find(kStartupWait); it != props.end()) {
    startup_wait = parse_startup_wait(it->second);
    props.erase(it);
  }
  std::string stats_file;
  if (auto it = props.find(kStatsFile); it != props.end()) {
    stats_file = it->second;
    props.erase(it);
  }
  auto transport = props.find("hotkey.transport");
  const bool kafka_transport = transport != props.end() && transport->second == "kafka";
  if (kafka_transport) {
    // The kafka transport reaches the cluster with the producer's own connection settings
    // (parse_client_config picks bootstrap.servers, security.*, ssl.*, sasl.* out of them).
    // Only what the application set (values that differ from a fresh configuration's), read
    // with conf_get: the dump redacts secrets such as sasl.password.
    auto get = [](const rd_kafka_conf_t* from, const std::string& name) {
      size_t size = 0;
      if (rd_kafka_conf_get(from, name.c_str(), nullptr, &size) != RD_KAFKA_CONF_OK || size == 0) {
        return std::string();
      }
      std::string value(size, '\0');
      if (rd_kafka_conf_get(from, name.c_str(), value.data(), &size) != RD_KAFKA_CONF_OK) {
        return std::string();
      }
      value.resize(std::strlen(value.c_str()));
      return value;
    };
    rd_kafka_conf_t* defaults = rd_kafka_conf_new();
    size_t cnt = 0;
    const char** dump = rd_kafka_conf_dump(const_cast<rd_kafka_conf_t*>(conf), &cnt);
    for (size_t i = 0; i + 1 < cnt; i += 2) {
      std::string name = dump[i];
      if (is_client_property(name) || props.count(name) != 0) continue;
      std::string value = get(conf, name);
      if (!value.empty() && value != get(defaults, name)) props[name] = value;
    }
    rd_kafka_conf_dump_free(dump, cnt);
    rd_kafka_conf_destroy(defaults);
  }
  auto url = props.find("hotkey.coordinator.url");
  if (!kafka_transport && (url == props.end() || url->second.empty())) {
    copy_err(errstr, errstr_size,
             "hotkey plugin: hotkey.coordinator.url is not set: this producer routes plain "
             "(librdkafka's partitioner; no reports, no hot-key lists)");
    return RD_KAFKA_RESP_ERR__INVALID_ARG;
  }
  std::unique_ptr<RkState> state;
  try {
    HashFamily family = producer_family(conf, *st);
    props["hotkey.hash"] = std::string(to_string(family));
    props["hotkey.routing.mode"] = "route";
    auto part = std::make_unique<RdkafkaPartitioner>(props);
    // rk's own copy of the configuration; its default topic configuration is what every
    // topic created without an explicit one duplicates, so installing here is final.
    part->install(const_cast<rd_kafka_conf_t*>(conf));
    state = std::make_unique<RkState>(rk, std::move(part), std::move(stats_file));
  } catch (const std::exception& e) {
    copy_err(errstr, errstr_size,
             std::string("hotkey plugin: ") + e.what() + ": this producer routes plain");
    return RD_KAFKA_RESP_ERR__INVALID_ARG;
  }
  RkState* raw = state.get();
  if (rd_kafka_interceptor_add_on_destroy(rk, kIcName, on_destroy, raw) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    // Cannot clean up on destroy: do not route rather than leak threads into the process.
    // The callback is already on the default topic configuration: neutralize it.
    copy_err(errstr, errstr_size, "hotkey plugin: cannot register on_destroy: routes plain");
    rd_kafka_topic_conf_t* tconf =
        rd_kafka_conf_get_default_topic_conf(const_cast<rd_kafka_conf_t*>(conf));
    if (tconf != nullptr) {
      rd_kafka_topic_conf_set_partitioner_cb(tconf, rd_kafka_msg_partitioner_consistent_random);
      rd_kafka_topic_conf_set_opaque(tconf, nullptr);
    }
    return RD_KAFKA_RESP_ERR__CONFLICT;
  }
  state.release();
  rd_kafka_interceptor_add_on_send(rk, kIcName, on_send, raw);
  if (startup_wait > 0) {
    Client& client = raw->partitioner().client();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(startup_wait);
    for (const auto& topic : client.config().topics) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      client.wait_for_version(client.topic(topic), 1, left);
    }
  }
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

// ---- configuration interceptors ---------------------------------------------------------------

bool attach(rd_kafka_conf_t* conf, ConfState* st);

rd_kafka_conf_res_t on_conf_set(rd_kafka_conf_t*, const char* name, const char* val, char* errstr,
                                size_t errstr_size, void* ic_opaque) {
  auto* st = static_cast<ConfState*>(ic_opaque);
  std::string_view n(name);
  if (n == "partitioner" || n == "topic.partitioner") {
    if (val == nullptr) {
      st->partitioner.reset();
      return RD_KAFKA_CONF_UNKNOWN;
    }
    try {
      HashFamily family = family_of_rdkafka_partitioner(val);
      auto hash = st->props.find("hotkey.hash");
      if (hash != st->props.end() && *parse_hash_family(hash->second) != family) {
        copy_err(errstr, errstr_size,
                 "property partitioner=\"" + std::string(val) + "\" disagrees with hotkey.hash=" +
                     hash->second + " (the hotkey plugin routes with one family)");
        return RD_KAFKA_CONF_INVALID;
      }
    } catch (const std::exception& e) {
      copy_err(errstr, errstr_size, std::string("hotkey plugin: ") + e.what());
      return RD_KAFKA_CONF_INVALID;
    }
    st->partitioner = val;
    return RD_KAFKA_CONF_UNKNOWN;  // librdkafka still sets it
  }
  if (!is_client_property(n)) return RD_KAFKA_CONF_UNKNOWN;
  if (val == nullptr) {  // librdkafka passes an empty value as NULL: back to the default
    st->props.erase(std::string(n));
    return RD_KAFKA_CONF_OK;
  }
  try {
    validate_property(std::string(n), val);
    if (n == "hotkey.hash" && st->partitioner) {
      HashFamily mine = *parse_hash_family(val);
      if (family_of_rdkafka_partitioner(*st->partitioner) != mine) {
        throw std::invalid_argument("property hotkey.hash=\"" + std::string(val) +
                                    "\" disagrees with partitioner=" + *st->partitioner);
      }
    }
  } catch (const std::exception& e) {
    copy_err(errstr, errstr_size, e.what());
    return RD_KAFKA_CONF_INVALID;
  }
  st->props[std::string(n)] = val;
  return RD_KAFKA_CONF_OK;
}

rd_kafka_resp_err_t on_conf_dup(rd_kafka_conf_t* new_conf, const rd_kafka_conf_t*, size_t,
                                const char**, void* ic_opaque) {
  const auto* old = static_cast<const ConfState*>(ic_opaque);
  auto st = std::make_unique<ConfState>();
  // hotkey.* values come back through on_conf_set (librdkafka replays what it saw accepted).
  st->partitioner = old->partitioner;
  if (attach(new_conf, st.get())) st.release();
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

rd_kafka_resp_err_t on_conf_destroy(void* ic_opaque) {
  delete static_cast<ConfState*>(ic_opaque);
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

// Registers the configuration interceptors with `st` as their opaque. False when this
// configuration already has them (a duplicated configuration whose plugin.library.paths loads
// the plugin again after on_conf_dup attached it).
bool attach(rd_kafka_conf_t* conf, ConfState* st) {
  if (rd_kafka_conf_interceptor_add_on_conf_set(conf, kIcName, on_conf_set, st) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    return false;
  }
  rd_kafka_conf_interceptor_add_on_conf_dup(conf, kIcName, on_conf_dup, st);
  rd_kafka_conf_interceptor_add_on_conf_destroy(conf, kIcName, on_conf_destroy, st);
  rd_kafka_conf_interceptor_add_on_new(conf, kIcName, on_new, st);
  return true;
}

}  // namespace
}  // namespace hotkey::client::plugin

// The plugin entry point librdkafka looks up after dlopen().
extern "C" rd_kafka_resp_err_t conf_init(rd_kafka_conf_t* conf, void** plug_opaquep, char* errstr,
                                         size_t errstr_size) {
  using hotkey::client::plugin::ConfState;
  if (plug_opaquep != nullptr) *plug_opaquep = nullptr;
  try {
    // The caller is librdkafka's plugin loader (rd_kafka_conf_set of plugin.library.paths).
    std::string refused = hotkey::client::plugin::bind_librdkafka(__builtin_return_address(0));
    if (!refused.empty()) {
      hotkey::client::plugin::copy_err(errstr, errstr_size, refused);
      return RD_KAFKA_RESP_ERR__INVALID_ARG;
    }
    auto st = std::make_unique<ConfState>();
    if (hotkey::client::plugin::attach(conf, st.get())) st.release();
  } catch (const std::exception& e) {
    hotkey::client::plugin::copy_err(errstr, errstr_size,
                                     std::string("hotkey plugin: ") + e.what());
    return RD_KAFKA_RESP_ERR__FAIL;
  }
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}
