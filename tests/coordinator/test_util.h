// Shared helpers for the coordinator tests: temp dirs, simulated producers that build real
// reports from real Space-Saving sketches, and an in-process coordinator (real RocksDB in a
// temp dir, optional real HTTP server on a loopback port). Not thread-safe unless stated.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clock.h"
#include "command_line.h"
#include "config.h"
#include "coordinator.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/report.h"
#include "hotkey/space_saving.h"
#include "http_server.h"
#include "metrics.h"
#include "stderr_log.h"
#include "store.h"
#include "support/reports.h"
#include "support/temp_dir.h"

namespace hotkey::coordinator::test {

using test_support::TempDir;

using test_support::add_tail;
using test_support::make_report;
using test_support::route;

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
    coord_ = std::make_unique<Coordinator>(config_, *store_, *metrics_, clock_, log_);
    if (http_) {
      server_ = std::make_unique<HttpServer>(
          HttpCore{*coord_, *coord_, *coord_, coord_->board(), coord_->config()}, *metrics_);
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
  StderrLog log_;
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

// The "error" of an HTTP answer's JSON body, or why there is none (for assertion messages).
// The operator token test_config() accepts, as request headers.
inline const httplib::Headers& operator_headers() {
  static const httplib::Headers h{{"Authorization", "Bearer alice-operator-token"}};
  return h;
}

// Posts a report that makes `topic` known (8 partitions), so that pins can publish lists.
inline void post_report(httplib::Client& c, const std::string& topic) {
  auto r = c.Post("/v1/reports", report_to_json(make_report("p", topic, 8, 1, {{"a", 5}})),
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
}

// Pins `key` on `topic` as the operator; the new version (0 when refused).
inline uint64_t post_pin(httplib::Client& c, const std::string& topic, const std::string& key) {
  const nlohmann::json body{{"key", key}, {"reason", "test"}};
  auto r =
      c.Post("/v1/topics/" + topic + "/pins", operator_headers(), body.dump(), "application/json");
  EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "<no response>");
  return r ? nlohmann::json::parse(r->body)["version"].get<uint64_t>() : 0;
}

inline std::string error_of(const httplib::Result& r) {
  if (!r) return "<no response: " + httplib::to_string(r.error()) + ">";
  try {
    return nlohmann::json::parse(r->body).at("error").get<std::string>();
  } catch (...) {
    return "<no JSON error in: " + r->body + ">";
  }
}

}  // namespace hotkey::coordinator::test
