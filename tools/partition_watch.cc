// hotkey-watch: reads a topic's per-partition end offsets from the brokers at an interval and
// prints per-partition record rates, max/avg and the idle-partition share. The broker's own
// offsets are the independent measure of balance used by the demo and the benchmarks.
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: hotkey-watch --bootstrap HOST:PORT --topic NAME [--interval-ms N] "
               "[--count N] [--json] [--once] [--window FROM_MS:TO_MS]\n"
               "  --interval-ms N  sampling interval (default 1000)\n"
               "  --count N        stop after N intervals (default: until SIGINT)\n"
               "  --json           one JSON object per interval: end offsets, rates, max/avg\n"
               "  --once           print the current end offsets once and exit\n"
               "  --window A:B     read the topic back and count, per partition, the records\n"
               "                   whose timestamp (epoch ms) is in [A, B); prints JSON, exits.\n"
               "                   Exact even when deliveries lag behind the producers.\n"
               "  --start-offsets O,O,...  with --window: start reading at these offsets (one\n"
               "                   per partition) instead of the beginning\n"
               "  --follow         with --window: start at the current end, tail the topic\n"
               "                   until SIGINT/SIGTERM, then finish up to the end offsets of\n"
               "                   that moment (for brokers that drop old segments)\n");
}

struct Stats {
  double max_avg = 0;  // max/avg of the deltas (1.0 is perfect)
  double idle = 0;     // share of partitions with no records in the interval
  uint64_t total = 0;
};

Stats stats_of(const std::vector<int64_t>& delta) {
  Stats s;
  if (delta.empty()) return s;
  int64_t mx = 0;
  size_t idle = 0;
  for (auto d : delta) {
    s.total += static_cast<uint64_t>(std::max<int64_t>(d, 0));
    mx = std::max(mx, d);
    if (d <= 0) ++idle;
  }
  double avg = static_cast<double>(s.total) / static_cast<double>(delta.size());
  s.max_avg = avg > 0 ? static_cast<double>(mx) / avg : 0;
  s.idle = static_cast<double>(idle) / static_cast<double>(delta.size());
  return s;
}

// How long a tailing counter waits between rounds of fetches once it has read everything.
constexpr int kFollowPauseMs = 250;

