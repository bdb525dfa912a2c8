// The operator calls (docs/API.md, "Operator calls"): pin, unpin, deny, allow, policies and
// delete a topic.
// Their admission chain (operator rate limit, operator token, body, key, reason) is the route
// table's; the handlers only check what is particular to one call.
#include <cstdint>
#include <string>

#include "config.h"
#include "coordinator_api.h"
#include "responses.h"
#include "routes.h"

namespace hotkey::coordinator {
namespace {

constexpr int64_t kMaxTtlSeconds = 10LL * 365 * 24 * 3600;
// The topic setting's bound (hot_fraction in config.cc).
constexpr double kMaxHotFraction = 1000;

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
  send_operator_result(c.res, ctx.operators.pin(c.topic(), c.key, salts, ttl_s, c.reason, c.who));
}

void policy_refused(httplib::Response& res, const std::string& reason, const std::string& message) {
  send_json(res, 400, api::Error{message, reason});
}

// {key | key_b64 (the prefix), never_salt?, hot_fraction?, max_salts?, reason}: never_salt alone,
// or hot_fraction and/or max_salts.
void post_policy(const RouteContext& ctx, Call& c) {
  Policy p;
  p.prefix = c.key;
  p.reason = c.reason;
  bool has_never = false;
  if (auto it = c.body.find("never_salt"); it != c.body.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return policy_refused(c.res, "bad_never_salt", "never_salt must be a boolean");
    }
    p.never_salt = it->get<bool>();
    has_never = true;
  }
  bool has_hot = false;
  if (auto it = c.body.find("hot_fraction"); it != c.body.end() && !it->is_null()) {
    if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > kMaxHotFraction) {
      return policy_refused(c.res, "bad_hot_fraction",
                            "hot_fraction must be a number above 0 and at most 1000 (a key is hot "
                            "at hot_fraction / partitions of the topic, as the setting)");
    }
    p.hot_fraction = it->get<double>();
    has_hot = true;
  }
  bool has_salts = false;
  if (auto it = c.body.find("max_salts"); it != c.body.end() && !it->is_null()) {
    if (!it->is_number_unsigned() || it->get<uint64_t>() < 1 ||
        it->get<uint64_t>() > static_cast<uint64_t>(ctx.cfg.limits.max_partitions)) {
      return policy_refused(c.res, "bad_max_salts",
                            "max_salts must be an integer from 1 to max_partitions (" +
                                std::to_string(ctx.cfg.limits.max_partitions) + ")");
    }
    p.max_salts = static_cast<uint32_t>(it->get<uint64_t>());
    has_salts = true;
  }
  if (p.never_salt && (has_hot || has_salts)) {
    return policy_refused(c.res, "bad_policy",
                          "a never_salt policy takes no hot_fraction or max_salts (its keys are "
                          "never salted)");
  }
  if (!p.never_salt && !has_hot && !has_salts) {
    return policy_refused(c.res, "bad_policy",
                          std::string(has_never ? "never_salt false needs" : "a policy needs") +
                              " never_salt true, or hot_fraction and/or max_salts");
  }
  send_operator_result(c.res, ctx.operators.set_policy(c.topic(), p, c.who));
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
                      send_operator_result(c.res, ctx.operators.unpin(c.topic(), c.key, c.who));
                    }});
  routes.push_back({"POST", topic + "/denies", write, [ctx](Call& c) {
                      send_operator_result(c.res,
                                           ctx.operators.deny(c.topic(), c.key, c.reason, c.who));
                    }});
  routes.push_back({"DELETE", topic + "/denies", removal, [ctx](Call& c) {
                      send_operator_result(c.res, ctx.operators.allow(c.topic(), c.key, c.who));
                    }});
  routes.push_back({"POST", topic + "/policies", write, [ctx](Call& c) { post_policy(ctx, c); }});
  routes.push_back({"DELETE", topic + "/policies", removal, [ctx](Call& c) {
                      send_operator_result(c.res,
                                           ctx.operators.remove_policy(c.topic(), c.key, c.who));
                    }});
  routes.push_back({"DELETE", topic, forget, [ctx](Call& c) {
                      send_operator_result(c.res,
                                           ctx.operators.delete_topic(c.topic(), c.reason, c.who));
                    }});
}

}  // namespace hotkey::coordinator
