#include "http_connection.h"

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
  }
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
};

thread_local ConnStream* tl_stream = nullptr;

struct LoopSettings {
  const std::atomic<socket_t>* listening;  // INVALID_SOCKET once the server stops
  size_t keep_alive_max_count;
  int keep_alive_timeout_ms;
  int read_ms;
  int write_ms;
};

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

bool serve(int fd, SSL* ssl, const LoopSettings& s, const ProcessRequest& process) {
  ConnStream strm(fd, ssl, s.read_ms, s.write_ms);
  tl_stream = &strm;
  bool ok = false;
  for (size_t count = s.keep_alive_max_count; count > 0; --count) {
    if (!next_request(strm, fd, s)) break;
    strm.start_request();
    bool closed = false;
    ok = process(strm, count == 1, closed);
    if (!ok || closed || strm.must_close()) break;
  }
  tl_stream = nullptr;
  return ok;
}

void finish_socket(int fd, bool linger) {
  if (linger) {
    linger_and_close(fd);
  } else {
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }
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

}  // namespace connection

bool BoundedServer::process_and_close_socket(socket_t sock) {
  set_nonblocking(sock);
  const LoopSettings s{&svr_sock_, keep_alive_max_count_,
                       static_cast<int>(std::min<time_t>(keep_alive_timeout_sec_, 1 << 20) * 1000),
                       to_ms(read_timeout_sec_, read_timeout_usec_),
                       to_ms(write_timeout_sec_, write_timeout_usec_)};
  bool linger = false;
  const bool ok = serve(sock, nullptr, s, [&](httplib::Stream& strm, bool last, bool& closed) {
    const bool r = process_request(strm, last, closed, setup_request);
    linger = static_cast<ConnStream&>(strm).needs_linger();
    return r;
  });
  finish_socket(sock, linger);
  return ok;
}

bool BoundedSslServer::process_and_close_socket(socket_t sock) {
  set_nonblocking(sock);
  const LoopSettings s{&svr_sock_, keep_alive_max_count_,
                       static_cast<int>(std::min<time_t>(keep_alive_timeout_sec_, 1 << 20) * 1000),
                       to_ms(read_timeout_sec_, read_timeout_usec_),
                       to_ms(write_timeout_sec_, write_timeout_usec_)};
  SSL* ssl = SSL_new(ssl_context());
  if (ssl == nullptr) {
    finish_socket(sock, false);
    return false;
  }
  BIO* bio = BIO_new_socket(sock, BIO_NOCLOSE);
  SSL_set_bio(ssl, bio, bio);
  bool ok = false;
  bool linger = false;
  if (accept_tls(sock, ssl, s.read_ms)) {
    ok = serve(sock, ssl, s, [&](httplib::Stream& strm, bool last, bool& closed) {
      const bool r = process_request(strm, last, closed, [ssl](httplib::Request& req) {
        req.ssl = ssl;
        setup_request(req);
      });
      linger = static_cast<ConnStream&>(strm).needs_linger();
      return r;
    });
    if (ok) SSL_shutdown(ssl);  // close_notify; the socket is non-blocking, never waits
  }
  SSL_free(ssl);
  finish_socket(sock, linger);
  return ok;
}

}  // namespace hotkey::coordinator
