// Parked subscriptions and long-polls without a thread each (issue 40), over real loopback HTTP
// from raw sockets driven by this one thread (so every thread counted in /proc/self/task is the
// coordinator's or the harness's): a change reaches every parked request, their number does not
// grow the coordinator's threads, clients that hang up or never read their answer hold no thread
// and delay nobody, and the limits answer 503 with a JSON reason.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/eventually.h"
#include "support/gunzip.h"
#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

using nlohmann::json;
using test_support::eventually;
const httplib::Headers kOperator{{"Authorization", "Bearer alice-operator-token"}};

size_t threads_now() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

int connect_to(int port, int rcvbuf = 0) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (rcvbuf > 0) (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& s) {
  return send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
}

// `headers`: more header lines, each with its CRLF.
std::string subscribe_request(const std::vector<std::string>& topics, uint64_t wait_ms,
                              const std::string& headers = "") {
  json t = json::array();
  for (const auto& topic : topics) t.push_back({{"topic", topic}, {"since", 0}});
  const std::string body = json{{"topics", t}, {"wait_ms", wait_ms}}.dump();
  return "POST /v1/hotkeys/subscribe HTTP/1.1\r\nHost: c\r\nContent-Type: application/json\r\n" +
         headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string long_poll_request(const std::string& topic, uint64_t wait_ms,
                              const std::string& headers = "") {
  return "GET /v1/hotkeys?topic=" + topic + "&since=0&wait_ms=" + std::to_string(wait_ms) +
         " HTTP/1.1\r\nHost: c\r\n" + headers + "\r\n";
}

struct Answer {
  int status = 0;
  std::string head;
  std::string body;
};

// Reads one answer (head and Content-Length body) within 30 s; status 0 when none came.
Answer read_answer(int fd) {
  Answer a;
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    const size_t end = got.find("\r\n\r\n");
    if (end != std::string::npos) {
      const std::string head = got.substr(0, end);
      size_t length = 0;
      if (auto at = head.find("Content-Length: "); at != std::string::npos) {
        length = std::stoul(head.substr(at + 16));
      }
      if (got.size() >= end + 4 + length) {
        a.status = std::stoi(head.substr(9, 3));
        a.head = head;
        a.body = got.substr(end + 4, length);
        return a;
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) return a;
    char buf[16384];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return a;
    got.append(buf, static_cast<size_t>(n));
  }
}

double metric(Harness& h, const std::string& name) {
  const std::string text = h.metrics().serialize();
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    if ((at == 0 || text[at - 1] == '\n') && text[at + name.size()] == ' ') {
      return std::stod(text.substr(at + name.size() + 1));
    }
  }
  return -1;
}

// A gzip body inflated by zlib; "<not gzip>" when it is not one whole gzip stream.
std::string gunzip(const std::string& in) {
  return test_support::gunzip(in).value_or("<not gzip>");
}

std::string header(const std::string& head, const std::string& name) {
  const std::string line = "\r\n" + name + ": ";
  const size_t at = head.find(line);
  if (at == std::string::npos) return "";
  const size_t from = at + line.size();
  return head.substr(from, head.find("\r\n", from) - from);
}

// A gauge as GET /metrics answers it (the route refreshes the parked counts).
double scraped(httplib::Client& c, const std::string& name) {
  auto r = c.Get("/metrics");
  if (!r || r->status != 200) return -1;
  const std::string line = "\n" + name + " ";
  const size_t at = r->body.find(line);
  return at == std::string::npos ? -1 : std::stod(r->body.substr(at + line.size()));
}

