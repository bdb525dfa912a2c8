// The coordinator serves each accepted connection with its own keep-alive loop and socket
// stream instead of cpp-httplib 0.11's, because the library's own bound nothing an
// unauthenticated client sends: the request line and the header lines are read whole into
// memory without a count or size limit, chunked and compressed bodies are buffered whole
// (payload_max_length only applies to Content-Length), and its per-request stream drops the
// bytes of a pipelined second request. Here (docs/SECURITY.md, "Request limits"):
// - the request head (request line and headers) is at most kMaxHeadBytes and kMaxHeadLines;
//   beyond either the answer is 431 and the connection closes;
// - no body byte is read until the server's pre-routing hook has accepted the request
//   (allow_body, with the route's byte budget; a chunked body past it gets 413) or refused it
//   (close_after_answer: answered without reading the body, then the connection closes);
// - one stream lives as long as the connection, so pipelined requests are answered in order.
// The listening side (accept, the worker pool) stays httplib's. The control functions below
// act on the connection served by the calling thread; they are no-ops on any other thread.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace hotkey::coordinator {

namespace connection {

inline constexpr size_t kMaxHeadBytes = 64 * 1024;
inline constexpr size_t kMaxHeadLines = 100;  // the request line and 99 header lines

// The current request's body may be read, at most `max_bytes` of it as sent (chunk framing
// included). A request without Content-Length or Transfer-Encoding has no body (RFC 9112).
void allow_body(uint64_t max_bytes);
// The current request's body is not read: the connection closes after the answer.
void close_after_answer();

enum class Overflow : uint8_t { kNone, kHead, kBody };
// Why reading the current request failed, if a limit above made it fail.
Overflow overflow();

// A connection taken off its worker thread with its request unanswered (a parked long-poll,
// park_watch.h), between the request and its answer, then until the next request arrives. Its
// keep-alive loop resumes on a worker with resume(); destroying it closes the connection.
// Owned by one thread at a time; never blocks.
class Detached {
 public:
  virtual ~Detached() = default;
  virtual int fd() const = 0;
  // Sends from `a` then `b` without blocking: the bytes sent (0: the socket is not ready, wait
  // for it to become writable), or -1 when the connection failed.
  virtual ssize_t send_some(const char* a, size_t a_size, const char* b, size_t b_size) = 0;
  // The answer's connection header line, with its CRLF: "Keep-Alive: timeout=.., max=..", or
  // "Connection: close" when the connection ends after it (the request's last allowed, or
  // asked so).
  virtual const std::string& connection_header() const = 0;
  virtual bool keep_alive() const = 0;
  // Bytes of the next request are already read (pipelined).
  virtual bool buffered() const = 0;
  // Reads what the socket has of the next request without blocking: 1 when its head (request
  // line and headers) is whole, or as much as one read buffer holds; 0 when more must come;
  // -1 when the peer closed before a byte of it, or the connection failed.
  virtual int read_head() = 0;
  // The keep-alive loop goes on with the next request, on a worker of the pool.
  static void resume(std::unique_ptr<Detached> connection);
};

// Inside a handler on a connection's thread: whether detach_after_handler() can succeed.
bool can_detach();
// Inside a handler: once the handler returns, the connection leaves its worker with nothing
// written (the handler's answer is discarded) and `adopt` is called with it on that worker.
// False, and nothing changes, when the connection cannot leave its thread.
bool detach_after_handler(std::function<void(std::unique_ptr<Detached>)> adopt);

// Where a connection waits for its next request (or its first) when none is readable at once:
// handed to `keeper`, which resumes it once bytes arrive, instead of holding its worker. Set
// before the server starts; unset, the worker waits (keep_alive_timeout_s).
using IdleKeeper = std::function<void(std::unique_ptr<Detached>)>;
void set_idle_keeper(httplib::Server& server, IdleKeeper keeper);

}  // namespace connection

// httplib's Server with the connection handling above. Thread-safe as httplib::Server.
class BoundedServer final : public httplib::Server {
 public:
  connection::IdleKeeper idle_keeper;

 private:
  bool process_and_close_socket(socket_t sock) override;
};

// The same over TLS; `setup` configures the SSL_CTX as for httplib::SSLServer.
class BoundedSslServer final : public httplib::SSLServer {
 public:
  explicit BoundedSslServer(const std::function<bool(SSL_CTX&)>& setup)
      : httplib::SSLServer(setup) {}
  connection::IdleKeeper idle_keeper;

 private:
  bool process_and_close_socket(socket_t sock) override;
};

}  // namespace hotkey::coordinator
