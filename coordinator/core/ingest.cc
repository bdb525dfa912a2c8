// Ingest: dedupe by (producer, seq), validation against the topic, merge into the window,
// and the signals that trigger a plan before the next tick.
#include "coordinator_topic.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <set>
#include "hotkey/key_codec.h"

namespace hotkey::coordinator {

// Keeps what the planner's latest-round estimate needs from `r`: its records and its keys at
// least kLatestKeepFraction of the hot threshold (few per report; none in a uniform tail).
void keep_latest(ProducerInfo& p, const Report& r, const TopicSettings& s, int32_t partitions) {
  p.last_total = static_cast<double>(r.total);
  p.last_keys.clear();
  if (partitions <= 0 || r.sketch_total == 0) return;
  const double keep =
      kLatestKeepFraction * s.hot_fraction / partitions * static_cast<double>(r.sketch_total);
  for (const auto& item : r.items) {
    if (item.count <= item.error) continue;
    const double g = static_cast<double>(item.count - item.error);
    if (g < keep) continue;
    const double mid = static_cast<double>(item.count) - 0.5 * static_cast<double>(item.error);
    p.last_keys.push_back({item.key, LatestCount{scaled_records(r, g), scaled_records(r, mid)}});
  }
  if (p.last_keys.size() > kLatestKeepMax) {
    std::partial_sort(
        p.last_keys.begin(), p.last_keys.begin() + kLatestKeepMax, p.last_keys.end(),
        [](const auto& a, const auto& b) { return a.second.guaranteed > b.second.guaranteed; });
    p.last_keys.resize(kLatestKeepMax);
  }
}

CallResult Coordinator::submit_report(Report report, std::string_view wire) {
  // Cluster mode: a topic another member owns goes to its owner (else the report would land in
  // a window nobody plans).
  if (!owns(report.topic)) return placement_->forward_report(report, wire);
  return ingest(std::move(report));
}

void Coordinator::Topic::note_rejection(const std::string& producer, const std::string& reason,
                                        const std::string& error, int64_t now_ms) {
  auto key = std::make_pair(producer, reason);
  auto it = rejections.find(key);
  if (it == rejections.end()) {
    if (rejections.size() >= kMaxRejectionsPerTopic) {
      rejections.erase(std::min_element(
          rejections.begin(), rejections.end(),
          [](const auto& a, const auto& b) { return a.second.last_at_ms < b.second.last_at_ms; }));
    }
    it = rejections.emplace(key, Rejection{producer, reason, 0, 0, ""}).first;
  }
  it->second.count++;
  it->second.last_at_ms = now_ms;
  it->second.error = error;
}

CallResult Coordinator::rejected(const Report& r, Status status, const std::string& reason,
                                 const std::string& error) {
  metrics_.rejected(reason);
  // Counted on the topic's view when the topic exists; a refusal never creates one.
  if (std::shared_ptr<Topic> t = find_topic(r.topic)) {
    TopicLock lock(*t);
    if (!t->removed.load()) t->note_rejection(r.producer, reason, error, clock_.now_ms());
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
    if (!t->removed.load()) break;
    topic_lock.unlock();
  }
  CallResult result;
  bool wake = false;     // the background thread has a plan to consider ...
  bool enqueue = false;  // ... of a topic not yet on its list
  {
    if (!settings.hash && t->hash && *t->hash != r.hash) {
      metrics_.rejected("hash_mismatch");
      std::string error = "topic '" + r.topic + "' is partitioned with " +
                          std::string(to_string(*t->hash)) + ", the report says " +
                          std::string(to_string(r.hash)) +
                          "; producers of one topic must share one hash family";
      t->note_rejection(r.producer, "hash_mismatch", error, clock_.now_ms());
      return error_result(Status::kConflict, "hash_mismatch", std::move(error));
    }
    if (r.partitions > t->partitions && !resize_partitions(topic_lock, r.partitions, true)) {
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
    const int64_t now = clock_.now_ms();
    auto [pit, inserted] = t->producers.try_emplace(r.producer);
    ProducerInfo& p = pit->second;
    // seq 1 after a higher one is a restarted producer; seq 1 again right after seq 1 is a
    // retry of the first report and must not be counted twice.
    if (!inserted && (r.seq > 1 || p.last_seq == 1) && r.seq <= p.last_seq &&
        p.last_seq - r.seq < kDuplicateWindow) {
      result.duplicate = true;
      return result;
    }
    // A report routed with one list all along (the producer's previous report already
    // carried its version) is accounted against that list's tables, whichever version is
    // published now. The first one after a switch covers records sent under the old list too.
    const HotKeyList* routed_with = nullptr;
    if (inserted || p.last_list_version == r.list_version) {
      if (r.list_version == 0) {
        routed_with = &kNoList;
      } else if (auto it = t->recent_lists.find(r.list_version); it != t->recent_lists.end()) {
        routed_with = &it->second->list;
      }
    }
    p.last_list_version = r.list_version;
    if (r.list_version > t->reported_version && r.list_version < kMaxAdoptedVersion) {
      t->reported_version = r.list_version;
      // The fleet routes with a version this coordinator never issued (restored from a
      // backup): publish above it without waiting for the next tick.
      if (r.list_version > t->version && !t->replan_wanted) {
        t->replan_wanted = true;
        wake = enqueue = true;
      }
    }
    p.last_seq = r.seq;
    p.last_seen_ms = now;
    t->last_active_ms = now;
    keep_latest(p, r, settings, t->partitions > 0 ? t->partitions : r.partitions);
    p.rate = r.window_ms > 0 ? static_cast<double>(r.total) * 1000.0 / r.window_ms : 0.0;
    p.partitions = r.partitions;
    if (!t->hash) t->hash = settings.hash ? *settings.hash : r.hash;
    if (!t->separator) t->separator = settings.separator ? *settings.separator : r.separator;
    if (t->first_report_ms < 0) t->first_report_ms = now;
    const size_t entries = r.items.size();
    t->window.add(r, std::move(sketch), now, t->partitions, routed_with, p.last_keys);
    t->m->report_accepted(static_cast<double>(entries));
    if (shows_new_hot_key(topic_lock, r, settings, now)) {
      ++t->surge_reports;
      if (!t->replan_wanted) {
        t->replan_wanted = true;
        wake = enqueue = true;
      } else if (t->surge_evidence()) {
        wake = true;  // held back by the clock: the evidence may release it (plan_triggered)
      }
    }
  }
  topic_lock.unlock();
  if (wake) {
    {
      std::lock_guard lock(bg_mu_);
      if (enqueue) wanted_.push_back(t);
      bg_wake_ = true;
    }
    bg_cv_.notify_all();
  }
  metrics_.ingest_latency(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return result;
}

bool Coordinator::shows_new_hot_key(const TopicLock& t, const Report& r, const TopicSettings& s,
                                    int64_t now) const {
  if (t->partitions <= 0 || r.sketch_total == 0 || t->first_report_ms < 0) return false;
  if (now - t->first_report_ms < fast_detect_after_ms()) return false;
  // The report's own share is only a hint (one producer's view); the plan decides on the
  // fleet-wide recent view.
  const double bar =
      kFastEntryFactor * s.hot_fraction / t->partitions * static_cast<double>(r.sketch_total);
  for (const auto& item : r.items) {
    if (item.count <= item.error) continue;
    const double g = static_cast<double>(item.count - item.error);
    if (g < bar || scaled_records(r, g) < kFastEntryMinRecords) continue;
    if (t->hot.contains(item.key) || t->pins.contains(item.key) || t->denies.contains(item.key)) {
      continue;
    }
    // Policies are asked only here, of a key past the topic's bar: a never_salt key, or one
    // under its prefix's higher threshold, would trigger plans that list nothing.
    if (const Policy* p = t->policy_index.match(item.key)) {
      if (p->never_salt) continue;
      const double own_bar =
          kFastEntryFactor * p->hot_fraction / t->partitions * static_cast<double>(r.sketch_total);
      if (p->hot_fraction > 0 && g < own_bar) continue;
    }
    return true;
  }
  return false;
}

int64_t Coordinator::fast_detect_after_ms() const {
  // From the topic's first report: the fast path only lists a key at twice the hot threshold
  // of the latest reports with kFastEntryMinRecords records behind it (unambiguous even before
  // every producer reported), so a key hot from a topic's first second is salted within a
  // report round. Waiting an epoch here cost every cold start about a second (#16).
  return 0;
}

}  // namespace hotkey::coordinator
