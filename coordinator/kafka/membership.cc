#include "membership.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>
#include <thread>

#include "hotkey/hotkey_list.h"

namespace hotkey::coordinator::kafka {
namespace {

using Steady = std::chrono::steady_clock;

// How long the assignment waits for the reports partitions' window-start offsets (in the
// rebalance callback, on the group's poll thread); when a leader is down the partition starts
// at its end instead (log line window_rebuild_unavailable).
constexpr int kWindowStartTimeoutMs = 5000;

}  // namespace

std::string Membership::member_id() const {
  std::lock_guard lock(id_mu_);
  return member_id_;
}

bool Membership::subscribe(std::string* error) {
  PartitionList sub(1);
  rd_kafka_topic_partition_list_add(sub.p, cc_.reports_topic.c_str(), RD_KAFKA_PARTITION_UA);
  if (rd_kafka_resp_err_t err = rd_kafka_subscribe(handles_.consumer, sub.p)) {
    *error = std::string("cannot subscribe to ") + cc_.reports_topic + ": " + rd_kafka_err2str(err);
    return false;
  }
  subscribed_.store(true);
  return true;
}

bool Membership::consumer_destroyable() const {
  return !subscribed_.load() || rebalances_.load() > 0;
}

void Membership::poll_once(int timeout_ms) {
  rd_kafka_message_t* m = rd_kafka_consumer_poll(handles_.consumer, timeout_ms);
  if (m) {
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      relay_.ingest(m);
    } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      log_now(log_, {{"level", "warn"},
                     {"event", "kafka_consume_error"},
                     {"error", rd_kafka_message_errstr(m)}});
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_poll(handles_.producer, 0);
}

void Membership::run() {
  auto next_republish = Steady::now() + std::chrono::milliseconds(cc_.republish_interval_ms);
  while (!stop_.load()) {
    poll_once(100);
    const auto now = Steady::now();
    if (now >= next_republish) {
      ownership_.republish();
      next_republish = now + std::chrono::milliseconds(cc_.republish_interval_ms);
    }
  }
  // Leaving the group hands the partitions over at once (the revoke runs here), unless the
  // brokers do not let it finish within the drain bound: then the partitions move after
  // session.timeout.ms, as after a kill, and the member still exits (a process manager's grace
  // period, a rolling upgrade, must not wait on Kafka).
  const auto deadline = Steady::now() + std::chrono::milliseconds(cc_.drain_timeout_ms);
  const auto left_ms = [&] {
    return static_cast<int>(std::max<int64_t>(
        0,
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()).count()));
  };
  // A member stopped before its first assignment (in its first seconds, or while the group's
  // rebalance for its join is pending) takes that assignment first, served as usual, so the
  // consumer can be destroyed: librdkafka 2.0.2 aborts destroying a cooperative-sticky consumer
  // that joined but had no assignment yet (its assignor state is made by the first SyncGroup;
  // librdkafka issue 4312, fixed in 2.3.0). Seen: SIGABRT for 3 of 8 SIGTERMs 1.5-3.5 s after
  // start. When the brokers do not assign within the drain bound, the consumer is left
  // undestroyed at exit (consumer_destroyable, KafkaCluster::stop).
  while (!consumer_destroyable() && left_ms() > 0) poll_once(std::min(100, left_ms()));
  rd_kafka_queue_t* closing = rd_kafka_queue_new(handles_.consumer);
  if (rd_kafka_error_t* e = rd_kafka_consumer_close_queue(handles_.consumer, closing)) {
    log_now(
        log_,
        {{"level", "warn"}, {"event", "leave_group_failed"}, {"error", rd_kafka_error_string(e)}});
    rd_kafka_error_destroy(e);
  } else {
    // Served as events (rd_kafka_queue_poll): the revoke comes back as a rebalance event, which
    // goes to on_rebalance as the callback would; anything else (the close's own reply) is
    // dropped. rd_kafka_queue_poll_callback cannot serve this queue: it asserts on an op it does
    // not handle (seen: rd_kafka_q_serve "res != RD_KAFKA_OP_RES_PASS", SIGABRT at shutdown in 2
    // of 4 runs of a test).
    while (!rd_kafka_consumer_closed(handles_.consumer) && left_ms() > 0) {
      rd_kafka_event_t* ev = rd_kafka_queue_poll(closing, std::min(100, left_ms()));
      if (ev == nullptr) continue;
      if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_REBALANCE) {
        on_rebalance(handles_.consumer, rd_kafka_event_error(ev),
                     rd_kafka_event_topic_partition_list(ev));
      }
      rd_kafka_event_destroy(ev);
    }
  }
  rd_kafka_queue_destroy(closing);
  const bool left_group = rd_kafka_consumer_closed(handles_.consumer) != 0;
  const rd_kafka_resp_err_t flushed = rd_kafka_flush(handles_.producer, std::max(1, left_ms()));
  if (!left_group || flushed != RD_KAFKA_RESP_ERR_NO_ERROR) {
    log_now(log_, {{"level", "warn"},
                   {"event", "drain_cut"},
                   {"drain_timeout_ms", cc_.drain_timeout_ms},
                   {"left_group", left_group},
                   {"unflushed", rd_kafka_outq_len(handles_.producer)}});
  }
}

