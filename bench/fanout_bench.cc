// hotkey-fanout-bench: list fan-out through Kafka (cluster mode). A publisher writes a new list
// version to its lists partition once per round, as an owning coordinator does; N simulated
// producer subscribers, spread over P processes as real producers are, each its own librdkafka
// consumer configured as the client's kafka transport configures it (group.id set but never
// joined, assign() of the topic's lists partition from the beginning, fetch.wait.max.ms=500),
// receive it. For every round it prints the time from just before the produce call until each
// subscriber polled the record (p50 / p99 / max over subscribers), then a summary line.
// The Kafka is a real Apache Kafka started for the run (scripts/kafka.sh, one node), an
// existing one (--bootstrap), or librdkafka's mock cluster (--mock).
//
//   hotkey-fanout-bench --subscribers 1000 --processes 4 --rounds 10 [--warmup-rounds 20]
//
// --subscriber-librdkafka FILE runs the subscriber processes on another librdkafka.so.1 (the
// publisher stays on the one the bench was linked with), e.g. the one in the PyPI confluent-kafka
// wheel the build installs for the plugin tests. librdkafka before 2.4.0 (Debian's 2.0.2) spins
// its main thread for up to 1 ms before every timer (confluentinc/librdkafka#4671, fixed in
// 2.4.0): about half a millisecond of CPU a second per handle, which 1,000 simulated producers on
// one machine turn into ~0.5 of a core, during the rounds too (docs/BENCHMARKS.md).
//
// --pin-broker gives the broker CPU 0 to itself and the publisher and subscribers the other CPUs,
// as a broker of its own machine has: on 2 cores, during a round the simulated subscribers'
// librdkafka threads take about half the CPU and so slow the broker's answers (docs/BENCHMARKS.md).
//
// Measured on CLOCK_MONOTONIC, which every process on the host shares, when the subscriber
// process's loop polls the record (the loop sleeps in poll(2) until a consumer's queue signals
// a message, then polls that consumer; --busy-poll: every consumer with a zero timeout, then
// 0.5 ms asleep), so the figure is the delivery as an application thread sees it, not the
// parsing done for all N subscribers (the parse and validation cost of one list is printed apart: each real producer parses its own copy). It
// once took the librdkafka queue event's time instead, which a starved process could pair with
// the next round's record (the event of a record already polled): rounds came out negative.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hotkey/hotkey_list.h"
#include "hotkey/kafka_contract.h"
#include "hotkey/partitioner.h"
#include "hotkey/salt_planner.h"
#include "support/lists.h"
#include "support/real_kafka.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch())
      .count();
}

struct Subscriber {
  rd_kafka_t* rk = nullptr;
};

// CPU seconds (user + system) a process has used so far, from /proc/PID/stat (0 when unknown).
double process_cpu_s(int pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return 0;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  // Fields after the command (which may hold spaces) start after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return 0;
  unsigned long long utime = 0, stime = 0;
  // state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
  if (std::sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                  &stime) != 2) {
    return 0;
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double self_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// --pin-broker: every thread of process `pid` on CPU 0 (threads the JVM starts later inherit
// it), this process and the subscriber processes it starts on the other CPUs. False when the
// machine has one CPU or the kernel refused.
bool pin_broker(int pid) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 2) return false;
  cpu_set_t broker, rest;
  CPU_ZERO(&broker);
  CPU_ZERO(&rest);
  CPU_SET(0, &broker);
  for (long c = 1; c < cpus; ++c) CPU_SET(static_cast<int>(c), &rest);
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(task.path().filename().c_str()));
    if (sched_setaffinity(tid, sizeof broker, &broker) != 0) return false;
  }
  return !ec && sched_setaffinity(0, sizeof rest, &rest) == 0;
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

constexpr const char* kTopic = "orders";
constexpr int kPartitions = 12;

std::string list_json(uint64_t version) {
  return hotkey::list_to_json(hotkey::test_support::make_list(
      kTopic, version, 32, hotkey::HashFamily::kMurmur2, {"tenant-42"}, 8, /*share=*/0));
}

