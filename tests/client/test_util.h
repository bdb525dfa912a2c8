// Helpers shared by the client tests: verified hot-key lists and a real loopback coordinator
// peer (an httplib server the test scripts), never a mock of the client's own code.
#pragma once

#include <httplib.h>
#include <librdkafka/rdkafka.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "hotkey/hotkey_list.h"
#include "hotkey/salt_planner.h"
#include "support/eventually.h"
#include "support/lists.h"

namespace hotkey::client::test {

using test_support::eventually;
using test_support::make_list;

// The partition librdkafka's own partitioner of `family` gives a keyed record: the oracle for
// byte-exact cold routing.
inline int32_t oracle(HashFamily family, const std::string& key, int32_t partitions) {
  switch (family) {
    case HashFamily::kMurmur2:
      return rd_kafka_msg_partitioner_murmur2_random(nullptr, key.data(), key.size(), partitions,
                                                     nullptr, nullptr);
    case HashFamily::kCrc32:
      return rd_kafka_msg_partitioner_consistent_random(nullptr, key.data(), key.size(), partitions,
                                                        nullptr, nullptr);
    case HashFamily::kFnv1a:
      return rd_kafka_msg_partitioner_fnv1a_random(nullptr, key.data(), key.size(), partitions,
                                                   nullptr, nullptr);
  }
  return -2;
}

// A thread that calls `step` until stop() (or the destructor), which ends and joins it: a
// producer's send loop that stops whatever way the test leaves.
class Looper {
 public:
  explicit Looper(std::function<void()> step)
      : thread_([this, step = std::move(step)] {
          while (!stop_.load()) step();
        }) {}
  ~Looper() { stop(); }
  Looper(const Looper&) = delete;
  Looper& operator=(const Looper&) = delete;
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A real HTTP server on 127.0.0.1 and an ephemeral port, run on its own thread.
class LoopbackServer {
 public:
  LoopbackServer() {
    server_.new_task_queue = [] { return new httplib::ThreadPool(8); };
    // httplib 0.11 listens with a backlog of 5: a client starting a subscriber per topic
    // connects several sockets at once, a dropped SYN is resent after 1 s and the tests' 1 s
    // HTTP timeout fails that request. Raise the backlog as the coordinator does (listen()
    // again on a listening socket only changes it); SO_REUSEADDR only, no SO_REUSEPORT.
    int listen_fd = -1;
    server_.set_socket_options([&listen_fd](socket_t sock) {
      int yes = 1;
      (void)setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      listen_fd = sock;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (listen_fd >= 0) (void)::listen(listen_fd, 1024);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LoopbackServer() { stop(); }
  void stop() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  httplib::Server& server() { return server_; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace hotkey::client::test
