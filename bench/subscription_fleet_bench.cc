// A fleet's list subscriptions against one coordinator with default settings (issue 27,
// docs/BENCHMARKS.md "List subscriptions"): N simulated producers, each following T topics,
// spread over P processes that hold their connections in epoll loops (so the bench itself needs
// no thread per request). Mode `subscribe`: one POST /v1/hotkeys/subscribe per producer for all
// its topics; mode `per-topic`: one GET /v1/hotkeys long-poll per producer and topic (what
// clients did before). Once the requests are parked (the coordinator's waiter gauge stops
// moving) it samples the coordinator's threads, RSS and CPU while idle, then pins a key on every
// topic and measures, per producer, the time from the first change to holding every new list,
// and per delivery the time from that topic's change to its answer. Refused requests (503) are
// counted, not retried.
//
//   subscription_fleet_bench [--mode subscribe|per-topic] [--producers 2000] [--topics 10]
//                            [--procs 8] [--idle-s 5] [--coordinator PATH]
//                            [--config '{"max_waiters": 12000}']   (a config file's JSON)
//                            [--pins K]   (change only the first K topics; default all)
//                            [--gzip none|half|all]   (producers sending Accept-Encoding: gzip;
//                            half: the even ones, so both are measured side by side in one run)
//   subscription_fleet_bench --client-topics 200   (a hotkey::Client's threads and connections
//                            with its topics on one subscription, and on per-topic long-polls
//                            through a front that answers the subscription 404)
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "hotkey/client/client.h"
#include "support/coordinator_process.h"
#include "support/gunzip.h"
#include "support/reports.h"
#include "support/temp_dir.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr const char* kOperatorToken = "bench-operator";

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // one clock for every process of the bench
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct Options {
  std::string mode = "subscribe";
  int producers = 2000;
  int topics = 10;
  int procs = 8;
  int idle_s = 5;
  int client_topics = 0;
  std::string config;         // JSON of a config file; empty: default settings
  int pins = 0;               // topics changed (the first ones); 0: every topic
  std::string gzip = "none";  // producers asking gzip: none, half (even indexes) or all
};

bool asks_gzip(const Options& o, int producer) {
  return o.gzip == "all" || (o.gzip == "half" && producer % 2 == 0);
}

std::string topic_name(int i) { return "fleet" + std::to_string(i); }

// ---- one child: its share of the producers, all their requests in one epoll loop ----------

struct Conn {
  int fd = -1;
  int producer = 0;  // index within the child
  int topic = -1;    // per-topic mode: the topic of this long-poll
  std::string out;
  size_t out_at = 0;
  std::string in;
  bool connected = false;
};

struct Producer {
  std::vector<uint64_t> since;  // per topic
  std::vector<int64_t> got_ns;  // per topic: when a list above the start version came, or 0
  int missing = 0;
  bool refused = false;
};

class Child {
 public:
  Child(const Options& o, int port, int first, int count, uint64_t start_version, int result_fd,
        int control_fd)
      : o_(o),
        port_(port),
        first_(first),
        start_(start_version),
        result_fd_(result_fd),
        control_fd_(control_fd),
        producers_(static_cast<size_t>(count)) {
    for (auto& p : producers_) {
      p.since.assign(static_cast<size_t>(o.topics), start_version);
      p.got_ns.assign(static_cast<size_t>(o.topics), 0);
      p.missing = o.pins;
    }
  }

