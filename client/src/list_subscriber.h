// The list side of the client core: follows each registered topic's hot-key list and hands the
// router every newer valid one. Over HTTP one thread keeps one subscription in flight for every
// registered topic (POST /v1/hotkeys/subscribe with the version held per topic); a topic
// registered meanwhile cuts that request's connection, so the next request, sent at once,
// carries it. A coordinator without the endpoint (404/405) gets one long-poll thread per topic
// (GET /v1/hotkeys?topic=T&since=V&wait_ms=W), as before, and the subscription is tried again
// every 5 minutes. With hotkey.transport=kafka the records of the lists topic, which the
// KafkaTransport's one consumer delivers to on_list_record().
//
// Every list is validated before use (parse_list_json recomputes every salt) and must name its
// topic; only a version above the one the router has is published (versions never go back).
// Garbage, a failed poll or a stale list keeps the last good list (fail-static) and counts as a
// list error. With hotkey.list.expired.policy=plain and hotkey.list.ttl.ms, a topic whose
// coordinator has not answered for the TTL routes plainly until the next answer (the kafka
// transport applies that policy itself).
//
// Staleness (hotkey.list.stale.ms, docs/CLIENT.md "Local tables"): a failed request marks every
// topic it carried as out of contact from then on, an answer as in contact; the `stale` member
// of a subscription answer names the topics whose owner the coordinator sees as gone. A topic
// back in contact (and not named there) has its local tables dropped at once.
//
// Thread-safe: follow(), on_list_record(), wait_for_version() and stop() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hotkey/client/config.h"
#include "hotkey/client/router.h"
#include "kafka_transport.h"
#include "staleness.h"

namespace httplib {
class Client;
}

namespace hotkey::client::detail {

class ListSubscriber {
 public:
  // The references must outlive the subscriber.
  ListSubscriber(const ClientConfig& config, Router& router, Staleness& staleness);
  // stop().
  ~ListSubscriber();
  ListSubscriber(const ListSubscriber&) = delete;
  ListSubscriber& operator=(const ListSubscriber&) = delete;

  // hotkey.transport=kafka: topics are followed through `kafka` (which calls on_list_record)
  // instead of long-polls. Before the first follow().
  void use_kafka(KafkaTransport* kafka) { kafka_ = kafka; }

  // Starts following topic `id` (idempotent): the subscription's next request, its long-poll
  // thread (an older coordinator), or its lists partition. Never waits for the network.
  void follow(TopicId id);

  // One record of the lists topic for topic `id`: the list document, or nullopt for a
  // tombstone (the topic was deleted: the list is dropped, the version floor kept).
  void on_list_record(TopicId id, const std::optional<std::string>& value);

  // Waits until the router has a list of version >= min_version for `id`; false on timeout or
  // after stop.
  bool wait_for_version(TopicId id, uint64_t min_version, std::chrono::milliseconds timeout);

  // Tells the threads to stop and wakes every waiter; returns at once.
  void request_stop();
  // request_stop(), interrupts parked long-polls and joins the threads (idempotent).
  void stop();

  uint64_t list_updates() const noexcept { return updates_.load(); }  // lists accepted
  uint64_t list_errors() const noexcept { return errors_.load(); }    // everything refused
  // Long-poll threads running (an older coordinator); 0 while the subscription is used.
  size_t pollers() const;

 private:
  struct Poller {
    TopicId id = 0;
    std::thread thread;
    std::mutex http_mu;
    httplib::Client* http = nullptr;  // guarded by http_mu, for stop()
    std::atomic<bool> done{false};
    std::atomic<bool> retire{false};  // the subscription works again: end this long-poll
  };

  enum class Answer : uint8_t { kOk, kInterrupted, kUnsupported, kFailed };
  // What the last subscription answer said beyond its lists (the subscription thread only).
  struct AnswerInfo {
    bool lists = false;       // it carried at least one list
    size_t stale_topics = 0;  // topics its `stale` named
  };
  void subscription_loop();
  // One subscription request for every followed topic.
  Answer subscribe_once(httplib::Client& http, std::chrono::steady_clock::time_point* last_contact,
                        AnswerInfo* info);
  // The wait_ms of the next request: hotkey.poll.wait.ms, or 0 to learn at once what the
  // coordinator holds (a topic whose list state is unknown, contact lost), or at most the
  // stale bound while the last answer named stale topics (so the set is asked again).
  uint32_t next_wait_ms(const std::vector<TopicId>& topics, size_t stale_topics) const;
  // The source answered for `id` (contact, list state known); a topic not stale any more has
  // its local tables dropped.
  void answered(TopicId id, bool owner_gone);
  // A request carrying these topics failed now.
  void failed(const std::vector<TopicId>& topics);
  // An older coordinator: one long-poll thread per followed topic / back to the subscription.
  void start_pollers();
  void retire_pollers();
  // Interrupts and joins the long-poll threads: those retiring, or all.
  void join_pollers(bool retiring_only);
  void start_poller_locked(TopicId id);
  void poll_loop(Poller* poller);
  // A newer list was published: wakes wait_for_version.
  void published();
  // Sleeps up to `d`; true when stopping (or when `*also` is set).
  bool wait_stop(std::chrono::milliseconds d, const std::atomic<bool>* also = nullptr);

  const ClientConfig& config_;
  Router& router_;
  Staleness& staleness_;
  KafkaTransport* kafka_ = nullptr;

  std::atomic<uint64_t> updates_{0}, errors_{0};

  std::mutex mu_;
  std::condition_variable stop_cv_;     // the poll threads' backoff sleeps, stop()
  std::condition_variable version_cv_;  // wait_for_version: a list was published (or stop)
  bool stopping_ = false;               // guarded by mu_

  mutable std::mutex pollers_mu_;
  std::vector<std::unique_ptr<Poller>> pollers_;  // guarded by pollers_mu_

  // The subscription. sub_mu_ guards the followed topics, their generation (bumped by every
  // follow) and the socket of the request in flight, which follow() and stop() shut down to
  // end it early. Lock order: sub_mu_ before pollers_mu_.
  std::mutex sub_mu_;
  std::vector<TopicId> topics_;
  uint64_t topics_gen_ = 0;
  uint64_t sent_gen_ = 0;         // the generation the request in flight carries
  int sub_fd_ = -1;               // a duplicate of its socket, -1 when none is open
  bool per_topic_ = false;        // an older coordinator: long-poll threads instead
  size_t last_stale_topics_ = 0;  // the subscription thread only: stale topics last answered
  std::thread sub_thread_;
};

}  // namespace hotkey::client::detail
