// Bounded load test of a real hotkey-coordinator process on loopback (not run by ctest):
// N simulated producers report every interval, M long-pollers wait for lists, and optional
// slow-loris and idle connections hold workers. Prints errors, ingest latency percentiles,
// poll outcomes and the coordinator's RSS at start, middle and end. See docs/RELIABILITY.md.
//
//   load_bench [--producers 2000] [--pollers 1000] [--seconds 60] [--interval-ms 500]
//              [--senders 64] [--http-threads 32] [--slowloris 0] [--idle 0] [--bin PATH]
//              [--flat-after 15] [--max-growth-pct 0] [--attacker-addr 127.0.0.2]
//              [--per-client-limit 0]
// Exit status 1 when a report failed or RSS grew more than --max-growth-pct after --flat-after.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hotkey/report.h"
#include "hotkey/space_saving.h"
#include "support/coordinator_process.h"
#include "support/temp_dir.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Options {
  int producers = 2000;
  int pollers = 1000;
  int seconds = 60;
  int interval_ms = 500;
  int senders = 64;
  int http_threads = 32;
  int slowloris = 0;
  int idle = 0;
  // Memory must be flat once the windows are full: RSS at --flat-after seconds is compared with
  // the largest RSS after it; --max-growth-pct > 0 makes more growth than that a failure.
  int flat_after = 15;
  int max_growth_pct = 0;
  // Slow-loris and idle connections come from this loopback address (another client than the
  // producers on 127.0.0.1). --per-client-limit N sets the coordinator's
  // max_connections_per_client to N and sizes its pool for the producers plus N.
  std::string attacker_addr = "127.0.0.2";
  int per_client_limit = 0;
  std::string bin = hotkey::test_support::coordinator_binary();
};

Options parse(int argc, char** argv) {
  Options o;
  std::map<std::string, int*> ints = {{"--producers", &o.producers},
                                      {"--pollers", &o.pollers},
                                      {"--seconds", &o.seconds},
                                      {"--interval-ms", &o.interval_ms},
                                      {"--senders", &o.senders},
                                      {"--http-threads", &o.http_threads},
                                      {"--slowloris", &o.slowloris},
                                      {"--idle", &o.idle},
                                      {"--flat-after", &o.flat_after},
                                      {"--max-growth-pct", &o.max_growth_pct},
                                      {"--per-client-limit", &o.per_client_limit}};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
    if (a == "--bin") {
      o.bin = argv[++i];
    } else if (a == "--attacker-addr") {
      o.attacker_addr = argv[++i];
    } else if (auto it = ints.find(a); it != ints.end()) {
      *it->second = std::stoi(argv[++i]);
    } else {
      throw std::invalid_argument("unknown flag " + a);
    }
  }
  if (o.producers < 1 || o.seconds < 1 || o.interval_ms < 1 || o.senders < 1) {
    throw std::invalid_argument("--producers, --seconds, --interval-ms, --senders must be >= 1");
  }
  if (o.flat_after < 1 || o.flat_after >= o.seconds) {
    throw std::invalid_argument("--flat-after must be between 1 and --seconds - 1");
  }
  return o;
}

