#include "kafka_cluster.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "hotkey/api_model.h"
#include "hotkey/key_codec.h"
#include "hotkey/partitioner.h"
#include "hotkey/report.h"

namespace hotkey::coordinator {
namespace {

using nlohmann::json;
using Steady = std::chrono::steady_clock;

constexpr const char* kReportVersionHeader = "hotkey.report.v";
constexpr const char* kMemberHeader = "hotkey.member";
// How long one attempt at reading lists partitions to their end may take; the loop retries a
// failed attempt a second later (the group's poll loop must keep running meanwhile, or
// max.poll.interval.ms would expel the member).
constexpr auto kReadToEndAttempt = std::chrono::seconds(3);
constexpr int kMetadataTimeoutMs = 10000;

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

// Frees a librdkafka handle on scope exit.
struct PartitionList {
  rd_kafka_topic_partition_list_t* p;
  explicit PartitionList(int n) : p(rd_kafka_topic_partition_list_new(n)) {}
  explicit PartitionList(const rd_kafka_topic_partition_list_t* src)
      : p(rd_kafka_topic_partition_list_copy(src)) {}
  ~PartitionList() { rd_kafka_topic_partition_list_destroy(p); }
  PartitionList(const PartitionList&) = delete;
  PartitionList& operator=(const PartitionList&) = delete;
};

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

// How long an operator write waits for Kafka's acknowledgement (acks=all), then for this
// member to have applied it.
constexpr auto kStateAckTimeout = std::chrono::seconds(15);
constexpr auto kStateApplyTimeout = std::chrono::seconds(5);
// A report forwarded to the reports topic (HTTP to a non-owner) waits this long for Kafka.
constexpr auto kReportAckTimeout = std::chrono::seconds(5);

// The outcome of one state-topic write, filled by the delivery report.
struct Delivery {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  int32_t partition = -1;
  int64_t offset = -1;
};

std::string state_record_key(const OperatorOp& op) {
  return op.topic + "/" + base64_encode(op.key);
}

std::string encode_state_record(const OperatorOp& op) {
  return json{{"v", 1},
              {"op", op.op},
              {"topic", op.topic},
              {"key_b64", base64_encode(op.key)},
              {"salts", op.salts},
              {"ttl_s", op.ttl_s},
              {"expires_at_ms", op.expires_at_ms},
              {"reason", op.reason},
              {"by", op.who},
              {"at_ms", op.at_ms},
              {"version", op.version},
              {"expired", op.expired}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

// Throws on anything that is not a format-1 state record.
OperatorOp decode_state_record(std::string_view value) {
  json j = json::parse(value);
  if (j.value("v", 0) != 1) throw std::invalid_argument("unknown state record format");
  OperatorOp op;
  op.op = j.at("op").get<std::string>();
  if (op.op != "pin" && op.op != "unpin" && op.op != "deny" && op.op != "allow" &&
      op.op != "delete_topic") {
    throw std::invalid_argument("unknown operator write '" + op.op + "'");
  }
  op.topic = j.at("topic").get<std::string>();
  auto key = base64_decode(j.value("key_b64", ""));
  // A delete_topic names no key (record key "<topic>/").
  if (!key || (key->empty() != (op.op == "delete_topic")) || op.topic.empty()) {
    throw std::invalid_argument("bad key or topic");
  }
  op.key = *key;
  op.salts = j.value("salts", 0u);
  op.ttl_s = j.value("ttl_s", int64_t{0});
  op.expires_at_ms = j.value("expires_at_ms", int64_t{0});
  op.reason = j.value("reason", "");
  op.who = j.value("by", "");
  op.at_ms = j.value("at_ms", int64_t{0});
  op.version = j.value("version", uint64_t{0});
  op.expired = j.value("expired", false);
  return op;
}

// One partition's lists as read to its end.
struct PartitionLists {
  std::map<std::string, HotKeyList> latest;  // highest version per topic; tombstones erase
  uint64_t max_epoch = 0;
};

}  // namespace

struct KafkaCluster::Impl {
  Impl(const CoordinatorConfig& c, Coordinator& coord, std::string url)
      : config(c), cc(c.cluster), coordinator(coord), advertised_url(std::move(url)) {}

  const CoordinatorConfig& config;
  const ClusterConfig& cc;
  Coordinator& coordinator;
  const std::string advertised_url;

  rd_kafka_t* consumer = nullptr;  // the group member (reports topic)
  rd_kafka_t* producer = nullptr;  // lists (and state) writer: idempotent, acks=all
  rd_kafka_t* reader = nullptr;    // reads lists partitions to their end on assignment
  rd_kafka_t* tailer = nullptr;    // follows every lists partition (list reads, owners)
  rd_kafka_t* state = nullptr;     // applies the state topic (operator writes)
  int32_t partitions = 0;          // of the reports and lists topics
  int32_t state_partitions = 0;

  // Next state-topic offset to apply, per partition (checkpointed with each applied record).
  std::mutex state_mu;
  std::condition_variable state_cv;
  std::map<int32_t, int64_t> state_next;
  std::map<std::pair<int32_t, int64_t>, CallResult> state_results;  // for waiting writers
  std::thread state_thread;

  // Owned reports partitions and the epoch this member publishes them with. Only the loop
  // thread writes; publishers read under the shared lock.
  mutable std::shared_mutex owned_mu;
  std::map<int32_t, uint64_t> owned;
  // Deleted topics and the version each had (owned_mu): a list at or below it is never written
  // again (a republish racing the delete), and the tombstone is written under the exclusive
  // lock, so no list of the deleted topic follows it.
  std::map<std::string, uint64_t> deleted;
  // Idle expiries requested of the state topic, by topic (expiry_mu): one request per topic
  // every kExpiryRetry until a member applied it.
  std::mutex expiry_mu;
  std::map<std::string, Steady::time_point> expiry_requested;
  // When each topic seen in reports was last deleted (0: never), from the store on first sight
  // (deleted_at_mu): reports stamped before a delete are not ingested (a window rebuilt after
  // an assignment would otherwise bring the deleted topic back).
  std::mutex deleted_at_mu;
  std::map<std::string, int64_t, std::less<>> deleted_at;
  // Assigned partitions whose lists partition could not yet be read to its end.
  std::set<int32_t> pending;

  std::atomic<bool> stop_flag{false};
  std::thread loop_thread;
  std::thread tail_thread;

  std::atomic<uint64_t> rebalances{0};
  std::atomic<uint64_t> reports_ingested{0};
  std::atomic<uint64_t> reports_forwarded{0};
  std::atomic<uint64_t> reports_skipped{0};
  std::atomic<uint64_t> lists_produced{0};
  std::atomic<uint64_t> lists_dropped{0};
  std::atomic<uint64_t> lists_tombstoned{0};

  // What the tailer saw: the author of each topic's highest version, and when each member
  // last wrote.
  struct Owner {
    uint64_t version = 0;
    std::string member;
  };
  mutable std::mutex view_mu;
  std::map<std::string, Owner> owners;
  std::map<std::string, int64_t> members_seen;
  std::string member_id;

  int32_t partition_of(const std::string& topic) const {
    return partition_for(HashFamily::kMurmur2, topic, partitions);
  }

  rd_kafka_conf_t* base_conf(bool consumer_side, std::string* error) {
    char errstr[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    auto set = [&](const std::string& k, const std::string& v) {
      if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), errstr, sizeof errstr) !=
          RD_KAFKA_CONF_OK) {
        if (error->empty()) *error = "kafka." + k + ": " + errstr;
        return false;
      }
      return true;
    };
    set("bootstrap.servers", cc.bootstrap);
    set("client.id", "hotkey-coordinator");
    set("log_level", "4");
    for (const auto& [k, v] : cc.librdkafka) {
      // Consumer-only settings would draw a warning on the producer (and vice versa): each
      // handle takes what librdkafka accepts for its kind, the rest is reported once below.
      set(k, v);
    }
    (void)consumer_side;
    if (!error->empty()) {
      rd_kafka_conf_destroy(conf);
      return nullptr;
    }
    return conf;
  }

