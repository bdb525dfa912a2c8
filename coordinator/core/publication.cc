// Planning one topic and publishing the result: plan input assembly, the store commit
// (list, version, audit in one batch) and publication on the board.
#include "coordinator_topic.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <set>
#include "hotkey/key_codec.h"

namespace hotkey::coordinator {

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

}  // namespace

std::shared_ptr<const PublishedList> Coordinator::publish(TopicLock& t, const HotKeyList& list) {
  auto pub = std::make_shared<PublishedList>(PublishedList{list, list_to_json(list)});
  t->published = pub;
  remember_list(t->recent_lists, pub);
  board_.publish(pub);
  placement_->on_publish(pub);
  t->m->list_published(list.version, list.keys);
  return pub;
}

void Coordinator::republish() {
  const std::vector<std::shared_ptr<Topic>> all = topics_->all();
  for (const auto& t : all) {
    TopicLock lock(*t);
    if (!t->removed.load() && t->published) placement_->on_publish(t->published);
  }
}

Coordinator::ReplanResult Coordinator::replan(TopicLock& t, Replan r) {
  StoreBatch& batch = r.batch;
  const std::map<std::string, Pin>* pins_override = r.pins;
  const std::map<std::string, Deny>* denies_override = r.denies;
  std::optional<AuditEntry>& audit = r.audit;
  const TopicSettings& s = config_.settings_for(t->name);
  const int64_t now = clock_.now_ms();
  const auto replan_start = std::chrono::steady_clock::now();
  t->last_plan_ms = now;
  t->replan_wanted = false;
  t->surge_reports = 0;
  const auto& pins = pins_override ? *pins_override : t->pins;
  const auto& denies = denies_override ? *denies_override : t->denies;
  const Policies& policies = r.policies ? *r.policies : t->policies;
  std::map<std::string, HotState> hot = t->hot;
  std::optional<PlanResult> plan;
  std::optional<json> surge_log;
  bool load_ready = false;
  // Cluster mode: only the owner plans (an operator write on another member only records it).
  if (t->partitions > 0 && owns(t->name)) {
    TopicWindow::Snapshot snap = t->window.snapshot(now);
    PlanInput in;
    in.settings = &s;
    in.topic = t->name;
    in.partitions = t->partitions;
    in.hash = s.hash ? *s.hash : t->hash.value_or(HashFamily::kMurmur2);
    in.separator =
        s.separator ? *s.separator : t->separator.value_or(std::string(kDefaultSeparator));
    in.items = snap.sketch.unordered_items();  // KeyEstimates ranks them
    in.total = snap.total;
    in.partition_load = std::move(snap.partition_load);
    in.cold_load = std::move(snap.cold_load);
    // Load is usable once it holds about one report round of the producers reporting now:
    // fewer reports give partition loads that are mostly sampling noise, which a plan would
    // chase with a new table each time.
    size_t active = 0;
    for (const auto& [id, p] : t->producers) {
      if (now - p.last_seen_ms > 2 * static_cast<int64_t>(config_.epoch_ms)) continue;
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
    in.topic_age_ms = t->first_report_ms >= 0 ? now - t->first_report_ms : 0;
    load_ready = snap.load_reports > 0 && snap.load_reports >= active;
    in.load_scale = snap.total > 0 && load_ready ? snap.load_total / snap.total : 0.0;
    in.recent_items = snap.recent.unordered_items();
    in.recent_total = snap.recent_total;
    if (load_ready) {
      in.salted = std::move(snap.salted);
      in.home = std::move(snap.home);
      in.home_by_epoch = std::move(snap.home_by_epoch);
      in.oldest_list_ms = snap.oldest_list_ms;
    }
    double rate = 0;
    for (const auto& [id, p] : t->producers) rate += p.rate;
    in.rate = rate;
    in.pins = &pins;
    in.denies = &denies;
    in.policies = PolicyIndex(policies);
    in.published = t->published ? &t->published->list : nullptr;
    in.now_ms = now;
    in.detect = t->first_report_ms >= 0 && now - t->first_report_ms >= config_.warmup_ms;
    in.detect_fast = t->first_report_ms >= 0 && now - t->first_report_ms >= fast_detect_after_ms();
    in.triggered = r.triggered;
    const auto plan_start = std::chrono::steady_clock::now();
    plan = plan_topic(in, hot);
    if (r.triggered && config_.log_surge_plans) {
      surge_log = surge_plan_line(t->name, t->hot, in, active, hot);
      (*surge_log)["snapshot_ms"] =
          std::chrono::duration<double, std::milli>(plan_start - replan_start).count();
      (*surge_log)["plan_ms"] =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - plan_start)
              .count();
    }
    t->partition_load = in.partition_load;
    t->stats.rate = rate;
    t->stats.window_reports = snap.reports;
    t->stats.window_total = snap.total;
    t->m->rate(rate);
    // Measured skew and idle partitions only from usable load: right after a new list (an
    // operator pin or deny, a detection) the loads restart empty, and reporting 1.00 / 100%
    // idle for that moment would be a false picture (and a false idle alert).
    if (load_ready) {
      t->stats.skew = plan->measured_skew;
      t->stats.idle_ratio = plan->idle_ratio;
      t->m->measured(plan->measured_skew, plan->idle_ratio);
    }
    t->stats.predicted_skew = plan->predicted_skew;
    t->m->predicted_skew(plan->predicted_skew);
  }
  // Producers ahead of every version issued here (a restored backup): publish above them.
  const bool behind_fleet = t->reported_version > t->version;
  const bool material = plan && (plan->material || behind_fleet);
  uint64_t version = t->version;
  if (material) {
    version = std::max({t->version, t->reported_version, placement_->version_floor(t->name)}) + 1;
    plan->list.version = version;
    batch.put_list(plan->list);
    batch.put_topic_meta(t->name,
                         TopicMeta{plan->list.partitions, plan->list.hash, plan->list.separator});
  }
  // Audit entries name the version in force after the change, in the same batch (also the
  // system's own entries already in `batch`, e.g. expired pins).
  const uint64_t in_force = material ? version : (t->published ? t->published->list.version : 0);
  if (audit) {
    audit->version = in_force;
    batch.append_audit(std::move(*audit));
  }
  batch.stamp_audit_versions(in_force);
  const bool follows_owner = in_force == 0 && !owns(t->name);
  if (!batch.empty()) {
    double latency = 0;
    StoreStatus st = store_.write(batch, &latency);
    if (surge_log) (*surge_log)["store_ms"] = latency * 1000.0;
    metrics_.store_write_latency(latency);
    metrics_.set_store_healthy(st.ok);
    if (!st.ok) return {st, 0};
    // Cluster mode, another member plans the topic: the owner's first list showing the change
    // gives the entry its version (follow_list), or the list here already does (the owner
    // applied and published it first), as the write's answer (StateLog::write).
    if (follows_owner) {
      for (const AuditEntry& a : batch.audits()) {
        if (a.action != "pin" && a.action != "unpin" && a.action != "deny" && a.action != "allow") {
          continue;
        }
        if (t->unstamped_audits.size() >= kMaxUnstampedAudits) {
          t->unstamped_audits.erase(t->unstamped_audits.begin());
        }
        t->unstamped_audits.push_back(a);
      }
      t->unstamped.store(t->unstamped_audits.size());
      std::shared_ptr<const PublishedList> owners =
          t->unstamped_audits.empty() ? nullptr : board_.get(t->name);
      if (owners) stamp_audits(t, owners->list);
    }
  }
  t->hot = std::move(hot);
  if (pins_override) t->pins = *pins_override;
  if (denies_override) t->denies = *denies_override;
  if (r.policies) t->set_policies(*r.policies);
  if (material) {
    t->version = version;
    HotKeyList before = t->published ? t->published->list : HotKeyList{};
    publish(t, plan->list);
    t->m->list_changed();
    log_list_change(before, plan->list, r.cause);
  }
  if (surge_log) {
    (*surge_log)["version"] = t->published ? t->published->list.version : 0;
    (*surge_log)["published"] = material;
    log_.write(*surge_log);
  }
  return {StoreStatus::Ok(), t->published ? t->published->list.version : 0};
}

void Coordinator::plan_failed(const std::string& topic, const std::string& what) const {
  metrics_.plan_failed();
  log_.write(json{{"ts_ms", clock_.now_ms()},
                  {"level", "error"},
                  {"event", "plan_failed"},
                  {"topic", topic},
                  {"error", what}});
}

}  // namespace hotkey::coordinator
