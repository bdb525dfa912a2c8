// hotkey-fanout-bench: list fan-out through Kafka (cluster mode). One process runs a librdkafka
// mock cluster, N simulated producer subscribers (each its own librdkafka consumer configured
// as the client's kafka transport configures it: group.id set but never joined, assign() of the
// topic's lists partition from the beginning, fetch.wait.max.ms=100) and a publisher that
// writes a new list version to the lists partition once per round. For every round it prints
// the time from just before the produce call until each subscriber's queue held the record
// (p50 / p99 / max over subscribers), then a summary line per run.
//
//   hotkey-fanout-bench --subscribers 1000 --rounds 10
//
// Measured from the librdkafka queue event (rd_kafka_queue_cb_event_enable), so the figure is
// the broker-to-subscriber delivery, not the parsing done by one process for all N subscribers
// (the parse and validation cost of one list is printed apart: each real producer parses its
// own copy).
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hotkey/hotkey_list.h"
#include "hotkey/partitioner.h"
#include "hotkey/salt_planner.h"
#include "support/lists.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch())
      .count();
}

struct Subscriber {
  rd_kafka_t* rk = nullptr;
  rd_kafka_queue_t* queue = nullptr;
  std::atomic<int64_t> arrived_us{0};  // first queue event since the round started
};

