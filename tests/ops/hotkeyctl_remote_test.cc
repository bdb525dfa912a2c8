// hotkeyctl's remote commands as operators run them: the built hotkeyctl binary against the
// built hotkey-coordinator, a real process on a loopback port with a temp RocksDB directory,
// fed with real producer reports over HTTP.
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hotkey/key_codec.h"
#include "hotkey/partitioner.h"
#include "hotkey/report.h"
#include "support/child_process.h"
#include "support/coordinator_process.h"
#include "support/eventually.h"
#include "support/temp_dir.h"

namespace hotkey {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_support::eventually;

constexpr const char* kToken = "ops-test-operator-token";
constexpr const char* kTopic = "orders";
constexpr int32_t kPartitions = 12;

using test_support::read_file;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A hotkey-coordinator process on 127.0.0.1:<ephemeral> with its own data directory (the
// shared launcher: the port comes from its "listening" log line, so there is no
// pick-then-bind race).
class CoordinatorProcess {
 public:
  CoordinatorProcess() = default;
  ~CoordinatorProcess() { stop(); }
  CoordinatorProcess(const CoordinatorProcess&) = delete;
  CoordinatorProcess& operator=(const CoordinatorProcess&) = delete;

  void start() {
    const fs::path config = dir_.path() / "config.json";
    // Detection right away and a fast planning cadence keep the tests short.
    std::ofstream(config) << R"({"warmup_ms": 0, "plan_interval_ms": 100, "keep_alive_timeout_s": 1,
              "topics": {"capped": {"max_hot_keys": 2}}})";
    test_support::CoordinatorOptions o;
    o.data = dir_.path() / "data";
    o.config = config;
    o.log = dir_.path() / "coordinator.log";
    o.extra_args = {"--operator-token", std::string("ops=") + kToken};
    std::string error;
    proc_ = test_support::start_coordinator(o, &error);
    ASSERT_NE(proc_, nullptr) << error;
    url_ = proc_->url();
    client_ = std::make_unique<httplib::Client>(url_);
    ASSERT_TRUE(eventually([&] {
      auto r = client_->Get("/healthz");
      return r && r->status == 200;
    }));
  }

  void stop() {
    client_.reset();
    if (proc_) proc_->terminate();
    proc_.reset();
  }

  const std::string& url() const { return url_; }
  httplib::Client& http() { return *client_; }

  json get(const std::string& path) {
    auto r = client_->Get(path);
    if (!r || r->status != 200) return json();
    return json::parse(r->body, nullptr, false);
  }

  // One producer's report: `counts` maps key bytes to records in the window; the records go
  // to the partitions murmur2 gives them, as an unsalting producer would send them.
  void report(const std::string& producer, uint64_t seq,
              const std::map<std::string, uint64_t>& counts, const std::string& topic = kTopic) {
    Report r;
    r.producer = producer;
    r.topic = topic;
    r.partitions = kPartitions;
    r.hash = HashFamily::kMurmur2;
    r.window_ms = 1000;
    r.sample_rate = 1.0;
    r.seq = seq;
    r.partition_counts.assign(kPartitions, 0);
    r.sketch_capacity = 64;
    for (const auto& [key, n] : counts) {
      r.partition_counts[static_cast<size_t>(
          partition_for(HashFamily::kMurmur2, key, kPartitions))] += n;
      r.total += n;
      r.items.push_back({key, n, 0});
    }
    // Cold traffic spread evenly, too small to be in the sketch.
    for (auto& c : r.partition_counts) c += 100;
    r.total += 100 * kPartitions;
    r.sketch_total = r.total;
    auto res = client_->Post("/v1/reports", report_to_json(r), "application/json");
    ASSERT_TRUE(res) << "POST /v1/reports failed";
    ASSERT_EQ(res->status, 200) << res->body;
  }

 private:
  test_support::TempDir dir_{"hotkey-ops"};
  std::unique_ptr<test_support::CoordinatorProcess> proc_;
  std::string url_;
  std::unique_ptr<httplib::Client> client_;
};

using Result = test_support::Captured;

