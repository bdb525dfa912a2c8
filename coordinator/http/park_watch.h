// Parked long-polls without a thread each (GET /v1/hotkeys with since and wait_ms, POST
// /v1/hotkeys/subscribe; docs/API.md). A request that must wait parks a reader on the list board
// (list_board.h) and its connection leaves the worker thread (http_connection.h, Detached): one
// epoll thread owns every parked connection. It watches them for the peer's hang-up
// (EPOLLRDHUP; never for readable data, so a pipelined request does not end a wait), ends the
// wait at its deadline, writes the answer when the board wakes the reader (on the publishing
// thread, which only queues it) without ever blocking on a slow client (write_timeout_s bounds
// it, then the connection closes), and hands a kept-alive connection back to the worker pool
// once its next request has arrived. Idle kept-alive connections between two long-polls are
// held here too, until keep_alive_timeout_s. Coordinator threads so stay bounded whatever the
// number of parked requests. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "list_board.h"

namespace httplib {
struct Request;
}  // namespace httplib

namespace hotkey::coordinator {
namespace connection {
class Detached;
}  // namespace connection

class ParkWatch {
 public:
  // The content coding a parked request's answer is sent with (accepted()): gzip when its
  // Accept-Encoding contains "gzip" (httplib's own test), else identity. Not brotli, which
  // httplib prefers for answers given at once when "br" appears: at httplib's quality 11 it
  // costs ~50 ms for a 100-key list (gzip 0.3 ms), on the thread that writes every parked
  // answer (docs/BENCHMARKS.md, "List subscriptions").
  enum class Encoding : uint8_t { kIdentity, kGzip };
  static Encoding accepted(const httplib::Request& req);

  // A long-poll's answer, built once and possibly shared by every request woken by the same
  // publication.
  struct Answer {
    int status = 200;
    std::string body;  // JSON; empty: no body (304)
    std::string etag;  // the ETag header's value (with its quotes), or empty
    bool retry_after = false;

    // The body in `encoding` and its Content-Encoding ("" for identity): compressed by
    // httplib's own gzip compressor (the bytes httplib sends for the same answer given at
    // once) the first time a parked request asking for it is answered, then shared by every
    // later one: a publication's answer is compressed once, however many requests it answers.
    // `compressed` is called after each compression. Thread-safe.
    struct Coded {
      const std::string* body;
      const char* content_encoding;
    };
    Coded coded(Encoding encoding, const std::function<void()>& compressed) const;

   private:
    mutable std::once_flag gzip_once_;
    mutable std::string gzip_;
    mutable bool gzip_ok_ = false;  // else sent as identity (as httplib does when it fails)
  };
  // Builds the answer from the board's result. Called once per request: on the worker for an
  // answer at once, else on the watch thread.
  using Build = std::function<std::shared_ptr<const Answer>(const ListBoard::AnyResult&)>;
  struct Limits {
    std::chrono::milliseconds write_timeout{5000};
    // A connection waits here for its next request at most this long (the shorter of
    // keep_alive_timeout_s and request_timeout_s), then closes.
    std::chrono::milliseconds idle_timeout{5000};
  };

  // `on_compressed`: called on the watch thread each time an answer's body is compressed
  // (Answer::coded), for the metric.
  explicit ParkWatch(Limits limits, std::function<void()> on_change = {},
                     std::function<void()> on_compressed = {});
  // stop()
  ~ParkWatch();
  ParkWatch(const ParkWatch&) = delete;
  ParkWatch& operator=(const ParkWatch&) = delete;

  // In a route handler: the answer at once (something newer, no wait, closed, max_waiters), or
  // null when the request is parked: its connection leaves the worker once the handler returns
  // (the handler leaves its response alone) and the watch thread answers it. Where the
  // connection cannot leave its thread, the handler's thread waits instead.
  // `subscription`: counted in subscriptions(). `encoding`: the request's accepted(), for an
  // answer written by the watch thread (an answer returned is encoded by httplib).
  std::shared_ptr<const Answer> wait(ListBoard& board, const std::vector<ListBoard::Want>& wants,
                                     uint64_t wait_ms, bool subscription, Encoding encoding,
                                     Build build);

  // A connection waiting for its next request (or its first; http_connection.h's IdleKeeper):
  // held without a worker until bytes arrive (then resumed), it hangs up, or idle_timeout.
  void keep_idle(std::unique_ptr<connection::Detached> conn);

  // Writes the answers already decided (shutdown: the board was closed first), for at most
  // write_timeout; closes every other connection and joins the thread. Later parks close their
  // connection at once.
  void stop();
  // Connections held now: parked, being answered, or idle until their next request.
  size_t connections() const;
  // Subscriptions parked now (not yet woken).
  int64_t subscriptions() const { return subscriptions_.load(std::memory_order_relaxed); }

 private:
  struct Ticket;
  using Clock = std::chrono::steady_clock;

  void deliver(const std::shared_ptr<Ticket>& t, const ListBoard::AnyResult& r);
  void adopt(const std::shared_ptr<Ticket>& t);
  void signal_locked();
  void run();
  void on_incoming(const std::shared_ptr<Ticket>& t);
  void on_event(const std::shared_ptr<Ticket>& t, uint32_t events);
  void on_deadline(const std::shared_ptr<Ticket>& t);
  void start_write(const std::shared_ptr<Ticket>& t);
  void go_idle(const std::shared_ptr<Ticket>& t, int op);
  void resume(const std::shared_ptr<Ticket>& t);
  void continue_write(const std::shared_ptr<Ticket>& t);
  void close(const std::shared_ptr<Ticket>& t);
  void set_deadline(const std::shared_ptr<Ticket>& t, Clock::time_point when);

  const Limits limits_;
  const std::function<void()> on_change_;
  const std::function<void()> on_compressed_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: queued work or stop

  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Ticket>> incoming_;  // guarded by mu_: handed over by workers
  std::vector<std::shared_ptr<Ticket>> ready_;     // guarded by mu_: woken by the board
  bool signalled_ = false;                         // guarded by mu_
  bool stopping_ = false;                          // guarded by mu_
  bool stopped_ = false;                           // guarded by mu_
  size_t held_ = 0;                                // guarded by mu_
  std::atomic<int64_t> subscriptions_{0};

  // Watch thread only.
  std::unordered_map<uint64_t, std::shared_ptr<Ticket>> conns_;
  struct Timer {
    Clock::time_point when;
    uint64_t id;
    bool operator>(const Timer& o) const { return when > o.when; }
  };
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  uint64_t next_id_ = 1;
  std::thread thread_;
};

}  // namespace hotkey::coordinator
