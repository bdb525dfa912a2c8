// GET /v1/hotkeys: the published hot-key list of a topic, with long-poll (docs/API.md, "Hot-key
// lists").
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "coordinator.h"
#include "hotkey/hotkey_list.h"
#include "list_board.h"
#include "metrics.h"
#include "responses.h"
#include "routes.h"

namespace hotkey::coordinator {
namespace {

void get_hotkeys(const RouteContext& ctx, Call& c) {
  const httplib::Request& req = c.req;
  httplib::Response& res = c.res;
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
    wait_ms = std::min<uint64_t>(wait_ms, ctx.cfg.max_wait_ms);
  }
  ListBoard& board = ctx.coord.board();
  std::shared_ptr<const PublishedList> list;
  if (since) {
    ctx.metrics.set_waiters(board.waiters() + 1);
    auto r = board.wait_newer(topic, *since, std::chrono::milliseconds(wait_ms));
    ctx.metrics.set_waiters(board.waiters());
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
  // No list yet: the core's empty version-0 list (clients route everything normally).
  if (!list) list = ctx.coord.current_list(topic);
  res.set_header("ETag", "\"" + std::to_string(list->list.version) + "\"");
  res.status = 200;
  res.set_content(list->json, "application/json");
}

}  // namespace

void add_list_routes(Routes& routes, const RouteContext& ctx) {
  Admission producer;
  producer.auth = Auth::kProducer;
  routes.push_back({"GET", "/v1/hotkeys", producer, [ctx](Call& c) { get_hotkeys(ctx, c); }});
}

}  // namespace hotkey::coordinator
