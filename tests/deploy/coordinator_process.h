// Runs the real hotkey-coordinator binary as a child process on loopback for the deploy tests:
// a temporary data directory, a kernel-chosen port (read back from the "listening" log line),
// tokens in the environment, SIGTERM on stop. One object per process; not thread-safe.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hotkey::deploy_test {

// A directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Where the coordinator under test is: $HOTKEY_COORDINATOR_BIN, else the build's bin dir.
std::string coordinator_binary();

class CoordinatorProcess {
 public:
  static constexpr const char* kOperatorToken = "deploy-test-operator-token";
  static constexpr const char* kProducerToken = "deploy-test-producer-token";

  // Starts `binary --listen 127.0.0.1:0 --data data_dir` with both tokens in the environment
  // and waits (deadline: 30 s) until it logs the port it listens on. Returns nullptr and sets
  // *error (including the process's log) when it exits or never gets there.
  static std::unique_ptr<CoordinatorProcess> start(const std::string& binary,
                                                   const std::filesystem::path& data_dir,
                                                   const std::filesystem::path& log_file,
                                                   std::string* error);

  // Runs the binary to completion (for start-up failures); returns its exit status, or -1 if
  // it was still running after 30 s (then it is killed). *output receives its log.
  static int run_to_exit(const std::string& binary, const std::vector<std::string>& args,
                         const std::filesystem::path& log_file, std::string* output);

  ~CoordinatorProcess();
  CoordinatorProcess(const CoordinatorProcess&) = delete;
  CoordinatorProcess& operator=(const CoordinatorProcess&) = delete;

  int port() const { return port_; }
  std::string log() const;

  // SIGTERM, then waits up to 30 s (SIGKILL after that). Returns the exit status, or -1 when
  // the process had to be killed or died from a signal.
  int stop();

 private:
  CoordinatorProcess(pid_t pid, std::filesystem::path log_file)
      : pid_(pid), log_file_(std::move(log_file)) {}
  static pid_t spawn(const std::string& binary, const std::vector<std::string>& args,
                     const std::filesystem::path& log_file);

  pid_t pid_ = -1;
  int port_ = 0;
  std::filesystem::path log_file_;
};

}  // namespace hotkey::deploy_test
