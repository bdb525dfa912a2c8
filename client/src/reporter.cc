#include "reporter.h"

#include <httplib.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <system_error>
#include <utility>

#include "backoff.h"
#include "coordinator_http.h"
#include "hotkey/report.h"
#include "hotkey/report_batch.h"
#include "local_plan.h"
#include "sigpipe.h"

namespace hotkey::client::detail {
namespace {

using std::chrono::milliseconds;

int64_t wall_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Batch form (POST /v1/reports/batch): at most kMaxReportsPerBatch reports and about
// kBatchBytes of body per request; after a 404/415 the reporter sends single reports and asks
// again after kBatchProbeInterval.
constexpr size_t kBatchBytes = 1u << 20;
constexpr std::chrono::minutes kBatchProbeInterval{5};

}  // namespace

// One encoded report waiting to be sent. Each topic has its own queue (oldest first), bounded
// by hotkey.report.queue.max, so one topic's backlog never pushes out another topic's report.
struct Reporter::Pending {
  TopicId topic = 0;
  uint64_t seq = 0;  // the report's seq: unique per client
  std::string topic_name;
  std::string body;  // encode_report_binary or report_to_json
};

// Surge reports (the thread only): per topic, when its last early report went and which keys'
// fingerprints are muted until when.
struct Reporter::SurgeState {
  Clock::time_point last{};
  // When the follow-up of the last early report is due (time_point{} when none is).
  Clock::time_point follow_up{};
  std::array<Clock::time_point, Sampler::kMuteSlots> muted_until{};
  uint32_t next_slot = 0;
};

enum class Reporter::Outcome : uint8_t {
  kAccepted,  // 2xx: done
  kRejected,  // 400/413/422: invalid, dropped, never retried
  kRetry,     // not delivered (network, 5xx, 401/403, 429): stays queued
};

enum class Reporter::BatchAnswer : uint8_t { kDone, kFailed, kUnsupported };

Reporter::Reporter(const ClientConfig& config, HashFamily family, Router& router,
                   const SamplerSet& samplers, const Staleness& staleness, KafkaTransport* kafka)
    : config_(config),
      family_(family),
      router_(router),
      samplers_(samplers),
      staleness_(staleness),
      kafka_(kafka) {}

Reporter::~Reporter() { stop(); }

void Reporter::start() {
  if (!thread_.joinable()) {
    thread_ = std::thread([this] {
      // Named for top -H and /proc/PID/task/*/comm (15 characters at most).
      pthread_setname_np(pthread_self(), "hotkey-reporter");
      loop();
    });
  }
}

void Reporter::request_stop() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  wake_cv_.notify_all();
  rounds_cv_.notify_all();
}

void Reporter::stop() {
  // Closing a TLS connection to a coordinator that has gone writes to a dead socket.
  SigpipeGuard no_sigpipe;
  request_stop();
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(http_mu_);
    if (http_ != nullptr) http_->stop();
  }
  thread_.join();
}

void Reporter::report_now() {
  std::unique_lock lock(mu_);
  if (!thread_.joinable()) return;
  uint64_t target = rounds_ + 1;
  requested_ = true;
  wake_cv_.notify_all();
  // The round in progress may have started before the request: wait for one more.
  rounds_cv_.wait_for(lock, milliseconds(config_.http_timeout_ms * 2 + 1000),
                      [&] { return stopping_ || (rounds_ >= target && !requested_); });
}

void Reporter::surge_noticed() noexcept {
  try {
    std::lock_guard lock(mu_);
    surge_noticed_ = true;
    wake_cv_.notify_all();
  } catch (const std::system_error&) {
    // The lock failed: the surge is taken at the next round instead.
  }
}

Reporter::Stats Reporter::stats() const {
  Stats s;
  s.sent = sent_.load();
  s.failed = failed_.load();
  if (kafka_ != nullptr) {
    KafkaTransportStats k = kafka_->stats();
    s.sent += k.reports_delivered;
    s.failed += k.reports_undelivered;
  }
  s.rejected = rejected_.load();
  s.dropped = dropped_.load();
  s.surge = surge_.load();
  return s;
}

