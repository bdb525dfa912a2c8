#include "takeover.h"

#include <algorithm>
#include <chrono>
#include <string_view>
#include <thread>

namespace hotkey::coordinator::kafka {
namespace {

using Steady = std::chrono::steady_clock;

// How long one attempt at reading lists partitions to their end may take; a failed attempt is
// retried a second later, resuming where it stopped.
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

void Takeover::assigned(const std::vector<int32_t>& parts) {
  {
    std::lock_guard lock(mu_);
    for (int32_t p : parts) pending_[p] = ++serial_;
  }
  wake_.notify_all();
}

void Takeover::revoked(const std::vector<int32_t>& parts) {
  std::lock_guard lock(mu_);
  for (int32_t p : parts) pending_.erase(p);
  writer_.disown(parts);
}

void Takeover::run() {
  while (!stop_.load()) {
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(200),
                     [&] { return !pending_.empty() || stop_.load(); });
    }
    if (stop_.load()) break;
    if (attempt()) continue;
    // Retried a second later (sooner for a new assignment).
    std::unique_lock lock(mu_);
    const uint64_t seen = serial_;
    wake_.wait_for(lock, std::chrono::seconds(1), [&] { return serial_ != seen || stop_.load(); });
  }
  if (!reading_.empty()) rd_kafka_assign(handles_.reader, nullptr);
}

bool Takeover::attempt() {
  std::map<int32_t, uint64_t> pending;
  {
    std::lock_guard lock(mu_);
    pending = pending_;
  }
  // Partitions revoked since: their progress goes, and the reader stops reading them.
  for (auto it = progress_.begin(); it != progress_.end();) {
    it = pending.contains(it->first) ? std::next(it) : progress_.erase(it);
  }
  std::set<int32_t> still;
  for (int32_t p : reading_) {
    if (pending.contains(p)) still.insert(p);
  }
  if (still != reading_) {
    PartitionList assign(static_cast<int>(std::max<size_t>(still.size(), 1)));
    for (int32_t p : still) {
      const int64_t next = progress_[p].next;
      rd_kafka_topic_partition_list_add(assign.p, cc_.lists_topic.c_str(), p)->offset =
          next >= 0 ? next : RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(handles_.reader, still.empty() ? nullptr : assign.p);
    reading_ = std::move(still);
  }
  if (pending.empty()) return true;
  std::vector<int32_t> parts;
  for (const auto& [p, serial] : pending) parts.push_back(p);
  // Fence first: a former owner's open transaction is aborted and its later writes refused
  // before this member reads what the partition holds.
  const int budget_ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(kReadToEndAttempt).count());
  if (!writer_.fence(parts, budget_ms)) {
    log_now(log_, {{"level", "warn"},
                   {"event", "ownership_pending"},
                   {"partitions", parts},
                   {"why", "lists partitions not fenced yet"}});
    return false;
  }
  std::map<int32_t, PartitionLists> found;
  if (!read_to_end(parts, &found)) {
    log_now(log_, {{"level", "warn"},
                   {"event", "ownership_pending"},
                   {"partitions", parts},
                   {"why", "lists partitions not read to their end yet"}});
    return false;
  }
  std::lock_guard lock(mu_);
  for (int32_t p : parts) {
    auto it = pending_.find(p);
    // Revoked (or revoked and assigned again) while it was read: not owned on this read.
    if (it == pending_.end() || it->second != pending.at(p)) continue;
    pending_.erase(it);
    own(p, found[p]);
  }
  return pending_.empty();
}

void Takeover::own(int32_t p, const PartitionLists& pl) {
  // Strictly above every epoch the partition held.
  const uint64_t epoch = std::max<uint64_t>(pl.max_epoch + 1, 1);
  writer_.own(p, epoch);
  writer_.heartbeat(member_id_(), p);
  size_t adopted = 0;
  for (const auto& [topic, list] : pl.latest) {
    if (writer_.partition_of(topic) != p) continue;
    // The list of a topic deleted since (its owner then did not write the tombstone: it
    // lost the partition first): not adopted, and tombstoned now.
    const uint64_t gone =
        std::max(ownership_.deleted_version(topic), writer_.deleted_version(topic));
    if (list.version <= gone) {
      stale_list_(topic, gone);
      continue;
    }
    ownership_.adopt_list(list);
    ++adopted;
  }
  log_now(log_, {{"level", "info"},
                 {"event", "partition_owned"},
                 {"partition", p},
                 {"epoch", epoch},
                 {"generation", generation_()},
                 {"lists_adopted", adopted}});
}

bool Takeover::read_to_end(const std::vector<int32_t>& parts,
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
        // Every wait ends by the deadline, so that revocations and new assignments are taken
        // up between attempts.
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

}  // namespace hotkey::coordinator::kafka
