#include "hotkey/client/client.h"

#include <memory>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "hotkey/client/sampler.h"
#include "hotkey/report.h"
#include "kafka_transport.h"
#include "list_subscriber.h"
#include "reporter.h"
#include "sampler_set.h"

namespace hotkey::client {

using std::chrono::milliseconds;

// The wiring of the client core: the router and the samplers (the send path), the reporter
// (samplers -> reports -> coordinator) and the list subscriber (coordinator -> lists ->
// router), over HTTP or, with hotkey.transport=kafka, one KafkaTransport both share.
struct Client::Impl {
  ClientConfig config;
  HashFamily family;
  Router router;
  detail::Staleness staleness;
  std::mutex topics_mu;  // serializes topic registration (samplers.add, subscriber.follow)
  detail::SamplerSet samplers;
  detail::ListSubscriber subscriber;
  // hotkey.transport=kafka: reports and lists travel over Kafka topics instead of HTTP.
  std::unique_ptr<KafkaTransport> kafka;
  detail::Reporter reporter;

  Impl(const Properties& props, std::optional<HashFamily> fam)
      : config(parse_client_config(props)),
        family(fam ? *fam : config.hash),
        router(RouterOptions{family, config.salt_policy}),
        staleness(config.list_stale_ms),
        subscriber(config, router, staleness),
        kafka(config.transport == Transport::kKafka
                  ? std::make_unique<KafkaTransport>(
                        config, router, staleness,
                        [this](TopicId id, const std::optional<std::string>& value) {
                          subscriber.on_list_record(id, value);
                        })
                  : nullptr),
        reporter(config, family, router, samplers, staleness, kafka.get()) {
    subscriber.use_kafka(kafka.get());
  }
  ~Impl() { stop(); }

  bool enabled() const { return kafka != nullptr || !config.coordinator_url.empty(); }

  // Every thread told first, then each joined; the transport both used goes last.
  void stop() {
    subscriber.request_stop();
    reporter.request_stop();
    subscriber.stop();
    reporter.stop();
    kafka.reset();
  }
};

Client::Client(const Properties& props) : Client(props, parse_client_config(props).hash) {}

Client::Client(const Properties& props, HashFamily family)
    : impl_(std::make_unique<Impl>(props, family)) {
  for (const auto& t : impl_->config.topics) topic(t);
  if (impl_->enabled()) impl_->reporter.start();
}

Client::~Client() { impl_->stop(); }

const ClientConfig& Client::config() const noexcept { return impl_->config; }
HashFamily Client::family() const noexcept { return impl_->family; }
Router& Client::router() noexcept { return impl_->router; }
const Router& Client::router() const noexcept { return impl_->router; }

TopicId Client::topic(std::string_view name) {
  if (auto id = impl_->router.find_topic(name)) {
    if (impl_->samplers.get(*id) != nullptr) return *id;
  }
  std::lock_guard lock(impl_->topics_mu);
  TopicId id = impl_->router.topic(name);
  if (impl_->samplers.get(id) == nullptr) {
    // The automatic rate without a coordinator: no reporter drains the sampler and nothing
    // reads its sketch (stats() reads the counters only), so it samples next to nothing.
    const SampleRate rate = !impl_->config.sample_auto
                                ? SampleRate::fixed(impl_->config.sample_rate)
                            : impl_->enabled() ? SampleRate::automatic()
                                               : SampleRate::fixed(kMinSampleRate);
    const bool surges = impl_->enabled() && impl_->config.surge_interval_ms > 0;
    auto sampler = std::make_unique<Sampler>(impl_->config.sketch_capacity, rate,
                                             surges ? impl_->config.surge_factor : 0.0);
    if (surges) {
      // The reporter sleeps until its next deadline; the sampler that notices a surge wakes it.
      Impl* impl = impl_.get();
      sampler->set_surge_hooks({[impl] { impl->reporter.surge_noticed(); },
                                [impl, id] { return impl->router.live_partitions(id); }});
    }
    impl_->samplers.add(id, std::move(sampler));
    if (impl_->enabled()) impl_->subscriber.follow(id);
  }
  return id;
}

RouteDecision Client::route(TopicId id, const void* key, size_t keylen, std::string_view value,
                            int32_t partition_cnt) noexcept {
  RouteDecision d = impl_->router.route(id, key, keylen, value, partition_cnt);
  record(id, key, keylen, d.partition, d.salted);
  return d;
}

void Client::record(TopicId id, const void* key, size_t keylen, int32_t partition,
                    bool salted) noexcept {
  if (id >= Router::kMaxTopics) return;
  Sampler* sampler = impl_->samplers.get(id);
  if (sampler == nullptr) return;
  if (key == nullptr) {
    sampler->record_null();
  } else {
    sampler->record(std::string_view(static_cast<const char*>(key), keylen), partition, salted);
  }
}

bool Client::wait_for_version(TopicId id, uint64_t min_version, milliseconds timeout) {
  return impl_->subscriber.wait_for_version(id, min_version, timeout);
}

void Client::report_now() {
  if (!impl_->enabled()) return;
  impl_->reporter.report_now();
}

ClientStats Client::stats() const {
  ClientStats s;
  const detail::Reporter::Stats r = impl_->reporter.stats();
  s.reports_sent = r.sent;
  s.reports_failed = r.failed;
  s.reports_rejected = r.rejected;
  s.reports_dropped = r.dropped;
  s.reports_surge = r.surge;
  s.list_updates = impl_->subscriber.list_updates();
  s.list_errors = impl_->subscriber.list_errors();
  size_t n = impl_->router.topic_count();
  for (TopicId id = 0; id < n; ++id) {
    TopicStats t;
    t.topic = impl_->router.topic_name(id);
    t.list_version = impl_->router.version(id);
    t.partitions = impl_->router.live_partitions(id);
    if (auto list = impl_->router.list(id)) t.hot_keys = list->keys.size();
    t.plain = impl_->router.plain(id);
    if (Sampler* sampler = impl_->samplers.get(id)) {
      auto c = sampler->counters();
      t.salted = c.salted;
      t.cold = c.cold;
      t.null_key = c.null_key;
    }
    t.reports_dropped = impl_->reporter.topic_dropped(id);
    t.stale = impl_->staleness.stale(id);
    if (auto local = impl_->router.local_tables(id)) t.local_keys = local->keys.size();
    t.local_salted = impl_->router.local_salted(id);
    t.local_tables = impl_->router.local_tables_set(id);
    s.topics.push_back(std::move(t));
  }
  return s;
}

std::string to_json(const ClientStats& s) {
  nlohmann::ordered_json topics = nlohmann::ordered_json::array();
  for (const TopicStats& t : s.topics) {
    topics.push_back({{"topic", t.topic},
                      {"list_version", t.list_version},
                      {"partitions", t.partitions},
                      {"hot_keys", t.hot_keys},
                      {"plain", t.plain},
                      {"salted", t.salted},
                      {"cold", t.cold},
                      {"null_key", t.null_key},
                      {"reports_dropped", t.reports_dropped},
                      {"stale", t.stale},
                      {"local_keys", t.local_keys},
                      {"local_salted", t.local_salted},
                      {"local_tables", t.local_tables}});
  }
  nlohmann::ordered_json doc{
      {"reports_sent", s.reports_sent},         {"reports_failed", s.reports_failed},
      {"reports_rejected", s.reports_rejected}, {"reports_dropped", s.reports_dropped},
      {"reports_surge", s.reports_surge},       {"list_updates", s.list_updates},
      {"list_errors", s.list_errors},           {"topics", std::move(topics)}};
  return doc.dump();
}

}  // namespace hotkey::client