// Reads the version out of a list record without a full parse (the subscriber's parse is
// measured apart).
uint64_t version_of(const rd_kafka_message_t* m) {
  const std::string_view v(static_cast<const char*>(m->payload), m->len);
  const auto at = v.find("\"version\":");
  return at == std::string_view::npos ? 0 : std::strtoull(v.data() + at + 10, nullptr, 10);
}

// One subscriber process: `n` consumers; writes "ready\n" to `out` once each holds version 1,
// follows until it has seen `last` on every consumer (or 60 s passed without news), then writes
// one line "version arrival_us" per consumer and version from 2 on, its CPU over the rounds from
// `first_measured` ("cpu S") and the versions its safety sweep found ("swept N").
int run_subscribers(const std::string& bootstrap, int n, uint64_t first_measured, uint64_t last,
                    const std::string& fetch_wait, bool busy_poll, FILE* out) {
  const int32_t part = hotkey::partition_for(hotkey::HashFamily::kMurmur2, kTopic, kPartitions);
  char errstr[512];
  std::vector<std::unique_ptr<Subscriber>> subs;
  for (int i = 0; i < n; ++i) {
    auto s = std::make_unique<Subscriber>();
    rd_kafka_conf_t* c = rd_kafka_conf_new();
    for (auto [k, v] :
         std::vector<std::pair<const char*, const char*>>{{"bootstrap.servers", bootstrap.c_str()},
                                                          {"group.id", "hotkey.clients"},
                                                          {"enable.auto.commit", "false"},
                                                          {"enable.auto.offset.store", "false"},
                                                          {"auto.offset.reset", "earliest"},
                                                          {"fetch.wait.max.ms", fetch_wait.c_str()},
                                                          {"log_level", "2"}}) {
      rd_kafka_conf_set(c, k, v, errstr, sizeof errstr);
    }
    s->rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr, sizeof errstr);
    if (s->rk == nullptr) {
      std::fprintf(stderr, "subscriber %d: %s\n", i, errstr);
      return 1;
    }
    rd_kafka_poll_set_consumer(s->rk);
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, "__hotkey_lists", part)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(s->rk, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    subs.push_back(std::move(s));
  }
  // Wake-ups: every consumer's queue writes its index to one pipe when a message lands in it
  // (rd_kafka_queue_io_event_enable), so the process sleeps in poll(2) between lists, as a real
  // producer's list thread sleeps in its consumer poll, instead of sweeping every consumer every
  // 0.5 ms (--busy-poll, the bench's loop before 2026-12-04: the sweeps of 4 processes took
  // about as much CPU as the broker did).
  int wake[2] = {-1, -1};
  if (!busy_poll) {
    if (pipe2(wake, O_NONBLOCK | O_CLOEXEC) != 0) return 1;
  }
  std::vector<int32_t> index(subs.size());
  std::vector<rd_kafka_queue_t*> queues;
  for (size_t i = 0; i < subs.size() && !busy_poll; ++i) {
    index[i] = static_cast<int32_t>(i);
    rd_kafka_queue_t* q = rd_kafka_queue_get_consumer(subs[i]->rk);
    rd_kafka_queue_io_event_enable(q, wake[1], &index[i], sizeof index[i]);
    queues.push_back(q);
  }
  std::vector<uint64_t> held(subs.size(), 0);
  // Kept in memory and written at the end: the parent reads the pipe only after the rounds,
  // and a pipe holds 64 KiB (at 250 consumers that is ~13 rounds of lines, after which a
  // subscriber writing as it went blocked, and every later round measured the stall).
  std::vector<std::pair<uint64_t, int64_t>> arrivals;
  arrivals.reserve(subs.size() * static_cast<size_t>(last));
  // Takes every message consumer i has, records (version, the time it was polled) for versions
  // above what it held; the first round's catch-up is not recorded. True when it had news.
  auto drain_one = [&](size_t i, bool record) {
    bool news = false;
    while (rd_kafka_message_t* m = rd_kafka_consumer_poll(subs[i]->rk, 0)) {
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->payload) {
        const uint64_t v = version_of(m);
        if (v > held[i]) {
          held[i] = v;
          news = true;
          if (record && v > 1) arrivals.emplace_back(v, now_us());
        }
      }
      rd_kafka_message_destroy(m);
    }
    return news;
  };
  auto drain = [&](bool record) {
    size_t found = 0;
    for (size_t i = 0; i < subs.size(); ++i) found += drain_one(i, record) ? 1 : 0;
    return found;
  };
  const auto setup_deadline = Clock::now() + std::chrono::seconds(300);
  while (Clock::now() < setup_deadline &&
         std::any_of(held.begin(), held.end(), [](uint64_t v) { return v < 1; })) {
    drain(false);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(out, "ready %s\n", rd_kafka_version_str());
  std::fflush(out);
  // The CPU is counted from when every consumer holds the last warm-up version.
  double cpu_from = -1;
  auto news = Clock::now();
  // Versions found by the 100 ms safety sweep rather than by a wake-up (expected 0: a missed
  // wake-up would show here and as a ~100 ms latency).
  size_t swept = 0;
  while (std::any_of(held.begin(), held.end(), [&](uint64_t v) { return v < last; }) &&
         Clock::now() - news < std::chrono::seconds(60)) {
    if (cpu_from < 0 && std::all_of(held.begin(), held.end(),
                                    [&](uint64_t v) { return v + 1 >= first_measured; })) {
      cpu_from = self_cpu_s();
    }
    if (busy_poll) {
      if (drain(true) > 0) news = Clock::now();
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      continue;
    }
    pollfd pfd{wake[0], POLLIN, 0};
    if (poll(&pfd, 1, 100) > 0) {
      int32_t woken[256];
      ssize_t got;
      while ((got = read(wake[0], woken, sizeof woken)) > 0) {
        for (ssize_t k = 0; k < got / static_cast<ssize_t>(sizeof(int32_t)); ++k) {
          if (woken[k] >= 0 && static_cast<size_t>(woken[k]) < subs.size() &&
              drain_one(static_cast<size_t>(woken[k]), true)) {
            news = Clock::now();
          }
        }
      }
    } else {
      const size_t found = drain(true);
      swept += found;
      if (found > 0) news = Clock::now();
    }
  }
  // The CPU this process spent over the measured rounds.
  const double cpu = cpu_from < 0 ? 0 : self_cpu_s() - cpu_from;
  for (const auto& [v, at] : arrivals) {
    std::fprintf(out, "%llu %lld\n", static_cast<unsigned long long>(v), static_cast<long long>(at));
  }
  std::fprintf(out, "cpu %.3f\n", cpu);
  std::fprintf(out, "swept %zu\n", swept);
  std::fflush(out);
  for (rd_kafka_queue_t* q : queues) {
    rd_kafka_queue_io_event_enable(q, -1, nullptr, 0);
    rd_kafka_queue_destroy(q);
  }
  for (auto& s : subs) {
    rd_kafka_consumer_close(s->rk);
    rd_kafka_destroy(s->rk);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 8 && std::strcmp(argv[1], "--subscriber-process") == 0) {
    return run_subscribers(argv[2], std::atoi(argv[3]), std::strtoull(argv[4], nullptr, 10),
                           std::strtoull(argv[5], nullptr, 10), argv[6],
                           std::strcmp(argv[7], "busy") == 0, stdout);
  }
  int subscribers = 1000;
  int processes = 4;
  int rounds = 10;
  int warmup = 20;
  std::string bootstrap;
  std::string fetch_wait(hotkey::kListsFetchWaitMs);  // the client's kafka transport's
  bool mock = false;
  bool busy_poll = false;
  bool pin = false;
  std::string sub_lib;  // --subscriber-librdkafka
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--mock") {
      mock = true;
    } else if (f == "--busy-poll") {
      busy_poll = true;
    } else if (f == "--pin-broker") {
      pin = true;
    } else if (i + 1 < argc && f == "--subscribers") {
      subscribers = std::atoi(argv[++i]);
    } else if (i + 1 < argc && f == "--processes") {
      processes = std::atoi(argv[++i]);
    } else if (i + 1 < argc && f == "--rounds") {
      rounds = std::atoi(argv[++i]);
    } else if (i + 1 < argc && f == "--warmup-rounds") {
      warmup = std::atoi(argv[++i]);
    } else if (i + 1 < argc && f == "--fetch-wait-ms") {
      fetch_wait = argv[++i];
    } else if (i + 1 < argc && f == "--subscriber-librdkafka") {
      sub_lib = argv[++i];
    } else if (i + 1 < argc && f == "--bootstrap") {
      bootstrap = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: hotkey-fanout-bench [--subscribers N] [--processes P] [--rounds R] "
                   "[--warmup-rounds W] "
                   "[--fetch-wait-ms W] [--busy-poll] [--pin-broker] [--subscriber-librdkafka FILE] "
                   "[--bootstrap B | --mock]\n");
      return 2;
    }
  }
  if (subscribers < 1 || processes < 1 || processes > subscribers || rounds < 1 || warmup < 0) {
    std::fprintf(stderr,
                 "hotkey-fanout-bench: need 1 <= processes <= subscribers, rounds >= 1, "
                 "warmup-rounds >= 0\n");
    return 2;
  }
  // The subscribers' librdkafka: FILE as librdkafka.so.1 in a directory of its own, put first on
  // their LD_LIBRARY_PATH.
  std::string sub_lib_dir;
  struct RemoveDir {  // on every return: the children have loaded the library by then
    const std::string& dir;
    ~RemoveDir() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  } remove_sub_lib_dir{sub_lib_dir};
  if (!sub_lib.empty()) {
    std::error_code ec;
    const auto target = std::filesystem::canonical(sub_lib, ec);
    if (ec || !std::filesystem::is_regular_file(target)) {
      std::fprintf(stderr, "hotkey-fanout-bench: --subscriber-librdkafka %s: not a file\n",
                   sub_lib.c_str());
      return 2;
    }
    char dir[] = "/tmp/hotkey-fanout-rdk-XXXXXX";
    if (mkdtemp(dir) == nullptr) return 1;
    sub_lib_dir = dir;
    std::filesystem::create_symlink(target, sub_lib_dir + "/librdkafka.so.1", ec);
    if (ec) {
      std::fprintf(stderr, "hotkey-fanout-bench: %s: %s\n", sub_lib_dir.c_str(),
                   ec.message().c_str());
      return 1;
    }
  }
  char errstr[512];
  std::unique_ptr<hotkey::test_support::RealKafka> real;
  rd_kafka_t* mrk = nullptr;
  rd_kafka_mock_cluster_t* mc = nullptr;
  if (mock) {
    rd_kafka_conf_t* mconf = rd_kafka_conf_new();
    rd_kafka_conf_set(mconf, "log_level", "2", errstr, sizeof errstr);
    mrk = rd_kafka_new(RD_KAFKA_PRODUCER, mconf, errstr, sizeof errstr);
    mc = rd_kafka_mock_cluster_new(mrk, 1);
    rd_kafka_mock_topic_create(mc, "__hotkey_lists", kPartitions, 1);
    bootstrap = rd_kafka_mock_cluster_bootstraps(mc);
  } else if (bootstrap.empty()) {
    real = std::make_unique<hotkey::test_support::RealKafka>();
    real->create_topic("__hotkey_lists", kPartitions, -1, {{"cleanup.policy", "compact"}});
    bootstrap = real->bootstrap();
  }
  if (pin && (!real || !pin_broker(real->node_pid(0)))) {
    std::fprintf(stderr,
                 "hotkey-fanout-bench: --pin-broker needs the broker started here (not --bootstrap "
                 "or --mock) and at least 2 CPUs\n");
    return 2;
  }
  if (pin) {
    std::printf("broker pinned to CPU 0, publisher and subscribers to the other CPUs (--pin-broker)\n");
  }
  std::printf("Kafka: %s (%s); %d subscribers in %d processes, fetch.wait.max.ms %s, %s\n",
              mock ? "librdkafka mock cluster" : real ? "Apache Kafka, one node (scripts/kafka.sh)"
                                                      : "given",
              bootstrap.c_str(), subscribers, processes, fetch_wait.c_str(),
              busy_poll ? "subscriber loop sweeps every 0.5 ms (--busy-poll)"
                        : "subscriber loop woken by its consumers' queues");
  const int32_t part = hotkey::partition_for(hotkey::HashFamily::kMurmur2, kTopic, kPartitions);

  // The publisher: an idempotent producer writing the partition explicitly, as an owner does.
  rd_kafka_conf_t* pconf = rd_kafka_conf_new();
  rd_kafka_conf_set(pconf, "bootstrap.servers", bootstrap.c_str(), errstr, sizeof errstr);
  rd_kafka_conf_set(pconf, "enable.idempotence", "true", errstr, sizeof errstr);
  rd_kafka_conf_set(pconf, "linger.ms", "0", errstr, sizeof errstr);
  rd_kafka_t* prk = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, errstr, sizeof errstr);
  auto publish = [&](uint64_t version) {
    std::string v = list_json(version);
    rd_kafka_producev(prk, RD_KAFKA_V_TOPIC("__hotkey_lists"), RD_KAFKA_V_PARTITION(part),
                      RD_KAFKA_V_KEY(kTopic, std::strlen(kTopic)),
                      RD_KAFKA_V_VALUE(v.data(), v.size()),
                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    rd_kafka_poll(prk, 0);
  };
  publish(1);
  rd_kafka_flush(prk, 10000);

  // The subscriber processes, each reporting through a pipe.
  // Versions 2 .. first-1 are the warm-up rounds (a broker just started is still compiling its
  // fetch path: its first rounds are 2-4x slower than the later ones), first .. last measured.
  const uint64_t first = static_cast<uint64_t>(warmup) + 2;
  const uint64_t last = static_cast<uint64_t>(warmup + rounds) + 1;
  std::vector<pid_t> pids;
  std::vector<FILE*> pipes;
  const auto t_setup = Clock::now();
  // Everything the children need is made before fork(): the parent has librdkafka threads, so a
  // child may call only async-signal-safe functions until it execs (no allocation, no setenv).
  const std::string fs = std::to_string(first), ls = std::to_string(last);
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) {
    if (sub_lib_dir.empty() || std::strncmp(*e, "LD_LIBRARY_PATH=", 16) != 0) {
      env_store.emplace_back(*e);
    }
  }
  if (!sub_lib_dir.empty()) env_store.push_back("LD_LIBRARY_PATH=" + sub_lib_dir);
  std::vector<char*> child_env;
  for (auto& e : env_store) child_env.push_back(e.data());
  child_env.push_back(nullptr);
  for (int p = 0; p < processes; ++p) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    const std::string ns =
        std::to_string(subscribers / processes + (p < subscribers % processes ? 1 : 0));
    const char* child_argv[] = {argv[0], "--subscriber-process", bootstrap.c_str(), ns.c_str(),
                                fs.c_str(), ls.c_str(), fetch_wait.c_str(),
                                busy_poll ? "busy" : "wake", nullptr};
    const pid_t pid = fork();
    if (pid == 0) {
      // A fresh process image: nothing of the parent's librdkafka state crosses the fork.
      close(fds[0]);
      dup2(fds[1], STDOUT_FILENO);
      close(fds[1]);
      execve("/proc/self/exe", const_cast<char* const*>(child_argv), child_env.data());
      _exit(127);
    }
    close(fds[1]);
    pids.push_back(pid);
    pipes.push_back(fdopen(fds[0], "r"));
  }
  char line[128];
  std::string sub_version;
  for (FILE* f : pipes) {
    if (!std::fgets(line, sizeof line, f) || std::strncmp(line, "ready ", 6) != 0) {
      std::fprintf(stderr, "a subscriber process did not catch up\n");
      return 1;
    }
    sub_version.assign(line + 6, std::strcspn(line + 6, "\n"));
  }
  std::printf("%d subscribers caught up with version 1 in %.1f s; librdkafka %s (publisher %s)\n",
              subscribers, std::chrono::duration<double>(Clock::now() - t_setup).count(),
              sub_version.c_str(), rd_kafka_version_str());

  const int broker_pid = real ? real->node_pid(0) : 0;
  double broker_cpu_before = 0;
  double self_cpu_before = 0;
  auto rounds_start = Clock::now();
  std::vector<int64_t> published_us(last + 1, 0);
  for (int r = 0; r < warmup + rounds; ++r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (r == warmup) {
      broker_cpu_before = broker_pid ? process_cpu_s(broker_pid) : 0;
      self_cpu_before = self_cpu_s();
      rounds_start = Clock::now();
    }
    const uint64_t v = static_cast<uint64_t>(r) + 2;
    published_us[v] = now_us();
    publish(v);
    rd_kafka_flush(prk, 10000);
  }
  std::vector<std::vector<double>> per_round(last + 1);
  double subscribers_cpu = 0;
  unsigned long long swept_total = 0;
  for (FILE* f : pipes) {
    unsigned long long v = 0, swept = 0;
    long long at = 0;
    double cpu = 0;
    while (std::fgets(line, sizeof line, f)) {
      if (std::sscanf(line, "cpu %lf", &cpu) == 1) {
        subscribers_cpu += cpu;
      } else if (std::sscanf(line, "swept %llu", &swept) == 1) {
        swept_total += swept;
      } else if (std::sscanf(line, "%llu %lld", &v, &at) == 2 && v >= 2 && v <= last) {
        per_round[v].push_back(static_cast<double>(at - published_us[v]) / 1000.0);
      }
    }
    std::fclose(f);
  }
  // Read when the last subscriber process is done: the rounds plus its last drain.
  const double rounds_wall = std::chrono::duration<double>(Clock::now() - rounds_start).count();
  const double broker_cpu = broker_pid ? process_cpu_s(broker_pid) - broker_cpu_before : 0;
  const double publisher_cpu = self_cpu_s() - self_cpu_before;
  for (pid_t pid : pids) waitpid(pid, nullptr, 0);
  std::vector<double> all;
  if (warmup > 0) {
    std::printf("warm-up rounds (not counted), p99 ms:");
    for (uint64_t v = 2; v < first; ++v) std::printf(" %.0f", pct(per_round[v], 0.99));
    std::printf("\n");
  }
  for (uint64_t v = first; v <= last; ++v) {
    const auto& lat = per_round[v];
    std::printf(
        "round %llu: %zu/%d subscribers have the new version; ms p50 %.1f p99 %.1f max %.1f\n",
        static_cast<unsigned long long>(v - first), lat.size(), subscribers, pct(lat, 0.5),
        pct(lat, 0.99), pct(lat, 1.0));
    all.insert(all.end(), lat.begin(), lat.end());
  }
  const std::string one = list_json(99);
  const auto tp = Clock::now();
  for (int i = 0; i < 1000; ++i) (void)hotkey::parse_list_json(one);
  const double parse_us =
      std::chrono::duration<double, std::micro>(Clock::now() - tp).count() / 1000.0;
  std::printf(
      "summary: %d subscribers in %d processes, %d rounds after %d warm-up rounds, %zu of %zu "
      "deliveries; publish -> "
      "subscriber poll ms: p50 %.1f p99 %.1f max %.1f; parse+validate of the list %.1f us\n",
      subscribers, processes, rounds, warmup, all.size(),
      static_cast<size_t>(subscribers) * static_cast<size_t>(rounds), pct(all, 0.5),
      pct(all, 0.99), pct(all, 1.0), parse_us);
  // Where the time goes: the CPU each side used over the rounds against what the host's cores
  // could give in that time (a broker or subscribers short of CPU show up here, not as Kafka).
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  std::printf(
      "cpu over the counted rounds (%.1f s wall, %ld cores = %.1f CPU-s): broker %.1f CPU-s%s, "
      "subscriber processes %.1f, publisher %.2f; versions found by the safety sweep, not a "
      "wake-up: %llu\n",
      rounds_wall, cores, rounds_wall * static_cast<double>(cores), broker_cpu,
      broker_pid ? "" : " (not measured: not started here)", subscribers_cpu, publisher_cpu,
      swept_total);
  rd_kafka_destroy(prk);
  if (mc) rd_kafka_mock_cluster_destroy(mc);
  if (mrk) rd_kafka_destroy(mrk);
  return 0;
}
