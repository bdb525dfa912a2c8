#include "hotkey/client/client.h"

#include <httplib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "hotkey/client/sampler.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/report.h"
#include "hotkey/report_batch.h"
#include "kafka_transport.h"
#include "sigpipe.h"

namespace hotkey::client {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int64_t wall_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<httplib::Client> make_http(const ClientConfig& c, uint32_t extra_read_ms) {
  auto cli = c.ssl_certificate_location.empty()
                 ? std::make_unique<httplib::Client>(c.coordinator_url)
                 : std::make_unique<httplib::Client>(c.coordinator_url, c.ssl_certificate_location,
                                                     c.ssl_key_location);
  // httplib verifies the server certificate and host name by default; only the trust anchors
  // change here.
  if (!c.ssl_ca_location.empty()) cli->set_ca_cert_path(c.ssl_ca_location);
  auto set = [](uint32_t ms) { return std::pair<time_t, time_t>(ms / 1000, (ms % 1000) * 1000); };
  auto [cs, cu] = set(c.http_timeout_ms);
  cli->set_connection_timeout(cs, cu);
  auto [ws, wu] = set(c.http_timeout_ms);
  cli->set_write_timeout(ws, wu);
  auto [rs, ru] = set(c.http_timeout_ms + extra_read_ms);
  cli->set_read_timeout(rs, ru);
  cli->set_keep_alive(true);
  if (!c.token.empty()) cli->set_bearer_token_auth(c.token.c_str());
  return cli;
}

// Exponential backoff with full jitter in [cur/2, cur].
class Backoff {
 public:
  Backoff(uint32_t initial_ms, uint32_t max_ms)
      : initial_(initial_ms), max_(max_ms), cur_(initial_ms), rng_(std::random_device{}()) {}
  milliseconds next() {
    std::uniform_int_distribution<uint32_t> d(cur_ / 2, cur_);
    milliseconds out(d(rng_));
    cur_ = std::min<uint64_t>(max_, uint64_t{cur_} * 2);
    return out;
  }
  void reset() { cur_ = initial_; }

 private:
  uint32_t initial_, max_, cur_;
  std::mt19937 rng_;
};

}  // namespace

struct Client::Impl {
  ClientConfig config;
  HashFamily family;
  Router router;

  std::mutex topics_mu;                            // guards samplers growth and subscribers
  std::vector<std::unique_ptr<Sampler>> samplers;  // indexed by TopicId
  std::atomic<Sampler*> sampler_by_id[Router::kMaxTopics] = {};

  std::atomic<uint64_t> reports_sent{0}, reports_failed{0}, reports_rejected{0}, reports_dropped{0},
      reports_surge{0}, list_updates{0}, list_errors{0};
  // Reports of each topic dropped because its queue was full (indexed by TopicId).
  std::unique_ptr<std::atomic<uint64_t>[]> topic_reports_dropped =
      std::make_unique<std::atomic<uint64_t>[]>(Router::kMaxTopics);

  // Shutdown and wake-ups of the background threads.
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;               // guarded by mu
  bool report_requested = false;       // guarded by mu
  uint64_t report_rounds = 0;          // guarded by mu
  std::condition_variable version_cv;  // notified on every publish (with mu)

  struct Subscriber {
    TopicId id = 0;
    std::thread thread;
    std::mutex http_mu;
    httplib::Client* http = nullptr;  // guarded by http_mu, for stop()
    std::atomic<bool> done{false};
  };
  std::vector<std::unique_ptr<Subscriber>> subscribers;  // guarded by topics_mu
  std::thread reporter;
  std::mutex reporter_http_mu;
  httplib::Client* reporter_http = nullptr;  // guarded by reporter_http_mu

  // hotkey.transport=kafka: reports and lists travel over Kafka topics instead of HTTP.
  std::unique_ptr<KafkaTransport> kafka;

