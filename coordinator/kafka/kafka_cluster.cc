#include "kafka_cluster.h"

#include <atomic>
#include <set>
#include <thread>

#include "kafka_io.h"
#include "lists_tailer.h"
#include "lists_writer.h"
#include "membership.h"
#include "report_relay.h"
#include "state_log.h"
#include "topic_admin.h"

namespace hotkey::coordinator {

using namespace kafka;

struct KafkaCluster::Parts {
  Parts(const CoordinatorConfig& c, Coordinator& coord, std::string advertised_url)
      : config(c),
        coordinator(coord),
        url(std::move(advertised_url)),
        writer(c.cluster, this->url),
        relay(c, coord),
        state(c.cluster, coord, this->url, stop_flag),
        tailer(c, coord, writer, this->url, stop_flag),
        membership(c, coord, handles, writer, relay, stop_flag,
                   [this](const std::string& topic, uint64_t version) {
                     deleted(topic, version, 0);
                   }) {}

  // A delete applied here (the on_delete hook) or a deleted topic's list found on assignment:
  // its expiry may be requested afresh, its older reports are skipped, and its lists are
  // tombstoned by the owner.
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
    std::set<std::string> live{url};
    for (const auto& [m, at] : tailer.members_seen()) {
      // A member writes every owned list at least every republish interval.
      if (now - at <= 3 * static_cast<int64_t>(config.cluster.republish_interval_ms)) {
        live.insert(m);
      }
    }
    v.members.assign(live.begin(), live.end());
    v.owners = tailer.owners();
    // This member's own view of what it owns wins over the tailer's (which lags).
    for (const auto& s : coordinator.topics()) {
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
  Coordinator& coordinator;
  const std::string url;
  int32_t partitions = 0;
  std::atomic<bool> stop_flag{false};
  // Declared first among the parts, destroyed last: the others use the handles.
  Handles handles;
  ListsWriter writer;
  ReportRelay relay;
  StateLog state;
  ListsTailer tailer;
  Membership membership;
  std::thread loop_thread;
  std::thread tail_thread;
  std::thread state_thread;
};

KafkaCluster::KafkaCluster(const CoordinatorConfig& config, Coordinator& coordinator,
                           std::string advertised_url)
    : parts_(std::make_unique<Parts>(config, coordinator, std::move(advertised_url))) {}

KafkaCluster::~KafkaCluster() { stop(); }

bool KafkaCluster::start(std::string* error) {
  Parts& d = *parts_;
  if (!d.handles.create(d.config.cluster, &Membership::rebalance_cb, &d.membership, error)) {
    return false;
  }
  TopicLayout layout;
  if (!check_topics(d.handles.producer, d.config.cluster, &layout, error)) return false;
  d.partitions = layout.partitions;
  d.writer.attach(d.handles.producer, layout.partitions);
  d.relay.attach(d.handles.producer, layout.partitions);
  d.state.attach(d.handles.producer, d.handles.state, layout.state_partitions);
  d.tailer.attach(d.handles.tailer, layout.partitions);
  ClusterHooks hooks;
  hooks.owns = [&d](const std::string& t) { return d.writer.owns(t); };
  hooks.version_floor = [&d](const std::string& t) { return d.writer.version_floor(t); };
  hooks.on_publish = [&d](const std::shared_ptr<const PublishedList>& l) { d.writer.publish(l); };
  hooks.cluster_view = [&d] { return d.status(); };
  hooks.operator_write = [&d](const OperatorOp& op) { return d.state.write(op); };
  hooks.forward_report = [&d](const Report& r) -> std::optional<CallResult> {
    if (d.writer.owns(r.topic)) return std::nullopt;
    return d.relay.forward(r);
  };
  hooks.owner_elsewhere = [&d](const std::string& t) { return d.tailer.owner_elsewhere(t); };
  hooks.on_delete = [&d](const std::string& t, uint64_t v, int64_t at) { d.deleted(t, v, at); };
  hooks.request_delete = [&d](const OperatorOp& op) { d.state.request_delete(op); };
  d.coordinator.set_cluster_hooks(std::move(hooks));
  // Operator state first: a member that takes over a topic plans with every pin it can know.
  d.state.resume();
  if (!d.membership.subscribe(error)) return false;
  d.loop_thread = std::thread([&d] { d.membership.run(); });
  d.tail_thread = std::thread([&d] { d.tailer.run(); });
  d.state_thread = std::thread([&d] { d.state.run(); });
  log_line({{"level", "info"},
            {"event", "cluster_joining"},
            {"bootstrap", d.config.cluster.bootstrap},
            {"group", d.config.cluster.group},
            {"partitions", d.partitions},
            {"url", d.url}});
  return true;
}

void KafkaCluster::stop() {
  Parts& d = *parts_;
  d.stop_flag.store(true);
  if (d.loop_thread.joinable()) d.loop_thread.join();
  if (d.tail_thread.joinable()) d.tail_thread.join();
  if (d.state_thread.joinable()) d.state_thread.join();
}

}  // namespace hotkey::coordinator