  bool create_handles(std::string* error) {
    char errstr[512];
    rd_kafka_conf_t* pc = base_conf(false, error);
    if (!pc) return false;
    rd_kafka_conf_set(pc, "enable.idempotence", "true", errstr, sizeof errstr);
    rd_kafka_conf_set(pc, "acks", "all", errstr, sizeof errstr);
    rd_kafka_conf_set(pc, "linger.ms", "5", errstr, sizeof errstr);
    rd_kafka_conf_set_dr_msg_cb(pc, &Impl::delivery_cb);
    producer = rd_kafka_new(RD_KAFKA_PRODUCER, pc, errstr, sizeof errstr);
    if (!producer) {
      *error = std::string("kafka producer: ") + errstr;
      return false;
    }
    rd_kafka_conf_t* gc = base_conf(true, error);
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
    rd_kafka_conf_set_opaque(gc, this);
    rd_kafka_conf_set_rebalance_cb(gc, &Impl::rebalance_cb);
    consumer = rd_kafka_new(RD_KAFKA_CONSUMER, gc, errstr, sizeof errstr);
    if (!consumer) {
      *error = std::string("kafka consumer: ") + errstr;
      return false;
    }
    rd_kafka_poll_set_consumer(consumer);
    for (rd_kafka_t** h : {&reader, &tailer, &state}) {
      rd_kafka_conf_t* rc = base_conf(true, error);
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

  // Partition count of `topic` (0: missing, -1: metadata unavailable). Asks for all topics:
  // a request naming the topic would make a broker with auto.create.topics.enable create it
  // with default settings (not compacted, default partition count).
  int32_t topic_partitions(const std::string& topic, std::string* error) {
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t err = rd_kafka_metadata(producer, 1, nullptr, &md, kMetadataTimeoutMs);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      *error = "cannot read metadata from " + cc.bootstrap + ": " + rd_kafka_err2str(err);
      return -1;
    }
    int32_t n = 0;
    for (int i = 0; i < md->topic_cnt; ++i) {
      if (topic == md->topics[i].topic && md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        n = md->topics[i].partition_cnt;
      }
    }
    rd_kafka_metadata_destroy(md);
    return n;
  }

  // CreateTopics for the missing internal topics (a broker without it, like the test mock,
  // answers with an error or not at all: the caller then reports what to create by hand).
  bool create_topics(const std::vector<std::pair<std::string, int32_t>>& missing,
                     std::string* error) {
    std::vector<rd_kafka_NewTopic_t*> topics;
    char errstr[512];
    for (const auto& [name, parts] : missing) {
      rd_kafka_NewTopic_t* nt =
          rd_kafka_NewTopic_new(name.c_str(), parts, cc.replication_factor, errstr, sizeof errstr);
      if (!nt) {
        *error = errstr;
        for (auto* t : topics) rd_kafka_NewTopic_destroy(t);
        return false;
      }
      if (name != cc.reports_topic) rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
      topics.push_back(nt);
    }
    rd_kafka_queue_t* q = rd_kafka_queue_new(producer);
    rd_kafka_AdminOptions_t* opts =
        rd_kafka_AdminOptions_new(producer, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_request_timeout(opts, 5000, errstr, sizeof errstr);
    rd_kafka_AdminOptions_set_operation_timeout(opts, 5000, errstr, sizeof errstr);
    rd_kafka_CreateTopics(producer, topics.data(), topics.size(), opts, q);
    rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 12000);
    bool ok = false;
    if (!ev) {
      *error = "CreateTopics got no answer";
    } else if (rd_kafka_event_error(ev)) {
      *error = std::string("CreateTopics: ") + rd_kafka_event_error_string(ev);
    } else {
      ok = true;
      const rd_kafka_CreateTopics_result_t* res = rd_kafka_event_CreateTopics_result(ev);
      size_t n = 0;
      const rd_kafka_topic_result_t** results = rd_kafka_CreateTopics_result_topics(res, &n);
      for (size_t i = 0; i < n; ++i) {
        rd_kafka_resp_err_t e = rd_kafka_topic_result_error(results[i]);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
          ok = false;
          *error = std::string("CreateTopics ") + rd_kafka_topic_result_name(results[i]) + ": " +
                   rd_kafka_err2str(e);
        }
      }
    }
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
    for (auto* t : topics) rd_kafka_NewTopic_destroy(t);
    return ok;
  }

