// The HTTP server's worker pool with connection limits (docs/SECURITY.md, "Connections and
// timeouts"): at most max_connections connections served or queued, at most
// max_connections_per_client from one address; connections beyond either are served by a
// small overflow pool that answers 503 at once; and a watchdog closes any connection that
// spends request_timeout_s in one stretch outside a request handler (queued, idle, sending a
// request slowly or reading its answer slowly), which is what bounds slow-loris clients.
// Thread-safe: cpp-httplib calls enqueue from its accept thread and shutdown once at the end;
// the static hooks are called from the connection's own worker thread.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace hotkey::coordinator {

class ConnectionPool : public httplib::TaskQueue {
  struct Conn;

 public:
  struct Limits {
    size_t threads = 16;  // at most
    // Started at once and kept; the rest are started when a new connection finds no idle
    // worker (every one busy reading, handling or answering a request: slow senders) and end
    // after 2 s idle. Parked long-polls and idle kept-alive connections hold no worker
    // (park_watch.h).
    size_t min_threads = 16;
    size_t max_connections = 16;
    size_t max_per_client = 0;  // 0: no per-address limit
    std::chrono::milliseconds request_timeout{30000};
    // Refused connections get this long (at most request_timeout) to send their request.
    std::chrono::milliseconds overflow_timeout{2000};
    size_t overflow_threads = 2;
  };
  enum class Refusal : uint8_t { kNone, kMaxConnections, kMaxPerClient };
  struct Hooks {
    std::function<void(size_t)> connections;  // connections open now; called under the pool lock
    std::function<void()> cut;                // one connection closed by the watchdog
    // Plain HTTP only: the complete answer (status line, headers, body) for a refused
    // connection from `peer`, written the moment it is accepted, before its request is read,
    // so a refusal never waits behind the overflow threads. Unset (TLS): refused connections
    // are answered by the server on the overflow threads after the handshake.
    std::function<std::string(Refusal, const std::string& peer)> refusal_answer;
  };

  // `server` identifies the httplib::Server whose connections this pool runs (see
  // socket_of_task in the .cc).
  ConnectionPool(const httplib::Server* server, Limits limits, Hooks hooks);
  ~ConnectionPool() override;
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  void enqueue(std::function<void()> fn) override;
  // Serves what is queued, then joins every thread.
  void shutdown() override;

  // On a worker's thread: why the connection it serves is refused (kNone when it is not).
  static Refusal refusal();
  // The server marks when its handler starts working on a request (after the whole request
  // was received) and when the answer is handed back for writing. Time inside a handler (a
  // long-poll, a slow store write) never counts towards request_timeout.
  static void handler_started();
  static void handler_finished();
  // On a worker's thread: the connection's socket (a duplicate the pool keeps open until the
  // connection is finished), or -1 when the pool does not know it.
  static int current_socket();

  // Worker threads started so far.
  size_t threads() const;

  // A connection taken off its worker while it waits for an answer (a parked long-poll or
  // subscription, park_watch.h): it stays counted among the open connections (max_connections,
  // max_connections_per_client) and the watchdog leaves it alone (its waits are bounded by their
  // owner), until resume() hands it back to a worker or the handle is destroyed (the connection
  // is over). Owned by one thread at a time.
  class Detached {
   public:
    ~Detached();
    Detached(const Detached&) = delete;
    Detached& operator=(const Detached&) = delete;

   private:
    friend class ConnectionPool;
    Detached(ConnectionPool* pool, std::shared_ptr<Conn> conn)
        : pool_(pool), conn_(std::move(conn)) {}
    ConnectionPool* pool_;
    std::shared_ptr<Conn> conn_;
  };
  // On a worker's thread, inside its task: the task may return while its connection stays open;
  // null when the thread serves no task of a pool.
  static std::unique_ptr<Detached> detach();
  // On a worker's thread: whether detach() would succeed.
  static bool current_job();
  // Runs `fn` on a worker as the same connection's task (its keep-alive loop goes on);
  // `sock` is its socket (the watchdog's again).
  static void resume(std::unique_ptr<Detached> connection, int sock, std::function<void()> fn);

 private:
  struct Job {
    std::function<void()> fn;
    std::shared_ptr<Conn> conn;
  };

  void work(bool overflow);
  void start_worker_locked();
  void watch();
  void finish(const std::shared_ptr<Conn>& conn);
  void push_job_locked(Job job, bool may_grow);

  const httplib::Server* server_;
  const Limits limits_;
  const Hooks hooks_;

  mutable std::mutex mu_;
  std::condition_variable cv_;           // main jobs or stop
  std::condition_variable overflow_cv_;  // overflow jobs or stop
  std::condition_variable watch_cv_;     // watchdog stop
  std::deque<Job> jobs_;
  std::deque<Job> overflow_jobs_;
  std::unordered_set<std::shared_ptr<Conn>> open_;
  std::unordered_map<std::string, size_t> admitted_per_client_;
  size_t admitted_ = 0;
  size_t idle_ = 0;  // main workers waiting for a job
  bool stop_ = false;
  std::vector<std::thread> workers_;
  std::vector<std::thread> overflow_workers_;
  std::thread watchdog_;
};

}  // namespace hotkey::coordinator
