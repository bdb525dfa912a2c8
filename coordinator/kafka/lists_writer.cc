#include "lists_writer.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string_view>

#include "kafka_io.h"

namespace hotkey::coordinator::kafka {

int32_t ListsWriter::partition_of(const std::string& topic) const {
  return topic_partition(topic, partitions_);
}

bool ListsWriter::owns(const std::string& topic) const {
  const int32_t p = partition_of(topic);
  std::shared_lock lock(mu_);
  return owned_.contains(p);
}

uint64_t ListsWriter::version_floor(const std::string& topic) const {
  const int32_t p = partition_of(topic);
  std::shared_lock lock(mu_);
  auto it = owned_.find(p);
  return it == owned_.end() ? 0 : epoch_floor(it->second);
}

void ListsWriter::own(int32_t p, uint64_t epoch) {
  std::unique_lock lock(mu_);
  owned_[p] = epoch;
}

void ListsWriter::disown(const std::vector<int32_t>& parts) {
  std::unique_lock lock(mu_);
  for (int32_t p : parts) {
    owned_.erase(p);
    txn_.erase(p);
  }
}

ListsWriter::~ListsWriter() = default;

ListsWriter::TxnProducer::~TxnProducer() {
  if (rk) rd_kafka_destroy(rk);
}

bool ListsWriter::fence(const std::vector<int32_t>& parts, int budget_ms) {
  if (!fencing_) return true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(budget_ms);
  bool all = true;
  for (int32_t p : parts) {
    std::shared_ptr<TxnProducer> tp;
    {
      std::unique_lock lock(mu_);
      auto& slot = txn_[p];
      if (!slot || slot->dead) {
        slot = std::make_shared<TxnProducer>();
        std::string error;
        slot->rk = fencing_->lists_producer(cc_, p, &error);
        if (!slot->rk) {
          log_now(log_, {{"level", "error"},
                         {"event", "lists_fence_failed"},
                         {"partition", p},
                         {"error", error}});
          txn_.erase(p);
          all = false;
          continue;
        }
      }
      tp = slot;
    }
    std::lock_guard tl(tp->mu);
    if (tp->ready) continue;
    // Bounded by the caller's budget; a call that timed out resumes where it stopped.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left < 1) {
      all = false;
      continue;
    }
    if (rd_kafka_error_t* e = rd_kafka_init_transactions(tp->rk, static_cast<int>(left))) {
      log_now(log_, {{"level", "warn"},
                     {"event", "lists_fence_pending"},
                     {"partition", p},
                     {"error", rd_kafka_error_string(e)}});
      if (rd_kafka_error_is_fatal(e)) tp->dead = true;
      rd_kafka_error_destroy(e);
      all = false;
      continue;
    }
    tp->ready = true;
  }
  return all;
}

bool ListsWriter::write(int32_t p, const std::string& topic, const std::string* value,
                        uint64_t version) {
  std::shared_ptr<TxnProducer> tp;
  if (fencing_) {
    auto it = txn_.find(p);
    if (it == txn_.end() || !it->second->ready || it->second->dead) return false;
    tp = it->second;
  }
  std::unique_lock<std::mutex> tl;
  if (!tp) tl = std::unique_lock<std::mutex>(plain_mu_);
  rd_kafka_t* rk = producer_;
  // Ends a transaction that failed: aborted where it can be, the producer given up where the
  // broker fenced it (a newer owner initialised this partition's transactional id).
  auto failed = [&](rd_kafka_error_t* e, const char* step) {
    const bool fatal = rd_kafka_error_is_fatal(e);
    log_now(log_, {{"level", fatal ? "warn" : "error"},
                   {"event", fatal ? "lists_writer_fenced" : "lists_txn_failed"},
                   {"partition", p},
                   {"topic", topic},
                   {"step", step},
                   {"error", rd_kafka_error_string(e)}});
    if (fatal) {
      tp->dead = true;
    } else if (step == std::string_view("commit") && rd_kafka_error_is_retriable(e)) {
      // Timed out: the commit goes on; the next write finishes it first.
      tp->committing = true;
    } else if (rd_kafka_error_txn_requires_abort(e)) {
      if (rd_kafka_error_t* a = rd_kafka_abort_transaction(rk, 5000)) rd_kafka_error_destroy(a);
    }
    rd_kafka_error_destroy(e);
    return false;
  };
  if (tp) {
    tl = std::unique_lock<std::mutex>(tp->mu);
    if (tp->dead) return false;
    rk = tp->rk;
    if (tp->committing) {
      if (rd_kafka_error_t* e = rd_kafka_commit_transaction(rk, 5000)) return failed(e, "commit");
      tp->committing = false;
    }
  }
  // With the partition's writes serialised (tl): nothing older than what was written.
  const auto stale = [&] {
    std::lock_guard wl(written_mu_);
    auto w = written_.find(topic);
    return value && w != written_.end() && version < w->second;
  };
  if (stale()) return false;
  if (tp) {
    if (rd_kafka_error_t* e = rd_kafka_begin_transaction(rk)) return failed(e, "begin");
  }
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__QUEUE_FULL;
  for (int attempt = 0; attempt < 50 && err == RD_KAFKA_RESP_ERR__QUEUE_FULL; ++attempt) {
    err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(cc_.lists_topic.c_str()), RD_KAFKA_V_PARTITION(p),
                            RD_KAFKA_V_KEY(topic.data(), topic.size()),
                            RD_KAFKA_V_VALUE(value ? const_cast<char*>(value->data()) : nullptr,
                                             value ? value->size() : 0),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_HEADER(kMemberHeader.data(), member_url_.data(),
                                              static_cast<ssize_t>(member_url_.size())),
                            RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) rd_kafka_poll(rk, 10);
  }
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    log_now(log_, {{"level", "error"},
                   {"event", "list_produce_failed"},
                   {"topic", topic},
                   {"error", rd_kafka_err2str(err)}});
    if (tp) {
      if (rd_kafka_error_t* a = rd_kafka_abort_transaction(rk, 5000)) rd_kafka_error_destroy(a);
    }
    return false;
  }
  if (tp) {
    if (rd_kafka_error_t* e = rd_kafka_commit_transaction(rk, 5000)) return failed(e, "commit");
  }
  std::lock_guard wl(written_mu_);
  uint64_t& w = written_[topic];
  w = std::max(w, version);
  return true;
}

