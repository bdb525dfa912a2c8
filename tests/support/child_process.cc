#include "support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "support/temp_dir.h"

extern char** environ;

namespace hotkey::test_support {
namespace {

using Clock = std::chrono::steady_clock;
// Polling step for a child's exit (there is no event to wait on without SIGCHLD handling).
constexpr auto kPollStep = std::chrono::milliseconds(5);

int open_or_throw(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error("cannot open " + path.string() + ": " + std::strerror(errno));
  }
  return fd;
}

// `name` itself when it holds a '/', else the first executable $PATH entry/name (else `name`,
// which then fails to execute: exit status 127).
std::string resolve(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return name;
}

int decode_status(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return kStillRunning;
}

}  // namespace

ChildProcess::ChildProcess(const ChildSpec& spec) {
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    if (spec.env.count(name) == 0) env_store.push_back(entry);
  }
  for (const auto& [name, value] : spec.env) {
    if (value) env_store.push_back(name + "=" + *value);
  }
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);

  const std::string program = resolve(spec.binary);
  std::vector<std::string> argv_store{spec.binary};
  argv_store.insert(argv_store.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (auto& s : argv_store) argv.push_back(s.data());
  argv.push_back(nullptr);

  const int out_flags = O_WRONLY | O_CREAT | (spec.append ? O_APPEND : O_TRUNC);
  const int in_fd =
      open_or_throw(spec.stdin_file.empty() ? "/dev/null" : spec.stdin_file, O_RDONLY);
  const int out_fd = spec.stdout_file.empty() ? -1 : open_or_throw(spec.stdout_file, out_flags);
  int err_fd = out_fd;
  if (!spec.stderr_file.empty() && spec.stderr_file != spec.stdout_file) {
    err_fd = open_or_throw(spec.stderr_file, out_flags);
  }
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in_fd, STDIN_FILENO);
    if (out_fd >= 0) dup2(out_fd, STDOUT_FILENO);
    if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
    execve(program.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  const int fork_errno = errno;
  ::close(in_fd);
  if (out_fd >= 0) ::close(out_fd);
  if (err_fd >= 0 && err_fd != out_fd) ::close(err_fd);
  if (pid_ < 0) {
    throw std::runtime_error("cannot start " + spec.binary + ": " + std::strerror(fork_errno));
  }
}

ChildProcess::~ChildProcess() { kill9(); }

void ChildProcess::reaped(int raw_status) {
  pid_ = -1;
  status_ = decode_status(raw_status);
}

bool ChildProcess::running() {
  if (pid_ <= 0) return false;
  int raw = 0;
  const pid_t r = waitpid(pid_, &raw, WNOHANG);
  if (r == pid_) {
    reaped(raw);
  } else if (r < 0 && errno == ECHILD) {
    pid_ = -1;
  }
  return pid_ > 0;
}

int ChildProcess::wait_exit(std::chrono::milliseconds deadline) {
  const auto end = Clock::now() + deadline;
  while (running()) {
    if (Clock::now() >= end) return kStillRunning;
    std::this_thread::sleep_for(kPollStep);
  }
  return status_.value_or(kStillRunning);
}

int ChildProcess::terminate(std::chrono::milliseconds deadline) {
  if (pid_ <= 0) return status_.value_or(kStillRunning);
  ::kill(pid_, SIGTERM);
  if (wait_exit(deadline) == kStillRunning && pid_ > 0) {
    kill9();
    status_ = kStillRunning;
    return kStillRunning;
  }
  return status_.value_or(kStillRunning);
}

void ChildProcess::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  int raw = 0;
  if (waitpid(pid_, &raw, 0) == pid_) {
    reaped(raw);
  } else {
    pid_ = -1;
  }
}

void ChildProcess::signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

int run_to_exit(const ChildSpec& spec, std::chrono::milliseconds deadline) {
  ChildProcess child(spec);
  const int status = child.wait_exit(deadline);
  if (status == kStillRunning) child.kill9();
  return status;
}

Captured run_capturing(ChildSpec spec, const std::filesystem::path& dir,
                       const std::string& stdin_text, std::chrono::milliseconds deadline) {
  spec.stdin_file = dir / "stdin.txt";
  spec.stdout_file = dir / "stdout.txt";
  spec.stderr_file = dir / "stderr.txt";
  spec.append = false;
  std::ofstream(spec.stdin_file, std::ios::binary) << stdin_text;
  Captured c;
  c.code = run_to_exit(spec, deadline);
  c.out = read_file(spec.stdout_file);
  c.err = read_file(spec.stderr_file);
  return c;
}

int run_shell(const std::string& command, std::string* output, bool merge_stderr) {
  FILE* p = popen((merge_stderr ? command + " 2>&1" : command).c_str(), "r");
  if (p == nullptr) return kStillRunning;
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  const int raw = pclose(p);
  if (output != nullptr) *output = out;
  return raw < 0 ? kStillRunning : decode_status(raw);
}

}  // namespace hotkey::test_support