  Impl(const Properties& props, std::optional<HashFamily> fam)
      : config(parse_client_config(props)),
        family(fam ? *fam : config.hash),
        router(RouterOptions{family, config.salt_policy}) {
    if (config.transport == Transport::kKafka) {
      kafka = std::make_unique<KafkaTransport>(
          config, router, [this](TopicId id, const std::optional<std::string>& value) {
            on_list_record(id, value);
          });
    }
  }

  bool enabled() const { return kafka != nullptr || !config.coordinator_url.empty(); }

  // ---- kafka transport: one record of the lists topic ------------------------------------
  // Validated exactly like a long-poll answer (parse_list_json recomputes every salt); only a
  // newer version is published. A tombstone (topic deleted) drops the list but keeps the
  // version floor.
  void on_list_record(TopicId id, const std::optional<std::string>& value) {
    const std::string topic = router.topic_name(id);
    if (!value) {
      if (router.remove_list(id)) {
        list_updates.fetch_add(1);
        std::lock_guard lock(mu);
        version_cv.notify_all();
      }
      return;
    }
    try {
      HotKeyList list = parse_list_json(*value);
      if (list.topic != topic) throw DecodeError("list for topic \"" + list.topic + "\"");
      if (!router.publish(list)) {
        list_errors.fetch_add(1);  // not newer than the list routed with
        return;
      }
      list_updates.fetch_add(1);
      std::lock_guard lock(mu);
      version_cv.notify_all();
    } catch (const std::exception&) {
      list_errors.fetch_add(1);  // garbage: keep the last good list
    }
  }

