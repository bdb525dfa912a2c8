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

// How long one attempt at reading lists partitions to their end may take; the loop retries a
// failed attempt a second later (the group's poll loop must keep running meanwhile, or
// max.poll.interval.ms would expel the member).
constexpr auto kReadToEndAttempt = std::chrono::seconds(3);

// Milliseconds left until `deadline`, at least 1 (a librdkafka timeout of 0 does not wait).
int remaining_ms(Steady::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 1, 2000));
}

void refresh_metadata(rd_kafka_t* rk, const std::string& topic, int timeout_ms) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  if (rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_metadata_destroy(md);
  }
  rd_kafka_topic_destroy(rkt);
}

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
  return true;
}

void Membership::run() {
  auto next_republish = Steady::now() + std::chrono::milliseconds(cc_.republish_interval_ms);
  auto next_heartbeat = Steady::now();
  auto next_pending = Steady::now();
  while (!stop_.load()) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(handles_.consumer, 100);
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
    const auto now = Steady::now();
    if (!pending_.empty() && now >= next_pending) {
      take_ownership();
      // At once after an assignment, then every second while it fails.
      next_pending = pending_.empty() ? now : Steady::now() + std::chrono::seconds(1);
    }
    if (now >= next_heartbeat) {
      writer_.heartbeat(member_id());
      next_heartbeat = now + std::chrono::milliseconds(cc_.owner_heartbeat_ms);
    }
    if (now >= next_republish) {
      for (const auto& list : coordinator_.published_lists()) writer_.publish(list);
      next_republish = now + std::chrono::milliseconds(cc_.republish_interval_ms);
    }
  }
  // Leaving the group hands the partitions over at once (the revoke runs here).
  rd_kafka_consumer_close(handles_.consumer);
  rd_kafka_flush(handles_.producer, 5000);
}

bool Membership::read_to_end(const std::vector<int32_t>& parts,
                             std::map<int32_t, PartitionLists>* out) {
  rd_kafka_t* reader = handles_.reader;
  const auto deadline = Steady::now() + kReadToEndAttempt;
  // Partitions not read to their high watermark yet, with it.
  std::map<int32_t, int64_t> high;
  for (int32_t p : parts) {
    ReadProgress& pr = progress_[p];
    if (pr.high < 0) {
      // Taken once and kept: with the watermarks queried again at every attempt, one slow
      // query spent the attempt's budget and the next partition's always timed out (seen on a
      // starved broker: a takeover pending for two minutes, one partition never queried).
      int64_t lo = 0, hi = 0;
      rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
      while (Steady::now() < deadline && !stop_.load()) {
        // Every wait ends by the deadline: this runs on the group's poll thread, and blocking
        // it past max.poll.interval.ms expels the member (seen on a loaded machine: the
        // takeover then started over at every rejoin and never finished).
        err = rd_kafka_query_watermark_offsets(reader, cc_.lists_topic.c_str(), p, &lo, &hi,
                                               remaining_ms(deadline));
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
        // A moved leader: the watermark query does not refresh the cached leader itself.
        refresh_metadata(reader, cc_.lists_topic, remaining_ms(deadline));
        std::this_thread::sleep_for(
            std::chrono::milliseconds(std::min(100, remaining_ms(deadline))));
      }
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        log_now(log_, {{"level", "warn"},
                       {"event", "lists_watermarks_failed"},
                       {"partition", p},
                       {"error", rd_kafka_err2str(err)}});
        // The partitions queried so far keep their watermarks for the next attempt.
        continue;
      }
      // Records below the log start are gone (deleted or the topic recreated): read it all.
      if (pr.next >= 0 && pr.next < lo) pr = ReadProgress{};
      pr.high = hi;
      pr.low = lo;
    }
    if (pr.high > std::max(pr.next, pr.low)) high[p] = pr.high;
  }
  bool queried_all = true;
  for (int32_t p : parts) queried_all = queried_all && progress_[p].high >= 0;
  // The reader stays assigned between attempts, so an attempt cut short by a slow broker or a
  // loaded machine resumes where it stopped: starting over from the beginning every time could
  // keep a takeover pending for as long as the load lasted.
  const auto assign_reader = [&] {
    std::set<int32_t> wanted;
    for (const auto& [p, hi] : high) wanted.insert(p);
    if (wanted == reading_) return;
    PartitionList assign(static_cast<int>(std::max<size_t>(wanted.size(), 1)));
    for (int32_t p : wanted) {
      const int64_t next = progress_[p].next;
      rd_kafka_topic_partition_list_add(assign.p, cc_.lists_topic.c_str(), p)->offset =
          next >= 0 ? next : RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(reader, wanted.empty() ? nullptr : assign.p);
    reading_ = std::move(wanted);
  };
  assign_reader();
  while (!high.empty() && Steady::now() < deadline && !stop_.load()) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(reader, std::min(200, remaining_ms(deadline)));
    if (m && m->err == RD_KAFKA_RESP_ERR_NO_ERROR && reading_.count(m->partition)) {
      ReadProgress& pr = progress_[m->partition];
      pr.next = m->offset + 1;
      PartitionLists& pl = pr.lists;
      std::string topic(static_cast<const char*>(m->key), m->key_len);
      if (topic == kOwnerHeartbeatKey) {
        // An owner's epoch is above every epoch the partition holds, heartbeats included: an
        // owner that stalled before publishing any list still left its epoch there.
        if (m->payload) {
          if (auto beat = parse_owner_heartbeat(
                  std::string_view(static_cast<const char*>(m->payload), m->len))) {
            pl.max_epoch = std::max(pl.max_epoch, beat->epoch);
          }
        }
      } else if (!m->payload) {
        pl.latest.erase(topic);
      } else {
        try {
          HotKeyList list = parse_list_json(
              std::string_view(static_cast<const char*>(m->payload), m->len), config_.limits);
          pl.max_epoch = std::max(pl.max_epoch, version_epoch(list.version));
          auto it = pl.latest.find(list.topic);
          if (it == pl.latest.end() || it->second.version < list.version) {
            pl.latest[list.topic] = std::move(list);
          }
        } catch (const std::exception&) {
          // A record no client would accept either; its epoch cannot be trusted.
        }
      }
    }
    if (m) rd_kafka_message_destroy(m);
    // Done with a partition once the reader's position reaches the high watermark: the
    // position also steps over transaction markers, which no message shows.
    PartitionList pos(static_cast<int>(high.size()));
    for (const auto& [p, hi] : high) {
      rd_kafka_topic_partition_list_add(pos.p, cc_.lists_topic.c_str(), p);
    }
    rd_kafka_position(reader, pos.p);
    for (int i = 0; i < pos.p->cnt; ++i) {
      const auto& e = pos.p->elems[i];
      if (e.err != RD_KAFKA_RESP_ERR_NO_ERROR || e.offset < 0) continue;
      progress_[e.partition].next = std::max(progress_[e.partition].next, e.offset);
      if (e.offset >= high[e.partition]) high.erase(e.partition);
    }
  }
  if (!high.empty() || !queried_all) return false;
  assign_reader();  // nothing left to read: unassigned
  for (int32_t p : parts) {
    (*out)[p] = std::move(progress_[p].lists);
    progress_.erase(p);
  }
  return true;
}