const std::string kBinaryKey("\x00\xff\x01hot", 6);

class HotkeyctlRemote : public ::testing::Test {
 protected:
  void SetUp() override { coord_.start(); }

  // Reports a skewed topic until the coordinator lists `seller-42` as hot.
  void feed_until_hot() {
    const std::map<std::string, uint64_t> counts = {
        {"seller-42", 5000}, {"book-B1001", 40}, {"user-1", 30}, {"user-2", 25}, {kBinaryKey, 20}};
    uint64_t seq = 0;
    ASSERT_TRUE(eventually([&] {
      ++seq;
      coord_.report("producer-a", seq, counts);
      coord_.report("producer-b", seq, counts);
      json list = coord_.get(std::string("/v1/hotkeys?topic=") + kTopic);
      if (!list.is_object()) return false;
      for (const auto& k : list["keys"]) {
        if (k.value("key", "") == "seller-42") return true;
      }
      return false;
    })) << "seller-42 never became hot";
  }

  // Runs hotkeyctl with `args` and an environment without HOTKEY_URL / HOTKEY_TOKEN unless
  // `env` sets them.
  Result ctl(const std::vector<std::string>& args,
             const std::map<std::string, std::string>& env = {},
             const std::string& stdin_text = "") {
    test_support::ChildSpec spec;
    spec.binary = test_support::built_binary("hotkeyctl");
    spec.args = args;
    spec.env = {{"HOTKEY_URL", std::nullopt}, {"HOTKEY_TOKEN", std::nullopt}};
    for (const auto& [k, v] : env) spec.env[k] = v;
    return test_support::run_capturing(spec, dir_, stdin_text);
  }

  // hotkeyctl against this test's coordinator, with the operator token.
  Result op(std::vector<std::string> args, const std::string& stdin_text = "") {
    return ctl(args, {{"HOTKEY_URL", coord_.url()}, {"HOTKEY_TOKEN", kToken}}, stdin_text);
  }

  const json* listed(const json& list, const std::string& key) {
    for (const auto& k : list["keys"]) {
      if (k.value("key", "") == key) return &k;
    }
    return nullptr;
  }

  CoordinatorProcess coord_;
  test_support::TempDir tmp_{"hotkeyctl-remote"};
  const fs::path dir_ = tmp_.path();
};

