// GET /v1/audit: the operator audit log, newest first (docs/API.md).
#include <algorithm>

#include "config.h"
#include "coordinator_api.h"
#include "responses.h"
#include "routes.h"

namespace hotkey::coordinator {
namespace {

void get_audit(const RouteContext& ctx, Call& c) {
  uint64_t limit = 100;
  if (c.req.has_param("limit") &&
      (!parse_u64(c.req.get_param_value("limit"), &limit) || limit < 1)) {
    return send_error(c.res, 400, "limit must be a positive integer");
  }
  limit = std::min<uint64_t>(limit, ctx.cfg.audit_max_limit);
  api::AuditAnswer answer;
  for (const auto& a : ctx.operators.audit(limit)) answer.entries.push_back(to_api(a));
  send_json(c.res, 200, answer);
}

}  // namespace

void add_audit_routes(Routes& routes, const RouteContext& ctx) {
  Admission operator_read;
  operator_read.auth = Auth::kOperator;
  routes.push_back({"GET", "/v1/audit", operator_read, [ctx](Call& c) { get_audit(ctx, c); }});
}

}  // namespace hotkey::coordinator
