#include "http_server.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>

#include "connection_pool.h"
#include "hotkey/api_model.h"
#include "hotkey/key_codec.h"
#include "hotkey/report_batch.h"
#include "http_connection.h"
#include "web_assets.h"

namespace hotkey::coordinator {
namespace {

// Pending-connection queue for the listening socket (see HttpServer::bind).
constexpr int kListenBacklog = 4096;

using nlohmann::json;

constexpr const char* kCsp =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'self'";
constexpr size_t kMaxReasonBytes = 1024;
constexpr int64_t kMaxTtlSeconds = 10LL * 365 * 24 * 3600;

using api::dump;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, status, api::Error{message, ""});
}

// A refused coordinator call: the message, and the machine-readable reason when it has one
// (too_many_pins, too_many_topics, not_found...; docs/API.md lists them).
json call_error_json(const CallResult& r) { return api::Error{r.error, r.reason}; }

// Constant-time in the length of the longer input: no early exit on the first mismatch.
bool constant_time_equal(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The token of `Authorization: Bearer <token>`. The scheme is case-insensitive (RFC 9110); the
// token must be visible ASCII (RFC 6750's b64token is a subset), so a NUL, a control byte or a
// space inside it refuses the header instead of comparing a prefix. One header only.
std::optional<std::string> bearer_token(const httplib::Request& req) {
  // The stored value, not get_header_value (a C string): httplib percent-decodes header values,
  // and "%00" would otherwise cut the token short at the NUL.
  const auto range = req.headers.equal_range("Authorization");
  if (range.first == range.second || std::next(range.first) != range.second) return std::nullopt;
  const std::string& h = range.first->second;
  constexpr std::string_view kScheme = "Bearer";
  if (h.size() <= kScheme.size() + 1 ||
      !iequals(std::string_view(h).substr(0, kScheme.size()), kScheme) ||
      h[kScheme.size()] != ' ') {
    return std::nullopt;
  }
  std::string token = h.substr(kScheme.size() + 1);
  if (token.empty()) return std::nullopt;
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) return std::nullopt;
  }
  return token;
}

