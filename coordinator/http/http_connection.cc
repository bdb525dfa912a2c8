#include "http_connection.h"

#include <sys/uio.h>

#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "connection_pool.h"

namespace hotkey::coordinator {
namespace {

using SteadyClock = std::chrono::steady_clock;

// What a refused body may still send while the connection closes: draining it for a moment
// lets the client read the answer before the close resets the connection.
constexpr size_t kLingerBytes = 1 << 20;
constexpr int kLingerMs = 500;

int to_ms(time_t sec, time_t usec) {
  return static_cast<int>(std::min<int64_t>(int64_t{sec} * 1000 + usec / 1000, 1 << 30));
}

// True when `fd` is ready for `events` within `timeout_ms`.
bool wait_for(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, timeout_ms);
    if (r > 0) return true;
    if (r == 0 || errno != EINTR) return false;
  }
}

void ip_and_port(const sockaddr_storage& ss, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST] = {};
  char serv[NI_MAXSERV] = {};
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&ss), len, host, sizeof(host), serv,
                  sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(serv);
  }
}

// One connection's byte stream for httplib's request parser and answer writer, over a
// non-blocking socket (plain or TLS), with the per-request budgets of http_connection.h.
class ConnStream final : public httplib::Stream {
 public:
  ConnStream(int fd, SSL* ssl, int read_ms, int write_ms)
      : fd_(fd), ssl_(ssl), read_ms_(read_ms), write_ms_(write_ms) {}

