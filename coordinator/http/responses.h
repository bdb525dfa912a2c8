// How the HTTP layer answers: JSON bodies written with the API model (hotkey/api_model.h), the
// security headers every answer carries, and the ONE mapping of the core's call outcomes
// (CallResult) onto HTTP statuses and bodies; the core's read models as API values. Pure functions,
// safe from any thread.
#pragma once

#include <string>

#include "coordinator_api.h"
#include "hotkey/api_model.h"

namespace httplib {
struct Response;
}  // namespace httplib

namespace hotkey::coordinator {

// Content-Security-Policy of every answer (the dashboard loads nothing foreign).
inline constexpr const char* kCsp =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; "
    "form-action 'self'";

void send_json(httplib::Response& res, int status, const api::Json& body);
// {"error": message} with `status`.
void send_error(httplib::Response& res, int status, const std::string& message);

// The HTTP status of a core call's outcome (its domain Status): the only place that maps it.
int http_status(const CallResult& r);
// The body of a refused call: its message and machine-readable reason (docs/API.md).
api::Error error_body(const CallResult& r);
// The core's read models as the API's answers.
api::TopicSummary to_api(const TopicSummary& s);
api::AuditEntry to_api(const AuditEntry& a);

// An operator write's answer: {"ok": true, "version"} or the refusal.
void send_operator_result(httplib::Response& res, const CallResult& r);

}  // namespace hotkey::coordinator
