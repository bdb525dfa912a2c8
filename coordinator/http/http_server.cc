#include "http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>

#include "connection_pool.h"
#include "hotkey/api_model.h"
#include "http_connection.h"
#include "park_watch.h"
#include "responses.h"
#include "tls.h"

namespace hotkey::coordinator {
namespace {

// Pending-connection queue for the listening socket (see HttpServer::bind).
constexpr int kListenBacklog = 4096;

}  // namespace

HttpServer::HttpServer(const HttpCore& core, Metrics& metrics)
    : core_(core),
      metrics_(metrics),
      admission_(core.config, metrics),
      parking_(std::make_unique<ParkWatch>(
          ParkWatch::Limits{std::chrono::seconds(core.config.write_timeout_s),
                            std::chrono::seconds(std::min(core.config.keep_alive_timeout_s,
                                                          core.config.request_timeout_s))},
          [this] { metrics_.set_waiters(core_.board.waiters()); },
          [this] { metrics_.parked_answer_gzipped(); })),
      server_(make_server(core.config)) {
  const CoordinatorConfig& c = core_.config;
  ConnectionPool::Limits limits;
  // A parked long-poll or subscription, and a kept-alive connection between requests, leave
  // their worker (park_watch.h): http_threads workers serve the requests being read, handled
  // and answered; more start only while every one is held (slow senders) and then end.
  limits.threads = static_cast<size_t>(c.http_threads) + c.max_waiters;
  limits.min_threads = c.http_threads;
  limits.max_connections = c.connection_limit();
  limits.max_per_client = c.max_connections_per_client;
  limits.request_timeout = std::chrono::seconds(c.request_timeout_s);
  ConnectionPool::Hooks hooks;
  hooks.connections = [this](size_t n) { metrics_.set_connections(static_cast<double>(n)); };
  hooks.cut = [this] { metrics_.connection_cut(); };
  if (!c.tls()) {
    hooks.refusal_answer = [this](ConnectionPool::Refusal refusal, const std::string& peer) {
      const bool per_client = refusal == ConnectionPool::Refusal::kMaxPerClient;
      metrics_.request_rejected(per_client ? "max_connections_per_client" : "max_connections",
                                "connection");
      const std::string body = api::dump(api::Error{admission_.refusal_message(refusal, peer), ""});
      return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
             "Content-Length: " +
             std::to_string(body.size()) +
             "\r\nRetry-After: 1\r\nConnection: close\r\nCache-Control: no-store\r\n"
             "Content-Security-Policy: " +
             std::string(kCsp) + "\r\nX-Content-Type-Options: nosniff\r\n\r\n" + body;
    };
  }
  const httplib::Server* server = server_.get();
  server_->new_task_queue = [server, limits, hooks] {
    return new ConnectionPool(server, limits, hooks);
  };
  server_->set_read_timeout(c.read_timeout_s, 0);
  server_->set_write_timeout(c.write_timeout_s, 0);
  server_->set_payload_max_length(c.max_body_bytes);
  // Small JSON answers: without TCP_NODELAY, Nagle plus delayed ACKs add ~40 ms per exchange.
  server_->set_tcp_nodelay(true);
  server_->set_keep_alive_max_count(c.keep_alive_max_count);
  server_->set_keep_alive_timeout(c.keep_alive_timeout_s);
  connection::set_idle_keeper(
      *server_, [parking = parking_.get()](auto conn) { parking->keep_idle(std::move(conn)); });
  install_routes();
}

HttpServer::~HttpServer() { stop(); }

namespace {

// Socket options for the listening socket. httplib's default sets SO_REUSEPORT on Linux, which lets
// a second process bind the same address and makes the kernel split connections between the two
// (pins landing on one coordinator, reads served by the other). SO_REUSEADDR alone still allows a
// restart while old connections sit in TIME_WAIT, and a second listener on a held address fails to
// bind (exit 4).
void listen_socket_options(socket_t sock) {
  int yes = 1;
  (void)setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

}  // namespace

bool HttpServer::bind(const std::string& host, int port, std::string* error) {
  // cpp-httplib 0.11 listens with a backlog of 5: a fleet reconnecting at once (a coordinator
  // restart, 1,000 long-pollers starting together) overflows it, and the dropped handshakes surface
  // as 1-3 s SYN retries and failed first requests. Remember the listening socket while httplib
  // creates it and raise the backlog afterwards (listen() again on a listening socket only changes
  // the backlog); the kernel caps it at net.core.somaxconn.
  auto listen_fd = std::make_shared<socket_t>(INVALID_SOCKET);
  server_->set_socket_options([listen_fd](socket_t sock) {
    listen_socket_options(sock);
    *listen_fd = sock;
  });
  const auto raise_backlog = [&](bool bound) {
    server_->set_socket_options(listen_socket_options);
    if (bound && *listen_fd != INVALID_SOCKET) (void)::listen(*listen_fd, kListenBacklog);
  };
  if (port == 0) {
    port_ = server_->bind_to_any_port(host);
    raise_backlog(port_ >= 0);
    if (port_ < 0) {
      *error = "cannot bind " + host + ":0";
      return false;
    }
    return true;
  }
  const bool bound = server_->bind_to_port(host, port);
  raise_backlog(bound);
  if (!bound) {
    *error = "cannot bind " + host + ":" + std::to_string(port) + " (in use or not permitted)";
    return false;
  }
  port_ = port;
  return true;
}

bool HttpServer::run() { return server_->listen_after_bind(); }

void HttpServer::start() {
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void HttpServer::stop() {
  // Wakes every long-poll waiter (they answer with what they have) and refuses new ones.
  core_.board.close();
  // The parked requests' answers are written before the worker pool goes.
  if (parking_) parking_->stop();
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

void HttpServer::install_routes() {
  const RouteContext ctx{core_.reports, core_.operators, core_.reads, core_.board,
                         metrics_,      core_.config,    *parking_};
  add_report_routes(routes_, ctx);
  add_list_routes(routes_, ctx);
  add_topic_routes(routes_, ctx);
  add_operator_routes(routes_, ctx);
  add_audit_routes(routes_, ctx);
  add_observability_routes(routes_, ctx);
  add_dashboard_routes(routes_, ctx);
  admission_.set_routes(routes_);

  httplib::Server& srv = *server_;
  for (const Route& route : routes_) {
    // Every route runs behind the same admission chain; `routes_` does not change from here on.
    auto handler = [this, &route](const httplib::Request& req, httplib::Response& res) {
      Call call{req, res, {}, {}, {}, {}};
      if (admission_.admit(route, call)) route.handle(call);
    };
    if (route.method == "GET") {
      srv.Get(route.pattern, handler);
    } else if (route.method == "POST") {
      srv.Post(route.pattern, handler);
    } else {
      srv.Delete(route.pattern, handler);
    }
  }

  // Runs after the request line and headers are in and before any body byte is read
  // (http_connection.h): connection refusals, request framing, and for the routes that take a body
  // the rate limit, authentication, encoding, length and media type, so that nothing an
  // unauthenticated or refused client sends is buffered. A refused request with a body is answered
  // without reading the body, and its connection closes.
  srv.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return admission_.before_body(req, res);
  });
  srv.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    ConnectionPool::handler_finished();
    res.set_header("Content-Security-Policy", kCsp);
    res.set_header("X-Content-Type-Options", "nosniff");
    if (!res.has_header("Cache-Control")) res.set_header("Cache-Control", "no-store");
  });
  srv.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    // A request the connection's limits stopped (http_connection.h) fails in httplib as a malformed
    // one (400): name the limit instead.
    switch (connection::overflow()) {
      case connection::Overflow::kHead:
        res.status = 431;
        res.body.clear();
        res.set_content(
            api::dump(api::Error{"request line and headers larger than " +
                                     std::to_string(connection::kMaxHeadBytes) + " bytes or " +
                                     std::to_string(connection::kMaxHeadLines) + " lines",
                                 ""}),
            "application/json");
        break;
      case connection::Overflow::kBody:
        res.status = 413;
        res.body.clear();
        break;
      case connection::Overflow::kNone:
        break;
    }
    if (res.status == 413 && req.path.starts_with("/v1/reports") &&
        connection::overflow() == connection::Overflow::kBody) {
      metrics_.rejected("too_large");
    }
    if (res.body.empty()) {
      std::string msg;
      switch (res.status) {
        case 404:
          msg = "no such endpoint: " + req.method + " " + req.path;
          break;
        case 405:
          msg = "method not allowed";
          break;
        case 413:
          msg = "request body larger than max_body_bytes=" +
                std::to_string(core_.config.max_body_bytes);
          break;
        case 400:
          msg = "malformed HTTP request";
          break;
        default:
          msg = "HTTP " + std::to_string(res.status);
          break;
      }
      res.set_content(api::dump(api::Error{msg, ""}), "application/json");
    }
    if (!res.has_header("Content-Security-Policy")) {
      res.set_header("Content-Security-Policy", kCsp);
      res.set_header("X-Content-Type-Options", "nosniff");
    }
    if (!res.has_header("Cache-Control")) res.set_header("Cache-Control", "no-store");
  });
  srv.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = std::string("internal error: ") + e.what();
        } catch (...) {
        }
        send_error(res, 500, what);
      });
}

}  // namespace hotkey::coordinator
