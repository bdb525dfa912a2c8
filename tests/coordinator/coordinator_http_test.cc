// The HTTP API over real loopback sockets: long-poll fan-out and timeouts, ETags, auth,
// the bad-input table (every 4xx carries a JSON reason and changes nothing), metrics,
// health and the dashboard.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "hotkey/api_model.h"
#include "hotkey/report_batch.h"
#include "support/eventually.h"
#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

using nlohmann::json;
using test_support::eventually;
constexpr const char* kTopic = "orders";
const httplib::Headers kOperator{{"Authorization", "Bearer alice-operator-token"}};

std::string report_json(const std::string& producer, uint64_t seq,
                        std::map<std::string, uint64_t> counts = {{"a", 5}, {"b", 3}}) {
  return report_to_json(make_report(producer, kTopic, 8, seq, counts));
}

TEST(CoordinatorHttp, ListsSinceZeroTimeoutAndEtag) {
  Harness h(test_config(), true);
  auto c = h.client();
  auto r = c->Post("/v1/reports", report_json("p", 1), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;

  // No list yet: an empty version-0 list, at once.
  r = c->Get("/v1/hotkeys?topic=orders");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["version"], 0);
  EXPECT_EQ(r->get_header_value("ETag"), "\"0\"");
  // Nothing newer than 0 within 50 ms: 304.
  r = c->Get("/v1/hotkeys?topic=orders&since=0&wait_ms=50");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 304);

  json pin{{"key", "k"}, {"reason", "test"}};
  r = c->Post("/v1/topics/orders/pins", kOperator, pin.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const uint64_t v = json::parse(r->body)["version"];
  ASSERT_GE(v, 1u);

  r = c->Get("/v1/hotkeys?topic=orders&since=0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  json list = json::parse(r->body);
  EXPECT_EQ(list["version"], v);
  EXPECT_EQ(list["keys"][0]["key"], "k");
  EXPECT_EQ(list["keys"][0]["source"], "pinned");
  EXPECT_EQ(r->get_header_value("ETag"), "\"" + std::to_string(v) + "\"");
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-store");

  r = c->Get("/v1/hotkeys?topic=orders&since=" + std::to_string(v) + "&wait_ms=30");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 304);
  r = c->Get("/v1/hotkeys?topic=orders", {{"If-None-Match", "\"" + std::to_string(v) + "\""}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 304);
  r = c->Get("/v1/hotkeys?topic=orders", {{"If-None-Match", "\"0\""}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(CoordinatorHttp, TwoHundredWaitersAllReceiveTheChange) {
  CoordinatorConfig cfg = test_config();
  cfg.max_waiters = 256;
  Harness h(cfg, true);
  auto c = h.client();
  // Lists exist once the topic's partition count is known from a report.
  ASSERT_EQ(c->Post("/v1/reports", report_json("p", 1), "application/json")->status, 200);
  json pin{{"key", "first"}, {"reason", "setup"}};
  auto r = c->Post("/v1/topics/orders/pins", kOperator, pin.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200);
  const uint64_t v = json::parse(r->body)["version"];
  ASSERT_GE(v, 1u);

  constexpr int kWaiters = 200;
  std::atomic<int> got_new{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      auto wc = h.client();
      auto res = wc->Get("/v1/hotkeys?topic=orders&since=" + std::to_string(v) + "&wait_ms=60000");
      if (res && res->status == 200 && json::parse(res->body)["version"] == v + 1) {
        got_new.fetch_add(1);
      } else {
        other.fetch_add(1);
      }
      (void)i;
    });
    // Park them one after another: cpp-httplib listens with a backlog of 5, and a burst of 200
    // connects on a loaded machine ends in SYN retries with exponential backoff.
    eventually([&] { return h.coord().board().waiters() >= static_cast<size_t>(i + 1); });
  }
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == kWaiters; }))
      << "waiters parked: " << h.coord().board().waiters();
  pin["key"] = "second";
  r = c->Post("/v1/topics/orders/pins", kOperator, pin.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200);
  for (auto& t : threads) t.join();
  EXPECT_EQ(got_new.load(), kWaiters);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(h.coord().board().waiters(), 0u);
}