  bool check_topics(std::string* error) {
    const std::vector<std::pair<std::string, int32_t>> wanted = {
        {cc.reports_topic, cc.topic_partitions},
        {cc.lists_topic, cc.topic_partitions},
        {cc.state_topic, 1}};
    std::vector<std::pair<std::string, int32_t>> missing;
    std::map<std::string, int32_t> counts;
    for (const auto& [name, parts] : wanted) {
      const int32_t n = topic_partitions(name, error);
      if (n < 0) return false;
      if (n == 0) missing.emplace_back(name, parts);
      counts[name] = n;
    }
    if (!missing.empty()) {
      std::string why;
      if (!create_topics(missing, &why)) {
        std::string names;
        for (const auto& [name, parts] : missing) {
          names += (names.empty() ? "" : ", ") + name + " (" + std::to_string(parts) +
                   " partitions" + (name == cc.reports_topic ? "" : ", cleanup.policy=compact") +
                   ")";
        }
        *error = "internal topics missing and not created (" + why + "): create " + names +
                 " (docs/CLUSTER.md)";
        return false;
      }
      log_line({{"level", "info"}, {"event", "kafka_topics_created"}, {"count", missing.size()}});
      for (const auto& [name, parts] : missing) {
        for (int i = 0; i < 50 && counts[name] <= 0; ++i) {
          counts[name] = topic_partitions(name, error);
          if (counts[name] <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        if (counts[name] <= 0) {
          *error = "topic " + name + " was created but does not show in the metadata";
          return false;
        }
      }
    }
    if (counts[cc.reports_topic] != counts[cc.lists_topic]) {
      *error = "topics " + cc.reports_topic + " (" + std::to_string(counts[cc.reports_topic]) +
               " partitions) and " + cc.lists_topic + " (" +
               std::to_string(counts[cc.lists_topic]) +
               " partitions) must be co-partitioned: give them the same partition count "
               "(docs/CLUSTER.md)";
      return false;
    }
    partitions = counts[cc.reports_topic];
    state_partitions = counts[cc.state_topic];
    return true;
  }

  // --- ownership -------------------------------------------------------------------------

  bool owns(const std::string& topic) const {
    const int32_t p = partition_of(topic);
    std::shared_lock lock(owned_mu);
    return owned.contains(p);
  }

  uint64_t version_floor(const std::string& topic) const {
    const int32_t p = partition_of(topic);
    std::shared_lock lock(owned_mu);
    auto it = owned.find(p);
    return it == owned.end() ? 0 : epoch_floor(it->second);
  }

  void publish(const std::shared_ptr<const PublishedList>& list) {
    const int32_t p = partition_of(list->list.topic);
    std::shared_lock lock(owned_mu);
    auto it = owned.find(p);
    // Not ours (any more), or issued before this ownership began: never written.
    if (it == owned.end() || version_epoch(list->list.version) != it->second) {
      lists_dropped.fetch_add(1);
      return;
    }
    // A list of a deleted topic (a republish that took it before the delete): never written
    // after the tombstone.
    if (auto d = deleted.find(list->list.topic);
        d != deleted.end() && list->list.version <= d->second) {
      lists_dropped.fetch_add(1);
      return;
    }
    const std::string& topic = list->list.topic;
    const std::string& value = list->json;
    for (int attempt = 0; attempt < 50; ++attempt) {
      rd_kafka_resp_err_t err =
          rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(cc.lists_topic.c_str()),
                            RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_KEY(topic.data(), topic.size()),
                            RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_HEADER(kMemberHeader, advertised_url.data(),
                                              static_cast<ssize_t>(advertised_url.size())),
                            RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        lists_produced.fetch_add(1);
        return;
      }
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        log_line({{"level", "error"},
                  {"event", "list_produce_failed"},
                  {"topic", topic},
                  {"error", rd_kafka_err2str(err)}});
        break;
      }
      rd_kafka_poll(producer, 10);
    }
    // The next republish writes it again.
    lists_dropped.fetch_add(1);
  }

