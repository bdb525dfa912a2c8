// Producer-side partitioning strategies the benchmark compares, each sending through a real
// librdkafka producer the way applications run them: naive hashing, static random salting,
// per-process adaptive salting, and this project's client against the coordinator.
//
// Not thread-safe: one Strategy per sending thread (each owns its librdkafka producer).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hotkey::loadgen {

struct StrategyOptions {
  std::string bootstrap;
  std::string topic;
  std::string producer_id;
  uint64_t seed = 1;
  // static: the keys salted from the start (a hand-kept whitelist), each over `salts` random
  // salts; static_spread: over `salts` salts that land on distinct partitions.
  std::vector<std::string> whitelist;
  uint32_t salts = 8;
  // adaptive: a key is hot in this process when its exponentially decayed local rate reaches
  // `adaptive_rate` records/s (half-life `adaptive_half_life_s`); it cools below half that.
  double adaptive_rate = 500;
  double adaptive_half_life_s = 1.0;
  // hotkey: the coordinator and extra client properties (name=value).
  std::string coordinator_url;
  // hotkey: "http" (reports and long-polls to coordinator_url) or "kafka" (the reports and
  // lists topics on `bootstrap`; coordinator_url unused).
  std::string transport = "http";
  std::map<std::string, std::string> client_props;
  // hotkey: wait up to this long for the topic's first hot list before sending (0: do not
  // wait), so a fixed-count profile salts from its first record.
  int wait_list_ms = 0;
  // librdkafka properties for every strategy (name=value), e.g. linger.ms.
  std::map<std::string, std::string> kafka_props;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Hands one record to the producer. Returns false when the local queue is full (call poll
  // and retry). `*salted` says whether the record went out under a salt.
  virtual bool send(std::string_view key, std::string_view value, bool* salted) = 0;
  // Serves delivery reports for up to `timeout_ms`.
  virtual void poll(int timeout_ms) = 0;
  // Waits for every queued record; false when some were still queued at the deadline.
  virtual bool flush(int timeout_ms) = 0;
  virtual int32_t partitions() const = 0;
  virtual uint64_t delivered() const = 0;
  virtual uint64_t failed() const = 0;
  // Whether the last record send() salted went out under a producer's local table (the hotkey
  // strategy while its list is stale; docs/CLIENT.md "Local tables").
  virtual bool last_salt_local() const { return false; }
  // Whether the topic's list is stale now (hotkey strategy), for the live status.
  virtual bool list_stale() const { return false; }
};

// The strategy names this build knows: "naive", "static", "static_spread", "adaptive" and,
// when the client library is built, "hotkey" and "producer" (the hotkey::client::Producer
// wrapper).
std::vector<std::string> strategy_names();

// Creates and connects a strategy (waits for the topic's metadata). std::invalid_argument for
// an unknown name or bad options, std::runtime_error when Kafka or the coordinator cannot be
// set up.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& options);

}  // namespace hotkey::loadgen
