#include "admission.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <iterator>
#include <string_view>

#include "hotkey/key_codec.h"
#include "hotkey/report.h"
#include "hotkey/report_batch.h"
#include "http_connection.h"
#include "responses.h"

namespace hotkey::coordinator {
namespace {

using Handled = httplib::Server::HandlerResponse;
using nlohmann::json;
constexpr size_t kMaxReasonBytes = 1024;

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
  // The stored value, not get_header_value (a C string): httplib percent-decodes header values, and
  // "%00" would otherwise cut the token short at the NUL.
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

// A pattern without regular-expression syntax is compared as a plain path ('.' included: the
// literal patterns are file names).
bool is_literal(std::string_view pattern) {
  return pattern.find_first_of("()[]{}*+?|\\^$") == std::string_view::npos;
}

}  // namespace

std::string media_type(const std::string& content_type) {
  std::string m = content_type.substr(0, content_type.find(';'));
  while (!m.empty() && (m.back() == ' ' || m.back() == '\t')) m.pop_back();
  size_t start = 0;
  while (start < m.size() && (m[start] == ' ' || m[start] == '\t')) ++start;
  m = m.substr(start);
  for (char& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return m;
}

bool parse_u64(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

AdmissionChain::AdmissionChain(const CoordinatorConfig& config, Metrics& metrics)
    : cfg_(config),
      metrics_(metrics),
      report_limiter_(config.report_rate_per_client, config.report_burst_per_client,
                      config.rate_limit_max_clients),
      operator_limiter_(config.operator_rate_per_client, config.operator_burst_per_client,
                        config.rate_limit_max_clients) {}

void AdmissionChain::set_routes(const Routes& routes) {
  with_body_.clear();
  without_body_.clear();
  for (const Route& r : routes) {
    Matcher m{&r, is_literal(r.pattern), std::regex(r.pattern)};
    (r.admission.body == BodyKind::kNone ? without_body_ : with_body_).push_back(std::move(m));
  }
}

const Route* AdmissionChain::body_route(const httplib::Request& req) const {
  if (req.method != "POST") return nullptr;
  for (const Matcher& m : with_body_) {
    if (m.route->method != req.method) continue;
    if (m.literal ? req.path == m.route->pattern : std::regex_match(req.path, m.regex)) {
      return m.route;
    }
  }
  return nullptr;
}

bool AdmissionChain::known_path(const std::string& path) const {
  return std::any_of(without_body_.begin(), without_body_.end(), [&path](const Matcher& m) {
    return m.literal ? path == m.route->pattern : std::regex_match(path, m.regex);
  });
}

std::string AdmissionChain::refusal_message(ConnectionPool::Refusal refusal,
                                            const std::string& peer) const {
  if (refusal == ConnectionPool::Refusal::kMaxPerClient) {
    return "too many connections from " + peer +
           " (max_connections_per_client=" + std::to_string(cfg_.max_connections_per_client) +
           "); retry shortly";
  }
  return "too many connections (max_connections=" + std::to_string(cfg_.connection_limit()) +
         "); retry shortly";
}

bool AdmissionChain::producer_ok(const httplib::Request& req) const {
  if (cfg_.producer_token.empty()) return true;
  auto tok = bearer_token(req);
  if (!tok) return false;
  bool ok = constant_time_equal(*tok, cfg_.producer_token);
  for (const auto& [name, op] : cfg_.operator_tokens) ok |= constant_time_equal(*tok, op);
  return ok;
}

std::optional<std::string> AdmissionChain::operator_name(const httplib::Request& req,
                                                         httplib::Response& res) const {
  auto tok = bearer_token(req);
  std::optional<std::string> who;
  if (tok) {
    for (const auto& [name, op] : cfg_.operator_tokens) {
      if (constant_time_equal(*tok, op) && !who) who = name;
    }
  }
  if (!who) {
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, 401,
               cfg_.operator_tokens.empty()
                   ? "operator calls are disabled: no operator token is configured"
                   : "operator calls need Authorization: Bearer <operator token>");
  }
  return who;
}

bool AdmissionChain::metrics_ok(const httplib::Request& req, httplib::Response& res) const {
  if (!cfg_.metrics_require_token) return true;
  const auto tok = bearer_token(req);
  bool ok = false;
  if (tok) {
    if (!cfg_.producer_token.empty()) ok |= constant_time_equal(*tok, cfg_.producer_token);
    for (const auto& [name, op] : cfg_.operator_tokens) ok |= constant_time_equal(*tok, op);
  }
  if (!ok) {
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, 401,
               "metrics need Authorization: Bearer <producer or operator token> "
               "(metrics_require_token is set)");
  }
  return ok;
}

// False (429 sent) when the client's bucket is empty. Checked before authentication so that token
// guessing is throttled too. The client is the peer address: behind a proxy every client shares the
// proxy's (docs/SECURITY.md).
bool AdmissionChain::within_rate(RateScope scope, const httplib::Request& req,
                                 httplib::Response& res) {
  if (scope == RateScope::kNone) return true;
  const bool reports = scope == RateScope::kReports;
  RateLimiter& limiter = reports ? report_limiter_ : operator_limiter_;
  if (!limiter.enabled()) return true;
  RateLimiter::Decision d = limiter.acquire(req.remote_addr);
  if (d.allowed) return true;
  metrics_.request_rejected("rate_limit", reports ? "reports" : "operator_writes");
  if (reports) metrics_.rejected("rate_limit");
  char rate[32];
  std::snprintf(rate, sizeof(rate), "%g", limiter.rate());
  res.set_header("Retry-After", std::to_string(d.retry_after_s));
  send_error(res, 429,
             std::string("rate limit exceeded: ") +
                 (reports ? "report_rate_per_client" : "operator_rate_per_client") + "=" + rate +
                 "/s (burst " + std::to_string(limiter.burst()) + ") per client address " +
                 req.remote_addr + "; retry after " + std::to_string(d.retry_after_s) + " s");
  return false;
}

std::optional<std::string> AdmissionChain::key(From from, Call& call) const {
  std::string error;
  std::optional<std::string> text, b64;
  if (from == From::kBody) {
    text = optional_string(call.body, "key", &error);
    if (error.empty()) b64 = optional_string(call.body, "key_b64", &error);
    if (!error.empty()) {
      send_error(call.res, 400, error);
      return std::nullopt;
    }
  } else {
    if (call.req.has_param("key")) text = call.req.get_param_value("key");
    if (call.req.has_param("key_b64")) b64 = call.req.get_param_value("key_b64");
  }
  auto key = decode_key(text, b64, &error, cfg_.limits.max_key_bytes);
  if (!key) send_error(call.res, 400, error);
  return key;
}

std::optional<std::string> AdmissionChain::reason(From from, Call& call) const {
  if (from == From::kQuery) {
    std::string reason = call.req.get_param_value("reason");
    if (reason.empty() || reason.size() > kMaxReasonBytes || !is_valid_utf8(reason)) {
      send_error(call.res, 400,
                 "reason must be given as ?reason=TEXT: non-empty UTF-8, at most 1024 "
                 "bytes (it goes into the audit log)");
      return std::nullopt;
    }
    return reason;
  }
  auto it = call.body.find("reason");
  if (it == call.body.end() || !it->is_string() || it->get<std::string>().empty()) {
    send_error(call.res, 400, "reason must be a non-empty string (it goes into the audit log)");
    return std::nullopt;
  }
  std::string reason = it->get<std::string>();
  if (reason.size() > kMaxReasonBytes || !is_valid_utf8(reason)) {
    send_error(call.res, 400, "reason must be UTF-8 text of at most 1024 bytes");
    return std::nullopt;
  }
  return reason;
}

bool AdmissionChain::admit(const Route& route, Call& call) {
  const Admission& a = route.admission;
  const bool has_body = a.body != BodyKind::kNone;
  // The body is in: from here on the time is the handler's, and request_timeout_s stops.
  if (has_body) ConnectionPool::handler_started();
  // A route with a body had its rate limit and token checked before the body was read; an operator
  // route asks again for the token's name.
  if (!has_body && !within_rate(a.rate, call.req, call.res)) return false;
  switch (a.auth) {
    case Auth::kNone:
      break;
    case Auth::kProducer:
      if (!has_body && !producer_ok(call.req)) {
        call.res.set_header("WWW-Authenticate", "Bearer");
        send_error(call.res, 401, "this call needs Authorization: Bearer <producer token>");
        return false;
      }
      break;
    case Auth::kOperator: {
      auto who = operator_name(call.req, call.res);
      if (!who) return false;
      call.who = std::move(*who);
      break;
    }
    case Auth::kMetrics:
      if (!metrics_ok(call.req, call.res)) return false;
      break;
  }
  if (a.body == BodyKind::kJsonObject) {
    try {
      call.body = api::Json::parse(call.req.body);
    } catch (const api::Json::parse_error& e) {
      send_error(call.res, 400, std::string("body is not valid JSON: ") + e.what());
      return false;
    }
    if (!call.body.is_object()) {
      send_error(call.res, 400, "body must be a JSON object");
      return false;
    }
  }
  if (a.key != From::kNone) {
    auto k = key(a.key, call);
    if (!k) return false;
    call.key = std::move(*k);
  }
  if (a.reason != From::kNone) {
    auto r = reason(a.reason, call);
    if (!r) return false;
    call.reason = std::move(*r);
  }
  return true;
}

httplib::Server::HandlerResponse AdmissionChain::before_body(const httplib::Request& req,
                                                             httplib::Response& res) {
  const ConnectionPool::Refusal refusal = ConnectionPool::refusal();
  if (refusal != ConnectionPool::Refusal::kNone) {
    // Connections over max_connections (or max_connections_per_client) run on the pool's overflow
    // threads: answered at once, never queued behind the workers.
    const bool per_client = refusal == ConnectionPool::Refusal::kMaxPerClient;
    metrics_.request_rejected(per_client ? "max_connections_per_client" : "max_connections",
                              "connection");
    res.set_header("Retry-After", "1");
    res.set_header("Connection", "close");
    connection::close_after_answer();
    send_error(res, 503, refusal_message(refusal, req.remote_addr));
    return Handled::Handled;
  }
  auto refuse = [&res](int status, const std::string& message) {
    connection::close_after_answer();
    res.set_header("Connection", "close");
    send_error(res, status, message);
    return Handled::Handled;
  };
  // Framing: a request a proxy in front could read differently (request smuggling) is refused,
  // never guessed at.
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
    // From here on the time is the handler's (a slow store write, a long-poll), not the client's:
    // request_timeout_s stops. A request with a body is still sending it; the handlers that take
    // one (the POST routes) mark themselves once it is in.
    ConnectionPool::handler_started();
  }
  const Route* route = body_route(req);
  const bool report = route && route->admission.body == BodyKind::kReport;
  if (route) {
    // The route's rate limit and token, before its body is read.
    if (!within_rate(route->admission.rate, req, res)) {
      if (has_body) connection::close_after_answer();
      return Handled::Handled;
    }
    const bool authorized = route->admission.auth == Auth::kOperator
                                ? operator_name(req, res).has_value()
                                : producer_ok(req);
    if (!authorized) {
      if (route->admission.auth != Auth::kOperator) {
        metrics_.rejected("unauthorized");
        res.set_header("WWW-Authenticate", "Bearer");
        send_error(res, 401, "this call needs Authorization: Bearer <producer token>");
      }
      if (has_body) connection::close_after_answer();
      return Handled::Handled;
    }
  }
  if (!has_body) return Handled::Unhandled;
  if (!route) {
    if (!known_path(req.path)) {
      return refuse(404, "no such endpoint: " + req.method + " " + req.path);
    }
    return refuse(413, req.method + " " + req.path +
                           " takes no request body (only POST /v1/reports and POST "
                           "/v1/topics/{topic}/pins|denies|policies do)");
  }
  const std::string encoding = req.get_header_value("Content-Encoding");
  if (!encoding.empty() && !iequals(encoding, "identity")) {
    if (report) metrics_.rejected("content_encoding");
    return refuse(
        415, "Content-Encoding '" + encoding + "' is not accepted: send the body uncompressed");
  }
  if (length > cfg_.max_body_bytes) {
    if (report) metrics_.rejected("too_large");
    return refuse(
        413, "request body of " + std::to_string(length) +
                 " bytes is larger than max_body_bytes=" + std::to_string(cfg_.max_body_bytes));
  }
  const std::string media = media_type(req.get_header_value("Content-Type"));
  if (report) {
    const std::string_view binary = route->admission.binary_media;
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
  connection::allow_body(cfg_.max_body_bytes);
  return Handled::Unhandled;
}

}  // namespace hotkey::coordinator
