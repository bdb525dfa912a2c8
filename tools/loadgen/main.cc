// hotkey-loadgen: one producer process of a benchmark or demo fleet. Sends a deterministic
// skewed workload (workload.h) at a fixed rate through one partitioning strategy
// (strategy.h) and prints a JSON summary at exit: records sent, throughput, CPU, keys and
// records salted, and when this process first salted each key the schedule made hot.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "strategy.h"
#include "workload.h"

namespace hl = hotkey::loadgen;
using nlohmann::json;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

void usage(std::FILE* out) {
  std::fprintf(out,
               R"(usage: hotkey-loadgen --bootstrap HOST:PORT --topic NAME --strategy S [options]
  One producer process: sends a skewed workload at a fixed rate through strategy S and prints
  a JSON summary on exit (or on SIGINT/SIGTERM).
strategy:
  --strategy S             naive | static | static_spread | adaptive | hotkey | producer
                           (this build: %s); hotkey: the client library's router and sampler
                           in front of a plain librdkafka producer; producer: the wrapper
                           hotkey::client::Producer (every hotkey option applies to both)
  --producer-id ID         stable id (default loadgen-<pid>)
  --salts N                static/adaptive: salts per salted key (default 8); static_spread:
                           that many salts on distinct partitions (at most the partition count)
  --whitelist KEY          static, static_spread: a key salted from the start (repeatable)
  --adaptive-rate R        adaptive: local records/s that make a key hot (default 500)
  --adaptive-half-life S   adaptive: decay half-life in seconds (default 1)
  --coordinator URL        hotkey: coordinator base URL, e.g. http://127.0.0.1:8470
                           (required with --transport http)
  --transport T            hotkey: http (default) or kafka: reports to __hotkey_reports and
                           lists from __hotkey_lists on the --bootstrap cluster (cluster mode)
  --client-prop K=V        hotkey: extra client property (repeatable)
  --wait-list-ms T         hotkey: wait up to T ms for the topic's first hot list (version
                           >= 1) before sending; exit 1 without one (default 0: do not wait)
  --kafka-prop K=V         librdkafka property for every strategy (repeatable)
rate and time:
  --rate N                 records/s this process sends (default 2000)
  --duration S             seconds to send (default 30)
  --records N              stop after N records even before --duration ends (default 0: no
                           limit); with a high --rate, a fixed amount of work for profiling
  --start-at-ms T          wall-clock epoch ms at which the schedule starts (default: now);
                           a fleet shares one value so surges happen at the same moment
  --value-bytes N          record value size (default 100)
workload:
  --keys N                 background keys (default 100000)
  --zipf Z                 background Zipf exponent, 0 = uniform (default 1.0)
  --key-prefix P           background key names P<rank> (default user-)
  --hot-share F            share of traffic on the overlay hot keys (default 0)
  --hot-keys N             overlay keys at once, sharing it equally (default 1)
  --hot-start S            overlay starts at S seconds (default 0)
  --hot-move S             overlay moves to new keys every S seconds (default 0: never)
  --hot-prefix P           overlay key names P<n> (default hot-)
  --seed N                 workload seed (default 1; give each producer its own)
  --hot-min-share F        keys at or above this share count as hot for detection times
                           (default: 1/partitions, one partition's fair share)
output:
  --json-out FILE          write the summary there instead of stdout
  --status-file FILE       rewrite a JSON status there every second (for live displays)
)",
               [] {
                 std::string s;
                 for (const auto& n : hl::strategy_names()) s += (s.empty() ? "" : ", ") + n;
                 return s;
               }()
                   .c_str());
}

// The whole process's CPU (every thread: the application's, librdkafka's, the client's) and
// context switches.
struct CpuUse {
  double user_s = 0, sys_s = 0;
  long voluntary_switches = 0, involuntary_switches = 0;
  double total_s() const { return user_s + sys_s; }
};

CpuUse cpu_use() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return CpuUse{sec(ru.ru_utime), sec(ru.ru_stime), ru.ru_nvcsw, ru.ru_nivcsw};
}