TEST(SubscriptionFanout, AChangeReachesEveryParkedRequestAndParkedOnesHoldNoThread) {
  CoordinatorConfig cfg = test_config();
  cfg.max_waiters = 1000;
  Harness h(cfg, true);
  auto c = h.client();
  for (const char* t : {"a", "b", "c"}) post_report(*c, t);
  const size_t before = threads_now();

  // 400 subscriptions over {a, b, c} and 200 long-polls on b, all parked.
  std::vector<int> subs, polls;
  for (int i = 0; i < 400; ++i) {
    subs.push_back(connect_to(h.port()));
    ASSERT_GE(subs.back(), 0);
    ASSERT_TRUE(send_all(subs.back(), subscribe_request({"a", "b", "c"}, 60000)));
  }
  for (int i = 0; i < 200; ++i) {
    polls.push_back(connect_to(h.port()));
    ASSERT_GE(polls.back(), 0);
    ASSERT_TRUE(send_all(polls.back(), long_poll_request("b", 60000)));
  }
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 600; }));
  // Workers started for the burst of connections end once idle: then the pool's floor
  // (http_threads, running before) and nothing per parked request.
  EXPECT_TRUE(eventually([&] { return threads_now() <= before + 1; }))
      << threads_now() << " now, " << before << " before";
  EXPECT_EQ(scraped(*c, "hotkey_longpoll_waiters"), 600);
  EXPECT_EQ(scraped(*c, "hotkey_subscriptions_parked"), 400);
  EXPECT_GE(scraped(*c, "hotkey_http_connections_parked"), 600);

  const uint64_t v = post_pin(*c, "b", "k1");
  for (int fd : subs) {
    const Answer a = read_answer(fd);
    ASSERT_EQ(a.status, 200) << a.head;
    const json body = json::parse(a.body);
    ASSERT_EQ(body["lists"].size(), 1u) << a.body;
    EXPECT_EQ(body["lists"][0]["topic"], "b");
    EXPECT_EQ(body["lists"][0]["version"].get<uint64_t>(), v);
  }
  for (int fd : polls) {
    const Answer a = read_answer(fd);
    ASSERT_EQ(a.status, 200) << a.head;
    EXPECT_NE(a.head.find("ETag: \"" + std::to_string(v) + "\""), std::string::npos) << a.head;
    EXPECT_EQ(json::parse(a.body)["version"].get<uint64_t>(), v);
  }
  // The connections are kept alive: the next subscription on one is answered too.
  ASSERT_TRUE(send_all(subs.front(), subscribe_request({"b"}, 0)));
  EXPECT_EQ(read_answer(subs.front()).status, 200);
  EXPECT_TRUE(eventually([&] { return threads_now() <= before + 1; }));
  for (int fd : subs) close(fd);
  for (int fd : polls) close(fd);
}

TEST(SubscriptionFanout, ClientsThatHangUpOrNeverReadHoldNoThreadAndDelayNobody) {
  CoordinatorConfig cfg = test_config();
  cfg.max_waiters = 1000;
  cfg.write_timeout_s = 1;
  cfg.request_timeout_s = 2;
  Harness h(cfg, true);
  auto c = h.client();
  post_report(*c, "a");
  // A large list (~60 KB of JSON), so that an answer does not fit what a client that never
  // reads leaves room for.
  uint64_t v = 0;
  for (int i = 0; i < 60; ++i)
    v = post_pin(*c, "a", "key-" + std::to_string(i) + std::string(900, 'x'));
  const size_t before = threads_now();

  // 200 subscribers that never read (small receive buffers), 200 that hang up while parked,
  // 200 well-behaved ones.
  std::vector<int> slow, gone, good;
  for (int i = 0; i < 200; ++i) {
    for (auto* into : {&slow, &gone, &good}) {
      into->push_back(connect_to(h.port(), into == &slow ? 1024 : 0));
      ASSERT_GE(into->back(), 0);
      json body{{"topics", {{{"topic", "a"}, {"since", v}}}}, {"wait_ms", 60000}};
      const std::string b = body.dump();
      ASSERT_TRUE(send_all(into->back(),
                           "POST /v1/hotkeys/subscribe HTTP/1.1\r\nHost: c\r\nContent-Type: "
                           "application/json\r\nContent-Length: " +
                               std::to_string(b.size()) + "\r\n\r\n" + b));
    }
  }
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 600; }));
  // Hung up while parked: their waiters are freed at once, not at the end of their wait.
  for (int fd : gone) close(fd);
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 400; }));

  const uint64_t next = post_pin(*c, "a", "one-more");
  for (int fd : good) {
    const Answer a = read_answer(fd);
    ASSERT_EQ(a.status, 200) << a.head;
    EXPECT_EQ(json::parse(a.body)["lists"][0]["version"].get<uint64_t>(), next);
  }
  EXPECT_TRUE(eventually([&] { return threads_now() <= before + 1; }));
  // The clients that never read are cut (write_timeout_s, or request_timeout_s once idle); the
  // coordinator still answers others meanwhile.
  auto r = c->Get("/v1/hotkeys?topic=a");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  ASSERT_TRUE(eventually([&] { return metric(h, "hotkey_http_connections") <= 202; }));
  for (int fd : slow) close(fd);
  for (int fd : good) close(fd);
}

