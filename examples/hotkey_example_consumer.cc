// A consumer merging salted sub-streams back per logical key (merge contract v1 and v2, see
// docs/CLIENT.md): the logical key comes from the hotkey.salt header first, then
// hotkey.unsalted (v2: the key is logical), then the key suffix; records are handed over per
// logical key once the watermark passes them.
//
//   hotkey_example_consumer --bootstrap HOST:PORT --topic orders [--seconds 10]
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "example_args.h"
#include "hotkey/client/merge.h"
#include "hotkey/client/rdkafka.h"

int main(int argc, char** argv) {
  using hotkey::examples::arg;
  std::string bootstrap = arg(argc, argv, "--bootstrap", "");
  std::string topic = arg(argc, argv, "--topic", "orders");
  int seconds = std::stoi(arg(argc, argv, "--seconds", "10"));
  if (bootstrap.empty()) {
    std::fprintf(stderr, "usage: %s --bootstrap HOST:PORT [--topic T] [--seconds S]\n", argv[0]);
    return 2;
  }
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "group.id", "hotkey-example-consumer", err, sizeof(err));
  rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (rk == nullptr) {
    std::fprintf(stderr, "%s\n", err);
    return 2;
  }
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, topic.c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);

  hotkey::client::SubstreamMerger merger;
  std::map<std::string, size_t> merged;  // logical key -> records handed over
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int64_t newest_ts = 0;
  while (std::chrono::steady_clock::now() < end) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 200);
    if (m != nullptr && m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      hotkey::client::RecoveredKey key = hotkey::client::recover_logical_key(m);
      rd_kafka_timestamp_type_t tstype;
      int64_t ts = rd_kafka_message_timestamp(m, &tstype);
      newest_ts = std::max(newest_ts, ts);
      hotkey::client::SubstreamMerger::Record r{
          std::string(key.logical_key),
          key.salted,
          key.salt,
          m->partition,
          m->offset,
          ts,
          std::string(static_cast<const char*>(m->payload), m->len)};
      if (!merger.add(std::move(r))) {
        for (auto& [k, recs] : merger.drain(newest_ts)) merged[k] += recs.size();
      }
    }
    if (m != nullptr) rd_kafka_message_destroy(m);
    // Records older than a second behind the newest seen are handed over.
    for (auto& [k, recs] : merger.drain(newest_ts - 1000)) merged[k] += recs.size();
  }
  for (auto& [k, recs] : merger.drain(INT64_MAX)) merged[k] += recs.size();
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);

  size_t shown = 0;
  for (const auto& [k, n] : merged) {
    if (merger.substreams(k) > 1 || shown < 5) {
      std::printf("%s: %zu records from %zu sub-stream(s)\n", k.c_str(), n, merger.substreams(k));
      ++shown;
    }
  }
  std::printf("%zu logical keys\n", merged.size());
  return 0;
}