  bool wait_stop(milliseconds d) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, d, [&] { return stopping; });
  }

  // ---- subscriber -------------------------------------------------------------------------
  void subscribe_loop(Subscriber* sub) {
    detail::block_sigpipe_in_this_thread();
    const std::string topic = router.topic_name(sub->id);
    auto http = make_http(config, config.poll_wait_ms);
    {
      std::lock_guard lock(sub->http_mu);
      sub->http = http.get();
    }
    Backoff backoff(config.backoff_initial_ms, config.backoff_max_ms);
    Clock::time_point last_contact = Clock::now();
    for (;;) {
      {
        std::lock_guard lock(mu);
        if (stopping) break;
      }
      uint64_t since = router.version(sub->id);
      std::string path = "/v1/hotkeys?topic=" + topic + "&since=" + std::to_string(since) +
                         "&wait_ms=" + std::to_string(config.poll_wait_ms);
      auto res = http->Get(path);
      bool ok = false;
      if (res && res->status == 304) {
        ok = true;
        last_contact = Clock::now();
      } else if (res && res->status == 200) {
        last_contact = Clock::now();
        try {
          HotKeyList list = parse_list_json(res->body);
          if (list.topic != topic) throw DecodeError("list for topic \"" + list.topic + "\"");
          if (list.version > since) {
            ok = true;
            if (router.publish(list)) {
              list_updates.fetch_add(1);
              std::lock_guard lock(mu);
              version_cv.notify_all();
            }
          }
        } catch (const std::exception&) {
          ok = false;  // garbage: keep the last good list
        }
      }
      if (ok) {
        backoff.reset();
        if (router.plain(sub->id)) router.set_plain(sub->id, false);
        continue;
      }
      list_errors.fetch_add(1);
      if (config.list_ttl_ms > 0 && config.expired_policy == ExpiredPolicy::kPlain &&
          Clock::now() - last_contact > milliseconds(config.list_ttl_ms) &&
          !router.plain(sub->id)) {
        router.set_plain(sub->id, true);
      }
      milliseconds wait = backoff.next();
      if (config.list_ttl_ms > 0 && config.expired_policy == ExpiredPolicy::kPlain) {
        wait = std::min(wait, milliseconds(std::max<uint32_t>(config.list_ttl_ms / 2, 1)));
      }
      if (wait_stop(wait)) break;
    }
    {
      std::lock_guard lock(sub->http_mu);
      sub->http = nullptr;
    }
    sub->done.store(true);
  }

  void start_subscriber(TopicId id) {
    // Caller holds topics_mu.
    for (const auto& s : subscribers) {
      if (s->id == id) return;
    }
    auto sub = std::make_unique<Subscriber>();
    sub->id = id;
    Subscriber* raw = sub.get();
    subscribers.push_back(std::move(sub));
    raw->thread = std::thread([this, raw] { subscribe_loop(raw); });
  }

  // ---- reporter ---------------------------------------------------------------------------
  // One encoded report waiting to be sent. Each topic has its own queue (oldest first), bounded
  // by hotkey.report.queue.max, so one topic's backlog never pushes out another topic's report.
  struct Pending {
    TopicId topic = 0;
    uint64_t seq = 0;  // the report's seq: unique per client
    std::string topic_name;
    std::string body;  // encode_report_binary or report_to_json
  };
  // Batch form (POST /v1/reports/batch): used while the coordinator knows it; after a 404/415
  // the reporter sends single reports and asks again after kBatchProbeInterval.
  static constexpr size_t kBatchBytes = 1u << 20;
  static constexpr std::chrono::minutes kBatchProbeInterval{5};
  bool batch_supported = true;       // reporter thread only
  Clock::time_point batch_probe_at;  // reporter thread only
  enum class Outcome : uint8_t {
    kAccepted,  // 2xx: done
    kRejected,  // 400/413/422: invalid, dropped, never retried
    kRetry,     // not delivered (network, 5xx, 401/403, 429): stays queued
  };

  // The send step, the one place that talks to the coordinator about reports: delivers `batch`
  // (each topic's reports oldest first) and returns one outcome per report, in order.
  // Over HTTP, or (null `http`) produced to the reports topic with hotkey.transport=kafka.
  std::vector<Outcome> send_reports(httplib::Client* http,
                                    const std::vector<const Pending*>& batch) {
    std::vector<Outcome> out(batch.size(), Outcome::kRetry);
    if (kafka) {
      for (size_t i = 0; i < batch.size(); ++i) {
        if (!kafka->send_report(batch[i]->topic_name, batch[i]->body)) break;
        out[i] = Outcome::kAccepted;
      }
      return out;
    }
    if (batch_supported || Clock::now() >= batch_probe_at) {
      size_t i = 0;
      while (i < batch.size()) {
        // A chunk: at most kMaxReportsPerBatch reports and about kBatchBytes of body (one
        // larger report goes alone), well under the coordinator's max_body_bytes default.
        size_t end = i, bytes = 0;
        while (end < batch.size() && end - i < kMaxReportsPerBatch &&
               (end == i || bytes + batch[end]->body.size() <= kBatchBytes)) {
          bytes += batch[end]->body.size();
          ++end;
        }
        BatchAnswer a = post_batch(*http, batch, i, end, out);
        if (a == BatchAnswer::kUnsupported) {
          // An older coordinator: single reports, and ask again later (it may be upgraded).
          batch_supported = false;
          batch_probe_at = Clock::now() + kBatchProbeInterval;
          break;
        }
        batch_supported = true;
        if (a == BatchAnswer::kFailed) return out;
        i = end;
      }
      if (batch_supported) return out;
    }
    const std::string content_type =
        config.report_json ? "application/json" : std::string(kReportBinaryContentType);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (out[i] != Outcome::kRetry) continue;
      auto res = http->Post("/v1/reports", batch[i]->body, content_type);
      out[i] = outcome_of(res ? res->status : 0);
      if (out[i] == Outcome::kRetry) break;  // the coordinator is unwell: the rest waits
    }
    return out;
  }

  static Outcome outcome_of(int status) {
    if (status >= 200 && status < 300) return Outcome::kAccepted;
    if (status == 400 || status == 413 || status == 422) return Outcome::kRejected;
    return Outcome::kRetry;
  }

  enum class BatchAnswer : uint8_t { kDone, kFailed, kUnsupported };
  // POST /v1/reports/batch with batch[begin, end); fills out[begin, end) from the per-report
  // results. kUnsupported: the coordinator does not know the batch form (404, 415, 405).
  BatchAnswer post_batch(httplib::Client& http, const std::vector<const Pending*>& batch,
                         size_t begin, size_t end, std::vector<Outcome>& out) {
    std::vector<std::string_view> bodies;
    for (size_t i = begin; i < end; ++i) bodies.push_back(batch[i]->body);
    std::string body;
    try {
      body = config.report_json ? encode_report_batch_json(bodies)
                                : encode_report_batch_binary(bodies);
    } catch (const std::exception&) {
      return BatchAnswer::kUnsupported;  // cannot frame it: singles
    }
    auto res = http.Post(
        "/v1/reports/batch", body,
        config.report_json ? "application/json" : std::string(kReportBatchBinaryContentType));
    if (!res) return BatchAnswer::kFailed;
    if (res->status == 404 || res->status == 405 || res->status == 415) {
      return BatchAnswer::kUnsupported;
    }
    if (res->status == 413 && end - begin > 1) return BatchAnswer::kUnsupported;  // too big
    if (res->status != 200) {
      Outcome o = outcome_of(res->status);  // the whole request: retry, or a refused envelope
      for (size_t i = begin; i < end; ++i) out[i] = o;
      return o == Outcome::kRetry ? BatchAnswer::kFailed : BatchAnswer::kDone;
    }
    std::vector<int> statuses;
    try {
      statuses = parse_report_batch_statuses(res->body);
    } catch (const DecodeError&) {
      return BatchAnswer::kFailed;  // garbage: keep everything queued
    }
    if (statuses.size() != end - begin) return BatchAnswer::kFailed;
    bool failed = false;
    for (size_t i = begin; i < end; ++i) {
      out[i] = outcome_of(statuses[i - begin]);
      failed |= out[i] == Outcome::kRetry;
    }
    return failed ? BatchAnswer::kFailed : BatchAnswer::kDone;
  }

  // Sends everything queued; false when something is still waiting (back off).
  bool flush_queues(httplib::Client* http, std::vector<std::deque<Pending>>& queues) {
    std::vector<const Pending*> batch;
    for (const auto& q : queues) {
      for (const auto& p : q) batch.push_back(&p);
    }
    if (batch.empty()) return true;
    std::vector<Outcome> outcomes = send_reports(http, batch);
    std::vector<uint64_t> done;  // seqs no longer pending
    bool all = true;
    for (size_t i = 0; i < batch.size(); ++i) {
      switch (outcomes[i]) {
        case Outcome::kAccepted:
          if (!kafka) reports_sent.fetch_add(1);  // kafka: counted when delivered
          done.push_back(batch[i]->seq);
          break;
        case Outcome::kRejected:
          reports_rejected.fetch_add(1);
          done.push_back(batch[i]->seq);
          break;
        case Outcome::kRetry:
          all = false;
          break;
      }
    }
    if (!all) reports_failed.fetch_add(1);
    std::sort(done.begin(), done.end());
    for (auto& q : queues) {
      std::erase_if(
          q, [&](const Pending& p) { return std::binary_search(done.begin(), done.end(), p.seq); });
    }
    return all;
  }

  // Surge reports (reporter thread only): per topic, when its last early report went and which
  // keys' fingerprints are muted until when.
  struct SurgeState {
    Clock::time_point last{};
    std::array<Clock::time_point, Sampler::kMuteSlots> muted_until{};
    uint32_t next_slot = 0;
  };
  // How often the reporter looks for surges between rounds, and how long a key that had its
  // early report stays muted (its topic's regular reports carry it meanwhile; a key the
  // coordinator keeps cold, e.g. denied, costs one early report per mute, not one per
  // hotkey.surge.interval.ms).
  static constexpr milliseconds kSurgeTick{10};
  milliseconds surge_mute() const {
    return std::max(milliseconds(5000), milliseconds(uint64_t{config.report_interval_ms} * 10));
  }
  bool surges_on() const { return config.surge_interval_ms > 0; }

  // The topics whose samplers saw a surge since the last look and may send an early report
  // now (hotkey.surge.interval.ms since their last one); mutes the surging keys.
  std::vector<TopicId> take_surges(std::vector<SurgeState>& state, Clock::time_point now) {
    std::vector<TopicId> due;
    size_t n = router.topic_count();
    if (state.size() < n) state.resize(n);
    for (TopicId id = 0; id < n; ++id) {
      Sampler* sampler = sampler_by_id[id].load(std::memory_order_acquire);
      if (sampler == nullptr) continue;
      int32_t partitions = router.live_partitions(id);
      if (partitions < 1) {
        if (auto list = router.list(id)) partitions = list->partitions;
      }
      sampler->set_partitions(partitions);
      SurgeState& st = state[id];
      for (uint32_t slot = 0; slot < Sampler::kMuteSlots; ++slot) {
        if (st.muted_until[slot] != Clock::time_point{} && now >= st.muted_until[slot]) {
          sampler->set_muted(slot, 0);
          st.muted_until[slot] = Clock::time_point{};
        }
      }
      uint64_t fingerprint = sampler->take_surge();
      if (fingerprint == 0) continue;
      // Too soon after the last one: dropped; the key's next sampled record notices it again.
      if (now - st.last < milliseconds(config.surge_interval_ms)) continue;
      st.last = now;
      sampler->set_muted(st.next_slot, fingerprint);
      st.muted_until[st.next_slot] = now + surge_mute();
      st.next_slot = (st.next_slot + 1) % Sampler::kMuteSlots;
      due.push_back(id);
    }
    return due;
  }

  void report_loop() {
    detail::block_sigpipe_in_this_thread();
    std::unique_ptr<httplib::Client> http;
    if (!kafka) http = make_http(config, 0);
    {
      std::lock_guard lock(reporter_http_mu);
      reporter_http = http.get();
    }
    Backoff backoff(config.backoff_initial_ms, config.backoff_max_ms);
    std::vector<std::deque<Pending>> queues;      // indexed by TopicId
    std::vector<Clock::time_point> window_start;  // per topic: its sampler's last drain
    std::vector<SurgeState> surge;                // indexed by TopicId
    Clock::time_point next = Clock::now() + milliseconds(config.report_interval_ms);
    Clock::time_point retry_at = Clock::now();
    Clock::time_point last_round = Clock::now();  // a new topic's window starts there
    uint64_t seq = 0;
    for (;;) {
      bool forced = false;
      {
        std::unique_lock lock(mu);
        Clock::time_point until = next;
        if (surges_on()) until = std::min(until, Clock::now() + kSurgeTick);
        cv.wait_until(lock, until, [&] { return stopping || report_requested; });
        if (stopping) break;
        forced = report_requested;
        report_requested = false;
      }
      Clock::time_point now = Clock::now();
      size_t n = router.topic_count();
      if (window_start.size() < n) window_start.resize(n, last_round);
      if (!forced && now < next) {
        // Between rounds: early reports of the topics that saw a surge, sent at once unless
        // the coordinator is being backed off from (they then wait in their queues).
        std::vector<TopicId> due = take_surges(surge, now);
        size_t built = 0;
        for (TopicId id : due) built += build_report(queues, id, window_start[id], now, seq);
        if (built == 0) continue;
        reports_surge.fetch_add(built);
        if (now >= retry_at) {
          if (flush_queues(http.get(), queues)) {
            backoff.reset();
          } else {
            retry_at = Clock::now() + backoff.next();
          }
        }
        continue;
      }
      if (now >= next) next = now + milliseconds(config.report_interval_ms);
      last_round = now;
      for (TopicId id = 0; id < n; ++id) build_report(queues, id, window_start[id], now, seq);
      if (forced || now >= retry_at) {
        if (flush_queues(http.get(), queues)) {
          backoff.reset();
        } else {
          retry_at = Clock::now() + backoff.next();
        }
        // A forced round (report_now) returns once the brokers acknowledged.
        if (forced && kafka) kafka->flush(milliseconds(config.http_timeout_ms));
      }
      std::lock_guard lock(mu);
      ++report_rounds;
      version_cv.notify_all();
    }
    std::lock_guard lock(reporter_http_mu);
    reporter_http = nullptr;
  }

  // Adds the report of topic `id`'s window (since `window_start`, which becomes `now`) to its
  // queue; a topic's queue holds at most hotkey.report.queue.max reports, beyond which that
  // topic's oldest is dropped and counted. Returns the number of reports queued (0 or 1).
  size_t build_report(std::vector<std::deque<Pending>>& queues, TopicId id,
                      Clock::time_point& window_start, Clock::time_point now, uint64_t& seq) {
    if (queues.size() <= id) queues.resize(id + 1);
    Sampler* sampler = sampler_by_id[id].load(std::memory_order_acquire);
    if (sampler == nullptr) return 0;
    const auto window_ms = std::chrono::duration_cast<milliseconds>(now - window_start).count();
    window_start = now;
    int32_t partitions = router.live_partitions(id);
    auto list = router.list(id);
    if (partitions < 1 && list) partitions = list->partitions;
    if (partitions < 1) return 0;  // nothing sent yet
    if (surges_on()) sampler->set_partitions(partitions);
    Sampler::Window w = sampler->drain(partitions);
    if (w.total == 0) return 0;
    Report r;
    r.producer = config.producer_id;
    r.topic = router.topic_name(id);
    r.partitions = partitions;
    r.hash = family;
    if (list) r.separator = list->separator;
    r.window_ms = static_cast<uint32_t>(std::clamp<int64_t>(window_ms, 1, UINT32_MAX));
    r.sample_rate = config.sample_rate;
    r.total = w.total;
    r.partition_counts = std::move(w.partition_counts);
    r.seq = ++seq;
    r.sent_at_ms = wall_ms();
    r.list_version = router.version(id);
    r.sketch_capacity = w.sketch.capacity();
    r.sketch_min = w.sketch.min_count();
    r.sketch_total = w.sketch_total;
    for (auto& item : w.sketch.items()) {
      r.items.push_back(ReportItem{std::move(item.key), item.count, item.error});
    }
    std::deque<Pending>& q = queues[id];
    try {
      q.push_back(Pending{id, r.seq, r.topic,
                          config.report_json ? report_to_json(r) : encode_report_binary(r)});
    } catch (const std::exception&) {
      reports_rejected.fetch_add(1);
      return 0;
    }
    while (q.size() > config.report_queue_max) {
      q.pop_front();
      reports_dropped.fetch_add(1);
      topic_reports_dropped[id].fetch_add(1, std::memory_order_relaxed);
    }
    return 1;
  }

  void stop_all() {
    // Closing a TLS connection to a coordinator that has gone writes to a dead socket.
    detail::SigpipeGuard no_sigpipe;
    {
      std::lock_guard lock(mu);
      stopping = true;
      cv.notify_all();
      version_cv.notify_all();
    }
    std::vector<Subscriber*> subs;
    {
      std::lock_guard lock(topics_mu);
      for (auto& s : subscribers) subs.push_back(s.get());
    }
    // A long-poll may be parked in the socket: interrupt it until the thread has seen the stop
    // flag (stop() before the request starts would be a no-op, hence the repeat).
    for (Subscriber* s : subs) {
      while (!s->done.load()) {
        {
          std::lock_guard lock(s->http_mu);
          if (s->http != nullptr) s->http->stop();
        }
        std::unique_lock lock(mu);
        cv.wait_for(lock, milliseconds(5), [&] { return s->done.load(); });
      }
      s->thread.join();
    }
    if (reporter.joinable()) {
      {
        std::lock_guard lock(reporter_http_mu);
        if (reporter_http != nullptr) reporter_http->stop();
      }
      reporter.join();
    }
    kafka.reset();
  }
};

