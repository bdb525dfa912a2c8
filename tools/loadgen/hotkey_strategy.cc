// This project's strategy: the producer client library routing against the coordinator.
// Built only when the client library (client/) is part of the build.
#include <memory>
#include <stdexcept>

#include "strategy.h"

#ifdef HOTKEY_LOADGEN_WITH_CLIENT
#include <chrono>
#include <string>
#include <vector>

#include <librdkafka/rdkafka.h>

#include "hotkey/client/client.h"
#include "hotkey/client/merge.h"
#include "hotkey/client/producer.h"
#include "kafka_producer.h"
#endif

namespace hotkey::loadgen {

#ifdef HOTKEY_LOADGEN_WITH_CLIENT
namespace {

// The client in rekey mode, the way an application that links hotkey::client sends: the
// router decides, a salted record carries key<sep><salt> (which hotkey.hash, murmur2 unless
// --client-prop sets another family, places on the
// decided partition) and the merge contract's headers as the wrapper writes them (merge_mark:
// v2, the default, none on a record rekeyed with the coordinator's list; none at all with
// hotkey.salt.headers=false).
class HotkeyStrategy final : public Strategy {
 public:
  explicit HotkeyStrategy(const StrategyOptions& options)
      : producer_(options), client_(client_props(options)) {
    topic_ = client_.topic(options.topic);
    topic_name_ = options.topic;
    salt_headers_ = client_.config().salt_headers;
    merge_contract_ = client_.config().merge_contract;
    if (options.wait_list_ms > 0 &&
        !client_.wait_for_version(topic_, 1, std::chrono::milliseconds(options.wait_list_ms))) {
      throw std::runtime_error("hotkey strategy: no hot list for topic " + options.topic +
                               " within --wait-list-ms");
    }
  }

  bool send(std::string_view key, std::string_view value, bool* salted) override {
    const client::RouteDecision d =
        client_.route(topic_, key.data(), key.size(), value, producer_.partitions());
    *salted = d.salted;
    const client::MergeMark mark =
        salt_headers_
            ? client::merge_mark(merge_contract_, client::RoutingMode::kRekey, d.salted, d.version,
                                 !d.salted && merge_contract_ >= 2 &&
                                     client_.router().looks_salted(topic_, key.data(), key.size()))
            : client::MergeMark::kNone;
    if (!d.salted) {
      return producer_.produce(key, value, d.partition, nullptr,
                               mark == client::MergeMark::kUnsalted);
    }
    last_salt_local_ = client::is_local_table_version(d.version);
    // The buffer only grows (no zero-fill per record); the key is written into it in place.
    if (buf_.size() < key.size() + kMaxSaltSuffixBytes) {
      buf_.resize(key.size() + kMaxSaltSuffixBytes);
    }
    const size_t len = d.write_salted_key(key, buf_.data());
    const KafkaProducer::SaltHeaders h{d.salt, d.version};
    return producer_.produce(std::string_view(buf_.data(), len), value, d.partition,
                             mark == client::MergeMark::kSaltAndVersion ? &h : nullptr);
  }
  void poll(int timeout_ms) override { producer_.poll(timeout_ms); }
  bool flush(int timeout_ms) override { return producer_.flush(timeout_ms); }
  int32_t partitions() const override { return producer_.partitions(); }
  uint64_t delivered() const override { return producer_.delivered(); }
  uint64_t failed() const override { return producer_.failed(); }
  bool last_salt_local() const override { return last_salt_local_; }
  bool list_stale() const override {
    for (const auto& t : client_.stats().topics) {
      if (t.topic == topic_name_) return t.stale;
    }
    return false;
  }