TEST(SubscriptionFanout, ClientsSendingTheirRequestSlowlyHoldNoThread) {
  Harness h(test_config(), true);
  auto c = h.client();
  ASSERT_TRUE(c->Get("/healthz"));  // the server's pool is up
  const size_t before = threads_now();
  // Six times http_threads connections trickle a request head, a header byte at a time.
  std::vector<int> slow;
  for (int i = 0; i < 48; ++i) {
    slow.push_back(connect_to(h.port()));
    ASSERT_GE(slow.back(), 0);
    ASSERT_TRUE(send_all(slow.back(), "GET /healthz HTTP/1.1\r\nHost: c\r\nX-Slow: "));
  }
  // Their heads are never whole: they wait off the workers (any started for the burst of
  // connections end once idle), and the others are served meanwhile.
  ASSERT_TRUE(eventually([&] {
    for (int fd : slow) (void)send_all(fd, "a");
    return metric(h, "hotkey_http_connections") == 48;
  }));
  EXPECT_TRUE(eventually([&] {
    for (int fd : slow) (void)send_all(fd, "a");
    return threads_now() <= before + 1;
  })) << threads_now()
      << " threads, " << before << " before";
  auto r = c->Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // Finished, a head is answered.
  ASSERT_TRUE(send_all(slow.front(), "\r\n\r\n"));
  EXPECT_EQ(read_answer(slow.front()).status, 200);
  for (int fd : slow) close(fd);
}

TEST(SubscriptionFanout, LimitsAnswer503WithAReason) {
  CoordinatorConfig cfg = test_config();
  cfg.max_waiters = 50;
  cfg.max_connections = 80;
  Harness h(cfg, true);
  auto c = h.client();
  post_report(*c, "a");
  std::vector<int> parked;
  for (int i = 0; i < 50; ++i) {
    parked.push_back(connect_to(h.port()));
    ASSERT_TRUE(send_all(parked.back(), i % 2 == 0 ? subscribe_request({"a"}, 60000)
                                                   : long_poll_request("a", 60000)));
  }
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 50; }));
  // max_waiters: one more of either kind.
  for (const std::string& req : {subscribe_request({"a"}, 60000), long_poll_request("a", 60000)}) {
    const int fd = connect_to(h.port());
    ASSERT_TRUE(send_all(fd, req));
    const Answer a = read_answer(fd);
    EXPECT_EQ(a.status, 503) << a.head;
    EXPECT_NE(a.head.find("Retry-After: 1"), std::string::npos) << a.head;
    EXPECT_NE(json::parse(a.body)["error"].get<std::string>().find("max_waiters"),
              std::string::npos)
        << a.body;
    close(fd);
  }
  // max_connections: parked connections count, though they hold no thread.
  // The refused ones above closed: the 50 parked remain; 30 more fill max_connections.
  ASSERT_TRUE(eventually([&] { return metric(h, "hotkey_http_connections") == 50; }));
  std::vector<int> idle;
  for (int i = 0; i < 30; ++i) idle.push_back(connect_to(h.port()));
  ASSERT_TRUE(eventually([&] { return metric(h, "hotkey_http_connections") == 80; }));
  const int fd = connect_to(h.port());
  ASSERT_TRUE(send_all(fd, "GET /healthz HTTP/1.1\r\nHost: c\r\n\r\n"));
  const Answer a = read_answer(fd);
  EXPECT_EQ(a.status, 503) << a.head;
  EXPECT_NE(json::parse(a.body)["error"].get<std::string>().find("max_connections"),
            std::string::npos)
      << a.body;
  close(fd);
  for (int f : idle) close(f);
  for (int f : parked) close(f);
}

