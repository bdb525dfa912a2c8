#include "park_watch.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace hotkey::coordinator {

ParkWatch::ParkWatch() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return;  // watch() then refuses; waits run to their end
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // handles start at 1
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) return;
  thread_ = std::thread([this] { run(); });
}

ParkWatch::~ParkWatch() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)::write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

uint64_t ParkWatch::watch(int fd, std::function<void()> on_hangup) {
  if (fd < 0 || !thread_.joinable()) return 0;
  std::lock_guard lock(mu_);
  const uint64_t handle = next_handle_++;
  // The handle, not the descriptor, identifies the registration: an event read before an
  // unwatch() and handled after the number was registered again finds no entry.
  epoll_event ev{};
  ev.events = EPOLLRDHUP | EPOLLONESHOT;
  ev.data.u64 = handle;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) return 0;
  entries_.emplace(handle, Entry{fd, std::move(on_hangup)});
  return handle;
}

void ParkWatch::unwatch(uint64_t handle) {
  if (handle == 0) return;
  std::lock_guard lock(mu_);
  auto it = entries_.find(handle);
  if (it == entries_.end()) return;  // fired: the hook ran under mu_ and is over
  (void)epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
  entries_.erase(it);
}

void ParkWatch::run() {
  std::array<epoll_event, 64> events{};
  for (;;) {
    const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    std::lock_guard lock(mu_);
    for (int i = 0; i < n; ++i) {
      const uint64_t handle = events[static_cast<size_t>(i)].data.u64;
      if (handle == 0) return;  // stop
      auto it = entries_.find(handle);
      if (it == entries_.end()) continue;
      (void)epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
      // Called under mu_, so that unwatch() returning means the hook is over.
      it->second.on_hangup();
      entries_.erase(it);
    }
  }
}

}  // namespace hotkey::coordinator