  // ---- per-request state, driven by the keep-alive loop and the server's hooks ----
  void start_request() {
    phase_ = Phase::kHead;
    head_bytes_ = 0;
    head_lines_ = 0;
    body_declared_ = false;
    body_allowed_ = false;
    body_left_ = 0;
    overflow_ = connection::Overflow::kNone;
    close_ = false;
    discard_ = false;
  }
  // The current request's answer is written later by someone else (a detached connection):
  // what httplib writes for it now is dropped.
  void discard_answer() { discard_ = true; }
  void headers_done(const httplib::Request& req) {
    phase_ = Phase::kBody;
    const std::string length = req.get_header_value("Content-Length");
    body_declared_ = req.has_header("Transfer-Encoding") || (!length.empty() && length != "0");
  }
  void allow_body(uint64_t max_bytes) {
    body_allowed_ = true;
    body_left_ = max_bytes;
  }
  void close_after_answer() { close_ = true; }
  connection::Overflow overflow() const { return overflow_; }
  // After an answer: whether the connection must close rather than read another request.
  bool must_close() const {
    return close_ || phase_ == Phase::kHead || overflow_ != connection::Overflow::kNone ||
           (body_declared_ && !body_allowed_);
  }
  // A refused body, or the rest of an oversized request, may still be on its way.
  bool needs_linger() const {
    return (body_declared_ && !body_allowed_) || overflow_ != connection::Overflow::kNone;
  }
  bool buffered() const { return off_ < len_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0); }

  // Between requests, without blocking: reads what the socket has behind what is buffered.
  // 1 when a whole request head is buffered or the buffer is full (a worker takes it from
  // there), 0 when more is needed, -1 when the peer closed or the connection failed.
  int read_head() {
    if (off_ != 0) {
      std::memmove(buf_, buf_ + off_, len_ - off_);
      len_ -= off_;
      off_ = 0;
    }
    for (;;) {
      if (len_ == sizeof(buf_)) return 1;
      ssize_t n = 0;
      if (ssl_ != nullptr) {
        ERR_clear_error();
        const int r = SSL_read(ssl_, buf_ + len_, static_cast<int>(sizeof(buf_) - len_));
        if (r <= 0) {
          const int e = SSL_get_error(ssl_, r);
          if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
          return len_ != 0 ? 1 : -1;  // a worker answers what came before the end
        }
        n = r;
      } else {
        n = ::recv(fd_, buf_ + len_, sizeof(buf_) - len_, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n <= 0) return len_ != 0 ? 1 : -1;
      }
      len_ += static_cast<size_t>(n);
    }
    const std::string_view got(buf_, len_);
    return got.find("\r\n\r\n") != std::string_view::npos ||
                   got.find("\n\n") != std::string_view::npos
               ? 1
               : 0;
  }

  // ---- httplib::Stream ----
  bool is_readable() const override { return buffered() || wait_for(fd_, POLLIN, read_ms_); }
  bool is_writable() const override { return wait_for(fd_, POLLOUT, write_ms_); }

  ssize_t read(char* ptr, size_t size) override {
    if (phase_ == Phase::kBody) {
      // httplib reads a POST/DELETE without Content-Length until EOF; it has no body.
      if (!body_allowed_) return 0;
      if (body_left_ == 0) {
        overflow_ = connection::Overflow::kBody;
        return -1;
      }
      size = static_cast<size_t>(std::min<uint64_t>(size, body_left_));
    } else {
      if (head_bytes_ >= connection::kMaxHeadBytes) {
        overflow_ = connection::Overflow::kHead;
        return -1;
      }
      size = std::min(size, connection::kMaxHeadBytes - head_bytes_);
    }
    if (off_ == len_) {
      const ssize_t n = fill();
      if (n <= 0) return n;
    }
    const size_t n = std::min(size, len_ - off_);
    std::memcpy(ptr, buf_ + off_, n);
    off_ += n;
    if (phase_ == Phase::kBody) {
      body_left_ -= n;
    } else {
      head_bytes_ += n;
      head_lines_ += static_cast<size_t>(std::count(ptr, ptr + n, '\n'));
      if (head_lines_ > connection::kMaxHeadLines) {
        overflow_ = connection::Overflow::kHead;
        return -1;
      }
    }
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (size == 0) return 0;
    if (discard_) return static_cast<ssize_t>(size);
    size = std::min<size_t>(size, 1 << 30);
    for (;;) {
      if (ssl_ != nullptr) {
        ERR_clear_error();
        const int r = SSL_write(ssl_, ptr, static_cast<int>(size));
        if (r > 0) return r;
        const int e = SSL_get_error(ssl_, r);
        if (e == SSL_ERROR_WANT_WRITE && wait_for(fd_, POLLOUT, write_ms_)) continue;
        if (e == SSL_ERROR_WANT_READ && wait_for(fd_, POLLIN, write_ms_)) continue;
        return -1;
      }
      const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_for(fd_, POLLOUT, write_ms_)) {
        continue;
      }
      return -1;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      ip_and_port(ss, len, ip, port);
    }
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      ip_and_port(ss, len, ip, port);
    }
  }
  socket_t socket() const override { return fd_; }

 private:
  enum class Phase : uint8_t { kHead, kBody };

  // Reads what the socket has into the buffer: bytes read, 0 at the end, -1 on error/timeout.
  ssize_t fill() {
    off_ = len_ = 0;
    for (;;) {
      if (ssl_ != nullptr) {
        ERR_clear_error();
        const int r = SSL_read(ssl_, buf_, sizeof(buf_));
        if (r > 0) {
          len_ = static_cast<size_t>(r);
          return r;
        }
        const int e = SSL_get_error(ssl_, r);
        if (e == SSL_ERROR_ZERO_RETURN) return 0;
        if (e == SSL_ERROR_WANT_READ && wait_for(fd_, POLLIN, read_ms_)) continue;
        if (e == SSL_ERROR_WANT_WRITE && wait_for(fd_, POLLOUT, read_ms_)) continue;
        return -1;
      }
      const ssize_t n = ::recv(fd_, buf_, sizeof(buf_), 0);
      if (n >= 0) {
        len_ = static_cast<size_t>(n);
        return n;
      }
      if (errno == EINTR) continue;
      if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_for(fd_, POLLIN, read_ms_)) continue;
      return -1;
    }
  }

  const int fd_;
  SSL* const ssl_;
  const int read_ms_;
  const int write_ms_;
  char buf_[16 * 1024];  // one TLS record
  size_t off_ = 0;
  size_t len_ = 0;

  Phase phase_ = Phase::kHead;
  size_t head_bytes_ = 0;
  size_t head_lines_ = 0;
  bool body_declared_ = false;
  bool body_allowed_ = false;
  uint64_t body_left_ = 0;
  connection::Overflow overflow_ = connection::Overflow::kNone;
  bool close_ = false;
  bool discard_ = false;
};

thread_local ConnStream* tl_stream = nullptr;

struct LoopSettings {
  const std::atomic<socket_t>* listening;  // INVALID_SOCKET once the server stops
  size_t keep_alive_max_count;
  int keep_alive_timeout_ms;
  int read_ms;
  int write_ms;
};

LoopSettings loop_settings(const std::atomic<socket_t>* listening, size_t keep_alive_max_count,
                           time_t keep_alive_timeout_sec, int read_ms, int write_ms) {
  return LoopSettings{listening, keep_alive_max_count,
                      static_cast<int>(std::min<time_t>(keep_alive_timeout_sec, 1 << 20) * 1000),
                      read_ms, write_ms};
}

// httplib's process_request for one request on `strm`.
using ProcessRequest = std::function<bool(httplib::Stream&, bool, bool&)>;

