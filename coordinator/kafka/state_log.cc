#include "state_log.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "hotkey/hotkey_list.h"
#include "hotkey/key_codec.h"
#include "kafka_io.h"

namespace hotkey::coordinator::kafka {
namespace {

using nlohmann::json;
using Steady = std::chrono::steady_clock;

// How long an operator write waits for Kafka's acknowledgement (acks=all), then for this
// member to have applied it.
constexpr auto kStateAckTimeout = std::chrono::seconds(15);
constexpr auto kStateApplyTimeout = std::chrono::seconds(5);

// Compaction keeps the last record per key: a key's pin and deny replace each other (as the
// calls do); a prefix's policy is its own record ("policy:" cannot start a base64 key).
std::string record_key(const OperatorOp& op) {
  const bool policy = op.op == "policy_add" || op.op == "policy_remove";
  return op.topic + "/" + (policy ? "policy:" : "") + base64_encode(op.key);
}

std::string encode_record(const OperatorOp& op) {
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
              {"expired", op.expired},
              {"never_salt", op.never_salt},
              {"hot_fraction", op.hot_fraction}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

// Throws on anything that is not a format-1 state record.
OperatorOp decode_record(std::string_view value) {
  json j = json::parse(value);
  if (j.value("v", 0) != 1) throw std::invalid_argument("unknown state record format");
  OperatorOp op;
  op.op = j.at("op").get<std::string>();
  if (op.op != "pin" && op.op != "unpin" && op.op != "deny" && op.op != "allow" &&
      op.op != "policy_add" && op.op != "policy_remove" && op.op != "delete_topic") {
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
  op.never_salt = j.value("never_salt", false);
  op.hot_fraction = j.value("hot_fraction", 0.0);
  return op;
}

std::string checkpoint_name(const std::string& topic, int32_t p) {
  return "cluster/state_offset/" + topic + "/" + std::to_string(p);
}

// "pending" from the start of a first cluster start until its seed is applied, then "done".
std::string seeded_name(const std::string& topic) { return "cluster/state_seeded/" + topic; }

}  // namespace

CallResult StateLog::write(const OperatorOp& op) {
  // Pins and denies show in the list itself: on a member that does not own the topic, the
  // answer names the version of the owner's first list that shows the write in force (read from
  // the lists topic by the tailer), waited for from before the record is written.
  const bool listed = op.op == "pin" || op.op == "unpin" || op.op == "deny" || op.op == "allow";
  std::shared_ptr<ListsTailer::ChangeWait> owners_list =
      listed ? tailer_.begin_wait(op.topic, op.op, op.key) : nullptr;
  struct EndWait {
    ListsTailer& tailer;
    std::shared_ptr<ListsTailer::ChangeWait>& w;
    ~EndWait() {
      if (w) tailer.end_wait(w, std::chrono::milliseconds(0));
    }
  } end_wait{tailer_, owners_list};
  const Sent sent =
      produce_and_wait(producer_, cc_.state_topic, RD_KAFKA_PARTITION_UA, record_key(op),
                       encode_record(op), kMemberHeader, member_url_, kStateAckTimeout);
  CallResult r;
  if (!sent.ok()) {
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
  // Acknowledged. Answer once this member applied it, so a read that follows sees it; the
  // apply's answer carries the version of the list on the board here and whether it shows the
  // write.
  const std::pair<int32_t, int64_t> at{sent.partition, sent.offset};
  {
    std::unique_lock lock(mu_);
    const bool applied =
        cv_.wait_for(lock, kStateApplyTimeout, [&] { return next_[at.first] > at.second; });
    if (applied) {
      auto it = results_.find(at);
      if (it != results_.end()) {
        r = it->second;
        results_.erase(it);
      }
    }
  }
  if (r.ok() && listed && !r.shown && !writer_.owns(op.topic) &&
      !tailer_.owner_elsewhere(op.topic).empty()) {
    // The owner applies the record as this member does and publishes the change at once; its
    // list reaches this member through the lists topic (one fetch, well under 2 s). Not longer:
    // while brokers fail (leaders moving, requests refused) every write through a member that
    // does not own its topic would wait the whole bound.
    constexpr auto kOwnerWait = std::chrono::seconds(2);
    r.version = std::max(r.version, tailer_.end_wait(owners_list, kOwnerWait));
    owners_list = nullptr;
  }
  return r;
}

bool StateLog::apply(bool until_end, Steady::time_point deadline) {
  std::map<int32_t, int64_t> high;
  if (until_end) {
    for (int32_t p = 0; p < partitions_; ++p) {
      int64_t lo = 0, hi = 0;
      rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
      while (Steady::now() < deadline && err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        err =
            rd_kafka_query_watermark_offsets(consumer_, cc_.state_topic.c_str(), p, &lo, &hi, 2000);
      }
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return false;
      std::lock_guard lock(mu_);
      if (hi > next_[p]) high[p] = hi;
    }
  }
  while (!stop_.load() && (!until_end || !high.empty())) {
    if (until_end && Steady::now() >= deadline) return false;
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer_, 200);
    if (!m) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      apply_record(m);
      auto h = high.find(m->partition);
      if (h != high.end() && m->offset + 1 >= h->second) high.erase(h);
    }
    rd_kafka_message_destroy(m);
  }
  return true;
}

void StateLog::apply_record(const rd_kafka_message_t* m) {
  const int32_t p = m->partition;
  const int64_t next = m->offset + 1;
  if (collect_keys_ && m->key) {
    keys_in_topic_.emplace(static_cast<const char*>(m->key), m->key_len);
  }
  const std::string name = checkpoint_name(cc_.state_topic, p);
  auto checkpoint = [&](StoreBatch& b) { b.put_meta(name, std::to_string(next)); };
  CallResult r;
  try {
    if (!m->payload) throw std::invalid_argument("tombstone");
    OperatorOp op = decode_record(std::string_view(static_cast<const char*>(m->payload), m->len));
    r = ownership_.apply_operator(op, checkpoint);
  } catch (const std::exception& e) {
    // Not a record this version understands: skipped, and the checkpoint moves past it.
    StoreBatch b;
    checkpoint(b);
    store_.write(b);
    log_now(log_, {{"level", "warn"},
                   {"event", "state_record_skipped"},
                   {"partition", p},
                   {"offset", m->offset},
                   {"error", e.what()}});
  }
  {
    std::lock_guard lock(mu_);
    next_[p] = next;
    results_[{p, m->offset}] = r;
    // Writers that gave up waiting leave their result behind: keep the map small.
    while (results_.size() > 1024) results_.erase(results_.begin());
  }
  cv_.notify_all();
}

void StateLog::resume() {
  // A data directory that never applied a state record starts in cluster mode for the first
  // time: what it holds (a single node's pins and denies) is seeded after the resume.
  const auto seeded = store_.meta(seeded_name(cc_.state_topic));
  bool member_before = false;
  for (int32_t p = 0; p < partitions_; ++p) {
    member_before |= store_.meta(checkpoint_name(cc_.state_topic, p)).has_value();
  }
  seeding_ = seeded ? *seeded == "pending" : !member_before;
  if (seeding_ && !seeded) {
    StoreBatch b;
    b.put_meta(seeded_name(cc_.state_topic), "pending");
    store_.write(b);
  }
  collect_keys_ = seeding_;
  PartitionList parts(partitions_);
  json from = json::object();
  for (int32_t p = 0; p < partitions_; ++p) {
    int64_t next = RD_KAFKA_OFFSET_BEGINNING;
    if (auto v = store_.meta(checkpoint_name(cc_.state_topic, p))) {
      try {
        next = std::stoll(*v);
      } catch (const std::exception&) {
        next = RD_KAFKA_OFFSET_BEGINNING;
      }
    }
    {
      std::lock_guard lock(mu_);
      next_[p] = next < 0 ? 0 : next;
    }
    from[std::to_string(p)] = next < 0 ? 0 : next;
    rd_kafka_topic_partition_list_add(parts.p, cc_.state_topic.c_str(), p)->offset = next;
  }
  rd_kafka_assign(consumer_, parts.p);
  const bool done = apply(true, Steady::now() + std::chrono::seconds(30));
  collect_keys_ = false;
  resumed_to_end_ = done;
  json reached = json::object();
  {
    std::lock_guard lock(mu_);
    for (const auto& [p, n] : next_) reached[std::to_string(p)] = n;
  }
  log_now(log_, {{"level", done ? "info" : "warn"},
                 {"event", "state_resumed"},
                 {"from", from},
                 {"reached", reached},
                 {"complete", done}});
}

bool StateLog::seed(std::string* error) {
  if (!seeding_) return true;
  if (!resumed_to_end_) {
    // The keys not read yet may hold later decisions than this member's: write nothing.
    *error = "could not read the state topic " + cc_.state_topic +
             " to its end before writing this data directory's pins and denies into it; start "
             "again";
    return false;
  }
  // What this member holds and the state topic does not mention. A key the topic mentions
  // holds the topic's decision here already (resume() applied it). After a start that failed
  // midway, the resume began at a checkpoint and saw fewer keys: writing a decision again
  // changes nothing.
  const int64_t now = wall_ms();
  std::vector<OperatorOp> ops;
  size_t in_topic = 0;
  for (const TopicSummary& s : reads_.topics()) {
    auto add = [&](OperatorOp op) {
      if (keys_in_topic_.contains(record_key(op))) {
        ++in_topic;
        return;
      }
      ops.push_back(std::move(op));
    };
    for (const auto& [key, d] : reads_.denies(s.topic).value_or(std::map<std::string, Deny>{})) {
      add(OperatorOp{"deny", s.topic, key, 0, 0, 0, d.reason, d.by, d.created_at_ms});
    }
    for (const auto& [key, p] : reads_.pins(s.topic).value_or(std::map<std::string, Pin>{})) {
      if (p.expires_at_ms != 0 && p.expires_at_ms <= now) continue;
      const int64_t ttl_s = p.expires_at_ms == 0 ? 0 : (p.expires_at_ms - now + 999) / 1000;
      add(OperatorOp{"pin", s.topic, key, p.salts, ttl_s, p.expires_at_ms, p.reason, p.by,
                     p.created_at_ms});
    }
    for (const auto& [prefix, r] : reads_.policies(s.topic).value_or(Policies{})) {
      OperatorOp op{"policy_add", s.topic, prefix,         r.max_salts, 0, 0,
                    r.reason,     r.by,    r.created_at_ms};
      op.never_salt = r.never_salt;
      op.hot_fraction = r.hot_fraction;
      add(std::move(op));
    }
  }
  size_t pins = 0, denies = 0, policies = 0;
  // The member's poll loop, which serves the producer's delivery reports, has not started yet.
  std::atomic<bool> written{false};
  std::thread delivery([&] {
    while (!written.load()) rd_kafka_poll(producer_, 50);
  });
  struct Join {
    std::atomic<bool>& flag;
    std::thread& t;
    ~Join() {
      flag.store(true);
      t.join();
    }
  } join{written, delivery};
  for (const OperatorOp& op : ops) {
    const Sent sent =
        produce_and_wait(producer_, cc_.state_topic, RD_KAFKA_PARTITION_UA, record_key(op),
                         encode_record(op), kMemberHeader, member_url_, kStateAckTimeout);
    if (!sent.ok()) {
      *error = "cannot write this data directory's pins and denies into the state topic " +
               cc_.state_topic + " (" +
               rd_kafka_err2str(sent.produced != RD_KAFKA_RESP_ERR_NO_ERROR ? sent.produced
                                : sent.acked                                ? sent.err
                                             : RD_KAFKA_RESP_ERR__TIMED_OUT) +
               "); start again: the next start writes them";
      return false;
    }
    ++(op.op == "pin" ? pins : op.op == "deny" ? denies : policies);
  }
  // Applied here before this member owns anything, so it plans with them as every member does.
  if (!ops.empty() && !apply(true, Steady::now() + std::chrono::seconds(30))) {
    *error = "wrote this data directory's pins and denies into the state topic " + cc_.state_topic +
             " but could not read them back within 30 s; start again";
    return false;
  }
  StoreBatch b;
  b.put_meta(seeded_name(cc_.state_topic), "done");
  store_.write(b);
  seeding_ = false;
  keys_in_topic_.clear();
  log_now(log_, {{"level", "info"},
                 {"event", "state_seeded"},
                 {"pins", pins},
                 {"denies", denies},
                 {"policies", policies},
                 {"already_in_topic", in_topic}});
  return true;
}

void StateLog::request_delete(const OperatorOp& op) {
  constexpr auto kExpiryRetry = std::chrono::seconds(30);
  {
    std::lock_guard lock(expiry_mu_);
    auto [it, fresh] = expiry_requested_.emplace(op.topic, Steady::now());
    if (!fresh && Steady::now() - it->second < kExpiryRetry) return;
    it->second = Steady::now();
  }
  const std::string key = record_key(op);
  const std::string value = encode_record(op);
  rd_kafka_resp_err_t err = rd_kafka_producev(
      producer_, RD_KAFKA_V_TOPIC(cc_.state_topic.c_str()), RD_KAFKA_V_KEY(key.data(), key.size()),
      RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
      RD_KAFKA_V_HEADER(kMemberHeader.data(), member_url_.data(),
                        static_cast<ssize_t>(member_url_.size())),
      RD_KAFKA_V_END);
  log_now(log_, {{"level", err == RD_KAFKA_RESP_ERR_NO_ERROR ? "info" : "warn"},
                 {"event", "topic_expiry_requested"},
                 {"topic", op.topic},
                 {"reason", op.reason},
                 {"error", err == RD_KAFKA_RESP_ERR_NO_ERROR ? "" : rd_kafka_err2str(err)}});
}

void StateLog::forget_expiry(const std::string& topic) {
  std::lock_guard lock(expiry_mu_);
  expiry_requested_.erase(topic);
}

}  // namespace hotkey::coordinator::kafka
