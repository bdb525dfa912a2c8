// Operator calls (pin, unpin, deny, allow, policy_add, policy_remove): validation, limits, the
// store commit with the audit entry and re-planned list, and cluster-mode forwarding to the state
// topic.
#include "coordinator_topic.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

namespace hotkey::coordinator {

CallResult Coordinator::operator_change(
    const std::string& topic, const std::string& key, const std::string& who,
    const std::string& action, const std::string& detail, bool creates,
    const std::function<std::optional<CallResult>(
        std::map<std::string, Pin>&, std::map<std::string, Deny>&, Policies&, StoreBatch&)>& mutate,
    const std::function<void(StoreBatch&)>& extra) {
  // A refused write still moves the caller's checkpoint (cluster mode's state topic).
  auto refuse = [&](CallResult refusal) {
    if (extra) {
      StoreBatch only;
      extra(only);
      StoreStatus st = store_.write(only);
      if (!st.ok) return error_result(Status::kUnavailable, "store", st.error);
    }
    return refusal;
  };
  std::shared_ptr<Topic> t;
  bool created = false;
  TopicLock topic_lock;
  for (;;) {
    if (creates) {
      t = get_or_create_topic(topic, &created);
      if (!t) {
        return refuse(error_result(Status::kLimit, "too_many_topics",
                                   "the coordinator already tracks max_topics=" +
                                       std::to_string(config_.max_topics) + " topics"));
      }
    } else {
      t = find_topic(topic);
      // Nothing to remove from a topic the coordinator does not know; do not create it.
      if (!t) {
        return refuse(not_found(action == "unpin"   ? "pin"
                                : action == "allow" ? "deny"
                                                    : "policy",
                                topic));
      }
    }
    topic_lock = TopicLock(*t);
    if (!topic_lock->removed()) break;
    topic_lock.unlock();
  }
  const auto fail = [&](CallResult r) {
    topic_lock.unlock();
    if (created) discard_if_unused(t);
    return r;
  };
  std::map<std::string, Pin> pins = topic_lock->pins();
  std::map<std::string, Deny> denies = topic_lock->denies();
  Policies policies = topic_lock->policies();
  StoreBatch batch;
  if (std::optional<CallResult> refusal = mutate(pins, denies, policies, batch)) {
    return fail(refuse(std::move(*refusal)));
  }
  if (extra) extra(batch);
  AuditEntry a;
  a.at_ms = clock_.now_ms();
  a.who = who;
  a.action = action;
  a.topic = topic;
  a.key = key;
  a.detail = detail;
  uint64_t version = 0;
  StoreStatus st;
  try {
    ReplanResult done =
        replan(topic_lock, Replan{std::move(batch), action,
                                  OperatorChange{&pins, &denies, &policies}, std::move(a),
                                  /*triggered=*/false});
    st = std::move(done.status);
    version = done.version;
  } catch (const std::exception& e) {
    plan_failed(topic, e.what());
    return fail(
        error_result(Status::kInternal, "plan_failed",
                     std::string("the change was not applied: planning failed: ") + e.what()));
  }
  if (!st.ok) {
    metrics_.set_store_healthy(false);
    return fail(error_result(Status::kUnavailable, "store", st.error));
  }
  topic_lock->touch(clock_.now_ms());
  CallResult r;
  r.version = version;
  return r;
}

std::optional<CallResult> Coordinator::pin_limit(const std::string& topic,
                                                 const std::map<std::string, Pin>& pins,
                                                 const std::string& key) const {
  // Pins count against max_hot_keys (detected keys get the room pins leave): a pin that would
  // make the list longer than the limit is refused rather than silently exceeding it.
  const uint32_t limit = config_.settings_for(topic).max_hot_keys;
  if (pins.contains(key) || pins.size() < limit) return std::nullopt;
  return error_result(Status::kConflict, "too_many_pins",
                      "topic '" + topic + "' already has " + std::to_string(pins.size()) +
                          " pins and max_hot_keys=" + std::to_string(limit) +
                          " (pins count against it): unpin a key or raise max_hot_keys");
}

std::optional<CallResult> Coordinator::policy_limit(const std::string& topic,
                                                    const Policies& policies,
                                                    const std::string& prefix) {
  if (policies.contains(prefix) || policies.size() < kMaxPoliciesPerTopic) return std::nullopt;
  return error_result(Status::kConflict, "too_many_policies",
                      "topic '" + topic + "' already has " + std::to_string(policies.size()) +
                          " policies, the most a topic may have: remove one first");
}

bool Coordinator::follow_list(std::shared_ptr<const PublishedList> list) {
  const bool on_board = board_.publish_if_newer(list);
  // The lists tailer's thread: it takes the topic's lock only when an entry waits for a list,
  // and never waits for the lock of a topic this member publishes (a list write may hold it for
  // seconds while brokers fail); such an entry (written before this member took the topic
  // over) is stamped by a later list.
  std::shared_ptr<Topic> t = find_topic(list->list.topic);
  if (!t || t->unstamped() == 0) return on_board;
  TopicLock lock(*t, std::defer_lock);
  if (owns(list->list.topic)) {
    if (!lock.try_lock()) return on_board;
  } else {
    lock.lock();
  }
  if (!lock->removed()) stamp_audits(lock, list->list);
  return on_board;
}

void Coordinator::unfollow_list(const std::string& topic, uint64_t last) {
  auto pub = board_.get(topic);
  if (pub && pub->list.version <= last && !owns(topic)) board_.unpublish(topic);
}

void Coordinator::stamp_audits(TopicLock& t, const HotKeyList& list) {
  StoreBatch batch = t->stamp_audits(list);
  if (!batch.empty()) metrics_.set_store_healthy(store_.write(batch).ok);
}

CallResult Coordinator::apply_operator(const OperatorOp& op,
                                       const std::function<void(StoreBatch&)>& extra) {
  CallResult r = apply_write(op, extra);
  if (!r.ok()) return r;
  // The list on the board here: this member's (it owns the topic) or the owner's, followed.
  if (std::shared_ptr<const PublishedList> pub = board_.get(op.topic)) {
    r.version = std::max(r.version, pub->list.version);
    r.shown = list_shows_change(pub->list, op.op, op.key);
  }
  return r;
}

CallResult Coordinator::apply_write(const OperatorOp& op,
                                    const std::function<void(StoreBatch&)>& extra) {
  const std::string& topic = op.topic;
  const std::string& key = op.key;
  using Refusal = std::optional<CallResult>;
  if (op.op == "pin") {
    json detail{{"reason", op.reason}, {"salts", op.salts}, {"ttl_s", op.ttl_s}};
    return operator_change(
        topic, key, op.who, "pin", detail.dump(-1, ' ', false, json::error_handler_t::replace),
        true,
        [&](auto& pins, auto& denies, auto&, StoreBatch& batch) -> Refusal {
          if (Refusal full = pin_limit(topic, pins, key)) return full;
          if (denies.erase(key)) batch.delete_deny(topic, key);
          Pin p{key, op.salts, op.expires_at_ms, op.reason, op.who, op.at_ms};
          batch.put_pin(topic, p);
          pins[key] = p;
          return std::nullopt;
        },
        extra);
  }
  if (op.op == "unpin") {
    return operator_change(
        topic, key, op.who, "unpin", "{}", false,
        [&](auto& pins, auto&, auto&, StoreBatch& batch) -> Refusal {
          if (!pins.erase(key)) return not_found("pin", topic);
          batch.delete_pin(topic, key);
          return std::nullopt;
        },
        extra);
  }
  if (op.op == "deny") {
    json detail{{"reason", op.reason}};
    return operator_change(
        topic, key, op.who, "deny", detail.dump(-1, ' ', false, json::error_handler_t::replace),
        true,
        [&](auto& pins, auto& denies, auto&, StoreBatch& batch) -> Refusal {
          if (pins.erase(key)) batch.delete_pin(topic, key);
          Deny d{key, op.reason, op.who, op.at_ms};
          batch.put_deny(topic, d);
          denies[key] = d;
          return std::nullopt;
        },
        extra);
  }
  if (op.op == "allow") {
    return operator_change(
        topic, key, op.who, "allow", "{}", false,
        [&](auto&, auto& denies, auto&, StoreBatch& batch) -> Refusal {
          if (!denies.erase(key)) return not_found("deny", topic);
          batch.delete_deny(topic, key);
          return std::nullopt;
        },
        extra);
  }
  if (op.op == "policy_add") {
    json detail{{"reason", op.reason},
                {"never_salt", op.never_salt},
                {"hot_fraction", op.hot_fraction},
                {"max_salts", op.salts}};
    return operator_change(
        topic, key, op.who, "policy_add",
        detail.dump(-1, ' ', false, json::error_handler_t::replace), true,
        [&](auto&, auto&, Policies& policies, StoreBatch& batch) -> Refusal {
          if (Refusal full = policy_limit(topic, policies, key)) return full;
          Policy p{key, op.never_salt, op.hot_fraction, op.salts, op.reason, op.who, op.at_ms};
          batch.put_policy(topic, p);
          policies[key] = p;
          return std::nullopt;
        },
        extra);
  }
  if (op.op == "policy_remove") {
    return operator_change(
        topic, key, op.who, "policy_remove", "{}", false,
        [&](auto&, auto&, Policies& policies, StoreBatch& batch) -> Refusal {
          auto it = policies.find(key);
          if (it == policies.end()) return not_found("policy", topic);
          policies.erase(it);
          batch.delete_policy(topic, key);
          return std::nullopt;
        },
        extra);
  }
  if (op.op == "delete_topic") return apply_delete(op, extra);
  throw std::invalid_argument("unknown operator write '" + op.op + "'");
}

CallResult Coordinator::forward_or_apply(const OperatorOp& op) {
  // Refusals this member's materialized state can decide are answered here, before the write
  // is shared (cluster mode: the state topic decides the rest); apply_write makes the same
  // checks under the topic's lock (apply_write).
  if (op.op == "pin") {
    if (std::shared_ptr<Topic> t = find_topic(op.topic)) {
      TopicLock lock(*t);
      if (std::optional<CallResult> full = pin_limit(op.topic, lock->pins(), op.key)) {
        return *full;
      }
    }
  }
  if (op.op == "policy_add") {
    if (std::shared_ptr<Topic> t = find_topic(op.topic)) {
      TopicLock lock(*t);
      if (std::optional<CallResult> full = policy_limit(op.topic, lock->policies(), op.key)) {
        return *full;
      }
    }
  }
  if (op.op == "unpin" || op.op == "allow" || op.op == "policy_remove") {
    std::shared_ptr<Topic> t = find_topic(op.topic);
    bool present = false;
    if (t) {
      TopicLock lock(*t);
      present = op.op == "unpin"   ? lock->pins().contains(op.key)
                : op.op == "allow" ? lock->denies().contains(op.key)
                                   : lock->policies().contains(op.key);
    }
    if (!present) {
      return not_found(op.op == "unpin" ? "pin" : op.op == "allow" ? "deny" : "policy", op.topic);
    }
  }
  if (std::optional<CallResult> shared = placement_->forward_operator(op)) return *shared;
  return apply_write(op, nullptr);
}

CallResult Coordinator::pin(const std::string& topic, const std::string& key, uint32_t salts,
                            int64_t ttl_s, const std::string& reason, const std::string& who) {
  const int64_t now = clock_.now_ms();
  return forward_or_apply(OperatorOp{"pin", topic, key, salts, ttl_s,
                                     ttl_s > 0 ? now + ttl_s * 1000 : 0, reason, who, now});
}

CallResult Coordinator::unpin(const std::string& topic, const std::string& key,
                              const std::string& who) {
  return forward_or_apply(OperatorOp{"unpin", topic, key, 0, 0, 0, "", who, clock_.now_ms()});
}

CallResult Coordinator::deny(const std::string& topic, const std::string& key,
                             const std::string& reason, const std::string& who) {
  return forward_or_apply(OperatorOp{"deny", topic, key, 0, 0, 0, reason, who, clock_.now_ms()});
}

CallResult Coordinator::allow(const std::string& topic, const std::string& key,
                              const std::string& who) {
  return forward_or_apply(OperatorOp{"allow", topic, key, 0, 0, 0, "", who, clock_.now_ms()});
}

CallResult Coordinator::set_policy(const std::string& topic, const Policy& policy,
                                   const std::string& who) {
  OperatorOp op{"policy_add",  topic, policy.prefix,  policy.max_salts, 0, 0,
                policy.reason, who,   clock_.now_ms()};
  op.never_salt = policy.never_salt;
  op.hot_fraction = policy.hot_fraction;
  return forward_or_apply(op);
}

CallResult Coordinator::remove_policy(const std::string& topic, const std::string& prefix,
                                      const std::string& who) {
  return forward_or_apply(
      OperatorOp{"policy_remove", topic, prefix, 0, 0, 0, "", who, clock_.now_ms()});
}

}  // namespace hotkey::coordinator
