// The reporter of the client core: one background thread that, every
// hotkey.report.interval.ms, drains each topic's sampler into a Report (docs/CONTRACTS.md,
// "Reports"), queues it per topic and sends the queues to the coordinator. Between rounds it
// sends an early report for a topic whose sampler saw a surging key (hotkey.surge.*).
//
// Transport: POST /v1/reports/batch (single POST /v1/reports to a coordinator without the batch
// form, asking again every few minutes), or, with hotkey.transport=kafka, produced to the
// reports topic through the KafkaTransport. Undelivered reports stay queued and are retried
// with backoff; each topic's queue holds at most hotkey.report.queue.max reports.
//
// Local tables (docs/CLIENT.md, "Local tables"): each window it drains of a topic whose list is
// stale is also the input of that topic's local tables (local_plan.h), set on the router.
//
// Thread-safe: report_now(), stats() and stop() from any thread. Never touches the send path.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hotkey/client/config.h"
#include "hotkey/client/router.h"
#include "kafka_transport.h"
#include "sampler_set.h"
#include "staleness.h"

namespace httplib {
class Client;
}

namespace hotkey::client::detail {

class Reporter {
 public:
  struct Stats {
    uint64_t sent = 0;      // accepted (2xx), or delivered to the reports topic
    uint64_t failed = 0;    // send attempts that left reports queued; undelivered (kafka)
    uint64_t rejected = 0;  // refused as invalid (400/413/422) or not encodable: dropped
    uint64_t dropped = 0;   // pushed out of a full topic queue
    uint64_t surge = 0;     // early reports built for a surging key
  };

  // `kafka` null: HTTP to config.coordinator_url. The references must outlive the reporter.
  Reporter(const ClientConfig& config, HashFamily family, Router& router,
           const SamplerSet& samplers, const Staleness& staleness, KafkaTransport* kafka);
  // stop().
  ~Reporter();
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  // Starts the thread (once).
  void start();
  // Tells the thread to stop and wakes every waiter; returns at once.
  void request_stop();
  // request_stop(), interrupts a request in flight and joins the thread (idempotent).
  void stop();

  // Builds and sends the reports of the current window now (a shutdown flush); returns once
  // the round finished (with kafka: acknowledged by the brokers), the reporter stopped, or
  // after 2 x hotkey.http.timeout.ms + 1 s. No-op when not started.
  void report_now();

  // A sampler noticed a surge (Sampler::SurgeHooks::noticed, on a sending thread): wakes the
  // reporter, which otherwise sleeps until its next round or surge deadline.
  void surge_noticed() noexcept;

  Stats stats() const;
  // Reports of topic `id` pushed out of its full queue.
  uint64_t topic_dropped(TopicId id) const noexcept {
    return topic_dropped_[id].load(std::memory_order_relaxed);
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending;
  struct SurgeState;
  enum class Outcome : uint8_t;
  enum class BatchAnswer : uint8_t;

  void loop();
  size_t build_report(std::vector<std::deque<Pending>>& queues, TopicId id,
                      Clock::time_point& window_start, Clock::time_point now, uint64_t& seq);
  std::vector<TopicId> take_surges(std::vector<SurgeState>& state, Clock::time_point now);
  Clock::time_point next_surge_wake(const std::vector<SurgeState>& state) const;
  bool flush_queues(httplib::Client* http, std::vector<std::deque<Pending>>& queues);
  std::vector<Outcome> send_reports(httplib::Client* http,
                                    const std::vector<const Pending*>& batch);
  BatchAnswer post_batch(httplib::Client& http, const std::vector<const Pending*>& batch,
                         size_t begin, size_t end, std::vector<Outcome>& out);
  static Outcome outcome_of(int status);
  std::chrono::milliseconds surge_mute() const;
  // Plans and sets (or drops) topic `id`'s local tables from the window just drained.
  void local_tables(TopicId id, int32_t partitions, const Sampler::Window& w,
                    const std::vector<ReportItem>& items);
  bool surges_on() const { return config_.surge_interval_ms > 0; }

  const ClientConfig& config_;
  const HashFamily family_;
  Router& router_;
  const SamplerSet& samplers_;
  const Staleness& staleness_;
  KafkaTransport* const kafka_;

  std::atomic<uint64_t> sent_{0}, failed_{0}, rejected_{0}, dropped_{0}, surge_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> topic_dropped_ =
      std::make_unique<std::atomic<uint64_t>[]>(Router::kMaxTopics);  // indexed by TopicId

  std::mutex mu_;
  std::condition_variable wake_cv_;    // the thread: stop, report_now, next round
  std::condition_variable rounds_cv_;  // report_now: a round finished (or stop)
  bool stopping_ = false;              // guarded by mu_
  bool requested_ = false;             // guarded by mu_: report_now is waiting
  bool surge_noticed_ = false;         // guarded by mu_: a sampler noticed a surge
  uint64_t rounds_ = 0;                // guarded by mu_
  std::thread thread_;
  std::mutex http_mu_;
  httplib::Client* http_ = nullptr;  // guarded by http_mu_, for stop()

  // Batch form state (the thread only): after a 404/405/415 singles until batch_probe_at_.
  bool batch_supported_ = true;
  Clock::time_point batch_probe_at_;
  // Per topic (the thread only): whether it had local tables when its window started; a report
  // of a window routed with them carries kLocalTableVersionBit in its list_version.
  std::vector<bool> window_local_;
};

}  // namespace hotkey::client::detail