// The coordinator under test: its own process, data dir and config; port read from its log.
class Coordinator {
 public:
  explicit Coordinator(const Options& o) : proc_(options(dir_.path(), o)) {
    if (proc_.wait_port(std::chrono::seconds(30)) == 0) {
      throw std::runtime_error("coordinator did not start; see " + proc_.log_file().string() +
                               ":\n" + proc_.log());
    }
  }
  ~Coordinator() { proc_.terminate(); }
  int port() const { return proc_.port(); }
  long rss_kb() const {
    std::ifstream in("/proc/" + std::to_string(proc_.pid()) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
  }

 private:
  static hotkey::test_support::CoordinatorOptions options(const std::filesystem::path& dir,
                                                          const Options& o) {
    std::ofstream(dir / "config.json") << json{
        {"http_threads", o.http_threads},
        {"max_waiters", o.pollers + 64 + o.per_client_limit},
        {"max_connections_per_client", o.per_client_limit},
        {"max_wait_ms", 60000},
        {"warmup_ms", 0}}.dump();
    hotkey::test_support::CoordinatorOptions c;
    c.binary = o.bin;
    c.data = dir / "data";
    c.config = dir / "config.json";
    c.log = dir / "coordinator.log";
    return c;
  }

  hotkey::test_support::TempDir dir_{"hotkey-load"};
  hotkey::test_support::CoordinatorProcess proc_;
};

hotkey::Report make_report(int producer, uint64_t seq, std::mt19937& rng) {
  hotkey::Report r;
  r.producer = "load-" + std::to_string(producer);
  r.topic = "load-" + std::to_string(producer % 10);
  r.partitions = 32;
  r.window_ms = 500;
  r.seq = seq;
  r.partition_counts.assign(32, 0);
  hotkey::SpaceSaving sketch(64);
  std::uniform_int_distribution<int> key(0, 5000);
  sketch.update("hot-" + r.topic, 400);
  r.partition_counts[0] += 400;
  for (int i = 0; i < 600; ++i) {
    const int k = key(rng);
    sketch.update("k" + std::to_string(k));
    r.partition_counts[static_cast<size_t>(k % 32)] += 1;
  }
  r.total = 1000;
  r.sketch_capacity = sketch.capacity();
  r.sketch_min = sketch.min_count();
  r.sketch_total = sketch.total();
  for (const auto& it : sketch.items()) r.items.push_back({it.key, it.count, it.error});
  return r;
}

int raw_connect(int port, const std::string& from) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  if (inet_pton(AF_INET, from.c_str(), &src.sin_addr) != 1 ||
      bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) {
    close(fd);
    return -1;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Producers and pollers connect from 250 loopback addresses (127.0.1.1-250), as a fleet
// comes from many hosts, so per-address limits see them as the separate clients they are.
void bind_fleet_address(httplib::Client& c, int client_index) {
  c.set_socket_options([client_index](int fd) {
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr =
        htonl((127u << 24) | (1u << 8) | static_cast<uint32_t>(1 + client_index % 250));
    (void)bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
  });
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "load_bench: %s\n", e.what());
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  Coordinator coord(o);
  const int port = coord.port();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> sent{0}, errors{0}, late{0}, poll_ok{0}, poll_304{0}, poll_err{0};
  std::mutex lat_mu;
  std::vector<double> latencies_ms;
  // Every failure by cause: "http <status>" or httplib's error name (Connection, Read, ...).
  std::mutex cause_mu;
  std::map<std::string, uint64_t> report_causes, poll_causes;
  const auto count_cause = [&](std::map<std::string, uint64_t>& m, const httplib::Result& r) {
    std::lock_guard lock(cause_mu);
    ++m[r ? "http " + std::to_string(r->status) : httplib::to_string(r.error())];
  };

  // Slow-loris: a request line, then one header byte every 2 s (under httplib's 5 s read
  // timeout). Idle: connect and send nothing.
  std::vector<int> held;
  for (int i = 0; i < o.slowloris + o.idle; ++i) {
    int fd = raw_connect(port, o.attacker_addr);
    if (fd < 0) continue;
    if (i < o.slowloris) {
      const char* start = "POST /v1/reports HTTP/1.1\r\nHost: x\r\n";
      (void)send(fd, start, std::strlen(start), 0);
    }
    held.push_back(fd);
  }
  std::thread loris([&] {
    while (!stop) {
      for (int i = 0; i < o.slowloris && i < static_cast<int>(held.size()); ++i) {
        (void)send(held[static_cast<size_t>(i)], "X", 1, MSG_NOSIGNAL);
      }
      for (int s = 0; s < 20 && !stop; ++s)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });

  std::vector<std::thread> pollers;
  for (int i = 0; i < o.pollers; ++i) {
    pollers.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", port);
      bind_fleet_address(c, i);
      c.set_read_timeout(20, 0);
      c.set_tcp_nodelay(true);
      uint64_t since = 0;
      const std::string topic = "load-" + std::to_string(i % 10);
      while (!stop) {
        auto r = c.Get("/v1/hotkeys?topic=" + topic + "&since=" + std::to_string(since) +
                       "&wait_ms=5000");
        if (stop) break;
        if (r && r->status == 200) {
          ++poll_ok;
          auto j = json::parse(r->body, nullptr, false);
          if (j.is_object()) since = j.value("version", since);
        } else if (r && (r->status == 304 || r->status == 404)) {
          ++poll_304;  // 404: no list for the topic yet
          if (r->status == 404) std::this_thread::sleep_for(std::chrono::milliseconds(500));
        } else {
          ++poll_err;
          count_cause(poll_causes, r);
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
      }
    });
  }

  const auto start = Clock::now();
  const auto interval = std::chrono::milliseconds(o.interval_ms);
  const auto end = start + std::chrono::seconds(o.seconds);
  std::vector<std::thread> senders;
  for (int t = 0; t < o.senders; ++t) {
    senders.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", port);
      bind_fleet_address(c, o.pollers + t);
      c.set_keep_alive(true);
      c.set_tcp_nodelay(true);
      c.set_read_timeout(10, 0);
      std::mt19937 rng(static_cast<uint32_t>(t));
      std::vector<double> mine;
      for (uint64_t round = 0;; ++round) {
        for (int p = t; p < o.producers; p += o.senders) {
          const auto due = start + round * interval + interval * p / o.producers;
          // Past the end (or a generator too far behind to matter): stop, never overrun.
          if (due >= end || Clock::now() >= end) goto done;
          std::this_thread::sleep_until(due);
          if (Clock::now() - due > interval) ++late;
          const auto body = hotkey::encode_report_binary(make_report(p, round + 1, rng));
          const auto t0 = Clock::now();
          auto r = c.Post("/v1/reports", body, std::string(hotkey::kReportBinaryContentType));
          mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          if (r && r->status == 200) {
            ++sent;
          } else {
            ++errors;
            count_cause(report_causes, r);
            if (getenv("LOAD_BENCH_TRACE"))
              std::fprintf(stderr, "report error t=%.3f s sender=%d request#%zu latency=%.1f ms\n",
                           std::chrono::duration<double>(t0 - start).count(), t, mine.size(),
                           mine.back());
          }
        }
      }
    done:
      std::lock_guard lock(lat_mu);
      latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
    });
  }

  // RSS once a second: the windows fill during the first window_epochs seconds, after which
  // memory must stay flat (compared between the middle and the end of the run).
  std::vector<long> rss_series;
  for (int s = 1; s <= o.seconds; ++s) {
    std::this_thread::sleep_until(start + std::chrono::seconds(s));
    rss_series.push_back(coord.rss_kb());
  }
  for (auto& s : senders) s.join();
  const auto at = [&](int second) {
    return rss_series[std::min<size_t>(static_cast<size_t>(second) - 1, rss_series.size() - 1)];
  };
  const long rss_start = at(5), rss_flat = at(o.flat_after), rss_end = rss_series.back();
  const long rss_max_after =
      *std::max_element(rss_series.begin() + (o.flat_after - 1), rss_series.end());
  const double growth_pct =
      rss_flat > 0 ? 100.0 * static_cast<double>(rss_max_after - rss_flat) / rss_flat : 0.0;
  stop = true;
  loris.join();
  // What became of the slow-loris/idle connections: answered (the 503 of a connection
  // limit), closed by the coordinator (cut by a timeout), or still open at the end.
  int held_answered = 0, held_closed = 0, held_open = 0;
  for (int fd : held) {
    char b;
    const ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) {
      ++held_answered;
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      ++held_closed;
    } else {
      ++held_open;
    }
    close(fd);
  }
  for (auto& p : pollers) p.join();

  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  const uint64_t total = sent + errors;
  std::printf(
      "producers=%d pollers=%d slowloris=%d idle=%d seconds=%d interval_ms=%d senders=%d "
      "http_threads=%d per_client_limit=%d\n",
      o.producers, o.pollers, o.slowloris, o.idle, o.seconds, o.interval_ms, o.senders,
      o.http_threads, o.per_client_limit);
  if (!held.empty() || o.slowloris + o.idle > 0) {
    std::printf(
        "slow-loris/idle from %s: %zu of %d connected; at the end %d answered (limit 503), %d "
        "closed by the coordinator, %d still open\n",
        o.attacker_addr.c_str(), held.size(), o.slowloris + o.idle, held_answered, held_closed,
        held_open);
  }
  std::printf("reports: %llu ok, %llu errors, %llu late (>1 interval behind schedule), %.0f/s\n",
              static_cast<unsigned long long>(sent.load()),
              static_cast<unsigned long long>(errors.load()),
              static_cast<unsigned long long>(late.load()), static_cast<double>(total) / secs);
  std::printf("ingest latency ms: p50 %.2f p99 %.2f max %.2f\n", percentile(latencies_ms, 0.5),
              percentile(latencies_ms, 0.99), percentile(latencies_ms, 1.0));
  std::printf("polls: %llu lists, %llu 304/404, %llu errors\n",
              static_cast<unsigned long long>(poll_ok.load()),
              static_cast<unsigned long long>(poll_304.load()),
              static_cast<unsigned long long>(poll_err.load()));
  const auto print_causes = [](const char* what, const std::map<std::string, uint64_t>& m) {
    if (m.empty()) return;
    std::printf("%s errors by cause:", what);
    for (const auto& [cause, n] : m)
      std::printf(" %s=%llu", cause.c_str(), static_cast<unsigned long long>(n));
    std::printf("\n");
  };
  print_causes("report", report_causes);
  print_causes("poll", poll_causes);
  std::printf("coordinator RSS KiB: 5 s %ld, %d s %ld, end %ld, max after %d s %ld (%+.1f%%)\n",
              rss_start, o.flat_after, rss_flat, rss_end, o.flat_after, rss_max_after, growth_pct);
  std::printf("coordinator RSS KiB every second:");
  for (long v : rss_series) std::printf(" %ld", v);
  std::printf("\n");
  bool ok = errors == 0;
  if (o.max_growth_pct > 0 && growth_pct > o.max_growth_pct) {
    std::printf("FAIL: RSS grew %.1f%% after %d s (limit %d%%)\n", growth_pct, o.flat_after,
                o.max_growth_pct);
    ok = false;
  }
  if (errors != 0)
    std::printf("FAIL: %llu reports failed\n", static_cast<unsigned long long>(errors.load()));
  return ok ? 0 : 1;
}
