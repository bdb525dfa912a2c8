#include "support/coordinator_process.h"

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/temp_dir.h"

namespace hotkey::test_support {
namespace {

using Clock = std::chrono::steady_clock;
// Polling step for the log file (a child's log has no event to wait on).
constexpr auto kPollStep = std::chrono::milliseconds(10);

std::uintmax_t file_size_or_zero(const std::filesystem::path& p) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(p, ec);
  return ec ? 0 : n;
}

// The port of the last {"event":"listening","port":N} line of `log`, or 0.
int listening_port(const std::string& log) {
  int port = 0;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string_view line(log.data() + start, end - start);
    if (line.find("\"listening\"") != std::string_view::npos) {
      auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.value("event", "") == "listening" && j.contains("port") &&
          j["port"].is_number_integer()) {
        port = j["port"].get<int>();
      }
    }
    start = end + 1;
  }
  return port;
}

}  // namespace

std::string coordinator_binary() {
  if (const char* env = std::getenv("HOTKEY_COORDINATOR_BIN"); env != nullptr && *env != '\0') {
    return env;
  }
  return built_binary("hotkey-coordinator");
}

std::string built_binary(const std::string& name) {
  return std::string(HOTKEY_BIN_DIR) + "/" + name;
}

ChildSpec CoordinatorProcess::spec(const CoordinatorOptions& o) {
  ChildSpec s;
  s.binary = o.binary;
  s.args = {"--listen", o.listen, "--data", o.data.string()};
  if (!o.config.empty()) {
    s.args.push_back("--config");
    s.args.push_back(o.config.string());
  }
  s.args.insert(s.args.end(), o.extra_args.begin(), o.extra_args.end());
  s.env = o.env;
  s.stdout_file = o.log;
  s.append = o.append_log;
  return s;
}

CoordinatorProcess::CoordinatorProcess(CoordinatorOptions options)
    : options_(std::move(options)),
      log_offset_(options_.append_log ? file_size_or_zero(options_.log) : 0),
      child_(spec(options_)) {}

std::string CoordinatorProcess::log() const { return read_file(options_.log); }

int CoordinatorProcess::wait_port(std::chrono::milliseconds deadline) {
  const auto end = Clock::now() + deadline;
  for (;;) {
    const std::string all = log();
    if (all.size() > log_offset_) {
      if (int port = listening_port(all.substr(log_offset_)); port > 0) {
        port_ = port;
        return port;
      }
    }
    if (!child_.running()) {
      // It may have logged the line just before exiting.
      port_ = listening_port(log().substr(std::min(log_offset_, all.size())));
      return port_;
    }
    if (Clock::now() >= end) return 0;
    std::this_thread::sleep_for(kPollStep);
  }
}

void CoordinatorProcess::pause() { child_.signal(SIGSTOP); }
void CoordinatorProcess::resume() { child_.signal(SIGCONT); }

std::unique_ptr<CoordinatorProcess> start_coordinator(CoordinatorOptions options,
                                                      std::string* error,
                                                      std::chrono::milliseconds deadline) {
  auto proc = std::make_unique<CoordinatorProcess>(std::move(options));
  if (proc->wait_port(deadline) > 0) return proc;
  if (auto status = proc->exit_status()) {
    *error = proc->log_file().string() + ": the coordinator exited with status " +
             std::to_string(*status) + " before listening; its log:\n" + proc->log();
  } else {
    *error = "the coordinator did not log a listening port within " +
             std::to_string(deadline.count() / 1000) + " s; its log:\n" + proc->log();
  }
  return nullptr;  // the destructor kills it
}

}  // namespace hotkey::test_support
