#include "hotkey/client/producer.h"

#include <librdkafka/rdkafka.h>

#include <array>
#include <atomic>
#include <charconv>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "hotkey/client/merge.h"

namespace hotkey::client {
namespace {

std::atomic<uint64_t> g_producer_uid{1};

}  // namespace

std::string ProduceResult::message() const {
  return rd_kafka_err2str(static_cast<rd_kafka_resp_err_t>(error));
}

struct Producer::Impl {
  struct Topic {
    Impl* impl = nullptr;
    TopicId id = 0;
    rd_kafka_topic_t* rkt = nullptr;
  };

  std::unique_ptr<client::Client> client;
  RoutingMode mode = RoutingMode::kRekey;
  bool salt_headers = true;
  uint32_t merge_contract = kMergeContractVersion;
  HashFamily family = HashFamily::kCrc32;
  rd_kafka_t* rk = nullptr;
  DeliveryCallback on_delivery;
  const uint64_t uid = g_producer_uid.fetch_add(1);
  std::mutex topics_mu;
  std::map<std::string, std::unique_ptr<Topic>, std::less<>> topics;  // guarded by topics_mu

  ~Impl() {
    for (auto& [name, t] : topics) rd_kafka_topic_destroy(t->rkt);
    if (rk != nullptr) rd_kafka_destroy(rk);
  }

  // The wrapper decides salting before librdkafka sees the record; the callback only hashes
  // what it is given (the salted key in rekey mode) with the live partition count, which it
  // also hands to the router.
  static int32_t partition_cb(const rd_kafka_topic_t* rkt, const void* key, size_t keylen,
                              int32_t partition_cnt, void* rkt_opaque, void* msg_opaque) {
    auto* t = static_cast<Topic*>(rkt_opaque);
    if (t != nullptr && partition_cnt > 0) {
      t->impl->client->router().observe_partitions(t->id, partition_cnt);
      int32_t p = client::cold_partition(t->impl->family, key, keylen, partition_cnt);
      if (p >= 0) return p;
    }
    return rd_kafka_msg_partitioner_random(rkt, key, keylen, partition_cnt, rkt_opaque, msg_opaque);
  }

  static void delivery_cb(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    if (!self->on_delivery) return;
    DeliveryReport r;
    r.topic = rd_kafka_topic_name(m->rkt);
    r.partition = m->partition;
    r.offset = m->offset;
    r.error = m->err;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) r.error_message = rd_kafka_err2str(m->err);
    if (m->key != nullptr) r.key = {static_cast<const char*>(m->key), m->key_len};
    r.opaque = m->_private;
    self->on_delivery(r);
  }

  Topic& topic(std::string_view name) {
    struct Cached {
      uint64_t owner = 0;
      std::string name;
      Topic* topic = nullptr;
    };
    thread_local Cached last;
    if (last.owner == uid && last.name == name) return *last.topic;
    std::lock_guard lock(topics_mu);
    auto it = topics.find(name);
    if (it == topics.end()) {
      auto t = std::make_unique<Topic>();
      t->impl = this;
      t->id = client->topic(name);
      rd_kafka_topic_conf_t* tconf = rd_kafka_default_topic_conf_dup(rk);
      rd_kafka_topic_conf_set_partitioner_cb(tconf, &Impl::partition_cb);
      rd_kafka_topic_conf_set_opaque(tconf, t.get());
      t->rkt = rd_kafka_topic_new(rk, std::string(name).c_str(), tconf);  // takes tconf
      if (t->rkt == nullptr) {
        throw std::invalid_argument("cannot create topic \"" + std::string(name) +
                                    "\": " + rd_kafka_err2str(rd_kafka_last_error()));
      }
      it = topics.emplace(std::string(name), std::move(t)).first;
    }
    last = Cached{uid, std::string(name), it->second.get()};
    return *it->second;
  }
};

