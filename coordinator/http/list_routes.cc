// GET /v1/hotkeys: the published hot-key list of a topic, with long-poll; POST
// /v1/hotkeys/subscribe: one subscription over many topics (docs/API.md, "Hot-key lists").
#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "config.h"
#include "coordinator_api.h"
#include "hotkey/hotkey_list.h"
#include "list_board.h"
#include "metrics.h"
#include "park_watch.h"
#include "responses.h"
#include "routes.h"

namespace hotkey::coordinator {
namespace {

// Topics in one subscription (docs/API.md): a producer writing hundreds of topics fits, and
// one request's answer stays bounded.
constexpr size_t kMaxSubscriptionTopics = 1024;
// A subscription holding a topic whose owner is gone is answered at least this often, so a
// client that subscribed after the change (a new connection) learns of it soon.
constexpr uint64_t kStaleRecheckMs = 2000;

// The subscribed topics whose owner is gone (cluster mode; docs/API.md, "stale").
std::vector<std::string> stale_topics(const RouteContext& ctx,
                                      const std::vector<ListBoard::Want>& wants) {
  std::vector<std::string> out;
  for (const ListBoard::Want& w : wants) {
    if (ctx.reads.owner_gone(w.topic)) out.push_back(w.topic);
  }
  return out;
}

void send_answer(const ParkWatch::Answer& a, httplib::Response& res) {
  res.status = a.status;
  if (!a.etag.empty()) res.set_header("ETag", a.etag);
  if (a.retry_after) res.set_header("Retry-After", "1");
  if (!a.body.empty()) res.set_content(a.body, "application/json");
}

std::shared_ptr<const ParkWatch::Answer> too_many_waiters() {
  static const auto a = [] {
    auto r = std::make_shared<ParkWatch::Answer>();
    r->status = 503;
    r->retry_after = true;
    r->body = api::dump(api::Error{"too many long-poll waiters (max_waiters); retry shortly", ""});
    return std::shared_ptr<const ParkWatch::Answer>(std::move(r));
  }();
  return a;
}

// One answer per published list, shared by every request it answers: a publication wakes its
// topic's readers one after another, so the last answer built is the one asked for next.
class AnswerCache {
 public:
  template <typename Make>
  std::shared_ptr<const ParkWatch::Answer> get(const std::shared_ptr<const PublishedList>& list,
                                               const Make& make) {
    std::lock_guard lock(mu_);
    if (list_ != list || !answer_) {
      answer_ = make();
      list_ = list;
    }
    return answer_;
  }

