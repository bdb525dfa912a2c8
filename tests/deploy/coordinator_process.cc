#include "coordinator_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace hotkey::deploy_test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(30);
// Polling step for conditions with no event to wait on (a child's log file, its exit).
constexpr auto kPollStep = std::chrono::milliseconds(5);

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// waitpid with a deadline: the exit status, or nullopt while it still runs at the deadline.
std::optional<int> wait_exit(pid_t pid, Clock::time_point deadline) {
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return status;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(kPollStep);
  }
}

// The exit code, or -(signal number) for a process killed by a signal.
int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
}

// The port from the coordinator's {"event":"listening","port":N} log line, or 0.
int listening_port(const std::string& log) {
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("\"listening\"") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.value("event", "") == "listening" && j.contains("port") &&
        j["port"].is_number_integer()) {
      return j["port"].get<int>();
    }
  }
  return 0;
}

}  // namespace

TempDir::TempDir() {
  std::string templ = (std::filesystem::temp_directory_path() / "hotkey-deploy-XXXXXX").string();
  if (mkdtemp(templ.data()) == nullptr) {
    throw std::runtime_error(std::string("mkdtemp failed: ") + std::strerror(errno));
  }
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string coordinator_binary() {
  if (const char* env = std::getenv("HOTKEY_COORDINATOR_BIN"); env != nullptr && *env != '\0') {
    return env;
  }
  return std::string(HOTKEY_BIN_DIR) + "/hotkey-coordinator";
}

pid_t CoordinatorProcess::spawn(const std::string& binary, const std::vector<std::string>& args,
                                const std::filesystem::path& log_file) {
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "HOTKEY_OPERATOR_TOKEN=", 22) == 0 ||
        std::strncmp(*e, "HOTKEY_PRODUCER_TOKEN=", 22) == 0) {
      continue;
    }
    env_store.emplace_back(*e);
  }
  env_store.push_back(std::string("HOTKEY_OPERATOR_TOKEN=") + kOperatorToken);
  env_store.push_back(std::string("HOTKEY_PRODUCER_TOKEN=") + kProducerToken);
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);

  std::vector<std::string> argv_store{binary};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_store) argv.push_back(s.data());
  argv.push_back(nullptr);

  const int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    execve(binary.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  ::close(fd);
  return pid;
}

std::unique_ptr<CoordinatorProcess> CoordinatorProcess::start(const std::string& binary,
                                                              const std::filesystem::path& data_dir,
                                                              const std::filesystem::path& log_file,
                                                              std::string* error) {
  const pid_t pid =
      spawn(binary, {"--listen", "127.0.0.1:0", "--data", data_dir.string()}, log_file);
  if (pid < 0) {
    *error = "cannot start " + binary + ": " + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<CoordinatorProcess> proc(new CoordinatorProcess(pid, log_file));
  const auto deadline = Clock::now() + kDeadline;
  for (;;) {
    if (int port = listening_port(read_file(log_file)); port > 0) {
      proc->port_ = port;
      return proc;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      proc->pid_ = -1;
      *error = binary + " exited with status " + std::to_string(exit_code(status)) +
               " before listening; its log:\n" + read_file(log_file);
      return nullptr;
    }
    if (Clock::now() >= deadline) {
      *error =
          binary + " did not log a listening port within 30 s; its log:\n" + read_file(log_file);
      return nullptr;  // the destructor kills it
    }
    std::this_thread::sleep_for(kPollStep);
  }
}

int CoordinatorProcess::run_to_exit(const std::string& binary, const std::vector<std::string>& args,
                                    const std::filesystem::path& log_file, std::string* output) {
  const pid_t pid = spawn(binary, args, log_file);
  if (pid < 0) return -1;
  std::optional<int> status = wait_exit(pid, Clock::now() + kDeadline);
  if (!status) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  *output = read_file(log_file);
  return status ? exit_code(*status) : -1;
}

CoordinatorProcess::~CoordinatorProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string CoordinatorProcess::log() const { return read_file(log_file_); }

int CoordinatorProcess::stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  std::optional<int> status = wait_exit(pid_, Clock::now() + kDeadline);
  if (!status) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
  return status ? exit_code(*status) : -1;
}

}  // namespace hotkey::deploy_test
