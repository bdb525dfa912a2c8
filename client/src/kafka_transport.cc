#include "kafka_transport.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hotkey/partitioner.h"

namespace hotkey::client {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::string_view kDefaultGroup = "hotkey.clients";

// Settings the transport chooses; the application's hotkey.kafka.* settings come after and win.
const std::vector<std::pair<std::string, std::string>> kProducerDefaults = {
    {"enable.idempotence", "true"},
    {"acks", "all"},
    {"partitioner", "murmur2_random"},
    // A report is worth little after a minute, and a bounded queue keeps an outage's memory
    // bounded; a full queue refuses the report and the client core drops its oldest.
    {"message.timeout.ms", "60000"},
    {"queue.buffering.max.messages", "10000"},
    {"linger.ms", "5"},
    // The reports topic belongs to the coordinators (they create it with its partition count).
    {"allow.auto.create.topics", "false"},
};
const std::vector<std::pair<std::string, std::string>> kConsumerDefaults = {
    // assign() needs a group id; the group is never joined and nothing is committed.
    {"group.id", std::string(kDefaultGroup)},
    {"enable.auto.commit", "false"},
    {"enable.auto.offset.store", "false"},
    {"auto.offset.reset", "earliest"},
    {"enable.partition.eof", "true"},
    {"allow.auto.create.topics", "false"},
    // A tailing reader of a low-rate topic (hotkey/kafka_contract.h). librdkafka's mock
    // cluster answers at the wait instead of on append.
    {"fetch.wait.max.ms", std::string(kListsFetchWaitMs)},
};

rd_kafka_conf_t* make_conf(const std::vector<std::pair<std::string, std::string>>& defaults,
                           const std::vector<std::pair<std::string, std::string>>& settings) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const std::string& name, const std::string& value) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof(errstr)) !=
        RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw std::invalid_argument("hotkey.kafka." + name + "=\"" + value + "\": " + errstr);
    }
  };
  for (const auto& [name, value] : defaults) set(name, value);
  for (const auto& [name, value] : settings) set(name, value);
  return conf;
}

}  // namespace

struct KafkaTransport::Impl {
  const ClientConfig config;
  Router& router;
  detail::Staleness& staleness;
  OnRecord on_record;

  rd_kafka_t* consumer = nullptr;
  std::mutex producer_mu;
  rd_kafka_t* producer = nullptr;       // guarded by producer_mu (replaced after a fatal error)
  rd_kafka_topic_t* reports = nullptr;  // guarded by producer_mu
  std::atomic<bool> producer_fatal{false};

  std::atomic<uint64_t> delivered{0}, undelivered{0};
  std::atomic<int32_t> partitions_seen{0};

  std::mutex pending_mu;
  std::vector<TopicId> pending;  // guarded by pending_mu: topics added since the last round
  std::atomic<bool> stopping{false};
  std::thread thread;

  // ---- the thread's own state -----------------------------------------------------------
  int32_t partitions = 0;  // of the lists topic, from metadata
  Clock::time_point metadata_due = Clock::now();
  milliseconds metadata_backoff{100};
  struct Followed {
    TopicId id;
    std::string name;
    int32_t partition = -1;
  };
  std::vector<Followed> followed;
  std::unordered_map<std::string, size_t> followed_by_name;
  std::set<int32_t> assigned;
  std::map<int32_t, int64_t> next_offset;  // per assigned partition: after the last record read
  std::map<int32_t, Clock::time_point> contact;  // per partition: last sign of a live broker
  // Ownership heartbeats: partitions read to their end once since assigned (heartbeats read
  // before that are history), and per partition the last heartbeat received after that (by
  // this client's clock) and the interval it announced.
  std::set<int32_t> caught_up;
  struct Heartbeat {
    Clock::time_point at;
    milliseconds interval{0};
  };
  std::map<int32_t, Heartbeat> heartbeats;
  // The newest record of every key read from the assigned partitions (nullopt: tombstone), so a
  // topic registered later on an already assigned partition starts from its current list.
  std::unordered_map<std::string, std::optional<std::string>> latest;
  const Clock::time_point started = Clock::now();

  Impl(const ClientConfig& c, Router& r, detail::Staleness& st, OnRecord cb)
      : config(c), router(r), staleness(st), on_record(cb) {}

  static void delivery_cb(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    (m->err == RD_KAFKA_RESP_ERR_NO_ERROR ? self->delivered : self->undelivered).fetch_add(1);
  }
  static void producer_error_cb(rd_kafka_t*, int err, const char*, void* opaque) {
    if (err == RD_KAFKA_RESP_ERR__FATAL) static_cast<Impl*>(opaque)->producer_fatal.store(true);
  }

