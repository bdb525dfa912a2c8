#include "lists_tailer.h"

#include <memory>
#include <string_view>

#include "hotkey/hotkey_list.h"
#include "kafka_io.h"

namespace hotkey::coordinator::kafka {

void ListsTailer::run() {
  PartitionList all(partitions_);
  for (int32_t p = 0; p < partitions_; ++p) {
    rd_kafka_topic_partition_list_add(all.p, config_.cluster.lists_topic.c_str(), p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(tailer_, all.p);
  while (!stop_.load()) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(tailer_, 200);
    if (!m) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->key &&
        std::string_view(static_cast<const char*>(m->key), m->key_len) == kOwnerHeartbeatKey) {
      if (m->payload) {
        if (auto beat = parse_owner_heartbeat(
                std::string_view(static_cast<const char*>(m->payload), m->len))) {
          on_heartbeat(m->partition, *beat);
        }
      }
    } else if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && !m->payload && m->key) {
      on_tombstone(std::string(static_cast<const char*>(m->key), m->key_len));
    } else if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->payload) {
      try {
        HotKeyList list = parse_list_json(
            std::string_view(static_cast<const char*>(m->payload), m->len), config_.limits);
        const std::string member = header(m, kMemberHeader).value_or("");
        bool newer = false;
        {
          std::lock_guard lock(mu_);
          Owner& o = owners_[list.topic];
          if (list.version > o.version) {
            o = Owner{list.version, member};
            newer = true;
          }
          if (!member.empty()) members_seen_[member] = wall_ms();
        }
        if (newer) {
          std::string text(static_cast<const char*>(m->payload), m->len);
          auto pub =
              std::make_shared<PublishedList>(PublishedList{std::move(list), std::move(text)});
          ownership_.follow_list(pub);
          shown(pub->list);
        }
      } catch (const std::exception&) {
        // Not a list any client would accept: ignored the same way.
      }
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_assign(tailer_, nullptr);
}

void ListsTailer::on_heartbeat(int32_t partition, const OwnerHeartbeat& beat) {
  std::lock_guard lock(mu_);
  auto it = heartbeats_.find(partition);
  // A former owner's heartbeat read after the new owner's (a zombie's, or the log read from the
  // beginning) does not make it the owner again.
  if (it != heartbeats_.end() && beat.epoch < it->second.beat.epoch) return;
  heartbeats_[partition] = Heard{beat, std::chrono::steady_clock::now()};
}

std::map<int32_t, ListsTailer::Beat> ListsTailer::heartbeats() const {
  const auto now = std::chrono::steady_clock::now();
  std::map<int32_t, Beat> out;
  std::lock_guard lock(mu_);
  for (const auto& [p, h] : heartbeats_) {
    out[p] = Beat{h.beat, std::chrono::duration_cast<std::chrono::milliseconds>(now - h.at)};
  }
  return out;
}

std::optional<std::chrono::milliseconds> ListsTailer::heartbeat_age(int32_t p) const {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  auto it = heartbeats_.find(p);
  if (it == heartbeats_.end()) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second.at);
}

void ListsTailer::on_tombstone(const std::string& topic) {
  uint64_t last = 0;
  {
    std::lock_guard lock(mu_);
    auto it = owners_.find(topic);
    if (it == owners_.end()) return;
    last = it->second.version;
    it->second.member.clear();
  }
  ownership_.unfollow_list(topic, last);
}

void ListsTailer::shown(const HotKeyList& list) {
  {
    std::lock_guard lock(mu_);
    const auto [begin, end] = waits_.equal_range(list.topic);
    if (begin == end) return;
    for (auto it = begin; it != end; ++it) {
      ChangeWait& w = *it->second;
      if (w.shown == 0 && list_shows_change(list, w.action, w.key)) w.shown = list.version;
    }
  }
  listed_.notify_all();
}

std::shared_ptr<ListsTailer::ChangeWait> ListsTailer::begin_wait(std::string topic,
                                                                 std::string action,
                                                                 std::string key) {
  auto w = std::make_shared<ChangeWait>(
      ChangeWait{std::move(topic), std::move(action), std::move(key), 0});
  std::lock_guard lock(mu_);
  waits_.emplace(w->topic, w);
  return w;
}

uint64_t ListsTailer::end_wait(const std::shared_ptr<ChangeWait>& w,
                               std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  listed_.wait_for(lock, timeout, [&] { return w->shown > 0 || stop_.load(); });
  const auto [begin, end] = waits_.equal_range(w->topic);
  for (auto it = begin; it != end; ++it) {
    if (it->second == w) {
      waits_.erase(it);
      break;
    }
  }
  return w->shown;
}

std::string ListsTailer::owner_elsewhere(const std::string& topic) const {
  if (writer_.owns(topic)) return "";
  std::lock_guard lock(mu_);
  auto it = owners_.find(topic);
  return it == owners_.end() || it->second.member == member_url_ ? "" : it->second.member;
}

std::map<std::string, int64_t> ListsTailer::members_seen() const {
  std::lock_guard lock(mu_);
  return members_seen_;
}

std::map<std::string, std::string> ListsTailer::owners() const {
  std::map<std::string, std::string> out;
  std::lock_guard lock(mu_);
  for (const auto& [topic, o] : owners_) {
    if (!o.member.empty()) out[topic] = o.member;
  }
  return out;
}

}  // namespace hotkey::coordinator::kafka