  int run() {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;
    epoll_ctl(ep_, EPOLL_CTL_ADD, control_fd_, &ev);
    // Connections are opened in steps of 50 every 5 ms: the whole fleet connecting in one burst
    // would only measure the kernel's SYN backlog.
    std::vector<std::pair<int, int>> to_open;  // producer, topic
    for (int p = 0; p < static_cast<int>(producers_.size()); ++p) {
      if (o_.mode == "subscribe") {
        to_open.emplace_back(p, -1);
      } else {
        for (int t = 0; t < o_.topics; ++t) to_open.emplace_back(p, t);
      }
    }
    size_t opened = 0;
    std::vector<epoll_event> events(256);
    for (;;) {
      for (int i = 0; i < 50 && opened < to_open.size(); ++i, ++opened) {
        open(to_open[opened].first, to_open[opened].second);
      }
      const int n = epoll_wait(ep_, events.data(), static_cast<int>(events.size()),
                               opened < to_open.size() ? 5 : 1000);
      for (int i = 0; i < n; ++i) {
        auto* c = static_cast<Conn*>(events[static_cast<size_t>(i)].data.ptr);
        if (c == nullptr) return finish();  // the parent's "enough"
        handle(c, events[static_cast<size_t>(i)].events);
      }
      if (opened == to_open.size() && done_ == static_cast<int>(producers_.size())) {
        return finish();
      }
    }
  }