  // The on_delete hook: remembers the deleted version and, when this member owns the topic's
  // partition, writes the tombstone (null value) for the topic's key to its lists partition,
  // so compaction removes the topic's lists and clients drop the list (keeping the version).
  void tombstone(const std::string& topic, uint64_t version, int64_t at_ms) {
    const int32_t p = partition_of(topic);
    {
      std::lock_guard lock(expiry_mu);
      expiry_requested.erase(topic);
    }
    {
      std::lock_guard lock(deleted_at_mu);
      int64_t& at = deleted_at[topic];
      at = std::max(at, at_ms);
    }
    std::unique_lock lock(owned_mu);
    uint64_t& d = deleted[topic];
    d = std::max(d, version);
    if (!owned.contains(p)) return;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__QUEUE_FULL;
    for (int attempt = 0; attempt < 50 && err == RD_KAFKA_RESP_ERR__QUEUE_FULL; ++attempt) {
      err = rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(cc.lists_topic.c_str()),
                              RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_KEY(topic.data(), topic.size()),
                              RD_KAFKA_V_VALUE(nullptr, 0),
                              RD_KAFKA_V_HEADER(kMemberHeader, advertised_url.data(),
                                                static_cast<ssize_t>(advertised_url.size())),
                              RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) rd_kafka_poll(producer, 10);
    }
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) lists_tombstoned.fetch_add(1);
    log_line({{"level", err == RD_KAFKA_RESP_ERR_NO_ERROR ? "info" : "error"},
              {"event", "list_tombstoned"},
              {"topic", topic},
              {"partition", p},
              {"version", version},
              {"error", err == RD_KAFKA_RESP_ERR_NO_ERROR ? "" : rd_kafka_err2str(err)}});
  }

  // The request_delete hook (the owner's idle expiry): the delete_topic record is written to the
  // state topic without waiting; every member applies it as it applies an operator's delete.
  void request_delete(const OperatorOp& op) {
    constexpr auto kExpiryRetry = std::chrono::seconds(30);
    {
      std::lock_guard lock(expiry_mu);
      auto [it, fresh] = expiry_requested.emplace(op.topic, Steady::now());
      if (!fresh && Steady::now() - it->second < kExpiryRetry) return;
      it->second = Steady::now();
    }
    const std::string key = state_record_key(op);
    const std::string value = encode_state_record(op);
    rd_kafka_resp_err_t err = rd_kafka_producev(
        producer, RD_KAFKA_V_TOPIC(cc.state_topic.c_str()), RD_KAFKA_V_KEY(key.data(), key.size()),
        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_HEADER(kMemberHeader, advertised_url.data(),
                          static_cast<ssize_t>(advertised_url.size())),
        RD_KAFKA_V_END);
    log_line({{"level", err == RD_KAFKA_RESP_ERR_NO_ERROR ? "info" : "warn"},
              {"event", "topic_expiry_requested"},
              {"topic", op.topic},
              {"reason", op.reason},
              {"error", err == RD_KAFKA_RESP_ERR_NO_ERROR ? "" : rd_kafka_err2str(err)}});
  }

  void republish() {
    for (const auto& list : coordinator.published_lists()) publish(list);
  }

  static void refresh_metadata(rd_kafka_t* rk, const std::string& topic) {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 2000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_metadata_destroy(md);
    }
    rd_kafka_topic_destroy(rkt);
  }

  // Reads lists partitions `parts` from the beginning to the high watermark taken first.
  // Returns false when that did not finish in time (broker trouble): nothing is published
  // from such a partition until a later attempt succeeds.
  bool read_to_end(const std::vector<int32_t>& parts, std::map<int32_t, PartitionLists>* out) {
    const auto deadline = Steady::now() + kReadToEndAttempt;
    std::map<int32_t, int64_t> high;
    for (int32_t p : parts) {
      int64_t lo = 0, hi = 0;
      rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
      while (Steady::now() < deadline && !stop_flag.load()) {
        err = rd_kafka_query_watermark_offsets(reader, cc.lists_topic.c_str(), p, &lo, &hi, 2000);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
        // A moved leader: the watermark query does not refresh the cached leader itself.
        refresh_metadata(reader, cc.lists_topic);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        log_line({{"level", "warn"},
                  {"event", "lists_watermarks_failed"},
                  {"partition", p},
                  {"error", rd_kafka_err2str(err)}});
        return false;
      }
      (*out)[p] = PartitionLists{};
      if (hi > lo) high[p] = hi;
    }
    if (high.empty()) return true;
    PartitionList assign(static_cast<int>(high.size()));
    for (const auto& [p, hi] : high) {
      rd_kafka_topic_partition_list_add(assign.p, cc.lists_topic.c_str(), p)->offset =
          RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(reader, assign.p);
    while (!high.empty() && Steady::now() < deadline && !stop_flag.load()) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(reader, 200);
      if (!m) continue;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        PartitionLists& pl = (*out)[m->partition];
        std::string topic(static_cast<const char*>(m->key), m->key_len);
        if (!m->payload) {
          pl.latest.erase(topic);
        } else {
          try {
            HotKeyList list = parse_list_json(
                std::string_view(static_cast<const char*>(m->payload), m->len), config.limits);
            pl.max_epoch = std::max(pl.max_epoch, version_epoch(list.version));
            auto it = pl.latest.find(list.topic);
            if (it == pl.latest.end() || it->second.version < list.version) {
              pl.latest[list.topic] = std::move(list);
            }
          } catch (const std::exception&) {
            // A record no client would accept either; its epoch cannot be trusted.
          }
        }
        auto h = high.find(m->partition);
        if (h != high.end() && m->offset + 1 >= h->second) high.erase(h);
      }
      rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(reader, nullptr);
    return high.empty();
  }

  // Takes ownership of the pending partitions once their lists partitions are read to their
  // end; on failure they stay pending and the loop retries a second later.
  void take_ownership() {
    std::vector<int32_t> parts(pending.begin(), pending.end());
    std::map<int32_t, PartitionLists> found;
    if (!read_to_end(parts, &found)) {
      log_line({{"level", "warn"},
                {"event", "ownership_pending"},
                {"partitions", parts},
                {"why", "lists partitions not read to their end yet"}});
      return;
    }
    const uint64_t generation = rebalances.load();
    for (int32_t p : parts) {
      pending.erase(p);
      const PartitionLists& pl = found[p];
      // Strictly above every epoch the partition held.
      const uint64_t epoch = std::max<uint64_t>(pl.max_epoch + 1, 1);
      {
        std::unique_lock lock(owned_mu);
        owned[p] = epoch;
      }
      size_t adopted = 0;
      for (const auto& [topic, list] : pl.latest) {
        if (partition_of(topic) != p) continue;
        // The list of a topic deleted since (its owner then did not write the tombstone: it
        // lost the partition first): not adopted, and tombstoned now.
        uint64_t gone = coordinator.deleted_version(topic);
        {
          std::shared_lock lock(owned_mu);
          if (auto d = deleted.find(topic); d != deleted.end()) gone = std::max(gone, d->second);
        }
        if (list.version <= gone) {
          tombstone(topic, gone, 0);
          continue;
        }
        coordinator.adopt_list(list);
        ++adopted;
      }
      log_line({{"level", "info"},
                {"event", "partition_owned"},
                {"partition", p},
                {"epoch", epoch},
                {"generation", generation},
                {"lists_adopted", adopted}});
    }
  }

  void lose_ownership(const std::vector<int32_t>& parts) {
    {
      std::unique_lock lock(owned_mu);
      for (int32_t p : parts) owned.erase(p);
    }
    for (int32_t p : parts) pending.erase(p);
    for (const auto& s : coordinator.topics()) {
      const int32_t p = partition_of(s.topic);
      if (std::find(parts.begin(), parts.end(), p) != parts.end()) {
        coordinator.release_topic(s.topic);
      }
    }
    log_line({{"level", "info"}, {"event", "partitions_revoked"}, {"partitions", parts}});
  }

  static void rebalance_cb(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                           rd_kafka_topic_partition_list_t* parts, void* opaque) {
    static_cast<Impl*>(opaque)->on_rebalance(rk, err, parts);
  }

  void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                    rd_kafka_topic_partition_list_t* parts) {
    rebalances.fetch_add(1);
    const bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    std::vector<int32_t> ids;
    for (int i = 0; i < parts->cnt; ++i) ids.push_back(parts->elems[i].partition);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      // Rebuild the window: start each partition at the first report of the last window.
      PartitionList start(parts);
      const int64_t from = wall_ms() - static_cast<int64_t>(config.epoch_ms) * config.window_epochs;
      for (int i = 0; i < start.p->cnt; ++i) start.p->elems[i].offset = from;
      rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, start.p, 5000);
      for (int i = 0; i < start.p->cnt; ++i) {
        auto& el = start.p->elems[i];
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR || el.err != RD_KAFKA_RESP_ERR_NO_ERROR ||
            el.offset < 0) {
          if (e != RD_KAFKA_RESP_ERR_NO_ERROR || el.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            log_line({{"level", "warn"},
                      {"event", "window_rebuild_unavailable"},
                      {"partition", el.partition},
                      {"error", rd_kafka_err2str(e != RD_KAFKA_RESP_ERR_NO_ERROR ? e : el.err)}});
          }
          el.offset = RD_KAFKA_OFFSET_END;
          el.err = RD_KAFKA_RESP_ERR_NO_ERROR;
        }
      }
      // Forget whatever this member knew of these partitions' topics: the window is rebuilt
      // from the reports read from here on, the list comes from the lists topic once the
      // loop has read it to its end (nothing of them is planned or published before).
      for (const auto& s : coordinator.topics()) {
        if (std::find(ids.begin(), ids.end(), partition_of(s.topic)) != ids.end()) {
          coordinator.release_topic(s.topic);
        }
      }
      for (int32_t p : ids) pending.insert(p);
      if (cooperative) {
        if (rd_kafka_error_t* ae = rd_kafka_incremental_assign(rk, start.p)) {
          log_line({{"level", "error"},
                    {"event", "assign_failed"},
                    {"error", rd_kafka_error_string(ae)}});
          rd_kafka_error_destroy(ae);
        }
      } else {
        rd_kafka_assign(rk, start.p);
      }
    } else {
      lose_ownership(ids);
      if (cooperative) {
        if (rd_kafka_error_t* ue = rd_kafka_incremental_unassign(rk, parts)) {
          rd_kafka_error_destroy(ue);
        }
      } else {
        rd_kafka_assign(rk, nullptr);
      }
    }
    if (char* id = rd_kafka_memberid(rk)) {
      std::lock_guard lock(view_mu);
      member_id = id;
      rd_kafka_mem_free(rk, id);
    }
  }

  // --- operator state ----------------------------------------------------------------------

  static void delivery_cb(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
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

  static std::string checkpoint_name(const std::string& topic, int32_t p) {
    return "cluster/state_offset/" + topic + "/" + std::to_string(p);
  }

  // One message whose delivery report is awaited (delivery_cb fills it): the state write and
  // a forwarded report. `produced`: rd_kafka_producev's answer (nothing is awaited unless it is
  // NO_ERROR); `acked`: the report came within `timeout`, with `err` its error.
  struct Sent {
    rd_kafka_resp_err_t produced = RD_KAFKA_RESP_ERR_NO_ERROR;
    bool acked = false;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    int32_t partition = -1;
    int64_t offset = -1;
  };
  Sent produce_and_wait(const std::string& topic, int32_t partition, std::string_view key,
                        std::string_view value, const char* header, std::string_view header_value,
                        std::chrono::milliseconds timeout) {
    auto delivery = std::make_shared<Delivery>();
    auto* holder = new std::shared_ptr<Delivery>(delivery);
    Sent sent;
    sent.produced = rd_kafka_producev(
        producer, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_KEY(key.data(), key.size()),
        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(holder),
        RD_KAFKA_V_HEADER(header, header_value.data(), static_cast<ssize_t>(header_value.size())),
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

  // The operator_write hook: the write is acknowledged once Kafka has it (acks=all) and this
  // member applied it.
  CallResult write_state(const OperatorOp& op) {
    const Sent sent =
        produce_and_wait(cc.state_topic, RD_KAFKA_PARTITION_UA, state_record_key(op),
                         encode_state_record(op), kMemberHeader, advertised_url, kStateAckTimeout);
    CallResult r;
    if (sent.produced != RD_KAFKA_RESP_ERR_NO_ERROR || !sent.acked ||
        sent.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      r.status = Status::kUnavailable;
      r.reason = "state_topic";
      if (sent.produced != RD_KAFKA_RESP_ERR_NO_ERROR) {
        r.error = std::string("cannot write the state topic: ") + rd_kafka_err2str(sent.produced);
      } else if (!sent.acked) {
        r.error =
            "the state topic did not acknowledge the write in time; it may still apply: "
            "retry the call (writes are idempotent)";
      } else {
        r.error = std::string("the state topic refused the write: ") + rd_kafka_err2str(sent.err);
      }
      return r;
    }
    // Acknowledged. Answer once this member applied it, so a read that follows sees it.
    const std::pair<int32_t, int64_t> at{sent.partition, sent.offset};
    std::unique_lock lock(state_mu);
    const bool applied = state_cv.wait_for(lock, kStateApplyTimeout,
                                           [&] { return state_next[at.first] > at.second; });
    if (applied) {
      auto it = state_results.find(at);
      if (it != state_results.end()) {
        r = it->second;
        state_results.erase(it);
      }
    }
    if (r.ok()) {
      auto pub = coordinator.board().get(op.topic);
      r.version = std::max(r.version, pub ? pub->list.version : 0);
    }
    return r;
  }

  // Applies state records from the checkpoint on; with `until_end`, returns once the high
  // watermarks taken at the start are reached (or the deadline passes: false).
  bool apply_state(bool until_end, Steady::time_point deadline) {
    std::map<int32_t, int64_t> high;
    if (until_end) {
      for (int32_t p = 0; p < state_partitions; ++p) {
        int64_t lo = 0, hi = 0;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
        while (Steady::now() < deadline && err != RD_KAFKA_RESP_ERR_NO_ERROR) {
          err = rd_kafka_query_watermark_offsets(state, cc.state_topic.c_str(), p, &lo, &hi, 2000);
        }
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return false;
        std::lock_guard lock(state_mu);
        if (hi > state_next[p]) high[p] = hi;
      }
    }
    while (!stop_flag.load() && (!until_end || !high.empty())) {
      if (until_end && Steady::now() >= deadline) return false;
      rd_kafka_message_t* m = rd_kafka_consumer_poll(state, 200);
      if (!m) continue;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        apply_state_record(m);
        auto h = high.find(m->partition);
        if (h != high.end() && m->offset + 1 >= h->second) high.erase(h);
      }
      rd_kafka_message_destroy(m);
    }
    return true;
  }

  void apply_state_record(const rd_kafka_message_t* m) {
    const int32_t p = m->partition;
    const int64_t next = m->offset + 1;
    const std::string name = checkpoint_name(cc.state_topic, p);
    auto checkpoint = [&](StoreBatch& b) { b.put_meta(name, std::to_string(next)); };
    CallResult r;
    try {
      if (!m->payload) throw std::invalid_argument("tombstone");
      OperatorOp op =
          decode_state_record(std::string_view(static_cast<const char*>(m->payload), m->len));
      r = coordinator.apply_operator(op, checkpoint);
    } catch (const std::exception& e) {
      // Not a record this version understands: skipped, and the checkpoint moves past it.
      StoreBatch b;
      checkpoint(b);
      coordinator.store().write(b);
      log_line({{"level", "warn"},
                {"event", "state_record_skipped"},
                {"partition", p},
                {"offset", m->offset},
                {"error", e.what()}});
    }
    {
      std::lock_guard lock(state_mu);
      state_next[p] = next;
      state_results[{p, m->offset}] = r;
      // Writers that gave up waiting leave their result behind: keep the map small.
      while (state_results.size() > 1024) state_results.erase(state_results.begin());
    }
    state_cv.notify_all();
  }

  // Assigns the state topic from the checkpoints in the store and applies it to its end.
  void resume_state() {
    PartitionList parts(state_partitions);
    json from = json::object();
    for (int32_t p = 0; p < state_partitions; ++p) {
      int64_t next = RD_KAFKA_OFFSET_BEGINNING;
      if (auto v = coordinator.store().meta(checkpoint_name(cc.state_topic, p))) {
        try {
          next = std::stoll(*v);
        } catch (const std::exception&) {
          next = RD_KAFKA_OFFSET_BEGINNING;
        }
      }
      {
        std::lock_guard lock(state_mu);
        state_next[p] = next < 0 ? 0 : next;
      }
      from[std::to_string(p)] = next < 0 ? 0 : next;
      rd_kafka_topic_partition_list_add(parts.p, cc.state_topic.c_str(), p)->offset = next;
    }
    rd_kafka_assign(state, parts.p);
    const bool done = apply_state(true, Steady::now() + std::chrono::seconds(30));
    json reached = json::object();
    {
      std::lock_guard lock(state_mu);
      for (const auto& [p, n] : state_next) reached[std::to_string(p)] = n;
    }
    log_line({{"level", done ? "info" : "warn"},
              {"event", "state_resumed"},
              {"from", from},
              {"reached", reached},
              {"complete", done}});
  }

  // --- reports -----------------------------------------------------------------------------

  // The forward_report hook: a report posted over HTTP for a topic another member owns is
  // written to the reports topic as the client's kafka transport writes it (keyed by topic,
  // in the topic's partition), and acknowledged once Kafka has it.
  std::optional<CallResult> forward_report(const Report& r) {
    if (owns(r.topic)) return std::nullopt;
    const Sent sent =
        produce_and_wait(cc.reports_topic, partition_of(r.topic), r.topic, encode_report_binary(r),
                         kReportVersionHeader, "1", kReportAckTimeout);
    CallResult res;
    if (sent.produced != RD_KAFKA_RESP_ERR_NO_ERROR || !sent.acked ||
        sent.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      res.status = Status::kUnavailable;
      res.reason = "reports_topic";
      if (sent.produced != RD_KAFKA_RESP_ERR_NO_ERROR) {
        res.error = std::string("cannot forward the report to the reports topic: ") +
                    rd_kafka_err2str(sent.produced);
      } else if (!sent.acked) {
        res.error = "the reports topic did not acknowledge the forwarded report in time";
      } else {
        res.error = std::string("the reports topic refused the forwarded report: ") +
                    rd_kafka_err2str(sent.err);
      }
      return res;
    }
    reports_forwarded.fetch_add(1);
    return res;
  }

  bool reported_before_delete(const std::string& topic, const rd_kafka_message_t* m) {
    rd_kafka_timestamp_type_t type;
    const int64_t ts = rd_kafka_message_timestamp(m, &type);
    if (ts < 0) return false;
    std::lock_guard lock(deleted_at_mu);
    auto it = deleted_at.find(topic);
    if (it == deleted_at.end()) {
      if (deleted_at.size() >= 100000) deleted_at.clear();  // topic names are unbounded
      int64_t at = 0;
      coordinator.deleted_version(topic, &at);
      it = deleted_at.emplace(topic, at).first;
    }
    return ts <= it->second;
  }

  void on_report(const rd_kafka_message_t* m) {
    if (auto v = header(m, kReportVersionHeader); v && *v != "1") {
      reports_skipped.fetch_add(1);
      return;
    }
    if (!m->payload) {
      reports_skipped.fetch_add(1);
      return;
    }
    Report r;
    try {
      r = decode_report_binary(std::string_view(static_cast<const char*>(m->payload), m->len),
                               config.limits);
    } catch (const std::exception&) {
      reports_skipped.fetch_add(1);
      return;
    }
    // A report keyed or partitioned against the contract would feed a topic another member
    // owns.
    if (partition_of(r.topic) != m->partition) {
      reports_skipped.fetch_add(1);
      return;
    }
    if (reported_before_delete(r.topic, m)) {
      reports_skipped.fetch_add(1);
      return;
    }
    CallResult res = coordinator.ingest(std::move(r));
    if (res.ok()) {
      reports_ingested.fetch_add(1);
    } else {
      reports_skipped.fetch_add(1);
    }
  }

  void loop() {
    auto next_republish = Steady::now() + std::chrono::milliseconds(cc.republish_interval_ms);
    auto next_pending = Steady::now();
    while (!stop_flag.load()) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 100);
      if (m) {
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          on_report(m);
        } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
          log_line({{"level", "warn"},
                    {"event", "kafka_consume_error"},
                    {"error", rd_kafka_message_errstr(m)}});
        }
        rd_kafka_message_destroy(m);
      }
      rd_kafka_poll(producer, 0);
      const auto now = Steady::now();
      if (!pending.empty() && now >= next_pending) {
        take_ownership();
        // At once after an assignment, then every second while it fails.
        next_pending = pending.empty() ? now : Steady::now() + std::chrono::seconds(1);
      }
      if (now >= next_republish) {
        republish();
        next_republish = now + std::chrono::milliseconds(cc.republish_interval_ms);
      }
    }
    // Leaving the group hands the partitions over at once (the revoke runs here).
    rd_kafka_consumer_close(consumer);
    rd_kafka_flush(producer, 5000);
  }

  // Follows every lists partition: any member can then answer list reads for any topic, and
  // the authors of the latest versions say who owns what.
  void tail() {
    PartitionList all(partitions);
    for (int32_t p = 0; p < partitions; ++p) {
      rd_kafka_topic_partition_list_add(all.p, cc.lists_topic.c_str(), p)->offset =
          RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(tailer, all.p);
    while (!stop_flag.load()) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(tailer, 200);
      if (!m) continue;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && !m->payload && m->key) {
        on_tombstone(std::string(static_cast<const char*>(m->key), m->key_len));
      } else if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->payload) {
        try {
          HotKeyList list = parse_list_json(
              std::string_view(static_cast<const char*>(m->payload), m->len), config.limits);
          const std::string member = header(m, kMemberHeader).value_or("");
          bool newer = false;
          {
            std::lock_guard lock(view_mu);
            Owner& o = owners[list.topic];
            if (list.version > o.version) {
              o = Owner{list.version, member};
              newer = true;
            }
            if (!member.empty()) members_seen[member] = wall_ms();
          }
          if (newer) {
            std::string text(static_cast<const char*>(m->payload), m->len);
            coordinator.board().publish_if_newer(
                std::make_shared<PublishedList>(PublishedList{std::move(list), std::move(text)}));
          }
        } catch (const std::exception&) {
          // Not a list any client would accept: ignored the same way.
        }
      }
      rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(tailer, nullptr);
  }

  // A tombstone on the lists topic: the topic was deleted. Nobody owns it any more (its last
  // version is kept: an older list read later is still not newer) and list reads answer as for
  // an unknown topic, unless this member already published a re-created topic's list above it.
  void on_tombstone(const std::string& topic) {
    uint64_t last = 0;
    {
      std::lock_guard lock(view_mu);
      auto it = owners.find(topic);
      if (it == owners.end()) return;
      last = it->second.version;
      it->second.member.clear();
    }
    auto pub = coordinator.board().get(topic);
    if (pub && pub->list.version <= last && !owns(topic)) coordinator.board().unpublish(topic);
  }

  std::string owner_elsewhere(const std::string& topic) const {
    if (owns(topic)) return "";
    std::lock_guard lock(view_mu);
    auto it = owners.find(topic);
    return it == owners.end() || it->second.member == advertised_url ? "" : it->second.member;
  }

  api::ClusterView status() const {
    api::ClusterView v;
    v.mode = "cluster";
    {
      std::shared_lock lock(owned_mu);
      for (const auto& [p, epoch] : owned) v.owned_partitions[std::to_string(p)] = epoch;
    }
    {
      std::lock_guard lock(view_mu);
      v.member_id = member_id;
      const int64_t now = wall_ms();
      std::set<std::string> live{advertised_url};
      for (const auto& [m, at] : members_seen) {
        // A member writes every owned list at least every republish interval.
        if (now - at <= 3 * static_cast<int64_t>(cc.republish_interval_ms)) live.insert(m);
      }
      v.members.assign(live.begin(), live.end());
      for (const auto& [topic, o] : owners) {
        if (!o.member.empty()) v.owners[topic] = o.member;
      }
    }
    // This member's own view of what it owns wins over the tailer's (which lags).
    for (const auto& s : coordinator.topics()) {
      if (owns(s.topic)) v.owners[s.topic] = advertised_url;
    }
    v.url = advertised_url;
    v.group = cc.group;
    v.generation = rebalances.load();
    v.partitions = partitions;
    v.reports_ingested = reports_ingested.load();
    v.reports_forwarded = reports_forwarded.load();
    v.reports_skipped = reports_skipped.load();
    v.lists_produced = lists_produced.load();
    v.lists_dropped = lists_dropped.load();
    return v;
  }
};

