// The real hotkey-coordinator binary as a child process: clean restart and kill -9 mid-load
// keep pins, denies, lists and versions (never regressing); foreign and corrupt data dirs are
// refused with a clear message and a non-zero exit, not a crash.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

using nlohmann::json;
const httplib::Headers kOperator{{"Authorization", "Bearer process-test-operator"}};

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Process {
 public:
  Process(const std::filesystem::path& data, const std::filesystem::path& log,
          const std::string& listen = "127.0.0.1:0")
      : log_(log) {
    const std::string before = read_all(log);
    for (size_t pos = before.find("\"listening\""); pos != std::string::npos;
         pos = before.find("\"listening\"", pos + 1)) {
      ++listens_before_;
    }
    pid_ = fork();
    if (pid_ == 0) {
      FILE* f = std::freopen(log.c_str(), "a", stderr);
      (void)f;
      setenv("HOTKEY_OPERATOR_TOKEN", "ops=process-test-operator", 1);
      std::string bin = std::string(HOTKEY_BIN_DIR) + "/hotkey-coordinator";
      execl(bin.c_str(), bin.c_str(), "--listen", listen.c_str(), "--data", data.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Process() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // The port from a "listening" line this process logged (deadline 30 s), or 0 if it exited.
  int wait_port() {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      std::istringstream lines(read_all(log_));
      std::string line;
      size_t seen = 0;
      int port = 0;
      while (std::getline(lines, line)) {
        auto j = json::parse(line, nullptr, false);
        if (!j.is_discarded() && j.is_object() && j.value("event", "") == "listening") {
          ++seen;
          port = j.value("port", 0);
        }
      }
      if (seen > listens_before_) return port;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  }
  int terminate() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  void kill9() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // Waits for exit (deadline 30 s): exit code, or -1 for a signal/timeout.
  int wait_exit() {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
  size_t listens_before_ = 0;
};

httplib::Client client(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(10, 0);
  return c;
}

json get_list(int port) {
  auto c = client(port);
  auto r = c.Get("/v1/hotkeys?topic=orders");
  if (!r || r->status != 200) return json();
  return json::parse(r->body);
}

TEST(CoordinatorProcess, KillNineMidLoadAndCleanRestartKeepStateAndVersions) {
  TempDir dir;
  const auto data = dir.path() / "data";
  const auto log = dir.path() / "coordinator.log";
  uint64_t last_version = 0;
  {
    Process p(data, log);
    int port = p.wait_port();
    ASSERT_NE(port, 0) << read_all(log);
    auto c = client(port);
    ASSERT_EQ(c.Post("/v1/reports",
                     report_to_json(make_report("p", "orders", 8, 1, {{"hot", 900}, {"x", 100}})),
                     "application/json")
                  ->status,
              200);
    ASSERT_EQ(c.Post("/v1/topics/orders/pins", kOperator,
                     json{{"key", "vip"}, {"reason", "r"}, {"salts", 3}}.dump(), "application/json")
                  ->status,
              200);
    ASSERT_EQ(c.Post("/v1/topics/orders/denies", kOperator,
                     json{{"key", "acct"}, {"reason", "order"}}.dump(), "application/json")
                  ->status,
              200);
    // Load: a sender keeps reporting and an operator keeps pinning while we kill -9.
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> max_seen{0};
    std::thread sender([&] {
      auto sc = client(port);
      for (uint64_t seq = 2; !stop.load(); ++seq) {
        sc.Post("/v1/reports",
                report_to_json(make_report("p", "orders", 8, seq, {{"hot", 900}, {"x", 100}})),
                "application/json");
      }
    });
    auto oc = client(port);
    for (int i = 0; i < 20; ++i) {
      auto r = oc.Post("/v1/topics/orders/pins", kOperator,
                       json{{"key", "k" + std::to_string(i)}, {"reason", "load"}}.dump(),
                       "application/json");
      ASSERT_TRUE(r && r->status == 200);
      max_seen = std::max<uint64_t>(max_seen, json::parse(r->body)["version"].get<uint64_t>());
    }
    p.kill9();
    stop = true;
    sender.join();
    last_version = max_seen.load();
    ASSERT_GE(last_version, 22u);
  }
  {
    Process p(data, log);
    int port = p.wait_port();
    ASSERT_NE(port, 0) << read_all(log);
    json list = get_list(port);
    ASSERT_FALSE(list.is_null());
    EXPECT_GE(list["version"].get<uint64_t>(), last_version);
    bool vip = false, k19 = false;
    for (const auto& k : list["keys"]) {
      vip |= k.value("key", "") == "vip";
      k19 |= k.value("key", "") == "k19";
    }
    EXPECT_TRUE(vip);
    EXPECT_TRUE(k19);
    EXPECT_EQ(list["denied"][0]["key"], "acct");
    auto c = client(port);
    auto r = c.Post("/v1/topics/orders/pins", kOperator,
                    json{{"key", "after"}, {"reason", "r"}}.dump(), "application/json");
    ASSERT_EQ(r->status, 200);
    last_version = json::parse(r->body)["version"];
    EXPECT_EQ(p.terminate(), 0) << read_all(log);
  }
  {
    Process p(data, log);
    int port = p.wait_port();
    ASSERT_NE(port, 0) << read_all(log);
    json list = get_list(port);
    EXPECT_EQ(list["version"].get<uint64_t>(), last_version);
    auto audit = client(port).Get("/v1/audit?limit=1", kOperator);
    ASSERT_EQ(audit->status, 200);
    EXPECT_EQ(json::parse(audit->body)["entries"][0]["who"], "ops");
    EXPECT_EQ(p.terminate(), 0) << read_all(log);
  }
}

TEST(CoordinatorProcess, ForeignAndCorruptDataDirsAreRefused) {
  TempDir dir;
  const auto foreign = dir.path() / "foreign";
  std::filesystem::create_directories(foreign);
  std::ofstream(foreign / "notes.txt") << "not a database";
  {
    Process p(foreign, dir.path() / "foreign.log");
    EXPECT_EQ(p.wait_exit(), 3);
    EXPECT_NE(read_all(dir.path() / "foreign.log").find("refusing"), std::string::npos);
  }
  // A real store whose CURRENT file is damaged.
  const auto corrupt = dir.path() / "corrupt";
  {
    Process p(corrupt, dir.path() / "first.log");
    ASSERT_NE(p.wait_port(), 0);
    EXPECT_EQ(p.terminate(), 0);
  }
  std::ofstream(corrupt / "CURRENT", std::ios::trunc) << "MANIFEST-999999\n";
  {
    Process p(corrupt, dir.path() / "corrupt.log");
    EXPECT_EQ(p.wait_exit(), 3) << read_all(dir.path() / "corrupt.log");
    EXPECT_NE(read_all(dir.path() / "corrupt.log").find("cannot open data dir"), std::string::npos);
  }
}

// A second coordinator on an address a running one holds must refuse to start (exit 4, as
// CONFIGURATION.md says) instead of sharing the port through SO_REUSEPORT, where the kernel
// would split connections between the two. A clean restart on the same port still works while
// the old connections sit in TIME_WAIT.
TEST(CoordinatorProcess, SecondCoordinatorOnAHeldAddressExitsFourAndRestartReusesThePort) {
  TempDir dir;
  Process first(dir.path() / "one", dir.path() / "one.log");
  const int port = first.wait_port();
  ASSERT_NE(port, 0) << read_all(dir.path() / "one.log");
  for (int i = 0; i < 5; ++i) {
    auto c = client(port);
    auto r = c.Get("/healthz");
    ASSERT_TRUE(r && r->status == 200);
  }
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  {
    Process second(dir.path() / "two", dir.path() / "two.log", addr);
    EXPECT_EQ(second.wait_exit(), 4) << read_all(dir.path() / "two.log");
    EXPECT_NE(read_all(dir.path() / "two.log").find("bind_failed"), std::string::npos);
  }
  // The first one still answers every request.
  for (int i = 0; i < 20; ++i) {
    auto c = client(port);
    auto r = c.Get("/healthz");
    ASSERT_TRUE(r && r->status == 200);
  }
  EXPECT_EQ(first.terminate(), 0);
  Process again(dir.path() / "one", dir.path() / "again.log", addr);
  EXPECT_EQ(again.wait_port(), port) << read_all(dir.path() / "again.log");
  EXPECT_EQ(again.terminate(), 0);
}

// Starts the coordinator on `data` bind-mounted read-only in a private mount namespace
// (`unshare -m`, which needs root or CAP_SYS_ADMIN) and waits for it to exit. Its stderr goes
// to `log`. Returns the exit code; 99 when the namespace or the mount could not be made.
int run_on_read_only_dir(const std::filesystem::path& data, const std::filesystem::path& log) {
  const std::string bin = std::string(HOTKEY_BIN_DIR) + "/hotkey-coordinator";
  const std::string d = data.string();
  const std::string script = "unshare -m --propagation private sh -c 'mount --bind " + d + " " + d +
                             " && mount -o remount,bind,ro " + d + " || exit 99; exec " + bin +
                             " --listen 127.0.0.1:0 --data " + d + "' 2>>" + log.string();
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// A data dir that turned read-only (a remount after disk errors, a wrong volume mount): the
// coordinator refuses to start with a message naming the cause instead of serving without a
// store, and what was acknowledged before is all there once the dir is writable again.
// (A dir cannot be remounted read-only under a running coordinator: RocksDB's open WAL keeps
// the mount busy. Write failures while running are covered by the full-disk test in
// tests/reliability.)
TEST(CoordinatorProcess, ReadOnlyDataDirIsRefusedAndAcknowledgedStateSurvives) {
  TempDir dir;
  const auto data = dir.path() / "data";
  const auto log = dir.path() / "coordinator.log";
  {
    Process p(data, log);
    int port = p.wait_port();
    ASSERT_NE(port, 0) << read_all(log);
    auto c = client(port);
    ASSERT_EQ(c.Post("/v1/reports",
                     report_to_json(make_report("p", "orders", 8, 1, {{"hot", 900}, {"x", 100}})),
                     "application/json")
                  ->status,
              200);
    auto r = c.Post("/v1/topics/orders/pins", kOperator,
                    R"({"key": "tenant-7", "reason": "read-only test", "salts": 3})",
                    "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(p.terminate(), 0);
  }
  const auto ro_log = dir.path() / "read-only.log";
  const int code = run_on_read_only_dir(data, ro_log);
  if (code == 99) GTEST_SKIP() << "cannot make a read-only bind mount here: " << read_all(ro_log);
  EXPECT_EQ(code, 3) << read_all(ro_log);
  const std::string ro = read_all(ro_log);
  EXPECT_NE(ro.find("store_open_failed"), std::string::npos) << ro;
  EXPECT_NE(ro.find("Read-only file system"), std::string::npos) << ro;
  {
    Process p(data, log);
    int port = p.wait_port();
    ASSERT_NE(port, 0) << read_all(log);
    auto c = client(port);
    auto r = c.Get("/v1/topics/orders/pins");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    auto pins = json::parse(r->body).at("pins");
    ASSERT_EQ(pins.size(), 1u) << r->body;
    EXPECT_EQ(pins[0].at("key"), "tenant-7");
    auto audit = c.Get("/v1/audit?topic=orders", kOperator);
    ASSERT_TRUE(audit);
    ASSERT_EQ(audit->status, 200);
    EXPECT_NE(audit->body.find("tenant-7"), std::string::npos) << audit->body;
    EXPECT_EQ(p.terminate(), 0);
  }
}

}  // namespace
}  // namespace hotkey::coordinator::test
