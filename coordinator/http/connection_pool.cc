#include "connection_pool.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <typeinfo>

namespace hotkey::coordinator {

struct ConnectionPool::Conn {
  int fd = -1;       // our duplicate of the connection's socket; -1 when it is unknown
  std::string peer;  // client address, empty when unknown
  Refusal refusal = Refusal::kNone;
  std::atomic<bool> in_handler{false};
  // Steady-clock nanoseconds when the current stretch outside a handler began.
  std::atomic<int64_t> since_ns{0};
  bool cut = false;  // guarded by the pool's mutex
};

namespace {

using SteadyClock = std::chrono::steady_clock;

// A worker beyond min_threads idle this long ends.
constexpr std::chrono::seconds kRetireAfter{2};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
      .count();
}

thread_local ConnectionPool::Refusal tl_refusal = ConnectionPool::Refusal::kNone;
// The connection served by this thread; owned by the pool for as long as the task runs.
thread_local void* tl_conn = nullptr;
// The job run by this thread, and whether its task detached the connection (detach()).
thread_local const void* tl_job_conn = nullptr;  // the job's std::shared_ptr<Conn>
thread_local ConnectionPool* tl_pool = nullptr;
thread_local bool tl_detached = false;

// cpp-httplib 0.11 hands each accepted connection to the task queue as the closure
// `[this, sock] { process_and_close_socket(sock); }` and has no other hook that sees the
// socket before a whole request has been read, which is too late to bound a slow-loris
// client. The closure is trivially copyable and 16 bytes, so libstdc++'s std::function keeps
// it in place at the start of the object: the Server pointer and the descriptor, in an order
// the compiler chooses (g++ 12 puts the int first). Nothing is assumed blindly: the closure's
// type must come from httplib, one of the two 8-byte words must be our server's address, and
// the descriptor a connected stream socket; otherwise the connection runs untracked (global
// limit only: no per-address limit, no watchdog).
int socket_of_task(const std::function<void()>& fn, const httplib::Server* server) {
#if defined(__GLIBCXX__)
  static_assert(sizeof(std::function<void()>) >= 2 * sizeof(uint64_t));
  if (!fn || std::strstr(fn.target_type().name(), "httplib") == nullptr) return -1;
  uint64_t words[2];
  std::memcpy(words, static_cast<const void*>(&fn), sizeof(words));
  const auto self = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(server));
  int sock = -1;
  if (words[1] == self) {
    sock = static_cast<int>(static_cast<uint32_t>(words[0] & 0xffffffffu));
  } else if (words[0] == self) {
    sock = static_cast<int>(static_cast<uint32_t>(words[1] & 0xffffffffu));
  } else {
    return -1;
  }
  if (sock < 0) return -1;
  int type = 0;
  socklen_t len = sizeof(type);
  if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return -1;
  sockaddr_storage peer{};
  socklen_t plen = sizeof(peer);
  if (getpeername(sock, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) return -1;
  return sock;
#else
  (void)fn;
  (void)server;
  return -1;
#endif
}

// Discards what the client still sends for a moment (at most 200 ms / 64 KiB) and closes:
// closing with its request unread would reset the connection, and a reset can overtake the
// answer already written.
void linger_and_close(int sock) {
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(200);
  char buf[4096];
  for (size_t drained = 0; drained < 64 * 1024;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) break;
    pollfd p{sock, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = ::recv(sock, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
  ::close(sock);
}

std::string peer_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, buf, sizeof(buf));
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

}  // namespace

ConnectionPool::ConnectionPool(const httplib::Server* server, Limits limits, Hooks hooks)
    : server_(server), limits_(limits), hooks_(std::move(hooks)) {
  {
    std::lock_guard lock(mu_);
    const size_t threads =
        std::clamp<size_t>(limits_.min_threads, 1, std::max<size_t>(1, limits_.threads));
    for (size_t i = 0; i < threads; ++i) start_worker_locked();
  }
  for (size_t i = 0; i < std::max<size_t>(1, limits_.overflow_threads); ++i) {
    overflow_workers_.emplace_back([this] { work(true); });
  }
  watchdog_ = std::thread([this] { watch(); });
}

ConnectionPool::~ConnectionPool() { shutdown(); }

void ConnectionPool::start_worker_locked() {
  // Counted idle from here, so that the next enqueue does not start another for the same job.
  ++idle_;
  workers_.emplace_back([this] { work(false); });
}

size_t ConnectionPool::threads() const {
  std::lock_guard lock(mu_);
  return workers_.size();
}

void ConnectionPool::enqueue(std::function<void()> fn) {
  auto conn = std::make_shared<Conn>();
  conn->since_ns = now_ns();
  // A duplicate keeps the socket (not just the number) ours until the task is over, so the
  // watchdog can never shut down an unrelated descriptor that reused the number.
  const int sock = socket_of_task(fn, server_);
  if (sock >= 0) {
    conn->fd = fcntl(sock, F_DUPFD_CLOEXEC, 0);
    if (conn->fd >= 0) conn->peer = peer_address(conn->fd);
  }
  size_t open = 0;
  {
    std::lock_guard lock(mu_);
    if (admitted_ >= limits_.max_connections) {
      conn->refusal = Refusal::kMaxConnections;
    } else if (limits_.max_per_client != 0 && !conn->peer.empty() &&
               admitted_per_client_[conn->peer] >= limits_.max_per_client) {
      conn->refusal = Refusal::kMaxPerClient;
    }
    open_.insert(conn);
    open = open_.size();
    if (conn->refusal != Refusal::kNone && hooks_.refusal_answer && conn->fd >= 0) {
      // Answered here, at once; the overflow thread only lets the client read the answer and
      // closes, never reading a request (httplib's task, which would, is dropped).
      const std::string answer = hooks_.refusal_answer(conn->refusal, conn->peer);
      (void)::send(conn->fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::shutdown(conn->fd, SHUT_WR);
      fn = [sock] { linger_and_close(sock); };
    }
    if (conn->refusal == Refusal::kNone) {
      ++admitted_;
      if (!conn->peer.empty()) ++admitted_per_client_[conn->peer];
      push_job_locked(Job{std::move(fn), conn}, true);
    } else {
      overflow_jobs_.push_back(Job{std::move(fn), conn});
    }
    // Set under the lock: set after it, a connection that a worker finished in between (its
    // 0 already set) was left counted as open until the next connection came.
    if (hooks_.connections) hooks_.connections(open);
  }
  (conn->refusal == Refusal::kNone ? cv_ : overflow_cv_).notify_one();
}

void ConnectionPool::push_job_locked(Job job, bool may_grow) {
  jobs_.push_back(std::move(job));
  if (may_grow && jobs_.size() > idle_ && workers_.size() < std::max<size_t>(1, limits_.threads) &&
      !stop_) {
    start_worker_locked();
  }
}

void ConnectionPool::work(bool overflow) {
  auto& queue = overflow ? overflow_jobs_ : jobs_;
  auto& cv = overflow ? overflow_cv_ : cv_;
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      if (overflow || workers_.size() <= limits_.min_threads) {
        // No timer while the pool is at its floor: an idle coordinator's workers never wake.
        cv.wait(lock, [&] { return stop_ || !queue.empty(); });
      } else if (!cv.wait_for(lock, kRetireAfter, [&] { return stop_ || !queue.empty(); }) &&
                 workers_.size() > limits_.min_threads) {
        // A worker started for a burst of connections ends once idle; min_threads stay.
        const auto self = std::this_thread::get_id();
        for (auto it = workers_.begin(); it != workers_.end(); ++it) {
          if (it->get_id() != self) continue;
          it->detach();
          workers_.erase(it);
          --idle_;
          return;
        }
      }
      if (queue.empty()) {
        if (stop_) return;  // stopping and drained
        continue;
      }
      job = std::move(queue.front());
      queue.pop_front();
      if (!overflow) --idle_;
    }
    tl_refusal = job.conn->refusal;
    tl_conn = job.conn.get();
    tl_job_conn = &job.conn;
    tl_pool = overflow ? nullptr : this;
    tl_detached = false;
    // The task owns the socket: it must run even for a refused connection (it then answers
    // 503 through the server's pre-routing handler and closes).
    job.fn();
    job.fn = nullptr;
    tl_conn = nullptr;
    tl_job_conn = nullptr;
    tl_pool = nullptr;
    tl_refusal = Refusal::kNone;
    // A detached connection is finished by its Detached handle.
    if (!tl_detached) finish(job.conn);
    tl_detached = false;
    if (!overflow) {
      std::lock_guard lock(mu_);
      ++idle_;
    }
  }
}

