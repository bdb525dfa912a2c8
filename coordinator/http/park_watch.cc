#include "park_watch.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <httplib.h>
#include <array>
#include <cerrno>
#include <condition_variable>

#include "http_connection.h"
#include "responses.h"

namespace hotkey::coordinator {

struct ParkWatch::Ticket {
  ListBoard* board = nullptr;
  bool subscription = false;
  Encoding encoding = Encoding::kIdentity;
  Build build;
  Clock::time_point wait_until;
  std::weak_ptr<ListBoard::Reader> reader;

  std::mutex mu;
  std::condition_variable cv;  // the waiting handler's thread (a connection that cannot leave)
  bool woken = false;          // guarded by mu
  ListBoard::AnyResult result{ListBoard::WaitStatus::kTimeout, {}};  // guarded by mu
  bool adopted = false;  // guarded by mu: handed to the watch thread

  // Set by the worker before the hand-over, then the watch thread's.
  std::unique_ptr<connection::Detached> conn;
  enum class Stage : uint8_t { kWaiting, kWriting, kIdle };
  Stage stage = Stage::kWaiting;
  uint64_t id = 0;
  std::shared_ptr<const Answer> answer;
  const std::string* body = nullptr;  // answer's body in `encoding`
  std::string head;
  size_t sent = 0;
  Clock::time_point deadline;
};

namespace {

const char* status_line(int status) {
  switch (status) {
    case 200:
      return "HTTP/1.1 200 OK\r\n";
    case 304:
      return "HTTP/1.1 304 Not Modified\r\n";
    case 503:
      return "HTTP/1.1 503 Service Unavailable\r\n";
    default:
      return "HTTP/1.1 500 Internal Server Error\r\n";
  }
}

// The status line and headers, as httplib and the server's post-routing hook write them.
std::string head_of(const ParkWatch::Answer& a, const ParkWatch::Answer::Coded& coded,
                    const std::string& connection_header) {
  std::string h = status_line(a.status);
  if (!a.body.empty()) h += "Content-Type: application/json\r\n";
  if (*coded.content_encoding != '\0') {
    h += "Content-Encoding: ";
    h += coded.content_encoding;
    h += "\r\n";
  }
  h += "Content-Length: " + std::to_string(coded.body->size()) + "\r\n";
  if (!a.etag.empty()) h += "ETag: " + a.etag + "\r\n";
  if (a.retry_after) h += "Retry-After: 1\r\n";
  h += connection_header;
  h += "Cache-Control: no-store\r\nContent-Security-Policy: ";
  h += kCsp;
  h += "\r\nX-Content-Type-Options: nosniff\r\n\r\n";
  return h;
}

}  // namespace

ParkWatch::Encoding ParkWatch::accepted(const httplib::Request& req) {
  // httplib's test for its JSON answers (detail::encoding_type): a substring match, q-values
  // unread. Its brotli (chosen when "br" appears) is left to answers given at once.
  return req.get_header_value("Accept-Encoding").find("gzip") != std::string::npos
             ? Encoding::kGzip
             : Encoding::kIdentity;
}

ParkWatch::Answer::Coded ParkWatch::Answer::coded(Encoding encoding,
                                                  const std::function<void()>& compressed) const {
  // As httplib: an empty body (304) is never compressed, a small one is.
  if (encoding == Encoding::kIdentity || body.empty()) return Coded{&body, ""};
  std::call_once(gzip_once_, [&] {
    httplib::detail::gzip_compressor c;
    gzip_ok_ = c.compress(body.data(), body.size(), true, [this](const char* data, size_t n) {
      gzip_.append(data, n);
      return true;
    });
    if (!gzip_ok_) gzip_.clear();
    if (compressed) compressed();
  });
  if (!gzip_ok_) return Coded{&body, ""};
  return Coded{&gzip_, "gzip"};
}

ParkWatch::ParkWatch(Limits limits, std::function<void()> on_change,
                     std::function<void()> on_compressed)
    : limits_(limits), on_change_(std::move(on_change)), on_compressed_(std::move(on_compressed)) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return;  // wait() then keeps the handler's thread
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // connection ids start at 1
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) return;
  thread_ = std::thread([this] { run(); });
}

