#include "responses.h"

#include <httplib.h>

namespace hotkey::coordinator {

void send_json(httplib::Response& res, int status, const api::Json& body) {
  res.status = status;
  res.set_content(api::dump(body), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, status, api::Error{message, ""});
}

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
  a.balance_keys = s.balance_keys;
  a.pins = s.pins;
  a.denies = s.denies;
  a.policies = s.policies;
  a.window_reports = s.window_reports;
  a.window_total = s.window_total;
  return a;
}

api::AuditEntry to_api(const AuditEntry& a) {
  api::AuditEntry e;
  e.seq = a.seq;
  e.at_ms = a.at_ms;
  e.who = a.who;
  e.action = a.action;
  e.topic = a.topic;
  e.key = a.key;
  e.detail = a.detail.empty() ? api::Json::object() : api::Json::parse(a.detail);
  e.version = a.version;
  return e;
}

int http_status(const CallResult& r) {
  switch (r.status) {
    case Status::kOk:
      return 200;
    case Status::kInvalid:
      return 400;
    case Status::kNotFound:
      return 404;
    case Status::kConflict:
      return 409;
    case Status::kLimit:
      return 429;
    case Status::kUnavailable:
      return 503;
    case Status::kUnsupported:
      return 501;
    case Status::kInternal:
      return 500;
  }
  return 500;
}

api::Error error_body(const CallResult& r) { return api::Error{r.error, r.reason}; }

void send_operator_result(httplib::Response& res, const CallResult& r) {
  if (!r.ok()) return send_json(res, http_status(r), error_body(r));
  send_json(res, 200, api::OperatorResult{r.version});
}

}  // namespace hotkey::coordinator
