// docs/openapi.yaml against the real coordinator: every documented operation, built from the
// document's own examples, must answer with a documented status and content type, and its JSON
// body must match the documented schema. Also: the Prometheus metric names the deploy/ rules
// and dashboard rely on are served. The document is read through python3 + PyYAML (the only
// YAML parser on these machines); the test is skipped, saying why, when they or the
// coordinator binary are missing.
#include <httplib.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "deploy_coordinator.h"
#include "gtest/gtest.h"
#include "support/child_process.h"
#include "support/temp_dir.h"
#include "support/url_encode.h"

namespace hotkey::deploy_test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using test_support::coordinator_binary;
using test_support::CoordinatorProcess;
using test_support::TempDir;
using test_support::url_encode;

const fs::path kRepoRoot = fs::path(HOTKEY_TEST_DATA_DIR).parent_path().parent_path();

// The metric contract between the coordinator and deploy/ (docs/OPERATIONS.md, "Metrics").
constexpr std::array<const char*, 14> kContractMetrics = {"hotkey_reports_total",
                                                          "hotkey_report_entries_total",
                                                          "hotkey_reports_rejected_total",
                                                          "hotkey_ingest_latency_seconds",
                                                          "hotkey_hot_keys",
                                                          "hotkey_list_version",
                                                          "hotkey_list_changes_total",
                                                          "hotkey_longpoll_waiters",
                                                          "hotkey_producers",
                                                          "hotkey_topic_rate",
                                                          "hotkey_partition_skew",
                                                          "hotkey_idle_partitions_ratio",
                                                          "hotkey_store_write_latency_seconds",
                                                          "hotkey_store_healthy"};

// docs/openapi.yaml as JSON, or nullopt with *why set.
std::optional<Json> load_openapi(std::string* why) {
  const fs::path spec = kRepoRoot / "docs" / "openapi.yaml";
  if (!fs::exists(spec)) {
    *why = spec.string() + " does not exist";
    return std::nullopt;
  }
  const std::string cmd =
      "python3 -c 'import json,sys,yaml; json.dump(yaml.safe_load(open(sys.argv[1])), "
      "sys.stdout)' '" +
      spec.string() + "'";
  std::string out;
  if (test_support::run_shell(cmd, &out) == test_support::kStillRunning) {
    *why = "cannot run python3";
    return std::nullopt;
  }
  Json doc = Json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    *why = "python3 with PyYAML (python3-yaml) is needed to read the OpenAPI document: " +
           out.substr(0, 300);
    return std::nullopt;
  }
  return doc;
}

// Follows a local "$ref" ("#/components/...") until a non-reference node.
const Json& deref(const Json& spec, const Json& node) {
  const Json* cur = &node;
  for (int depth = 0; depth < 16 && cur->is_object() && cur->contains("$ref"); ++depth) {
    const std::string ref = (*cur)["$ref"].get<std::string>();
    const Json* target = &spec;
    std::istringstream parts(ref.substr(2));  // skip "#/"
    std::string part;
    while (std::getline(parts, part, '/')) target = &target->at(part);
    cur = target;
  }
  return *cur;
}

