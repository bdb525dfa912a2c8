#include "kafka_cluster.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <set>
#include <thread>

#include "kafka_io.h"
#include "lists_tailer.h"
#include "lists_writer.h"
#include "membership.h"
#include "report_relay.h"
#include "state_log.h"
#include "takeover.h"
#include "topic_admin.h"

namespace hotkey::coordinator {

using namespace kafka;

// The cluster's placement: ownership from the lists writer, operator writes through the state
// log, reports through the relay, owners of other topics from the tailer.
struct KafkaCluster::Parts final : Placement {
  Parts(const CoordinatorConfig& c, ReportSink& reports, const Reads& core_reads,
        Ownership& core_ownership, StateStore& store, LogSink& log_sink, std::string advertised_url)
      : config(c),
        reads(core_reads),
        ownership(core_ownership),
        log(log_sink),
        url(std::move(advertised_url)),
        writer(c.cluster, log, this->url),
        relay(c, reports, ownership),
        tailer(c, ownership, writer, this->url, stop_flag),
        state(c.cluster, ownership, reads, store, writer, tailer, log, this->url, stop_flag),
        takeover(
            c, ownership, log, handles, writer, stop_flag,
            [this](const std::string& topic, uint64_t version) { deleted(topic, version, 0); },
            [this] { return membership.member_id(); }, [this] { return membership.generation(); }),
        membership(c, ownership, log, handles, writer, relay, takeover, stop_flag) {}

  bool owns(const std::string& topic) const override { return writer.owns(topic); }
  uint64_t version_floor(const std::string& topic) const override {
    return writer.version_floor(topic);
  }
  std::string owner_url(const std::string& topic) const override {
    return tailer.owner_elsewhere(topic);
  }
  CallResult forward_report(const Report& report, std::string_view wire) override {
    return relay.forward(report, wire);
  }
  std::optional<CallResult> forward_operator(const OperatorOp& op) override {
    return state.write(op);
  }
  void on_publish(const std::shared_ptr<const PublishedList>& list) override {
    writer.publish(list);
  }
  void on_delete(const std::string& topic, uint64_t version, int64_t at_ms) override {
    deleted(topic, version, at_ms);
  }
  bool request_delete(const OperatorOp& op) override {
    state.request_delete(op);
    return true;
  }
  std::optional<api::ClusterView> cluster_view() const override { return status(); }
  bool owner_gone(const std::string& topic) const override {
    return !writer.owns(topic) && partition_gone(writer.partition_of(topic));
  }

  // Partition p carried ownership heartbeats and none came for 3 intervals (a partition that
  // never carried one, from coordinators before them, is never judged gone).
  bool partition_gone(int32_t p) const {
    const auto age = tailer.heartbeat_age(p);
    return age && *age > std::chrono::milliseconds(3 * int64_t{config.cluster.owner_heartbeat_ms});
  }

  // Every heartbeat interval: subscriptions holding a topic of a partition whose owner went
  // away (or came back) are answered, so they learn it at once (GET /v1/hotkeys/subscribe's
  // "stale").
  void nudge_changed_owners() {
    std::set<int32_t> gone;
    const auto owned = writer.owned();
    for (int32_t p = 0; p < partitions; ++p) {
      if (!owned.contains(p) && partition_gone(p)) gone.insert(p);
    }
    if (gone == gone_partitions) return;
    std::set<int32_t> changed;
    std::set_symmetric_difference(gone.begin(), gone.end(), gone_partitions.begin(),
                                  gone_partitions.end(), std::inserter(changed, changed.end()));
    gone_partitions = std::move(gone);
    ownership.nudge_readers([&](std::string_view topic) {
      return changed.contains(writer.partition_of(std::string(topic)));
    });
  }

  // A delete applied here or a deleted topic's list found on assignment: its expiry may be
  // requested afresh, its older reports are skipped, and its lists are tombstoned by the owner.
  void deleted(const std::string& topic, uint64_t version, int64_t at_ms) {
    state.forget_expiry(topic);
    relay.note_deleted(topic, at_ms);
    writer.tombstone(topic, version);
  }

  api::ClusterView status() const {
    api::ClusterView v;
    v.mode = "cluster";
    for (const auto& [p, epoch] : writer.owned()) v.owned_partitions[std::to_string(p)] = epoch;
    v.member_id = membership.member_id();
    const int64_t now = wall_ms();
    std::set<std::string> writing;
    for (const auto& [m, at] : tailer.members_seen()) {
      // A member writes every owned list at least every republish interval.
      if (now - at <= 3 * static_cast<int64_t>(config.cluster.republish_interval_ms)) {
        writing.insert(m);
      }
    }
    // The group's members from what the cluster itself writes: each partition's owner by its
    // heartbeat (silent for 3 intervals: gone), this member by its own assignment. No admin
    // request to Kafka's group coordinator (see membership.h).
    std::map<std::string, api::GroupMember> group;
    const auto silent = std::chrono::milliseconds(3 * int64_t{config.cluster.owner_heartbeat_ms});
    for (const auto& [p, heard] : tailer.heartbeats()) {
      if (heard.age > silent || heard.beat.owner == url) continue;
      api::GroupMember& m = group[heard.beat.owner];
      m.url = heard.beat.owner;
      m.member_id = heard.beat.member_id;
      m.partitions.push_back(p);
      m.heartbeat_age_ms = std::max<int64_t>(m.heartbeat_age_ms, heard.age.count());
    }
    api::GroupMember& self = group[url];
    self.url = url;
    self.member_id = v.member_id;
    self.partitions.clear();
    for (const auto& [p, epoch] : writer.owned()) self.partitions.push_back(p);
    self.heartbeat_age_ms = 0;
    std::set<std::string> live = writing;
    for (auto& [member, m] : group) {
      m.writes_lists = writing.contains(member);
      live.insert(member);
      v.group_members.push_back(std::move(m));
    }
    v.members.assign(live.begin(), live.end());
    v.owners = tailer.owners();
    // This member's own view of what it owns wins over the tailer's (which lags).
    for (const auto& s : reads.topics()) {
      if (writer.owns(s.topic)) v.owners[s.topic] = url;
    }
    v.url = url;
    v.group = config.cluster.group;
    v.generation = membership.generation();
    v.partitions = partitions;
    v.reports_ingested = relay.ingested();
    v.reports_forwarded = relay.forwarded();
    v.reports_skipped = relay.skipped();
    v.lists_produced = writer.produced();
    v.lists_dropped = writer.dropped();
    return v;
  }

