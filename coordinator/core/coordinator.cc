#include "coordinator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <limits>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "hotkey/key_codec.h"
#include "planner.h"
#include "topic_window.h"

namespace hotkey::coordinator {
namespace {

using nlohmann::json;

struct ProducerInfo {
  int64_t last_seen_ms = 0;
  uint64_t last_seq = 0;
  uint64_t last_list_version = 0;
  // The latest report's records (scaled) and its keys near or above the hot threshold.
  double last_total = 0;
  std::vector<std::pair<std::string, LatestCount>> last_keys;
  double rate = 0;
  int32_t partitions = 0;
};

// Reports whose seq is at most this far behind the producer's last one are duplicates
// (retries); anything further back is a restarted producer counting again.
constexpr uint64_t kDuplicateWindow = 1024;

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

CallResult error_result(int status, std::string reason, std::string message) {
  CallResult r;
  r.status = status;
  r.reason = std::move(reason);
  r.error = std::move(message);
  return r;
}

// 404 for an unpin or allow of a key that holds no pin (deny) in `topic`, or of a topic the
// coordinator does not know.
CallResult not_found(const std::string& what, const std::string& topic) {
  return error_result(404, "not_found",
                      "no such " + what + " for this key in topic '" + topic + "'");
}

}  // namespace

struct Coordinator::Topic {
  Topic(std::string topic_name, const CoordinatorConfig& c, TopicMetrics metrics)
      : name(std::move(topic_name)),
        window(c.epoch_ms, c.window_epochs, c.sketch_capacity),
        m(metrics) {}