Producer::Producer(const client::Properties& props, DeliveryCallback on_delivery)
    : impl_(std::make_unique<Impl>()) {
  client::ClientConfig config = client::parse_client_config(props);
  HashFamily family = HashFamily::kCrc32;
  auto p = props.find("partitioner");
  if (p != props.end()) family = client::family_of_rdkafka_partitioner(p->second);
  if (config.hash_set) {
    if (p != props.end() && config.hash != family) {
      throw std::invalid_argument("hotkey.hash=" + std::string(to_string(config.hash)) +
                                  " disagrees with partitioner=" + p->second);
    }
    family = config.hash;
  }
  impl_->family = family;
  impl_->mode = config.routing_mode;
  impl_->salt_headers = config.salt_headers;
  impl_->merge_contract = config.merge_contract;
  impl_->on_delivery = std::move(on_delivery);

  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [name, value] : client::kafka_properties(props)) {
    if (name == "partitioner") continue;  // our callback replaces it; the family is kept
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof(errstr)) !=
        RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw std::invalid_argument("property " + name + ": " + errstr);
    }
  }
  rd_kafka_conf_set_opaque(conf, impl_.get());
  rd_kafka_conf_set_dr_msg_cb(conf, &Impl::delivery_cb);
  // The client (and its threads) exist before librdkafka can call back into them.
  impl_->client = std::make_unique<client::Client>(props, family);
  impl_->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (impl_->rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error(std::string("cannot create the librdkafka producer: ") + errstr);
  }
}

Producer::~Producer() = default;

