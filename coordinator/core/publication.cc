// Planning one topic and publishing the result: the plan (TopicState::plan), the store commit
// (list, version, audit in one batch), the topic's commit and publication on the board.
#include "coordinator_topic.h"

#include <memory>
#include <optional>
#include <vector>

namespace hotkey::coordinator {

std::shared_ptr<const PublishedList> Coordinator::publish(TopicLock& t, const HotKeyList& list) {
  auto pub = std::make_shared<PublishedList>(PublishedList{list, list_to_json(list)});
  t->published_as(pub);
  board_.publish(pub);
  placement_->on_publish(pub);
  return pub;
}

void Coordinator::republish() {
  const std::vector<std::shared_ptr<Topic>> all = topics_->all();
  for (const auto& t : all) {
    TopicLock lock(*t);
    if (!lock->removed() && lock->published()) placement_->on_publish(lock->published());
  }
}

Coordinator::ReplanResult Coordinator::replan(TopicLock& t, Replan r) {
  StoreBatch& batch = r.batch;
  PlanRequest req;
  req.settings = &config_.settings_for(t->name());
  req.now_ms = clock_.now_ms();
  req.epoch_ms = static_cast<int64_t>(config_.epoch_ms);
  req.warmup_ms = static_cast<int64_t>(config_.warmup_ms);
  // Cluster mode: only the owner plans (an operator write on another member only records it).
  req.owner = owns(t->name());
  req.triggered = r.triggered;
  req.log_surge = config_.log_surge_plans;
  req.change = r.change;
  Planned planned = t->plan(req);
  // Producers ahead of every version issued here (a restored backup): publish above them.
  const bool behind_fleet = t->reported_version() > t->version();
  const bool material = planned.plan && (planned.plan->material || behind_fleet);
  uint64_t version = t->version();
  if (material) {
    version = t->next_version(placement_->version_floor(t->name()));
    HotKeyList& list = planned.plan->list;
    list.version = version;
    batch.put_list(list);
    batch.put_topic_meta(t->name(), TopicMeta{list.partitions, list.hash, list.separator});
  }
  // Audit entries name the version in force after the change, in the same batch (also the
  // system's own entries already in `batch`, e.g. expired pins).
  const uint64_t in_force = material ? version : t->published_version();
  if (r.audit) {
    r.audit->version = in_force;
    batch.append_audit(std::move(*r.audit));
  }
  batch.stamp_audit_versions(in_force);
  const bool follows_owner = in_force == 0 && !req.owner;
  if (!batch.empty()) {
    double latency = 0;
    StoreStatus st = store_.write(batch, &latency);
    if (planned.surge_log) (*planned.surge_log)["store_ms"] = latency * 1000.0;
    metrics_.store_write_latency(latency);
    metrics_.set_store_healthy(st.ok);
    if (!st.ok) return {st, 0};
    // Cluster mode, another member plans the topic: the owner's first list showing the change
    // gives the entry its version (follow_list), or the list here already does (the owner
    // applied and published it first), as the write's answer (StateLog::write).
    if (follows_owner) {
      t->keep_unstamped(batch.audits());
      std::shared_ptr<const PublishedList> owners =
          t->unstamped_audits().empty() ? nullptr : board_.get(t->name());
      if (owners) stamp_audits(t, owners->list);
    }
  }
  const HotKeyList before = t->commit(planned, req, material, version);
  if (material) {
    publish(t, planned.plan->list);
    log_list_change(before, planned.plan->list, r.cause);
  }
  if (planned.surge_log) {
    (*planned.surge_log)["version"] = t->published_version();
    (*planned.surge_log)["published"] = material;
    log_.write(*planned.surge_log);
  }
  return {StoreStatus::Ok(), t->published_version()};
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