std::string hex_bitmap(const std::vector<bool>& bits) {
  static const char* kHex = "0123456789abcdef";
  std::string out((bits.size() + 3) / 4, '0');
  for (size_t i = 0; i < bits.size(); ++i) {
    if (bits[i]) {
      auto& c = out[i / 4];
      int v = (c <= '9' ? c - '0' : c - 'a' + 10) | (1 << (i % 4));
      c = kHex[v];
    }
  }
  return out;
}

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << text << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

struct Args {
  std::string strategy;
  hl::StrategyOptions options;
  hl::WorkloadSpec workload;
  double rate = 2000;
  double duration_s = 30;
  uint64_t max_records = 0;  // 0: no limit
  int64_t start_at_ms = 0;
  size_t value_bytes = 100;
  double hot_min_share = 0;
  std::string json_out, status_file;
};

std::pair<std::string, std::string> split_prop(const std::string& kv) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw std::invalid_argument("expected NAME=VALUE, got '" + kv + "'");
  }
  return {kv.substr(0, eq), kv.substr(eq + 1)};
}

Args parse_args(int argc, char** argv) {
  Args a;
  a.options.producer_id = "loadgen-" + std::to_string(getpid());
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
      return argv[++i];
    };
    auto number = [&]() -> double {
      std::string v = value();
      size_t used = 0;
      double d = 0;
      try {
        d = std::stod(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size()) throw std::invalid_argument(flag + ": not a number: '" + v + "'");
      return d;
    };
    if (flag == "--help" || flag == "-h") {
      usage(stdout);
      std::exit(0);
    } else if (flag == "--bootstrap") {
      a.options.bootstrap = value();
    } else if (flag == "--topic") {
      a.options.topic = value();
    } else if (flag == "--strategy") {
      a.strategy = value();
    } else if (flag == "--producer-id") {
      a.options.producer_id = value();
    } else if (flag == "--salts") {
      a.options.salts = static_cast<uint32_t>(number());
    } else if (flag == "--whitelist") {
      a.options.whitelist.push_back(value());
    } else if (flag == "--adaptive-rate") {
      a.options.adaptive_rate = number();
    } else if (flag == "--adaptive-half-life") {
      a.options.adaptive_half_life_s = number();
    } else if (flag == "--coordinator") {
      a.options.coordinator_url = value();
    } else if (flag == "--transport") {
      a.options.transport = value();
      if (a.options.transport != "http" && a.options.transport != "kafka") {
        throw std::invalid_argument("--transport: expected http or kafka");
      }
    } else if (flag == "--wait-list-ms") {
      a.options.wait_list_ms = static_cast<int>(number());
    } else if (flag == "--client-prop") {
      a.options.client_props.insert(split_prop(value()));
    } else if (flag == "--kafka-prop") {
      a.options.kafka_props.insert(split_prop(value()));
    } else if (flag == "--rate") {
      a.rate = number();
    } else if (flag == "--duration") {
      a.duration_s = number();
    } else if (flag == "--records") {
      a.max_records = static_cast<uint64_t>(number());
    } else if (flag == "--start-at-ms") {
      a.start_at_ms = static_cast<int64_t>(number());
    } else if (flag == "--value-bytes") {
      a.value_bytes = static_cast<size_t>(number());
    } else if (flag == "--keys") {
      a.workload.keys = static_cast<uint64_t>(number());
    } else if (flag == "--zipf") {
      a.workload.zipf = number();
    } else if (flag == "--key-prefix") {
      a.workload.key_prefix = value();
    } else if (flag == "--hot-share") {
      a.workload.hot_share = number();
    } else if (flag == "--hot-keys") {
      a.workload.hot_keys = static_cast<uint32_t>(number());
    } else if (flag == "--hot-start") {
      a.workload.hot_start_s = number();
    } else if (flag == "--hot-move") {
      a.workload.hot_move_s = number();
    } else if (flag == "--hot-prefix") {
      a.workload.hot_prefix = value();
    } else if (flag == "--seed") {
      a.workload.seed = static_cast<uint64_t>(number());
    } else if (flag == "--hot-min-share") {
      a.hot_min_share = number();
    } else if (flag == "--json-out") {
      a.json_out = value();
    } else if (flag == "--status-file") {
      a.status_file = value();
    } else {
      throw std::invalid_argument("unknown argument '" + flag + "' (see --help)");
    }
  }
  if (a.options.bootstrap.empty() || a.options.topic.empty() || a.strategy.empty()) {
    throw std::invalid_argument("--bootstrap, --topic and --strategy are required");
  }
  if (a.rate <= 0 || a.duration_s <= 0) {
    throw std::invalid_argument("--rate and --duration must be > 0");
  }
  if (a.value_bytes > (1u << 20)) throw std::invalid_argument("--value-bytes at most 1 MiB");
  a.options.seed = a.workload.seed * 7919 + 17;
  return a;
}