void Membership::release_topics(const std::vector<int32_t>& parts) {
  ownership_.release_topics([&](const std::string& topic) {
    return std::find(parts.begin(), parts.end(), writer_.partition_of(topic)) != parts.end();
  });
}

void Membership::lose_ownership(const std::vector<int32_t>& parts) {
  takeover_.revoked(parts);
  release_topics(parts);
  log_now(log_, {{"level", "info"}, {"event", "partitions_revoked"}, {"partitions", parts}});
}

void Membership::rebalance_cb(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                              rd_kafka_topic_partition_list_t* parts, void* opaque) {
  static_cast<Membership*>(opaque)->on_rebalance(rk, err, parts);
}

void Membership::on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                              rd_kafka_topic_partition_list_t* parts) {
  rebalances_.fetch_add(1);
  const bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
  std::vector<int32_t> ids;
  for (int i = 0; i < parts->cnt; ++i) ids.push_back(parts->elems[i].partition);
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    // Rebuild the window: start each partition at the first report of the last window.
    PartitionList start(parts);
    const int64_t from = wall_ms() - static_cast<int64_t>(config_.epoch_ms) * config_.window_epochs;
    for (int i = 0; i < start.p->cnt; ++i) start.p->elems[i].offset = from;
    rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, start.p, kWindowStartTimeoutMs);
    for (int i = 0; i < start.p->cnt; ++i) {
      auto& el = start.p->elems[i];
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR || el.err != RD_KAFKA_RESP_ERR_NO_ERROR ||
          el.offset < 0) {
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR || el.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
          log_now(log_,
                  {{"level", "warn"},
                   {"event", "window_rebuild_unavailable"},
                   {"partition", el.partition},
                   {"error", rd_kafka_err2str(e != RD_KAFKA_RESP_ERR_NO_ERROR ? e : el.err)}});
        }
        el.offset = RD_KAFKA_OFFSET_END;
        el.err = RD_KAFKA_RESP_ERR_NO_ERROR;
      }
    }
    // Forget whatever this member knew of these partitions' topics: the window is rebuilt
    // from the reports read from here on, the list comes from the lists topic once the loop
    // has read it to its end (nothing of them is planned or published before).
    release_topics(ids);
    takeover_.assigned(ids);
    if (cooperative) {
      if (rd_kafka_error_t* ae = rd_kafka_incremental_assign(rk, start.p)) {
        log_now(
            log_,
            {{"level", "error"}, {"event", "assign_failed"}, {"error", rd_kafka_error_string(ae)}});
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
    std::lock_guard lock(id_mu_);
    member_id_ = id;
    rd_kafka_mem_free(rk, id);
  }
}

}  // namespace hotkey::coordinator::kafka
