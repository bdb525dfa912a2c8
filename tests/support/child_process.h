// A program run as a child process by a test or benchmark: arguments, environment changes and
// redirections fixed before it starts; SIGKILLed and reaped by the destructor, so a failing
// assertion never leaves a process behind. One object per process; not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hotkey::test_support {

struct ChildSpec {
  std::string binary;             // path of the program (no PATH search)
  std::vector<std::string> args;  // after argv[0], which is `binary`
  // Changes to this process's environment: a value sets the variable, nullopt removes it.
  std::map<std::string, std::optional<std::string>> env;
  std::filesystem::path stdin_file;   // empty: /dev/null
  std::filesystem::path stdout_file;  // empty: inherited
  std::filesystem::path stderr_file;  // empty: the same file as stdout (or inherited)
  bool append = false;                // append to the output files instead of truncating them
};

// What a finished child returned: its exit code, 128 + the signal that killed it, or -1 when
// it was still running at the deadline (it is then killed).
inline constexpr int kStillRunning = -1;

class ChildProcess {
 public:
  // Starts the child; throws std::runtime_error when a file cannot be opened or fork fails
  // (a binary that cannot be executed exits with 127).
  explicit ChildProcess(const ChildSpec& spec);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // False once the child has exited (it is reaped; see exit_status()).
  bool running();
  // The exit status (as above) once the child has been reaped, else nullopt.
  std::optional<int> exit_status() const { return status_; }

  // Waits until the child exits, at most `deadline`: its status, or kStillRunning (the child
  // keeps running).
  int wait_exit(std::chrono::milliseconds deadline = std::chrono::seconds(60));
  // SIGTERM, then waits up to `deadline` (SIGKILL after it): the exit status, or kStillRunning
  // when it had to be killed.
  int terminate(std::chrono::milliseconds deadline = std::chrono::seconds(60));
  // SIGCONT + SIGKILL (a stopped child dies too) and reap.
  void kill9();
  void signal(int sig);  // e.g. SIGSTOP / SIGCONT; nothing once the child has exited

 private:
  void reaped(int raw_status);

  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Runs `spec` to completion (at most `deadline`, then it is killed): its exit status as above.
int run_to_exit(const ChildSpec& spec,
                std::chrono::milliseconds deadline = std::chrono::seconds(60));

// What a program run by run_capturing() returned and wrote.
struct Captured {
  int code = kStillRunning;  // as run_to_exit()
  std::string out;
  std::string err;
};

// Runs `spec` to completion with `stdin_text` as its input and its stdout and stderr captured
// through files in `dir` (files, not pipes: a large output can never block the child); the
// spec's own redirections are replaced.
Captured run_capturing(ChildSpec spec, const std::filesystem::path& dir,
                       const std::string& stdin_text = "",
                       std::chrono::milliseconds deadline = std::chrono::seconds(60));

// Runs `command` with /bin/sh -c; *output (when not null) receives its stdout, and its stderr
// too when `merge_stderr`. Returns the exit status as run_to_exit() (no deadline: for short
// commands such as openssl or hotkeyctl).
int run_shell(const std::string& command, std::string* output = nullptr, bool merge_stderr = true);

}  // namespace hotkey::test_support
