#include "list_subscriber.h"

#include <fcntl.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>

#include "backoff.h"
#include "coordinator_http.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/report.h"
#include "sigpipe.h"

namespace hotkey::client::detail {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// After a 404/405 on the subscription, how long the client long-polls per topic before asking
// again (as the reporter does for batches).
constexpr std::chrono::minutes kSubscribeProbeInterval{5};
// While answers name stale topics without lists, requests go at most this often.
constexpr milliseconds kStaleRequestGap{100};

}  // namespace

ListSubscriber::ListSubscriber(const ClientConfig& config, Router& router, Staleness& staleness)
    : config_(config), router_(router), staleness_(staleness) {}

ListSubscriber::~ListSubscriber() { stop(); }

void ListSubscriber::follow(TopicId id) {
  if (kafka_ != nullptr) {
    kafka_->add_topic(id);
    return;
  }
  std::lock_guard lock(sub_mu_);
  if (std::find(topics_.begin(), topics_.end(), id) != topics_.end()) return;
  topics_.push_back(id);
  ++topics_gen_;
  if (per_topic_) {
    std::lock_guard plock(pollers_mu_);
    start_poller_locked(id);
    return;
  }
  if (!sub_thread_.joinable()) {
    sub_thread_ = std::thread([this] { subscription_loop(); });
  } else if (sub_fd_ >= 0) {
    // The request in flight lacks this topic: end it; the loop sends the next one at once.
    // Shutting the socket down never blocks, and the duplicate keeps the number ours.
    ::shutdown(sub_fd_, SHUT_RDWR);
  }
}

size_t ListSubscriber::pollers() const {
  std::lock_guard lock(pollers_mu_);
  size_t n = 0;
  for (const auto& p : pollers_) n += p->done.load() ? 0 : 1;
  return n;
}