 private:
  void open(int producer, int topic) {
    auto* c = new Conn;
    c->producer = producer;
    c->topic = topic;
    c->fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    (void)::connect(c->fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    request(c);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.ptr = c;
    epoll_ctl(ep_, EPOLL_CTL_ADD, c->fd, &ev);
  }

  void request(Conn* c) {
    Producer& p = producers_[static_cast<size_t>(c->producer)];
    const char* encoding = asks_gzip(o_, first_ + c->producer) ? "Accept-Encoding: gzip\r\n" : "";
    if (c->topic < 0) {
      json topics = json::array();
      for (int t = 0; t < o_.topics; ++t) {
        topics.push_back({{"topic", topic_name(t)}, {"since", p.since[static_cast<size_t>(t)]}});
      }
      const std::string body = json{{"topics", topics}, {"wait_ms", 60000}}.dump();
      c->out =
          "POST /v1/hotkeys/subscribe HTTP/1.1\r\nHost: x\r\nContent-Type: "
          "application/json\r\n" +
          std::string(encoding) + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
          body;
    } else {
      c->out = "GET /v1/hotkeys?topic=" + topic_name(c->topic) +
               "&since=" + std::to_string(p.since[static_cast<size_t>(c->topic)]) +
               "&wait_ms=60000 HTTP/1.1\r\nHost: x\r\n" + encoding + "\r\n";
    }
    c->out_at = 0;
  }

  void close_conn(Conn* c) {
    epoll_ctl(ep_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    delete c;
  }

  void handle(Conn* c, uint32_t events) {
    if ((events & EPOLLOUT) && c->out_at < c->out.size()) {
      const ssize_t w =
          ::send(c->fd, c->out.data() + c->out_at, c->out.size() - c->out_at, MSG_NOSIGNAL);
      if (w > 0) c->out_at += static_cast<size_t>(w);
      if (c->out_at == c->out.size()) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = c;
        epoll_ctl(ep_, EPOLL_CTL_MOD, c->fd, &ev);
      }
    }
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) return;
    char buf[65536];
    for (;;) {
      const ssize_t r = ::recv(c->fd, buf, sizeof(buf), 0);
      if (r > 0) {
        c->in.append(buf, static_cast<size_t>(r));
        continue;
      }
      if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        // Closed: after its answer (a 503 closes; a finished producer's idle connection times
        // out) that is the end of it; in the middle of a request it is an error.
        const bool answered = answer(c);
        const Producer& p = producers_[static_cast<size_t>(c->producer)];
        const bool over =
            p.refused ||
            (c->topic < 0 ? p.missing == 0 : p.got_ns[static_cast<size_t>(c->topic)] != 0);
        if (!answered && !over) {
          ++errors_;
          producer_failed(c->producer);
        }
        close_conn(c);
        return;
      }
      break;
    }
    answer(c);
  }

  // Handles a complete answer in c->in; false when there is none.
  bool answer(Conn* c) {
    const size_t head_end = c->in.find("\r\n\r\n");
    if (head_end == std::string::npos) return false;
    const std::string head = c->in.substr(0, head_end);
    size_t length = 0;
    if (auto at = head.find("Content-Length: "); at != std::string::npos) {
      length = std::stoul(head.substr(at + 16));
    }
    if (c->in.size() < head_end + 4 + length) return false;
    const int status = std::atoi(head.c_str() + 9);
    std::string body = c->in.substr(head_end + 4, length);
    c->in.erase(0, head_end + 4 + length);
    if (head.find("\r\nContent-Encoding: gzip\r\n") != std::string::npos) {
      auto plain = hotkey::test_support::gunzip(body);
      if (!plain) {
        ++errors_;
        return true;
      }
      body.swap(*plain);
      ++gzipped_;
    }
    const int64_t at = now_ns();
    Producer& p = producers_[static_cast<size_t>(c->producer)];
    if (status == 503) {
      ++refused_;
      producer_failed(c->producer);
      return true;
    }
    if (status == 200) {
      const json doc = json::parse(body);
      auto take = [&](const json& list) {
        const std::string name = list["topic"].get<std::string>();
        const int t = std::atoi(name.c_str() + 5);
        const uint64_t v = list["version"].get<uint64_t>();
        if (v <= p.since[static_cast<size_t>(t)]) return;
        p.since[static_cast<size_t>(t)] = v;
        if (v > start_ && p.got_ns[static_cast<size_t>(t)] == 0) {
          p.got_ns[static_cast<size_t>(t)] = at;
          if (--p.missing == 0) ++done_;
        }
      };
      if (c->topic < 0) {
        for (const json& l : doc["lists"]) take(l);
      } else {
        take(doc);
      }
    } else if (status != 304) {
      ++errors_;
    }
    const bool still = c->topic < 0 ? p.missing > 0 : p.got_ns[static_cast<size_t>(c->topic)] == 0;
    if (still && !p.refused) {
      request(c);
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLOUT;
      ev.data.ptr = c;
      epoll_ctl(ep_, EPOLL_CTL_MOD, c->fd, &ev);
      ++reissued_;
    }
    return true;
  }

  void producer_failed(int producer) {
    Producer& p = producers_[static_cast<size_t>(producer)];
    if (p.refused) return;
    p.refused = true;
  }

  int finish() {
    std::ostringstream out;
    out << "C " << refused_ << " " << errors_ << " " << reissued_ << " " << gzipped_ << "\n";
    for (size_t i = 0; i < producers_.size(); ++i) {
      out << "P " << first_ + static_cast<int>(i) << " " << producers_[i].refused;
      for (int64_t g : producers_[i].got_ns) out << " " << g;
      out << "\n";
    }
    const std::string s = out.str();
    size_t at = 0;
    while (at < s.size()) {
      const ssize_t w = ::write(result_fd_, s.data() + at, s.size() - at);
      if (w <= 0) break;
      at += static_cast<size_t>(w);
    }
    return 0;
  }

  const Options o_;
  const int port_, first_;
  const uint64_t start_;
  const int result_fd_, control_fd_;
  std::vector<Producer> producers_;
  int ep_ = -1;
  int done_ = 0;
  uint64_t refused_ = 0, errors_ = 0, reissued_ = 0, gzipped_ = 0;
};

// ---- the coordinator's process: threads, RSS, CPU ----------------------------------------

struct ProcSample {
  long threads = 0;
  long rss_kb = 0;
  double cpu_s = 0;
};