// The media type of a Content-Type value, lower-cased, without parameters (`; charset=...`).
std::string media_type(const std::string& content_type) {
  std::string m = content_type.substr(0, content_type.find(';'));
  while (!m.empty() && (m.back() == ' ' || m.back() == '\t')) m.pop_back();
  size_t start = 0;
  while (start < m.size() && (m[start] == ' ' || m[start] == '\t')) ++start;
  m = m.substr(start);
  for (char& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return m;
}

// Routes that take a request body; every other route refuses one before reading it.
enum class BodyRoute : uint8_t { kNone, kReport, kOperatorWrite };

BodyRoute body_route(const httplib::Request& req) {
  if (req.method != "POST") return BodyRoute::kNone;
  if (req.path == "/v1/reports" || req.path == "/v1/reports/batch") return BodyRoute::kReport;
  static const std::regex kOperatorWrite(R"(/v1/topics/[A-Za-z0-9._-]{1,249}/(pins|denies))");
  return std::regex_match(req.path, kOperatorWrite) ? BodyRoute::kOperatorWrite : BodyRoute::kNone;
}

bool parse_u64(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// The core's read models as the API's answers (hotkey/api_model.h).
api::TopicSummary to_api(const TopicSummary& s) {
  api::TopicSummary a;
  a.topic = s.topic;
  a.partitions = s.partitions;
  a.hash = std::string(to_string(s.hash));
  a.separator = s.separator;
  a.rate = s.rate;
  a.skew = s.skew;
  a.predicted_skew = s.predicted_skew;
  a.idle_partitions_ratio = s.idle_ratio;
  a.producers = s.producers;
  a.version = s.version;
  a.hot_keys = s.hot_keys;
  a.pins = s.pins;
  a.denies = s.denies;
  a.window_reports = s.window_reports;
  a.window_total = s.window_total;
  return a;
}

api::Pin to_api(const Pin& p) {
  return api::Pin{p.key, p.salts, p.expires_at_ms, p.reason, p.by, p.created_at_ms};
}

api::Deny to_api(const Deny& d) { return api::Deny{d.key, d.reason, d.by, d.created_at_ms}; }

api::TopEntry to_api(const TopEntry& e) {
  return api::TopEntry{e.key,       e.count, e.error,  e.rate,  e.share,
                       e.partition, e.hot,   e.pinned, e.denied};
}

api::AuditEntry to_api(const AuditEntry& a) {
  api::AuditEntry e;
  e.seq = a.seq;
  e.at_ms = a.at_ms;
  e.who = a.who;
  e.action = a.action;
  e.topic = a.topic;
  e.key = a.key;
  e.detail = a.detail.empty() ? json::object() : json::parse(a.detail);
  e.version = a.version;
  return e;
}

// The settings in force for a topic (GET /v1/topics/{t}): every per-topic setting after the
// topic's override (or the defaults), and the hash family / separator with their source.
json effective_settings_json(const CoordinatorConfig& cfg, const TopicSummary& s) {
  const TopicSettings& ts = cfg.settings_for(s.topic);
  json j = json::object();
  for (const SettingInfo& info : config_settings()) {
    if (!info.get_topic) continue;
    const double v = info.get_topic(ts);
    if (v == std::floor(v) && std::fabs(v) < 9.0e15) {
      j[info.name] = static_cast<int64_t>(v);
    } else {
      j[info.name] = v;
    }
  }
  j["hash"] = std::string(to_string(s.hash));
  j["hash_source"] = s.hash_source;
  j["separator"] = s.separator;
  j["separator_source"] = s.separator_source;
  j["from"] = cfg.topic_overrides.count(s.topic) ? "topics." + s.topic : std::string("defaults");
  return j;
}

// A key from a JSON body ({key} or {key_b64}) or query (?key= or ?key_b64=).
std::optional<std::string> decode_key(const std::optional<std::string>& text,
                                      const std::optional<std::string>& b64, std::string* error,
                                      uint32_t max_bytes) {
  if (text.has_value() == b64.has_value()) {
    *error = "give exactly one of key (UTF-8 text) or key_b64 (base64)";
    return std::nullopt;
  }
  std::string key;
  if (text) {
    if (!is_valid_utf8(*text)) {
      *error = "key is not valid UTF-8: send it as key_b64";
      return std::nullopt;
    }
    key = *text;
  } else {
    auto decoded = base64_decode(*b64);
    if (!decoded) {
      *error = "key_b64 is not valid base64 (RFC 4648, padded)";
      return std::nullopt;
    }
    key = *decoded;
  }
  if (key.empty()) {
    *error = "key must not be empty";
    return std::nullopt;
  }
  if (key.size() > max_bytes) {
    *error = "key is " + std::to_string(key.size()) + " bytes, at most " +
             std::to_string(max_bytes) + " allowed";
    return std::nullopt;
  }
  return key;
}

std::optional<std::string> optional_string(const json& body, const char* name, std::string* error) {
  auto it = body.find(name);
  if (it == body.end()) return std::nullopt;
  if (!it->is_string()) {
    *error = std::string(name) + " must be a string";
    return std::nullopt;
  }
  return it->get<std::string>();
}

std::string openssl_error() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

// Plain HTTP, or HTTPS when a certificate is configured. The SSL_CTX is set up here rather
// than by httplib's file constructor so that a bad file is refused with a message naming it.
std::unique_ptr<httplib::Server> make_server(const CoordinatorConfig& c) {
  if (!c.tls()) return std::make_unique<BoundedServer>();
  std::string error;
  auto setup = [&c, &error](SSL_CTX& ctx) {
    ERR_clear_error();
    SSL_CTX_set_options(&ctx,
                        SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(&ctx, c.tls_cert_file.c_str()) != 1) {
      error = "tls_cert_file '" + c.tls_cert_file +
              "' is not a usable PEM certificate chain: " + openssl_error();
      return false;
    }
    if (SSL_CTX_use_PrivateKey_file(&ctx, c.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
        error = "tls_key_file '" + c.tls_key_file + "' does not match the certificate in '" +
                c.tls_cert_file + "'";
        ERR_clear_error();
        return false;
      }
      error = "tls_key_file '" + c.tls_key_file +
              "' is not a usable PEM private key (encrypted keys are not supported): " +
              openssl_error();
      return false;
    }
    if (SSL_CTX_check_private_key(&ctx) != 1) {
      error = "tls_key_file '" + c.tls_key_file + "' does not match the certificate in '" +
              c.tls_cert_file + "': " + openssl_error();
      return false;
    }
    if (!c.tls_client_ca_file.empty()) {
      STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(c.tls_client_ca_file.c_str());
      if (names == nullptr ||
          SSL_CTX_load_verify_locations(&ctx, c.tls_client_ca_file.c_str(), nullptr) != 1) {
        if (names != nullptr) sk_X509_NAME_pop_free(names, X509_NAME_free);
        error = "tls_client_ca_file '" + c.tls_client_ca_file +
                "' holds no usable PEM CA certificate: " + openssl_error();
        return false;
      }
      SSL_CTX_set_client_CA_list(&ctx, names);
      SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
    return true;
  };
  auto server = std::make_unique<BoundedSslServer>(setup);
  if (!server->is_valid()) {
    throw std::invalid_argument(error.empty() ? "TLS setup failed: " + openssl_error() : error);
  }
  return server;
}

std::string refusal_message(const CoordinatorConfig& cfg, ConnectionPool::Refusal refusal,
                            const std::string& peer) {
  if (refusal == ConnectionPool::Refusal::kMaxPerClient) {
    return "too many connections from " + peer +
           " (max_connections_per_client=" + std::to_string(cfg.max_connections_per_client) +
           "); retry shortly";
  }
  return "too many connections (max_connections=" + std::to_string(cfg.connection_limit()) +
         "); retry shortly";
}

}  // namespace

HttpServer::HttpServer(Coordinator& coordinator, Metrics& metrics)
    : coord_(coordinator),
      metrics_(metrics),
      report_limiter_(coordinator.config().report_rate_per_client,
                      coordinator.config().report_burst_per_client,
                      coordinator.config().rate_limit_max_clients),
      operator_limiter_(coordinator.config().operator_rate_per_client,
                        coordinator.config().operator_burst_per_client,
                        coordinator.config().rate_limit_max_clients),
      server_(make_server(coordinator.config())) {
  const CoordinatorConfig& c = coord_.config();
  ConnectionPool::Limits limits;
  limits.threads = static_cast<size_t>(c.http_threads) + c.max_waiters;
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
      const std::string body =
          dump(json(api::Error{refusal_message(coord_.config(), refusal, peer), ""}));
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
  install_routes();
}

HttpServer::~HttpServer() { stop(); }

namespace {

// Socket options for the listening socket. httplib's default sets SO_REUSEPORT on Linux, which
// lets a second process bind the same address and makes the kernel split connections between
// the two (pins landing on one coordinator, reads served by the other). SO_REUSEADDR alone
// still allows a restart while old connections sit in TIME_WAIT, and a second listener on a
// held address fails to bind (exit 4).
void listen_socket_options(socket_t sock) {
  int yes = 1;
  (void)setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

}  // namespace

bool HttpServer::bind(const std::string& host, int port, std::string* error) {
  // cpp-httplib 0.11 listens with a backlog of 5: a fleet reconnecting at once (a coordinator
  // restart, 1,000 long-pollers starting together) overflows it, and the dropped handshakes
  // surface as 1-3 s SYN retries and failed first requests. Remember the listening socket
  // while httplib creates it and raise the backlog afterwards (listen() again on a listening
  // socket only changes the backlog); the kernel caps it at net.core.somaxconn.
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
  coord_.board().close();
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

bool HttpServer::proxy_to_owner(const httplib::Request& req, httplib::Response& res,
                                const std::string& topic, const std::string& target) {
  const auto& elsewhere = coord_.cluster_hooks().owner_elsewhere;
  if (!elsewhere) return false;
  const std::string url = elsewhere(topic);
  if (url.empty()) return false;
  httplib::Client owner(url);
  owner.set_connection_timeout(2, 0);
  owner.set_read_timeout(5, 0);
  httplib::Headers h;
  if (req.has_header("Authorization")) {
    h.emplace("Authorization", req.get_header_value("Authorization"));
  }
  auto r = owner.Get(target, h);
  if (!r) {
    send_error(res, 502,
               "the owner of '" + topic + "' (" + url + ") did not answer: ask it directly");
    return true;
  }
  res.status = r->status;
  res.set_header("X-Hotkey-Owner", url);
  res.set_content(r->body, "application/json");
  return true;
}

void HttpServer::install_routes() {
  httplib::Server& srv = *server_;
  const CoordinatorConfig& cfg = coord_.config();

  auto producer_ok = [this, &cfg](const httplib::Request& req) {
    if (cfg.producer_token.empty()) return true;
    auto tok = bearer_token(req);
    if (!tok) return false;
    bool ok = constant_time_equal(*tok, cfg.producer_token);
    for (const auto& [name, op] : cfg.operator_tokens) ok |= constant_time_equal(*tok, op);
    return ok;
  };
  // The operator's name, or nullopt (401 already sent).
  auto operator_name = [&cfg](const httplib::Request& req,
                              httplib::Response& res) -> std::optional<std::string> {
    auto tok = bearer_token(req);
    std::optional<std::string> who;
    if (tok) {
      for (const auto& [name, op] : cfg.operator_tokens) {
        if (constant_time_equal(*tok, op) && !who) who = name;
      }
    }
    if (!who) {
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, 401,
                 cfg.operator_tokens.empty()
                     ? "operator calls are disabled: no operator token is configured"
                     : "operator calls need Authorization: Bearer <operator token>");
    }
    return who;
  };
  // False (429 sent) when the client's bucket is empty. Checked before authentication so that
  // token guessing is throttled too. The client is the peer address: behind a proxy every
  // client shares the proxy's (docs/SECURITY.md).
  auto within_rate = [this](RateLimiter& limiter, const char* setting, const char* scope,
                            const httplib::Request& req, httplib::Response& res) {
    if (!limiter.enabled()) return true;
    RateLimiter::Decision d = limiter.acquire(req.remote_addr);
    if (d.allowed) return true;
    metrics_.request_rejected("rate_limit", scope);
    if (std::string_view(scope) == "reports") metrics_.rejected("rate_limit");
    char rate[32];
    std::snprintf(rate, sizeof(rate), "%g", limiter.rate());
    res.set_header("Retry-After", std::to_string(d.retry_after_s));
    send_error(res, 429,
               std::string("rate limit exceeded: ") + setting + "=" + rate + "/s (burst " +
                   std::to_string(limiter.burst()) + ") per client address " + req.remote_addr +
                   "; retry after " + std::to_string(d.retry_after_s) + " s");
    return false;
  };
  auto report_rate_ok = [this, within_rate](const httplib::Request& req, httplib::Response& res) {
    return within_rate(report_limiter_, "report_rate_per_client", "reports", req, res);
  };
  auto operator_rate_ok = [this, within_rate](const httplib::Request& req, httplib::Response& res) {
    return within_rate(operator_limiter_, "operator_rate_per_client", "operator_writes", req, res);
  };
  auto unauthorized = [](httplib::Response& res) {
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, 401, "this call needs Authorization: Bearer <producer token>");
  };

  // Runs after the request line and headers are in and before any body byte is read
  // (http_connection.h): connection refusals, request framing, and for the routes that take a
  // body the rate limit, authentication, encoding, length and media type, so that nothing an
  // unauthenticated or refused client sends is buffered. A refused request with a body is
  // answered without reading the body, and its connection closes.
  srv.set_pre_routing_handler([this, &cfg, producer_ok, operator_name, report_rate_ok,
                               operator_rate_ok,
                               unauthorized](const httplib::Request& req, httplib::Response& res) {
    using Handled = httplib::Server::HandlerResponse;
    const ConnectionPool::Refusal refusal = ConnectionPool::refusal();
    if (refusal != ConnectionPool::Refusal::kNone) {
      // Connections over max_connections (or max_connections_per_client) run on the pool's
      // overflow threads: answered at once, never queued behind the workers.
      const bool per_client = refusal == ConnectionPool::Refusal::kMaxPerClient;
      metrics_.request_rejected(per_client ? "max_connections_per_client" : "max_connections",
                                "connection");
      res.set_header("Retry-After", "1");
      res.set_header("Connection", "close");
      connection::close_after_answer();
      send_error(res, 503, refusal_message(cfg, refusal, req.remote_addr));
      return Handled::Handled;
    }
    auto refuse = [&res](int status, const std::string& message) {
      connection::close_after_answer();
      res.set_header("Connection", "close");
      send_error(res, status, message);
      return Handled::Handled;
    };
    // Framing: a request a proxy in front could read differently (request smuggling) is
    // refused, never guessed at.
    const size_t lengths = req.get_header_value_count("Content-Length");
    const size_t encodings = req.get_header_value_count("Transfer-Encoding");
    if (lengths > 1) return refuse(400, "more than one Content-Length header");
    if (encodings > 0 && lengths > 0) {
      return refuse(400, "both Transfer-Encoding and Content-Length: send one of them");
    }
    if (encodings > 1 ||
        (encodings == 1 && !iequals(req.get_header_value("Transfer-Encoding"), "chunked"))) {
      return refuse(501, "only Transfer-Encoding: chunked is supported");
    }
    uint64_t length = 0;
    if (lengths == 1 && !parse_u64(req.get_header_value("Content-Length"), &length)) {
      return refuse(400, "Content-Length must be a decimal number of bytes");
    }
    const bool has_body = encodings == 1 || length > 0;
    if (!has_body) {
      // From here on the time is the handler's (a slow store write, a long-poll), not the
      // client's: request_timeout_s stops. A request with a body is still sending it; the
      // handlers that take one (the POST routes) mark themselves once it is in.
      ConnectionPool::handler_started();
    }
    const BodyRoute route = body_route(req);
    if (route == BodyRoute::kReport) {
      if (!report_rate_ok(req, res)) {
        if (has_body) connection::close_after_answer();
        return Handled::Handled;
      }
      if (!producer_ok(req)) {
        metrics_.rejected("unauthorized");
        unauthorized(res);
        if (has_body) connection::close_after_answer();
        return Handled::Handled;
      }
    } else if (route == BodyRoute::kOperatorWrite) {
      if (!operator_rate_ok(req, res)) {
        if (has_body) connection::close_after_answer();
        return Handled::Handled;
      }
      if (!operator_name(req, res)) {
        if (has_body) connection::close_after_answer();
        return Handled::Handled;
      }
    }
    if (!has_body) return Handled::Unhandled;
    if (route == BodyRoute::kNone) {
      static const std::regex kKnown(
          R"(/v1/(hotkeys|topics|audit|cluster|topics/[A-Za-z0-9._-]{1,249}(/(top|pins|denies))?))"
          R"(|/metrics|/healthz|/readyz|/|/index\.html|/static/.+)");
      if (!std::regex_match(req.path, kKnown)) {
        return refuse(404, "no such endpoint: " + req.method + " " + req.path);
      }
      return refuse(413, req.method + " " + req.path +
                             " takes no request body (only POST /v1/reports and POST "
                             "/v1/topics/{topic}/pins|denies do)");
    }
    const std::string encoding = req.get_header_value("Content-Encoding");
    if (!encoding.empty() && !iequals(encoding, "identity")) {
      if (route == BodyRoute::kReport) metrics_.rejected("content_encoding");
      return refuse(
          415, "Content-Encoding '" + encoding + "' is not accepted: send the body uncompressed");
    }
    if (length > cfg.max_body_bytes) {
      if (route == BodyRoute::kReport) metrics_.rejected("too_large");
      return refuse(
          413, "request body of " + std::to_string(length) +
                   " bytes is larger than max_body_bytes=" + std::to_string(cfg.max_body_bytes));
    }
    const std::string media = media_type(req.get_header_value("Content-Type"));
    if (route == BodyRoute::kReport) {
      const std::string_view binary = req.path == "/v1/reports/batch"
                                          ? kReportBatchBinaryContentType
                                          : kReportBinaryContentType;
      if (!media.empty() && media != "application/json" && media != binary) {
        metrics_.rejected("content_type");
        return refuse(415, "Content-Type must be application/json or " + std::string(binary) +
                               ", got '" + req.get_header_value("Content-Type") + "'");
      }
    } else if (media != "application/json") {
      return refuse(415, "Content-Type must be application/json, got '" +
                             req.get_header_value("Content-Type") + "'");
    }
    // A chunked body's framing counts against the limit too; past it the read fails (413).
    connection::allow_body(cfg.max_body_bytes);
    return Handled::Unhandled;
  });
  srv.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    ConnectionPool::handler_finished();
    res.set_header("Content-Security-Policy", kCsp);
    res.set_header("X-Content-Type-Options", "nosniff");
    if (!res.has_header("Cache-Control")) res.set_header("Cache-Control", "no-store");
  });
  srv.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    // A request the connection's limits stopped (http_connection.h) fails in httplib as a
    // malformed one (400): name the limit instead.
    switch (connection::overflow()) {
      case connection::Overflow::kHead:
        res.status = 431;
        res.body.clear();
        res.set_content(
            dump(json(api::Error{"request line and headers larger than " +
                                     std::to_string(connection::kMaxHeadBytes) + " bytes or " +
                                     std::to_string(connection::kMaxHeadLines) + " lines",
                                 ""})),
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
                std::to_string(coord_.config().max_body_bytes);
          break;
        case 400:
          msg = "malformed HTTP request";
          break;
        default:
          msg = "HTTP " + std::to_string(res.status);
          break;
      }
      res.set_content(dump(json(api::Error{msg, ""})), "application/json");
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

  // --- reports ---
  // One decoded report (or the reason it was refused) through the coordinator: the answer's
  // status and JSON body, shared by the single and the batch form.
  auto ingest_one = [this, &cfg](const std::function<Report(const ReportLimits&)>& decode) {
    // The decoders count the items before parsing them: a report over max_items costs no
    // more than reading up to its first extra item, and gets its own 413 (LimitError).
    const ReportLimits& lim = cfg.limits;
    Report report;
    try {
      report = decode(lim);
    } catch (const LimitError& e) {
      metrics_.rejected("too_many_items");
      return std::pair<int, json>(
          413, json(api::Error{std::string("report too large: ") + e.what(), ""}));
    } catch (const DecodeError& e) {
      metrics_.rejected("decode");
      return std::pair<int, json>(400,
                                  json(api::Error{std::string("bad report: ") + e.what(), ""}));
    }
    const std::string topic = report.topic;
    // Cluster mode: a topic another member owns goes to the reports topic, where its owner
    // reads it (else it would land in a window nobody plans).
    std::optional<CallResult> forwarded;
    if (const auto& forward = coord_.cluster_hooks().forward_report) forwarded = forward(report);
    CallResult r = forwarded ? std::move(*forwarded) : coord_.ingest(std::move(report));
    if (!r.ok()) return std::pair<int, json>(r.status, call_error_json(r));
    auto pub = coord_.board().get(topic);
    return std::pair<int, json>(200,
                                json(api::ReportResult{r.duplicate, pub ? pub->list.version : 0}));
  };
  auto unsupported_type = [this](httplib::Response& res, const std::string& ct,
                                 std::string_view binary_type) {
    metrics_.rejected("content_type");
    send_error(res, 415,
               "Content-Type must be application/json or " + std::string(binary_type) + ", got '" +
                   ct + "'");
  };
  srv.Post("/v1/reports", [ingest_one, unsupported_type](const httplib::Request& req,
                                                         httplib::Response& res) {
    ConnectionPool::handler_started();  // the body is in: request_timeout_s stops here
    // Rate limit, token, length and media type were decided before the body was read.
    const std::string ct = req.get_header_value("Content-Type");
    std::pair<int, json> answer;
    const std::string media = media_type(ct);
    if (media == kReportBinaryContentType) {
      answer =
          ingest_one([&](const ReportLimits& lim) { return decode_report_binary(req.body, lim); });
    } else if (media.empty() || media == "application/json") {
      answer =
          ingest_one([&](const ReportLimits& lim) { return parse_report_json(req.body, lim); });
    } else {
      return unsupported_type(res, ct, kReportBinaryContentType);
    }
    send_json(res, answer.first, answer.second);
  });
  // A producer's whole round in one request: each report is ingested on its own and gets its
  // own result, so one bad report does not reject the others (docs/API.md).
  srv.Post("/v1/reports/batch", [this, ingest_one, unsupported_type](const httplib::Request& req,
                                                                     httplib::Response& res) {
    ConnectionPool::handler_started();
    // Rate limit, token, length and media type were decided before the body was read.
    const std::string ct = req.get_header_value("Content-Type");
    json results = json::array();
    try {
      const std::string media = media_type(ct);
      if (media == kReportBatchBinaryContentType) {
        for (std::string_view one : split_report_batch_binary(req.body)) {
          auto [status, body] =
              ingest_one([&](const ReportLimits& lim) { return decode_report_binary(one, lim); });
          body["status"] = status;
          results.push_back(std::move(body));
        }
      } else if (media.empty() || media == "application/json") {
        for (const std::string& one : split_report_batch_json(req.body)) {
          auto [status, body] =
              ingest_one([&](const ReportLimits& lim) { return parse_report_json(one, lim); });
          body["status"] = status;
          results.push_back(std::move(body));
        }
      } else {
        return unsupported_type(res, ct, kReportBatchBinaryContentType);
      }
    } catch (const DecodeError& e) {  // the envelope itself: nothing was ingested
      metrics_.rejected("decode");
      return send_error(res, 400, std::string("bad report batch: ") + e.what());
    }
    send_json(res, 200, json{{"results", std::move(results)}});
  });

  // --- lists (long-poll) ---
  srv.Get("/v1/hotkeys", [this, producer_ok, unauthorized, &cfg](const httplib::Request& req,
                                                                 httplib::Response& res) {
    if (!producer_ok(req)) return unauthorized(res);
    const std::string topic = req.get_param_value("topic");
    if (!valid_topic_name(topic)) {
      return send_error(res, 400, "topic must be a Kafka topic name ([A-Za-z0-9._-]{1,249})");
    }
    std::optional<uint64_t> since;
    if (req.has_param("since")) {
      uint64_t v = 0;
      if (!parse_u64(req.get_param_value("since"), &v)) {
        return send_error(res, 400, "since must be a non-negative integer version");
      }
      since = v;
    } else if (req.has_header("If-None-Match")) {
      std::string etag = req.get_header_value("If-None-Match");
      if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
      if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
        etag = etag.substr(1, etag.size() - 2);
      }
      uint64_t v = 0;
      if (parse_u64(etag, &v)) since = v;
    }
    uint64_t wait_ms = 0;
    if (req.has_param("wait_ms")) {
      if (!parse_u64(req.get_param_value("wait_ms"), &wait_ms)) {
        return send_error(res, 400, "wait_ms must be a non-negative integer");
      }
      wait_ms = std::min<uint64_t>(wait_ms, cfg.max_wait_ms);
    }
    std::shared_ptr<const PublishedList> list;
    if (!since) {
      list = coord_.board().get(topic);
    } else {
      metrics_.set_waiters(coord_.board().waiters() + 1);
      auto r = coord_.board().wait_newer(topic, *since, std::chrono::milliseconds(wait_ms));
      metrics_.set_waiters(coord_.board().waiters());
      if (r.status == ListBoard::WaitStatus::kTooManyWaiters) {
        res.set_header("Retry-After", "1");
        return send_error(res, 503, "too many long-poll waiters (max_waiters); retry shortly");
      }
      if (r.status != ListBoard::WaitStatus::kNewer) {
        res.status = 304;
        res.set_header("ETag", "\"" + std::to_string(r.list ? r.list->list.version : 0) + "\"");
        return;
      }
      list = r.list;
    }
    if (list) {
      res.set_header("ETag", "\"" + std::to_string(list->list.version) + "\"");
      res.status = 200;
      res.set_content(list->json, "application/json");
      return;
    }
    // No list yet: an empty version-0 list, so clients route everything normally. A topic's
    // configured hash and separator hold from this first answer on, reports or not.
    HotKeyList empty;
    empty.topic = topic;
    if (auto s = coord_.topic(topic)) {
      empty.partitions = s->partitions;
      empty.hash = s->hash;
      empty.separator = s->separator;
    } else {
      const TopicSettings& ts = cfg.settings_for(topic);
      if (ts.hash) empty.hash = *ts.hash;
      if (ts.separator) empty.separator = *ts.separator;
    }
    res.set_header("ETag", "\"0\"");
    res.status = 200;
    res.set_content(list_to_json(empty), "application/json");
  });

  // --- cluster mode (docs/CLUSTER.md) ---
  srv.Get("/v1/cluster",
          [this, producer_ok, unauthorized](const httplib::Request& req, httplib::Response& res) {
            if (!producer_ok(req)) return unauthorized(res);
            const auto& status = coord_.cluster_hooks().status_json;
            if (!status) {
              // Single-node mode: one member that owns every topic it knows.
              return send_json(res, 200, api::ClusterView{});
            }
            res.status = 200;
            res.set_content(status(), "application/json");
          });

  // --- topics ---
  srv.Get("/v1/topics",
          [this, producer_ok, unauthorized](const httplib::Request& req, httplib::Response& res) {
            if (!producer_ok(req)) return unauthorized(res);
            api::TopicsAnswer answer;
            for (const auto& s : coord_.topics()) answer.topics.push_back(to_api(s));
            send_json(res, 200, answer);
          });
  srv.Get(R"(/v1/topics/([A-Za-z0-9._-]{1,249}))",
          [this, producer_ok, unauthorized](const httplib::Request& req, httplib::Response& res) {
            if (!producer_ok(req)) return unauthorized(res);
            const std::string topic = req.matches[1];
            // Cluster mode: window, loads and plan are the owner's; answer with its answer.
            if (proxy_to_owner(req, res, topic, req.path)) return;
            auto s = coord_.topic(topic);
            if (!s) return send_error(res, 404, "unknown topic '" + topic + "'");
            api::TopicDetail detail;
            detail.summary = to_api(*s);
            if (auto p = coord_.pins(topic)) {
              for (const auto& [k, pin] : *p) detail.pinned.push_back(to_api(pin));
            }
            if (auto d = coord_.denies(topic)) {
              for (const auto& [k, deny] : *d) detail.denied.push_back(to_api(deny));
            }
            detail.partition_load = coord_.partition_load(topic).value_or(std::vector<double>{});
            detail.settings = effective_settings_json(coord_.config(), *s);
            send_json(res, 200, detail);
          });
  srv.Get(R"(/v1/topics/([A-Za-z0-9._-]{1,249})/top)",
          [this, producer_ok, unauthorized](const httplib::Request& req, httplib::Response& res) {
            if (!producer_ok(req)) return unauthorized(res);
            const std::string topic = req.matches[1];
            uint64_t n = 20;
            if (req.has_param("n") && (!parse_u64(req.get_param_value("n"), &n) || n < 1)) {
              return send_error(res, 400, "n must be a positive integer");
            }
            n = std::min<uint64_t>(n, 1000);
            // Cluster mode: only the owner has the topic's window; answer with its answer.
            if (proxy_to_owner(req, res, topic, req.path + "?n=" + std::to_string(n))) return;
            auto top = coord_.top(topic, n);
            if (!top) return send_error(res, 404, "unknown topic '" + topic + "'");
            api::TopAnswer answer;
            answer.topic = topic;
            for (const auto& e : *top) answer.items.push_back(to_api(e));
            if (auto s = coord_.topic(topic)) {
              answer.rate = s->rate;
              answer.window_total = s->window_total;
            }
            send_json(res, 200, answer);
          });

  // --- operator: pins and denies ---
  auto parse_body = [](const httplib::Request& req, httplib::Response& res) -> std::optional<json> {
    json body;
    try {
      body = json::parse(req.body);
    } catch (const json::parse_error& e) {
      send_error(res, 400, std::string("body is not valid JSON: ") + e.what());
      return std::nullopt;
    }
    if (!body.is_object()) {
      send_error(res, 400, "body must be a JSON object");
      return std::nullopt;
    }
    return body;
  };
  auto body_key = [&cfg](const json& body, httplib::Response& res) -> std::optional<std::string> {
    std::string error;
    auto text = optional_string(body, "key", &error);
    auto b64 = error.empty() ? optional_string(body, "key_b64", &error) : std::nullopt;
    if (!error.empty()) {
      send_error(res, 400, error);
      return std::nullopt;
    }
    auto key = decode_key(text, b64, &error, cfg.limits.max_key_bytes);
    if (!key) send_error(res, 400, error);
    return key;
  };
  auto body_reason = [](const json& body, httplib::Response& res) -> std::optional<std::string> {
    auto it = body.find("reason");
    if (it == body.end() || !it->is_string() || it->get<std::string>().empty()) {
      send_error(res, 400, "reason must be a non-empty string (it goes into the audit log)");
      return std::nullopt;
    }
    std::string reason = it->get<std::string>();
    if (reason.size() > kMaxReasonBytes || !is_valid_utf8(reason)) {
      send_error(res, 400, "reason must be UTF-8 text of at most 1024 bytes");
      return std::nullopt;
    }
    return reason;
  };
  auto query_key = [&cfg](const httplib::Request& req,
                          httplib::Response& res) -> std::optional<std::string> {
    std::optional<std::string> text, b64;
    if (req.has_param("key")) text = req.get_param_value("key");
    if (req.has_param("key_b64")) b64 = req.get_param_value("key_b64");
    std::string error;
    auto key = decode_key(text, b64, &error, cfg.limits.max_key_bytes);
    if (!key) send_error(res, 400, error);
    return key;
  };
  auto send_result = [](httplib::Response& res, const CallResult& r) {
    if (!r.ok()) return send_json(res, r.status, call_error_json(r));
    send_json(res, 200, api::OperatorResult{r.version});
  };

  const std::string topic_re = R"(/v1/topics/([A-Za-z0-9._-]{1,249}))";
  srv.Post(topic_re + "/pins", [=, this, &cfg](const httplib::Request& req,
                                               httplib::Response& res) {
    ConnectionPool::handler_started();
    // Rate limit, operator token and media type were checked before the body was read.
    auto who = operator_name(req, res);
    if (!who) return;
    auto body = parse_body(req, res);
    if (!body) return;
    auto key = body_key(*body, res);
    if (!key) return;
    auto reason = body_reason(*body, res);
    if (!reason) return;
    uint32_t salts = 0;
    if (auto it = body->find("salts"); it != body->end() && !it->is_null()) {
      if (!it->is_number_unsigned() || it->get<uint64_t>() < 1 ||
          it->get<uint64_t>() > static_cast<uint64_t>(cfg.limits.max_partitions)) {
        return send_error(res, 400, "salts must be an integer from 1 to max_partitions");
      }
      salts = static_cast<uint32_t>(it->get<uint64_t>());
    }
    int64_t ttl_s = 0;
    if (auto it = body->find("ttl_s"); it != body->end() && !it->is_null()) {
      if (!it->is_number_unsigned() ||
          it->get<uint64_t>() > static_cast<uint64_t>(kMaxTtlSeconds)) {
        return send_error(res, 400, "ttl_s must be an integer number of seconds, 0 to 10 years");
      }
      ttl_s = static_cast<int64_t>(it->get<uint64_t>());
    }
    send_result(res, coord_.pin(req.matches[1], *key, salts, ttl_s, *reason, *who));
  });
  srv.Delete(topic_re + "/pins", [=, this](const httplib::Request& req, httplib::Response& res) {
    if (!operator_rate_ok(req, res)) return;
    auto who = operator_name(req, res);
    if (!who) return;
    auto key = query_key(req, res);
    if (!key) return;
    send_result(res, coord_.unpin(req.matches[1], *key, *who));
  });
  srv.Post(topic_re + "/denies", [=, this](const httplib::Request& req, httplib::Response& res) {
    ConnectionPool::handler_started();
    // Rate limit, operator token and media type were checked before the body was read.
    auto who = operator_name(req, res);
    if (!who) return;
    auto body = parse_body(req, res);
    if (!body) return;
    auto key = body_key(*body, res);
    if (!key) return;
    auto reason = body_reason(*body, res);
    if (!reason) return;
    send_result(res, coord_.deny(req.matches[1], *key, *reason, *who));
  });
  srv.Delete(topic_re + "/denies", [=, this](const httplib::Request& req, httplib::Response& res) {
    if (!operator_rate_ok(req, res)) return;
    auto who = operator_name(req, res);
    if (!who) return;
    auto key = query_key(req, res);
    if (!key) return;
    send_result(res, coord_.allow(req.matches[1], *key, *who));
  });
  // An operator's "forget this topic" (junk topics hold max_topics slots): audited, with a
  // reason in the query (DELETE takes no body).
  srv.Delete(topic_re, [=, this](const httplib::Request& req, httplib::Response& res) {
    if (!operator_rate_ok(req, res)) return;
    auto who = operator_name(req, res);
    if (!who) return;
    const std::string reason = req.get_param_value("reason");
    if (reason.empty() || reason.size() > kMaxReasonBytes || !is_valid_utf8(reason)) {
      return send_error(res, 400,
                        "reason must be given as ?reason=TEXT: non-empty UTF-8, at most 1024 "
                        "bytes (it goes into the audit log)");
    }
    send_result(res, coord_.delete_topic(req.matches[1], reason, *who));
  });
  srv.Get(topic_re + "/pins", [=, this](const httplib::Request& req, httplib::Response& res) {
    if (!producer_ok(req)) return unauthorized(res);
    api::PinsAnswer answer;
    if (auto pins = coord_.pins(req.matches[1])) {
      for (const auto& [k, p] : *pins) answer.pins.push_back(to_api(p));
    }
    send_json(res, 200, answer);
  });
  srv.Get(topic_re + "/denies", [=, this](const httplib::Request& req, httplib::Response& res) {
    if (!producer_ok(req)) return unauthorized(res);
    api::DeniesAnswer answer;
    if (auto denies = coord_.denies(req.matches[1])) {
      for (const auto& [k, d] : *denies) answer.denies.push_back(to_api(d));
    }
    send_json(res, 200, answer);
  });
  srv.Get("/v1/audit", [=, this, &cfg](const httplib::Request& req, httplib::Response& res) {
    auto who = operator_name(req, res);
    if (!who) return;
    uint64_t limit = 100;
    if (req.has_param("limit") && (!parse_u64(req.get_param_value("limit"), &limit) || limit < 1)) {
      return send_error(res, 400, "limit must be a positive integer");
    }
    limit = std::min<uint64_t>(limit, cfg.audit_max_limit);
    api::AuditAnswer answer;
    for (const auto& a : coord_.audit(limit)) answer.entries.push_back(to_api(a));
    send_json(res, 200, answer);
  });

  // --- observability ---
  srv.Get("/metrics", [this, &cfg](const httplib::Request& req, httplib::Response& res) {
    if (cfg.metrics_require_token) {
      const auto tok = bearer_token(req);
      bool ok = false;
      if (tok) {
        if (!cfg.producer_token.empty()) ok |= constant_time_equal(*tok, cfg.producer_token);
        for (const auto& [name, op] : cfg.operator_tokens) ok |= constant_time_equal(*tok, op);
      }
      if (!ok) {
        res.set_header("WWW-Authenticate", "Bearer");
        return send_error(res, 401,
                          "metrics need Authorization: Bearer <producer or operator token> "
                          "(metrics_require_token is set)");
      }
    }
    metrics_.set_waiters(coord_.board().waiters());
    res.set_content(metrics_.serialize(), "text/plain; version=0.0.4; charset=utf-8");
  });
  srv.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, api::Health{});
  });
  // Readiness is a synced store write: unauthenticated callers in a loop would make it a
  // write load (#17: 16 clients made ~2,300 synced writes/s). One probe per second at most;
  // the answer says when it ran.
  srv.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    std::unique_lock lock(ready_mu_);
    const auto now = std::chrono::steady_clock::now();
    // The cached answer is reused for a second, unless a write has failed since: readiness must
    // turn 503 the moment the store is known to be failing (full disk), not a second later.
    if (ready_checked_at_ms_ == 0 || now - ready_probed_ >= std::chrono::seconds(1) ||
        (ready_.ok && !coord_.store().healthy())) {
      double latency = 0;
      ready_ = coord_.store().probe(&latency);
      if (ready_.ok) metrics_.store_write_latency(latency);  // a synced write like any other
      ready_probed_ = now;
      ready_checked_at_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
      metrics_.set_store_healthy(ready_.ok);
    }
    const StoreStatus st = ready_;
    const int64_t checked_at_ms = ready_checked_at_ms_;
    lock.unlock();
    send_json(res, st.ok ? 200 : 503, api::Readiness{st.ok, st.error, checked_at_ms});
  });

  // --- dashboard ---
  auto serve_asset = [](std::string_view path, httplib::Response& res) {
    for (const auto& a : web_assets()) {
      if (a.path == path) {
        res.set_header("Cache-Control", "no-cache");
        res.set_content(std::string(a.bytes), std::string(a.content_type));
        return true;
      }
    }
    return false;
  };
  srv.Get("/", [serve_asset](const httplib::Request&, httplib::Response& res) {
    if (!serve_asset("/index.html", res)) send_error(res, 404, "no dashboard embedded");
  });
  srv.Get("/index.html", [serve_asset](const httplib::Request&, httplib::Response& res) {
    if (!serve_asset("/index.html", res)) send_error(res, 404, "no dashboard embedded");
  });
  srv.Get(R"(/static/(.+))", [serve_asset](const httplib::Request& req, httplib::Response& res) {
    const std::string rel = "/" + std::string(req.matches[1]);
    if (rel.find("..") != std::string::npos || !serve_asset(rel, res)) {
      send_error(res, 404, "no such file: " + std::string(req.path));
    }
  });
}

}  // namespace hotkey::coordinator