// The send step, the one place that talks to the coordinator about reports: delivers `batch`
// (each topic's reports oldest first) and returns one outcome per report, in order.
// Over HTTP, or (null `http`) produced to the reports topic with hotkey.transport=kafka.
std::vector<Reporter::Outcome> Reporter::send_reports(httplib::Client* http,
                                                      const std::vector<const Pending*>& batch) {
  std::vector<Outcome> out(batch.size(), Outcome::kRetry);
  if (kafka_ != nullptr) {
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!kafka_->send_report(batch[i]->topic_name, batch[i]->body)) break;
      out[i] = Outcome::kAccepted;
    }
    return out;
  }
  if (batch_supported_ || Clock::now() >= batch_probe_at_) {
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
        batch_supported_ = false;
        batch_probe_at_ = Clock::now() + kBatchProbeInterval;
        break;
      }
      batch_supported_ = true;
      if (a == BatchAnswer::kFailed) return out;
      i = end;
    }
    if (batch_supported_) return out;
  }
  const std::string content_type =
      config_.report_json ? "application/json" : std::string(kReportBinaryContentType);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (out[i] != Outcome::kRetry) continue;
    auto res = http->Post("/v1/reports", batch[i]->body, content_type);
    out[i] = outcome_of(res ? res->status : 0);
    if (out[i] == Outcome::kRetry) break;  // the coordinator is unwell: the rest waits
  }
  return out;
}

Reporter::Outcome Reporter::outcome_of(int status) {
  if (status >= 200 && status < 300) return Outcome::kAccepted;
  // 409: the report's hash family differs from the topic's (docs/API.md). Sent again it is
  // refused again, and its retries would back the producer's other topics off with it.
  if (status == 400 || status == 409 || status == 413 || status == 422) return Outcome::kRejected;
  return Outcome::kRetry;
}

// POST /v1/reports/batch with batch[begin, end); fills out[begin, end) from the per-report
// results. kUnsupported: the coordinator does not know the batch form (404, 415, 405).
Reporter::BatchAnswer Reporter::post_batch(httplib::Client& http,
                                           const std::vector<const Pending*>& batch, size_t begin,
                                           size_t end, std::vector<Outcome>& out) {
  std::vector<std::string_view> bodies;
  for (size_t i = begin; i < end; ++i) bodies.push_back(batch[i]->body);
  std::string body;
  try {
    body =
        config_.report_json ? encode_report_batch_json(bodies) : encode_report_batch_binary(bodies);
  } catch (const std::exception&) {
    return BatchAnswer::kUnsupported;  // cannot frame it: singles
  }
  auto res = http.Post(
      "/v1/reports/batch", body,
      config_.report_json ? "application/json" : std::string(kReportBatchBinaryContentType));
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
bool Reporter::flush_queues(httplib::Client* http, std::vector<std::deque<Pending>>& queues) {
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
        if (kafka_ == nullptr) sent_.fetch_add(1);  // kafka: counted when delivered
        done.push_back(batch[i]->seq);
        break;
      case Outcome::kRejected:
        rejected_.fetch_add(1);
        done.push_back(batch[i]->seq);
        break;
      case Outcome::kRetry:
        all = false;
        break;
    }
  }
  if (!all) failed_.fetch_add(1);
  std::sort(done.begin(), done.end());
  for (auto& q : queues) {
    std::erase_if(
        q, [&](const Pending& p) { return std::binary_search(done.begin(), done.end(), p.seq); });
  }
  return all;
}

// How long a key that had its early report stays muted (its topic's regular reports carry it
// meanwhile; a key the coordinator keeps cold, e.g. denied, costs one early report per mute,
// not one per hotkey.surge.interval.ms).
milliseconds Reporter::surge_mute() const {
  return std::max(milliseconds(5000), milliseconds(uint64_t{config_.report_interval_ms} * 10));
}

// The topics whose samplers saw a surge since the last look and may send an early report
// now (hotkey.surge.interval.ms since their last one), and those whose follow-up is due;
// mutes the surging keys. A surge too soon after the topic's last early report is left in
// its sampler (which then notices no other until it is taken): next_surge_wake wakes the
// reporter for it when the interval has passed.
std::vector<TopicId> Reporter::take_surges(std::vector<SurgeState>& state, Clock::time_point now) {
  std::vector<TopicId> due;
  size_t n = router_.topic_count();
  if (state.size() < n) state.resize(n);
  for (TopicId id = 0; id < n; ++id) {
    Sampler* sampler = samplers_.get(id);
    if (sampler == nullptr) continue;
    int32_t partitions = router_.live_partitions(id);
    if (partitions < 1) {
      if (auto list = router_.list(id)) partitions = list->partitions;
    }
    sampler->set_partitions(partitions);
    SurgeState& st = state[id];
    for (uint32_t slot = 0; slot < Sampler::kMuteSlots; ++slot) {
      if (st.muted_until[slot] != Clock::time_point{} && now >= st.muted_until[slot]) {
        sampler->set_muted(slot, 0);
        st.muted_until[slot] = Clock::time_point{};
      }
    }
    // The follow-up: an early report drains the sampler's window, which holds the records of
    // the whole round before the surge, so the surging key's share of it is only just over the
    // surge factor; one hotkey.surge.interval.ms later the next report holds little else, and
    // that one shows the coordinator a fleet-wide surge it can list at once.
    if (st.follow_up != Clock::time_point{} && now >= st.follow_up) {
      st.follow_up = Clock::time_point{};
      st.last = now;
      due.push_back(id);
      continue;
    }
    // Too soon after the topic's last early report: a waiting surge stays in its sampler.
    if (now - st.last < milliseconds(config_.surge_interval_ms)) continue;
    uint64_t fingerprint = sampler->take_surge();
    if (fingerprint == 0) continue;
    st.last = now;
    st.follow_up = now + milliseconds(config_.surge_interval_ms);
    sampler->set_muted(st.next_slot, fingerprint);
    st.muted_until[st.next_slot] = now + surge_mute();
    st.next_slot = (st.next_slot + 1) % Sampler::kMuteSlots;
    due.push_back(id);
  }
  return due;
}

