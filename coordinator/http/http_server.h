// The HTTP(S)/JSON adapter over the Coordinator (docs/API.md): reports in, lists out (with
// long-poll), operator calls, metrics, health and the embedded dashboard. One instance per
// listening socket; start/stop from one thread, requests are served from its worker pool.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "coordinator.h"
#include "metrics.h"
#include "rate_limiter.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace hotkey::coordinator {

class HttpServer {
 public:
  // Serves HTTPS when the config names a certificate; throws std::invalid_argument with a
  // message naming the file when the TLS files cannot be used.
  HttpServer(Coordinator& coordinator, Metrics& metrics);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (port 0: any free port). False and *error when it cannot.
  bool bind(const std::string& host, int port, std::string* error);
  int port() const { return port_; }
  // Serves until stop(); blocks.
  bool run();
  // Serves on a background thread; returns once the server accepts connections.
  void start();
  // Releases long-poll waiters, stops accepting and joins the workers.
  void stop();

 private:
  void install_routes();
  // Cluster mode: when another member owns `topic`, asks it for `target` (path and query) and
  // answers with its answer (header X-Hotkey-Owner: its URL; 502 when it does not answer) and
  // returns true; false when this member owns the topic (or in single-node mode).
  bool proxy_to_owner(const httplib::Request& req, httplib::Response& res, const std::string& topic,
                      const std::string& target);

  Coordinator& coord_;
  Metrics& metrics_;
  RateLimiter report_limiter_;
  RateLimiter operator_limiter_;
  std::unique_ptr<httplib::Server> server_;
  // /readyz's cached store probe.
  std::mutex ready_mu_;
  std::chrono::steady_clock::time_point ready_probed_;
  int64_t ready_checked_at_ms_ = 0;  // wall clock of the last probe; 0: none yet
  StoreStatus ready_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace hotkey::coordinator