// A small JSON Schema (OpenAPI 3.0 subset) checker: $ref, allOf, oneOf, type, required,
// properties, items, enum. Formats and additional properties are not checked.
void check_schema(const Json& spec, const Json& schema_node, const nlohmann::json& value,
                  const std::string& where, std::vector<std::string>* errors) {
  const Json& schema = deref(spec, schema_node);
  if (schema.contains("allOf")) {
    for (const Json& part : schema["allOf"]) check_schema(spec, part, value, where, errors);
  }
  if (schema.contains("oneOf")) {
    size_t matching = 0;
    for (const Json& part : schema["oneOf"]) {
      std::vector<std::string> sub;
      check_schema(spec, part, value, where, &sub);
      if (sub.empty()) ++matching;
    }
    if (matching != 1) {
      errors->push_back(where + ": matches " + std::to_string(matching) +
                        " of the oneOf alternatives, not exactly one");
    }
  }
  if (schema.contains("type")) {
    const std::string type = schema["type"].get<std::string>();
    const bool ok =
        (type == "object" && value.is_object()) || (type == "array" && value.is_array()) ||
        (type == "string" && value.is_string()) ||
        (type == "integer" && value.is_number_integer()) ||
        (type == "number" && value.is_number()) || (type == "boolean" && value.is_boolean());
    if (!ok) {
      errors->push_back(where + ": expected " + type + ", got " + value.dump().substr(0, 80));
      return;
    }
  }
  if (schema.contains("enum")) {
    bool found = false;
    for (const Json& e : schema["enum"]) found |= nlohmann::json::parse(e.dump()) == value;
    if (!found) errors->push_back(where + ": " + value.dump() + " is not in the enum");
  }
  if (value.is_object()) {
    if (schema.contains("required")) {
      for (const Json& name : schema["required"]) {
        if (!value.contains(name.get<std::string>())) {
          errors->push_back(where + ": required property '" + name.get<std::string>() +
                            "' missing");
        }
      }
    }
    if (schema.contains("properties")) {
      for (const auto& [name, sub] : schema["properties"].items()) {
        if (value.contains(name)) check_schema(spec, sub, value[name], where + "." + name, errors);
      }
    }
  }
  if (value.is_array() && schema.contains("items")) {
    for (size_t i = 0; i < value.size(); ++i) {
      check_schema(spec, schema["items"], value[i], where + "[" + std::to_string(i) + "]", errors);
    }
  }
}

std::string example_text(const Json& example) {
  return example.is_string() ? example.get<std::string>() : example.dump();
}

struct Operation {
  std::string method;  // lower case, as in the document
  std::string path;    // the template, e.g. /v1/topics/{topic}
  Json op;
};

// Operations in an order that lets the examples build on each other: writes first (a report
// creates the topic), then reads, then deletes (of what the writes created), innermost path
// first: a topic's pins and denies before the topic itself.
std::vector<Operation> operations(const Json& spec) {
  std::vector<Operation> ops;
  for (const auto& [path, item] : spec["paths"].items()) {
    for (const auto& [method, op] : item.items()) {
      if (method == "get" || method == "post" || method == "put" || method == "delete" ||
          method == "patch") {
        ops.push_back({method, path, op});
      }
    }
  }
  auto rank = [](const std::string& m) { return m == "post" ? 0 : m == "delete" ? 2 : 1; };
  std::stable_sort(ops.begin(), ops.end(), [&](const Operation& a, const Operation& b) {
    if (rank(a.method) != rank(b.method)) return rank(a.method) < rank(b.method);
    return rank(a.method) == 2 && a.path.size() > b.path.size();
  });
  return ops;
}

// The token an operation needs (operator wins over producer), or "" when it has no security.
std::string token_for(const Operation& o) {
  if (!o.op.contains("security")) return "";
  bool producer = false;
  for (const Json& req : o.op["security"]) {
    if (req.contains("operatorAuth")) return kOperatorToken;
    producer |= req.contains("producerAuth");
  }
  return producer ? kProducerToken : "";
}

struct Request {
  std::string target;  // path with query
  httplib::Headers headers;
  std::optional<std::string> json_body;
};

Request build_request(const Json& spec, const Operation& o, const std::string& token) {
  Request r;
  std::string path = o.path;
  std::string query;
  if (o.op.contains("parameters")) {
    for (const Json& p_node : o.op["parameters"]) {
      const Json& p = deref(spec, p_node);
      if (!p.contains("example")) continue;
      const std::string name = p["name"].get<std::string>();
      const std::string value = example_text(p["example"]);
      const std::string in = p["in"].get<std::string>();
      if (in == "path") {
        const std::string placeholder = "{" + name + "}";
        if (auto pos = path.find(placeholder); pos != std::string::npos) {
          path.replace(pos, placeholder.size(), url_encode(value));
        }
      } else if (in == "query") {
        query += (query.empty() ? "?" : "&") + name + "=" + url_encode(value);
      } else if (in == "header") {
        r.headers.emplace(name, value);
      }
    }
  }
  r.target = path + query;
  if (!token.empty()) r.headers.emplace("Authorization", "Bearer " + token);
  if (o.op.contains("requestBody")) {
    const Json& body = deref(spec, o.op["requestBody"]);
    if (body["content"].contains("application/json") &&
        body["content"]["application/json"].contains("example")) {
      r.json_body = body["content"]["application/json"]["example"].dump();
    }
  }
  return r;
}

