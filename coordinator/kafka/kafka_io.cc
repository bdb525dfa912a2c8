#include "kafka_io.h"

#include <condition_variable>
#include <memory>
#include <mutex>

namespace hotkey::coordinator::kafka {
namespace {

// The outcome of one awaited write, filled by the delivery report.
struct Delivery {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  int32_t partition = -1;
  int64_t offset = -1;
};

void delivery_cb(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  if (!m->_private) return;  // a list: the next republish covers a failure
  auto* holder = static_cast<std::shared_ptr<Delivery>*>(m->_private);
  {
    std::lock_guard lock((*holder)->mu);
    (*holder)->done = true;
    (*holder)->err = m->err;
    (*holder)->partition = m->partition;
    (*holder)->offset = m->offset;
  }
  (*holder)->cv.notify_all();
  delete holder;
}

constexpr size_t kMaxHeld = 200;

const char* level_name(int syslog_level) {
  return syslog_level <= 3   ? "error"
         : syslog_level == 4 ? "warn"
         : syslog_level <= 6 ? "info"
                             : "debug";
}

void on_log(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  auto* c = static_cast<Handles::Context*>(rd_kafka_opaque(rk));
  if (c == nullptr || c->log == nullptr) return;
  api::Json event{{"level", level_name(level)},
                  {"event", "librdkafka"},
                  {"client", rd_kafka_name(rk)},
                  {"facility", fac},
                  {"message", buf},
                  {"ts_ms", wall_ms()}};
  {
    std::lock_guard lock(c->mu);
    if (c->holding) {
      if (c->held.size() >= kMaxHeld) c->held.erase(c->held.begin());
      c->held.push_back(std::move(event));
      return;
    }
  }
  c->log->write(event);
}

void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                  void* opaque) {
  auto* c = static_cast<Handles::Context*>(opaque);
  c->rebalance(rk, err, parts, c->rebalance_opaque);
}

enum class Kind { kProducer, kConsumer };

// The settings a handle of `kind` takes: the bootstrap and client id, the coordinator's
// defaults the operator may change, then every --kafka-set that applies to this kind.
rd_kafka_conf_t* base_conf(const ClusterConfig& cc, Kind kind,
                           const std::vector<std::pair<const char*, const char*>>& defaults,
                           Handles::Context* context, std::string* error) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const std::string& k, const std::string& v) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      if (error->empty()) *error = "kafka." + k + ": " + errstr;
    }
  };
  set("bootstrap.servers", cc.bootstrap);
  set("client.id", "hotkey-coordinator");
  set("log_level", "4");
  for (const auto& [k, v] : defaults) {
    if (!cc.librdkafka.contains(k)) set(k, v);
  }
  const char skip = kind == Kind::kProducer ? 'C' : 'P';
  for (const auto& [k, v] : cc.librdkafka) {
    if (property_scope(k) != skip) set(k, v);
  }
  if (!error->empty()) {
    rd_kafka_conf_destroy(conf);
    return nullptr;
  }
  rd_kafka_conf_set_opaque(conf, context);
  rd_kafka_conf_set_log_cb(conf, &on_log);
  return conf;
}

}  // namespace

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<std::string> header(const rd_kafka_message_t* m, std::string_view name) {
  rd_kafka_headers_t* hdrs = nullptr;
  if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) return std::nullopt;
  const void* value = nullptr;
  size_t size = 0;
  if (rd_kafka_header_get_last(hdrs, std::string(name).c_str(), &value, &size) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    return std::nullopt;
  }
  return value ? std::string(static_cast<const char*>(value), size) : std::string();
}