TEST_F(HotkeyctlRemote, ListTopAndShowAHotKey) {
  feed_until_hot();
  Result r = op({"list"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "TOPIC")) << r.out;
  EXPECT_TRUE(contains(r.out, kTopic)) << r.out;

  r = op({"list", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json doc = json::parse(r.out);
  ASSERT_EQ(doc["topics"].size(), 1u);
  EXPECT_EQ(doc["topics"][0]["topic"], kTopic);
  EXPECT_EQ(doc["topics"][0]["partitions"], kPartitions);

  r = op({"top", kTopic, "--limit", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string header, first;
  std::getline(lines, header);
  std::getline(lines, first);
  EXPECT_TRUE(contains(header, "KEY")) << r.out;
  EXPECT_TRUE(contains(first, "seller-42")) << r.out;
  EXPECT_TRUE(contains(first, "hot")) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4) << r.out;  // header + 3

  // Binary keys are printed escaped, never raw.
  r = op({"top", kTopic, "--limit", "10"});
  EXPECT_TRUE(contains(r.out, "\\x00\\xff\\x01hot")) << r.out;
  EXPECT_FALSE(contains(r.out, kBinaryKey));

  r = op({"show", kTopic, "seller-42"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "salted (detected hot)")) << r.out;
  EXPECT_TRUE(contains(r.out, "PARTITION")) << r.out;

  r = op({"show", kTopic, "seller-42", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  doc = json::parse(r.out);
  ASSERT_TRUE(doc["listed"].is_object()) << r.out;
  EXPECT_GE(doc["listed"]["salts"].size(), 2u);
  EXPECT_EQ(doc["listed"]["source"], "detected");
  EXPECT_EQ(doc["top"]["hot"], true);

  r = op({"show", kTopic, "user-1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "not salted")) << r.out;
}

TEST_F(HotkeyctlRemote, PinUnpinDenyAllowAndTheAuditLog) {
  feed_until_hot();
  const std::string hotkeys = std::string("/v1/hotkeys?topic=") + kTopic;

  // No token, then a wrong one: refused with the auth exit code, nothing changes.
  Result r =
      ctl({"pin", kTopic, "book-B1001", "--reason", "launch"}, {{"HOTKEY_URL", coord_.url()}});
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_TRUE(contains(r.err, "HOTKEY_TOKEN")) << r.err;
  r = ctl({"pin", kTopic, "book-B1001", "--reason", "launch", "--url", coord_.url(), "--token",
           "not-the-token"});
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_TRUE(contains(r.err, "401")) << r.err;
  EXPECT_EQ(listed(coord_.get(hotkeys), "book-B1001"), nullptr);

  r = op({"pin", kTopic, "book-B1001", "--salts", "3", "--ttl", "1h", "--reason", "launch day"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "pinned book-B1001 on orders (list version ")) << r.out;
  json list = coord_.get(hotkeys);
  const json* pinned = listed(list, "book-B1001");
  ASSERT_NE(pinned, nullptr) << list.dump();
  EXPECT_EQ((*pinned)["source"], "pinned");
  EXPECT_EQ((*pinned)["salts"].size(), 3u);

  r = op({"show", kTopic, "book-B1001"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "salted (pinned)")) << r.out;
  EXPECT_TRUE(contains(r.out, "pin        by ops: launch day; 3 salts; expires ")) << r.out;

  r = op({"unpin", kTopic, "book-B1001"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(listed(coord_.get(hotkeys), "book-B1001"), nullptr);
  r = op({"unpin", kTopic, "book-B1001"});
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_TRUE(contains(r.err, "404")) << r.err;

  // Denying the hot key takes it off the list; allowing lets detection have it back.
  r = op({"deny", kTopic, "seller-42", "--reason", "balance updates must stay ordered"});
  ASSERT_EQ(r.code, 0) << r.err;
  list = coord_.get(hotkeys);
  EXPECT_EQ(listed(list, "seller-42"), nullptr);
  bool denied = false;
  for (const auto& d : list["denied"]) denied |= d.value("key", "") == "seller-42";
  EXPECT_TRUE(denied) << list.dump();
  r = op({"show", kTopic, "seller-42"});
  EXPECT_TRUE(contains(r.out, "denied: never salted")) << r.out;
  r = op({"allow", kTopic, "seller-42"});
  ASSERT_EQ(r.code, 0) << r.err;

  r = op({"audit", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json audit = json::parse(r.out);
  std::vector<std::string> actions;
  for (const auto& e : audit["entries"]) {
    actions.push_back(e["action"]);
    EXPECT_EQ(e["who"], "ops");
    EXPECT_EQ(e["topic"], kTopic);
  }
  EXPECT_EQ(actions, (std::vector<std::string>{"allow", "deny", "unpin", "pin"}));

  r = op({"audit"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "launch day")) << r.out;
  r = op({"audit", "--topic", "payments", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out)["entries"].empty());
  // The audit log is an operator read.
  r = ctl({"audit", "--url", coord_.url()});
  EXPECT_EQ(r.code, 4) << r.err;
}

TEST_F(HotkeyctlRemote, ExportThenImportIntoAnotherCoordinator) {
  feed_until_hot();
  const std::string b64 = base64_encode(kBinaryKey);
  ASSERT_EQ(
      op({"pin", kTopic, "book-B1001", "--salts", "2", "--ttl", "2h", "--reason", "sale"}).code, 0);
  ASSERT_EQ(op({"deny", kTopic, b64, "--b64", "--reason", "ordered"}).code, 0);
  const fs::path file = dir_ / "state.json";
  Result r = op({"export", "--out", file.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "exported 1 pins and 1 denies")) << r.out;
  json doc = json::parse(read_file(file));
  EXPECT_EQ(doc["format"], "hotkey-operator-state/1");
  ASSERT_EQ(doc["topics"].size(), 1u);
  const json& tp = doc["topics"][0];
  EXPECT_EQ(tp["pins"][0]["key"], "book-B1001");
  EXPECT_EQ(tp["pins"][0]["salts"], 2);
  EXPECT_GT(tp["pins"][0]["ttl_s"].get<int64_t>(), 7000);
  EXPECT_LE(tp["pins"][0]["ttl_s"].get<int64_t>(), 7200);
  EXPECT_EQ(tp["denies"][0]["key_b64"], b64);

  CoordinatorProcess other;
  other.start();
  const std::map<std::string, std::string> env = {{"HOTKEY_URL", other.url()},
                                                  {"HOTKEY_TOKEN", kToken}};
  r = ctl({"import", file.string(), "--dry-run"}, env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "would pin book-B1001 on orders")) << r.out;
  EXPECT_TRUE(other.get("/v1/topics/orders").is_null()) << "dry run changed nothing";

  r = ctl({"import", "-"}, env, read_file(file));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "2 changes applied")) << r.out;
  json summary = other.get("/v1/topics/orders");
  ASSERT_TRUE(summary.is_object());
  ASSERT_EQ(summary["pinned"].size(), 1u);
  EXPECT_EQ(summary["pinned"][0]["key"], "book-B1001");
  EXPECT_EQ(summary["pinned"][0]["salts"], 2);
  EXPECT_EQ(summary["pinned"][0]["reason"], "sale");
  EXPECT_GT(summary["pinned"][0]["expires_at_ms"].get<int64_t>(), 0);
  ASSERT_EQ(summary["denied"].size(), 1u);
  EXPECT_EQ(summary["denied"][0]["key_b64"], b64);
  // The export carries the pin's absolute deadline, and the import kept it (whole seconds).
  const int64_t exported_exp = tp["pins"][0]["expires_at_ms"].get<int64_t>();
  EXPECT_NEAR(static_cast<double>(summary["pinned"][0]["expires_at_ms"].get<int64_t>()),
              static_cast<double>(exported_exp), 2000.0);

  // Issue #18 item 8: importing the same file again changes nothing and adds no audit
  // entries (it added a pin and a deny entry each time).
  auto audit_size = [&] {
    Result a = ctl({"audit", "--json"}, env);
    EXPECT_EQ(a.code, 0) << a.err;
    return json::parse(a.out)["entries"].size();
  };
  const size_t audit_before = audit_size();
  EXPECT_EQ(audit_before, 2u);
  r = ctl({"import", file.string()}, env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "0 changes applied, 2 skipped")) << r.out;
  EXPECT_TRUE(contains(r.out, "skipped pin book-B1001 on orders: already in place")) << r.out;
  EXPECT_EQ(audit_size(), audit_before);

  // A pin whose deadline passed since the export is not brought back: the file says when it
  // ends, not how long it had left when written.
  json old_doc = doc;
  old_doc["topics"][0]["denies"] = json::array();
  old_doc["topics"][0]["pins"][0]["key"] = "book-B2002";
  old_doc["topics"][0]["pins"][0]["expires_at_ms"] = exported_exp - int64_t{3} * 3600 * 1000;
  std::ofstream(dir_ / "old.json") << old_doc.dump();
  r = ctl({"import", (dir_ / "old.json").string(), "--json"}, env);
  ASSERT_EQ(r.code, 0) << r.err;
  json applied = json::parse(r.out);
  EXPECT_EQ(applied["applied"], 0) << r.out;
  EXPECT_EQ(applied["skipped"], 1) << r.out;
  r = ctl({"import", (dir_ / "old.json").string()}, env);
  EXPECT_TRUE(contains(r.out, "skipped pin book-B2002 on orders: its ttl ended at")) << r.out;
  EXPECT_EQ(other.get("/v1/topics/orders")["pinned"].size(), 1u);
  EXPECT_EQ(audit_size(), audit_before);

  // A changed reason is a real change: applied, audited.
  json changed = doc;
  changed["topics"][0]["denies"][0]["reason"] = "still ordered";
  std::ofstream(dir_ / "changed.json") << changed.dump();
  r = ctl({"import", (dir_ / "changed.json").string()}, env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "1 changes applied, 1 skipped")) << r.out;
  EXPECT_EQ(audit_size(), audit_before + 1);

  // Negative salts name the range and the value, not "must be a whole number".
  json negative = doc;
  negative["topics"][0]["pins"][0]["salts"] = -3;
  std::ofstream(dir_ / "negative.json") << negative.dump();
  r = ctl({"import", (dir_ / "negative.json").string()}, env);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "topics[0].pins[0].salts must be a whole number from 1 to the "
                       "topic's partition count, got -3"))
      << r.err;

  // A file that is not an export is refused before anything is sent.
  std::ofstream(dir_ / "bad.json") << R"({"format": "something-else", "topics": []})";
  r = ctl({"import", (dir_ / "bad.json").string()}, env);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "not a hotkeyctl export")) << r.err;
  std::ofstream(dir_ / "bad2.json")
      << R"({"format": "hotkey-operator-state/1", "topics": [{"topic": "t", "pins": [{"reason": "x"}]}]})";
  r = ctl({"import", (dir_ / "bad2.json").string()}, env);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "topics[0].pins[0] has no key")) << r.err;
}