void ListSubscriber::start_poller_locked(TopicId id) {
  for (const auto& p : pollers_) {
    if (p->id == id && !p->retire.load()) return;
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
    staleness_.set_known(id);
    if (router_.remove_list(id)) published();
    return;
  }
  try {
    HotKeyList list = parse_list_json(*value);
    if (list.topic != topic) throw DecodeError("list for topic \"" + list.topic + "\"");
    staleness_.set_known(id);
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

void ListSubscriber::subscription_loop() {
  block_sigpipe_in_this_thread();
  auto http = make_coordinator_http(config_, config_.poll_wait_ms);
  // A connection per request: the socket-options hook below then sees every request's socket
  // before the request is written, so a follow() can never slip between building a request
  // and its socket becoming cancellable.
  http->set_keep_alive(false);
  http->set_socket_options([this](int sock) {
    std::lock_guard lock(sub_mu_);
    sub_fd_ = ::fcntl(sock, F_DUPFD_CLOEXEC, 0);
    bool stopping = false;
    {
      std::lock_guard slock(mu_);
      stopping = stopping_;
    }
    if (stopping || topics_gen_ != sent_gen_) ::shutdown(sock, SHUT_RDWR);
  });
  const bool expire_to_plain =
      config_.list_ttl_ms > 0 && config_.expired_policy == ExpiredPolicy::kPlain;
  Backoff backoff(config_.backoff_initial_ms, config_.backoff_max_ms);
  Clock::time_point last_contact = Clock::now();
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    const Clock::time_point asked = Clock::now();
    AnswerInfo info;
    const Answer answer = subscribe_once(*http, &last_contact, &info);
    if (answer == Answer::kOk && !info.lists && info.stale_topics > 0) {
      // Answered because the stale set changed (or its wait passed): a coordinator that kept
      // answering at once would otherwise be asked in a tight loop.
      const auto since = std::chrono::duration_cast<milliseconds>(Clock::now() - asked);
      if (since < kStaleRequestGap && wait_stop(kStaleRequestGap - since)) break;
    }
    if (answer == Answer::kOk || answer == Answer::kInterrupted) {
      if (answer == Answer::kOk) backoff.reset();
      bool per_topic = false;
      {
        std::lock_guard lock(sub_mu_);
        per_topic = per_topic_;
      }
      // The coordinator was upgraded: back to one subscription.
      if (per_topic) retire_pollers();
      continue;
    }
    if (answer == Answer::kUnsupported) {
      // An older coordinator: long-poll per topic, and ask again later.
      start_pollers();
      if (wait_stop(kSubscribeProbeInterval)) break;
      continue;
    }
    errors_.fetch_add(1);
    std::vector<TopicId> topics;
    {
      std::lock_guard lock(sub_mu_);
      topics = topics_;
    }
    failed(topics);
    if (expire_to_plain && Clock::now() - last_contact > milliseconds(config_.list_ttl_ms)) {
      for (TopicId id : topics) {
        if (!router_.plain(id)) router_.set_plain(id, true);
      }
    }
    milliseconds wait = backoff.next();
    if (expire_to_plain) {
      wait = std::min(wait, milliseconds(std::max<uint32_t>(config_.list_ttl_ms / 2, 1)));
    }
    // Stale topics route with local tables until contact is back: ask at least once a bound.
    if (staleness_.enabled()) wait = std::min(wait, milliseconds(staleness_.bound_ms()));
    if (wait_stop(wait)) break;
  }
}

uint32_t ListSubscriber::next_wait_ms(const std::vector<TopicId>& topics,
                                      size_t stale_topics) const {
  if (!staleness_.enabled()) return config_.poll_wait_ms;
  for (TopicId id : topics) {
    // Unknown: a long-poll would only answer at its wait when the topic has no list. Contact
    // lost: only an answer says the coordinator is back, and a parked request gives none.
    if (!(staleness_.known(id) || router_.version(id) > 0) || staleness_.out_of_contact(id)) {
      return 0;
    }
  }
  if (stale_topics > 0) return std::min(config_.poll_wait_ms, staleness_.bound_ms());
  return config_.poll_wait_ms;
}

void ListSubscriber::answered(TopicId id, bool owner_gone) {
  staleness_.contact(id);
  staleness_.set_known(id);
  staleness_.set_owner_gone(id, owner_gone);
  if (!owner_gone && !staleness_.stale(id)) router_.drop_local_tables(id);
}

void ListSubscriber::failed(const std::vector<TopicId>& topics) {
  const int64_t now = Staleness::now_ms();
  for (TopicId id : topics) staleness_.lost(id, now);
}

ListSubscriber::Answer ListSubscriber::subscribe_once(httplib::Client& http,
                                                      Clock::time_point* last_contact,
                                                      AnswerInfo* info) {
  std::vector<std::pair<TopicId, uint64_t>> held;
  std::vector<TopicId> ids;
  nlohmann::json topics = nlohmann::json::array();
  bool probing = false;  // long-polls run (an older coordinator): only ask whether it is newer
  {
    std::lock_guard lock(sub_mu_);
    probing = per_topic_;
    sent_gen_ = topics_gen_;
    for (TopicId id : topics_) {
      const uint64_t since = router_.version(id);
      held.emplace_back(id, since);
      ids.push_back(id);
      topics.push_back({{"topic", router_.topic_name(id)}, {"since", since}});
    }
  }
  const uint32_t wait_ms = probing ? 0u : next_wait_ms(ids, last_stale_topics_);
  const nlohmann::json body{{"topics", std::move(topics)}, {"wait_ms", wait_ms}};
  auto res = http.Post("/v1/hotkeys/subscribe", body.dump(), "application/json");
  bool interrupted = false;
  {
    std::lock_guard lock(sub_mu_);
    if (sub_fd_ >= 0) ::close(sub_fd_);
    sub_fd_ = -1;
    interrupted = topics_gen_ != sent_gen_;
  }
  if (res && (res->status == 404 || res->status == 405)) return Answer::kUnsupported;
  if (!res || res->status != 200) {
    // Cut by follow() (or stop()) on purpose: not the coordinator's fault.
    return interrupted ? Answer::kInterrupted : Answer::kFailed;
  }
  *last_contact = Clock::now();
  std::vector<std::string> stale;
  try {
    const nlohmann::json answer = nlohmann::json::parse(res->body);
    // The topics whose owner the coordinator sees as gone (cluster mode); absent: none.
    if (auto it = answer.find("stale"); it != answer.end() && !it->is_null()) {
      for (const nlohmann::json& name : it->get_ref<const nlohmann::json::array_t&>()) {
        stale.push_back(name.get<std::string>());
      }
    }
    info->lists = !answer.at("lists").empty();
    for (const nlohmann::json& doc : answer.at("lists")) {
      try {
        HotKeyList list = parse_list_json(doc.dump());
        auto it = std::find_if(held.begin(), held.end(), [&](const auto& h) {
          return router_.topic_name(h.first) == list.topic;
        });
        if (it == held.end()) throw DecodeError("list for topic \"" + list.topic + "\"");
        if (list.version <= it->second) throw DecodeError("list not newer than held");
        if (router_.publish(list)) published();
      } catch (const std::exception&) {
        errors_.fetch_add(1);  // garbage: keep the last good list of that topic
      }
    }
  } catch (const std::exception&) {
    return Answer::kFailed;
  }
  size_t stale_topics = 0;
  for (const auto& [id, since] : held) {
    if (router_.plain(id)) router_.set_plain(id, false);
    const bool gone = std::find(stale.begin(), stale.end(), router_.topic_name(id)) != stale.end();
    stale_topics += gone ? 1 : 0;
    answered(id, gone);
  }
  info->stale_topics = stale_topics;
  last_stale_topics_ = stale_topics;
  return Answer::kOk;
}

void ListSubscriber::start_pollers() {
  std::lock_guard lock(sub_mu_);
  per_topic_ = true;
  std::lock_guard plock(pollers_mu_);
  for (TopicId id : topics_) start_poller_locked(id);
}

void ListSubscriber::retire_pollers() {
  {
    std::lock_guard lock(sub_mu_);
    per_topic_ = false;
    std::lock_guard plock(pollers_mu_);
    for (auto& p : pollers_) p->retire.store(true);
  }
  join_pollers(true);
}

bool ListSubscriber::wait_stop(milliseconds d, const std::atomic<bool>* also) {
  std::unique_lock lock(mu_);
  return stop_cv_.wait_for(lock, d, [&] { return stopping_ || (also != nullptr && also->load()); });
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
      if (stopping_ || poller->retire.load()) break;
    }
    uint64_t since = router_.version(poller->id);
    std::string path = "/v1/hotkeys?topic=" + topic + "&since=" + std::to_string(since) +
                       "&wait_ms=" + std::to_string(next_wait_ms({poller->id}, 0));
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
      answered(poller->id, false);
      continue;
    }
    errors_.fetch_add(1);
    failed({poller->id});
    if (expire_to_plain && Clock::now() - last_contact > milliseconds(config_.list_ttl_ms) &&
        !router_.plain(poller->id)) {
      router_.set_plain(poller->id, true);
    }
    milliseconds wait = backoff.next();
    if (expire_to_plain) {
      wait = std::min(wait, milliseconds(std::max<uint32_t>(config_.list_ttl_ms / 2, 1)));
    }
    if (staleness_.enabled()) wait = std::min(wait, milliseconds(staleness_.bound_ms()));
    if (wait_stop(wait, &poller->retire)) break;
  }
  {
    std::lock_guard lock(poller->http_mu);
    poller->http = nullptr;
  }
  poller->done.store(true);
}

void ListSubscriber::request_stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    stop_cv_.notify_all();
    version_cv_.notify_all();
  }
  std::lock_guard lock(sub_mu_);
  if (sub_fd_ >= 0) ::shutdown(sub_fd_, SHUT_RDWR);
}

void ListSubscriber::stop() {
  // Closing a TLS connection to a coordinator that has gone writes to a dead socket.
  SigpipeGuard no_sigpipe;
  request_stop();
  if (sub_thread_.joinable()) sub_thread_.join();
  join_pollers(false);
}

void ListSubscriber::join_pollers(bool retiring_only) {
  std::vector<Poller*> pollers;
  {
    std::lock_guard lock(pollers_mu_);
    for (auto& p : pollers_) {
      if (!retiring_only || p->retire.load()) pollers.push_back(p.get());
    }
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
      stop_cv_.notify_all();  // a retiring long-poll in its backoff sleep
      stop_cv_.wait_for(lock, milliseconds(5), [&] { return p->done.load(); });
    }
    p->thread.join();
  }
  if (retiring_only) {
    std::lock_guard lock(pollers_mu_);
    std::erase_if(pollers_, [](const auto& p) { return p->retire.load(); });
  }
}

}  // namespace hotkey::client::detail
