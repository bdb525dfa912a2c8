// The coordinator's HTTP routes as a table (docs/API.md): each route is a method, a path pattern,
// what its admission chain checks (rate limit, token, body, key, reason) and a handler that only
// maps the admitted request onto the core and the core's answer onto the API model. One file per
// resource adds its routes: report_routes.cc, list_routes.cc, topic_routes.cc, operator_routes.cc,
// audit_routes.cc, observability_routes.cc and dashboard_routes.cc. Handlers run on the server's
// worker threads, concurrently.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/api_model.h"

namespace hotkey::coordinator {

class ListBoard;
class Metrics;
class ParkWatch;
class OperatorApi;
class Reads;
class ReportSink;
struct CoordinatorConfig;

// The steps of the admission chain a route asks for. They run in this order, after the connection
// limits and the request framing every request passes (admission.h).
enum class RateScope : uint8_t { kNone, kReports, kOperatorWrites };
enum class Auth : uint8_t { kNone, kProducer, kOperator, kMetrics };
enum class BodyKind : uint8_t { kNone, kReport, kJsonObject };
enum class From : uint8_t { kNone, kBody, kQuery };

struct Admission {
  RateScope rate = RateScope::kNone;
  Auth auth = Auth::kNone;
  BodyKind body = BodyKind::kNone;
  From key = From::kNone;     // the key: "key"/"key_b64" of the body or the query
  From reason = From::kNone;  // the audit reason: "reason" of the body or the query
  // Report routes: the binary media type accepted besides application/json.
  std::string_view binary_media;
};

// An admitted request and what its chain established.
struct Call {
  const httplib::Request& req;
  httplib::Response& res;
  std::string who;  // the operator token's name (Auth::kOperator)
  api::Json body;   // BodyKind::kJsonObject: the parsed object
  std::string key;  // From key: the key's bytes
  std::string reason;
  // The {topic} of a /v1/topics/{topic}... route.
  std::string topic() const { return req.matches[1]; }
};

struct Route {
  std::string method;   // GET, POST or DELETE
  std::string pattern;  // httplib's: a regular expression matched against the whole path
  Admission admission;
  std::function<void(Call&)> handle;
};
using Routes = std::vector<Route>;

// /v1/topics/{topic}: a Kafka topic name.
inline constexpr std::string_view kTopicPath = R"(/v1/topics/([A-Za-z0-9._-]{1,249}))";

// What the route files serve from: the core's interfaces (coordinator_api.h) and the board the
// list routes' long-polls and subscriptions wait on. References outlive the server.
struct RouteContext {
  ReportSink& reports;
  OperatorApi& operators;
  Reads& reads;
  ListBoard& board;
  Metrics& metrics;
  const CoordinatorConfig& cfg;
  ParkWatch& parking;  // parked long-polls (park_watch.h)
};

void add_report_routes(Routes& routes, const RouteContext& ctx);
void add_list_routes(Routes& routes, const RouteContext& ctx);
void add_topic_routes(Routes& routes, const RouteContext& ctx);
void add_operator_routes(Routes& routes, const RouteContext& ctx);
void add_audit_routes(Routes& routes, const RouteContext& ctx);
void add_observability_routes(Routes& routes, const RouteContext& ctx);
void add_dashboard_routes(Routes& routes, const RouteContext& ctx);

// A whole decimal number (query parameters, Content-Length).
bool parse_u64(const std::string& text, uint64_t* out);
// The media type of a Content-Type value, lower-cased, without parameters (`; charset=...`).
std::string media_type(const std::string& content_type);

}  // namespace hotkey::coordinator