ParkWatch::~ParkWatch() {
  stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

size_t ParkWatch::connections() const {
  std::lock_guard lock(mu_);
  return held_;
}

std::shared_ptr<const ParkWatch::Answer> ParkWatch::wait(ListBoard& board,
                                                         const std::vector<ListBoard::Want>& wants,
                                                         uint64_t wait_ms, bool subscription,
                                                         Encoding encoding, Build build) {
  auto t = std::make_shared<Ticket>();
  t->board = &board;
  t->subscription = subscription;
  t->encoding = encoding;
  t->build = std::move(build);
  ListBoard::Parked p =
      board.park(wants, wait_ms > 0, [this, t](const ListBoard::AnyResult& r) { deliver(t, r); });
  if (!p.reader) return t->build(p.now);
  // Counted until deliver() (which may already have run: then it is -1 meanwhile).
  if (subscription) subscriptions_.fetch_add(1, std::memory_order_relaxed);
  t->reader = p.reader;
  t->wait_until = Clock::now() + std::chrono::milliseconds(wait_ms);
  if (on_change_) on_change_();
  bool running = false;
  {
    std::lock_guard lock(mu_);
    running = thread_.joinable() && !stopped_;
  }
  if (running && connection::detach_after_handler([this, t](auto conn) {
        t->conn = std::move(conn);
        adopt(t);
      })) {
    return nullptr;
  }
  // The connection stays on this thread: wait here.
  std::unique_lock lock(t->mu);
  if (!t->cv.wait_until(lock, t->wait_until, [&] { return t->woken; })) {
    lock.unlock();
    board.cancel(p.reader, ListBoard::WaitStatus::kTimeout);  // or woken meanwhile
    lock.lock();
    t->cv.wait(lock, [&] { return t->woken; });
  }
  ListBoard::AnyResult r = std::move(t->result);
  lock.unlock();
  if (on_change_) on_change_();
  return t->build(r);
}

void ParkWatch::signal_locked() {
  if (signalled_) return;
  signalled_ = true;
  const uint64_t one = 1;
  (void)::write(wake_fd_, &one, sizeof(one));
}

void ParkWatch::deliver(const std::shared_ptr<Ticket>& t, const ListBoard::AnyResult& r) {
  // On the thread that woke the reader (a publication wakes many): queue it, nothing more.
  if (t->subscription) subscriptions_.fetch_sub(1, std::memory_order_relaxed);
  std::lock_guard tl(t->mu);
  t->woken = true;
  t->result = r;
  if (!t->adopted) {
    t->cv.notify_all();
    return;
  }
  std::lock_guard lock(mu_);
  ready_.push_back(t);
  signal_locked();
}

void ParkWatch::adopt(const std::shared_ptr<Ticket>& t) {
  // On the worker, after the handler returned. Queued under the ticket's lock, so that the
  // watch thread sees it before any answer deliver() queues.
  {
    std::lock_guard tl(t->mu);
    t->adopted = true;
    std::lock_guard lock(mu_);
    if (!stopped_) {
      incoming_.push_back(t);
      ++held_;
      signal_locked();
      return;
    }
  }
  t->conn.reset();  // stopped: closes the connection
  if (auto reader = t->reader.lock()) t->board->cancel(reader, ListBoard::WaitStatus::kCancelled);
}

void ParkWatch::keep_idle(std::unique_ptr<connection::Detached> conn) {
  auto t = std::make_shared<Ticket>();
  t->conn = std::move(conn);
  t->stage = Ticket::Stage::kIdle;
  std::lock_guard lock(mu_);
  if (stopped_) return;  // t, and with it the connection, ends here
  incoming_.push_back(std::move(t));
  ++held_;
  signal_locked();
}

void ParkWatch::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    // From here a connection handed over closes at once; those queued before are served.
    stopping_ = true;
    stopped_ = true;
    if (thread_.joinable()) signal_locked();
  }
  if (thread_.joinable()) thread_.join();
}

void ParkWatch::set_deadline(const std::shared_ptr<Ticket>& t, Clock::time_point when) {
  t->deadline = when;
  timers_.push(Timer{when, t->id});
}

