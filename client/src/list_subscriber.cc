#include "list_subscriber.h"

#include <httplib.h>

#include <algorithm>
#include <exception>

#include "backoff.h"
#include "coordinator_http.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/report.h"
#include "sigpipe.h"

namespace hotkey::client::detail {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

}  // namespace

ListSubscriber::ListSubscriber(const ClientConfig& config, Router& router)
    : config_(config), router_(router) {}

ListSubscriber::~ListSubscriber() { stop(); }

void ListSubscriber::follow(TopicId id) {
  if (kafka_ != nullptr) {
    kafka_->add_topic(id);
    return;
  }
  std::lock_guard lock(pollers_mu_);
  for (const auto& p : pollers_) {
    if (p->id == id) return;
  }
  auto poller = std::make_unique<Poller>();
  poller->id = id;
  Poller* raw = poller.get();
  pollers_.push_back(std::move(poller));
  raw->thread = std::thread([this, raw] { poll_loop(raw); });
}

void ListSubscriber::published() {
  updates_.fetch_add(1);
  std::lock_guard lock(mu_);
  version_cv_.notify_all();
}

// Validated exactly like a long-poll answer; only a newer version is published. A tombstone
// drops the list but keeps the version floor.
void ListSubscriber::on_list_record(TopicId id, const std::optional<std::string>& value) {
  const std::string topic = router_.topic_name(id);
  if (!value) {
    if (router_.remove_list(id)) published();
    return;
  }
  try {
    HotKeyList list = parse_list_json(*value);
    if (list.topic != topic) throw DecodeError("list for topic \"" + list.topic + "\"");
    if (!router_.publish(list)) {
      errors_.fetch_add(1);  // not newer than the list routed with
      return;
    }
    published();
  } catch (const std::exception&) {
    errors_.fetch_add(1);  // garbage: keep the last good list
  }
}

bool ListSubscriber::wait_for_version(TopicId id, uint64_t min_version, milliseconds timeout) {
  std::unique_lock lock(mu_);
  return version_cv_.wait_for(lock, timeout, [&] {
    return router_.version(id) >= min_version || stopping_;
  }) && router_.version(id) >= min_version;
}

bool ListSubscriber::wait_stop(milliseconds d) {
  std::unique_lock lock(mu_);
  return stop_cv_.wait_for(lock, d, [&] { return stopping_; });
}

void ListSubscriber::poll_loop(Poller* poller) {
  block_sigpipe_in_this_thread();
  const std::string topic = router_.topic_name(poller->id);
  auto http = make_coordinator_http(config_, config_.poll_wait_ms);
  {
    std::lock_guard lock(poller->http_mu);
    poller->http = http.get();
  }
  const bool expire_to_plain =
      config_.list_ttl_ms > 0 && config_.expired_policy == ExpiredPolicy::kPlain;
  Backoff backoff(config_.backoff_initial_ms, config_.backoff_max_ms);
  Clock::time_point last_contact = Clock::now();
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    uint64_t since = router_.version(poller->id);
    std::string path = "/v1/hotkeys?topic=" + topic + "&since=" + std::to_string(since) +
                       "&wait_ms=" + std::to_string(config_.poll_wait_ms);
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
          if (router_.publish(list)) published();
        }
      } catch (const std::exception&) {
        ok = false;  // garbage: keep the last good list
      }
    }
    if (ok) {
      backoff.reset();
      if (router_.plain(poller->id)) router_.set_plain(poller->id, false);
      continue;
    }
    errors_.fetch_add(1);
    if (expire_to_plain && Clock::now() - last_contact > milliseconds(config_.list_ttl_ms) &&
        !router_.plain(poller->id)) {
      router_.set_plain(poller->id, true);
    }
    milliseconds wait = backoff.next();
    if (expire_to_plain) {
      wait = std::min(wait, milliseconds(std::max<uint32_t>(config_.list_ttl_ms / 2, 1)));
    }
    if (wait_stop(wait)) break;
  }
  {
    std::lock_guard lock(poller->http_mu);
    poller->http = nullptr;
  }
  poller->done.store(true);
}

void ListSubscriber::request_stop() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  stop_cv_.notify_all();
  version_cv_.notify_all();
}

void ListSubscriber::stop() {
  // Closing a TLS connection to a coordinator that has gone writes to a dead socket.
  SigpipeGuard no_sigpipe;
  request_stop();
  std::vector<Poller*> pollers;
  {
    std::lock_guard lock(pollers_mu_);
    for (auto& p : pollers_) pollers.push_back(p.get());
  }
  // A long-poll may be parked in the socket: interrupt it until the thread has seen the stop
  // flag (stop() before the request starts would be a no-op, hence the repeat).
  for (Poller* p : pollers) {
    if (!p->thread.joinable()) continue;  // joined by an earlier stop()
    while (!p->done.load()) {
      {
        std::lock_guard lock(p->http_mu);
        if (p->http != nullptr) p->http->stop();
      }
      std::unique_lock lock(mu_);
      stop_cv_.wait_for(lock, milliseconds(5), [&] { return p->done.load(); });
    }
    p->thread.join();
  }
}

}  // namespace hotkey::client::detail
