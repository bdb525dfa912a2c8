// hotkey::client::Producer (also reachable as hotkey::Producer): a librdkafka producer that salts
// hot keys (rekey or route mode), marks its records as the merge contract says (merge.h;
// docs/CLIENT.md, "Merge contract"), samples and reports its traffic.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "hotkey/client/client.h"
#include "hotkey/client/config.h"

struct rd_kafka_s;  // rd_kafka_t, kept out of this header

namespace hotkey::client {

// One application header of a record.
struct Header {
  std::string_view name;
  std::string_view value;
};

// What librdkafka reported for one record. Views are valid during the callback only.
struct DeliveryReport {
  std::string_view topic;
  int32_t partition = -1;
  int64_t offset = -1;
  int error = 0;  // rd_kafka_resp_err_t; 0 on success
  std::string_view error_message;
  std::string_view key;  // the key as sent (the salted key in rekey mode)
  void* opaque = nullptr;
};
using DeliveryCallback = std::function<void(const DeliveryReport&)>;

// The outcome of produce()/flush(): error is a librdkafka rd_kafka_resp_err_t (0 = success),
// e.g. RD_KAFKA_RESP_ERR__QUEUE_FULL (-184) when the local queue is full.
struct ProduceResult {
  int error = 0;
  // produce(): the record went out under a salt of its key (docs/CLIENT.md, "Routing").
  bool salted = false;
  bool ok() const noexcept { return error == 0; }
  std::string message() const;
};

// Thread-safe like the librdkafka producer it wraps: produce() from any number of threads.
// The coordinator's state never blocks produce(): lists arrive on a background thread.
class Producer {
 public:
  // `props` holds librdkafka properties (bootstrap.servers, linger.ms, ...) and hotkey.*
  // properties together. The hash family is hotkey.hash, else the one of librdkafka's
  // `partitioner` property (default consistent_random: crc32); they must agree when both are
  // given. std::invalid_argument for bad properties (unknown names included), std::runtime_error
  // when librdkafka cannot create the producer. `on_delivery` runs from poll()/flush().
  explicit Producer(const client::Properties& props, DeliveryCallback on_delivery = {});
  // Destroys the librdkafka handle without waiting: call flush() first to deliver what is queued.
  ~Producer();
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  // Sends one record. key == nullptr: a record without a key (left to librdkafka's sticky
  // partitioner). Keys and values are copied by librdkafka. `opaque` comes back in the
  // delivery report.
  ProduceResult produce(std::string_view topic, const void* key, size_t keylen,
                        std::string_view value, std::span<const Header> headers = {},
                        void* opaque = nullptr);
  ProduceResult produce(std::string_view topic, std::string_view key, std::string_view value,
                        std::span<const Header> headers = {}, void* opaque = nullptr) {
    return produce(topic, key.data(), key.size(), value, headers, opaque);
  }

  // Serves delivery reports; returns how many were served.
  int poll(int timeout_ms);
  // Waits until every queued record is delivered (or failed) or the timeout passes.
  ProduceResult flush(int timeout_ms);

  client::Client& client() noexcept;
  client::ClientStats stats() const;
  client::RoutingMode routing_mode() const noexcept;
  // The underlying librdkafka handle (rd_kafka_t*), for metadata and other calls.
  rd_kafka_s* handle() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hotkey::client

namespace hotkey {
// These types lived in namespace hotkey before they joined the rest of the client library in
// hotkey::client; the old names stay valid.
using client::DeliveryCallback;
using client::DeliveryReport;
using client::Header;
using client::Producer;
using client::ProduceResult;
}  // namespace hotkey