std::map<int32_t, uint64_t> ListsWriter::owned() const {
  std::shared_lock lock(mu_);
  return owned_;
}

uint64_t ListsWriter::deleted_version(const std::string& topic) const {
  std::shared_lock lock(mu_);
  auto d = deleted_.find(topic);
  return d == deleted_.end() ? 0 : d->second;
}

void ListsWriter::publish(const std::shared_ptr<const PublishedList>& list) {
  const int32_t p = partition_of(list->list.topic);
  std::shared_lock lock(mu_);
  auto it = owned_.find(p);
  // Not ours (any more), or issued before this ownership began: never written.
  if (it == owned_.end() || version_epoch(list->list.version) != it->second) {
    dropped_.fetch_add(1);
    return;
  }
  // A list of a deleted topic (a republish that took it before the delete): never written
  // after the tombstone.
  if (auto d = deleted_.find(list->list.topic);
      d != deleted_.end() && list->list.version <= d->second) {
    dropped_.fetch_add(1);
    return;
  }
  if (write(p, list->list.topic, &list->json, list->list.version)) {
    produced_.fetch_add(1);
  } else {
    // The next republish writes it again.
    dropped_.fetch_add(1);
  }
}

size_t ListsWriter::heartbeat(const std::string& member_id, int32_t only) {
  OwnerHeartbeat beat;
  beat.owner = member_url_;
  beat.member_id = member_id;
  beat.interval_ms = cc_.owner_heartbeat_ms;
  beat.at_ms = wall_ms();
  size_t queued = 0;
  for (const auto& [p, epoch] : owned()) {
    if (only >= 0 && p != only) continue;
    beat.partition = p;
    beat.epoch = epoch;
    const std::string value = encode_owner_heartbeat(beat);
    const rd_kafka_resp_err_t err = rd_kafka_producev(
        producer_, RD_KAFKA_V_TOPIC(cc_.lists_topic.c_str()), RD_KAFKA_V_PARTITION(p),
        RD_KAFKA_V_KEY(kOwnerHeartbeatKey.data(), kOwnerHeartbeatKey.size()),
        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_HEADER(kMemberHeader.data(), member_url_.data(),
                          static_cast<ssize_t>(member_url_.size())),
        RD_KAFKA_V_END);
    // A full queue (a broker down for long): the next beat is due within one interval.
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) ++queued;
  }
  return queued;
}

void ListsWriter::tombstone(const std::string& topic, uint64_t version) {
  const int32_t p = partition_of(topic);
  std::unique_lock lock(mu_);
  uint64_t& d = deleted_[topic];
  d = std::max(d, version);
  if (!owned_.contains(p)) return;
  const bool ok = write(p, topic, nullptr, version);
  if (ok) tombstoned_.fetch_add(1);
  log_now(log_, {{"level", ok ? "info" : "error"},
                 {"event", "list_tombstoned"},
                 {"topic", topic},
                 {"partition", p},
                 {"version", version},
                 {"error", ok ? "" : "not written"}});
}

}  // namespace hotkey::coordinator::kafka