// hotkey_reports_total{topic=...} from /metrics (accepted reports).
uint64_t accepted_reports(httplib::Client& c, const std::string& topic) {
  auto r = c.Get("/metrics");
  if (!r) return 0;
  const std::string prefix = "hotkey_reports_total{topic=\"" + topic + "\"} ";
  auto at = r->body.find(prefix);
  if (at == std::string::npos) return 0;
  return std::stoull(r->body.substr(at + prefix.size()));
}

// POST /v1/reports/batch: every report of the batch gets its own result, so one bad report
// does not reject the others; both forms; a bad envelope changes nothing.
TEST(CoordinatorHttp, ReportBatchIngestsEachReportWithItsOwnResult) {
  Harness h(test_config(), true);
  auto c = h.client();
  auto other = [](const std::string& producer, uint64_t seq) {
    return report_to_json(make_report(producer, "payments", 8, seq, {{"a", 5}}));
  };
  std::string bad = report_json("p", 2);
  bad.replace(bad.find("\"partitions\":8"), 14, "\"partitions\":0");
  std::vector<std::string> parts = {report_json("p", 1), bad, other("p", 3), report_json("p", 1)};
  std::vector<std::string_view> views(parts.begin(), parts.end());
  auto r = c->Post("/v1/reports/batch", encode_report_batch_json(views), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json results = json::parse(r->body).at("results");
  ASSERT_EQ(results.size(), 4u) << r->body;
  EXPECT_EQ(results[0]["status"], 200);
  EXPECT_EQ(results[0]["accepted"], true);
  EXPECT_EQ(results[1]["status"], 400);
  EXPECT_NE(results[1]["error"].get<std::string>().find("partitions"), std::string::npos);
  EXPECT_EQ(results[2]["status"], 200);
  EXPECT_EQ(results[3]["status"], 200);
  EXPECT_EQ(results[3]["duplicate"], true);  // same producer and seq as the first
  EXPECT_EQ(parse_report_batch_statuses(r->body), (std::vector<int>{200, 400, 200, 200}));
  EXPECT_EQ(accepted_reports(*c, kTopic), 1u);
  EXPECT_EQ(accepted_reports(*c, "payments"), 1u);

  // Binary form.
  std::vector<std::string> bins = {
      encode_report_binary(make_report("q", kTopic, 8, 1, {{"a", 5}})),
      encode_report_binary(make_report("q", "payments", 8, 2, {{"a", 5}}))};
  std::vector<std::string_view> bin_views(bins.begin(), bins.end());
  r = c->Post("/v1/reports/batch", encode_report_batch_binary(bin_views),
              std::string(kReportBatchBinaryContentType));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(parse_report_batch_statuses(r->body), (std::vector<int>{200, 200}));
  EXPECT_EQ(accepted_reports(*c, kTopic), 2u);

  // Envelope errors: nothing ingested.
  r = c->Post("/v1/reports/batch", R"({"report": []})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(error_of(r).find("reports"), std::string::npos);
  std::string truncated = encode_report_batch_binary(bin_views);
  truncated.pop_back();
  r = c->Post("/v1/reports/batch", truncated, std::string(kReportBatchBinaryContentType));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  r = c->Post("/v1/reports/batch", "x", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415);
  EXPECT_EQ(accepted_reports(*c, kTopic), 2u);
}

TEST(CoordinatorHttp, BadInputIsRejectedWithReasonAndChangesNothing) {
  CoordinatorConfig cfg = test_config();
  cfg.max_body_bytes = 64 * 1024;
  cfg.limits.max_items = 100;
  Harness h(cfg, true);
  auto c = h.client();
  ASSERT_EQ(c->Post("/v1/reports", report_json("p", 1), "application/json")->status, 200);
  json pin{{"key", "k"}, {"reason", "setup"}};
  ASSERT_EQ(c->Post("/v1/topics/orders/pins", kOperator, pin.dump(), "application/json")->status,
            200);
  const std::string list_before = c->Get("/v1/hotkeys?topic=orders")->body;
  const auto topic_before = h.coord().topic(kTopic);
  const size_t audit_before = h.coord().audit(100).size();

  json good = json::parse(report_json("q", 1));
  auto variant = [&](const std::function<void(json&)>& edit) {
    json j = good;
    edit(j);
    return j.dump();
  };
  std::map<std::string, uint64_t> many;
  for (int i = 0; i < 101; ++i) many["k" + std::to_string(i)] = 1;
  std::string huge(70 * 1024, 'x');

  struct Case {
    std::string name;
    std::string path;
    std::string body;
    std::string content_type;
    httplib::Headers headers;
    int status;
  };
  std::vector<Case> cases = {
      {"malformed JSON", "/v1/reports", "{\"producer\": ", "application/json", {}, 400},
      {"not an object", "/v1/reports", "[1,2]", "application/json", {}, 400},
      {"wrong type",
       "/v1/reports",
       variant([](json& j) { j["partitions"] = "8"; }),
       "application/json",
       {},
       400},
      {"negative count",
       "/v1/reports",
       variant([](json& j) { j["sketch"]["items"][0]["count"] = -5; }),
       "application/json",
       {},
       400},
      {"negative total",
       "/v1/reports",
       variant([](json& j) { j["total"] = -1; }),
       "application/json",
       {},
       400},
      {"unknown hash",
       "/v1/reports",
       variant([](json& j) { j["hash"] = "sha1"; }),
       "application/json",
       {},
       400},
      {"bad base64",
       "/v1/reports",
       variant([](json& j) {
         auto& item = j["sketch"]["items"][0];
         item.erase("key");
         item["key_b64"] = "!!not base64!!";
       }),
       "application/json",
       {},
       400},
      {"bad topic",
       "/v1/reports",
       variant([](json& j) { j["topic"] = "no spaces allowed"; }),
       "application/json",
       {},
       400},
      {"too many items", "/v1/reports", report_json("q", 1, many), "application/json", {}, 413},
      {"huge body", "/v1/reports", huge, "application/json", {}, 413},
      {"binary garbage",
       "/v1/reports",
       "HKR\x01garbage",
       std::string(kReportBinaryContentType),
       {},
       400},
      {"wrong content type", "/v1/reports", report_json("q", 1), "text/plain", {}, 415},
      {"pin without auth",
       "/v1/topics/orders/pins",
       json{{"key", "x"}, {"reason", "r"}}.dump(),
       "application/json",
       {},
       401},
      {"pin with wrong token",
       "/v1/topics/orders/pins",
       json{{"key", "x"}, {"reason", "r"}}.dump(),
       "application/json",
       {{"Authorization", "Bearer alice-operator-tokeN"}},
       401},
      {"pin bad base64", "/v1/topics/orders/pins", json{{"key_b64", "@@@"}, {"reason", "r"}}.dump(),
       "application/json", kOperator, 400},
      {"pin both keys", "/v1/topics/orders/pins",
       json{{"key", "a"}, {"key_b64", "YQ=="}, {"reason", "r"}}.dump(), "application/json",
       kOperator, 400},
      {"pin without reason", "/v1/topics/orders/pins", json{{"key", "x"}}.dump(),
       "application/json", kOperator, 400},
      {"pin negative salts", "/v1/topics/orders/pins",
       json{{"key", "x"}, {"reason", "r"}, {"salts", -2}}.dump(), "application/json", kOperator,
       400},
      {"pin string ttl", "/v1/topics/orders/pins",
       json{{"key", "x"}, {"reason", "r"}, {"ttl_s", "1h"}}.dump(), "application/json", kOperator,
       400},
      {"pin malformed", "/v1/topics/orders/pins", "{", "application/json", kOperator, 400},
      {"deny without auth",
       "/v1/topics/orders/denies",
       json{{"key", "x"}, {"reason", "r"}}.dump(),
       "application/json",
       {},
       401},
  };
  for (const auto& tc : cases) {
    auto r = c->Post(tc.path, tc.headers, tc.body, tc.content_type);
    ASSERT_TRUE(r) << tc.name << ": no response";
    EXPECT_EQ(r->status, tc.status) << tc.name << ": " << r->body;
    EXPECT_FALSE(error_of(r).empty()) << tc.name;
    EXPECT_EQ(error_of(r).rfind("<no JSON", 0), std::string::npos) << tc.name << ": " << r->body;
  }
  // Query-side errors.
  struct GetCase {
    std::string path;
    httplib::Headers headers;
    int status;
  };
  for (const auto& g : std::vector<GetCase>{
           {"/v1/hotkeys?topic=bad%20topic", {}, 400},
           {"/v1/hotkeys?topic=orders&since=-1", {}, 400},
           {"/v1/hotkeys?topic=orders&since=1&wait_ms=abc", {}, 400},
           {"/v1/topics/orders/top?n=0", {}, 400},
           {"/v1/topics/unknown", {}, 404},
           {"/v1/audit", {}, 401},
           {"/v1/audit?limit=x", kOperator, 400},
           {"/v1/nothing", {}, 404},
       }) {
    auto r = c->Get(g.path, g.headers);
    ASSERT_TRUE(r) << g.path;
    EXPECT_EQ(r->status, g.status) << g.path << ": " << r->body;
    EXPECT_EQ(error_of(r).rfind("<no", 0), std::string::npos) << g.path << ": " << r->body;
  }
  auto del = c->Delete("/v1/topics/orders/pins?key=k");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 401);
  del = c->Delete("/v1/topics/orders/pins?key_b64=%25%25", kOperator);
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 400);

  // Still up, nothing changed.
  auto health = c->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(c->Get("/v1/hotkeys?topic=orders")->body, list_before);
  auto topic_after = h.coord().topic(kTopic);
  EXPECT_EQ(topic_after->producers, topic_before->producers);
  EXPECT_EQ(topic_after->version, topic_before->version);
  EXPECT_EQ(topic_after->pins, topic_before->pins);
  EXPECT_EQ(h.coord().audit(100).size(), audit_before);
  EXPECT_EQ(h.coord().topics().size(), 1u);
  std::string metrics = c->Get("/metrics")->body;
  EXPECT_NE(metrics.find("hotkey_reports_rejected_total{reason=\"decode\"}"), std::string::npos);
  EXPECT_NE(metrics.find("hotkey_reports_rejected_total{reason=\"too_many_items\"}"),
            std::string::npos);
  EXPECT_NE(metrics.find("hotkey_reports_rejected_total{reason=\"too_large\"}"), std::string::npos);
}