// When the reporter must look at surges again without being woken: the earliest follow-up,
// and for a surge left waiting, the end of its topic's interval (a surge noticed later wakes
// the reporter through surge_noticed). Mutes end at the first look after their time.
Reporter::Clock::time_point Reporter::next_surge_wake(const std::vector<SurgeState>& state) const {
  static const SurgeState kNotSeen;  // a topic take_surges has not looked at: due at once
  Clock::time_point wake = Clock::time_point::max();
  size_t n = router_.topic_count();
  for (TopicId id = 0; id < n; ++id) {
    Sampler* sampler = samplers_.get(id);
    if (sampler == nullptr) continue;
    const SurgeState& st = id < state.size() ? state[id] : kNotSeen;
    if (st.follow_up != Clock::time_point{}) wake = std::min(wake, st.follow_up);
    if (sampler->surge_waiting()) {
      wake = std::min(wake, st.last + milliseconds(config_.surge_interval_ms));
    }
  }
  return wake;
}

void Reporter::loop() {
  block_sigpipe_in_this_thread();
  std::unique_ptr<httplib::Client> http;
  if (kafka_ == nullptr) http = make_coordinator_http(config_, 0);
  {
    std::lock_guard lock(http_mu_);
    http_ = http.get();
  }
  Backoff backoff(config_.backoff_initial_ms, config_.backoff_max_ms);
  std::vector<std::deque<Pending>> queues;      // indexed by TopicId
  std::vector<Clock::time_point> window_start;  // per topic: its sampler's last drain
  std::vector<SurgeState> surge;                // indexed by TopicId
  Clock::time_point next = Clock::now() + milliseconds(config_.report_interval_ms);
  Clock::time_point retry_at = Clock::now();
  Clock::time_point last_round = Clock::now();  // a new topic's window starts there
  uint64_t seq = 0;
  for (;;) {
    bool forced = false;
    {
      std::unique_lock lock(mu_);
      Clock::time_point until = next;
      if (surges_on()) until = std::min(until, next_surge_wake(surge));
      wake_cv_.wait_until(lock, until, [&] { return stopping_ || requested_ || surge_noticed_; });
      if (stopping_) break;
      forced = requested_;
      requested_ = false;
      surge_noticed_ = false;
    }
    Clock::time_point now = Clock::now();
    size_t n = router_.topic_count();
    if (window_start.size() < n) window_start.resize(n, last_round);
    if (!forced && now < next) {
      // Between rounds: early reports of the topics that saw a surge, sent at once unless
      // the coordinator is being backed off from (they then wait in their queues).
      std::vector<TopicId> due = take_surges(surge, now);
      size_t built = 0;
      for (TopicId id : due) built += build_report(queues, id, window_start[id], now, seq);
      if (built == 0) continue;
      surge_.fetch_add(built);
      if (now >= retry_at) {
        if (flush_queues(http.get(), queues)) {
          backoff.reset();
        } else {
          retry_at = Clock::now() + backoff.next();
        }
      }
      continue;
    }
    if (now >= next) next = now + milliseconds(config_.report_interval_ms);
    last_round = now;
    for (TopicId id = 0; id < n; ++id) build_report(queues, id, window_start[id], now, seq);
    if (forced || now >= retry_at) {
      if (flush_queues(http.get(), queues)) {
        backoff.reset();
      } else {
        retry_at = Clock::now() + backoff.next();
      }
      // A forced round (report_now) returns once the brokers acknowledged.
      if (forced && kafka_ != nullptr) kafka_->flush(milliseconds(config_.http_timeout_ms));
    }
    std::lock_guard lock(mu_);
    ++rounds_;
    rounds_cv_.notify_all();
  }
  std::lock_guard lock(http_mu_);
  http_ = nullptr;
}