  const std::string name;
  mutable std::mutex mu;
  TopicWindow window;
  std::unordered_map<std::string, ProducerInfo> producers;
  std::map<std::string, HotState> hot;
  std::map<std::string, Pin> pins;
  std::map<std::string, Deny> denies;
  int32_t partitions = 0;
  std::optional<HashFamily> hash;
  std::optional<std::string> separator;
  uint64_t version = 0;  // highest version ever issued
  // Highest list version a producer reported routing with. After a restore from a backup the
  // fleet can be ahead of the store: the next version published goes above it, so producers
  // switch to a list the coordinator knows and their loads count again.
  uint64_t reported_version = 0;
  std::shared_ptr<const PublishedList> published;
  // The lists of recent versions by version: a report is accounted against the tables it
  // was routed with (its list_version), so a new version does not reset the measured load.
  std::map<uint64_t, std::shared_ptr<const PublishedList>> recent_lists;
  int64_t first_report_ms = -1;
  // The last accepted report or operator change (or the topic's creation or load): a topic
  // idle for topic_idle_ttl_ms without pins and denies expires.
  int64_t last_active_ms = 0;
  TopicSummary stats;
  std::vector<double> partition_load;  // the last plan's window, records per partition
  // A report showed a key far above the hot threshold that is not listed: plan before the
  // next tick (at most every min_replan_ms).
  bool replan_wanted = false;
  int64_t last_plan_ms = -1;
  int64_t last_triggered_ms = -1;  // the last plan a report triggered (plan_triggered)
  TopicMetrics m;
  // Set (under mu, last of retire_locked) when the topic is dropped from memory; lookups skip
  // it and holders of a reference retry with a fresh lookup.
  std::atomic<bool> removed{false};
};

namespace {

// Reported list versions at or above this are not adopted as a floor (a producer cannot push
// a topic's versions to the end of the uint64 range; cluster versions are epoch << 32 | seq).
constexpr uint64_t kMaxAdoptedVersion = uint64_t{1} << 62;

// Lists kept for accounting reports routed with them: far more versions than a window sees
// at the usual churn (a few a minute), so only reports of a long-gone list lose their load.
constexpr size_t kRecentLists = 16;

void remember_list(std::map<uint64_t, std::shared_ptr<const PublishedList>>& lists,
                   const std::shared_ptr<const PublishedList>& list) {
  lists[list->list.version] = list;
  while (lists.size() > kRecentLists) lists.erase(lists.begin());
}

// Version 0: the producer routes with no list (every key to its home partition).
const HotKeyList kNoList{};

}  // namespace

Coordinator::Coordinator(const CoordinatorConfig& config, Store& store, Metrics& metrics,
                         const Clock& clock)
    : config_(config),
      store_(store),
      metrics_(metrics),
      clock_(clock),
      board_(config.max_waiters),
      started_ms_(clock.now_ms()) {
  std::string error;
  std::vector<std::string> skipped;
  auto stored = store_.load(&error, &skipped);
  if (!error.empty()) throw std::runtime_error(error);
  // A damaged list is derived data: planned again from fresh reports, above the topic's
  // persisted version counter, instead of keeping the whole service down.
  for (const std::string& what : skipped) {
    metrics_.store_record_skipped();
    std::cerr << json{{"ts_ms", clock_.now_ms()},
                      {"level", "error"},
                      {"event", "store_record_skipped"},
                      {"error", what}}
                     .dump(-1, ' ', false, json::error_handler_t::replace)
              << std::endl;
  }
  for (auto& [name, st] : stored) {
    // Only the version counter of a dropped topic: no topic to track (a topic of that name
    // created later starts above the counter).
    if (!st.list && !st.meta && st.pins.empty() && st.denies.empty()) continue;
    auto t = std::make_shared<Topic>(name, config_, metrics_.topic(name));
    t->pins = std::move(st.pins);
    t->denies = std::move(st.denies);
    t->version = st.version;
    t->last_active_ms = started_ms_;
    if (st.meta && !st.list) {
      t->partitions = st.meta->partitions;
      tracked_partitions_ += static_cast<uint64_t>(std::max(st.meta->partitions, 0));
      t->hash = st.meta->hash;
      t->separator = st.meta->separator;
    }
    if (st.list) {
      t->partitions = st.list->partitions;
      tracked_partitions_ += static_cast<uint64_t>(std::max(st.list->partitions, 0));
      t->hash = st.list->hash;
      t->separator = st.list->separator;
      // Detected keys stay listed until fresh reports show them cold for the hold time.
      for (const auto& k : st.list->keys) {
        if (k.source == KeySource::kDetected) t->hot[k.key] = HotState{started_ms_, -1, k.share};
      }
      auto pub = std::make_shared<PublishedList>(PublishedList{*st.list, list_to_json(*st.list)});
      t->published = pub;
      if (t->partitions > 0) t->window.reset_partitions(t->partitions);
      remember_list(t->recent_lists, pub);
      board_.publish(pub);
      t->m.list_version->Set(static_cast<double>(st.list->version));
      t->m.hot_keys->Set(static_cast<double>(st.list->keys.size()));
    }
    topics_.emplace(name, std::move(t));
  }
}

Coordinator::~Coordinator() {
  stop_background();
  board_.close();
}

std::shared_ptr<Coordinator::Topic> Coordinator::find_topic(const std::string& name) const {
  std::shared_lock lock(topics_mu_);
  auto it = topics_.find(name);
  if (it == topics_.end() || it->second->removed.load()) return nullptr;
  return it->second;
}

std::shared_ptr<Coordinator::Topic> Coordinator::get_or_create_topic(const std::string& name,
                                                                     bool* created) {
  *created = false;
  if (auto t = find_topic(name)) return t;
  std::unique_lock lock(topics_mu_);
  auto it = topics_.find(name);
  if (it != topics_.end()) {
    if (!it->second->removed.load()) return it->second;
    topics_.erase(it);  // dropped; its remover erases it too when it gets here first
  }
  if (topics_.size() >= config_.max_topics) return nullptr;
  auto t = std::make_shared<Topic>(name, config_, metrics_.topic(name));
  t->version = store_.version_counter(name).value_or(0);
  t->last_active_ms = clock_.now_ms();
  topics_.emplace(name, t);
  *created = true;
  return t;
}

bool Coordinator::resize_partitions_locked(Topic& t, int32_t partitions, bool enforce) {
  const uint64_t now = static_cast<uint64_t>(std::max(t.partitions, 0));
  const uint64_t want = static_cast<uint64_t>(std::max(partitions, 0));
  if (want > now) {
    uint64_t tracked = tracked_partitions_.load();
    do {
      if (enforce && tracked + (want - now) > config_.max_tracked_partitions) return false;
    } while (!tracked_partitions_.compare_exchange_weak(tracked, tracked + (want - now)));
  } else {
    tracked_partitions_ -= now - want;
  }
  t.partitions = partitions;
  return true;
}

void Coordinator::retire_locked(Topic& t) {
  resize_partitions_locked(t, 0, false);
  board_.unpublish(t.name);
  metrics_.remove_topic(t.m);
  t.m = TopicMetrics{};
  t.removed.store(true);
}

void Coordinator::discard_if_unused(const std::shared_ptr<Topic>& t) {
  std::unique_lock lock(topics_mu_);
  std::lock_guard topic_lock(t->mu);
  if (t->removed.load() || t->published || !t->pins.empty() || !t->denies.empty() ||
      !t->producers.empty() || t->first_report_ms >= 0 || t->partitions > 0) {
    return;
  }
  auto it = topics_.find(t->name);
  if (it == topics_.end() || it->second != t) return;
  retire_locked(*t);
  topics_.erase(it);
}

CallResult Coordinator::ingest(Report r) {
  const auto start = std::chrono::steady_clock::now();
  const TopicSettings& settings = config_.settings_for(r.topic);
  if (settings.hash && *settings.hash != r.hash) {
    metrics_.rejected("hash_mismatch");
    return error_result(409, "hash_mismatch",
                        "topic '" + r.topic + "' is configured with hash " +
                            std::string(to_string(*settings.hash)) + ", the report says " +
                            std::string(to_string(r.hash)));
  }
  SpaceSaving sketch(1);
  try {
    sketch = scaled_report_sketch(r);
  } catch (const DecodeError& e) {
    metrics_.rejected("invalid_sketch");
    return error_result(400, "invalid_sketch", e.what());
  }
  std::shared_ptr<Topic> t;
  bool created = false;
  std::unique_lock<std::mutex> topic_lock;
  for (;;) {
    t = get_or_create_topic(r.topic, &created);
    if (!t) {
      metrics_.rejected("too_many_topics");
      return error_result(429, "too_many_topics",
                          "the coordinator already tracks max_topics=" +
                              std::to_string(config_.max_topics) + " topics");
    }
    topic_lock = std::unique_lock(t->mu);
    if (!t->removed.load()) break;
    topic_lock.unlock();
  }
  CallResult result;
  bool wake = false;
  {
    if (!settings.hash && t->hash && *t->hash != r.hash) {
      metrics_.rejected("hash_mismatch");
      return error_result(409, "hash_mismatch",
                          "topic '" + r.topic + "' is partitioned with " +
                              std::string(to_string(*t->hash)) + ", the report says " +
                              std::string(to_string(r.hash)) +
                              "; producers of one topic must share one hash family");
    }
    if (r.partitions > t->partitions && !resize_partitions_locked(*t, r.partitions, true)) {
      topic_lock.unlock();
      if (created) discard_if_unused(t);
      metrics_.rejected("too_many_partitions");
      return error_result(
          429, "too_many_partitions",
          "topic '" + r.topic + "' with " + std::to_string(r.partitions) +
              " partitions would take the partitions tracked over max_tracked_partitions=" +
              std::to_string(config_.max_tracked_partitions) + " (" +
              std::to_string(tracked_partitions_.load()) + " tracked now)");
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
        wake = true;
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
    t->m.reports->Increment();
    t->m.entries->Increment(static_cast<double>(entries));
    if (!t->replan_wanted && shows_new_hot_key(*t, r, settings, now)) {
      t->replan_wanted = true;
      wake = true;
    }
  }
  topic_lock.unlock();
  if (wake) {
    {
      std::lock_guard lock(bg_mu_);
      wanted_.push_back(t);
      bg_wake_ = true;
    }
    bg_cv_.notify_all();
  }
  metrics_.ingest_latency(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return result;
}

bool Coordinator::shows_new_hot_key(const Topic& t, const Report& r, const TopicSettings& s,
                                    int64_t now) const {
  if (t.partitions <= 0 || r.sketch_total == 0 || t.first_report_ms < 0) return false;
  if (now - t.first_report_ms < fast_detect_after_ms()) return false;
  // The report's own share is only a hint (one producer's view); the plan decides on the
  // fleet-wide recent view.
  const double bar =
      kFastEntryFactor * s.hot_fraction / t.partitions * static_cast<double>(r.sketch_total);
  for (const auto& item : r.items) {
    if (item.count <= item.error) continue;
    const double g = static_cast<double>(item.count - item.error);
    if (g < bar || scaled_records(r, g) < kFastEntryMinRecords) continue;
    if (t.hot.contains(item.key) || t.pins.contains(item.key) || t.denies.contains(item.key)) {
      continue;
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

StoreStatus Coordinator::replan_locked(Topic& t, StoreBatch batch, const std::string& cause,
                                       uint64_t* version_out,
                                       std::map<std::string, Pin>* pins_override,
                                       std::map<std::string, Deny>* denies_override,
                                       std::optional<AuditEntry> audit, bool triggered) {
  const TopicSettings& s = config_.settings_for(t.name);
  const int64_t now = clock_.now_ms();
  t.last_plan_ms = now;
  t.replan_wanted = false;
  const auto& pins = pins_override ? *pins_override : t.pins;
  const auto& denies = denies_override ? *denies_override : t.denies;
  std::map<std::string, HotState> hot = t.hot;
  std::optional<PlanResult> plan;
  bool load_ready = false;
  // Cluster mode: only the owner plans (an operator write on another member only records it).
  if (t.partitions > 0 && owns(t.name)) {
    TopicWindow::Snapshot snap = t.window.snapshot(now);
    PlanInput in;
    in.settings = &s;
    in.topic = t.name;
    in.partitions = t.partitions;
    in.hash = s.hash ? *s.hash : t.hash.value_or(HashFamily::kMurmur2);
    in.separator =
        s.separator ? *s.separator : t.separator.value_or(std::string(kDefaultSeparator));
    in.items = snap.sketch.items();
    in.total = snap.total;
    in.partition_load = std::move(snap.partition_load);
    in.cold_load = std::move(snap.cold_load);
    // Load is usable once it holds about one report round of the producers reporting now:
    // fewer reports give partition loads that are mostly sampling noise, which a plan would
    // chase with a new table each time.
    size_t active = 0;
    for (const auto& [id, p] : t.producers) {
      if (now - p.last_seen_ms > 2 * static_cast<int64_t>(config_.epoch_ms)) continue;
      ++active;
      in.latest_total += p.last_total;
      for (const auto& [key, c] : p.last_keys) {
        LatestCount& sum = in.latest[key];
        sum.guaranteed += c.guaranteed;
        sum.traffic += c.traffic;
      }
    }
    load_ready = snap.load_reports > 0 && snap.load_reports >= active;
    in.load_scale = snap.total > 0 && load_ready ? snap.load_total / snap.total : 0.0;
    in.recent_items = snap.recent.items();
    in.recent_total = snap.recent_total;
    if (load_ready) {
      in.salted = std::move(snap.salted);
      in.home = std::move(snap.home);
    }
    double rate = 0;
    for (const auto& [id, p] : t.producers) rate += p.rate;
    in.rate = rate;
    in.pins = &pins;
    in.denies = &denies;
    in.published = t.published ? &t.published->list : nullptr;
    in.now_ms = now;
    in.detect = t.first_report_ms >= 0 && now - t.first_report_ms >= config_.warmup_ms;
    in.detect_fast = t.first_report_ms >= 0 && now - t.first_report_ms >= fast_detect_after_ms();
    in.triggered = triggered;
    plan = plan_topic(in, hot);
    t.partition_load = in.partition_load;
    t.stats.rate = rate;
    t.stats.window_reports = snap.reports;
    t.stats.window_total = snap.total;
    t.m.rate->Set(rate);
    // Measured skew and idle partitions only from usable load: right after a new list (an
    // operator pin or deny, a detection) the loads restart empty, and reporting 1.00 / 100%
    // idle for that moment would be a false picture (and a false idle alert).
    if (load_ready) {
      t.stats.skew = plan->measured_skew;
      t.stats.idle_ratio = plan->idle_ratio;
      t.m.skew->Set(plan->measured_skew);
      t.m.idle_ratio->Set(plan->idle_ratio);
    }
    t.stats.predicted_skew = plan->predicted_skew;
    t.m.predicted_skew->Set(plan->predicted_skew);
  }
  // Producers ahead of every version issued here (a restored backup): publish above them.
  const bool behind_fleet = t.reported_version > t.version;
  const bool material = plan && (plan->material || behind_fleet);
  uint64_t version = t.version;
  if (material) {
    version = std::max({t.version, t.reported_version,
                        hooks_.version_floor ? hooks_.version_floor(t.name) : 0}) +
              1;
    plan->list.version = version;
    batch.put_list(plan->list);
    batch.put_topic_meta(t.name,
                         TopicMeta{plan->list.partitions, plan->list.hash, plan->list.separator});
  }
  // Audit entries name the version in force after the change, in the same batch (also the
  // system's own entries already in `batch`, e.g. expired pins).
  const uint64_t in_force = material ? version : (t.published ? t.published->list.version : 0);
  if (audit) {
    audit->version = in_force;
    batch.append_audit(std::move(*audit));
  }
  batch.stamp_audit_versions(in_force);
  if (!batch.empty()) {
    double latency = 0;
    StoreStatus st = store_.write(batch, &latency);
    metrics_.store_write_latency(latency);
    metrics_.set_store_healthy(st.ok);
    if (!st.ok) return st;
  }
  t.hot = std::move(hot);
  if (pins_override) t.pins = *pins_override;
  if (denies_override) t.denies = *denies_override;
  if (material) {
    t.version = version;
    auto pub = std::make_shared<PublishedList>(PublishedList{plan->list, list_to_json(plan->list)});
    HotKeyList before = t.published ? t.published->list : HotKeyList{};
    t.published = pub;
    board_.publish(pub);
    if (hooks_.on_publish) hooks_.on_publish(pub);
    remember_list(t.recent_lists, pub);
    t.m.list_version->Set(static_cast<double>(version));
    t.m.hot_keys->Set(static_cast<double>(pub->list.keys.size()));
    t.m.list_changes->Increment();
    log_list_change(before, pub->list, cause);
  }
  if (version_out) *version_out = t.published ? t.published->list.version : 0;
  return StoreStatus::Ok();
}

void Coordinator::tick() {
  std::vector<std::shared_ptr<Topic>> all;
  {
    std::shared_lock lock(topics_mu_);
    for (auto& [name, t] : topics_) all.push_back(t);
  }
  const int64_t now = clock_.now_ms();
  for (const auto& t : all) {
    if (!owns(t->name)) continue;
    if (expire_if_idle(t, now)) continue;
    // One topic's failure (a plan that throws) is logged, counted and skipped: the topic
    // keeps its published list, and the other topics are planned as usual.
    try {
      tick_topic(*t, now);
    } catch (const std::exception& e) {
      plan_failed(t->name, e.what());
    }
  }
  metrics_.set_store_healthy(store_.healthy());
  metrics_.set_waiters(board_.waiters());
}

void Coordinator::tick_topic(Topic& topic, int64_t now) {
  Topic* t = &topic;
  std::lock_guard lock(t->mu);
  if (t->removed.load()) return;
  int32_t live_partitions = 0;
  uint64_t oldest = std::numeric_limits<uint64_t>::max(), newest = 0;
  for (auto it = t->producers.begin(); it != t->producers.end();) {
    if (now - it->second.last_seen_ms > config_.producer_timeout_ms) {
      it = t->producers.erase(it);
    } else {
      live_partitions = std::max(live_partitions, it->second.partitions);
      const uint64_t v = it->second.last_list_version;
      oldest = std::min(oldest, v);
      newest = std::max(newest, v);
      ++it;
    }
  }
  t->m.producer_version_oldest->Set(t->producers.empty() ? 0.0 : static_cast<double>(oldest));
  t->m.producer_version_newest->Set(static_cast<double>(newest));
  // Partition counts only shrink when no live producer still sees the larger count.
  if (live_partitions > 0 && live_partitions != t->partitions) {
    resize_partitions_locked(*t, live_partitions, false);
  }
  t->m.producers->Set(static_cast<double>(t->producers.size()));
  StoreBatch batch;
  std::map<std::string, Pin> pins = t->pins;
  bool expired = false;
  for (auto it = pins.begin(); it != pins.end();) {
    if (it->second.expires_at_ms > 0 && it->second.expires_at_ms <= now) {
      batch.delete_pin(t->name, it->first);
      AuditEntry a;
      a.at_ms = now;
      a.who = "system";
      a.action = "pin_expired";
      a.topic = t->name;
      a.key = it->first;
      a.detail = json{{"reason", it->second.reason}, {"by", it->second.by}}.dump(
          -1, ' ', false, json::error_handler_t::replace);
      batch.append_audit(std::move(a));
      it = pins.erase(it);
      expired = true;
    } else {
      ++it;
    }
  }
  StoreStatus st = replan_locked(*t, std::move(batch), expired ? "pin_expired" : "detection",
                                 nullptr, expired ? &pins : nullptr, nullptr, std::nullopt);
  if (!st.ok) log_store_error(t->name, st);
}

void Coordinator::plan_failed(const std::string& topic, const std::string& what) const {
  metrics_.plan_failed();
  std::cerr << json{{"ts_ms", clock_.now_ms()},
                    {"level", "error"},
                    {"event", "plan_failed"},
                    {"topic", topic},
                    {"error", what}}
                   .dump(-1, ' ', false, json::error_handler_t::replace)
            << std::endl;
}

int64_t Coordinator::plan_triggered() {
  std::vector<std::shared_ptr<Topic>> wanted;
  {
    std::lock_guard lock(bg_mu_);
    wanted.swap(wanted_);
  }
  // A quarter of the tick: a surge's first plans follow its reports closely, while a topic
  // whose reports keep showing locally hot keys costs at most a few plans per tick.
  const int64_t min_gap = std::max<int64_t>(config_.plan_interval_ms / 4, 1);
  const int64_t now = clock_.now_ms();
  int64_t next = -1;
  std::vector<std::shared_ptr<Topic>> later;
  for (const auto& t : wanted) {
    if (!owns(t->name)) continue;
    std::lock_guard lock(t->mu);
    if (t->removed.load() || !t->replan_wanted) continue;  // dropped, or a tick planned it
    // Only triggered plans count against the gap: a regular tick just before a surge's first
    // reports must not hold its plan back by another quarter tick.
    const int64_t wait = t->last_triggered_ms < 0 ? 0 : t->last_triggered_ms + min_gap - now;
    if (wait > 0) {
      later.push_back(t);
      next = next < 0 ? wait : std::min(next, wait);
      continue;
    }
    t->last_triggered_ms = now;
    try {
      StoreStatus st = replan_locked(*t, StoreBatch{}, "surge", nullptr, nullptr, nullptr,
                                     std::nullopt, /*triggered=*/true);
      if (!st.ok) log_store_error(t->name, st);
    } catch (const std::exception& e) {
      plan_failed(t->name, e.what());
    }
  }
  if (!later.empty()) {
    std::lock_guard lock(bg_mu_);
    wanted_.insert(wanted_.end(), later.begin(), later.end());
  }
  return next;
}

void Coordinator::start_background() {
  std::lock_guard lock(bg_mu_);
  if (bg_.joinable()) return;
  bg_stop_ = false;
  bg_ = std::thread([this] {
    using Steady = std::chrono::steady_clock;
    const auto interval = std::chrono::milliseconds(config_.plan_interval_ms);
    Steady::time_point next_tick = Steady::now() + interval;
    Steady::time_point retry = Steady::time_point::max();
    std::unique_lock lk(bg_mu_);
    while (!bg_stop_) {
      const Steady::time_point until = std::min(retry, next_tick);
      bg_cv_.wait_until(lk, until, [this] { return bg_stop_ || bg_wake_; });
      if (bg_stop_) break;
      bg_wake_ = false;
      lk.unlock();
      // tick() and plan_triggered() contain each topic's failure; this is the last line: an
      // exception escaping this thread would terminate the process.
      int64_t wait = -1;
      try {
        if (Steady::now() >= next_tick) {
          next_tick = Steady::now() + interval;
          tick();
        }
        wait = plan_triggered();
      } catch (const std::exception& e) {
        plan_failed("", e.what());
      } catch (...) {
        plan_failed("", "unknown exception");
      }
      retry =
          wait < 0 ? Steady::time_point::max() : Steady::now() + std::chrono::milliseconds(wait);
      lk.lock();
    }
  });
}

void Coordinator::stop_background() {
  {
    std::lock_guard lock(bg_mu_);
    bg_stop_ = true;
  }
  bg_cv_.notify_all();
  if (bg_.joinable()) bg_.join();
}

CallResult Coordinator::operator_change(
    const std::string& topic, const std::string& key, const std::string& who,
    const std::string& action, const std::string& detail, bool creates,
    const std::function<std::optional<CallResult>(
        std::map<std::string, Pin>&, std::map<std::string, Deny>&, StoreBatch&)>& mutate,
    const std::function<void(StoreBatch&)>& extra) {
  // A refused write still moves the caller's checkpoint (cluster mode's state topic).
  auto refuse = [&](CallResult refusal) {
    if (extra) {
      StoreBatch only;
      extra(only);
      StoreStatus st = store_.write(only);
      if (!st.ok) return error_result(503, "store", st.error);
    }
    return refusal;
  };
  std::shared_ptr<Topic> t;
  bool created = false;
  std::unique_lock<std::mutex> topic_lock;
  for (;;) {
    if (creates) {
      t = get_or_create_topic(topic, &created);
      if (!t) {
        return refuse(error_result(429, "too_many_topics",
                                   "the coordinator already tracks max_topics=" +
                                       std::to_string(config_.max_topics) + " topics"));
      }
    } else {
      t = find_topic(topic);
      // Nothing to remove from a topic the coordinator does not know; do not create it.
      if (!t) return refuse(not_found(action == "unpin" ? "pin" : "deny", topic));
    }
    topic_lock = std::unique_lock(t->mu);
    if (!t->removed.load()) break;
    topic_lock.unlock();
  }
  const auto fail = [&](CallResult r) {
    topic_lock.unlock();
    if (created) discard_if_unused(t);
    return r;
  };
  std::map<std::string, Pin> pins = t->pins;
  std::map<std::string, Deny> denies = t->denies;
  StoreBatch batch;
  if (std::optional<CallResult> refusal = mutate(pins, denies, batch)) {
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
    st = replan_locked(*t, std::move(batch), action, &version, &pins, &denies, std::move(a));
  } catch (const std::exception& e) {
    plan_failed(topic, e.what());
    return fail(
        error_result(500, "plan_failed",
                     std::string("the change was not applied: planning failed: ") + e.what()));
  }
  if (!st.ok) {
    metrics_.set_store_healthy(false);
    return fail(error_result(503, "store", st.error));
  }
  t->last_active_ms = clock_.now_ms();
  CallResult r;
  r.version = version;
  return r;
}

StoreStatus Coordinator::drop_topic_locked(const std::shared_ptr<Topic>& t,
                                           std::unique_lock<std::mutex>& lock,
                                           std::optional<AuditEntry> audit) {
  StoreBatch batch;
  for (const auto& [key, pin] : t->pins) batch.delete_pin(t->name, key);
  for (const auto& [key, deny] : t->denies) batch.delete_deny(t->name, key);
  batch.drop_topic(t->name, t->version);
  if (audit) batch.append_audit(std::move(*audit));
  double latency = 0;
  StoreStatus st = store_.write(batch, &latency);
  metrics_.store_write_latency(latency);
  metrics_.set_store_healthy(st.ok);
  if (!st.ok) return st;
  retire_locked(*t);
  lock.unlock();
  std::unique_lock map_lock(topics_mu_);
  auto it = topics_.find(t->name);
  if (it != topics_.end() && it->second == t) topics_.erase(it);
  return st;
}

bool Coordinator::expire_if_idle(const std::shared_ptr<Topic>& t, int64_t now) {
  if (config_.topic_idle_ttl_ms <= 0 || hooks_.owns) return false;  // cluster mode: kept
  std::unique_lock lock(t->mu);
  if (t->removed.load() || !t->pins.empty() || !t->denies.empty() ||
      now - t->last_active_ms <= config_.topic_idle_ttl_ms) {
    return false;
  }
  const uint64_t version = t->version;
  const int64_t idle_ms = now - t->last_active_ms;
  StoreStatus st = drop_topic_locked(t, lock, std::nullopt);
  if (!st.ok) {
    log_store_error(t->name, st);
    return false;
  }
  std::cerr << json{{"ts_ms", now},     {"level", "info"},    {"event", "topic_expired"},
                    {"topic", t->name}, {"idle_ms", idle_ms}, {"version", version}}
                   .dump(-1, ' ', false, json::error_handler_t::replace)
            << std::endl;
  return true;
}

CallResult Coordinator::delete_topic(const std::string& topic, const std::string& reason,
                                     const std::string& who) {
  if (hooks_.operator_write || hooks_.owns) {
    return error_result(501, "cluster_mode",
                        "deleting a topic is not supported in cluster mode (its list lives on "
                        "in the lists topic); unpin and allow its keys instead");
  }
  std::shared_ptr<Topic> t = find_topic(topic);
  if (!t) return error_result(404, "not_found", "unknown topic '" + topic + "'");
  std::unique_lock lock(t->mu);
  if (t->removed.load()) return error_result(404, "not_found", "unknown topic '" + topic + "'");
  AuditEntry a;
  a.at_ms = clock_.now_ms();
  a.who = who;
  a.action = "delete_topic";
  a.topic = topic;
  a.detail = json{{"reason", reason},
                  {"pins", t->pins.size()},
                  {"denies", t->denies.size()},
                  {"partitions", t->partitions}}
                 .dump(-1, ' ', false, json::error_handler_t::replace);
  const uint64_t version = t->version;
  a.version = version;
  StoreStatus st = drop_topic_locked(t, lock, std::move(a));
  if (!st.ok) return error_result(503, "store", st.error);
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
  return error_result(409, "too_many_pins",
                      "topic '" + topic + "' already has " + std::to_string(pins.size()) +
                          " pins and max_hot_keys=" + std::to_string(limit) +
                          " (pins count against it): unpin a key or raise max_hot_keys");
}

CallResult Coordinator::apply_operator(const OperatorOp& op,
                                       const std::function<void(StoreBatch&)>& extra) {
  const std::string& topic = op.topic;
  const std::string& key = op.key;
  using Refusal = std::optional<CallResult>;
  if (op.op == "pin") {
    json detail{{"reason", op.reason}, {"salts", op.salts}, {"ttl_s", op.ttl_s}};
    return operator_change(
        topic, key, op.who, "pin", detail.dump(-1, ' ', false, json::error_handler_t::replace),
        true,
        [&](auto& pins, auto& denies, StoreBatch& batch) -> Refusal {
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
        [&](auto& pins, auto&, StoreBatch& batch) -> Refusal {
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
        [&](auto& pins, auto& denies, StoreBatch& batch) -> Refusal {
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
        [&](auto&, auto& denies, StoreBatch& batch) -> Refusal {
          if (!denies.erase(key)) return not_found("deny", topic);
          batch.delete_deny(topic, key);
          return std::nullopt;
        },
        extra);
  }
  throw std::invalid_argument("unknown operator write '" + op.op + "'");
}

CallResult Coordinator::forward_or_apply(const OperatorOp& op) {
  if (!hooks_.operator_write) return apply_operator(op);
  // Cluster mode: the state topic decides; a removal of what this member's materialized state
  // does not hold is answered here, as in single-node mode.
  if (op.op == "pin") {
    if (std::shared_ptr<Topic> t = find_topic(op.topic)) {
      std::lock_guard lock(t->mu);
      if (std::optional<CallResult> full = pin_limit(op.topic, t->pins, op.key)) return *full;
    }
  }
  if (op.op == "unpin" || op.op == "allow") {
    std::shared_ptr<Topic> t = find_topic(op.topic);
    bool present = false;
    if (t) {
      std::lock_guard lock(t->mu);
      present = op.op == "unpin" ? t->pins.contains(op.key) : t->denies.contains(op.key);
    }
    if (!present) return not_found(op.op == "unpin" ? "pin" : "deny", op.topic);
  }
  return hooks_.operator_write(op);
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

void Coordinator::release_topic(const std::string& name) {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return;
  std::lock_guard lock(t->mu);
  if (t->removed.load()) return;
  t->window = TopicWindow(config_.epoch_ms, config_.window_epochs, config_.sketch_capacity);
  t->producers.clear();
  t->hot.clear();
  t->published = nullptr;
  t->recent_lists.clear();
  t->first_report_ms = -1;
  t->stats = TopicSummary{};
  t->partition_load.clear();
  t->replan_wanted = false;
}

uint64_t Coordinator::adopt_list(HotKeyList list) {
  std::shared_ptr<Topic> t;
  bool created = false;
  std::unique_lock<std::mutex> lock;
  for (;;) {
    t = get_or_create_topic(list.topic, &created);
    if (!t) return 0;
    lock = std::unique_lock(t->mu);
    if (!t->removed.load()) break;
    lock.unlock();
  }
  const uint64_t floor = hooks_.version_floor ? hooks_.version_floor(list.topic) : 0;
  // The fleet routes with the list as the previous owner issued it until the re-issued
  // version reaches it (and the rebuilt window holds its reports): the same tables under the
  // old version, so those reports' partition counts are accounted, not dropped as routed with
  // a list this member never saw.
  auto previous = std::make_shared<PublishedList>(PublishedList{list, list_to_json(list)});
  list.version = std::max(t->version, floor) + 1;
  StoreBatch batch;
  batch.put_list(list);
  batch.put_topic_meta(list.topic, TopicMeta{list.partitions, list.hash, list.separator});
  StoreStatus st = store_.write(batch);
  if (!st.ok) log_store_error(list.topic, st);
  t->version = list.version;
  // Reports already read into the window keep their counts when the partition count holds.
  const bool repartition = t->partitions != list.partitions;
  resize_partitions_locked(*t, list.partitions, false);
  t->hash = list.hash;
  t->separator = list.separator;
  const int64_t now = clock_.now_ms();
  // As after a restart: detected keys stay listed until fresh reports show them cold.
  for (const auto& k : list.keys) {
    if (k.source == KeySource::kDetected) t->hot[k.key] = HotState{now, -1, k.share};
  }
  auto pub = std::make_shared<PublishedList>(PublishedList{list, list_to_json(list)});
  t->published = pub;
  if (t->partitions > 0 && repartition) t->window.reset_partitions(t->partitions);
  if (previous->list.version > 0 && previous->list.version < list.version) {
    remember_list(t->recent_lists, previous);
  }
  remember_list(t->recent_lists, pub);
  board_.publish(pub);
  if (hooks_.on_publish) hooks_.on_publish(pub);
  t->m.list_version->Set(static_cast<double>(list.version));
  t->m.hot_keys->Set(static_cast<double>(list.keys.size()));
  return list.version;
}

std::vector<std::shared_ptr<const PublishedList>> Coordinator::published_lists() const {
  std::vector<std::shared_ptr<Topic>> all;
  {
    std::shared_lock lock(topics_mu_);
    for (auto& [name, t] : topics_) all.push_back(t);
  }
  std::vector<std::shared_ptr<const PublishedList>> out;
  for (const auto& t : all) {
    std::lock_guard lock(t->mu);
    if (!t->removed.load() && t->published) out.push_back(t->published);
  }
  return out;
}

namespace {
// The configured hash/separator win over what reports or the store brought (they are what
// planning uses); then the first report's; then the defaults.
TopicSummary summary_locked(const std::string& name, const TopicSettings& settings,
                            int32_t partitions, const std::optional<HashFamily>& hash,
                            const std::optional<std::string>& separator, const TopicSummary& stats,
                            size_t producers, const std::shared_ptr<const PublishedList>& pub,
                            size_t pins, size_t denies) {
  TopicSummary s = stats;
  s.topic = name;
  s.partitions = partitions;
  s.hash = settings.hash ? *settings.hash : hash.value_or(HashFamily::kMurmur2);
  s.hash_source = settings.hash ? "config" : hash ? "reports" : "default";
  s.separator =
      settings.separator ? *settings.separator : separator.value_or(std::string(kDefaultSeparator));
  s.separator_source = settings.separator ? "config" : separator ? "reports" : "default";
  s.producers = static_cast<uint32_t>(producers);
  s.version = pub ? pub->list.version : 0;
  s.hot_keys = pub ? static_cast<uint32_t>(pub->list.keys.size()) : 0;
  s.pins = static_cast<uint32_t>(pins);
  s.denies = static_cast<uint32_t>(denies);
  return s;
}
}  // namespace

std::vector<TopicSummary> Coordinator::topics() const {
  std::vector<std::shared_ptr<Topic>> all;
  {
    std::shared_lock lock(topics_mu_);
    for (auto& [name, t] : topics_) all.push_back(t);
  }
  std::vector<TopicSummary> out;
  for (const auto& t : all) {
    std::lock_guard lock(t->mu);
    if (t->removed.load()) continue;
    out.push_back(summary_locked(t->name, config_.settings_for(t->name), t->partitions, t->hash,
                                 t->separator, t->stats, t->producers.size(), t->published,
                                 t->pins.size(), t->denies.size()));
  }
  return out;
}

std::optional<TopicSummary> Coordinator::topic(const std::string& name) const {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  std::lock_guard lock(t->mu);
  if (t->removed.load()) return std::nullopt;
  return summary_locked(t->name, config_.settings_for(t->name), t->partitions, t->hash,
                        t->separator, t->stats, t->producers.size(), t->published, t->pins.size(),
                        t->denies.size());
}

std::optional<std::vector<double>> Coordinator::partition_load(const std::string& name) const {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  std::lock_guard lock(t->mu);
  if (t->removed.load()) return std::nullopt;
  return t->partition_load;
}

std::optional<std::vector<TopEntry>> Coordinator::top(const std::string& name, size_t n) {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  std::lock_guard lock(t->mu);
  if (t->removed.load()) return std::nullopt;
  TopicWindow::Snapshot snap = t->window.snapshot(clock_.now_ms());
  double rate = 0;
  for (const auto& [id, p] : t->producers) rate += p.rate;
  std::vector<TopEntry> out;
  std::set<std::string> listed;
  if (t->published) {
    for (const auto& k : t->published->list.keys) listed.insert(k.key);
  }
  for (const auto& item : snap.sketch.top(n)) {
    TopEntry e;
    e.key = item.key;
    e.count = item.count;
    e.error = item.error;
    e.share = snap.total > 0 ? static_cast<double>(item.guaranteed()) / snap.total : 0;
    e.rate = e.share * rate;
    e.partition = t->partitions > 0 ? partition_for(t->hash.value_or(HashFamily::kMurmur2),
                                                    item.key, t->partitions)
                                    : -1;
    e.hot = listed.contains(item.key);
    e.pinned = t->pins.contains(item.key);
    e.denied = t->denies.contains(item.key);
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<std::map<std::string, Pin>> Coordinator::pins(const std::string& name) const {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  std::lock_guard lock(t->mu);
  if (t->removed.load()) return std::nullopt;
  return t->pins;
}

std::optional<std::map<std::string, Deny>> Coordinator::denies(const std::string& name) const {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  std::lock_guard lock(t->mu);
  if (t->removed.load()) return std::nullopt;
  return t->denies;
}

void Coordinator::log_store_error(const std::string& topic, const StoreStatus& st) const {
  std::cerr << json{{"ts_ms", clock_.now_ms()},
                    {"level", "error"},
                    {"event", "store_error"},
                    {"topic", topic},
                    {"error", st.error}}
                   .dump(-1, ' ', false, json::error_handler_t::replace)
            << std::endl;
}

void Coordinator::log_list_change(const HotKeyList& before, const HotKeyList& after,
                                  const std::string& cause) const {
  std::set<std::string> old_keys, new_keys;
  for (const auto& k : before.keys) old_keys.insert(k.key);
  for (const auto& k : after.keys) new_keys.insert(k.key);
  json added = json::array(), removed = json::array();
  for (const auto& k : new_keys) {
    if (!old_keys.contains(k) && added.size() < 20) added.push_back(printable_key(k));
  }
  for (const auto& k : old_keys) {
    if (!new_keys.contains(k) && removed.size() < 20) removed.push_back(printable_key(k));
  }
  json line{{"ts_ms", clock_.now_ms()},
            {"level", "info"},
            {"event", "list_change"},
            {"topic", after.topic},
            {"version", after.version},
            {"cause", cause},
            {"partitions", after.partitions},
            {"keys", after.keys.size()},
            {"denied", after.denied.size()},
            {"added", added},
            {"removed", removed}};
  std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace hotkey::coordinator