Client::Client(const Properties& props) : Client(props, parse_client_config(props).hash) {}

Client::Client(const Properties& props, HashFamily family)
    : impl_(std::make_unique<Impl>(props, family)) {
  for (const auto& t : impl_->config.topics) topic(t);
  if (impl_->enabled()) impl_->reporter = std::thread([this] { impl_->report_loop(); });
}

Client::~Client() { impl_->stop_all(); }

const ClientConfig& Client::config() const noexcept { return impl_->config; }
HashFamily Client::family() const noexcept { return impl_->family; }
Router& Client::router() noexcept { return impl_->router; }
const Router& Client::router() const noexcept { return impl_->router; }

TopicId Client::topic(std::string_view name) {
  if (auto id = impl_->router.find_topic(name)) {
    if (impl_->sampler_by_id[*id].load(std::memory_order_acquire) != nullptr) return *id;
  }
  std::lock_guard lock(impl_->topics_mu);
  TopicId id = impl_->router.topic(name);
  if (impl_->sampler_by_id[id].load() == nullptr) {
    impl_->samplers.push_back(std::make_unique<Sampler>(
        impl_->config.sketch_capacity, impl_->config.sample_rate,
        impl_->enabled() && impl_->config.surge_interval_ms > 0 ? impl_->config.surge_factor
                                                                : 0.0));
    impl_->sampler_by_id[id].store(impl_->samplers.back().get(), std::memory_order_release);
    if (impl_->kafka) {
      impl_->kafka->add_topic(id);
    } else if (impl_->enabled()) {
      impl_->start_subscriber(id);
    }
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
  Sampler* sampler = impl_->sampler_by_id[id].load(std::memory_order_acquire);
  if (sampler == nullptr) return;
  if (key == nullptr) {
    sampler->record_null();
  } else {
    sampler->record(std::string_view(static_cast<const char*>(key), keylen), partition, salted);
  }
}

bool Client::wait_for_version(TopicId id, uint64_t min_version, milliseconds timeout) {
  std::unique_lock lock(impl_->mu);
  return impl_->version_cv.wait_for(lock, timeout, [&] {
    return impl_->router.version(id) >= min_version || impl_->stopping;
  }) && impl_->router.version(id) >= min_version;
}

void Client::report_now() {
  if (!impl_->enabled()) return;
  std::unique_lock lock(impl_->mu);
  uint64_t target = impl_->report_rounds + 1;
  impl_->report_requested = true;
  impl_->cv.notify_all();
  // The round in progress may have started before the request: wait for one more.
  impl_->version_cv.wait_for(lock, milliseconds(impl_->config.http_timeout_ms * 2 + 1000), [&] {
    return impl_->stopping || (impl_->report_rounds >= target && !impl_->report_requested);
  });
}

ClientStats Client::stats() const {
  ClientStats s;
  s.reports_sent = impl_->reports_sent.load();
  s.reports_failed = impl_->reports_failed.load();
  if (impl_->kafka) {
    KafkaTransportStats k = impl_->kafka->stats();
    s.reports_sent += k.reports_delivered;
    s.reports_failed += k.reports_undelivered;
  }
  s.reports_rejected = impl_->reports_rejected.load();
  s.reports_dropped = impl_->reports_dropped.load();
  s.reports_surge = impl_->reports_surge.load();
  s.list_updates = impl_->list_updates.load();
  s.list_errors = impl_->list_errors.load();
  size_t n = impl_->router.topic_count();
  for (TopicId id = 0; id < n; ++id) {
    TopicStats t;
    t.topic = impl_->router.topic_name(id);
    t.list_version = impl_->router.version(id);
    t.partitions = impl_->router.live_partitions(id);
    if (auto list = impl_->router.list(id)) t.hot_keys = list->keys.size();
    t.plain = impl_->router.plain(id);
    if (Sampler* sampler = impl_->sampler_by_id[id].load()) {
      auto c = sampler->counters();
      t.salted = c.salted;
      t.cold = c.cold;
      t.null_key = c.null_key;
    }
    t.reports_dropped = impl_->topic_reports_dropped[id].load(std::memory_order_relaxed);
    s.topics.push_back(std::move(t));
  }
  return s;
}

}  // namespace hotkey::client
