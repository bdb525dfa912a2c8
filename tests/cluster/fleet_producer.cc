// hotkey-test-fleet-producer: one producer process of the cluster end-to-end tests. Sends a
// skewed workload to several data topics through hotkey::Producer (the real client library,
// hotkey.transport=kafka or http) and rewrites a JSON status file every 200 ms:
//   {"sent","delivered","failed","refused","max_produce_us","regressions","done",
//    "topics":{T:{"version","keys":[...],"salted","cold"}}}
// "regressions" counts moments this process saw a topic's list version lower than one it saw
// before (sampled every 20 ms); "refused" counts produce() calls librdkafka refused (queue full);
// max_produce_us is the longest single produce() call. Exits after --duration or on SIGTERM.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "hotkey/client/producer.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t c = s.find(',', start);
    if (c == std::string::npos) c = s.size();
    if (c > start) out.push_back(s.substr(start, c - start));
    start = c + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string bootstrap, transport = "kafka", coordinator, id = "fleet-" + std::to_string(getpid());
  std::string status_path, topics_arg;
  double rate = 1000, duration_s = 60, hot_share = 0.4;
  int tail_keys = 2000;
  unsigned seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string f = argv[i], v = argv[i + 1];
    if (f == "--bootstrap")
      bootstrap = v;
    else if (f == "--transport")
      transport = v;
    else if (f == "--coordinator")
      coordinator = v;
    else if (f == "--id")
      id = v;
    else if (f == "--topics")
      topics_arg = v;
    else if (f == "--rate")
      rate = std::stod(v);
    else if (f == "--duration")
      duration_s = std::stod(v);
    else if (f == "--hot-share")
      hot_share = std::stod(v);
    else if (f == "--tail-keys")
      tail_keys = std::stoi(v);
    else if (f == "--seed")
      seed = static_cast<unsigned>(std::stoul(v));
    else if (f == "--status")
      status_path = v;
    else {
      std::fprintf(stderr, "hotkey-test-fleet-producer: unknown flag %s\n", f.c_str());
      return 2;
    }
  }
  const std::vector<std::string> topics = split(topics_arg);
  if (bootstrap.empty() || topics.empty() || status_path.empty()) {
    std::fprintf(stderr,
                 "usage: hotkey-test-fleet-producer --bootstrap B --topics T1,T2 --status FILE "
                 "[--transport kafka|http --coordinator URL --id ID --rate N --duration S "
                 "--hot-share F --tail-keys N --seed N]\n");
    return 2;
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);

  hotkey::client::Properties props{{"bootstrap.servers", bootstrap},
                                   {"partitioner", "murmur2_random"},
                                   {"linger.ms", "20"},
                                   {"log_level", "2"},
                                   {"hotkey.transport", transport},
                                   {"hotkey.producer.id", id},
                                   {"hotkey.report.interval.ms", "300"},
                                   // One report per topic per round must fit: the queue bound
                                   // is per client, not per topic.
                                   {"hotkey.report.queue.max", "64"},
                                   {"hotkey.topics", topics_arg}};
  if (transport == "http") props["hotkey.coordinator.url"] = coordinator;
  std::atomic<uint64_t> delivered{0}, failed{0};
  hotkey::Producer producer(props, [&](const hotkey::DeliveryReport& r) {
    (r.error == 0 ? delivered : failed).fetch_add(1);
  });
  hotkey::client::Client& client = producer.client();
  std::vector<hotkey::client::TopicId> ids;
  for (const auto& t : topics) ids.push_back(client.topic(t));

  // Version sampler: a client must never route with a lower version than it routed with.
  std::atomic<uint64_t> regressions{0};
  std::atomic<bool> stop_sampler{false};
  std::thread sampler([&] {
    std::vector<uint64_t> seen(ids.size(), 0);
    while (!stop_sampler.load()) {
      for (size_t i = 0; i < ids.size(); ++i) {
        uint64_t v = client.router().version(ids[i]);
        if (v < seen[i]) regressions.fetch_add(1);
        seen[i] = std::max(seen[i], v);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });

  using Clock = std::chrono::steady_clock;
  uint64_t sent = 0, refused = 0;
  int64_t max_produce_us = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::milliseconds(static_cast<int64_t>(duration_s * 1000));
  auto next_status = start;
  auto write_status = [&](bool done) {
    nlohmann::json j;
    j["sent"] = sent;
    j["delivered"] = delivered.load();
    j["failed"] = failed.load();
    j["refused"] = refused;
    j["max_produce_us"] = max_produce_us;
    j["regressions"] = regressions.load();
    j["done"] = done;
    hotkey::client::ClientStats s = client.stats();
    j["reports_sent"] = s.reports_sent;
    for (const auto& t : s.topics) {
      nlohmann::json tj;
      tj["version"] = t.list_version;
      tj["salted"] = t.salted;
      tj["cold"] = t.cold;
      tj["plain"] = t.plain;
      std::vector<std::string> keys;
      if (auto tid = client.router().find_topic(t.topic)) {
        if (auto list = client.router().list(*tid)) {
          for (const auto& k : list->keys) keys.push_back(k.key);
        }
      }
      tj["keys"] = keys;
      j["topics"][t.topic] = tj;
    }
    const std::string tmp = status_path + ".tmp";
    std::ofstream(tmp) << j.dump() << "\n";
    std::rename(tmp.c_str(), status_path.c_str());
  };
  const std::string value(16, 'v');
  std::string key;
  while (!g_stop && Clock::now() < end) {
    // Paced in 10 ms slices so the rate holds on a loaded machine.
    const auto elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const auto due = static_cast<uint64_t>(elapsed * rate);
    while (sent < due && !g_stop) {
      // Deterministic: the same stream in every run and mode, so balance figures compare
      // plans, not sampling noise.
      const size_t ti = sent % topics.size();
      const std::string& topic = topics[ti];
      const uint64_t n = sent / topics.size();
      // The hot key's records are spread evenly through the stream (37 is coprime with 100:
      // every 100 consecutive records of a topic hold hot_share of them, about every 1/hot_share
      // records). `n % 100 < 40` sent the hot key in 2 s bursts followed by 3 s without it, in
      // step across the fleet: a square wave that the planner's recent view chased.
      if (static_cast<double>((n * 37) % 100) < hot_share * 100) {
        key = "hot-" + topic;
      } else {
        key = "k" + std::to_string((n * 2654435761u + seed * 40503u + ti) %
                                   static_cast<uint64_t>(tail_keys));
      }
      const auto t0 = Clock::now();
      hotkey::ProduceResult r = producer.produce(topic, key, value);
      const auto us =
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
      max_produce_us = std::max<int64_t>(max_produce_us, us);
      if (!r.ok()) ++refused;
      ++sent;
    }
    producer.poll(0);
    if (Clock::now() >= next_status) {
      write_status(false);
      next_status = Clock::now() + std::chrono::milliseconds(200);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  producer.flush(120000);
  stop_sampler.store(true);
  sampler.join();
  write_status(true);
  return 0;
}
