// The topics (docs/API.md, "Topics"): GET /v1/topics, GET /v1/topics/{topic}, its top keys and its
// pins, denies and policies. In cluster mode a topic's window lives with its owner, whose answer is
// passed on.
#include <algorithm>
#include <cmath>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config.h"
#include "coordinator_api.h"
#include "responses.h"
#include "routes.h"

namespace hotkey::coordinator {
namespace {

// The settings in force for a topic (GET /v1/topics/{t}): every per-topic setting after the topic's
// override (or the defaults), and the hash family / separator with their source.
api::Json effective_settings_json(const CoordinatorConfig& cfg, const TopicSummary& s) {
  const TopicSettings& ts = cfg.settings_for(s.topic);
  api::Json j = api::Json::object();
  for (const SettingInfo& info : config_settings()) {
    if (!info.get_topic) continue;
    const double v = info.get_topic(ts);
    if (v == std::floor(v) && std::fabs(v) < 9.0e15) {
      j[info.name] = static_cast<int64_t>(v);
    } else {
      j[info.name] = v;
    }
  }
  j["hash"] = std::string(to_string(s.hash));
  j["hash_source"] = s.hash_source;
  j["separator"] = s.separator;
  j["separator_source"] = s.separator_source;
  j["from"] = cfg.topic_overrides.count(s.topic) ? "topics." + s.topic : std::string("defaults");
  return j;
}

// Cluster mode: when another member owns `topic`, asks it for `target` (path and query) and answers
// with its answer (header X-Hotkey-Owner: its URL; 502 when it does not answer) and returns true;
// false when this member owns the topic (or in single-node mode).
bool proxy_to_owner(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res,
                    const std::string& topic, const std::string& target) {
  const std::string url = ctx.reads.owner_url(topic);
  if (url.empty()) return false;
  httplib::Client owner(url);
  owner.set_connection_timeout(2, 0);
  owner.set_read_timeout(5, 0);
  httplib::Headers h;
  if (req.has_header("Authorization")) {
    h.emplace("Authorization", req.get_header_value("Authorization"));
  }
  auto r = owner.Get(target, h);
  if (!r) {
    send_error(res, 502,
               "the owner of '" + topic + "' (" + url + ") did not answer: ask it directly");
    return true;
  }
  res.status = r->status;
  res.set_header("X-Hotkey-Owner", url);
  res.set_content(r->body, "application/json");
  return true;
}

// What this member knows of `topic` without its owner (cluster mode): the topic's last list
// (the lists topic, which every member tails) and the pins and denies it applied.
api::TopicSummary summary_without_owner(const RouteContext& ctx, const std::string& topic) {
  api::TopicSummary t;
  if (auto s = ctx.reads.topic(topic)) t = to_api(*s);
  t.topic = topic;
  if (auto pub = ctx.reads.published(topic)) {
    const HotKeyList& list = pub->list;
    t.partitions = list.partitions;
    t.hash = std::string(to_string(list.hash));
    t.separator = list.separator;
    t.version = list.version;
    t.hot_keys = static_cast<uint32_t>(list.keys.size());
    t.balance_keys = static_cast<uint32_t>(
        std::count_if(list.keys.begin(), list.keys.end(),
                      [](const HotKey& k) { return k.source == KeySource::kBalance; }));
  }
  return t;
}

// The topics another member owns, as it answers GET /v1/topics?scope=member (nullopt: it did
// not answer).
std::optional<api::TopicsAnswer> ask_member(const std::string& url, const httplib::Request& req) {
  httplib::Client member(url);
  member.set_connection_timeout(2, 0);
  member.set_read_timeout(5, 0);
  httplib::Headers h;
  if (req.has_header("Authorization")) {
    h.emplace("Authorization", req.get_header_value("Authorization"));
  }
  auto r = member.Get("/v1/topics?scope=member", h);
  if (!r || r->status != 200) return std::nullopt;
  try {
    return api::Json::parse(r->body).get<api::TopicsAnswer>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// GET /v1/topics. Cluster mode (docs/CLUSTER.md "HTTP in cluster mode"): every member lists the
// whole cluster, each topic with its owner: the topics this member owns from its own window,
// every other owner's from that owner (all asked at once; `scope=member` asks a member for only
// its own, which is what the others ask), and a topic whose owner did not answer (or that
// nobody owns: pins only) from what this member knows of it.
void get_topics(const RouteContext& ctx, Call& c) {
  api::TopicsAnswer answer;
  const std::optional<api::ClusterView> view = ctx.reads.cluster_view();
  if (!view || !view->cluster()) {
    for (const auto& s : ctx.reads.topics()) answer.topics.push_back(to_api(s));
    return send_json(c.res, 200, answer);
  }
  std::map<std::string, api::TopicSummary> by_topic;
  std::vector<TopicSummary> local = ctx.reads.topics();
  for (const auto& s : local) {
    if (!ctx.reads.owns(s.topic)) continue;
    api::TopicSummary t = to_api(s);
    t.owner = view->url;
    by_topic[s.topic] = std::move(t);
  }
  if (c.req.get_param_value("scope") != "member") {
    std::set<std::string> members;
    for (const auto& [topic, url] : view->owners) {
      if (url != view->url && !by_topic.contains(topic)) members.insert(url);
    }
    std::vector<std::pair<std::string, std::future<std::optional<api::TopicsAnswer>>>> asked;
    for (const std::string& url : members) {
      asked.emplace_back(url, std::async(std::launch::async, ask_member, url, std::cref(c.req)));
    }
    for (auto& [url, reply] : asked) {
      std::optional<api::TopicsAnswer> a = reply.get();
      if (!a) continue;
      for (api::TopicSummary& t : a->topics) {
        t.owner = url;
        t.owner_answered = true;
        by_topic.emplace(t.topic, std::move(t));
      }
    }
    for (const auto& [topic, url] : view->owners) {
      if (by_topic.contains(topic)) continue;
      api::TopicSummary t = summary_without_owner(ctx, topic);
      t.owner = url;
      t.owner_answered = false;
      by_topic.emplace(topic, std::move(t));
    }
    for (const auto& s : local) {
      if (by_topic.contains(s.topic)) continue;
      api::TopicSummary t = summary_without_owner(ctx, s.topic);
      t.owner = "";
      t.owner_answered = false;
      by_topic.emplace(s.topic, std::move(t));
    }
  }
  for (auto& [topic, t] : by_topic) answer.topics.push_back(std::move(t));
  send_json(c.res, 200, answer);
}

void get_topic(const RouteContext& ctx, Call& c) {
  const std::string topic = c.topic();
  // Cluster mode: window, loads and plan are the owner's; answer with its answer.
  if (proxy_to_owner(ctx, c.req, c.res, topic, c.req.path)) return;
  auto s = ctx.reads.topic(topic);
  if (!s) return send_error(c.res, 404, "unknown topic '" + topic + "'");
  api::TopicDetail detail;
  detail.summary = to_api(*s);
  if (auto p = ctx.reads.pins(topic)) {
    for (const auto& [k, pin] : *p) detail.pinned.push_back(pin);
  }
  if (auto d = ctx.reads.denies(topic)) {
    for (const auto& [k, deny] : *d) detail.denied.push_back(deny);
  }
  detail.partition_load = ctx.reads.partition_load(topic).value_or(std::vector<double>{});
  detail.settings = effective_settings_json(ctx.cfg, *s);
  detail.rejected = ctx.reads.rejections(topic).value_or(std::vector<api::Rejection>{});
  send_json(c.res, 200, detail);
}

void get_top(const RouteContext& ctx, Call& c) {
  const std::string topic = c.topic();
  uint64_t n = 20;
  if (c.req.has_param("n") && (!parse_u64(c.req.get_param_value("n"), &n) || n < 1)) {
    return send_error(c.res, 400, "n must be a positive integer");
  }
  n = std::min<uint64_t>(n, 1000);
  // Cluster mode: only the owner has the topic's window; answer with its answer.
  if (proxy_to_owner(ctx, c.req, c.res, topic, c.req.path + "?n=" + std::to_string(n))) return;
  auto top = ctx.reads.top(topic, n);
  if (!top) return send_error(c.res, 404, "unknown topic '" + topic + "'");
  api::TopAnswer answer;
  answer.topic = topic;
  for (const auto& e : *top) answer.items.push_back(e);
  if (auto s = ctx.reads.topic(topic)) {
    answer.rate = s->rate;
    answer.window_total = s->window_total;
  }
  send_json(c.res, 200, answer);
}

void get_pins(const RouteContext& ctx, Call& c) {
  api::PinsAnswer answer;
  if (auto pins = ctx.reads.pins(c.topic())) {
    for (const auto& [k, p] : *pins) answer.pins.push_back(p);
  }
  send_json(c.res, 200, answer);
}

void get_policies(const RouteContext& ctx, Call& c) {
  api::PoliciesAnswer answer;
  if (auto policies = ctx.reads.policies(c.topic())) {
    for (const auto& [prefix, p] : *policies) answer.policies.push_back(p);
  }
  send_json(c.res, 200, answer);
}

void get_denies(const RouteContext& ctx, Call& c) {
  api::DeniesAnswer answer;
  if (auto denies = ctx.reads.denies(c.topic())) {
    for (const auto& [k, d] : *denies) answer.denies.push_back(d);
  }
  send_json(c.res, 200, answer);
}

}  // namespace

void add_topic_routes(Routes& routes, const RouteContext& ctx) {
  Admission producer;
  producer.auth = Auth::kProducer;
  const std::string topic(kTopicPath);
  routes.push_back({"GET", "/v1/topics", producer, [ctx](Call& c) { get_topics(ctx, c); }});
  routes.push_back({"GET", topic, producer, [ctx](Call& c) { get_topic(ctx, c); }});
  routes.push_back({"GET", topic + "/top", producer, [ctx](Call& c) { get_top(ctx, c); }});
  routes.push_back({"GET", topic + "/pins", producer, [ctx](Call& c) { get_pins(ctx, c); }});
  routes.push_back({"GET", topic + "/denies", producer, [ctx](Call& c) { get_denies(ctx, c); }});
  routes.push_back(
      {"GET", topic + "/policies", producer, [ctx](Call& c) { get_policies(ctx, c); }});
}

}  // namespace hotkey::coordinator