// Issue 26 item 5: policy add|list|remove, their usage errors (exit 2 before any call), the
// coordinator's refusals (exit 1), and export / import carrying the policies.
TEST_F(HotkeyctlRemote, PolicyAddListRemoveAndExportImport) {
  feed_until_hot();
  Result r = op({"policy", "add", kTopic, "seller-", "--never-salt", "--reason", "ordered"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "keys with prefix seller- on orders: never salted")) << r.out;
  ASSERT_TRUE(eventually([&] {
    json list = coord_.get(std::string("/v1/hotkeys?topic=") + kTopic);
    return list.is_object() && !listed(list, "seller-42") && list.contains("never_salt") &&
           list["never_salt"][0]["key"] == "seller-";
  })) << "seller-42 is still salted under a never_salt prefix";
  const std::string b64 = base64_encode(std::string("\x00\xff", 2));
  r = op({"policy", "add", kTopic, b64, "--b64", "--hot-fraction", "0.25", "--max-salts", "3",
          "--reason", "tuned"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "hot_fraction 0.25, max_salts 3")) << r.out;

  r = op({"policy", "list", kTopic});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "PREFIX")) << r.out;
  EXPECT_TRUE(contains(r.out, "seller-")) << r.out;
  EXPECT_TRUE(contains(r.out, "0.25")) << r.out;
  r = op({"policy", "list", kTopic, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["policies"].size(), 2u) << r.out;

  // Usage errors: exit 2, nothing sent.
  const std::vector<std::vector<std::string>> usage = {
      {"policy"},
      {"policy", "frob", kTopic},
      {"policy", "add", kTopic, "p:"},                                         // no kind, no reason
      {"policy", "add", kTopic, "p:", "--never-salt"},                         // no --reason
      {"policy", "add", kTopic, "p:", "--reason", "r"},                        // neither kind
      {"policy", "add", kTopic, "p:", "--never-salt", "--max-salts", "2", "--reason", "r"},
      {"policy", "add", kTopic, "p:", "--hot-fraction", "0", "--reason", "r"},  // out of range
      {"policy", "add", kTopic, "p:", "--hot-fraction", "x", "--reason", "r"},
      {"policy", "add", kTopic, "p:", "--max-salts", "0", "--reason", "r"},
      {"policy", "list"},
      {"policy", "remove", kTopic},
      {"policy", "remove", kTopic, "%%%", "--b64"},
  };
  for (const auto& args : usage) {
    r = op(args);
    EXPECT_EQ(r.code, 2) << ::testing::PrintToString(args) << ": " << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  EXPECT_EQ(json::parse(op({"policy", "list", kTopic, "--json"}).out)["policies"].size(), 2u);
  // The coordinator's refusal: a prefix over max_key_bytes (400, exit 1); no such policy (5).
  r = op({"policy", "add", kTopic, std::string(5000, 'p'), "--never-salt", "--reason", "r"});
  EXPECT_EQ(r.code, 1) << r.err;
  r = op({"policy", "remove", kTopic, "nope:"});
  EXPECT_EQ(r.code, 5) << r.err;
  r = op({"policy", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(contains(r.out, "usage: hotkeyctl policy add")) << r.out;

  // Export carries them; import into another coordinator applies them, and again skips them.
  const fs::path file = dir_ / "policies.json";
  r = op({"export", "--out", file.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, ", 2 policies")) << r.out;
  json doc = json::parse(read_file(file));
  ASSERT_EQ(doc["topics"][0]["policies"].size(), 2u) << doc.dump();
  CoordinatorProcess other;
  other.start();
  const std::map<std::string, std::string> env = {{"HOTKEY_URL", other.url()},
                                                  {"HOTKEY_TOKEN", kToken}};
  r = ctl({"import", file.string()}, env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "set the policy of prefix seller- on orders")) << r.out;
  EXPECT_TRUE(contains(r.out, "2 changes applied")) << r.out;
  json got = other.get("/v1/topics/orders/policies");
  ASSERT_EQ(got["policies"].size(), 2u) << got.dump();
  EXPECT_EQ(got["policies"][0]["key_b64"], b64);
  EXPECT_EQ(got["policies"][0]["hot_fraction"], 0.25);
  EXPECT_EQ(got["policies"][0]["max_salts"], 3);
  EXPECT_EQ(got["policies"][1]["key"], "seller-");
  EXPECT_EQ(got["policies"][1]["never_salt"], true);
  r = ctl({"import", file.string()}, env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "0 changes applied, 2 skipped")) << r.out;
  json bad = doc;
  bad["topics"][0]["policies"][0]["hot_fraction"] = 0.5;
  bad["topics"][0]["policies"][0]["never_salt"] = true;
  std::ofstream(dir_ / "bad-policy.json") << bad.dump();
  r = ctl({"import", (dir_ / "bad-policy.json").string()}, env);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "topics[0].policies[0] is never_salt and also has")) << r.err;

  r = op({"policy", "remove", kTopic, "seller-"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "removed the policy of prefix seller- on orders")) << r.out;
  r = op({"audit", "--topic", kTopic});
  EXPECT_TRUE(contains(r.out, "policy_remove")) << r.out;
  EXPECT_TRUE(contains(r.out, "policy_add")) << r.out;
}

