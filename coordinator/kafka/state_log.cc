#include "state_log.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

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

std::string record_key(const OperatorOp& op) { return op.topic + "/" + base64_encode(op.key); }

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
              {"expired", op.expired}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

// Throws on anything that is not a format-1 state record.
OperatorOp decode_record(std::string_view value) {
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

std::string checkpoint_name(const std::string& topic, int32_t p) {
  return "cluster/state_offset/" + topic + "/" + std::to_string(p);
}

}  // namespace

CallResult StateLog::write(const OperatorOp& op) {
  const Sent sent = produce_and_wait(producer_, cc_.state_topic, RD_KAFKA_PARTITION_UA,
                                     record_key(op), encode_record(op), kMemberHeader,
                                     member_url_, kStateAckTimeout);
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
  // Acknowledged. Answer once this member applied it, so a read that follows sees it.
  const std::pair<int32_t, int64_t> at{sent.partition, sent.offset};
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
  if (r.ok()) {
    auto pub = coordinator_.board().get(op.topic);
    r.version = std::max(r.version, pub ? pub->list.version : 0);
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
  const std::string name = checkpoint_name(cc_.state_topic, p);
  auto checkpoint = [&](StoreBatch& b) { b.put_meta(name, std::to_string(next)); };
  CallResult r;
  try {
    if (!m->payload) throw std::invalid_argument("tombstone");
    OperatorOp op = decode_record(std::string_view(static_cast<const char*>(m->payload), m->len));
    r = coordinator_.apply_operator(op, checkpoint);
  } catch (const std::exception& e) {
    // Not a record this version understands: skipped, and the checkpoint moves past it.
    StoreBatch b;
    checkpoint(b);
    coordinator_.store().write(b);
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
  PartitionList parts(partitions_);
  json from = json::object();
  for (int32_t p = 0; p < partitions_; ++p) {
    int64_t next = RD_KAFKA_OFFSET_BEGINNING;
    if (auto v = coordinator_.store().meta(checkpoint_name(cc_.state_topic, p))) {
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
