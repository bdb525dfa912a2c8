// The admission chain of every request (docs/SECURITY.md): connection limits, request framing,
// then, as its route asks (routes.h), rate limit, token, body, key and reason. The steps that can
// run before the body is read run in the server's pre-routing hook, so nothing an unauthenticated
// or refused client sends is buffered; the rest run in front of the handler. Thread-safe: one
// instance serves every worker thread.
#pragma once

#include <httplib.h>

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "config.h"
#include "connection_pool.h"
#include "metrics.h"
#include "rate_limiter.h"
#include "routes.h"

namespace hotkey::coordinator {

class AdmissionChain {
 public:
  AdmissionChain(const CoordinatorConfig& config, Metrics& metrics);
  AdmissionChain(const AdmissionChain&) = delete;
  AdmissionChain& operator=(const AdmissionChain&) = delete;

  // The routes the chain admits for; set once, before the server starts.
  void set_routes(const Routes& routes);

  // Pre-routing, after the request line and headers and before any body byte: connection refusals
  // (503), framing (400/501), and for a route with a body its rate limit, token, encoding, length
  // and media type. Handled when it answered.
  httplib::Server::HandlerResponse before_body(const httplib::Request& req, httplib::Response& res);
  // In front of `route`'s handler: the steps of its chain not taken before the body. False when a
  // step refused the request (the answer is in call.res).
  bool admit(const Route& route, Call& call);

  // The 503 message for a refused connection from `peer`.
  std::string refusal_message(ConnectionPool::Refusal refusal, const std::string& peer) const;

 private:
  struct Matcher {
    const Route* route;
    bool literal;  // the pattern is a plain path
    std::regex regex;
  };
  const Route* body_route(const httplib::Request& req) const;
  bool known_path(const std::string& path) const;
  bool within_rate(RateScope scope, const httplib::Request& req, httplib::Response& res);
  bool producer_ok(const httplib::Request& req) const;
  // The operator's name, or nullopt (401 sent).
  std::optional<std::string> operator_name(const httplib::Request& req,
                                           httplib::Response& res) const;
  bool metrics_ok(const httplib::Request& req, httplib::Response& res) const;
  std::optional<std::string> key(From from, Call& call) const;
  std::optional<std::string> reason(From from, Call& call) const;

  const CoordinatorConfig& cfg_;
  Metrics& metrics_;
  RateLimiter report_limiter_;
  RateLimiter operator_limiter_;
  std::vector<Matcher> with_body_;     // POST routes that take a body
  std::vector<Matcher> without_body_;  // every other route
};

}  // namespace hotkey::coordinator