Handles::~Handles() {
  // The group consumer was closed (or given up on) within the drain bound by Membership::run;
  // the others are assign()-only. A plain destroy would close a consumer again and wait on the
  // brokers without a bound.
  for (rd_kafka_t* h : {consumer, reader, tailer, state}) {
    if (h) rd_kafka_destroy_flags(h, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
  }
  if (producer) rd_kafka_destroy(producer);
}

std::string group_client_id(const ClusterConfig& cc, const std::string& member_url) {
  auto it = cc.librdkafka.find("client.id");
  return (it == cc.librdkafka.end() ? std::string("hotkey-coordinator") : it->second) + " " +
         member_url;
}

std::string url_of_client_id(const std::string& client_id) {
  const size_t space = client_id.rfind(' ');
  if (space == std::string::npos) return "";
  std::string url = client_id.substr(space + 1);
  return url.starts_with("http://") || url.starts_with("https://") ? url : "";
}

bool Handles::create(const ClusterConfig& cc, LogSink& log, RebalanceCb rebalance, void* opaque,
                     std::string* error, const std::string& member_url) {
  context_.log = &log;
  context_.rebalance = rebalance;
  context_.rebalance_opaque = opaque;
  char errstr[512];
  // Settings the coordinator owns (ClusterConfig::validate refuses them in --kafka-set) are set
  // last; linger.ms is a default.
  rd_kafka_conf_t* pc = base_conf(cc, Kind::kProducer, {{"linger.ms", "5"}}, &context_, error);
  if (!pc) return false;
  rd_kafka_conf_set(pc, "enable.idempotence", "true", errstr, sizeof errstr);
  rd_kafka_conf_set(pc, "acks", "all", errstr, sizeof errstr);
  rd_kafka_conf_set_dr_msg_cb(pc, &delivery_cb);
  producer = rd_kafka_new(RD_KAFKA_PRODUCER, pc, errstr, sizeof errstr);
  if (!producer) {
    *error = std::string("kafka producer: ") + errstr;
    return false;
  }
  // Reports are planned on as they arrive: the default 500 ms broker-side fetch wait would
  // hand them over up to one plan interval late and in bursts (HTTP reports arrive at once).
  // The group's session outlasts a Kafka node's failover (docs/CLUSTER.md, "Sizing"): with a
  // shorter one every member lost its session while the group coordinator moved, revoked
  // everything and the lists stopped until the group had formed again.
  rd_kafka_conf_t* gc = base_conf(cc, Kind::kConsumer,
                                  {{"fetch.wait.max.ms", "50"},
                                   {"session.timeout.ms", kDefaultSessionTimeoutMs},
                                   {"heartbeat.interval.ms", kDefaultHeartbeatIntervalMs}},
                                  &context_, error);
  if (!gc) return false;
  rd_kafka_conf_set(gc, "group.id", cc.group.c_str(), errstr, sizeof errstr);
  if (!member_url.empty()) {
    rd_kafka_conf_set(gc, "client.id", group_client_id(cc, member_url).c_str(), errstr,
                      sizeof errstr);
  }
  rd_kafka_conf_set(gc, "partition.assignment.strategy", "cooperative-sticky", errstr,
                    sizeof errstr);
  rd_kafka_conf_set(gc, "enable.auto.commit", "false", errstr, sizeof errstr);
  rd_kafka_conf_set(gc, "enable.auto.offset.store", "false", errstr, sizeof errstr);
  rd_kafka_conf_set(gc, "auto.offset.reset", "latest", errstr, sizeof errstr);
  rd_kafka_conf_set_rebalance_cb(gc, &on_rebalance);
  consumer = rd_kafka_new(RD_KAFKA_CONSUMER, gc, errstr, sizeof errstr);
  if (!consumer) {
    *error = std::string("kafka consumer: ") + errstr;
    return false;
  }
  rd_kafka_poll_set_consumer(consumer);
  for (rd_kafka_t** h : {&reader, &tailer, &state}) {
    // An operator write waits for its own record to come back through the state reader, and
    // list reads follow the tailer: fetch without the default 500 ms broker-side wait.
    std::vector<std::pair<const char*, const char*>> defaults;
    if (h != &reader) defaults.emplace_back("fetch.wait.max.ms", h == &state ? "20" : "100");
    rd_kafka_conf_t* rc = base_conf(cc, Kind::kConsumer, defaults, &context_, error);
    if (!rc) return false;
    // assign() needs a group.id; this one is never subscribed, so no group is joined.
    const std::string gid = cc.group + (h == &reader   ? ".reader"
                                        : h == &tailer ? ".tailer"
                                                       : ".state");
    rd_kafka_conf_set(rc, "group.id", gid.c_str(), errstr, sizeof errstr);
    rd_kafka_conf_set(rc, "enable.auto.commit", "false", errstr, sizeof errstr);
    rd_kafka_conf_set(rc, "enable.partition.eof", "false", errstr, sizeof errstr);
    *h = rd_kafka_new(RD_KAFKA_CONSUMER, rc, errstr, sizeof errstr);
    if (!*h) {
      *error = std::string("kafka reader: ") + errstr;
      return false;
    }
    rd_kafka_poll_set_consumer(*h);
  }
  return true;
}

rd_kafka_t* Handles::lists_producer(const ClusterConfig& cc, int32_t p, std::string* error) {
  char errstr[512];
  rd_kafka_conf_t* pc = base_conf(cc, Kind::kProducer, {{"linger.ms", "0"}}, &context_, error);
  if (!pc) return nullptr;
  const std::string id = cc.group + ".lists." + std::to_string(p);
  rd_kafka_conf_set(pc, "transactional.id", id.c_str(), errstr, sizeof errstr);
  rd_kafka_conf_set(pc, "acks", "all", errstr, sizeof errstr);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, pc, errstr, sizeof errstr);
  if (!rk) *error = std::string("kafka lists producer: ") + errstr;
  return rk;
}