// Waits for the next request on a kept-alive connection: false on idle timeout, a closed
// peer or a stopping server (checked every 100 ms, so a stop never waits for idle clients).
bool next_request(const ConnStream& strm, int fd, const LoopSettings& s) {
  if (strm.buffered()) return true;
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(s.keep_alive_timeout_ms);
  while (s.listening->load() != INVALID_SOCKET) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now())
            .count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
  return false;
}

// Reads and discards what a client still sends for a moment, then closes: the answer to a
// request whose body was refused reaches the client before the close resets the connection.
void linger_and_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(kLingerMs);
  size_t drained = 0;
  char buf[16 * 1024];
  while (drained < kLingerBytes) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now())
            .count();
    if (left <= 0 || !wait_for(fd, POLLIN, static_cast<int>(left))) break;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
  ::close(fd);
}

bool accept_tls(int fd, SSL* ssl, int timeout_ms) {
  for (;;) {
    ERR_clear_error();
    const int r = SSL_accept(ssl);
    if (r == 1) return true;
    const int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ && wait_for(fd, POLLIN, timeout_ms)) continue;
    if (e == SSL_ERROR_WANT_WRITE && wait_for(fd, POLLOUT, timeout_ms)) continue;
    return false;
  }
}

void finish_socket(int fd, bool linger) {
  if (linger) {
    linger_and_close(fd);
  } else {
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }
}