// Counts, per partition, the records whose timestamp lies in [from_ms, to_ms), reading from
// `starts` (an offset, or RD_KAFKA_OFFSET_BEGINNING) up to the end offsets. The broker's log
// is the truth; the producer-set timestamps place each record in the window it was sent in,
// however late it arrived. With `follow`, the end offsets are only fixed once SIGINT/SIGTERM
// arrives (read through `read_ends`): the counter tails the topic while it is written, so a
// broker that drops old log segments (the mock cluster keeps a few MB per partition) loses
// nothing. A record dropped before it was read is an error, never a silent undercount.
bool count_window(const std::string& bootstrap, const std::string& topic,
                  const std::vector<int64_t>& starts, std::vector<int64_t>& ends, bool follow,
                  const std::function<bool(std::vector<int64_t>&)>& read_ends, int64_t from_ms,
                  int64_t to_ms, std::vector<int64_t>& counts, std::string& error) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  const std::pair<const char*, const char*> settings[] = {
      {"bootstrap.servers", bootstrap.c_str()},
      {"group.id", "hotkey-watch"},  // required by the consumer; nothing is committed
      {"enable.auto.commit", "false"},
      {"auto.offset.reset", "error"},
      // Keep up with a hot partition: big fetches, answered quickly.
      {"fetch.wait.max.ms", "50"},
      {"max.partition.fetch.bytes", "8388608"},
      {"fetch.max.bytes", "67108864"},
      {"log_level", "3"}};
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k, v, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      error = errstr;
      rd_kafka_conf_destroy(conf);
      return false;
    }
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (!rk) {
    error = errstr;
    return false;
  }
  const auto n = starts.size();
  counts.assign(n, 0);
  std::vector<int64_t> next(starts);  // next offset to read; BEGINNING until the first record
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(static_cast<int>(n));
  for (size_t p = 0; p < n; ++p) {
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), static_cast<int32_t>(p))->offset =
        starts[p];
  }
  rd_kafka_assign(rk, parts);
  std::fprintf(stderr, "hotkey-watch: counting %zu partitions\n", n);
  std::fflush(stderr);

  bool have_ends = !follow;
  std::chrono::steady_clock::time_point deadline{};
  if (have_ends) deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  auto caught_up = [&] {
    for (size_t p = 0; p < n; ++p) {
      if ((next[p] < 0 ? 0 : next[p]) < ends[p]) return false;
    }
    return true;
  };
  bool ok = true;
  while (ok) {
    if (!have_ends && g_stop) {
      if (!read_ends(ends)) {
        error = "could not read the end offsets";
        ok = false;
        break;
      }
      have_ends = true;
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    }
    if (have_ends && caught_up()) break;
    if (have_ends && std::chrono::steady_clock::now() > deadline) {
      error = "timed out reading the topic back";
      ok = false;
      break;
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, have_ends ? 200 : 20);
    if (!m) {
      if (!have_ends) {
        // Tailing, caught up: pause before fetching again. Fetching as fast as the broker
        // answers, each fetch returns a few records, and the mock cluster finds a fetch's
        // offset by walking the partition's log from its start (rdkafka_mock.c, librdkafka
        // 2.0.2), so the walk grew with the log until the mock took a whole core and the
        // producers' records backed up: 60 s Zipf 1.5 runs of the balance bench had 65,000-
        // 80,000 records unacknowledged when sending stopped, and some flushes timed out.
        // A round every kFollowPauseMs reads what arrived meanwhile in one fetch per
        // partition; the mock keeps several MB per partition, seconds of the hottest one.
        rd_kafka_pause_partitions(rk, parts);
        for (int i = 0; i < kFollowPauseMs / 50 && !g_stop; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        rd_kafka_resume_partitions(rk, parts);
      }
      continue;
    }
    const auto p = static_cast<size_t>(m->partition);
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      // informational
    } else if (m->err) {
      error = std::string("partition ") + std::to_string(m->partition) + ": " +
              rd_kafka_message_errstr(m) +
              (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET
                   ? " (records were deleted before they were read)"
                   : "");
      ok = false;
    } else if (p < n && next[p] >= 0 && m->offset < next[p]) {
      // Read already (a fetch repeated after a pause): counted once.
    } else if (p < n) {
      if (next[p] >= 0 && m->offset > next[p]) {
        error = "partition " + std::to_string(p) + ": records " + std::to_string(next[p]) + ".." +
                std::to_string(m->offset - 1) + " were deleted before they were read";
        ok = false;
      }
      if (!have_ends || m->offset < ends[p]) {
        const int64_t ts = rd_kafka_message_timestamp(m, nullptr);
        if (ts >= from_ms && ts < to_ms) ++counts[p];
      }
      next[p] = m->offset + 1;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_topic_partition_list_destroy(parts);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string bootstrap, topic;
  int interval_ms = 1000;
  long count = 0;
  bool json = false, once = false, follow = false;
  int64_t window_from = -1, window_to = -1;
  std::vector<int64_t> start_offsets;  // --window: where to start reading, per partition
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "hotkey-watch: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--bootstrap") {
      bootstrap = value();
    } else if (a == "--topic") {
      topic = value();
    } else if (a == "--interval-ms") {
      interval_ms = std::atoi(value().c_str());
    } else if (a == "--count") {
      count = std::atol(value().c_str());
    } else if (a == "--json") {
      json = true;
    } else if (a == "--once") {
      once = true;
    } else if (a == "--start-offsets") {
      std::string v = value();
      for (size_t pos = 0; pos <= v.size();) {
        size_t comma = v.find(',', pos);
        if (comma == std::string::npos) comma = v.size();
        start_offsets.push_back(std::atoll(v.substr(pos, comma - pos).c_str()));
        pos = comma + 1;
      }
    } else if (a == "--follow") {
      follow = true;
    } else if (a == "--window") {
      std::string w = value();
      auto colon = w.find(':');
      window_from = colon == std::string::npos ? -1 : std::atoll(w.c_str());
      window_to = colon == std::string::npos ? -1 : std::atoll(w.c_str() + colon + 1);
      if (window_from < 0 || window_to <= window_from) {
        std::fprintf(stderr, "hotkey-watch: --window wants FROM_MS:TO_MS with FROM < TO\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "hotkey-watch: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (bootstrap.empty() || topic.empty() || interval_ms < 10) {
    std::fprintf(stderr,
                 "hotkey-watch: --bootstrap and --topic are required; --interval-ms >= 10\n");
    return 2;
  }

  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), errstr, sizeof errstr) !=
      RD_KAFKA_CONF_OK) {
    std::fprintf(stderr, "hotkey-watch: %s\n", errstr);
    return 2;
  }
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) {
    std::fprintf(stderr, "hotkey-watch: %s\n", errstr);
    return 1;
  }
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
  if (err || md->topic_cnt != 1 || md->topics[0].err) {
    std::fprintf(stderr, "hotkey-watch: metadata for %s: %s\n", topic.c_str(),
                 rd_kafka_err2str(err ? err : (md ? md->topics[0].err : err)));
    if (md) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return 1;
  }
  const int partitions = md->topics[0].partition_cnt;
  rd_kafka_metadata_destroy(md);

  // One ListOffsets(latest) request per leader broker for all partitions at once: querying
  // the watermarks partition by partition takes a round trip each, which on a loaded machine
  // smears one "snapshot" over seconds.
  auto read_offsets = [&](std::vector<int64_t>& out) -> bool {
    out.assign(static_cast<size_t>(partitions), 0);
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; ++p) {
      rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_END;
    }
    rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, parts, 10000);
    bool ok = !e;
    for (int i = 0; ok && i < parts->cnt; ++i) {
      const auto& tp = parts->elems[i];
      if (tp.err || tp.partition < 0 || tp.partition >= partitions || tp.offset < 0) {
        ok = false;
      } else {
        out[static_cast<size_t>(tp.partition)] = tp.offset;
      }
    }
    rd_kafka_topic_partition_list_destroy(parts);
    return ok;
  };

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  if (window_from >= 0) {
    std::vector<int64_t> ends;
    if (!read_offsets(ends)) {
      std::fprintf(stderr, "hotkey-watch: could not read offsets\n");
      return 1;
    }
    // Following starts at today's end; a one-shot count reads everything the brokers hold.
    std::vector<int64_t> starts =
        follow ? ends : std::vector<int64_t>(ends.size(), RD_KAFKA_OFFSET_BEGINNING);
    if (!follow && !start_offsets.empty()) {
      if (start_offsets.size() != ends.size()) {
        std::fprintf(stderr, "hotkey-watch: --start-offsets needs %zu values\n", ends.size());
        return 2;
      }
      for (size_t p = 0; p < ends.size(); ++p) {
        starts[p] = std::clamp<int64_t>(start_offsets[p], 0, ends[p]);
      }
    }
    std::vector<int64_t> counts;
    std::string error;
    const bool counted = count_window(bootstrap, topic, starts, ends, follow, read_offsets,
                                      window_from, window_to, counts, error);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    if (!counted) {
      std::fprintf(stderr, "hotkey-watch: %s\n", error.c_str());
      return 1;
    }
    Stats s = stats_of(counts);
    std::cout << nlohmann::json{{"topic", topic},      {"window_ms", {window_from, window_to}},
                                {"counts", counts},    {"end_offsets", ends},
                                {"total", s.total},    {"max_avg", s.max_avg},
                                {"idle_share", s.idle}}
              << std::endl;
    return 0;
  }
  std::vector<int64_t> prev, cur;
  if (!read_offsets(prev)) {
    std::fprintf(stderr, "hotkey-watch: could not read offsets\n");
    return 1;
  }
  if (once) {
    Stats s = stats_of(prev);
    if (json) {
      std::cout << nlohmann::json{{"topic", topic},
                                  {"end_offsets", prev},
                                  {"total", s.total},
                                  {"max_avg", s.max_avg},
                                  {"idle_share", s.idle}}
                << std::endl;
    } else {
      for (int p = 0; p < partitions; ++p) std::printf("%d\t%lld\n", p, (long long)prev[p]);
      std::printf("max/avg %.3f  idle %.0f%%  total %llu\n", s.max_avg, s.idle * 100,
                  (unsigned long long)s.total);
    }
  }
  auto last = std::chrono::steady_clock::now();
  for (long n = 0; !once && !g_stop && (count == 0 || n < count); ++n) {
    auto deadline = last + std::chrono::milliseconds(interval_ms);
    while (!g_stop && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (g_stop) break;
    if (!read_offsets(cur)) continue;
    auto now = std::chrono::steady_clock::now();
    double secs = std::chrono::duration<double>(now - last).count();
    last = now;
    std::vector<int64_t> delta(cur.size());
    for (size_t i = 0; i < cur.size(); ++i) delta[i] = cur[i] - prev[i];
    prev = cur;
    Stats s = stats_of(delta);
    if (json) {
      std::vector<double> rates;
      for (auto d : delta) rates.push_back(static_cast<double>(d) / secs);
      std::cout << nlohmann::json{{"topic", topic},
                                  {"interval_s", secs},
                                  {"end_offsets", cur},
                                  {"rates", rates},
                                  {"total_rate", s.total / secs},
                                  {"max_avg", s.max_avg},
                                  {"idle_share", s.idle}}
                << std::endl;
    } else {
      std::printf("%8.0f rec/s  max/avg %6.2f  idle %3.0f%%  |", s.total / secs, s.max_avg,
                  s.idle * 100);
      int64_t mx = std::max<int64_t>(1, *std::max_element(delta.begin(), delta.end()));
      static const char* kBars[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
      for (auto d : delta) std::printf("%s", kBars[std::clamp<int64_t>(d * 8 / mx, 0, 8)]);
      std::printf("|\n");
      std::fflush(stdout);
    }
  }
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  return 0;
}
