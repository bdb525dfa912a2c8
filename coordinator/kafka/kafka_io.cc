#include "kafka_io.h"

#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>

#include "hotkey/partitioner.h"

namespace hotkey::coordinator::kafka {
namespace {

using nlohmann::json;

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

// The settings every handle shares: the bootstrap, the client id and every --kafka-set.
rd_kafka_conf_t* base_conf(const ClusterConfig& cc, std::string* error) {
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
  for (const auto& [k, v] : cc.librdkafka) set(k, v);
  if (!error->empty()) {
    rd_kafka_conf_destroy(conf);
    return nullptr;
  }
  return conf;
}

}  // namespace

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void log_line(const json& j) {
  json line = j;
  line["ts_ms"] = wall_ms();
  std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

int32_t partition_of(const std::string& topic, int32_t partitions) {
  return partition_for(HashFamily::kMurmur2, topic, partitions);
}

std::optional<std::string> header(const rd_kafka_message_t* m, const char* name) {
  rd_kafka_headers_t* hdrs = nullptr;
  if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) return std::nullopt;
  const void* value = nullptr;
  size_t size = 0;
  if (rd_kafka_header_get_last(hdrs, name, &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return std::nullopt;
  }
  return value ? std::string(static_cast<const char*>(value), size) : std::string();
}

Handles::~Handles() {
  for (rd_kafka_t* h : {consumer, reader, tailer, state, producer}) {
    if (h) rd_kafka_destroy(h);
  }
}

bool Handles::create(const ClusterConfig& cc, RebalanceCb rebalance, void* opaque,
                     std::string* error) {
  char errstr[512];
  rd_kafka_conf_t* pc = base_conf(cc, error);
  if (!pc) return false;
  rd_kafka_conf_set(pc, "enable.idempotence", "true", errstr, sizeof errstr);
  rd_kafka_conf_set(pc, "acks", "all", errstr, sizeof errstr);
  rd_kafka_conf_set(pc, "linger.ms", "5", errstr, sizeof errstr);
  rd_kafka_conf_set_dr_msg_cb(pc, &delivery_cb);
  producer = rd_kafka_new(RD_KAFKA_PRODUCER, pc, errstr, sizeof errstr);
  if (!producer) {
    *error = std::string("kafka producer: ") + errstr;
    return false;
  }
  rd_kafka_conf_t* gc = base_conf(cc, error);
  if (!gc) return false;
  rd_kafka_conf_set(gc, "group.id", cc.group.c_str(), errstr, sizeof errstr);
  rd_kafka_conf_set(gc, "partition.assignment.strategy", "cooperative-sticky", errstr,
                    sizeof errstr);
  rd_kafka_conf_set(gc, "enable.auto.commit", "false", errstr, sizeof errstr);
  rd_kafka_conf_set(gc, "enable.auto.offset.store", "false", errstr, sizeof errstr);
  rd_kafka_conf_set(gc, "auto.offset.reset", "latest", errstr, sizeof errstr);
  // Reports are planned on as they arrive: the default 500 ms broker-side fetch wait would
  // hand them over up to one plan interval late and in bursts (HTTP reports arrive at once).
  if (!cc.librdkafka.contains("fetch.wait.max.ms")) {
    rd_kafka_conf_set(gc, "fetch.wait.max.ms", "50", errstr, sizeof errstr);
  }
  rd_kafka_conf_set_opaque(gc, opaque);
  rd_kafka_conf_set_rebalance_cb(gc, rebalance);
  consumer = rd_kafka_new(RD_KAFKA_CONSUMER, gc, errstr, sizeof errstr);
  if (!consumer) {
    *error = std::string("kafka consumer: ") + errstr;
    return false;
  }
  rd_kafka_poll_set_consumer(consumer);
  for (rd_kafka_t** h : {&reader, &tailer, &state}) {
    rd_kafka_conf_t* rc = base_conf(cc, error);
    if (!rc) return false;
    // assign() needs a group.id; this one is never subscribed, so no group is joined.
    const std::string gid = cc.group + (h == &reader   ? ".reader"
                                        : h == &tailer ? ".tailer"
                                                       : ".state");
    rd_kafka_conf_set(rc, "group.id", gid.c_str(), errstr, sizeof errstr);
    rd_kafka_conf_set(rc, "enable.auto.commit", "false", errstr, sizeof errstr);
    rd_kafka_conf_set(rc, "enable.partition.eof", "false", errstr, sizeof errstr);
    // An operator write waits for its own record to come back through the state reader, and
    // list reads follow the tailer: fetch without the default 500 ms broker-side wait.
    if (h != &reader && !cc.librdkafka.contains("fetch.wait.max.ms")) {
      rd_kafka_conf_set(rc, "fetch.wait.max.ms", h == &state ? "20" : "100", errstr,
                        sizeof errstr);
    }
    *h = rd_kafka_new(RD_KAFKA_CONSUMER, rc, errstr, sizeof errstr);
    if (!*h) {
      *error = std::string("kafka reader: ") + errstr;
      return false;
    }
    rd_kafka_poll_set_consumer(*h);
  }
  return true;
}

Sent produce_and_wait(rd_kafka_t* producer, const std::string& topic, int32_t partition,
                      std::string_view key, std::string_view value, const char* header_name,
                      std::string_view header_value, std::chrono::milliseconds timeout) {
  auto delivery = std::make_shared<Delivery>();
  auto* holder = new std::shared_ptr<Delivery>(delivery);
  Sent sent;
  sent.produced = rd_kafka_producev(
      producer, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
      RD_KAFKA_V_KEY(key.data(), key.size()),
      RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(holder),
      RD_KAFKA_V_HEADER(header_name, header_value.data(),
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