// #17 item 11: pins count against max_hot_keys (2 on topic "capped" in the fixture's config);
// the pin beyond it is refused, and hotkeyctl says why (the reason and the limit) and fails.
TEST_F(HotkeyctlRemote, PinBeyondMaxHotKeysIsRefusedWithTheLimit) {
  for (const char* key : {"k1", "k2"}) {
    Result r = op({"pin", "capped", key, "--reason", "cap"});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  Result r = op({"pin", "capped", "k1", "--reason", "again"});  // replaces a pin: fits
  EXPECT_EQ(r.code, 0) << r.err;
  r = op({"pin", "capped", "k3", "--reason", "cap"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "HTTP 409 too_many_pins")) << r.err;
  EXPECT_TRUE(contains(r.err, "max_hot_keys=2")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// #17 item 7: delete-topic drops a topic (audited with the reason); an unknown one exits 5.
TEST_F(HotkeyctlRemote, DeleteTopicIsAuditedAndUnknownTopicsExitFive) {
  Result r = op({"pin", "scratch", "k1", "--reason", "try"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = op({"delete-topic", "scratch"});
  EXPECT_EQ(r.code, 2) << r.err;  // --reason is required
  r = op({"delete-topic", "scratch", "--reason", "junk topic"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "deleted topic scratch")) << r.out;
  r = op({"audit", "--topic", "scratch"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "delete_topic")) << r.out;
  EXPECT_TRUE(contains(r.out, "junk topic")) << r.out;
  r = op({"delete-topic", "scratch", "--reason", "again"});
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_TRUE(contains(r.err, "HTTP 404 not_found")) << r.err;
}

TEST_F(HotkeyctlRemote, ErrorsHaveDistinctExitCodes) {
  // Unreachable: a loopback port nobody listens on.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string dead = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  ::close(fd);
  Result r = ctl({"list", "--url", dead});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot reach the coordinator at " + dead)) << r.err;
  r = ctl({"top", kTopic}, {{"HOTKEY_URL", dead}});
  EXPECT_EQ(r.code, 3) << r.err;

  // Unknown topic.
  r = op({"top", "no-such-topic"});
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_TRUE(contains(r.err, "unknown topic 'no-such-topic'")) << r.err;
  r = op({"show", "no-such-topic", "k"});
  EXPECT_EQ(r.code, 5) << r.err;

  // Bad usage never reaches the network.
  const std::vector<std::vector<std::string>> usage = {
      {"pin", kTopic},                                        // no KEY
      {"pin", kTopic, "k"},                                   // no --reason
      {"pin", kTopic, "k", "--reason", "r", "--ttl", "5x"},   // bad duration
      {"pin", kTopic, "k", "--reason", "r", "--salts", "0"},  // out of range
      {"deny", kTopic, "k"},                                  // no --reason
      {"top", kTopic, "--limit", "0"},
      {"top", kTopic, "--frobnicate"},
      {"list", "--url", "ftp://127.0.0.1:1"},
      {"show", kTopic, "%%%", "--b64"},  // not base64
      {"import", (dir_ / "missing.json").string()},
  };
  for (const auto& args : usage) {
    r = op(args);
    EXPECT_EQ(r.code, 2) << args[0] << " " << (args.size() > 1 ? args[1] : "") << ": " << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  r = op({"pin", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(contains(r.out, "usage: hotkeyctl pin TOPIC KEY")) << r.out;

  // The coordinator's own refusal (a key over max_key_bytes) is exit code 1, with its message.
  r = op({"pin", kTopic, std::string(5000, 'k'), "--reason", "too long"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "400")) << r.err;
}

// #17 item 15: a 200 whose body is not the coordinator's JSON is an error (exit 1, saying what
// came back), never "pinned ..." or an empty table; a bad topic or a malformed --url is a usage
// error (exit 2); flags after `--` are arguments, and the usage error says so.
TEST_F(HotkeyctlRemote, GarbageAnswersAndMalformedArgumentsAreErrors) {
  httplib::Server fake;
  fake.Get(".*", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html><body>Welcome to nginx!</body></html>", "text/html");
  });
  fake.Post(".*", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{not json!!}", "application/json");
  });
  const int port = fake.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread server([&] { fake.listen_after_bind(); });
  const std::map<std::string, std::string> env{
      {"HOTKEY_URL", "http://127.0.0.1:" + std::to_string(port)}, {"HOTKEY_TOKEN", kToken}};
  Result r = ctl({"pin", kTopic, "k", "--reason", "r"}, env);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_FALSE(contains(r.out, "pinned")) << r.out;
  EXPECT_TRUE(contains(r.err, "not a JSON object")) << r.err;
  EXPECT_TRUE(contains(r.err, "{not json!!}")) << r.err;
  r = ctl({"list"}, env);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "Welcome to nginx")) << r.err;
  fake.stop();
  server.join();

  for (const auto& args : std::vector<std::vector<std::string>>{
           {"pin", "bad/topic", "k", "--reason", "r"},
           {"top", "bad topic"},
           {"list", "--url", "http://127.0.0.1:notaport"},
           {"list", "--url", "http://127.0.0.1:70000"},
           {"list", "--url", "http://exa mple:80"},
       }) {
    r = op(args);
    EXPECT_EQ(r.code, 2) << args[0] << " " << args[1] << ": " << r.err;
  }
  r = op({"pin", kTopic, "--", "-dashkey", "--reason", "r"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "came after '--'")) << r.err;
  r = op({"pin", kTopic, "--reason", "r", "--", "-dashkey"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "pinned -dashkey")) << r.out;
}

}  // namespace
}  // namespace hotkey
