// Notices that the client of a parked request has gone (POST /v1/hotkeys/subscribe): a parked
// handler's thread sleeps on a condition variable and would otherwise hold its waiter slot
// until the wait passes, although a client that changes its set of topics closes the
// connection and subscribes again at once. One epoll thread watches the sockets of the parked
// requests for the peer's hang-up (EPOLLRDHUP, EPOLLHUP, EPOLLERR; never for readable data,
// so a pipelined request does not end a wait) and calls the hook registered with the socket.
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace hotkey::coordinator {

class ParkWatch {
 public:
  ParkWatch();
  // Joins the thread.
  ~ParkWatch();
  ParkWatch(const ParkWatch&) = delete;
  ParkWatch& operator=(const ParkWatch&) = delete;

  // Calls `on_hangup` once, on the watch thread, when the peer of `fd` hangs up, unless
  // unwatch() came first. Returns a handle for unwatch(), or 0 when the socket cannot be
  // watched (then nothing is called). `fd` must stay open until unwatch().
  uint64_t watch(int fd, std::function<void()> on_hangup);
  // After it returns, the hook of `handle` is not running and will never be called.
  void unwatch(uint64_t handle);

 private:
  void run();

  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: stops the thread
  std::mutex mu_;
  struct Entry {
    int fd;
    std::function<void()> on_hangup;
  };
  std::unordered_map<uint64_t, Entry> entries_;  // guarded by mu_
  uint64_t next_handle_ = 1;                     // guarded by mu_
  std::thread thread_;
};

}  // namespace hotkey::coordinator