// What this process saw of salting, for the summary and the live status.
struct SaltLog {
  std::unordered_map<std::string, double> first_salted_s;  // key -> first salted record, s
  std::unordered_set<std::string> first_salted_locally;    // ... under a local table
  uint64_t salted_records = 0;
  uint64_t local_salted_records = 0;
};

json detection_json(const std::vector<hl::DesignatedHotKey>& hot, const SaltLog& log) {
  json out = json::array();
  for (const auto& h : hot) {
    json j{{"key", h.key}, {"hot_since_s", h.hot_since_s}, {"share", h.share}};
    auto it = log.first_salted_s.find(h.key);
    if (it != log.first_salted_s.end()) {
      j["first_salted_s"] = it->second;
      j["detect_s"] = std::max(0.0, it->second - h.hot_since_s);
      j["local"] = log.first_salted_locally.contains(h.key);
    } else {
      j["first_salted_s"] = nullptr;
      j["detect_s"] = nullptr;
    }
    out.push_back(std::move(j));
  }
  return out;
}

int run(const Args& args) {
  hl::Workload workload(args.workload);
  auto strategy = hl::make_strategy(args.strategy, args.options);
  const int32_t partitions = strategy->partitions();
  const double min_share =
      args.hot_min_share > 0 ? args.hot_min_share : 1.0 / static_cast<double>(partitions);
  const auto hot = workload.designated_hot_keys(min_share, args.duration_s);

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  // Line the fleet up on one wall-clock start so the schedule is shared. A process that
  // comes up late (a loaded machine) joins the schedule where it stands instead of shifting
  // it, and does not burst to make up for the records it missed.
  using namespace std::chrono;
  auto wall_ms = [] {
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  };
  while (!g_stop && args.start_at_ms > 0 && wall_ms() < args.start_at_ms) strategy->poll(5);
  const double late_s =
      args.start_at_ms > 0 ? std::max<int64_t>(0, wall_ms() - args.start_at_ms) / 1000.0 : 0.0;
  const auto t0 =
      steady_clock::now() - duration_cast<steady_clock::duration>(duration<double>(late_s));
  const CpuUse cpu0 = cpu_use();

  const std::string value(args.value_bytes, 'v');
  std::string key;
  std::vector<bool> background_sent(workload.spec().keys, false);
  uint64_t overlay_seen = 0;  // highest overlay number sent, plus one
  SaltLog log;
  uint64_t sent = 0, queue_full = 0;
  // Records handed to the producer and not yet acknowledged, sampled every second: a backlog
  // that grows through the run means the brokers (the mock cluster on a busy machine) take
  // records slower than the rate, and the final flush may time out with records undelivered.
  json backlog_series = json::array();
  auto backlog = [&] {
    const uint64_t done = strategy->delivered() + strategy->failed();
    return sent > done ? sent - done : 0;
  };
  double t = 0;
  auto next_status = t0;
  auto write_status = [&](bool final_status) {
    if (args.status_file.empty()) return;
    json st{{"producer", args.options.producer_id},
            {"strategy", args.strategy},
            {"t_s", t},
            {"sent", sent},
            {"salted_records", log.salted_records},
            {"local_salted_records", log.local_salted_records},
            {"stale", strategy->list_stale()},
            {"keys_salted", log.first_salted_s.size()},
            {"hot_keys", detection_json(hot, log)},
            {"done", final_status}};
    write_atomically(args.status_file, st.dump());
  };

  while (!g_stop) {
    const auto now = steady_clock::now();
    t = duration<double>(now - t0).count();
    if (t >= args.duration_s) break;
    if (args.max_records > 0 && sent >= args.max_records) break;
    if (now >= next_status) {
      write_status(false);
      next_status = now + seconds(1);
      backlog_series.push_back(backlog());
    }
    auto due = static_cast<uint64_t>(args.rate * (t - late_s));
    if (args.max_records > 0) due = std::min(due, args.max_records);
    if (sent >= due) {
      strategy->poll(1);
      continue;
    }
    // Send what is due in chunks, re-reading the clock between chunks.
    for (uint64_t n = std::min<uint64_t>(due - sent, 256); n > 0 && !g_stop; --n) {
      const hl::KeyRef ref = workload.next(t);
      workload.key_of(ref, key);
      bool salted = false;
      while (!strategy->send(key, value, &salted)) {
        ++queue_full;
        strategy->poll(1);
        if (g_stop) break;
      }
      ++sent;
      if (ref.overlay) {
        overlay_seen = std::max(overlay_seen, ref.index + 1);
      } else {
        background_sent[ref.index] = true;
      }
      if (salted) {
        ++log.salted_records;
        const bool local = strategy->last_salt_local();
        if (local) ++log.local_salted_records;
        if (log.first_salted_s.try_emplace(key, t).second && local) {
          log.first_salted_locally.insert(key);
        }
      }
    }
    strategy->poll(0);
  }
  const double active_s =
      std::max(1e-9, duration<double>(steady_clock::now() - t0).count() - late_s);
  const uint64_t backlog_at_stop = backlog();
  const auto flush_start = steady_clock::now();
  const bool flushed = strategy->flush(15000);
  const double flush_s = duration<double>(steady_clock::now() - flush_start).count();
  const CpuUse cpu1 = cpu_use();
  const double cpu_s = cpu1.total_s() - cpu0.total_s();
  write_status(true);

  uint64_t background_distinct = 0;
  for (bool b : background_sent) background_distinct += b ? 1 : 0;
  json keys_salted = json::array();
  for (const auto& [k, ts] : log.first_salted_s) keys_salted.push_back(k);

  json summary{
      {"producer", args.options.producer_id},
      {"strategy", args.strategy},
      {"topic", args.options.topic},
      {"partitions", partitions},
      {"target_rate", args.rate},
      {"duration_s", active_s},
      {"started_late_s", late_s},
      {"records_sent", sent},
      {"records_delivered", strategy->delivered()},
      {"records_failed", strategy->failed()},
      {"flushed", flushed},
      {"queue_full_retries", queue_full},
      {"backlog_at_stop", backlog_at_stop},
      {"backlog_per_s", backlog_series},
      {"flush_s", flush_s},
      {"throughput", static_cast<double>(sent) / active_s},
      {"cpu_s", cpu_s},
      {"cpu_user_s", cpu1.user_s - cpu0.user_s},
      {"cpu_sys_s", cpu1.sys_s - cpu0.sys_s},
      {"context_switches_voluntary", cpu1.voluntary_switches - cpu0.voluntary_switches},
      {"context_switches_involuntary", cpu1.involuntary_switches - cpu0.involuntary_switches},
      {"records_per_cpu_s", cpu_s > 0 ? static_cast<double>(sent) / cpu_s : 0.0},
      {"salted_records", log.salted_records},
      {"local_salted_records", log.local_salted_records},
      {"keys_salted", keys_salted},
      {"background_keys", workload.spec().keys},
      {"background_keys_sent", background_distinct},
      {"background_sent_hex", hex_bitmap(background_sent)},
      {"overlay_keys_sent", overlay_seen},
      {"hot_min_share", min_share},
      {"hot_keys", detection_json(hot, log)},
  };
  const std::string text = summary.dump();
  if (args.json_out.empty()) {
    std::cout << text << std::endl;
  } else {
    write_atomically(args.json_out, text);
  }
  return strategy->failed() > 0 || !flushed ? 3 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "hotkey-loadgen: %s\n", e.what());
    return 2;
  }
  try {
    return run(args);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "hotkey-loadgen: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hotkey-loadgen: %s\n", e.what());
    return 1;
  }
}