TEST(CoordinatorHttp, ProducerTokenGuardsReportsAndLists) {
  CoordinatorConfig cfg = test_config();
  cfg.producer_token = "producer-token-123";
  Harness h(cfg, true);
  auto c = h.client();
  auto r = c->Post("/v1/reports", report_json("p", 1), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_FALSE(error_of(r).empty());
  EXPECT_EQ(c->Get("/v1/hotkeys?topic=orders")->status, 401);
  httplib::Headers auth{{"Authorization", "Bearer producer-token-123"}};
  r = c->Post("/v1/reports", auth, report_json("p", 1), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(c->Get("/v1/hotkeys?topic=orders", auth)->status, 200);
  // Operator tokens are not producer tokens' substitutes for operator calls, and vice versa.
  EXPECT_EQ(c->Post("/v1/topics/orders/denies", auth, json{{"key", "a"}, {"reason", "r"}}.dump(),
                    "application/json")
                ->status,
            401);
}

TEST(CoordinatorHttp, OperatorFlowAuditTopicsMetricsHealthAndDashboard) {
  Harness h(test_config(), true);
  auto c = h.client();
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    auto r = c->Post("/v1/reports", report_json("p", seq, {{"hot", 800}, {"x", 100}, {"y", 100}}),
                     "application/json");
    ASSERT_EQ(r->status, 200) << r->body;
  }
  // Binary encoding of the same report model.
  Report bin = make_report("b", kTopic, 8, 1, {{"hot", 10}});
  auto r = c->Post("/v1/reports", encode_report_binary(bin), std::string(kReportBinaryContentType));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  h.coord().tick();

  r = c->Post("/v1/topics/orders/denies", kOperator,
              json{{"key_b64", "/wA="}, {"reason", "binary key"}}.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  r = c->Post("/v1/topics/orders/pins", kOperator,
              json{{"key", "vip"}, {"reason", "launch"}, {"salts", 3}, {"ttl_s", 3600}}.dump(),
              "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  json list = json::parse(c->Get("/v1/hotkeys?topic=orders")->body);
  EXPECT_EQ(list["denied"][0]["key_b64"], "/wA=");
  EXPECT_EQ(c->Delete("/v1/topics/orders/denies?key_b64=%2FwA%3D", kOperator)->status, 200);
  EXPECT_EQ(c->Delete("/v1/topics/orders/pins?key=nope", kOperator)->status, 404);

  json audit = json::parse(c->Get("/v1/audit?limit=10", kOperator)->body);
  ASSERT_EQ(audit["entries"].size(), 3u);
  EXPECT_EQ(audit["entries"][0]["action"], "allow");
  EXPECT_EQ(audit["entries"][1]["action"], "pin");
  EXPECT_EQ(audit["entries"][1]["who"], "alice");
  EXPECT_EQ(audit["entries"][1]["detail"]["reason"], "launch");
  EXPECT_EQ(audit["entries"][1]["detail"].dump().find("alice-operator-token"), std::string::npos);

  json topics = json::parse(c->Get("/v1/topics")->body);
  ASSERT_EQ(topics["topics"].size(), 1u);
  EXPECT_EQ(topics["topics"][0]["topic"], "orders");
  EXPECT_EQ(topics["topics"][0]["partitions"], 8);
  EXPECT_EQ(topics["topics"][0]["producers"], 2);
  json one = json::parse(c->Get("/v1/topics/orders")->body);
  EXPECT_EQ(one["pinned"][0]["key"], "vip");
  json top = json::parse(c->Get("/v1/topics/orders/top?n=2")->body);
  ASSERT_EQ(top["items"].size(), 2u);
  EXPECT_EQ(top["items"][0]["key"], "hot");
  EXPECT_GT(top["items"][0]["share"].get<double>(), 0.5);

  std::string metrics = c->Get("/metrics")->body;
  for (const char* name :
       {"hotkey_reports_total{topic=\"orders\"}", "hotkey_report_entries_total{topic=\"orders\"}",
        "hotkey_ingest_latency_seconds_bucket", "hotkey_hot_keys{topic=\"orders\"}",
        "hotkey_list_version{topic=\"orders\"}", "hotkey_list_changes_total{topic=\"orders\"}",
        "hotkey_longpoll_waiters", "hotkey_producers{topic=\"orders\"}",
        "hotkey_topic_rate{topic=\"orders\"}", "hotkey_partition_skew{topic=\"orders\"}",
        "hotkey_idle_partitions_ratio{topic=\"orders\"}", "hotkey_store_write_latency_seconds",
        "hotkey_store_healthy 1"}) {
    EXPECT_NE(metrics.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(c->Get("/healthz")->status, 200);
  EXPECT_EQ(c->Get("/readyz")->status, 200);
  auto page = c->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<html"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("default-src 'self'"),
            std::string::npos);
  EXPECT_EQ(c->Get("/static/../../etc/passwd")->status, 404);
}

// Every JSON answer is exactly its API model (hotkey/api_model.h): read into the model and
// written back, each body comes out byte for byte as the server sent it, so hotkeyctl and the
// tests read every field the server writes.
template <typename T>
void expect_model_round_trip(const httplib::Result& r, const char* what) {
  ASSERT_TRUE(r) << what;
  ASSERT_EQ(r->status, 200) << what << ": " << r->body;
  EXPECT_EQ(api::dump(json::parse(r->body).get<T>()), r->body) << what;
}

TEST(CoordinatorHttp, EveryAnswerIsItsApiModel) {
  Harness h(test_config(), true);
  auto c = h.client();
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    auto r = c->Post("/v1/reports", report_json("p", seq, {{"hot", 800}, {"x", 100}}),
                     "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(api::dump(json::parse(r->body).get<api::ReportResult>()), r->body);
  }
  h.coord().tick();
  auto r = c->Post("/v1/topics/orders/pins", kOperator,
                   json{{"key", "vip"}, {"reason", "launch"}, {"salts", 3}, {"ttl_s", 60}}.dump(),
                   "application/json");
  expect_model_round_trip<api::OperatorResult>(r, "pin");
  r = c->Post("/v1/topics/orders/denies", kOperator,
              json{{"key_b64", "/wA="}, {"reason", "binary"}}.dump(), "application/json");
  expect_model_round_trip<api::OperatorResult>(r, "deny");

  expect_model_round_trip<api::TopicsAnswer>(c->Get("/v1/topics"), "topics");
  expect_model_round_trip<api::TopicDetail>(c->Get("/v1/topics/orders"), "topic");
  expect_model_round_trip<api::TopAnswer>(c->Get("/v1/topics/orders/top?n=5"), "top");
  expect_model_round_trip<api::PinsAnswer>(c->Get("/v1/topics/orders/pins"), "pins");
  expect_model_round_trip<api::DeniesAnswer>(c->Get("/v1/topics/orders/denies"), "denies");
  expect_model_round_trip<api::AuditAnswer>(c->Get("/v1/audit", kOperator), "audit");
  expect_model_round_trip<api::ClusterView>(c->Get("/v1/cluster"), "cluster");
  expect_model_round_trip<api::Health>(c->Get("/healthz"), "healthz");
  expect_model_round_trip<api::Readiness>(c->Get("/readyz"), "readyz");
  // The models were not trivially empty.
  const auto detail = json::parse(c->Get("/v1/topics/orders")->body).get<api::TopicDetail>();
  EXPECT_EQ(detail.summary.topic, "orders");
  ASSERT_EQ(detail.pinned.size(), 1u);
  EXPECT_EQ(detail.pinned[0].salts, 3u);
  ASSERT_EQ(detail.denied.size(), 1u);
  EXPECT_EQ(detail.denied[0].key, std::string("\xff\x00", 2));
  // A refusal is the Error model too.
  r = c->Delete("/v1/topics/orders/pins?key=nope", kOperator);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(api::dump(json::parse(r->body).get<api::Error>()), r->body);
}

// The route table decides where a body may go: a known path that takes none answers 413, an
// unknown path 404, both without reading the body.
TEST(CoordinatorHttp, BodiesGoOnlyToRoutesThatTakeOne) {
  Harness h(test_config(), true);
  auto c = h.client();
  for (const char* path : {"/v1/hotkeys", "/v1/topics/orders/top", "/v1/topics/orders", "/v1/audit",
                           "/healthz", "/index.html", "/static/app.js"}) {
    auto r = c->Post(path, "{}", "application/json");
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 413) << path;
    EXPECT_NE(error_of(r).find("takes no request body"), std::string::npos) << path;
  }
  for (const char* path : {"/v1/nowhere", "/v1/topics/orders/pins/extra", "/index.htm"}) {
    auto r = c->Post(path, "{}", "application/json");
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_NE(error_of(r).find("no such endpoint"), std::string::npos) << path;
  }
  // The routes that take one still do.
  auto r = c->Post("/v1/reports", report_json("p", 1), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = c->Post("/v1/topics/orders/pins", kOperator, json{{"key", "k"}, {"reason", "r"}}.dump(),
              "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST(CoordinatorHttp, GracefulStopReleasesWaiters) {
  Harness h(test_config(), true);
  std::atomic<int> status{0};
  std::thread waiter([&] {
    auto wc = h.client();
    auto r = wc->Get("/v1/hotkeys?topic=orders&since=5&wait_ms=60000");
    status = r ? r->status : -1;
  });
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 1; }));
  h.shutdown();
  waiter.join();
  EXPECT_EQ(status.load(), 304);
}

}  // namespace
}  // namespace hotkey::coordinator::test
