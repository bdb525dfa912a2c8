// Ingest: validation against the configuration and the topic, the topic's limits, and the
// scheduler's wake-up when the merged report (TopicState::ingest) calls for a plan.
#include "coordinator_topic.h"

#include <chrono>
#include <optional>
#include <string>

namespace hotkey::coordinator {

CallResult Coordinator::submit_report(Report report, std::string_view wire) {
  // Cluster mode: a topic another member owns goes to its owner (else the report would land in
  // a window nobody plans).
  if (!owns(report.topic)) return placement_->forward_report(report, wire);
  return ingest(std::move(report));
}

CallResult Coordinator::rejected(const Report& r, Status status, const std::string& reason,
                                 const std::string& error) {
  metrics_.rejected(reason);
  // Counted on the topic's view when the topic exists; a refusal never creates one.
  if (std::shared_ptr<Topic> t = find_topic(r.topic)) {
    TopicLock lock(*t);
    if (!lock->removed()) lock->note_rejection(r.producer, reason, error, clock_.now_ms());
  }
  return error_result(status, reason, error);
}

CallResult Coordinator::ingest(Report r) {
  const auto start = std::chrono::steady_clock::now();
  const TopicSettings& settings = config_.settings_for(r.topic);
  if (settings.hash && *settings.hash != r.hash) {
    return rejected(r, Status::kConflict, "hash_mismatch",
                    "topic '" + r.topic + "' is configured with hash " +
                        std::string(to_string(*settings.hash)) + ", the report says " +
                        std::string(to_string(r.hash)));
  }
  SpaceSaving sketch(1);
  try {
    sketch = scaled_report_sketch(r);
  } catch (const DecodeError& e) {
    return rejected(r, Status::kInvalid, "invalid_sketch", e.what());
  }
  std::shared_ptr<Topic> t;
  bool created = false;
  TopicLock topic_lock;
  for (;;) {
    t = get_or_create_topic(r.topic, &created);
    if (!t) {
      metrics_.rejected("too_many_topics");
      return error_result(Status::kLimit, "too_many_topics",
                          "the coordinator already tracks max_topics=" +
                              std::to_string(config_.max_topics) + " topics");
    }
    topic_lock = TopicLock(*t);
    if (!topic_lock->removed()) break;
    topic_lock.unlock();
  }
  if (std::optional<std::string> error = topic_lock->hash_conflict(r, settings)) {
    metrics_.rejected("hash_mismatch");
    topic_lock->note_rejection(r.producer, "hash_mismatch", *error, clock_.now_ms());
    return error_result(Status::kConflict, "hash_mismatch", std::move(*error));
  }
  if (r.partitions > topic_lock->partitions() && !topics_->resize(topic_lock, r.partitions, true)) {
    topic_lock.unlock();
    if (created) discard_if_unused(t);
    metrics_.rejected("too_many_partitions");
    return error_result(
        Status::kLimit, "too_many_partitions",
        "topic '" + r.topic + "' with " + std::to_string(r.partitions) +
            " partitions would take the partitions tracked over max_tracked_partitions=" +
            std::to_string(config_.max_tracked_partitions) + " (" +
            std::to_string(topics_->tracked_partitions()) + " tracked now)");
  }
  const Ingested done = topic_lock->ingest(r, std::move(sketch), settings, clock_.now_ms());
  topic_lock.unlock();
  CallResult result;
  if (done.duplicate) {
    result.duplicate = true;
    return result;
  }
  if (done.wake) {
    {
      std::lock_guard lock(bg_mu_);
      if (done.enqueue) wanted_.push_back(t);
      bg_wake_ = true;
    }
    bg_cv_.notify_all();
  }
  metrics_.ingest_latency(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return result;
}

}  // namespace hotkey::coordinator