httplib::Result send(httplib::Client& cli, const std::string& method, const Request& r,
                     const std::string& raw_body = "") {
  const std::string body = r.json_body ? *r.json_body : raw_body;
  if (method == "get") return cli.Get(r.target, r.headers);
  if (method == "post") return cli.Post(r.target, r.headers, body, "application/json");
  if (method == "put") return cli.Put(r.target, r.headers, body, "application/json");
  if (method == "patch") return cli.Patch(r.target, r.headers, body, "application/json");
  return cli.Delete(r.target, r.headers);
}

std::string media_type(const std::string& content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return t;
}

// Checks one answer against the operation's documented responses; returns the problems.
std::vector<std::string> check_response(const Json& spec, const Operation& o,
                                        const httplib::Response& res) {
  std::vector<std::string> problems;
  const std::string what = o.method + " " + o.path + " -> " + std::to_string(res.status);
  const Json& responses = o.op["responses"];
  const std::string code = std::to_string(res.status);
  if (!responses.contains(code) && !responses.contains("default")) {
    problems.push_back(what + ": status not documented; body: " + res.body.substr(0, 200));
    return problems;
  }
  const Json& doc = deref(spec, responses.contains(code) ? responses[code] : responses["default"]);
  if (!doc.contains("content")) {
    if (!res.body.empty()) problems.push_back(what + ": documented without a body, got one");
    return problems;
  }
  const std::string type = media_type(res.get_header_value("Content-Type"));
  const Json* media = nullptr;
  for (const auto& [name, m] : doc["content"].items()) {
    if (name == type || name == "*/*") media = &m;
  }
  if (media == nullptr) {
    problems.push_back(what + ": content type '" + type + "' not documented");
    return problems;
  }
  if (type == "application/json") {
    auto body = nlohmann::json::parse(res.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) {
      problems.push_back(what + ": body is not JSON: " + res.body.substr(0, 200));
    } else if (media->contains("schema")) {
      check_schema(spec, (*media)["schema"], body, what + " body", &problems);
    }
  }
  return problems;
}

class OpenApiConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ = coordinator_binary();
    if (!fs::exists(binary_)) {
      GTEST_SKIP() << binary_ << " is not built yet (build the hotkey-coordinator target, or "
                   << "set HOTKEY_COORDINATOR_BIN)";
    }
    std::string why;
    auto spec = load_openapi(&why);
    if (!spec) GTEST_SKIP() << why;
    spec_ = std::move(*spec);
    tmp_ = std::make_unique<TempDir>();
    std::string error;
    proc_ = test_support::start_coordinator(
        deploy_options(binary_, tmp_->path() / "data", tmp_->path() / "log"), &error);
    ASSERT_NE(proc_, nullptr) << error;
    cli_ = std::make_unique<httplib::Client>("127.0.0.1", proc_->port());
    cli_->set_read_timeout(30, 0);
  }

  void TearDown() override {
    // An idle keep-alive connection would hold a server worker until keep_alive_timeout_s.
    cli_.reset();
    if (proc_) {
      EXPECT_EQ(proc_->terminate(), 0) << "unclean exit on SIGTERM; log:\n" << proc_->log();
    }
  }

  std::string binary_;
  Json spec_;
  std::unique_ptr<TempDir> tmp_;
  std::unique_ptr<CoordinatorProcess> proc_;
  std::unique_ptr<httplib::Client> cli_;
};

