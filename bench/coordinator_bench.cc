// Coordinator benchmarks against the real hotkey-coordinator binary on loopback:
//   BM_Ingest        reports of 256/1024 entries, JSON and binary, from 8 concurrent senders:
//                    entries merged per second of coordinator CPU, wall rate, p50/p99 latency
//   BM_LongPollFanout 1,000 parked pollers; time from a list change until each has it
//   BM_Memory        RSS with 1/100/1000 topics x 100 producers (and 1 topic x 1000 producers)
// Each benchmark runs one measured iteration that spawns its own coordinator (fresh data dir).
#include <benchmark/benchmark.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "hotkey/hotkey_list.h"
#include "hotkey/report.h"
#include "hotkey/space_saving.h"
#include "support/coordinator_process.h"
#include "support/lists.h"
#include "support/reports.h"
#include "support/temp_dir.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

using hotkey::test_support::read_file;

// One coordinator child process with its own data dir and config.
class Coordinator {
 public:
  explicit Coordinator(const json& config) : proc_(options(dir_.path(), config)) {
    if (proc_.wait_port() == 0) {
      throw std::runtime_error("coordinator did not start: " + proc_.log());
    }
  }
  // A clean stop: SIGTERM, then the temp dir goes.
  ~Coordinator() { proc_.terminate(); }
  int port() const { return proc_.port(); }
  // User + system CPU seconds the coordinator has used.
  double cpu_seconds() const {
    std::string stat = read_file("/proc/" + std::to_string(proc_.pid()) + "/stat");
    std::istringstream in(stat.substr(stat.rfind(')') + 2));
    std::string field;
    std::vector<std::string> f;
    while (in >> field) f.push_back(field);
    // Fields after the command: state is f[0]; utime and stime are stat fields 14 and 15.
    return (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  double rss_mib() const {
    std::istringstream in(read_file("/proc/" + std::to_string(proc_.pid()) + "/status"));
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
    }
    return 0;
  }
  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", proc_.port());
    c->set_read_timeout(120, 0);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);
    return c;
  }

 private:
  static hotkey::test_support::CoordinatorOptions options(const std::filesystem::path& dir,
                                                          const json& config) {
    std::ofstream(dir / "config.json") << config.dump();
    hotkey::test_support::CoordinatorOptions o;
    o.data = dir / "data";
    o.config = dir / "config.json";
    o.log = dir / "log";
    o.env["HOTKEY_OPERATOR_TOKEN"] = "bench=bench-operator-token";
    return o;
  }

  hotkey::test_support::TempDir dir_{"hotkey-bench"};
  hotkey::test_support::CoordinatorProcess proc_;
};

using hotkey::test_support::random_report;

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

void BM_Ingest(benchmark::State& state) {
  const bool binary = state.range(0) == 1;
  const auto entries = static_cast<uint32_t>(state.range(1));
  constexpr int kSenders = 8;
  const int per_sender = entries >= 1024 ? 150 : 500;
  Coordinator coord(json{{"http_threads", 32}, {"max_waiters", 16}, {"warmup_ms", 0}});
  std::vector<std::string> bodies;
  for (int s = 0; s < kSenders; ++s) {
    hotkey::Report r = random_report("sender-" + std::to_string(s), "bench", entries,
                                     static_cast<uint32_t>(s + 1));
    bodies.push_back(binary ? hotkey::encode_report_binary(r) : hotkey::report_to_json(r));
  }
  const std::string ct =
      binary ? std::string(hotkey::kReportBinaryContentType) : std::string("application/json");
  for (auto _ : state) {
    std::vector<std::vector<double>> lat(kSenders);
    std::atomic<int> failures{0};
    const double cpu0 = coord.cpu_seconds();
    const auto t0 = Clock::now();
    std::vector<std::thread> threads;
    for (int s = 0; s < kSenders; ++s) {
      threads.emplace_back([&, s] {
        auto c = coord.client();
        for (int i = 0; i < per_sender; ++i) {
          auto start = Clock::now();
          auto r = c->Post("/v1/reports", bodies[s], ct);
          lat[s].push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
          if (!r || r->status != 200) failures.fetch_add(1);
        }
      });
    }
    for (auto& t : threads) t.join();
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    const double cpu = coord.cpu_seconds() - cpu0;
    std::vector<double> all;
    for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
    const double total_entries = static_cast<double>(entries) * kSenders * per_sender;
    state.SetIterationTime(wall);
    state.counters["entries_per_s"] = total_entries / wall;
    state.counters["entries_per_cpu_s"] = total_entries / cpu;
    state.counters["coord_cores_used"] = cpu / wall;
    state.counters["p50_ms"] = percentile(all, 0.50);
    state.counters["p99_ms"] = percentile(all, 0.99);
    state.counters["failures"] = failures.load();
  }
  state.SetLabel(std::string(binary ? "binary" : "json") + " " + std::to_string(entries) +
                 " entries x " + std::to_string(kSenders) + " senders");
}
BENCHMARK(BM_Ingest)
    ->ArgsProduct({{0, 1}, {256, 1024}})
    ->ArgNames({"binary", "entries"})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