  void create_producer() {
    char errstr[512];
    rd_kafka_conf_t* conf = make_conf(kProducerDefaults, config.kafka_settings);
    rd_kafka_conf_set_opaque(conf, this);
    rd_kafka_conf_set_dr_msg_cb(conf, &Impl::delivery_cb);
    rd_kafka_conf_set_error_cb(conf, &Impl::producer_error_cb);
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (rk == nullptr) {
      rd_kafka_conf_destroy(conf);
      throw std::runtime_error(std::string("cannot create the reports producer: ") + errstr);
    }
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, config.reports_topic.c_str(), nullptr);
    std::lock_guard lock(producer_mu);
    producer = rk;
    reports = rkt;
  }

  void destroy_producer(milliseconds flush_for) {
    rd_kafka_t* rk = nullptr;
    rd_kafka_topic_t* rkt = nullptr;
    {
      std::lock_guard lock(producer_mu);
      rk = std::exchange(producer, nullptr);
      rkt = std::exchange(reports, nullptr);
    }
    if (rk == nullptr) return;
    if (flush_for.count() > 0) rd_kafka_flush(rk, static_cast<int>(flush_for.count()));
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
  }

  void create_consumer() {
    char errstr[512];
    rd_kafka_conf_t* conf = make_conf(kConsumerDefaults, config.kafka_settings);
    if (ttl_enabled() || staleness.enabled()) {
      // Contact on a quiet partition (no record, no new end of log) comes from the statistics.
      uint32_t every = UINT32_MAX;
      if (ttl_enabled()) every = config.list_ttl_ms / 4;
      if (staleness.enabled()) every = std::min(every, staleness.bound_ms() / 4);
      every = std::clamp<uint32_t>(every, 100, 5000);
      rd_kafka_conf_set(conf, "statistics.interval.ms", std::to_string(every).c_str(), errstr,
                        sizeof(errstr));
      rd_kafka_conf_set_stats_cb(conf, &Impl::stats_cb);
      rd_kafka_conf_set_opaque(conf, this);
    }
    consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (consumer == nullptr) {
      rd_kafka_conf_destroy(conf);
      throw std::runtime_error(std::string("cannot create the lists consumer: ") + errstr);
    }
    rd_kafka_poll_set_consumer(consumer);
  }

  // The lists topic's partition count from metadata; 0 while unknown (no topic yet, no broker).
  // Asks for all topics: a request naming a missing topic makes brokers with
  // auto.create.topics.enable (and the mock cluster, whatever the request says) create it with
  // their default partition count, which would break the co-partitioning with the reports topic.
  int32_t query_partitions() {
    const rd_kafka_metadata_t* md = nullptr;
    int32_t out = 0;
    if (rd_kafka_metadata(consumer, 1, nullptr, &md, 2000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      for (int i = 0; i < md->topic_cnt; ++i) {
        if (config.lists_topic == md->topics[i].topic &&
            md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          out = md->topics[i].partition_cnt;
        }
      }
      rd_kafka_metadata_destroy(md);
    }
    return out;
  }

  void assign() {
    rd_kafka_topic_partition_list_t* parts =
        rd_kafka_topic_partition_list_new(static_cast<int>(assigned.size()));
    for (int32_t p : assigned) {
      auto it = next_offset.find(p);
      rd_kafka_topic_partition_list_add(parts, config.lists_topic.c_str(), p)->offset =
          it == next_offset.end() ? RD_KAFKA_OFFSET_BEGINNING : it->second;
    }
    rd_kafka_assign(consumer, parts);
    rd_kafka_topic_partition_list_destroy(parts);
  }

  void deliver(const Followed& f, const std::optional<std::string>& value) {
    try {
      on_record(f.id, value);
    } catch (...) {
      // The callback validates and counts; nothing it throws may stop the thread.
    }
  }

  // Places every followed topic on its partition; returns whether the assignment grew.
  bool place_topics() {
    bool grew = false;
    for (Followed& f : followed) {
      if (f.partition >= 0 || partitions < 1) continue;
      f.partition = topic_partition(f.name, partitions);
      if (assigned.insert(f.partition).second) {
        grew = true;
      } else {
        if (auto it = latest.find(f.name); it != latest.end()) deliver(f, it->second);
        if (caught_up.count(f.partition) != 0) staleness.set_known(f.id);
      }
    }
    return grew;
  }

  void refresh_metadata(Clock::time_point now) {
    if (now < metadata_due) return;
    int32_t n = query_partitions();
    if (n < 1) {
      metadata_due = now + metadata_backoff;
      metadata_backoff = std::min(metadata_backoff * 2, milliseconds(5000));
      return;
    }
    metadata_backoff = milliseconds(100);
    metadata_due = now + milliseconds(300000);
    if (n == partitions) return;
    // First answer, or the lists topic was recreated with another count: every topic moves,
    // read it all again (the router still refuses versions at or below what it routes with).
    partitions = n;
    partitions_seen.store(n);
    assigned.clear();
    next_offset.clear();
    latest.clear();
    caught_up.clear();
    heartbeats.clear();
    for (Followed& f : followed) f.partition = -1;
    place_topics();
    assign();
  }

  void take_pending() {
    std::vector<TopicId> ids;
    {
      std::lock_guard lock(pending_mu);
      ids.swap(pending);
    }
    for (TopicId id : ids) {
      std::string name = router.topic_name(id);
      if (followed_by_name.count(name) != 0) continue;
      followed_by_name.emplace(name, followed.size());
      followed.push_back(Followed{id, std::move(name), -1});
    }
    if (!ids.empty() && place_topics()) assign();
  }

  void handle(rd_kafka_message_t* m, Clock::time_point now) {
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      contact[m->partition] = now;
      if (caught_up.insert(m->partition).second) {
        // Read to its end: a followed topic without a record there has no list.
        for (const Followed& f : followed) {
          if (f.partition == m->partition) staleness.set_known(f.id);
        }
      }
      return;
    }
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) metadata_due = now;
      return;
    }
    contact[m->partition] = now;
    next_offset[m->partition] = m->offset + 1;
    if (m->key == nullptr) return;
    std::string key(static_cast<const char*>(m->key), m->key_len);
    if (key == kOwnerHeartbeatKey) {
      on_heartbeat(m, now);
      return;
    }
    std::optional<std::string> value;
    if (m->payload != nullptr) value.emplace(static_cast<const char*>(m->payload), m->len);
    if (auto it = followed_by_name.find(key); it != followed_by_name.end()) {
      deliver(followed[it->second], value);
    }
    latest.insert_or_assign(std::move(key), std::move(value));
  }

  // One ownership heartbeat (hotkey/kafka_contract.h). Another format version, or one naming
  // another partition, is skipped. Its at_ms is the writer's clock and is not used: the reader
  // times heartbeats by its own.
  void on_heartbeat(const rd_kafka_message_t* m, Clock::time_point now) {
    if (m->payload == nullptr || caught_up.count(m->partition) == 0) return;
    const auto beat =
        parse_owner_heartbeat(std::string_view(static_cast<const char*>(m->payload), m->len));
    if (!beat || beat->partition != m->partition) return;
    heartbeats[m->partition] =
        Heartbeat{now, milliseconds(std::min<uint32_t>(beat->interval_ms, 3600000))};
  }

  // hotkey.list.stale.ms: a followed topic's list is stale when its lists partition gave no
  // sign of a live broker for the bound, or when the partition carried ownership heartbeats
  // and none came for the bound (or twice the announced interval, when that is longer). A
  // topic that stops being stale has its local tables dropped at once.
  void apply_staleness(Clock::time_point now) {
    if (!staleness.enabled()) return;
    const milliseconds bound(staleness.bound_ms());
    for (const Followed& f : followed) {
      Clock::time_point last = started;
      if (auto it = contact.find(f.partition); it != contact.end()) last = it->second;
      bool gone = false;
      if (auto it = heartbeats.find(f.partition); it != heartbeats.end()) {
        gone = now - it->second.at > std::max(bound, 2 * it->second.interval);
      }
      const bool was = staleness.stale(f.id);
      staleness.set_unreachable(f.id, now - last > bound);
      staleness.set_owner_gone(f.id, gone);
      if (was && !staleness.stale(f.id)) router.drop_local_tables(f.id);
    }
  }

  bool ttl_enabled() const {
    return config.list_ttl_ms > 0 && config.expired_policy == ExpiredPolicy::kPlain;
  }

  // librdkafka's statistics (served by consumer_poll on this thread): a partition whose leader
  // broker is connected and whose fetcher is active is in contact, even when its log is quiet.
  // (rd_kafka_query_watermark_offsets would tell the same, but it blocks far past its timeout
  // while the leader is down.)
  static int stats_cb(rd_kafka_t*, char* json, size_t len, void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    try {
      self->stats_contact(nlohmann::json::parse(std::string_view(json, len)), Clock::now());
    } catch (const std::exception&) {
      // A statistics format we do not understand gives no contact; records and EOFs still do.
    }
    return 0;
  }

  void stats_contact(const nlohmann::json& stats, Clock::time_point now) {
    std::set<int64_t> up;
    for (const auto& [name, b] : stats.at("brokers").items()) {
      if (b.value("state", "") == "UP") up.insert(b.value("nodeid", int64_t{-1}));
    }
    auto topic = stats.at("topics").find(config.lists_topic);
    if (topic == stats.at("topics").end()) return;
    for (const auto& [id, part] : topic->at("partitions").items()) {
      int32_t p = std::stoi(id);
      if (p < 0 || assigned.count(p) == 0) continue;
      if (part.value("fetch_state", "") == "active" &&
          up.count(part.value("leader", int64_t{-1})) != 0) {
        contact[p] = now;
      }
    }
  }

  // hotkey.list.expired.policy=plain: a topic whose lists partition gave no sign of a live
  // broker (a record, the end of the log, an active fetcher on a connected leader) for
  // hotkey.list.ttl.ms routes cold; the first sign after that routes with its list again.
  void apply_ttl(Clock::time_point now) {
    if (!ttl_enabled()) return;
    const milliseconds ttl(config.list_ttl_ms);
    for (const Followed& f : followed) {
      Clock::time_point last = started;
      if (auto it = contact.find(f.partition); it != contact.end()) last = it->second;
      bool expired = now - last > ttl;
      if (expired != router.plain(f.id)) router.set_plain(f.id, expired);
    }
  }

  void run() {
    while (!stopping.load()) {
      Clock::time_point now = Clock::now();
      if (producer_fatal.exchange(false)) {
        // An idempotent producer's fatal error (e.g. a sequence gap it cannot repair) ends that
        // producer; reports continue on a new one.
        destroy_producer(milliseconds(0));
        try {
          create_producer();
        } catch (...) {
          producer_fatal.store(true);
        }
      }
      take_pending();
      refresh_metadata(now);
      for (int i = 0; i < 1000; ++i) {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, i == 0 ? 50 : 0);
        if (m == nullptr) break;
        handle(m, Clock::now());
        rd_kafka_message_destroy(m);
      }
      {
        std::lock_guard lock(producer_mu);
        if (producer != nullptr) rd_kafka_poll(producer, 0);
      }
      apply_ttl(Clock::now());
      apply_staleness(Clock::now());
    }
  }
};

