// The Coordinator facade: construction from the store, the topic registry and its lifecycle
// (creation, resize, idle expiry, delete), and the cluster seams (release, adopt).
#include "coordinator_topic.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <stdexcept>

namespace hotkey::coordinator {

const char* to_string(Status s) {
  switch (s) {
    case Status::kOk:
      return "ok";
    case Status::kInvalid:
      return "invalid";
    case Status::kNotFound:
      return "not_found";
    case Status::kConflict:
      return "conflict";
    case Status::kLimit:
      return "limit";
    case Status::kUnavailable:
      return "unavailable";
    case Status::kUnsupported:
      return "unsupported";
    case Status::kInternal:
      return "internal";
  }
  return "internal";
}

CallResult error_result(Status status, std::string reason, std::string message) {
  CallResult r;
  r.status = status;
  r.reason = std::move(reason);
  r.error = std::move(message);
  return r;
}

CallResult not_found(const std::string& what, const std::string& topic) {
  return error_result(Status::kNotFound, "not_found",
                      "no such " + what + " for this key in topic '" + topic + "'");
}

CallResult LocalPlacement::forward_report(const Report&, std::string_view) {
  return error_result(Status::kInternal, "internal", "single-node mode has no other member");
}

Coordinator::Coordinator(const CoordinatorConfig& config, StateStore& store, MetricsSink& metrics,
                         const Clock& clock, LogSink& log)
    : config_(config),
      store_(store),
      metrics_(metrics),
      clock_(clock),
      log_(log),
      board_(config.max_waiters),
      started_ms_(clock.now_ms()),
      topics_(std::make_unique<TopicRegistry>(config.max_topics, config.max_tracked_partitions)) {
  std::string error;
  std::vector<std::string> skipped;
  auto stored = store_.load(&error, &skipped);
  if (!error.empty()) throw std::runtime_error(error);
  // A damaged list is derived data: planned again from fresh reports, above the topic's
  // persisted version counter, instead of keeping the whole service down.
  for (const std::string& what : skipped) {
    metrics_.store_record_skipped();
    log_.write(json{{"ts_ms", clock_.now_ms()},
                    {"level", "error"},
                    {"event", "store_record_skipped"},
                    {"error", what}});
  }
  for (auto& [name, st] : stored) {
    // Only the version counter of a dropped topic: no topic to track (a topic of that name
    // created later starts above the counter).
    if (!st.list && !st.meta && st.pins.empty() && st.denies.empty() && st.policies.empty()) {
      continue;
    }
    auto t = std::make_shared<Topic>(name, config_, metrics_.topic(name), st.version, started_ms_);
    const int32_t partitions = st.list ? st.list->partitions : st.meta ? st.meta->partitions : 0;
    topics_->add(t, partitions);
    TopicLock locked(*t);
    if (std::optional<HotKeyList> list = locked->load(std::move(st), started_ms_)) {
      publish(locked, *list);
    }
  }
}

Coordinator::~Coordinator() {
  stop_background();
  board_.close();
}

std::shared_ptr<Topic> Coordinator::find_topic(const std::string& name) const {
  return topics_->find(name);
}

std::shared_ptr<Topic> Coordinator::get_or_create_topic(const std::string& name, bool* created) {
  return topics_->get_or_create(
      name,
      [&] {
        return std::make_shared<Topic>(name, config_, metrics_.topic(name),
                                       store_.version_counter(name).value_or(0), clock_.now_ms());
      },
      created);
}

void Coordinator::retire(TopicLock& t) {
  topics_->resize(t, 0, false);
  board_.unpublish(t->name());
  t.retire();  // removes the topic's series, then marks it removed
}

void Coordinator::discard_if_unused(const std::shared_ptr<Topic>& t) {
  topics_->erase_if(t, [&](TopicLock& topic) {
    if (topic->removed() || !topic->untouched()) return false;
    retire(topic);
    return true;
  });
}

StoreStatus Coordinator::drop_topic(const std::shared_ptr<Topic>& t, TopicLock& lock,
                                    std::optional<AuditEntry> audit, StoreBatch batch,
                                    const std::function<void()>& before_retire) {
  lock->drop_records(batch);
  if (audit) batch.append_audit(std::move(*audit));
  double latency = 0;
  StoreStatus st = store_.write(batch, &latency);
  metrics_.store_write_latency(latency);
  metrics_.set_store_healthy(st.ok);
  if (!st.ok) return st;
  if (before_retire) before_retire();
  retire(lock);
  lock.unlock();
  topics_->erase(t);
  return st;
}

bool Coordinator::expire_if_idle(const std::shared_ptr<Topic>& t, int64_t now) {
  if (config_.topic_idle_ttl_ms <= 0) return false;
  TopicLock lock(*t);
  const auto idle = [&] { return !lock->removed() && lock->idle(now, config_.topic_idle_ttl_ms); };
  if (!idle()) return false;
  OperatorOp op;
  op.op = "delete_topic";
  op.topic = t->name();
  op.reason = "idle for " + std::to_string(now - lock->last_active_ms()) + " ms";
  op.who = "system";
  op.at_ms = now;
  op.version = lock->known_version();
  op.expired = true;
  lock.unlock();
  // Cluster mode (the caller owns the topic): the expiry goes through the state topic, and
  // every member drops the topic when it applies it (apply_delete).
  if (placement_->request_delete(op)) return false;
  lock.lock();
  if (!idle()) return false;
  const uint64_t version = lock->version();
  const int64_t idle_ms = now - lock->last_active_ms();
  StoreStatus st = drop_topic(t, lock, std::nullopt);
  if (!st.ok) {
    log_store_error(t->name(), st);
    return false;
  }
  log_.write(json{{"ts_ms", now},
                  {"level", "info"},
                  {"event", "topic_expired"},
                  {"topic", t->name()},
                  {"idle_ms", idle_ms},
                  {"version", version}});
  return true;
}

namespace {
// The audit entry of a topic's delete (single-node delete_topic and cluster apply_delete).
AuditEntry delete_audit(int64_t at_ms, const std::string& who, const std::string& topic,
                        const std::string& reason, size_t pins, size_t denies, size_t policies,
                        int32_t partitions, uint64_t version) {
  AuditEntry a;
  a.at_ms = at_ms;
  a.who = who;
  a.action = "delete_topic";
  a.topic = topic;
  a.detail = json{{"reason", reason},
                  {"pins", pins},
                  {"denies", denies},
                  {"policies", policies},
                  {"partitions", partitions}}
                 .dump(-1, ' ', false, json::error_handler_t::replace);
  a.version = version;
  return a;
}
}  // namespace

CallResult Coordinator::delete_topic(const std::string& topic, const std::string& reason,
                                     const std::string& who) {
  const auto unknown = [&] {
    return error_result(Status::kNotFound, "not_found", "unknown topic '" + topic + "'");
  };
  // Cluster mode shares the delete (every member applies it, the owner tombstones the topic's
  // list); the record carries the highest version known here, so the counter every member
  // keeps is at least that.
  bool known = false;
  uint64_t known_version = 0;
  if (std::shared_ptr<Topic> t = find_topic(topic)) {
    TopicLock lock(*t);
    known = !lock->removed();
    known_version = lock->known_version();
  }
  if (auto pub = board_.get(topic)) {
    known = true;
    known_version = std::max(known_version, pub->list.version);
  }
  if (!known) return unknown();
  OperatorOp op;
  op.op = "delete_topic";
  op.topic = topic;
  op.reason = reason;
  op.who = who;
  op.at_ms = clock_.now_ms();
  op.version = known_version;
  if (std::optional<CallResult> shared = placement_->forward_operator(op)) return *shared;
  std::shared_ptr<Topic> t = find_topic(topic);
  if (!t) return unknown();
  TopicLock lock(*t);
  if (lock->removed()) return unknown();
  const uint64_t version = lock->version();
  StoreStatus st = drop_topic(
      t, lock,
      delete_audit(clock_.now_ms(), who, topic, reason, lock->pins().size(), lock->denies().size(),
                   lock->policies().size(), lock->partitions(), version));
  if (!st.ok) return error_result(Status::kUnavailable, "store", st.error);
  CallResult r;
  r.version = version;
  return r;
}

namespace {
// Store meta record: the version a topic had when it was last deleted in cluster mode.
std::string deleted_mark(const std::string& topic) { return "cluster/deleted_version/" + topic; }
}  // namespace

uint64_t Coordinator::deleted_version(const std::string& topic, int64_t* at_ms) const {
  if (at_ms) *at_ms = 0;
  auto v = store_.meta(deleted_mark(topic));  // "<version> <at_ms>"
  if (!v) return 0;
  try {
    size_t used = 0;
    const uint64_t version = std::stoull(*v, &used);
    if (at_ms && used < v->size()) *at_ms = std::stoll(v->substr(used));
    return version;
  } catch (const std::exception&) {
    return 0;
  }
}

CallResult Coordinator::apply_delete(const OperatorOp& op,
                                     const std::function<void(StoreBatch&)>& extra) {
  const std::string& topic = op.topic;
  uint64_t floor = op.version;
  if (auto pub = board_.get(topic)) floor = std::max(floor, pub->list.version);
  const auto log_expired = [&](uint64_t version) {
    log_.write(json{{"ts_ms", clock_.now_ms()},
                    {"level", "info"},
                    {"event", "topic_expired"},
                    {"topic", topic},
                    {"reason", op.reason},
                    {"version", version}});
  };
  const auto audit = [&](uint64_t version, size_t pins, size_t denies, size_t policies,
                         int32_t partitions) {
    return delete_audit(clock_.now_ms(), op.who, topic, op.reason, pins, denies, policies,
                        partitions, version);
  };
  for (;;) {
    std::shared_ptr<Topic> t = find_topic(topic);
    if (!t) {
      // Not live here (another member's topic without pins or denies, or gone already): the
      // counter and the mark are kept all the same, so this member never publishes the topic
      // below the deleted versions should it own it later.
      const uint64_t counter = std::max(floor, store_.version_counter(topic).value_or(0));
      StoreBatch b;
      b.drop_topic(topic, counter);
      b.put_meta(deleted_mark(topic), std::to_string(counter) + " " + std::to_string(op.at_ms));
      if (!op.expired) b.append_audit(audit(counter, 0, 0, 0, 0));
      if (extra) extra(b);
      StoreStatus st = store_.write(b);
      if (!st.ok) return error_result(Status::kUnavailable, "store", st.error);
      board_.unpublish(topic);
      placement_->on_delete(topic, counter, op.at_ms);
      if (op.expired) log_expired(counter);
      CallResult r;
      r.version = counter;
      return r;
    }
    TopicLock lock(*t);
    if (lock->removed()) continue;
    // An expiry loses to what happened since it was requested: a pin or deny (every member
    // holds the same, so every member keeps the topic), or a report the owner took.
    if (op.expired &&
        (!lock->no_operator_state() || (owns(topic) && lock->last_active_ms() > op.at_ms))) {
      lock.unlock();
      if (extra) {
        StoreBatch b;
        extra(b);
        StoreStatus st = store_.write(b);
        if (!st.ok) return error_result(Status::kUnavailable, "store", st.error);
      }
      return error_result(Status::kConflict, "active", "topic '" + topic + "' is active again");
    }
    const uint64_t counter = std::max(floor, lock->known_version());
    lock->raise_version(counter);
    std::optional<AuditEntry> a;
    if (!op.expired) {
      a = audit(counter, lock->pins().size(), lock->denies().size(), lock->policies().size(),
                lock->partitions());
    }
    StoreBatch b;
    b.put_meta(deleted_mark(topic), std::to_string(counter) + " " + std::to_string(op.at_ms));
    if (extra) extra(b);
    StoreStatus st = drop_topic(t, lock, std::move(a), std::move(b),
                                [&] { placement_->on_delete(topic, counter, op.at_ms); });
    if (!st.ok) {
      metrics_.set_store_healthy(false);
      return error_result(Status::kUnavailable, "store", st.error);
    }
    if (op.expired) log_expired(counter);
    CallResult r;
    r.version = counter;
    return r;
  }
}

void Coordinator::release_topics(const std::function<bool(const std::string& topic)>& which) {
  for (const auto& t : topics_->all()) {
    if (!which(t->name())) continue;
    TopicLock lock(*t);
    if (!lock->removed()) lock->release(config_);
  }
}

uint64_t Coordinator::adopt_list(HotKeyList list) {
  std::shared_ptr<Topic> t;
  bool created = false;
  TopicLock lock;
  for (;;) {
    t = get_or_create_topic(list.topic, &created);
    if (!t) return 0;
    lock = TopicLock(*t);
    if (!lock->removed()) break;
    lock.unlock();
  }
  const uint64_t floor = placement_->version_floor(list.topic);
  // The fleet routes with the list as the previous owner issued it until the re-issued
  // version reaches it (and the rebuilt window holds its reports): the same tables under the
  // old version, so those reports' partition counts are accounted, not dropped as routed with
  // a list this member never saw.
  auto previous = std::make_shared<PublishedList>(PublishedList{list, list_to_json(list)});
  list.version = std::max(lock->version(), floor) + 1;
  StoreBatch batch;
  batch.put_list(list);
  batch.put_topic_meta(list.topic, TopicMeta{list.partitions, list.hash, list.separator});
  StoreStatus st = store_.write(batch);
  if (!st.ok) log_store_error(list.topic, st);
  // Reports already read into the window keep their counts when the partition count holds.
  const bool repartition = lock->partitions() != list.partitions;
  topics_->resize(lock, list.partitions, false);
  lock->adopt(list, previous, repartition, clock_.now_ms());
  publish(lock, list);
  return list.version;
}

}  // namespace hotkey::coordinator