double waiters(Coordinator& coord) {
  auto c = coord.client();
  auto r = c->Get("/metrics");
  if (!r) return -1;
  std::istringstream in(r->body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("hotkey_longpoll_waiters ", 0) == 0) return std::stod(line.substr(24));
  }
  return -1;
}

void BM_LongPollFanout(benchmark::State& state) {
  const int pollers = static_cast<int>(state.range(0));
  constexpr int kChanges = 5;
  Coordinator coord(json{{"http_threads", 16},
                         {"max_waiters", pollers + 64},
                         {"max_wait_ms", 120000},
                         {"warmup_ms", 0}});
  auto admin = coord.client();
  hotkey::Report seed = random_report("seed", "fan", 16, 1);
  admin->Post("/v1/reports", hotkey::report_to_json(seed), "application/json");
  const httplib::Headers op{{"Authorization", "Bearer bench-operator-token"}};
  auto pin = [&](int i) {
    auto r = admin->Post("/v1/topics/fan/pins", op,
                         json{{"key", "k" + std::to_string(i)}, {"reason", "bench"}}.dump(),
                         "application/json");
    return r && r->status == 200 ? json::parse(r->body)["version"].get<uint64_t>() : 0;
  };
  uint64_t version = pin(0);
  std::vector<double> delays;
  for (auto _ : state) {
    std::atomic<uint64_t> target{UINT64_MAX};
    std::atomic<int64_t> t_change_ns{0};
    std::atomic<bool> stop{false};
    std::mutex mu;
    std::vector<std::thread> threads;
    for (int p = 0; p < pollers; ++p) {
      threads.emplace_back([&] {
        httplib::Client c("127.0.0.1", coord.port());
        c.set_read_timeout(150, 0);
        c.set_keep_alive(true);
        c.set_tcp_nodelay(true);
        uint64_t since = version;
        while (!stop.load()) {
          auto r =
              c.Get("/v1/hotkeys?topic=fan&since=" + std::to_string(since) + "&wait_ms=120000");
          const auto now = Clock::now().time_since_epoch().count();
          if (!r || r->status != 200) continue;
          since = json::parse(r->body)["version"].get<uint64_t>();
          if (since >= target.load() && !stop.load()) {
            std::lock_guard lock(mu);
            delays.push_back(static_cast<double>(now - t_change_ns.load()) / 1e6);
          }
        }
      });
    }
    for (int change = 1; change <= kChanges; ++change) {
      auto deadline = Clock::now() + std::chrono::seconds(120);
      while (waiters(coord) < pollers && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      const size_t before = delays.size();
      target = version + 1;
      t_change_ns = Clock::now().time_since_epoch().count();
      version = pin(change);
      while (Clock::now() < deadline) {
        {
          std::lock_guard lock(mu);
          if (delays.size() >= before + static_cast<size_t>(pollers)) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    stop = true;
    pin(kChanges + 1);  // releases every poller
    for (auto& t : threads) t.join();
    state.SetIterationTime(1);
  }
  state.counters["changes"] = kChanges;
  state.counters["deliveries"] = static_cast<double>(delays.size());
  state.counters["p50_ms"] = percentile(delays, 0.50);
  state.counters["p99_ms"] = percentile(delays, 0.99);
  state.counters["max_ms"] = delays.empty() ? 0 : *std::max_element(delays.begin(), delays.end());
}
BENCHMARK(BM_LongPollFanout)->Arg(1000)->ArgName("pollers")->Iterations(1)->UseManualTime();

// RSS after `topics` topics each received reports from `producers` producers (64 entries each,
// keys drawn from a 2,000-key pool per topic), binary encoding.
void BM_Memory(benchmark::State& state) {
  const int topics = static_cast<int>(state.range(0));
  const int producers = static_cast<int>(state.range(1));
  Coordinator coord(json{{"http_threads", 16}, {"max_waiters", 16}, {"warmup_ms", 0}});
  const double rss_empty = coord.rss_mib();
  std::vector<std::string> bodies;
  for (int v = 0; v < 16; ++v) {
    hotkey::Report r = random_report("p", "t", 64, static_cast<uint32_t>(v + 1));
    bodies.push_back(hotkey::encode_report_binary(r));
  }
  for (auto _ : state) {
    constexpr int kSenders = 4;
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int s = 0; s < kSenders; ++s) {
      threads.emplace_back([&, s] {
        auto c = coord.client();
        for (int t = s; t < topics; t += kSenders) {
          for (int p = 0; p < producers; ++p) {
            hotkey::Report r = hotkey::decode_report_binary(bodies[(t + p) % bodies.size()]);
            r.topic = "topic-" + std::to_string(t);
            r.producer = "producer-" + std::to_string(p);
            auto res = c->Post("/v1/reports", hotkey::encode_report_binary(r),
                               std::string(hotkey::kReportBinaryContentType));
            if (!res || res->status != 200) failures.fetch_add(1);
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    // Let one detection pass run so plans and published lists are part of the figure.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    state.SetIterationTime(1);
    state.counters["failures"] = failures.load();
  }
  const double rss = coord.rss_mib();
  state.counters["rss_empty_MiB"] = rss_empty;
  state.counters["rss_MiB"] = rss;
  state.counters["per_topic_KiB"] = (rss - rss_empty) * 1024.0 / topics;
}
BENCHMARK(BM_Memory)
    ->Args({1, 100})
    ->Args({100, 100})
    ->Args({1000, 100})
    ->Args({1, 1000})
    ->Args({100, 1000})
    ->ArgNames({"topics", "producers"})
    ->Iterations(1)
    ->UseManualTime();

// What compressing one list answer for the parked requests asking it costs the epoll thread
// (park_watch.cc; once per published list): httplib's gzip, which parked answers use, and its
// brotli (quality 11), which they do not. A list of `keys` hot keys with 8 salts each.
void BM_ParkedAnswerCompression(benchmark::State& state) {
  std::vector<std::string> keys;
  for (int64_t i = 0; i < state.range(0); ++i) keys.push_back("tenant-" + std::to_string(i * 7919));
  const std::string body = hotkey::list_to_json(hotkey::test_support::make_list(
      "orders", 43, 64, hotkey::HashFamily::kMurmur2, keys, 8, 0.01));
  const bool brotli = state.range(1) == 1;
  size_t out = 0;
  for (auto _ : state) {
    std::unique_ptr<httplib::detail::compressor> c;
    if (brotli) {
      c = std::make_unique<httplib::detail::brotli_compressor>();
    } else {
      c = std::make_unique<httplib::detail::gzip_compressor>();
    }
    out = 0;
    c->compress(body.data(), body.size(), true, [&out](const char*, size_t n) {
      out += n;
      return true;
    });
    benchmark::DoNotOptimize(out);
  }
  state.counters["json_KB"] = static_cast<double>(body.size()) / 1000.0;
  state.counters["compressed_KB"] = static_cast<double>(out) / 1000.0;
}
BENCHMARK(BM_ParkedAnswerCompression)
    ->ArgsProduct({{10, 100, 500}, {0, 1}})
    ->ArgNames({"keys", "brotli"})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