KafkaCluster::KafkaCluster(const CoordinatorConfig& config, Coordinator& coordinator,
                           std::string advertised_url)
    : impl_(std::make_unique<Impl>(config, coordinator, std::move(advertised_url))) {}

KafkaCluster::~KafkaCluster() {
  stop();
  for (rd_kafka_t* h :
       {impl_->consumer, impl_->reader, impl_->tailer, impl_->state, impl_->producer}) {
    if (h) rd_kafka_destroy(h);
  }
}

bool KafkaCluster::start(std::string* error) {
  Impl& d = *impl_;
  if (!d.create_handles(error)) return false;
  if (!d.check_topics(error)) return false;
  ClusterHooks hooks;
  hooks.owns = [&d](const std::string& t) { return d.owns(t); };
  hooks.version_floor = [&d](const std::string& t) { return d.version_floor(t); };
  hooks.on_publish = [&d](const std::shared_ptr<const PublishedList>& l) { d.publish(l); };
  hooks.cluster_view = [&d] { return d.status(); };
  hooks.operator_write = [&d](const OperatorOp& op) { return d.write_state(op); };
  hooks.forward_report = [&d](const Report& r) { return d.forward_report(r); };
  hooks.owner_elsewhere = [&d](const std::string& t) { return d.owner_elsewhere(t); };
  hooks.on_delete = [&d](const std::string& t, uint64_t v, int64_t at) { d.tombstone(t, v, at); };
  hooks.request_delete = [&d](const OperatorOp& op) { d.request_delete(op); };
  d.coordinator.set_cluster_hooks(std::move(hooks));
  // Operator state first: a member that takes over a topic plans with every pin it can know.
  d.resume_state();
  PartitionList sub(1);
  rd_kafka_topic_partition_list_add(sub.p, d.cc.reports_topic.c_str(), RD_KAFKA_PARTITION_UA);
  if (rd_kafka_resp_err_t err = rd_kafka_subscribe(d.consumer, sub.p)) {
    *error =
        std::string("cannot subscribe to ") + d.cc.reports_topic + ": " + rd_kafka_err2str(err);
    return false;
  }
  d.loop_thread = std::thread([&d] { d.loop(); });
  d.tail_thread = std::thread([&d] { d.tail(); });
  d.state_thread = std::thread([&d] { d.apply_state(false, Steady::time_point::max()); });
  log_line({{"level", "info"},
            {"event", "cluster_joining"},
            {"bootstrap", d.cc.bootstrap},
            {"group", d.cc.group},
            {"partitions", d.partitions},
            {"url", d.advertised_url}});
  return true;
}

void KafkaCluster::stop() {
  Impl& d = *impl_;
  d.stop_flag.store(true);
  if (d.loop_thread.joinable()) d.loop_thread.join();
  if (d.tail_thread.joinable()) d.tail_thread.join();
  if (d.state_thread.joinable()) d.state_thread.join();
}

}  // namespace hotkey::coordinator