void ParkWatch::close(const std::shared_ptr<Ticket>& t) {
  if (t->conn) {
    (void)epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, t->conn->fd(), nullptr);
    t->conn.reset();
  }
  conns_.erase(t->id);
  {
    std::lock_guard lock(mu_);
    --held_;
  }
  // A parked reader whose connection ended: free its waiter slot now.
  if (t->stage == Ticket::Stage::kWaiting) {
    if (auto reader = t->reader.lock()) {
      t->board->cancel(reader, ListBoard::WaitStatus::kCancelled);
    }
  }
}

void ParkWatch::go_idle(const std::shared_ptr<Ticket>& t, int op) {
  t->stage = Ticket::Stage::kIdle;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = t->id;
  (void)epoll_ctl(epoll_fd_, op, t->conn->fd(), &ev);
  set_deadline(t, Clock::now() + limits_.idle_timeout);
}

void ParkWatch::resume(const std::shared_ptr<Ticket>& t) {
  (void)epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, t->conn->fd(), nullptr);
  conns_.erase(t->id);
  {
    std::lock_guard lock(mu_);
    --held_;
  }
  connection::Detached::resume(std::move(t->conn));
}

void ParkWatch::on_incoming(const std::shared_ptr<Ticket>& t) {
  t->id = next_id_++;
  conns_.emplace(t->id, t);
  if (t->stage == Ticket::Stage::kIdle) return go_idle(t, EPOLL_CTL_ADD);
  epoll_event ev{};
  ev.events = EPOLLRDHUP;
  ev.data.u64 = t->id;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, t->conn->fd(), &ev) != 0) {
    // Not watched: it is answered all the same, at its deadline at the latest.
  }
  set_deadline(t, t->wait_until);
  bool woken = false;
  {
    std::lock_guard lock(t->mu);
    woken = t->woken;
  }
  if (woken) start_write(t);
}

void ParkWatch::start_write(const std::shared_ptr<Ticket>& t) {
  if (t->stage != Ticket::Stage::kWaiting) return;
  ListBoard::AnyResult r;
  {
    std::lock_guard lock(t->mu);
    r = std::move(t->result);
  }
  t->stage = Ticket::Stage::kWriting;
  if (on_change_) on_change_();
  t->answer = t->build(r);
  t->build = nullptr;
  const Answer::Coded coded = t->answer->coded(t->encoding, on_compressed_);
  t->body = coded.body;
  t->head = head_of(*t->answer, coded, t->conn->connection_header());
  t->sent = 0;
  set_deadline(t, Clock::now() + limits_.write_timeout);
  continue_write(t);
}

void ParkWatch::continue_write(const std::shared_ptr<Ticket>& t) {
  const std::string& body = *t->body;
  const size_t total = t->head.size() + body.size();
  while (t->sent < total) {
    const char* a = nullptr;
    size_t an = 0;
    const char* b = nullptr;
    size_t bn = 0;
    if (t->sent < t->head.size()) {
      a = t->head.data() + t->sent;
      an = t->head.size() - t->sent;
      b = body.data();
      bn = body.size();
    } else {
      b = body.data() + (t->sent - t->head.size());
      bn = total - t->sent;
    }
    const ssize_t n = t->conn->send_some(a, an, b, bn);
    if (n < 0) return close(t);
    if (n == 0) {
      // A slow reader: wait until it drains, at most write_timeout. Not for EPOLLRDHUP: a
      // client that half-closed may still read, and the level-triggered event would spin.
      epoll_event ev{};
      ev.events = EPOLLOUT;
      ev.data.u64 = t->id;
      (void)epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, t->conn->fd(), &ev);
      return;
    }
    t->sent += static_cast<size_t>(n);
  }
  t->answer.reset();
  t->body = nullptr;
  t->head.clear();
  bool stopping = false;
  {
    std::lock_guard lock(mu_);
    stopping = stopping_;
  }
  if (!t->conn->keep_alive() || stopping) return close(t);
  if (t->conn->buffered()) return resume(t);
  // Kept alive: no worker until the next request's first bytes arrive.
  go_idle(t, EPOLL_CTL_MOD);
}