KafkaTransport::KafkaTransport(const ClientConfig& config, Router& router,
                               detail::Staleness& staleness, OnRecord on_record)
    : impl_(std::make_unique<Impl>(config, router, staleness, std::move(on_record))) {
  impl_->create_producer();
  try {
    impl_->create_consumer();
  } catch (...) {
    impl_->destroy_producer(milliseconds(0));
    throw;
  }
  impl_->thread = std::thread([this] { impl_->run(); });
}

KafkaTransport::~KafkaTransport() {
  impl_->stopping.store(true);
  impl_->thread.join();
  rd_kafka_consumer_close(impl_->consumer);
  rd_kafka_destroy(impl_->consumer);
  impl_->destroy_producer(milliseconds(1000));
}

void KafkaTransport::add_topic(TopicId id) {
  std::lock_guard lock(impl_->pending_mu);
  impl_->pending.push_back(id);
}

bool KafkaTransport::send_report(std::string_view topic, std::string_view body) {
  std::lock_guard lock(impl_->producer_mu);
  if (impl_->producer == nullptr) return false;
  rd_kafka_headers_t* headers = rd_kafka_headers_new(1);
  rd_kafka_header_add(headers, kReportVersionHeader.data(),
                      static_cast<ssize_t>(kReportVersionHeader.size()), kReportVersion.data(),
                      static_cast<ssize_t>(kReportVersion.size()));
  rd_kafka_resp_err_t err = rd_kafka_producev(
      impl_->producer, RD_KAFKA_V_RKT(impl_->reports),
      RD_KAFKA_V_KEY(const_cast<char*>(topic.data()), topic.size()),
      RD_KAFKA_V_VALUE(const_cast<char*>(body.data()), body.size()),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_END);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_headers_destroy(headers);  // not taken over on failure
    return false;
  }
  return true;
}

void KafkaTransport::flush(milliseconds timeout) {
  Clock::time_point end = Clock::now() + timeout;
  for (;;) {
    {
      std::lock_guard lock(impl_->producer_mu);
      if (impl_->producer == nullptr || rd_kafka_outq_len(impl_->producer) == 0) return;
    }
    if (Clock::now() >= end) return;
    std::this_thread::sleep_for(milliseconds(5));
  }
}

KafkaTransportStats KafkaTransport::stats() const {
  KafkaTransportStats s;
  s.reports_delivered = impl_->delivered.load();
  s.reports_undelivered = impl_->undelivered.load();
  s.lists_partitions = static_cast<uint64_t>(std::max(0, impl_->partitions_seen.load()));
  return s;
}

}  // namespace hotkey::client
