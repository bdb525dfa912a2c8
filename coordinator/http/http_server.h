// The HTTP(S)/JSON adapter over the coordinator core (docs/API.md): reports in, lists out (with
// long-poll), operator calls, metrics, health and the embedded dashboard. The routes are a table
// (routes.h, one file per resource) behind one admission chain (admission.h); TLS setup is in
// tls.h, the worker pool with its connection limits in connection_pool.h. One instance per
// listening socket; start/stop from one thread, requests are served from its worker pool.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "admission.h"
#include "config.h"
#include "coordinator_api.h"
#include "list_board.h"
#include "metrics.h"
#include "routes.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace hotkey::coordinator {

class ParkWatch;
// The core as the HTTP transport sees it (coordinator_api.h): reports in, operator calls,
// reads, and the board its long-polls wait on. References outlive the server.
struct HttpCore {
  ReportSink& reports;
  OperatorApi& operators;
  Reads& reads;
  ListBoard& board;
  const CoordinatorConfig& config;
};

class HttpServer {
 public:
  // Serves HTTPS when the config names a certificate; throws std::invalid_argument with a message
  // naming the file when the TLS files cannot be used.
  HttpServer(const HttpCore& core, Metrics& metrics);
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
  // Releases long-poll waiters (their answers are written), stops accepting and joins the
  // workers.
  void stop();

 private:
  void install_routes();

  const HttpCore core_;
  Metrics& metrics_;
  AdmissionChain admission_;
  Routes routes_;
  // Parked long-polls and subscriptions: their connections, off the worker threads.
  std::unique_ptr<ParkWatch> parking_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace hotkey::coordinator
