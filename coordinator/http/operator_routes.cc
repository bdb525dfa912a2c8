// The operator calls (docs/API.md, "Operator calls"): pin, unpin, deny, allow and delete a topic.
// Their admission chain (operator rate limit, operator token, body, key, reason) is the route
// table's; the handlers only check what is particular to one call.
#include <cstdint>
#include <string>

#include "config.h"
#include "coordinator.h"
#include "responses.h"
#include "routes.h"

namespace hotkey::coordinator {
namespace {

constexpr int64_t kMaxTtlSeconds = 10LL * 365 * 24 * 3600;

void post_pin(const RouteContext& ctx, Call& c) {
  uint32_t salts = 0;
  if (auto it = c.body.find("salts"); it != c.body.end() && !it->is_null()) {
    if (!it->is_number_unsigned() || it->get<uint64_t>() < 1 ||
        it->get<uint64_t>() > static_cast<uint64_t>(ctx.cfg.limits.max_partitions)) {
      return send_error(c.res, 400, "salts must be an integer from 1 to max_partitions");
    }
    salts = static_cast<uint32_t>(it->get<uint64_t>());
  }
  int64_t ttl_s = 0;
  if (auto it = c.body.find("ttl_s"); it != c.body.end() && !it->is_null()) {
    if (!it->is_number_unsigned() || it->get<uint64_t>() > static_cast<uint64_t>(kMaxTtlSeconds)) {
      return send_error(c.res, 400, "ttl_s must be an integer number of seconds, 0 to 10 years");
    }
    ttl_s = static_cast<int64_t>(it->get<uint64_t>());
  }
  send_operator_result(c.res, ctx.coord.pin(c.topic(), c.key, salts, ttl_s, c.reason, c.who));
}

}  // namespace

void add_operator_routes(Routes& routes, const RouteContext& ctx) {
  const std::string topic(kTopicPath);
  // A write with a JSON body: {key | key_b64, reason, ...}.
  Admission write;
  write.rate = RateScope::kOperatorWrites;
  write.auth = Auth::kOperator;
  write.body = BodyKind::kJsonObject;
  write.key = From::kBody;
  write.reason = From::kBody;
  // A removal: the key in the query (DELETE takes no body).
  Admission removal;
  removal.rate = RateScope::kOperatorWrites;
  removal.auth = Auth::kOperator;
  removal.key = From::kQuery;
  // An operator's "forget this topic" (junk topics hold max_topics slots): audited, with a reason
  // in the query.
  Admission forget;
  forget.rate = RateScope::kOperatorWrites;
  forget.auth = Auth::kOperator;
  forget.reason = From::kQuery;

  routes.push_back({"POST", topic + "/pins", write, [ctx](Call& c) { post_pin(ctx, c); }});
  routes.push_back({"DELETE", topic + "/pins", removal, [ctx](Call& c) {
                      send_operator_result(c.res, ctx.coord.unpin(c.topic(), c.key, c.who));
                    }});
  routes.push_back({"POST", topic + "/denies", write, [ctx](Call& c) {
                      send_operator_result(c.res,
                                           ctx.coord.deny(c.topic(), c.key, c.reason, c.who));
                    }});
  routes.push_back({"DELETE", topic + "/denies", removal, [ctx](Call& c) {
                      send_operator_result(c.res, ctx.coord.allow(c.topic(), c.key, c.who));
                    }});
  routes.push_back({"DELETE", topic, forget, [ctx](Call& c) {
                      send_operator_result(c.res,
                                           ctx.coord.delete_topic(c.topic(), c.reason, c.who));
                    }});
}

}  // namespace hotkey::coordinator