ProcSample sample(pid_t pid) {
  ProcSample s;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) s.threads = std::atol(line.c_str() + 8);
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kb = std::atol(line.c_str() + 6);
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream rest(all.substr(all.rfind(')') + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  s.cpu_s = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return s;
}

long waiters(httplib::Client& c) {
  auto r = c.Get("/metrics");
  if (!r) return -1;
  const std::string name = "\nhotkey_longpoll_waiters ";
  auto at = r->body.find(name);
  return at == std::string::npos ? -1 : std::atol(r->body.c_str() + at + name.size());
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

std::unique_ptr<hotkey::test_support::CoordinatorProcess> start(
    const hotkey::test_support::TempDir& dir, const std::string& config = {}) {
  hotkey::test_support::CoordinatorOptions o;
  o.data = dir.path() / "data";
  if (!config.empty()) {
    o.config = dir.path() / "config.json";
    std::ofstream(o.config) << config;
  }
  o.log = dir.path() / "coordinator.log";
  o.extra_args = {"--operator-token", std::string("ops=") + kOperatorToken};
  std::string error;
  auto proc = hotkey::test_support::start_coordinator(o, &error);
  if (!proc) {
    std::fprintf(stderr, "coordinator: %s\n", error.c_str());
    std::exit(2);
  }
  return proc;
}

uint64_t pin(httplib::Client& c, int topic, const std::string& key) {
  json body{{"key", key}, {"reason", "bench"}};
  auto r = c.Post("/v1/topics/" + topic_name(topic) + "/pins",
                  {{"Authorization", std::string("Bearer ") + kOperatorToken}}, body.dump(),
                  "application/json");
  if (!r || r->status != 200) {
    std::fprintf(stderr, "pin %d failed: %s\n", topic, r ? r->body.c_str() : "no answer");
    std::exit(2);
  }
  return json::parse(r->body)["version"].get<uint64_t>();
}

int fleet(const Options& o) {
  hotkey::test_support::TempDir dir;
  auto coord = start(dir, o.config);
  httplib::Client http("127.0.0.1", coord->port());
  http.set_read_timeout(30, 0);
  // One connection, opened before the fleet's: per-topic long-polls can fill max_connections,
  // and the bench's own pins must still get through (it polls often enough to stay open).
  http.set_keep_alive(true);
  // Known topics (a report gives the partition count), each with a first list.
  uint64_t start_version = 0;
  for (int t = 0; t < o.topics; ++t) {
    auto r = http.Post("/v1/reports",
                       hotkey::report_to_json(hotkey::test_support::make_report(
                           "bench", topic_name(t), 8, 1, {{"a", 5}})),
                       "application/json");
    if (!r || r->status != 200) return 2;
    start_version = std::max(start_version, pin(http, t, "first"));
  }
  const ProcSample before = sample(coord->pid());
  struct Kid {
    pid_t pid;
    int result, control;
  };
  std::vector<Kid> kids;
  const int per = (o.producers + o.procs - 1) / o.procs;
  for (int k = 0; k < o.procs; ++k) {
    const int first = k * per;
    const int count = std::min(per, o.producers - first);
    if (count <= 0) break;
    int res[2], ctl[2];
    if (pipe2(res, O_CLOEXEC) != 0 || pipe2(ctl, O_CLOEXEC) != 0) return 2;
    const pid_t pid = fork();
    if (pid == 0) {
      ::close(res[0]);
      ::close(ctl[1]);
      Child child(o, coord->port(), first, count, start_version, res[1], ctl[0]);
      _exit(child.run());
    }
    ::close(res[1]);
    ::close(ctl[0]);
    fcntl(res[0], F_SETFL, O_NONBLOCK);
    kids.push_back({pid, res[0], ctl[1]});
  }
  const long expected =
      o.mode == "subscribe" ? o.producers : static_cast<long>(o.producers) * o.topics;
  // Parked: the gauge reaches the expectation or stops moving for 3 s.
  const auto park_start = Clock::now();
  long last = -1, parked = 0;
  auto last_change = Clock::now();
  while (Clock::now() - park_start < std::chrono::seconds(120)) {
    parked = waiters(http);
    if (parked != last) {
      last = parked;
      last_change = Clock::now();
    }
    if (parked >= expected || Clock::now() - last_change > std::chrono::seconds(3)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double park_s = std::chrono::duration<double>(Clock::now() - park_start).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const ProcSample idle0 = sample(coord->pid());
  std::this_thread::sleep_for(std::chrono::seconds(o.idle_s));
  const ProcSample idle1 = sample(coord->pid());
  parked = waiters(http);

  // The change: a new key pinned on every topic.
  std::vector<int64_t> pin_start(static_cast<size_t>(o.topics)), pin_end(pin_start.size());
  for (int t = 0; t < o.pins; ++t) {
    pin_start[static_cast<size_t>(t)] = now_ns();
    pin(http, t, "change");
    pin_end[static_cast<size_t>(t)] = now_ns();
  }
  const ProcSample after_change = sample(coord->pid());
  long threads_max = std::max(idle1.threads, after_change.threads);
  // Children end when every producer has every new list; at most 30 s more.
  std::vector<std::string> results(kids.size());
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  for (size_t i = 0; i < kids.size(); ++i) {
    for (;;) {
      int st = 0;
      threads_max = std::max(threads_max, sample(coord->pid()).threads);
      if (waitpid(kids[i].pid, &st, WNOHANG) == kids[i].pid) break;
      if (Clock::now() > deadline) {
        (void)!::write(kids[i].control, "x", 1);
        waitpid(kids[i].pid, &st, 0);
        break;
      }
      char buf[65536];
      const ssize_t n = ::read(kids[i].result, buf, sizeof(buf));
      if (n > 0) results[i].append(buf, static_cast<size_t>(n));
      if (n <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    char buf[65536];
    ssize_t n;
    while ((n = ::read(kids[i].result, buf, sizeof(buf))) > 0) {
      results[i].append(buf, static_cast<size_t>(n));
    }
  }
  const ProcSample delivered = sample(coord->pid());
  uint64_t refused = 0, errors = 0, reissued = 0, gzipped = 0;
  int complete = 0, refused_producers = 0, producers_seen = 0;
  std::vector<double> to_all_ms, delivery_ms, ack_ms;
  std::vector<double> ack_ms_by[2];  // [asks gzip]
  for (const std::string& r : results) {
    std::istringstream in(r);
    for (std::string tag; in >> tag;) {
      if (tag == "C") {
        uint64_t a, b, c, d;
        in >> a >> b >> c >> d;
        refused += a;
        errors += b;
        reissued += c;
        gzipped += d;
        continue;
      }
      int idx, was_refused;
      in >> idx >> was_refused;
      ++producers_seen;
      refused_producers += was_refused;
      int64_t last_got = 0;
      bool all = true;
      for (int t = 0; t < o.topics; ++t) {
        int64_t g;
        in >> g;
        if (t >= o.pins) continue;  // not changed
        if (g == 0) {
          all = false;
          continue;
        }
        last_got = std::max(last_got, g);
        delivery_ms.push_back(static_cast<double>(g - pin_start[static_cast<size_t>(t)]) / 1e6);
        // From the pin's acknowledgement (the bench holds it); an answer that came first is 0.
        ack_ms.push_back(
            std::max(0.0, static_cast<double>(g - pin_end[static_cast<size_t>(t)]) / 1e6));
        ack_ms_by[asks_gzip(o, idx) ? 1 : 0].push_back(ack_ms.back());
      }
      if (all) {
        ++complete;
        to_all_ms.push_back(static_cast<double>(last_got - pin_start[0]) / 1e6);
      }
    }
  }
  const double idle_cpu = (idle1.cpu_s - idle0.cpu_s) / o.idle_s * 100.0;
  json out{
      {"mode", o.mode},
      {"producers", o.producers},
      {"topics", o.topics},
      {"pins", o.pins},
      {"procs", o.procs},
      {"requests_expected_parked", expected},
      {"parked", parked},
      {"park_s", park_s},
      {"refused_503", refused},
      {"producers_refused", refused_producers},
      {"errors", errors},
      {"reissued", reissued},
      {"producers_reported", producers_seen},
      {"producers_with_every_new_list", complete},
      {"publish_pins_ms",
       static_cast<double>(pin_end[static_cast<size_t>(o.pins) - 1] - pin_start.front()) / 1e6},
      {"first_change_to_all_lists_ms",
       {{"p50", pct(to_all_ms, 0.5)}, {"p99", pct(to_all_ms, 0.99)}, {"max", pct(to_all_ms, 1.0)}}},
      {"topic_change_to_answer_ms",
       {{"p50", pct(delivery_ms, 0.5)},
        {"p99", pct(delivery_ms, 0.99)},
        {"max", pct(delivery_ms, 1.0)}}},
      {"pin_ack_to_answer_ms",
       {{"p50", pct(ack_ms, 0.5)}, {"p99", pct(ack_ms, 0.99)}, {"max", pct(ack_ms, 1.0)}}},
      {"deliveries", delivery_ms.size()},
      {"gzip", o.gzip},
      {"answers_gzip", gzipped},
      // Side by side in one run (--gzip half): the same, per group of producers.
      {"pin_ack_to_answer_ms_identity",
       {{"p50", pct(ack_ms_by[0], 0.5)},
        {"p99", pct(ack_ms_by[0], 0.99)},
        {"n", ack_ms_by[0].size()}}},
      {"pin_ack_to_answer_ms_gzip",
       {{"p50", pct(ack_ms_by[1], 0.5)},
        {"p99", pct(ack_ms_by[1], 0.99)},
        {"n", ack_ms_by[1].size()}}},
      // The coordinator's CPU from the first pin until every answer was read (the pins,
      // waking, writing, and the re-subscriptions), per delivered answer.
      {"coordinator_cpu_us_per_delivery",
       delivery_ms.empty()
           ? 0.0
           : (delivered.cpu_s - idle1.cpu_s) * 1e6 / static_cast<double>(delivery_ms.size())},
      {"coordinator_threads_max", threads_max},
      {"coordinator_before",
       {{"threads", before.threads}, {"rss_mib", static_cast<double>(before.rss_kb) / 1024}}},
      {"coordinator_parked_idle",
       {{"threads", idle1.threads},
        {"rss_mib", static_cast<double>(idle1.rss_kb) / 1024},
        {"cpu_percent", idle_cpu},
        {"idle_s", o.idle_s}}},
      {"coordinator_after_change_rss_mib", static_cast<double>(after_change.rss_kb) / 1024}};
  std::printf("%s\n", out.dump(2).c_str());
  coord->terminate();
  return 0;
}

// ---- a client writing many topics -------------------------------------------------------

size_t count_dir(const std::string& path, const char* link_prefix) {
  size_t n = 0;
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      if (link_prefix == nullptr) {
        ++n;
        continue;
      }
      char target[256] = {};
      const std::string p = path + "/" + e->d_name;
      if (::readlink(p.c_str(), target, sizeof(target) - 1) > 0 &&
          std::strncmp(target, link_prefix, std::strlen(link_prefix)) == 0) {
        ++n;
      }
    }
    ::closedir(d);
  }
  return n;
}

// An older coordinator in front of the real one, in its own process: the subscription answers
// 404, everything else passes through. Its pid.
pid_t older_front(int target, int* port) {
  int p[2];
  if (pipe(p) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    ::close(p[0]);
    httplib::Server s;
    s.new_task_queue = [] { return new httplib::ThreadPool(512); };
    s.Post("/v1/hotkeys/subscribe", [](const httplib::Request&, httplib::Response& res) {
      res.status = 404;
      res.set_content(R"({"error":"no such endpoint"})", "application/json");
    });
    auto pass = [target](const httplib::Request& req, httplib::Response& res) {
      httplib::Client c("127.0.0.1", target);
      c.set_read_timeout(120, 0);
      std::string t = req.path + "?";
      for (const auto& [k, v] : req.params) t += k + "=" + v + "&";
      auto r = req.method == "GET" ? c.Get(t) : c.Post(t, req.body, "application/json");
      res.status = r ? r->status : 502;
      if (r) res.set_content(r->body, r->get_header_value("Content-Type"));
    };
    s.Get(".*", pass);
    s.Post(".*", pass);
    const int bound = s.bind_to_any_port("127.0.0.1");
    (void)!::write(p[1], &bound, sizeof(bound));
    s.listen_after_bind();
    _exit(0);
  }
  ::close(p[1]);
  (void)!::read(p[0], port, sizeof(*port));
  ::close(p[0]);
  return pid;
}

int client_topics(const Options& o) {
  hotkey::test_support::TempDir dir;
  auto coord = start(dir);
  httplib::Client http("127.0.0.1", coord->port());
  int front_port = 0;
  const pid_t front = older_front(coord->port(), &front_port);
  auto measure = [&](const std::string& url, const char* label) {
    const size_t threads0 = count_dir("/proc/self/task", nullptr);
    const size_t sockets0 = count_dir("/proc/self/fd", "socket:");
    json r;
    {
      hotkey::client::Client c(hotkey::client::Properties{{"hotkey.coordinator.url", url},
                                                          {"hotkey.producer.id", "bench"},
                                                          {"hotkey.hash", "murmur2"},
                                                          {"hotkey.report.interval.ms", "60000"}});
      for (int t = 0; t < o.client_topics; ++t) c.topic("many" + std::to_string(t));
      // Settled: the coordinator's waiter gauge stops moving.
      long last = -1;
      for (int i = 0; i < 100; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        const long w = waiters(http);
        if (w == last && w > 0) break;
        last = w;
      }
      r = {{"client", label},
           {"topics", o.client_topics},
           {"client_threads", count_dir("/proc/self/task", nullptr) - threads0},
           {"client_connections", count_dir("/proc/self/fd", "socket:") - sockets0}};
    }
    std::printf("%s\n", r.dump().c_str());
  };
  measure("http://127.0.0.1:" + std::to_string(front_port), "per-topic (older coordinator)");
  measure(coord->url(), "subscription");
  ::kill(front, SIGKILL);
  waitpid(front, nullptr, 0);
  coord->terminate();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--mode")
      o.mode = v;
    else if (a == "--producers")
      o.producers = std::atoi(v.c_str());
    else if (a == "--topics")
      o.topics = std::atoi(v.c_str());
    else if (a == "--procs")
      o.procs = std::atoi(v.c_str());
    else if (a == "--idle-s")
      o.idle_s = std::atoi(v.c_str());
    else if (a == "--client-topics")
      o.client_topics = std::atoi(v.c_str());
    else if (a == "--coordinator")
      setenv("HOTKEY_COORDINATOR_BIN", v.c_str(), 1);
    else if (a == "--config")
      o.config = v;
    else if (a == "--pins")
      o.pins = std::atoi(v.c_str());
    else if (a == "--gzip")
      o.gzip = v;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (o.mode != "subscribe" && o.mode != "per-topic") {
    std::fprintf(stderr, "--mode is subscribe or per-topic\n");
    return 2;
  }
  if (o.gzip != "none" && o.gzip != "half" && o.gzip != "all") {
    std::fprintf(stderr, "--gzip is none, half or all\n");
    return 2;
  }
  if (o.pins <= 0 || o.pins > o.topics) o.pins = o.topics;
  if (o.topics < 1 || o.topics > 1024 || o.producers < 1 || o.procs < 1) {
    std::fprintf(stderr, "--topics 1..1024, --producers and --procs at least 1\n");
    return 2;
  }
  return o.client_topics > 0 ? client_topics(o) : fleet(o);
}