ProduceResult Producer::produce(std::string_view topic, const void* key, size_t keylen,
                                std::string_view value, std::span<const Header> headers,
                                void* opaque) {
  Impl::Topic* t = nullptr;
  try {
    t = &impl_->topic(topic);
  } catch (const std::invalid_argument&) {
    return ProduceResult{RD_KAFKA_RESP_ERR__INVALID_ARG};
  }
  client::Client& c = *impl_->client;
  client::RouteDecision d;
  if (key != nullptr) {
    int32_t live = c.router().live_partitions(t->id);
    if (live > 0) d = c.router().route(t->id, key, keylen, value, live);
  }
  c.record(t->id, key, keylen, d.partition, d.salted);

  constexpr size_t kInline = 8;
  std::array<rd_kafka_vu_t, kInline> vus;
  size_t n = 0;
  auto add = [&](rd_kafka_vtype_t type) -> rd_kafka_vu_t& {
    rd_kafka_vu_t& v = vus[n++];
    v.vtype = type;
    return v;
  };
  add(RD_KAFKA_VTYPE_RKT).u.rkt = t->rkt;
  add(RD_KAFKA_VTYPE_MSGFLAGS).u.i = RD_KAFKA_MSG_F_COPY;
  add(RD_KAFKA_VTYPE_VALUE).u.mem = {const_cast<char*>(value.data()), value.size()};
  add(RD_KAFKA_VTYPE_OPAQUE).u.ptr = opaque;
  // The record's headers as one list built here: presized for exactly the headers it gets
  // (librdkafka's per-header RD_KAFKA_VTYPE_HEADER starts a list of 8 and needs C-string
  // names), names passed with their lengths, so application names need no NUL-terminated copy.
  // The merge contract's mark (merge.h, merge_mark): v2 puts none on a rekeyed record, and
  // hotkey.unsalted on an unsalted one only when its key ends like a salted key; the key's last
  // byte (a digit or not) settles that for most keys before the separator is looked at.
  MergeMark mark = MergeMark::kNone;
  if (impl_->salt_headers) {
    bool looks_salted = false;
    if (!d.salted && impl_->merge_contract >= 2 && key != nullptr && keylen > 0) {
      const char last = static_cast<const char*>(key)[keylen - 1];
      if (last >= '0' && last <= '9') {
        looks_salted = c.router().looks_salted(t->id, key, keylen);
      }
    }
    mark = merge_mark(impl_->merge_contract, impl_->mode, d.salted, d.version, looks_salted);
  }
  rd_kafka_headers_t* hdrs = nullptr;
  if (mark != MergeMark::kNone || !headers.empty()) {
    hdrs = rd_kafka_headers_new(headers.size() + (mark == MergeMark::kSaltAndVersion ? 2 : 1));
  }
  // The salted key is built on the stack (librdkafka copies it: RD_KAFKA_MSG_F_COPY); a key
  // longer than kStackKey goes to a per-thread buffer that only grows.
  constexpr size_t kStackKey = 256;
  char stack_key[kStackKey + kMaxSaltSuffixBytes];
  if (d.salted) {
    if (impl_->mode == RoutingMode::kRekey) {
      char* out = stack_key;
      if (keylen > kStackKey) [[unlikely]] {
        thread_local std::string long_key;
        if (long_key.size() < keylen + kMaxSaltSuffixBytes) {
          long_key.resize(keylen + kMaxSaltSuffixBytes);
        }
        out = long_key.data();
      }
      size_t len = d.write_salted_key(std::string_view(static_cast<const char*>(key), keylen), out);
      add(RD_KAFKA_VTYPE_KEY).u.mem = {out, len};
      add(RD_KAFKA_VTYPE_PARTITION).u.i32 = RD_KAFKA_PARTITION_UA;
    } else {
      add(RD_KAFKA_VTYPE_KEY).u.mem = {const_cast<void*>(key), keylen};
      add(RD_KAFKA_VTYPE_PARTITION).u.i32 = d.partition;
    }
    if (mark == MergeMark::kSaltAndVersion) {
      char salt_text[16];
      char version_text[24];
      const auto salt_len = static_cast<ssize_t>(
          std::to_chars(salt_text, salt_text + sizeof(salt_text), d.salt).ptr - salt_text);
      const auto version_len = static_cast<ssize_t>(
          std::to_chars(version_text, version_text + sizeof(version_text), d.version).ptr -
          version_text);
      rd_kafka_header_add(hdrs, client::kSaltHeader.data(),
                          static_cast<ssize_t>(client::kSaltHeader.size()), salt_text, salt_len);
      rd_kafka_header_add(hdrs, client::kVersionHeader.data(),
                          static_cast<ssize_t>(client::kVersionHeader.size()), version_text,
                          version_len);
    }
  } else {
    if (key != nullptr) add(RD_KAFKA_VTYPE_KEY).u.mem = {const_cast<void*>(key), keylen};
    add(RD_KAFKA_VTYPE_PARTITION).u.i32 = RD_KAFKA_PARTITION_UA;
    if (mark == MergeMark::kUnsalted) {
      rd_kafka_header_add(hdrs, client::kUnsaltedHeader.data(),
                          static_cast<ssize_t>(client::kUnsaltedHeader.size()), "", 0);
    }
  }
  for (const Header& h : headers) {
    rd_kafka_header_add(hdrs, h.name.data(), static_cast<ssize_t>(h.name.size()), h.value.data(),
                        static_cast<ssize_t>(h.value.size()));
  }
  if (hdrs != nullptr) add(RD_KAFKA_VTYPE_HEADERS).u.headers = hdrs;
  rd_kafka_error_t* err = rd_kafka_produceva(impl_->rk, vus.data(), n);
  if (err == nullptr) return ProduceResult{0, d.salted};  // the record owns hdrs now
  ProduceResult r{rd_kafka_error_code(err), d.salted};
  rd_kafka_error_destroy(err);
  if (hdrs != nullptr) rd_kafka_headers_destroy(hdrs);  // ownership passes only on success
  return r;
}

int Producer::poll(int timeout_ms) { return rd_kafka_poll(impl_->rk, timeout_ms); }

ProduceResult Producer::flush(int timeout_ms) {
  return ProduceResult{rd_kafka_flush(impl_->rk, timeout_ms)};
}

client::Client& Producer::client() noexcept { return *impl_->client; }
client::ClientStats Producer::stats() const { return impl_->client->stats(); }
client::RoutingMode Producer::routing_mode() const noexcept { return impl_->mode; }
rd_kafka_s* Producer::handle() noexcept { return impl_->rk; }

}  // namespace hotkey::client
