// Follows every lists partition from the beginning (docs/CLUSTER.md, "List reads"): every
// member then answers list reads for every topic, and the author of each topic's highest
// version says who owns it and which members are writing lists. Thread-safe: run() on one
// thread until the stop flag is set; the queries from any thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "hotkey/kafka_contract.h"

#include "coordinator.h"
#include "lists_writer.h"

namespace hotkey::coordinator::kafka {

class ListsTailer {
 public:
  ListsTailer(const CoordinatorConfig& config, Coordinator& coordinator, const ListsWriter& writer,
              std::string member_url, const std::atomic<bool>& stop)
      : config_(config),
        coordinator_(coordinator),
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

 private:
  // A tombstone on the lists topic: the topic was deleted. Nobody owns it any more (its last
  // version is kept: an older list read later is still not newer) and list reads answer as for
  // an unknown topic, unless this member already published a re-created topic's list above it.
  void on_tombstone(const std::string& topic);
  void on_heartbeat(int32_t partition, const OwnerHeartbeat& beat);

  struct Owner {
    uint64_t version = 0;
    std::string member;
  };
  const CoordinatorConfig& config_;
  Coordinator& coordinator_;
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
};

}  // namespace hotkey::coordinator::kafka