  const CoordinatorConfig& config;
  const Reads& reads;
  Ownership& ownership;
  LogSink& log;
  const std::string url;
  int32_t partitions = 0;
  std::set<int32_t> gone_partitions;  // as last nudged (the heartbeat thread's)
  std::atomic<bool> stop_flag{false};
  // Declared first among the parts, destroyed last: the others use the handles.
  Handles handles;
  ListsWriter writer;
  ReportRelay relay;
  ListsTailer tailer;
  StateLog state;
  Takeover takeover;
  Membership membership;
  std::thread loop_thread;
  std::thread takeover_thread;
  std::thread heartbeat_thread;
  std::mutex stop_mu;
  std::condition_variable stopping;
  std::thread tail_thread;
  std::thread state_thread;
};

KafkaCluster::KafkaCluster(const CoordinatorConfig& config, ReportSink& reports, const Reads& reads,
                           Ownership& ownership, StateStore& store, LogSink& log,
                           std::string advertised_url)
    : parts_(std::make_unique<Parts>(config, reports, reads, ownership, store, log,
                                     std::move(advertised_url))) {}

Placement& KafkaCluster::placement() { return *parts_; }

KafkaCluster::~KafkaCluster() { stop(); }

bool KafkaCluster::start(std::string* error) {
  Parts& d = *parts_;
  if (!d.handles.create(d.config.cluster, d.log, &Membership::rebalance_cb, &d.membership, error,
                        d.url)) {
    return false;
  }
  TopicLayout layout;
  if (!check_topics(d.handles.producer, d.config.cluster, d.log, &layout, error)) return false;
  d.partitions = layout.partitions;
  d.writer.attach(d.handles.producer, layout.partitions,
                  d.config.cluster.lists_fencing ? &d.handles : nullptr);
  d.relay.attach(d.handles.producer, layout.partitions);
  d.state.attach(d.handles.producer, d.handles.state, layout.state_partitions);
  d.tailer.attach(d.handles.tailer, layout.partitions);
  // Operator state first: a member that takes over a topic plans with every pin it can know.
  d.state.resume();
  if (!d.state.seed(error)) return false;
  if (!d.membership.subscribe(error)) return false;
  d.handles.release_log();
  d.loop_thread = std::thread([&d] { d.membership.run(); });
  d.takeover_thread = std::thread([&d] { d.takeover.run(); });
  // The ownership heartbeats on a thread of their own: nothing they wait for (the group's poll
  // loop blocks in an assignment's offset lookups, a takeover in its reads) delays them.
  d.heartbeat_thread = std::thread([&d] {
    std::unique_lock lock(d.stop_mu);
    while (!d.stop_flag.load()) {
      d.writer.heartbeat(d.membership.member_id());
      d.nudge_changed_owners();
      d.stopping.wait_for(lock, std::chrono::milliseconds(d.config.cluster.owner_heartbeat_ms),
                          [&d] { return d.stop_flag.load(); });
    }
  });
  d.tail_thread = std::thread([&d] { d.tailer.run(); });
  d.state_thread = std::thread([&d] { d.state.run(); });
  log_now(d.log, {{"level", "info"},
                  {"event", "cluster_joining"},
                  {"bootstrap", d.config.cluster.bootstrap},
                  {"group", d.config.cluster.group},
                  {"partitions", d.partitions},
                  {"url", d.url}});
  return true;
}

void KafkaCluster::stop() {
  Parts& d = *parts_;
  {
    std::lock_guard lock(d.stop_mu);
    d.stop_flag.store(true);
  }
  d.stopping.notify_all();
  if (d.heartbeat_thread.joinable()) d.heartbeat_thread.join();
  if (d.takeover_thread.joinable()) d.takeover_thread.join();
  if (d.loop_thread.joinable()) d.loop_thread.join();
  if (d.tail_thread.joinable()) d.tail_thread.join();
  if (d.state_thread.joinable()) d.state_thread.join();
  // A group consumer that joined but was never assigned cannot be destroyed with librdkafka
  // 2.0.2 (Membership::consumer_destroyable): left to the process's exit.
  if (!d.membership.consumer_destroyable() && d.handles.consumer) {
    log_now(d.log, {{"level", "warn"},
                    {"event", "group_consumer_left_undestroyed"},
                    {"reason", "stopped before its first assignment (librdkafka issue 4312)"}});
    d.handles.consumer = nullptr;
  }
}

}  // namespace hotkey::coordinator