 private:
  friend class ProducerStrategy;
  static client::Properties client_props(const StrategyOptions& o) {
    client::Properties p{{"hotkey.producer.id", o.producer_id},
                         {"hotkey.hash", "murmur2"},
                         {"hotkey.topics", o.topic}};
    if (o.transport == "kafka") {
      // The transport shares the data producer's cluster and security settings.
      p["hotkey.transport"] = "kafka";
      p["bootstrap.servers"] = o.bootstrap;
      for (const auto& [k, v] : o.kafka_props) p[k] = v;
    } else {
      if (o.coordinator_url.empty()) {
        throw std::invalid_argument("hotkey strategy: --coordinator URL is required");
      }
      p["hotkey.coordinator.url"] = o.coordinator_url;
    }
    for (const auto& [k, v] : o.client_props) p[k] = v;
    return p;
  }

  KafkaProducer producer_;
  client::Client client_;
  client::TopicId topic_ = 0;
  bool salt_headers_ = true;
  uint32_t merge_contract_ = client::kMergeContractVersion;
  bool last_salt_local_ = false;
  std::string topic_name_;
  std::string buf_;
};

// The wrapper an application links, hotkey::client::Producer, on its default settings (rekey
// mode, the default merge contract; --client-prop sets others): the family from librdkafka's
// murmur2_random partitioner, every record through Producer::produce.
class ProducerStrategy final : public Strategy {
 public:
  explicit ProducerStrategy(const StrategyOptions& options)
      : topic_(options.topic), producer_(props(options), [this](const client::DeliveryReport& r) {
          ++(r.error == 0 ? delivered_ : failed_);
        }) {
    partitions_ = wait_for_partitions(producer_.handle(), topic_, 10000);
    // What the partitioner callback learns from librdkafka's first metadata answer, so a
    // fixed-count profile salts from its first record.
    client::Client& c = producer_.client();
    c.router().observe_partitions(c.topic(topic_), partitions_);
    if (options.wait_list_ms > 0 &&
        !c.wait_for_version(c.topic(topic_), 1, std::chrono::milliseconds(options.wait_list_ms))) {
      throw std::runtime_error("producer strategy: no hot list for topic " + options.topic +
                               " within --wait-list-ms");
    }
  }

  bool send(std::string_view key, std::string_view value, bool* salted) override {
    const client::ProduceResult r = producer_.produce(topic_, key, value);
    if (r.error == RD_KAFKA_RESP_ERR__QUEUE_FULL) return false;
    if (!r.ok()) ++failed_;
    *salted = r.salted;
    return true;
  }
  void poll(int timeout_ms) override { producer_.poll(timeout_ms); }
  bool flush(int timeout_ms) override { return producer_.flush(timeout_ms).ok(); }
  int32_t partitions() const override { return partitions_; }
  uint64_t delivered() const override { return delivered_; }
  uint64_t failed() const override { return failed_; }

 private:
  static client::Properties props(const StrategyOptions& o) {
    client::Properties p = HotkeyStrategy::client_props(o);
    p.erase("hotkey.hash");  // the family comes from the partitioner, as in an application
    p["partitioner"] = "murmur2_random";
    for (const auto& [k, v] : kafka_settings(o)) p[k] = v;
    return p;
  }

  std::string topic_;
  uint64_t delivered_ = 0;
  uint64_t failed_ = 0;
  client::Producer producer_;
  int32_t partitions_ = 0;
};

}  // namespace

bool have_hotkey_strategy() { return true; }
std::unique_ptr<Strategy> make_hotkey_strategy(const StrategyOptions& options) {
  return std::make_unique<HotkeyStrategy>(options);
}
std::unique_ptr<Strategy> make_producer_strategy(const StrategyOptions& options) {
  return std::make_unique<ProducerStrategy>(options);
}

#else

bool have_hotkey_strategy() { return false; }
std::unique_ptr<Strategy> make_hotkey_strategy(const StrategyOptions&) {
  throw std::invalid_argument("hotkey strategy: this build has no client library");
}
std::unique_ptr<Strategy> make_producer_strategy(const StrategyOptions&) {
  throw std::invalid_argument("producer strategy: this build has no client library");
}

#endif

}  // namespace hotkey::loadgen