// Parked answers are gzip-encoded when the request accepts gzip, byte for byte as httplib
// encodes the same answer given at once; identity otherwise, brotli included (docs/API.md,
// "Encoding of list answers"); and a publication's answer is compressed once, however many
// parked requests it answers.
TEST(SubscriptionFanout, ParkedAnswersAreCompressedAsAcceptedOncePerList) {
  CoordinatorConfig cfg = test_config();
  cfg.max_waiters = 1000;
  Harness h(cfg, true);
  auto c = h.client();
  post_report(*c, "a");
  const std::string gzip = "Accept-Encoding: gzip, deflate\r\n";
  const std::string br = "Accept-Encoding: br\r\n";
  // 30 long-polls and 30 subscriptions asking gzip (the last ones "gzip, br"), one each asking
  // brotli only and asking nothing.
  std::vector<int> gzip_polls, gzip_subs;
  for (int i = 0; i < 30; ++i) {
    gzip_polls.push_back(connect_to(h.port()));
    gzip_subs.push_back(connect_to(h.port()));
    const std::string ask = i < 29 ? gzip : "Accept-Encoding: gzip, br\r\n";
    ASSERT_TRUE(send_all(gzip_polls.back(), long_poll_request("a", 60000, ask)));
    ASSERT_TRUE(send_all(gzip_subs.back(), subscribe_request({"a"}, 60000, ask)));
  }
  const int plain_poll = connect_to(h.port());
  const int plain_sub = connect_to(h.port());
  const int br_poll = connect_to(h.port());
  const int br_sub = connect_to(h.port());
  ASSERT_TRUE(send_all(plain_poll, long_poll_request("a", 60000)));
  ASSERT_TRUE(send_all(plain_sub, subscribe_request({"a"}, 60000)));
  ASSERT_TRUE(send_all(br_poll, long_poll_request("a", 60000, br)));
  ASSERT_TRUE(send_all(br_sub, subscribe_request({"a"}, 60000, br)));
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 64; }));

  const uint64_t v = post_pin(*c, "a", "k1");
  const Answer poll = read_answer(plain_poll);
  const Answer sub = read_answer(plain_sub);
  ASSERT_EQ(poll.status, 200) << poll.head;
  ASSERT_EQ(sub.status, 200) << sub.head;
  EXPECT_EQ(header(poll.head, "Content-Encoding"), "") << poll.head;
  EXPECT_EQ(header(sub.head, "Content-Encoding"), "") << sub.head;
  EXPECT_EQ(json::parse(poll.body)["version"].get<uint64_t>(), v);
  EXPECT_EQ(json::parse(sub.body)["lists"][0]["version"].get<uint64_t>(), v);

  // The same version asked at once with gzip: httplib's own compression of the same body.
  const int now = connect_to(h.port());
  ASSERT_TRUE(send_all(now, "GET /v1/hotkeys?topic=a HTTP/1.1\r\nHost: c\r\n" + gzip + "\r\n"));
  const Answer at_once = read_answer(now);
  close(now);
  ASSERT_EQ(header(at_once.head, "Content-Encoding"), "gzip") << at_once.head;
  ASSERT_EQ(gunzip(at_once.body), poll.body);

  for (int fd : gzip_polls) {
    const Answer a = read_answer(fd);
    ASSERT_EQ(a.status, 200) << a.head;
    ASSERT_EQ(header(a.head, "Content-Encoding"), "gzip") << a.head;
    EXPECT_EQ(header(a.head, "Content-Type"), "application/json");
    EXPECT_EQ(header(a.head, "ETag"), "\"" + std::to_string(v) + "\"");
    EXPECT_EQ(gunzip(a.body), poll.body);
    EXPECT_EQ(a.body, at_once.body);
  }
  for (int fd : gzip_subs) {
    const Answer a = read_answer(fd);
    ASSERT_EQ(a.status, 200) << a.head;
    ASSERT_EQ(header(a.head, "Content-Encoding"), "gzip") << a.head;
    EXPECT_EQ(gunzip(a.body), sub.body);
  }
  const Answer br_poll_answer = read_answer(br_poll);
  const Answer br_sub_answer = read_answer(br_sub);
  EXPECT_EQ(header(br_poll_answer.head, "Content-Encoding"), "") << br_poll_answer.head;
  EXPECT_EQ(header(br_sub_answer.head, "Content-Encoding"), "") << br_sub_answer.head;
  EXPECT_EQ(br_poll_answer.body, poll.body);
  EXPECT_EQ(br_sub_answer.body, sub.body);

  // One compression per answer: the long-polls' and the subscriptions' (60 gzip readers).
  EXPECT_EQ(metric(h, "hotkey_http_parked_answers_compressed_total{encoding=\"gzip\"}"), 2);

  // Kept alive: the next parked answer on a gzip connection is compressed too.
  const std::string body =
      json{{"topics", {{{"topic", "a"}, {"since", v}}}}, {"wait_ms", 60000}}.dump();
  ASSERT_TRUE(send_all(gzip_subs.front(),
                       "POST /v1/hotkeys/subscribe HTTP/1.1\r\nHost: c\r\nContent-Type: "
                       "application/json\r\n" +
                           gzip + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                           body));
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 1; }));
  const uint64_t v2 = post_pin(*c, "a", "k2");
  const Answer next = read_answer(gzip_subs.front());
  ASSERT_EQ(header(next.head, "Content-Encoding"), "gzip") << next.head;
  EXPECT_EQ(json::parse(gunzip(next.body))["lists"][0]["version"].get<uint64_t>(), v2);
  for (int fd : gzip_polls) close(fd);
  for (int fd : gzip_subs) close(fd);
  for (int fd : {plain_poll, plain_sub, br_poll, br_sub}) close(fd);
}

}  // namespace
}  // namespace hotkey::coordinator::test
