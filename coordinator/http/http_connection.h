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

}  // namespace connection

// httplib's Server with the connection handling above. Thread-safe as httplib::Server.
class BoundedServer final : public httplib::Server {
 private:
  bool process_and_close_socket(socket_t sock) override;
};

// The same over TLS; `setup` configures the SSL_CTX as for httplib::SSLServer.
class BoundedSslServer final : public httplib::SSLServer {
 public:
  explicit BoundedSslServer(const std::function<bool(SSL_CTX&)>& setup)
      : httplib::SSLServer(setup) {}

 private:
  bool process_and_close_socket(socket_t sock) override;
};

}  // namespace hotkey::coordinator