void ConnectionPool::finish(const std::shared_ptr<Conn>& conn) {
  size_t open = 0;
  {
    std::lock_guard lock(mu_);
    open_.erase(conn);
    open = open_.size();
    if (conn->refusal == Refusal::kNone) {
      --admitted_;
      if (!conn->peer.empty()) {
        auto it = admitted_per_client_.find(conn->peer);
        if (it != admitted_per_client_.end() && --it->second == 0) admitted_per_client_.erase(it);
      }
    }
    if (hooks_.connections) hooks_.connections(open);  // under the lock, as in enqueue()
  }
  // Out of open_, the watchdog no longer sees the descriptor: closing it now is safe.
  if (conn->fd >= 0) close(conn->fd);
}

void ConnectionPool::watch() {
  const int64_t request_ns = std::chrono::nanoseconds(limits_.request_timeout).count();
  const int64_t overflow_ns =
      std::chrono::nanoseconds(std::min(limits_.overflow_timeout, limits_.request_timeout)).count();
  // Checks four times per shortest timeout, at most every 250 ms and at least every 10 ms.
  const auto period = std::clamp(std::chrono::milliseconds(overflow_ns / 4'000'000),
                                 std::chrono::milliseconds(10), std::chrono::milliseconds(250));
  std::unique_lock lock(mu_);
  while (!stop_) {
    watch_cv_.wait_for(lock, period, [&] { return stop_; });
    const int64_t now = now_ns();
    size_t cut = 0;
    for (const auto& c : open_) {
      if (c->fd < 0 || c->cut || c->in_handler.load()) continue;
      const int64_t limit = c->refusal == Refusal::kNone ? request_ns : overflow_ns;
      if (now - c->since_ns.load() <= limit) continue;
      // Wakes the worker blocked on the socket (its read or write fails at once) and makes a
      // queued task fail as soon as it starts.
      ::shutdown(c->fd, SHUT_RDWR);
      c->cut = true;
      ++cut;
    }
    if (cut != 0 && hooks_.cut) {
      lock.unlock();
      for (size_t i = 0; i < cut; ++i) hooks_.cut();
      lock.lock();
    }
  }
}

