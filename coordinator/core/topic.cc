// One topic's operations (topic.h): ingest, plan and commit, pin expiry, the scheduler's
// holds, audit stamping, release, adopt, load, and its views.
#include "topic.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <string_view>

#include "hotkey/key_codec.h"
#include "hotkey/partitioner.h"

namespace hotkey::coordinator {

using json = nlohmann::json;

namespace {

// The `surge_plan` log line of a triggered plan (config log_surge_plans): the keys it listed
// (`hot` after the plan against `before`) and the latest reports' leading unlisted keys
// against the fast-entry bar.
json surge_plan_line(const std::string& topic, const std::map<std::string, HotState>& before,
                     const PlanInput& in, size_t active,
                     const std::map<std::string, HotState>& hot) {
  const double bar = kFastEntryFactor * in.settings->hot_fraction / in.partitions;
  std::map<std::string_view, double> recent;
  if (in.recent_total > 0) {
    for (const auto& item : in.recent_items) {
      recent.emplace(item.key, static_cast<double>(item.guaranteed()) / in.recent_total);
    }
  }
  std::set<std::string_view> in_window;
  for (const auto& item : in.items) in_window.insert(item.key);
  // The latest reports' keys that were not listed before this plan, largest first.
  struct Fresh {
    double share;
    const std::string* key;
    double records;
  };
  std::vector<Fresh> fresh;
  for (const auto& [key, c] : in.latest) {
    if (before.contains(key) || in.pins->contains(key) || in.denies->contains(key) ||
        in.policies.never_salt(key)) {
      continue;
    }
    fresh.push_back(
        {in.latest_total > 0 ? c.guaranteed / in.latest_total : 0.0, &key, c.guaranteed});
  }
  std::sort(fresh.begin(), fresh.end(), [](const Fresh& a, const Fresh& b) {
    return a.share != b.share ? a.share > b.share : *a.key < *b.key;
  });
  json candidates = json::array();
  json added = json::array();
  for (const auto& [key, h] : hot) {
    if (!before.contains(key)) added.push_back(printable_key(key));
  }
  for (const Fresh& f : fresh) {
    if (candidates.size() >= 8) break;
    auto rit = recent.find(*f.key);
    candidates.push_back(json{{"key", printable_key(*f.key)},
                              {"latest_share", f.share},
                              {"latest_records", f.records},
                              {"recent_share", rit == recent.end() ? 0.0 : rit->second},
                              {"in_window", in_window.contains(*f.key)},
                              {"listed", hot.contains(*f.key)}});
  }
  return json{{"ts_ms", in.now_ms},
              {"level", "info"},
              {"event", "surge_plan"},
              {"topic", topic},
              {"active_producers", active},
              {"latest_records", in.latest_total},
              {"recent_records", in.recent_total},
              {"bar_share", bar},
              {"added", added},
              {"candidates", candidates}};
}

void remember_list(std::map<uint64_t, std::shared_ptr<const PublishedList>>& lists,
                   const std::shared_ptr<const PublishedList>& list) {
  lists[list->list.version] = list;
  while (lists.size() > kRecentLists) lists.erase(lists.begin());
}

}  // namespace

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

bool list_shows_change(const HotKeyList& list, const std::string& action, const std::string& key) {
  const auto listed = std::find_if(list.keys.begin(), list.keys.end(),
                                   [&](const HotKey& k) { return k.key == key; });
  const bool pinned = listed != list.keys.end() && listed->source == KeySource::kPinned;
  const bool denied = std::find(list.denied.begin(), list.denied.end(), key) != list.denied.end();
  if (action == "pin") return pinned;
  if (action == "unpin") return !pinned;
  if (action == "deny") return denied && listed == list.keys.end();
  if (action == "allow") return !denied;
  return false;
}

TopicState::TopicState(std::string name, const CoordinatorConfig& c,
                       std::unique_ptr<TopicMetrics> metrics, uint64_t version, int64_t now_ms)
    : name_(std::move(name)),
      window_(c.epoch_ms, c.window_epochs, c.sketch_capacity),
      version_(version),
      last_active_ms_(now_ms),
      m_(std::move(metrics)) {}

// ---- Reads ----

bool TopicState::untouched() const {
  return !published_ && no_operator_state() && producers_.empty() && first_report_ms_ < 0 &&
         partitions_ <= 0;
}

// The configured hash/separator win over what reports or the store brought (they are what
// planning uses); then the first report's; then the defaults.
TopicSummary TopicState::summary(const TopicSettings& settings) const {
  TopicSummary s = stats_;
  s.topic = name_;
  s.partitions = partitions_;
  s.hash = settings.hash ? *settings.hash : hash_.value_or(HashFamily::kMurmur2);
  s.hash_source = settings.hash ? "config" : hash_ ? "reports" : "default";
  s.separator = settings.separator ? *settings.separator
                                   : separator_.value_or(std::string(kDefaultSeparator));
  s.separator_source = settings.separator ? "config" : separator_ ? "reports" : "default";
  s.producers = static_cast<uint32_t>(producers_.size());
  s.version = published_version();
  s.hot_keys = published_ ? static_cast<uint32_t>(published_->list.keys.size()) : 0;
  s.balance_keys = 0;
  if (published_) {
    for (const auto& k : published_->list.keys) {
      s.balance_keys += k.source == KeySource::kBalance ? 1 : 0;
    }
  }
  s.pins = static_cast<uint32_t>(pins_.size());
  s.denies = static_cast<uint32_t>(denies_.size());
  s.policies = static_cast<uint32_t>(policies_.size());
  return s;
}

std::vector<TopEntry> TopicState::top(size_t n, int64_t now_ms) {
  TopicWindow::Snapshot snap = window_.snapshot(now_ms);
  double rate = 0;
  for (const auto& [id, p] : producers_) rate += p.rate;
  std::vector<TopEntry> out;
  std::map<std::string, KeySource> listed;
  if (published_) {
    for (const auto& k : published_->list.keys) listed.emplace(k.key, k.source);
  }
  for (const auto& item : snap.sketch.top(n)) {
    TopEntry e;
    e.key = item.key;
    e.count = item.count;
    e.error = item.error;
    e.share = snap.total > 0 ? static_cast<double>(item.guaranteed()) / snap.total : 0;
    e.rate = e.share * rate;
    e.partition = partitions_ > 0
                      ? partition_for(hash_.value_or(HashFamily::kMurmur2), item.key, partitions_)
                      : -1;
    if (auto it = listed.find(item.key); it != listed.end()) {
      e.hot = true;
      e.source = std::string(to_string(it->second));
    }
    e.pinned = pins_.contains(item.key);
    e.denied = denies_.contains(item.key);
    e.never_salt = !e.pinned && !e.denied && policy_index_.never_salt(item.key);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<Rejection> TopicState::rejections() const {
  std::vector<Rejection> out;
  out.reserve(rejections_.size());
  for (const auto& [key, r] : rejections_) out.push_back(r);
  return out;
}

// ---- Reports ----

std::optional<std::string> TopicState::hash_conflict(const Report& r,
                                                     const TopicSettings& s) const {
  if (s.hash || !hash_ || *hash_ == r.hash) return std::nullopt;
  return "topic '" + r.topic + "' is partitioned with " + std::string(to_string(*hash_)) +
         ", the report says " + std::string(to_string(r.hash)) +
         "; producers of one topic must share one hash family";
}

void TopicState::note_rejection(const std::string& producer, const std::string& reason,
                                const std::string& error, int64_t now_ms) {
  auto key = std::make_pair(producer, reason);
  auto it = rejections_.find(key);
  if (it == rejections_.end()) {
    if (rejections_.size() >= kMaxRejectionsPerTopic) {
      rejections_.erase(std::min_element(
          rejections_.begin(), rejections_.end(),
          [](const auto& a, const auto& b) { return a.second.last_at_ms < b.second.last_at_ms; }));
    }
    it = rejections_.emplace(key, Rejection{producer, reason, 0, 0, ""}).first;
  }
  it->second.count++;
  it->second.last_at_ms = now_ms;
  it->second.error = error;
}

Ingested TopicState::ingest(const Report& r, SpaceSaving sketch, const TopicSettings& s,
                            int64_t now) {
  Ingested out;
  auto [pit, inserted] = producers_.try_emplace(r.producer);
  ProducerInfo& p = pit->second;
  // seq 1 after a higher one is a restarted producer; seq 1 again right after seq 1 is a
  // retry of the first report and must not be counted twice.
  if (!inserted && (r.seq > 1 || p.last_seq == 1) && r.seq <= p.last_seq &&
      p.last_seq - r.seq < kDuplicateWindow) {
    out.duplicate = true;
    return out;
  }
  // A report routed with one list all along (the producer's previous report already carried
  // its version) is accounted against that list's tables, whichever version is published now.
  // The first one after a switch covers records sent under the old list too.
  const HotKeyList* routed_with = nullptr;
  if (inserted || p.last_list_version == r.list_version) {
    if (r.list_version == 0) {
      routed_with = &kNoList;
    } else if (auto it = recent_lists_.find(r.list_version); it != recent_lists_.end()) {
      routed_with = &it->second->list;
    }
  }
  p.last_list_version = r.list_version;
  if (r.list_version > reported_version_ && r.list_version < kMaxAdoptedVersion) {
    reported_version_ = r.list_version;
    // The fleet routes with a version this coordinator never issued (restored from a backup):
    // publish above it without waiting for the next tick.
    if (r.list_version > version_ && !replan_wanted_) {
      replan_wanted_ = true;
      out.wake = out.enqueue = true;
    }
  }
  p.last_seq = r.seq;
  p.last_seen_ms = now;
  last_active_ms_ = now;
  keep_latest(p, r, s, partitions_ > 0 ? partitions_ : r.partitions);
  p.rate = r.window_ms > 0 ? static_cast<double>(r.total) * 1000.0 / r.window_ms : 0.0;
  p.partitions = r.partitions;
  if (!hash_) hash_ = s.hash ? *s.hash : r.hash;
  if (!separator_) separator_ = s.separator ? *s.separator : r.separator;
  if (first_report_ms_ < 0) first_report_ms_ = now;
  const size_t entries = r.items.size();
  window_.add(r, std::move(sketch), now, partitions_, routed_with, p.last_keys);
  m_->report_accepted(static_cast<double>(entries));
  if (shows_new_hot_key(r, s, now)) {
    ++surge_reports_;
    if (!replan_wanted_) {
      replan_wanted_ = true;
      out.wake = out.enqueue = true;
    } else if (surge_evidence()) {
      out.wake = true;  // held back by the clock: the evidence may release it (plan_triggered)
    }
  }
  return out;
}

bool TopicState::shows_new_hot_key(const Report& r, const TopicSettings& s, int64_t now) const {
  if (partitions_ <= 0 || r.sketch_total == 0 || first_report_ms_ < 0) return false;
  if (now - first_report_ms_ < kFastDetectAfterMs) return false;
  // The report's own share is only a hint (one producer's view); the plan decides on the
  // fleet-wide recent view.
  const double bar =
      kFastEntryFactor * s.hot_fraction / partitions_ * static_cast<double>(r.sketch_total);
  for (const auto& item : r.items) {
    if (item.count <= item.error) continue;
    const double g = static_cast<double>(item.count - item.error);
    if (g < bar || scaled_records(r, g) < kFastEntryMinRecords) continue;
    if (hot_.contains(item.key) || pins_.contains(item.key) || denies_.contains(item.key)) {
      continue;
    }
    // Policies are asked only here, of a key past the topic's bar: a never_salt key, or one
    // under its prefix's higher threshold, would trigger plans that list nothing.
    if (const Policy* p = policy_index_.match(item.key)) {
      if (p->never_salt) continue;
      const double own_bar =
          kFastEntryFactor * p->hot_fraction / partitions_ * static_cast<double>(r.sketch_total);
      if (p->hot_fraction > 0 && g < own_bar) continue;
    }
    return true;
  }
  return false;
}

// ---- Planning ----

Planned TopicState::plan(const PlanRequest& req) {
  const TopicSettings& s = *req.settings;
  const int64_t now = req.now_ms;
  const auto replan_start = std::chrono::steady_clock::now();
  last_plan_ms_ = now;
  replan_wanted_ = false;
  surge_reports_ = 0;
  Planned out;
  out.hot = hot_;
  if (partitions_ <= 0 || !req.owner) return out;
  TopicWindow::Snapshot snap = window_.snapshot(now);
  PlanInput in;
  in.settings = &s;
  in.topic = name_;
  in.partitions = partitions_;
  in.hash = s.hash ? *s.hash : hash_.value_or(HashFamily::kMurmur2);
  in.separator = s.separator ? *s.separator : separator_.value_or(std::string(kDefaultSeparator));
  in.items = snap.sketch.unordered_items();  // KeyEstimates ranks them
  in.total = snap.total;
  in.partition_load = std::move(snap.partition_load);
  in.cold_load = std::move(snap.cold_load);
  // Load is usable once it holds about one report round of the producers reporting now: fewer
  // reports give partition loads that are mostly sampling noise, which a plan would chase with
  // a new table each time.
  size_t active = 0;
  for (const auto& [id, p] : producers_) {
    if (now - p.last_seen_ms > 2 * req.epoch_ms) continue;
    ++active;
    in.latest_total += p.last_total;
    for (const auto& [key, c] : p.last_keys) {
      auto it = in.latest.try_emplace(key, LatestCount{0, 0, 0}).first;
      it->second.guaranteed += c.guaranteed;
      it->second.traffic += c.traffic;
      it->second.producers += 1;
    }
  }
  in.active_producers = active;
  in.topic_age_ms = first_report_ms_ >= 0 ? now - first_report_ms_ : 0;
  out.load_ready = snap.load_reports > 0 && snap.load_reports >= active;
  in.load_scale = snap.total > 0 && out.load_ready ? snap.load_total / snap.total : 0.0;
  in.recent_items = snap.recent.unordered_items();
  in.recent_total = snap.recent_total;
  if (out.load_ready) {
    in.salted = std::move(snap.salted);
    in.home = std::move(snap.home);
    in.home_by_epoch = std::move(snap.home_by_epoch);
    in.oldest_list_ms = snap.oldest_list_ms;
  }
  double rate = 0;
  for (const auto& [id, p] : producers_) rate += p.rate;
  in.rate = rate;
  in.pins = req.change.pins ? req.change.pins : &pins_;
  in.denies = req.change.denies ? req.change.denies : &denies_;
  in.policies = PolicyIndex(req.change.policies ? *req.change.policies : policies_);
  in.published = published_ ? &published_->list : nullptr;
  in.now_ms = now;
  in.detect = first_report_ms_ >= 0 && now - first_report_ms_ >= req.warmup_ms;
  in.detect_fast = first_report_ms_ >= 0 && now - first_report_ms_ >= kFastDetectAfterMs;
  in.triggered = req.triggered;
  const auto plan_start = std::chrono::steady_clock::now();
  out.plan = plan_topic(in, out.hot);
  if (req.triggered && req.log_surge) {
    out.surge_log = surge_plan_line(name_, hot_, in, active, out.hot);
    (*out.surge_log)["snapshot_ms"] =
        std::chrono::duration<double, std::milli>(plan_start - replan_start).count();
    (*out.surge_log)["plan_ms"] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - plan_start)
            .count();
  }
  partition_load_ = in.partition_load;
  stats_.rate = rate;
  stats_.window_reports = snap.reports;
  stats_.window_total = snap.total;
  m_->rate(rate);
  // Measured skew and idle partitions only from usable load: right after a new list (an
  // operator pin or deny, a detection) the loads restart empty, and reporting 1.00 / 100% idle
  // for that moment would be a false picture (and a false idle alert).
  if (out.load_ready) {
    stats_.skew = out.plan->measured_skew;
    stats_.idle_ratio = out.plan->idle_ratio;
    m_->measured(out.plan->measured_skew, out.plan->idle_ratio);
  }
  stats_.predicted_skew = out.plan->predicted_skew;
  m_->predicted_skew(out.plan->predicted_skew);
  return out;
}

HotKeyList TopicState::commit(Planned& planned, const PlanRequest& req, bool material,
                              uint64_t version) {
  hot_ = std::move(planned.hot);
  if (req.change.pins) pins_ = *req.change.pins;
  if (req.change.denies) denies_ = *req.change.denies;
  if (req.change.policies) set_policies(*req.change.policies);
  if (!material) return {};
  version_ = version;
  m_->list_changed();
  return published_ ? published_->list : HotKeyList{};
}

void TopicState::published_as(const std::shared_ptr<const PublishedList>& pub) {
  published_ = pub;
  remember_list(recent_lists_, pub);
  m_->list_published(pub->list.version, pub->list.keys);
}

int32_t TopicState::prune_producers(int64_t now_ms, int64_t timeout_ms) {
  int32_t live_partitions = 0;
  uint64_t oldest = std::numeric_limits<uint64_t>::max(), newest = 0;
  for (auto it = producers_.begin(); it != producers_.end();) {
    if (now_ms - it->second.last_seen_ms > timeout_ms) {
      it = producers_.erase(it);
    } else {
      live_partitions = std::max(live_partitions, it->second.partitions);
      // A report routed with a producer's local table names the list it was built on.
      const uint64_t v = it->second.last_list_version & ~kLocalTableVersionBit;
      oldest = std::min(oldest, v);
      newest = std::max(newest, v);
      ++it;
    }
  }
  m_->producers(producers_.size(), producers_.empty() ? 0 : oldest, newest);
  return live_partitions;
}

std::optional<std::map<std::string, Pin>> TopicState::expire_pins(int64_t now_ms,
                                                                  StoreBatch& batch) const {
  std::map<std::string, Pin> pins = pins_;
  bool expired = false;
  for (auto it = pins.begin(); it != pins.end();) {
    if (it->second.expires_at_ms > 0 && it->second.expires_at_ms <= now_ms) {
      batch.delete_pin(name_, it->first);
      AuditEntry a;
      a.at_ms = now_ms;
      a.who = "system";
      a.action = "pin_expired";
      a.topic = name_;
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
  if (!expired) return std::nullopt;
  return pins;
}

int64_t TopicState::triggered_wait(int64_t now) const {
  int64_t wait = now >= triggered_hold_ms_ ? 0 : triggered_hold_ms_ - now;
  if (wait > 0 && surge_evidence())
    wait = now >= triggered_floor_ms_ ? 0 : triggered_floor_ms_ - now;
  return wait;
}

void TopicState::hold_triggered(int64_t now, int64_t hold_ms, int64_t floor_ms) {
  triggered_hold_ms_ = now + hold_ms;
  triggered_floor_ms_ = now + floor_ms;
}

// ---- Operators and cluster mode ----

void TopicState::keep_unstamped(const std::vector<AuditEntry>& audits) {
  for (const AuditEntry& a : audits) {
    if (a.action != "pin" && a.action != "unpin" && a.action != "deny" && a.action != "allow") {
      continue;
    }
    if (unstamped_audits_.size() >= kMaxUnstampedAudits) {
      unstamped_audits_.erase(unstamped_audits_.begin());
    }
    unstamped_audits_.push_back(a);
  }
  unstamped_.store(unstamped_audits_.size());
}

StoreBatch TopicState::stamp_audits(const HotKeyList& list) {
  StoreBatch batch;
  std::erase_if(unstamped_audits_, [&](AuditEntry& a) {
    if (!list_shows_change(list, a.action, a.key)) return false;
    a.version = list.version;
    batch.restamp_audit(a);
    return true;
  });
  unstamped_.store(unstamped_audits_.size());
  return batch;
}

void TopicState::drop_records(StoreBatch& batch) const {
  for (const auto& [key, pin] : pins_) batch.delete_pin(name_, key);
  for (const auto& [key, deny] : denies_) batch.delete_deny(name_, key);
  for (const auto& [prefix, policy] : policies_) batch.delete_policy(name_, prefix);
  batch.drop_topic(name_, version_);
}

void TopicState::release(const CoordinatorConfig& c) {
  window_ = TopicWindow(c.epoch_ms, c.window_epochs, c.sketch_capacity);
  producers_.clear();
  hot_.clear();
  published_ = nullptr;
  recent_lists_.clear();
  first_report_ms_ = -1;
  stats_ = TopicSummary{};
  partition_load_.clear();
  replan_wanted_ = false;
}

void TopicState::hold_listed(const HotKeyList& list, int64_t now_ms) {
  for (const auto& k : list.keys) {
    if (k.source == KeySource::kPinned) continue;
    hot_[k.key] = HotState{now_ms, -1, k.share, k.source == KeySource::kBalance};
  }
}

void TopicState::adopt(const HotKeyList& list, const std::shared_ptr<const PublishedList>& previous,
                       bool repartition, int64_t now_ms) {
  version_ = list.version;
  hash_ = list.hash;
  separator_ = list.separator;
  // As after a restart: detected keys stay listed until fresh reports show them cold.
  hold_listed(list, now_ms);
  if (partitions_ > 0 && repartition) window_.reset_partitions(partitions_);
  if (previous->list.version > 0 && previous->list.version < list.version) {
    remember_list(recent_lists_, previous);
  }
}

std::optional<HotKeyList> TopicState::load(StoredTopic&& st, int64_t now_ms) {
  pins_ = std::move(st.pins);
  denies_ = std::move(st.denies);
  set_policies(std::move(st.policies));
  version_ = st.version;
  last_active_ms_ = now_ms;
  if (st.meta && !st.list) {
    hash_ = st.meta->hash;
    separator_ = st.meta->separator;
  }
  if (!st.list) return std::nullopt;
  hash_ = st.list->hash;
  separator_ = st.list->separator;
  // Detected keys stay listed until fresh reports show them cold for the hold time.
  hold_listed(*st.list, now_ms);
  if (partitions_ > 0) window_.reset_partitions(partitions_);
  return std::move(st.list);
}

}  // namespace hotkey::coordinator