void Handles::release_log() {
  std::vector<api::Json> held;
  {
    std::lock_guard lock(context_.mu);
    context_.holding = false;
    held.swap(context_.held);
  }
  for (const auto& event : held) context_.log->write(event);
}

char property_scope(const std::string& name) {
  // librdkafka prints its table as "name | C/P | range | default | importance | description".
  static const std::map<std::string, char> scopes = [] {
    std::map<std::string, char> out;
    char* text = nullptr;
    size_t size = 0;
    FILE* f = open_memstream(&text, &size);
    if (f == nullptr) return out;
    rd_kafka_conf_properties_show(f);
    std::fclose(f);
    std::istringstream lines(std::string(text, size));
    std::free(text);
    std::string line;
    const auto trim = [](std::string s) {
      const size_t a = s.find_first_not_of(' ');
      const size_t b = s.find_last_not_of(' ');
      return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };
    while (std::getline(lines, line)) {
      const size_t bar1 = line.find('|');
      const size_t bar2 = bar1 == std::string::npos ? bar1 : line.find('|', bar1 + 1);
      if (bar2 == std::string::npos) continue;
      const std::string scope = trim(line.substr(bar1 + 1, bar2 - bar1 - 1));
      if (scope == "C" || scope == "P" || scope == "*") out[trim(line.substr(0, bar1))] = scope[0];
    }
    return out;
  }();
  auto it = scopes.find(name);
  return it == scopes.end() ? 0 : it->second;
}

Sent produce_and_wait(rd_kafka_t* producer, const std::string& topic, int32_t partition,
                      std::string_view key, std::string_view value, std::string_view header_name,
                      std::string_view header_value, std::chrono::milliseconds timeout) {
  auto delivery = std::make_shared<Delivery>();
  auto* holder = new std::shared_ptr<Delivery>(delivery);
  Sent sent;
  sent.produced =
      rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                        RD_KAFKA_V_KEY(key.data(), key.size()),
                        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(holder),
                        RD_KAFKA_V_HEADER(std::string(header_name).c_str(), header_value.data(),
                                          static_cast<ssize_t>(header_value.size())),
                        RD_KAFKA_V_END);
  if (sent.produced != RD_KAFKA_RESP_ERR_NO_ERROR) {
    delete holder;
    return sent;
  }
  std::unique_lock lock(delivery->mu);
  sent.acked = delivery->cv.wait_for(lock, timeout, [&] { return delivery->done; });
  sent.err = delivery->err;
  sent.partition = delivery->partition;
  sent.offset = delivery->offset;
  return sent;
}

}  // namespace hotkey::coordinator::kafka