void on_queue_event(rd_kafka_t*, void* opaque) {
  auto* s = static_cast<Subscriber*>(opaque);
  int64_t zero = 0;
  s->arrived_us.compare_exchange_strong(zero, now_us());
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  int subscribers = 1000;
  int rounds = 10;
  int brokers = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string f = argv[i];
    if (f == "--subscribers")
      subscribers = std::atoi(argv[i + 1]);
    else if (f == "--rounds")
      rounds = std::atoi(argv[i + 1]);
    else if (f == "--brokers")
      brokers = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr,
                   "usage: hotkey-fanout-bench [--subscribers N] [--rounds R] [--brokers B]\n");
      return 2;
    }
  }
  const std::string topic = "orders";
  const int partitions = 12;
  const int32_t part = hotkey::partition_for(hotkey::HashFamily::kMurmur2, topic, partitions);
  char errstr[512];
  rd_kafka_conf_t* mconf = rd_kafka_conf_new();
  rd_kafka_conf_set(mconf, "log_level", "2", errstr, sizeof errstr);
  rd_kafka_t* mrk = rd_kafka_new(RD_KAFKA_PRODUCER, mconf, errstr, sizeof errstr);
  rd_kafka_mock_cluster_t* mc = rd_kafka_mock_cluster_new(mrk, brokers);
  rd_kafka_mock_topic_create(mc, "__hotkey_lists", partitions, 1);
  const std::string bootstrap = rd_kafka_mock_cluster_bootstraps(mc);

  // The publisher: an idempotent producer writing the partition explicitly, as an owner does.
  rd_kafka_conf_t* pconf = rd_kafka_conf_new();
  rd_kafka_conf_set(pconf, "bootstrap.servers", bootstrap.c_str(), errstr, sizeof errstr);
  rd_kafka_conf_set(pconf, "enable.idempotence", "true", errstr, sizeof errstr);
  rd_kafka_conf_set(pconf, "linger.ms", "0", errstr, sizeof errstr);
  rd_kafka_t* prk = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, errstr, sizeof errstr);

  auto list_json = [&](uint64_t version) {
    return hotkey::list_to_json(hotkey::test_support::make_list(
        topic, version, 32, hotkey::HashFamily::kMurmur2, {"tenant-42"}, 8, /*share=*/0));
  };
  auto publish = [&](uint64_t version) {
    std::string v = list_json(version);
    rd_kafka_producev(prk, RD_KAFKA_V_TOPIC("__hotkey_lists"), RD_KAFKA_V_PARTITION(part),
                      RD_KAFKA_V_KEY(topic.data(), topic.size()),
                      RD_KAFKA_V_VALUE(v.data(), v.size()),
                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    rd_kafka_poll(prk, 0);
  };
  publish(1);
  rd_kafka_flush(prk, 10000);

  std::vector<std::unique_ptr<Subscriber>> subs;
  const auto t_setup = Clock::now();
  for (int i = 0; i < subscribers; ++i) {
    auto s = std::make_unique<Subscriber>();
    rd_kafka_conf_t* c = rd_kafka_conf_new();
    for (auto [k, v] :
         std::vector<std::pair<const char*, const char*>>{{"bootstrap.servers", bootstrap.c_str()},
                                                          {"group.id", "hotkey.clients"},
                                                          {"enable.auto.commit", "false"},
                                                          {"enable.auto.offset.store", "false"},
                                                          {"auto.offset.reset", "earliest"},
                                                          {"fetch.wait.max.ms", "100"},
                                                          {"log_level", "2"}}) {
      rd_kafka_conf_set(c, k, v, errstr, sizeof errstr);
    }
    s->rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr, sizeof errstr);
    if (s->rk == nullptr) {
      std::fprintf(stderr, "subscriber %d: %s\n", i, errstr);
      return 1;
    }
    rd_kafka_poll_set_consumer(s->rk);
    s->queue = rd_kafka_queue_get_consumer(s->rk);
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, "__hotkey_lists", part)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(s->rk, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    subs.push_back(std::move(s));
  }
  // Drain until every subscriber holds version 1 (its catch-up read).
  auto drain_all = [&] {
    size_t got = 0;
    for (auto& s : subs) {
      while (rd_kafka_message_t* m = rd_kafka_consumer_poll(s->rk, 0)) {
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) ++got;
        rd_kafka_message_destroy(m);
      }
    }
    return got;
  };
  size_t caught_up = 0;
  const auto setup_deadline = Clock::now() + std::chrono::seconds(300);
  while (caught_up < subs.size() && Clock::now() < setup_deadline) {
    caught_up += drain_all();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::printf("%d subscribers caught up with version 1 in %.1f s (%zu did)\n", subscribers,
              std::chrono::duration<double>(Clock::now() - t_setup).count(), caught_up);
  for (auto& s : subs) rd_kafka_queue_cb_event_enable(s->queue, on_queue_event, s.get());

  std::vector<double> all;
  for (int r = 0; r < rounds; ++r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    drain_all();
    for (auto& s : subs) s->arrived_us.store(0);
    const int64_t t0 = now_us();
    publish(static_cast<uint64_t>(r) + 2);
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    std::vector<double> lat;
    while (Clock::now() < deadline) {
      lat.clear();
      for (auto& s : subs) {
        int64_t a = s->arrived_us.load();
        if (a != 0) lat.push_back(static_cast<double>(a - t0) / 1000.0);
      }
      if (lat.size() == subs.size()) break;
      rd_kafka_poll(prk, 1);
    }
    std::printf(
        "round %d: %zu/%d subscribers have the new version; ms p50 %.1f p99 %.1f max %.1f\n", r,
        lat.size(), subscribers, pct(lat, 0.5), pct(lat, 0.99), pct(lat, 1.0));
    all.insert(all.end(), lat.begin(), lat.end());
    drain_all();
  }
  const std::string one = list_json(99);
  const auto tp = Clock::now();
  for (int i = 0; i < 1000; ++i) (void)hotkey::parse_list_json(one);
  const double parse_us =
      std::chrono::duration<double, std::micro>(Clock::now() - tp).count() / 1000.0;
  std::printf(
      "summary: %d subscribers, %d rounds, publish -> subscriber queue ms: p50 %.1f p99 "
      "%.1f max %.1f; parse+validate of the list %.1f us\n",
      subscribers, rounds, pct(all, 0.5), pct(all, 0.99), pct(all, 1.0), parse_us);
  for (auto& s : subs) {
    rd_kafka_queue_destroy(s->queue);
    rd_kafka_consumer_close(s->rk);
    rd_kafka_destroy(s->rk);
  }
  rd_kafka_destroy(prk);
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(mrk);
  return 0;
}