// One connection's keep-alive loop and state, which may leave its worker between a request
// and its answer (connection::Detached) and come back for the next request.
class Session final : public connection::Detached {
 public:
  Session(int fd, SSL* ssl, const LoopSettings& s, ProcessRequest process,
          const connection::IdleKeeper& keeper)
      : keeper_(keeper),
        fd_(fd),
        ssl_(ssl),
        s_(s),
        process_(std::move(process)),
        strm_(fd, ssl, s.read_ms, s.write_ms),
        left_(s.keep_alive_max_count) {}
  ~Session() override {
    if (ssl_ != nullptr) {
      if (ok_) SSL_shutdown(ssl_);  // close_notify; the socket is non-blocking, never waits
      SSL_free(ssl_);
    }
    finish_socket(fd_, linger_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Serves requests until the connection ends (then closes it) or a handler detaches it.
  static void run(std::unique_ptr<Session> self);

  // ---- connection::Detached ----
  int fd() const override { return fd_; }
  ssize_t send_some(const char* a, size_t a_size, const char* b, size_t b_size) override {
    if (ssl_ != nullptr) {
      const char* p = a_size != 0 ? a : b;
      const size_t n = std::min<size_t>(a_size != 0 ? a_size : b_size, 1 << 30);
      if (n == 0) return 0;
      ERR_clear_error();
      const int r = SSL_write(ssl_, p, static_cast<int>(n));
      if (r > 0) return r;
      const int e = SSL_get_error(ssl_, r);
      return e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ ? 0 : -1;
    }
    iovec iov[2] = {{const_cast<char*>(a), a_size}, {const_cast<char*>(b), b_size}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    for (;;) {
      const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
  }
  const std::string& connection_header() const override { return connection_header_; }
  bool keep_alive() const override { return keep_alive_; }
  bool buffered() const override { return strm_.buffered(); }
  int read_head() override { return strm_.read_head(); }

  ConnStream& stream() { return strm_; }
  std::unique_ptr<ConnectionPool::Detached> pool;  // set while detached from a pool's worker
  std::function<void(std::unique_ptr<connection::Detached>)> adopt;  // set by a handler

 private:
  const connection::IdleKeeper& keeper_;  // the server's
  const int fd_;
  SSL* const ssl_;
  const LoopSettings s_;
  const ProcessRequest process_;
  ConnStream strm_;
  size_t left_;  // requests this connection may still send
  bool ok_ = false;
  bool linger_ = false;
  bool keep_alive_ = false;
  std::string connection_header_;
};

thread_local Session* tl_session = nullptr;

void Session::run(std::unique_ptr<Session> self) {
  Session& s = *self;
  tl_stream = &s.strm_;
  tl_session = &s;
  while (s.left_ > 0) {
    if (s.keeper_) {
      // Until the request head is whole, it waits off the worker.
      const int head = s.strm_.read_head();
      if (head < 0) break;
      if (head == 0) {
        if (auto pool = ConnectionPool::detach()) {
          s.pool = std::move(pool);
          tl_stream = nullptr;
          tl_session = nullptr;
          s.keeper_(std::move(self));
          return;
        }
      }
    }
    if (!next_request(s.strm_, s.fd_, s.s_)) break;
    s.strm_.start_request();
    bool closed = false;
    const bool last = s.left_ == 1;
    --s.left_;
    s.ok_ = s.process_(s.strm_, last, closed);
    s.linger_ = s.strm_.needs_linger();
    if (s.adopt) {
      s.keep_alive_ = s.ok_ && !closed && !last && !s.strm_.must_close();
      s.connection_header_ =
          s.keep_alive_
              ? "Keep-Alive: timeout=" + std::to_string(s.s_.keep_alive_timeout_ms / 1000) +
                    ", max=" + std::to_string(s.s_.keep_alive_max_count) + "\r\n"
              : "Connection: close\r\n";
      auto adopt = std::move(s.adopt);
      s.adopt = nullptr;
      tl_stream = nullptr;
      tl_session = nullptr;
      adopt(std::move(self));
      return;
    }
    if (!s.ok_ || closed || s.strm_.must_close()) break;
  }
  tl_stream = nullptr;
  tl_session = nullptr;
}

// Called by httplib after it parsed the request line and headers, before anything else reads
// from the connection or routes the request.
void setup_request(httplib::Request& req) {
  if (tl_stream != nullptr) tl_stream->headers_done(req);
  // One range at most: a list of overlapping ranges multiplies the answer (#17: a 3 KB request
  // for 1,000 ranges of /metrics got 36 MB back). Several ranges get the whole body, 200.
  if (req.ranges.size() > 1) req.ranges.clear();
}

void set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

}  // namespace

namespace connection {

void allow_body(uint64_t max_bytes) {
  if (tl_stream != nullptr) tl_stream->allow_body(max_bytes);
}

void close_after_answer() {
  if (tl_stream != nullptr) tl_stream->close_after_answer();
}

Overflow overflow() { return tl_stream != nullptr ? tl_stream->overflow() : Overflow::kNone; }

bool can_detach() { return tl_session != nullptr && ConnectionPool::current_job(); }

bool detach_after_handler(std::function<void(std::unique_ptr<Detached>)> adopt) {
  if (tl_session == nullptr || tl_session->adopt) return false;
  auto pool = ConnectionPool::detach();
  if (!pool) return false;
  tl_session->pool = std::move(pool);
  tl_session->adopt = std::move(adopt);
  tl_session->stream().discard_answer();
  return true;
}

void set_idle_keeper(httplib::Server& server, IdleKeeper keeper) {
  if (auto* plain = dynamic_cast<BoundedServer*>(&server)) plain->idle_keeper = std::move(keeper);
  if (auto* tls = dynamic_cast<BoundedSslServer*>(&server)) tls->idle_keeper = std::move(keeper);
}

void Detached::resume(std::unique_ptr<Detached> connection) {
  auto* s = static_cast<Session*>(connection.release());
  auto pool = std::move(s->pool);
  auto box = std::make_shared<std::unique_ptr<Session>>(s);
  ConnectionPool::resume(std::move(pool), s->fd(), [box] { Session::run(std::move(*box)); });
}

}  // namespace connection

bool BoundedServer::process_and_close_socket(socket_t sock) {
  set_nonblocking(sock);
  const LoopSettings s = loop_settings(&svr_sock_, keep_alive_max_count_, keep_alive_timeout_sec_,
                                       to_ms(read_timeout_sec_, read_timeout_usec_),
                                       to_ms(write_timeout_sec_, write_timeout_usec_));
  Session::run(std::make_unique<Session>(
      sock, nullptr, s,
      [this](httplib::Stream& strm, bool last, bool& closed) {
        return process_request(strm, last, closed, setup_request);
      },
      idle_keeper));
  return true;
}

bool BoundedSslServer::process_and_close_socket(socket_t sock) {
  set_nonblocking(sock);
  const LoopSettings s = loop_settings(&svr_sock_, keep_alive_max_count_, keep_alive_timeout_sec_,
                                       to_ms(read_timeout_sec_, read_timeout_usec_),
                                       to_ms(write_timeout_sec_, write_timeout_usec_));
  SSL* ssl = SSL_new(ssl_context());
  if (ssl == nullptr) {
    finish_socket(sock, false);
    return false;
  }
  BIO* bio = BIO_new_socket(sock, BIO_NOCLOSE);
  SSL_set_bio(ssl, bio, bio);
  auto session = std::make_unique<Session>(
      sock, ssl, s,
      [this, ssl](httplib::Stream& strm, bool last, bool& closed) {
        return process_request(strm, last, closed, [ssl](httplib::Request& req) {
          req.ssl = ssl;
          setup_request(req);
        });
      },
      idle_keeper);
  if (!accept_tls(sock, ssl, s.read_ms)) return false;  // the session closes the connection
  Session::run(std::move(session));
  return true;
}

}  // namespace hotkey::coordinator
