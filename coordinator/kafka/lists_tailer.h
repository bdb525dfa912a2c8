// Follows every lists partition from the beginning (docs/CLUSTER.md, "List reads"): every
// member then answers list reads for every topic (the lists go to the core's board through
// Ownership::follow_list), and the author of each topic's highest version says who owns it and
// which members are writing lists. An operator write through a member that does not own its
// topic waits here for the owner's list that shows it (begin_wait/end_wait). Thread-safe: run()
// on one thread until the stop flag is set; the queries from any thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "hotkey/kafka_contract.h"

#include "config.h"
#include "coordinator_api.h"
#include "lists_writer.h"

namespace hotkey::coordinator::kafka {

class ListsTailer {
 public:
  ListsTailer(const CoordinatorConfig& config, Ownership& ownership, const ListsWriter& writer,
              std::string member_url, const std::atomic<bool>& stop)
      : config_(config),
        ownership_(ownership),
        writer_(writer),
        member_url_(std::move(member_url)),
        stop_(stop) {}
  void attach(rd_kafka_t* tailer, int32_t partitions) {
    tailer_ = tailer;
    partitions_ = partitions;
  }

  void run();
  // The URL of the member that wrote `topic`'s highest version, unless that is this member or
  // this member owns the topic now (empty then, and for a topic never seen).
  std::string owner_elsewhere(const std::string& topic) const;
  // When each member was last seen writing lists (wall clock ms), and the author of each
  // topic's highest version (topics whose last record was a tombstone left out).
  std::map<std::string, int64_t> members_seen() const;
  std::map<std::string, std::string> owners() const;
  // Each lists partition's ownership heartbeat with the highest epoch, and how long ago (this
  // member's steady clock) it arrived.
  struct Beat {
    OwnerHeartbeat beat;
    std::chrono::milliseconds age{0};
  };
  std::map<int32_t, Beat> heartbeats() const;
  // How long ago partition p's newest owner heartbeat arrived; nullopt when none ever did.
  std::optional<std::chrono::milliseconds> heartbeat_age(int32_t p) const;

  // A wait for the owner's list of `topic` that shows operator write `action` (pin, unpin,
  // deny, allow) of `key` in force. Begun before the write is produced, so no list the owner
  // writes after applying it is missed.
  struct ChangeWait {
    std::string topic;
    std::string action;
    std::string key;
    uint64_t shown = 0;  // the first version read since that shows the change (0: none)
  };
  std::shared_ptr<ChangeWait> begin_wait(std::string topic, std::string action, std::string key);
  // Waits up to `timeout` for a list that shows the change (none when one came already) and ends
  // the wait: the first version read that shows it, 0 when none came.
  uint64_t end_wait(const std::shared_ptr<ChangeWait>& w, std::chrono::milliseconds timeout);

 private:
  // A tombstone on the lists topic: the topic was deleted. Nobody owns it any more (its last
  // version is kept: an older list read later is still not newer) and list reads answer as for
  // an unknown topic, unless this member already published a re-created topic's list above it.
  void on_tombstone(const std::string& topic);
  void on_heartbeat(int32_t partition, const OwnerHeartbeat& beat);
  // A list put on the board: the waits it shows the change of end.
  void shown(const HotKeyList& list);

  struct Owner {
    uint64_t version = 0;
    std::string member;
  };
  const CoordinatorConfig& config_;
  Ownership& ownership_;
  const ListsWriter& writer_;
  const std::string member_url_;
  const std::atomic<bool>& stop_;
  rd_kafka_t* tailer_ = nullptr;
  int32_t partitions_ = 0;

  mutable std::mutex mu_;
  std::map<std::string, Owner> owners_;
  std::map<std::string, int64_t> members_seen_;  // member URL -> when last seen writing
  struct Heard {
    OwnerHeartbeat beat;
    std::chrono::steady_clock::time_point at;
  };
  std::map<int32_t, Heard> heartbeats_;  // lists partition -> its newest owner's heartbeat
  std::multimap<std::string, std::shared_ptr<ChangeWait>> waits_;  // by topic
  std::condition_variable listed_;                                 // a wait's change was shown
};

}  // namespace hotkey::coordinator::kafka
