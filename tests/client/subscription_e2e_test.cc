// The client's list subscriber against the real hotkey-coordinator process over loopback HTTP
// (issue 27): one subscription request in flight for all of a client's topics, every topic's
// change delivered through it, a topic registered while the request is parked joining at once
// (not after the 60 s wait), an older coordinator without the endpoint (a front that answers
// 404 for it and passes everything else through) served by per-topic long-polls, and a
// coordinator restart while the subscription is parked.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "hotkey/client/client.h"
#include "support/coordinator_process.h"
#include "support/eventually.h"
#include "support/reports.h"
#include "support/temp_dir.h"

namespace hotkey::client {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test_support::eventually;
constexpr const char* kOperatorToken = "op-secret";

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

size_t threads_of_this_process() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

class Coordinator {
 public:
  Coordinator() : port_(free_port()) {}
  ~Coordinator() { kill(); }
  void start() {
    test_support::CoordinatorOptions o;
    o.listen = "127.0.0.1:" + std::to_string(port_);
    o.data = dir_.path() / "data";
    o.log = dir_.path() / "coordinator.log";
    o.append_log = true;
    o.extra_args = {"--operator-token", std::string("ops=") + kOperatorToken};
    std::string error;
    proc_ = test_support::start_coordinator(o, &error);
    ASSERT_TRUE(proc_) << error;
  }
  void kill() {
    if (proc_) proc_->kill9();
    proc_.reset();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::unique_ptr<httplib::Client> http() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_read_timeout(10, 0);
    return c;
  }
  // Makes the topic known (its partition count), then pins `key`: the new version.
  uint64_t pin(const std::string& topic, const std::string& key) {
    auto c = http();
    auto r = c->Post("/v1/reports",
                     report_to_json(test_support::make_report("setup", topic, 8, ++seq_,
                                                              {{"a", 5}})),
                     "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    nlohmann::json body{{"key", key}, {"reason", "test"}};
    r = c->Post("/v1/topics/" + topic + "/pins",
                {{"Authorization", std::string("Bearer ") + kOperatorToken}}, body.dump(),
                "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    return r && r->status == 200 ? nlohmann::json::parse(r->body)["version"].get<uint64_t>() : 0;
  }
  // hotkey_longpoll_waiters: requests parked now (subscriptions and long-polls).
  int waiters() const {
    auto r = http()->Get("/metrics");
    if (!r) return -1;
    const std::string name = "\nhotkey_longpoll_waiters ";
    auto at = r->body.find(name);
    return at == std::string::npos ? -1 : std::stoi(r->body.substr(at + name.size()));
  }

 private:
  test_support::TempDir dir_;
  int port_;
  uint64_t seq_ = 0;
  std::unique_ptr<test_support::CoordinatorProcess> proc_;
};

Properties props(const std::string& url) {
  return {{"hotkey.coordinator.url", url},     {"hotkey.producer.id", "subscriber-test"},
          {"hotkey.poll.wait.ms", "60000"},    {"hotkey.report.interval.ms", "60000"},
          {"hotkey.backoff.initial.ms", "20"}, {"hotkey.backoff.max.ms", "200"},
          {"hotkey.http.timeout.ms", "2000"},  {"hotkey.hash", "murmur2"}};
}

TEST(SubscriptionE2E, OneRequestCarriesEveryTopicsChange) {
  Coordinator coord;
  ASSERT_NO_FATAL_FAILURE(coord.start());
  const size_t threads_before = threads_of_this_process();
  Client c(props(coord.url()));
  std::vector<TopicId> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(c.topic("t" + std::to_string(i)));
  // Ten topics, one parked request (the per-topic long-polls parked ten).
  ASSERT_TRUE(eventually([&] { return coord.waiters() == 1; }, seconds(20)))
      << "waiters: " << coord.waiters();
  EXPECT_LE(threads_of_this_process() - threads_before, 3u)
      << "the client runs a thread per topic";
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 10; ++i) {
      const uint64_t v = coord.pin("t" + std::to_string(i), "k" + std::to_string(round));
      ASSERT_GT(v, 0u);
      ASSERT_TRUE(c.wait_for_version(ids[static_cast<size_t>(i)], v, seconds(10)))
          << "t" << i << " round " << round;
    }
  }
  EXPECT_TRUE(eventually([&] { return coord.waiters() == 1; }, seconds(20)));
  EXPECT_EQ(c.stats().list_errors, 0u);
}

// The subscription is parked for 60 s; a topic registered meanwhile must be carried by a new
// request at once, and the cut request must not stay parked on the coordinator.
TEST(SubscriptionE2E, ATopicRegisteredWhileParkedJoinsAtOnce) {
  Coordinator coord;
  ASSERT_NO_FATAL_FAILURE(coord.start());
  Client c(props(coord.url()));
  const TopicId a = c.topic("a");
  ASSERT_TRUE(eventually([&] { return coord.waiters() == 1; }, seconds(20)));
  const uint64_t vb = coord.pin("b", "k");
  const auto start = std::chrono::steady_clock::now();
  const TopicId b = c.topic("b");
  ASSERT_TRUE(c.wait_for_version(b, vb, seconds(20)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(20));
  EXPECT_TRUE(eventually([&] { return coord.waiters() == 1; }, seconds(20)))
      << "the cut request stayed parked: " << coord.waiters();
  // Many topics registered in a burst: all carried, still one request parked.
  std::vector<std::pair<TopicId, uint64_t>> more;
  for (int i = 0; i < 30; ++i) {
    const std::string t = "burst" + std::to_string(i);
    more.emplace_back(c.topic(t), 0);
  }
  for (int i = 0; i < 30; i += 7) {
    const uint64_t v = coord.pin("burst" + std::to_string(i), "k");
    ASSERT_TRUE(c.wait_for_version(more[static_cast<size_t>(i)].first, v, seconds(20)));
  }
  const uint64_t va = coord.pin("a", "k");
  ASSERT_TRUE(c.wait_for_version(a, va, seconds(20)));
  EXPECT_TRUE(eventually([&] { return coord.waiters() == 1; }, seconds(20)));
}

// A coordinator older than the endpoint: every path but the subscription passes through to
// the real coordinator; the subscription is answered 404 as such a coordinator does.
class OlderCoordinatorFront {
 public:
  explicit OlderCoordinatorFront(int target) : target_(target) {
    server_.Post("/v1/hotkeys/subscribe", [this](const httplib::Request&, httplib::Response& res) {
      subscribes_.fetch_add(1);
      res.status = 404;
      res.set_content(R"({"error":"no such endpoint: POST /v1/hotkeys/subscribe"})",
                      "application/json");
    });
    server_.Get("/v1/hotkeys", [this](const httplib::Request& req, httplib::Response& res) {
      long_polls_.fetch_add(1);
      pass(req, res);
    });
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) { pass(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(milliseconds(1));
  }
  ~OlderCoordinatorFront() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int subscribes() const { return subscribes_.load(); }
  int long_polls() const { return long_polls_.load(); }

 private:
  void pass(const httplib::Request& req, httplib::Response& res) {
    httplib::Client c("127.0.0.1", target_);
    c.set_read_timeout(120, 0);
    std::string target = req.path;
    if (!req.params.empty()) {
      target += "?";
      for (const auto& [k, v] : req.params) target += k + "=" + v + "&";
    }
    auto r = req.method == "GET"
                 ? c.Get(target)
                 : c.Post(target, req.body, req.get_header_value("Content-Type"));
    if (!r) {
      res.status = 502;
      return;
    }
    res.status = r->status;
    res.set_content(r->body, r->get_header_value("Content-Type"));
  }

  int target_;
  int port_ = 0;
  httplib::Server server_;
  std::thread thread_;
  std::atomic<int> subscribes_{0}, long_polls_{0};
};

TEST(SubscriptionE2E, AnOlderCoordinatorGetsPerTopicLongPolls) {
  Coordinator coord;
  ASSERT_NO_FATAL_FAILURE(coord.start());
  OlderCoordinatorFront front(std::stoi(coord.url().substr(coord.url().rfind(':') + 1)));
  Properties p = props(front.url());
  // The front's passed-through long-polls end within 2 s, so that it can stop.
  p["hotkey.poll.wait.ms"] = "2000";
  Client c(p);
  const TopicId a = c.topic("a");
  const TopicId b = c.topic("b");
  ASSERT_TRUE(eventually([&] { return coord.waiters() == 2; }, seconds(20)))
      << "waiters: " << coord.waiters();
  EXPECT_GE(front.subscribes(), 1);
  const uint64_t va = coord.pin("a", "k");
  const uint64_t vb = coord.pin("b", "k");
  ASSERT_TRUE(c.wait_for_version(a, va, seconds(20)));
  ASSERT_TRUE(c.wait_for_version(b, vb, seconds(20)));
  // A topic registered later gets its own long-poll.
  const TopicId late = c.topic("late");
  const uint64_t vl = coord.pin("late", "k");
  ASSERT_TRUE(c.wait_for_version(late, vl, seconds(20)));
  EXPECT_GE(front.long_polls(), 3);
  EXPECT_EQ(front.subscribes(), 1) << "asked again before 5 minutes";
}

TEST(SubscriptionE2E, ACoordinatorRestartWhileParkedKeepsListsAndVersionsGrow) {
  Coordinator coord;
  ASSERT_NO_FATAL_FAILURE(coord.start());
  Client c(props(coord.url()));
  const TopicId a = c.topic("a");
  const TopicId b = c.topic("b");
  const uint64_t va = coord.pin("a", "k1");
  ASSERT_TRUE(c.wait_for_version(a, va, seconds(20)));
  ASSERT_TRUE(eventually([&] { return coord.waiters() == 1; }, seconds(20)));
  coord.kill();
  // Fail-static: the last good list routes while the coordinator is gone.
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(c.router().version(a), va);
  const std::string hot = "k1";
  EXPECT_TRUE(c.route(a, hot.data(), hot.size(), {}, 8).salted);
  ASSERT_NO_FATAL_FAILURE(coord.start());
  ASSERT_TRUE(eventually([&] { return coord.waiters() == 1; }, seconds(20)))
      << "the client did not subscribe again";
  const uint64_t vb = coord.pin("b", "k2");
  const uint64_t va2 = coord.pin("a", "k2");
  EXPECT_GT(va2, va);
  ASSERT_TRUE(c.wait_for_version(b, vb, seconds(20)));
  ASSERT_TRUE(c.wait_for_version(a, va2, seconds(20)));
  EXPECT_EQ(c.router().version(a), va2);
}

}  // namespace
}  // namespace hotkey::client