void ConnectionPool::shutdown() {
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    if (stop_ && workers_.empty()) return;
    stop_ = true;
    // No worker is started once stop_ is set.
    workers.swap(workers_);
  }
  cv_.notify_all();
  overflow_cv_.notify_all();
  watch_cv_.notify_all();
  for (auto& t : workers) t.join();
  for (auto& t : overflow_workers_) t.join();
  if (watchdog_.joinable()) watchdog_.join();
  workers_.clear();
  overflow_workers_.clear();
}

std::unique_ptr<ConnectionPool::Detached> ConnectionPool::detach() {
  if (tl_pool == nullptr || tl_job_conn == nullptr || tl_detached) return nullptr;
  const auto& conn = *static_cast<const std::shared_ptr<Conn>*>(tl_job_conn);
  tl_detached = true;
  conn->in_handler = true;  // the watchdog leaves it alone
  {
    // Its owner watches it now: no duplicate held meanwhile (a parked connection costs one
    // descriptor, not two).
    std::lock_guard lock(tl_pool->mu_);
    if (conn->fd >= 0) ::close(conn->fd);
    conn->fd = -1;
  }
  return std::unique_ptr<Detached>(new Detached(tl_pool, conn));
}

bool ConnectionPool::current_job() {
  return tl_pool != nullptr && tl_job_conn != nullptr && !tl_detached;
}

ConnectionPool::Detached::~Detached() {
  if (conn_) pool_->finish(conn_);
}

void ConnectionPool::resume(std::unique_ptr<Detached> connection, int sock,
                            std::function<void()> fn) {
  ConnectionPool& pool = *connection->pool_;
  std::shared_ptr<Conn> conn = std::move(connection->conn_);
  connection.reset();
  conn->since_ns = now_ns();
  conn->in_handler = false;
  {
    std::lock_guard lock(pool.mu_);
    if (conn->fd < 0 && sock >= 0) conn->fd = fcntl(sock, F_DUPFD_CLOEXEC, 0);
    // Stopping, the queue is still served before the workers are joined; once they are, nobody
    // would run the job.
    if (!pool.stop_ || !pool.workers_.empty()) {
      // Its request's bytes are there: the workers running serve it soon, none is started
      // for it (a publication resumes thousands of subscriptions at once).
      pool.push_job_locked(Job{std::move(fn), std::move(conn)}, false);
      // Notified under the lock: this runs on the park watch's thread, and the pool (whose
      // destructor takes the lock first) must not be destroyed between the push and the notify
      // (TSan: pthread_cond_signal here racing pthread_cond_destroy in ~ConnectionPool).
      pool.cv_.notify_one();
    }
  }
  if (conn) {
    fn = nullptr;  // ends the connection
    pool.finish(conn);
  }
}

ConnectionPool::Refusal ConnectionPool::refusal() { return tl_refusal; }

int ConnectionPool::current_socket() {
  const auto* c = static_cast<const Conn*>(tl_conn);
  return c != nullptr ? c->fd : -1;
}

void ConnectionPool::handler_started() {
  if (auto* c = static_cast<Conn*>(tl_conn)) c->in_handler = true;
}

void ConnectionPool::handler_finished() {
  if (tl_detached) return;  // parked: the watchdog leaves it alone
  if (auto* c = static_cast<Conn*>(tl_conn)) {
    c->since_ns = now_ns();
    c->in_handler = false;
  }
}

}  // namespace hotkey::coordinator