TEST_F(OpenApiConformance, EveryDocumentedOperationAnswersAsDocumented) {
  std::vector<std::string> problems;
  size_t checked = 0;
  for (const Operation& o : operations(spec_)) {
    SCOPED_TRACE(o.method + " " + o.path);
    const std::string token = token_for(o);
    const Request req = build_request(spec_, o, token);
    auto res = send(*cli_, o.method, req);
    ASSERT_TRUE(res) << o.method << " " << req.target << ": no answer ("
                     << httplib::to_string(res.error()) << "); log:\n"
                     << proc_->log();
    ++checked;
    // The document's examples are valid requests: they must succeed.
    if (res->status >= 400) {
      problems.push_back(o.method + " " + req.target + ": the documented example failed with " +
                         std::to_string(res->status) + ": " + res->body.substr(0, 300));
    }
    for (auto& p : check_response(spec_, o, *res)) problems.push_back(std::move(p));

    // Without (or with a wrong) token, a secured operation answers a documented 401.
    if (!token.empty()) {
      for (const std::string& bad : {std::string(), std::string("not-the-token")}) {
        Request anon = build_request(spec_, o, bad);
        auto r401 = send(*cli_, o.method, anon);
        ASSERT_TRUE(r401);
        if (r401->status != 401) {
          problems.push_back(o.method + " " + o.path + " with token '" + bad +
                             "': expected 401, got " + std::to_string(r401->status));
        } else {
          EXPECT_TRUE(r401->has_header("WWW-Authenticate")) << o.method << " " << o.path;
        }
        for (auto& p : check_response(spec_, o, *r401)) problems.push_back(std::move(p));
      }
    }
    // A malformed JSON body is a documented 400 with an error message, never a 5xx.
    if (req.json_body) {
      Request bad = req;
      bad.json_body = "{\"key\": ";
      auto r400 = send(*cli_, o.method, bad);
      ASSERT_TRUE(r400);
      if (r400->status != 400) {
        problems.push_back(o.method + " " + o.path + " with malformed JSON: expected 400, got " +
                           std::to_string(r400->status));
      }
      for (auto& p : check_response(spec_, o, *r400)) problems.push_back(std::move(p));
    }
  }
  EXPECT_GE(checked, 14u);
  for (const auto& p : problems) ADD_FAILURE() << p;
}

TEST_F(OpenApiConformance, LongPollWithCurrentVersionAnswers304WithoutBody) {
  httplib::Headers auth{{"Authorization", std::string("Bearer ") + kProducerToken}};
  auto first = cli_->Get("/v1/hotkeys?topic=orders", auth);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  const std::string etag = first->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());
  auto list = nlohmann::json::parse(first->body);
  const auto version = list["version"].get<uint64_t>();
  EXPECT_EQ(etag, "\"" + std::to_string(version) + "\"");

  auto same =
      cli_->Get("/v1/hotkeys?topic=orders&since=" + std::to_string(version) + "&wait_ms=20", auth);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 304);
  EXPECT_TRUE(same->body.empty());
  const Operation op{"get", "/v1/hotkeys", spec_["paths"]["/v1/hotkeys"]["get"]};
  for (const auto& p : check_response(spec_, op, *same)) ADD_FAILURE() << p;

  httplib::Headers etag_auth = auth;
  etag_auth.emplace("If-None-Match", etag);
  auto by_etag = cli_->Get("/v1/hotkeys?topic=orders&wait_ms=20", etag_auth);
  ASSERT_TRUE(by_etag);
  EXPECT_EQ(by_etag->status, 304);
}

TEST_F(OpenApiConformance, ServesEveryMetricTheRulesAndDashboardQuery) {
  // Traffic first, so that labelled families have children.
  const Json& example = spec_["paths"]["/v1/reports"]["post"]["requestBody"]["content"]
                             ["application/json"]["example"];
  httplib::Headers auth{{"Authorization", std::string("Bearer ") + kProducerToken}};
  auto ok = cli_->Post("/v1/reports", auth, example.dump(), "application/json");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  auto rejected = cli_->Post("/v1/reports", auth, "{}", "application/json");
  ASSERT_TRUE(rejected);
  EXPECT_EQ(rejected->status, 400);
  cli_->Get("/readyz");

  auto metrics = cli_->Get("/metrics");
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200);
  std::set<std::string> families;
  std::istringstream lines(metrics->body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      families.insert(line.substr(7, line.find(' ', 7) - 7));
    }
  }
  for (const char* name : kContractMetrics) {
    EXPECT_TRUE(families.count(name)) << name << " is not served by /metrics";
  }
}

}  // namespace
}  // namespace hotkey::deploy_test