// Adds the report of topic `id`'s window (since `window_start`, which becomes `now`) to its
// queue; a topic's queue holds at most hotkey.report.queue.max reports, beyond which that
// topic's oldest is dropped and counted. Returns the number of reports queued (0 or 1).
size_t Reporter::build_report(std::vector<std::deque<Pending>>& queues, TopicId id,
                              Clock::time_point& window_start, Clock::time_point now,
                              uint64_t& seq) {
  if (queues.size() <= id) queues.resize(id + 1);
  Sampler* sampler = samplers_.get(id);
  if (sampler == nullptr) return 0;
  const auto window_ms = std::chrono::duration_cast<milliseconds>(now - window_start).count();
  window_start = now;
  int32_t partitions = router_.live_partitions(id);
  auto list = router_.list(id);
  if (partitions < 1 && list) partitions = list->partitions;
  if (partitions < 1) return 0;  // nothing sent yet
  if (surges_on()) sampler->set_partitions(partitions);
  Sampler::Window w = sampler->drain(
      partitions, static_cast<uint32_t>(std::clamp<int64_t>(window_ms, 0, UINT32_MAX)),
      config_.report_interval_ms);
  if (w.total == 0) return 0;
  Report r;
  r.producer = config_.producer_id;
  r.topic = router_.topic_name(id);
  r.partitions = partitions;
  r.hash = family_;
  if (list) r.separator = list->separator;
  r.window_ms = static_cast<uint32_t>(std::clamp<int64_t>(window_ms, 1, UINT32_MAX));
  r.sample_rate = w.sample_rate;
  r.total = w.total;
  r.seq = ++seq;
  r.sent_at_ms = wall_ms();
  r.list_version = router_.version(id);
  r.sketch_capacity = w.sketch.capacity();
  r.sketch_min = w.sketch.min_count();
  r.sketch_total = w.sketch_total;
  for (auto& item : w.sketch.items()) {
    r.items.push_back(ReportItem{std::move(item.key), item.count, item.error});
  }
  // A window routed with local tables at any point: the coordinator cannot account its load
  // against a list of its own (it takes the version for none it knows and keeps only the
  // sketch), nor adopt it as a floor (docs/CLIENT.md, "Local tables").
  if (window_local_.size() <= id) window_local_.resize(id + 1, false);
  if (window_local_[id] || router_.local_tables(id) != nullptr) {
    r.list_version |= kLocalTableVersionBit;
  }
  if (staleness_.enabled()) local_tables(id, partitions, w, r.items);
  window_local_[id] = router_.local_tables(id) != nullptr;
  r.partition_counts = std::move(w.partition_counts);
  std::deque<Pending>& q = queues[id];
  try {
    q.push_back(Pending{id, r.seq, r.topic,
                        config_.report_json ? report_to_json(r) : encode_report_binary(r)});
  } catch (const std::exception&) {
    rejected_.fetch_add(1);
    return 0;
  }
  while (q.size() > config_.report_queue_max) {
    q.pop_front();
    dropped_.fetch_add(1);
    topic_dropped_[id].fetch_add(1, std::memory_order_relaxed);
  }
  return 1;
}

void Reporter::local_tables(TopicId id, int32_t partitions, const Sampler::Window& w,
                            const std::vector<ReportItem>& items) {
  // The generation first: a list or a contact that ends the staleness after this read bumps
  // it, and set_local_tables then refuses tables planned from the stale view.
  const uint64_t generation = router_.local_generation(id);
  std::shared_ptr<const LocalTables> current = router_.local_tables(id);
  if (!staleness_.stale(id) || !(staleness_.known(id) || router_.version(id) > 0)) {
    if (current) router_.drop_local_tables(id);
    return;
  }
  std::shared_ptr<const HotKeyList> list = router_.list(id);
  LocalPlanInput in;
  in.partitions = partitions;
  in.family = family_;
  if (list && valid_separator(list->separator)) in.separator = list->separator;
  in.partition_counts = w.partition_counts;
  in.total = w.total;
  in.sketch_total = w.sketch_total;
  in.items = items;
  in.surge_factor = config_.surge_factor;
  if (list) {
    for (const HotKey& k : list->keys) in.listed.push_back(k.key);
    in.denied = list->denied;
    in.never_salt = list->never_salt;
  }
  const bool fits = current && current->partitions == partitions;
  if (fits) in.current = current->keys;
  LocalPlan plan;
  try {
    plan = plan_local_tables(in);
  } catch (const std::exception&) {
    return;  // cannot plan this window (out of memory): the tables stay as they are
  }
  if (fits && !plan.changed()) return;
  if (plan.keys.empty()) {
    if (current) router_.drop_local_tables(id);
    return;
  }
  LocalTables tables;
  tables.base_version = list ? list->version : 0;
  tables.partitions = partitions;
  tables.keys = std::move(plan.keys);
  router_.set_local_tables(id, std::move(tables), generation);
}

}  // namespace hotkey::client::detail