 private:
  std::mutex mu_;
  std::shared_ptr<const PublishedList> list_;
  std::shared_ptr<const ParkWatch::Answer> answer_;
};

// GET /v1/hotkeys's 200: the list's document, rendered when it was published.
std::shared_ptr<const ParkWatch::Answer> list_answer(
    const std::shared_ptr<const PublishedList>& list) {
  static AnswerCache cache;
  return cache.get(list, [&] {
    auto a = std::make_shared<ParkWatch::Answer>();
    a->etag = "\"" + std::to_string(list->list.version) + "\"";
    a->body = list->json;
    return std::shared_ptr<const ParkWatch::Answer>(std::move(a));
  });
}

// A subscription's 200: {"lists": [...], "stale": [...]}. Each list's JSON was rendered once,
// when it was published; the answer only joins them.
std::shared_ptr<const ParkWatch::Answer> subscription_answer(
    const std::vector<std::shared_ptr<const PublishedList>>& lists,
    const std::vector<std::string>& stale) {
  size_t size = 32;
  for (const auto& l : lists) size += l->json.size() + 1;
  for (const auto& t : stale) size += t.size() + 3;
  auto a = std::make_shared<ParkWatch::Answer>();
  std::string& body = a->body;
  body.reserve(size);
  body += "{\"lists\":[";
  for (size_t i = 0; i < lists.size(); ++i) {
    if (i != 0) body += ',';
    body += lists[i]->json;
  }
  body += ']';
  if (!stale.empty()) {
    // Topic names are [A-Za-z0-9._-]: nothing to escape.
    body += ",\"stale\":[";
    for (size_t i = 0; i < stale.size(); ++i) {
      if (i != 0) body += ',';
      body += '"' + stale[i] + '"';
    }
    body += ']';
  }
  body += '}';
  return a;
}

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
  if (!since) {
    // No list yet: the core's empty version-0 list (clients route everything normally).
    return send_answer(*list_answer(ctx.reads.current_list(topic)), res);
  }
  ListBoard& board = ctx.board;
  auto build = [&board, topic](const ListBoard::AnyResult& r) {
    if (r.status == ListBoard::WaitStatus::kTooManyWaiters) return too_many_waiters();
    if (r.status == ListBoard::WaitStatus::kNewer) return list_answer(r.lists.front());
    auto a = std::make_shared<ParkWatch::Answer>();
    a->status = 304;
    auto current = board.get(topic);
    a->etag = "\"" + std::to_string(current ? current->list.version : 0) + "\"";
    return std::shared_ptr<const ParkWatch::Answer>(std::move(a));
  };
  auto answer = ctx.parking.wait(board, {ListBoard::Want{topic, *since}}, wait_ms, false,
                                 ParkWatch::accepted(req), build);
  if (answer) send_answer(*answer, res);
}

// The body of a subscription, or nullopt with the 400 sent.
std::optional<std::vector<ListBoard::Want>> subscription_wants(const api::Json& body,
                                                               uint64_t* wait_ms,
                                                               httplib::Response& res) {
  for (const auto& [name, value] : body.items()) {
    if (name != "topics" && name != "wait_ms") {
      send_error(res, 400,
                 "unknown member \"" + name + "\": a subscription has topics and wait_ms");
      return std::nullopt;
    }
  }
  auto topics = body.find("topics");
  if (topics == body.end() || !topics->is_array() || topics->empty()) {
    send_error(res, 400, "topics must be a non-empty array of {\"topic\": T, \"since\": V}");
    return std::nullopt;
  }
  if (topics->size() > kMaxSubscriptionTopics) {
    send_error(res, 400,
               "at most " + std::to_string(kMaxSubscriptionTopics) +
                   " topics per subscription, got " + std::to_string(topics->size()));
    return std::nullopt;
  }
  std::vector<ListBoard::Want> wants;
  wants.reserve(topics->size());
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < topics->size(); ++i) {
    const api::Json& t = (*topics)[i];
    const std::string at = "topics[" + std::to_string(i) + "]";
    if (!t.is_object()) {
      send_error(res, 400, at + " must be an object {\"topic\": T, \"since\": V}");
      return std::nullopt;
    }
    for (const auto& [name, value] : t.items()) {
      if (name != "topic" && name != "since") {
        send_error(res, 400, at + ": unknown member \"" + name + "\" (topic and since only)");
        return std::nullopt;
      }
    }
    auto topic = t.find("topic");
    if (topic == t.end() || !topic->is_string() ||
        !valid_topic_name(topic->get_ref<const std::string&>())) {
      send_error(res, 400, at + ".topic must be a Kafka topic name ([A-Za-z0-9._-]{1,249})");
      return std::nullopt;
    }
    auto since = t.find("since");
    // nlohmann reads an integer above 2^64-1 as a double, so is_number_unsigned refuses it too.
    if (since == t.end() || !since->is_number_unsigned()) {
      send_error(res, 400,
                 at + ".since must be the version held: an integer from 0 to 18446744073709551615");
      return std::nullopt;
    }
    ListBoard::Want w{topic->get<std::string>(), since->get<uint64_t>()};
    if (!seen.insert(w.topic).second) {
      send_error(res, 400, at + ": topic \"" + w.topic + "\" is named twice");
      return std::nullopt;
    }
    wants.push_back(std::move(w));
  }
  *wait_ms = 0;
  if (auto wait = body.find("wait_ms"); wait != body.end()) {
    if (!wait->is_number_unsigned()) {
      send_error(res, 400, "wait_ms must be a non-negative integer");
      return std::nullopt;
    }
    *wait_ms = wait->get<uint64_t>();
  }
  return wants;
}

void post_subscribe(const RouteContext& ctx, Call& c) {
  uint64_t wait_ms = 0;
  auto wants = subscription_wants(c.body, &wait_ms, c.res);
  if (!wants) return;
  wait_ms = std::min<uint64_t>(wait_ms, ctx.cfg.max_wait_ms);
  if (!stale_topics(ctx, *wants).empty()) wait_ms = std::min(wait_ms, kStaleRecheckMs);
  auto build = [&ctx, wants = *wants](const ListBoard::AnyResult& r) {
    if (r.status == ListBoard::WaitStatus::kTooManyWaiters) return too_many_waiters();
    const std::vector<std::string> stale = stale_topics(ctx, wants);
    if (r.lists.size() == 1 && stale.empty()) {
      // A publication's answer: the same for every subscription it wakes.
      static AnswerCache cache;
      return cache.get(r.lists.front(), [&] { return subscription_answer(r.lists, stale); });
    }
    return subscription_answer(r.lists, stale);
  };
  auto answer = ctx.parking.wait(ctx.board, *wants, wait_ms, true, ParkWatch::accepted(c.req),
                                 std::move(build));
  if (answer) send_answer(*answer, c.res);
}

}  // namespace

void add_list_routes(Routes& routes, const RouteContext& ctx) {
  Admission producer;
  producer.auth = Auth::kProducer;
  routes.push_back({"GET", "/v1/hotkeys", producer, [ctx](Call& c) { get_hotkeys(ctx, c); }});
  Admission subscription;
  subscription.auth = Auth::kProducer;
  subscription.body = BodyKind::kJsonObject;
  routes.push_back(
      {"POST", "/v1/hotkeys/subscribe", subscription, [ctx](Call& c) { post_subscribe(ctx, c); }});
}

}  // namespace hotkey::coordinator
