// The real hotkey-coordinator binary as a child process on loopback, for tests and benchmarks:
// a data dir, an optional config file, the port read back from its {"event":"listening"} log
// line (so a kernel-chosen port has no pick-then-bind race), stop / kill -9 / pause, its log.
// One object per process run; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace hotkey::test_support {

// Where the coordinator under test is: $HOTKEY_COORDINATOR_BIN, else the build's bin dir.
std::string coordinator_binary();
// Another program of the build: HOTKEY_BIN_DIR/<name>.
std::string built_binary(const std::string& name);

struct CoordinatorOptions {
  std::filesystem::path data;    // --data
  std::filesystem::path log;     // its stdout and stderr
  std::filesystem::path config;  // --config when not empty
  std::string listen = "127.0.0.1:0";
  std::vector<std::string> extra_args;  // after --listen/--data/--config
  // Environment changes (e.g. HOTKEY_OPERATOR_TOKEN); nullopt removes a variable.
  std::map<std::string, std::optional<std::string>> env;
  // Keep what the log holds (a restart on the same log): wait_port() only reads the lines this
  // run writes.
  bool append_log = false;
  std::string binary = coordinator_binary();
};

class CoordinatorProcess {
 public:
  // Starts the process (does not wait: see wait_port()). Throws std::runtime_error when it
  // cannot be started at all.
  explicit CoordinatorProcess(CoordinatorOptions options);
  ~CoordinatorProcess() = default;  // kill -9 if still running
  CoordinatorProcess(const CoordinatorProcess&) = delete;
  CoordinatorProcess& operator=(const CoordinatorProcess&) = delete;

  // Waits until this run logs the port it listens on (at most `deadline`): the port, or 0 when
  // the process exited first (see exit_status()) or the deadline passed.
  int wait_port(std::chrono::milliseconds deadline = std::chrono::seconds(60));
  int port() const { return port_; }  // 0 before wait_port() found it
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const;
  const std::filesystem::path& log_file() const { return options_.log; }

  pid_t pid() const { return child_.pid(); }
  bool running() { return child_.running(); }
  std::optional<int> exit_status() const { return child_.exit_status(); }
  // Exit code, 128 + signal, or kStillRunning (see child_process.h).
  int wait_exit(std::chrono::milliseconds deadline = std::chrono::seconds(60)) {
    return child_.wait_exit(deadline);
  }
  int terminate(std::chrono::milliseconds deadline = std::chrono::seconds(60)) {
    return child_.terminate(deadline);
  }
  void kill9() { child_.kill9(); }
  void pause();   // SIGSTOP
  void resume();  // SIGCONT

 private:
  static ChildSpec spec(const CoordinatorOptions& o);

  CoordinatorOptions options_;
  std::uintmax_t log_offset_ = 0;  // where this run's lines start in the log
  ChildProcess child_;
  int port_ = 0;
};

// Starts the coordinator and waits for its port; nullptr (and *error with the log) when it
// exited or never listened within `deadline`.
std::unique_ptr<CoordinatorProcess> start_coordinator(
    CoordinatorOptions options, std::string* error,
    std::chrono::milliseconds deadline = std::chrono::seconds(60));

}  // namespace hotkey::test_support
