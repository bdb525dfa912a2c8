// SIGPIPE never reaches the host application from this library. OpenSSL writes to the
// coordinator's socket with write()/send() without MSG_NOSIGNAL (a TLS close_notify after the
// coordinator has gone, a request on a connection it closed), which raises SIGPIPE, and its
// default action kills the process: the application's signal setup is not ours to change.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <ctime>

namespace hotkey::client::detail {

// At the start of each of the library's own threads: SIGPIPE stays blocked for the thread's
// whole life. A SIGPIPE raised by its writes stays pending on the thread (never delivered);
// the write fails with EPIPE, which the HTTP layer reports as an ordinary connection error.
inline void block_sigpipe_in_this_thread() noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// For library work on the application's thread (closing connections when a client stops):
// blocks SIGPIPE for the guard's scope, discards a SIGPIPE raised meanwhile (unless one was
// already pending before) and restores the thread's signal mask.
class SigpipeGuard {
 public:
  SigpipeGuard() noexcept {
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    blocked_ = pthread_sigmask(SIG_BLOCK, &set, &old_) == 0;
  }
  ~SigpipeGuard() {
    if (!blocked_) return;
    if (!was_pending_) {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGPIPE);
      const timespec zero{0, 0};
      while (sigtimedwait(&set, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t old_{};
  bool was_pending_ = false;
  bool blocked_ = false;
};

}  // namespace hotkey::client::detail