void ParkWatch::on_event(const std::shared_ptr<Ticket>& t, uint32_t events) {
  switch (t->stage) {
    case Ticket::Stage::kWaiting:
      if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) close(t);
      return;
    case Ticket::Stage::kWriting:
      if ((events & (EPOLLHUP | EPOLLERR)) != 0) return close(t);
      if ((events & EPOLLOUT) != 0) continue_write(t);
      return;
    case Ticket::Stage::kIdle:
      if ((events & EPOLLIN) != 0) {
        // A worker gets the connection once its request head is here: a client sending it
        // slowly holds none (it is closed at its idle deadline).
        const int head = t->conn->read_head();
        if (head > 0) return resume(t);
        if (head == 0) return;
      }
      return close(t);  // hung up or failed while idle
  }
}

void ParkWatch::on_deadline(const std::shared_ptr<Ticket>& t) {
  switch (t->stage) {
    case Ticket::Stage::kWaiting:
      // Its wake runs here, on this thread, and queues the answer (unless a publication was
      // first; then that answer is queued already).
      if (auto reader = t->reader.lock()) {
        t->board->cancel(reader, ListBoard::WaitStatus::kTimeout);
      }
      return;
    case Ticket::Stage::kWriting:  // a client that does not read its answer
    case Ticket::Stage::kIdle:     // keep_alive_timeout
      return close(t);
  }
}

void ParkWatch::run() {
  std::array<epoll_event, 256> events{};
  Clock::time_point stop_by = Clock::time_point::max();
  for (;;) {
    int timeout_ms = -1;
    const auto now = Clock::now();
    const auto next = timers_.empty() ? stop_by : std::min(stop_by, timers_.top().when);
    if (next != Clock::time_point::max()) {
      timeout_ms =
          next <= now
              ? 0
              : static_cast<int>(std::min<int64_t>(
                    std::chrono::ceil<std::chrono::milliseconds>(next - now).count(), 1 << 30));
    }
    const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout_ms);
    if (n < 0 && errno != EINTR) return;
    for (int i = 0; i < n; ++i) {
      const epoll_event& e = events[static_cast<size_t>(i)];
      if (e.data.u64 == 0) {
        uint64_t v = 0;
        (void)::read(wake_fd_, &v, sizeof(v));
        continue;
      }
      auto it = conns_.find(e.data.u64);
      if (it == conns_.end()) continue;
      auto t = it->second;  // on_event may erase the entry
      on_event(t, e.events);
    }
    std::vector<std::shared_ptr<Ticket>> incoming;
    std::vector<std::shared_ptr<Ticket>> ready;
    bool stopping = false;
    {
      std::lock_guard lock(mu_);
      signalled_ = false;
      incoming.swap(incoming_);
      ready.swap(ready_);
      stopping = stopping_;
    }
    for (const auto& t : incoming) on_incoming(t);
    for (const auto& t : ready) {
      // Answered only when still held and parked (a closed connection is gone from conns_).
      if (t->conn && conns_.contains(t->id)) start_write(t);
    }
    const auto at = Clock::now();
    while (!timers_.empty() && timers_.top().when <= at) {
      const Timer timer = timers_.top();
      timers_.pop();
      auto it = conns_.find(timer.id);
      if (it == conns_.end() || it->second->deadline != timer.when) continue;
      auto t = it->second;
      on_deadline(t);
    }
    if (stopping) {
      if (stop_by == Clock::time_point::max()) stop_by = at + limits_.write_timeout;
      // Idle and parked connections close; answers being written get until stop_by.
      std::vector<std::shared_ptr<Ticket>> end;
      for (const auto& [id, t] : conns_) {
        if (t->stage != Ticket::Stage::kWriting || at >= stop_by) end.push_back(t);
      }
      for (const auto& t : end) close(t);
      bool more = false;
      {
        std::lock_guard lock(mu_);
        more = !incoming_.empty() || !ready_.empty();
      }
      if (conns_.empty() && !more) return;
    }
  }
}

}  // namespace hotkey::coordinator