void Membership::take_ownership() {
  std::vector<int32_t> parts(pending_.begin(), pending_.end());
  std::map<int32_t, PartitionLists> found;
  // Fence first: a former owner's open transaction is aborted and its later writes refused
  // before this member reads what the partition holds.
  if (!writer_.fence(
          parts,
          static_cast<int>(
              std::chrono::duration_cast<std::chrono::milliseconds>(kReadToEndAttempt).count()))) {
    log_now(log_, {{"level", "warn"},
                   {"event", "ownership_pending"},
                   {"partitions", parts},
                   {"why", "lists partitions not fenced yet"}});
    return;
  }
  if (!read_to_end(parts, &found)) {
    log_now(log_, {{"level", "warn"},
                   {"event", "ownership_pending"},
                   {"partitions", parts},
                   {"why", "lists partitions not read to their end yet"}});
    return;
  }
  const uint64_t generation = rebalances_.load();
  for (int32_t p : parts) {
    pending_.erase(p);
    const PartitionLists& pl = found[p];
    // Strictly above every epoch the partition held.
    const uint64_t epoch = std::max<uint64_t>(pl.max_epoch + 1, 1);
    writer_.own(p, epoch);
    writer_.heartbeat(member_id(), p);
    size_t adopted = 0;
    for (const auto& [topic, list] : pl.latest) {
      if (writer_.partition_of(topic) != p) continue;
      // The list of a topic deleted since (its owner then did not write the tombstone: it
      // lost the partition first): not adopted, and tombstoned now.
      const uint64_t gone =
          std::max(coordinator_.deleted_version(topic), writer_.deleted_version(topic));
      if (list.version <= gone) {
        stale_list_(topic, gone);
        continue;
      }
      coordinator_.adopt_list(list);
      ++adopted;
    }
    log_now(log_, {{"level", "info"},
                   {"event", "partition_owned"},
                   {"partition", p},
                   {"epoch", epoch},
                   {"generation", generation},
                   {"lists_adopted", adopted}});
  }
}

void Membership::release_topics(const std::vector<int32_t>& parts) {
  for (const auto& s : coordinator_.topics()) {
    if (std::find(parts.begin(), parts.end(), writer_.partition_of(s.topic)) != parts.end()) {
      coordinator_.release_topic(s.topic);
    }
  }
}

void Membership::lose_ownership(const std::vector<int32_t>& parts) {
  writer_.disown(parts);
  for (int32_t p : parts) {
    pending_.erase(p);
    progress_.erase(p);
  }
  if (pending_.empty() && !reading_.empty()) {
    rd_kafka_assign(handles_.reader, nullptr);
    reading_.clear();
  }
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
    rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, start.p, 5000);
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
    for (int32_t p : ids) pending_.insert(p);
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
