// Shared helpers for the coordinator tests: temp dirs, simulated producers that build real
// reports from real Space-Saving sketches, and an in-process coordinator (real RocksDB in a
// temp dir, optional real HTTP server on a loopback port). Not thread-safe unless stated.
#pragma once

#include <httplib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "clock.h"
#include "config.h"
#include "coordinator.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/report.h"
#include "hotkey/space_saving.h"
#include "http_server.h"
#include "metrics.h"
#include "store.h"

namespace hotkey::coordinator::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hotkey-coord-XXXXXX").string();
    char* p = mkdtemp(tmpl.data());
    if (!p) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Per-partition routing of `count` records of `key` as a client would: through its table
// when listed, else the family's partition of the key.
inline void route(const HotKeyList* list, HashFamily hash, int32_t partitions,
                  const std::string& key, uint64_t count, std::vector<uint64_t>& out) {
  if (list && list->partitions == partitions) {
    for (const auto& k : list->keys) {
      if (k.key != key || k.salts.empty()) continue;
      uint64_t sum = 0;
      for (const auto& s : k.salts) sum += s.weight;
      // Cumulative rounding: every salt within one record of its weight's share, as the
      // client's weighted round robin keeps it (flooring each part would leave up to one
      // record per salt for the last one).
      uint64_t cum = 0, given = 0;
      for (const auto& salt : k.salts) {
        cum += salt.weight;
        const uint64_t upto = (count * cum + sum / 2) / sum;
        out[static_cast<size_t>(salt.partition)] += upto - given;
        given = upto;
      }
      return;
    }
  }
  out[static_cast<size_t>(partition_for(hash, key, partitions))] += count;
}

// One producer's report over `counts` (key -> records in the window), sketched with a real
// SpaceSaving of `capacity`.
inline Report make_report(const std::string& producer, const std::string& topic, int32_t partitions,
                          uint64_t seq, const std::map<std::string, uint64_t>& counts,
                          uint32_t capacity = 256, const HotKeyList* list = nullptr,
                          HashFamily hash = HashFamily::kMurmur2) {
  Report r;
  r.producer = producer;
  r.topic = topic;
  r.partitions = partitions;
  r.hash = hash;
  r.window_ms = 1000;
  r.sample_rate = 1.0;
  r.seq = seq;
  r.list_version = list ? list->version : 0;
  r.partition_counts.assign(static_cast<size_t>(partitions), 0);
  SpaceSaving ss(capacity);
  for (const auto& [key, n] : counts) {
    if (n == 0) continue;
    ss.update(key, n);
    r.total += n;
    route(list, hash, partitions, key, n, r.partition_counts);
  }
  r.sketch_capacity = capacity;
  r.sketch_min = ss.min_count();
  r.sketch_total = ss.total();
  for (const auto& it : ss.items()) r.items.push_back({it.key, it.count, it.error});
  return r;
}

// Uniform tail keys "t<i>" for i in [0, distinct): `records` records spread by a seeded RNG.
inline void add_tail(std::map<std::string, uint64_t>& counts, uint64_t records, uint32_t distinct,
                     uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> pick(0, distinct - 1);
  for (uint64_t i = 0; i < records; ++i) counts["t" + std::to_string(pick(rng))] += 1;
}

inline CoordinatorConfig test_config() {
  CoordinatorConfig c;
  c.listen_host = "127.0.0.1";
  c.listen_port = 0;
  c.warmup_ms = 0;
  c.http_threads = 8;
  c.max_waiters = 256;
  c.operator_tokens.emplace("alice", "alice-operator-token");
  c.defaults.hold_ms = 5000;
  c.defaults.min_rate = 1;
  return c;
}

// An in-process coordinator on a real store; optionally serving HTTP on a loopback port.
class Harness {
 public:
  explicit Harness(CoordinatorConfig config = test_config(), bool http = false)
      : config_(std::move(config)), http_(http) {
    start();
  }
  ~Harness() { shutdown(); }

  void start() {
    std::string error;
    store_ = Store::open((dir_.path() / "data").string(), &error);
    if (!store_) throw std::runtime_error(error);
    metrics_ = std::make_unique<Metrics>();
    coord_ = std::make_unique<Coordinator>(config_, *store_, *metrics_, clock_);
    if (http_) {
      server_ = std::make_unique<HttpServer>(*coord_, *metrics_);
      if (!server_->bind("127.0.0.1", 0, &error)) throw std::runtime_error(error);
      server_->start();
    }
  }
  void shutdown() {
    if (server_) server_->stop();
    server_.reset();
    coord_.reset();
    metrics_.reset();
    store_.reset();
  }
  void restart() {
    shutdown();
    start();
  }

  Coordinator& coord() { return *coord_; }
  ManualClock& clock() { return clock_; }
  Metrics& metrics() { return *metrics_; }
  const std::filesystem::path& dir() const { return dir_.path(); }
  int port() const { return server_ ? server_->port() : 0; }
  CoordinatorConfig& config() { return config_; }

  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port());
    c->set_read_timeout(30, 0);
    c->set_connection_timeout(10, 0);
    return c;
  }

  // The published list of `topic`, or an empty one.
  HotKeyList list(const std::string& topic) {
    auto p = coord_->board().get(topic);
    return p ? p->list : HotKeyList{};
  }

 private:
  TempDir dir_;
  CoordinatorConfig config_;
  bool http_;
  ManualClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<Coordinator> coord_;
  std::unique_ptr<HttpServer> server_;
};

inline const HotKey* find(const HotKeyList& list, const std::string& key) {
  for (const auto& k : list.keys) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

}  // namespace hotkey::coordinator::test
