// The service's side of the configuration: reads the config file, the environment, argv and
// the secret files into a CoordinatorConfig (the core only takes the value).
#include "command_line.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace hotkey::coordinator {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

std::string read_file(const std::string& path, const std::string& what = "config file") {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read " + what + " '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("cannot read " + what + " '" + path + "'");
  return ss.str();
}

// A secret file must not be readable or writable by other users, nor writable by its group:
// anyone who can read it acts as an operator, anyone who can write it chooses the token.
std::string read_secret_file(const std::string& path, const std::string& setting) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    fail(setting + ": cannot read '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) fail(setting + ": '" + path + "' is not a regular file");
  if ((st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    fail(setting + ": '" + path + "' has mode " + mode +
         ": other users can read or change it; chmod 600 (or 640 for a trusted group)");
  }
  return read_file(path, setting);
}

std::string trim(std::string s) {
  while (!s.empty() &&
         (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) {
    s.pop_back();
  }
  size_t start = 0;
  while (start < s.size() && (s[start] == ' ' || s[start] == '\t')) ++start;
  return s.substr(start);
}

void check_readable(const std::string& path, const std::string& setting) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(setting + ": cannot read '" + path + "': " + std::strerror(errno));
}

}  // namespace

void load_token_files(CoordinatorConfig& c) {
  if (!c.operator_tokens_file.empty()) {
    std::istringstream lines(read_secret_file(c.operator_tokens_file, "operator_tokens_file"));
    std::string line;
    int n = 0, found = 0;
    while (std::getline(lines, line)) {
      ++n;
      line = trim(line);
      if (line.empty() || line[0] == '#') continue;
      try {
        add_operator_token(c, line);
      } catch (const std::invalid_argument& e) {
        fail("operator_tokens_file '" + c.operator_tokens_file + "' line " + std::to_string(n) +
             ": " + e.what());
      }
      ++found;
    }
    if (found == 0) {
      fail("operator_tokens_file '" + c.operator_tokens_file +
           "' holds no token (one NAME=TOKEN per line)");
    }
  }
  if (!c.producer_token_file.empty()) {
    std::string token = trim(read_secret_file(c.producer_token_file, "producer_token_file"));
    if (token.empty() || token.find_first_of(" \t\r\n") != std::string::npos) {
      fail("producer_token_file '" + c.producer_token_file + "' must hold one token on one line");
    }
    if (token.size() < 8) {
      fail("producer_token_file '" + c.producer_token_file +
           "': the token must be at least 8 bytes");
    }
    c.producer_token = token;
  }
}

std::optional<CoordinatorConfig> parse_command_line(int argc, const char* const* argv) {
  CoordinatorConfig c;
  // The values of each flag of command_line_flags(), in command-line order.
  std::map<std::string, std::vector<std::string>, std::less<>> given;
  std::vector<std::pair<std::string, std::string>> cluster_flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_inline = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline = true;
    }
    auto next = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argc) fail("option " + arg + " needs a value");
      return argv[++i];
    };
    if (arg == "-h") return std::nullopt;
    const auto flag = std::find_if(command_line_flags().begin(), command_line_flags().end(),
                                   [&](const FlagInfo& f) { return arg == f.flag; });
    if (flag != command_line_flags().end()) {
      if (flag->metavar == nullptr) return std::nullopt;  // --help, --help-config, ...
      given[flag->flag].push_back(next());
    } else if (is_cluster_flag(arg)) {
      cluster_flags.emplace_back(arg, next());
    } else {
      fail("unknown option '" + arg + "'");
    }
  }
  // Precedence: file < environment < flags; token flags also win over the token files.
  if (auto it = given.find("--config"); it != given.end()) {
    apply_config_json(c, read_file(it->second.back()));
  }
  apply_cluster_env(c.cluster);
  for (const auto& [flag, v] : cluster_flags) apply_cluster_flag(c.cluster, flag, v);
  for (const FlagInfo& f : command_line_flags()) {
    if (f.env == nullptr) continue;
    if (const char* env = std::getenv(f.env); env && *env) f.apply(c, env);
  }
  auto apply_flags = [&](bool after_token_files) {
    for (const FlagInfo& f : command_line_flags()) {
      auto it = given.find(f.flag);
      if (f.apply == nullptr || it == given.end() || f.after_token_files != after_token_files) {
        continue;
      }
      if (f.repeatable) {
        for (const std::string& v : it->second) f.apply(c, v);
      } else {
        f.apply(c, it->second.back());  // the last one wins
      }
    }
  };
  apply_flags(false);
  // Token files first, so a token given on the command line wins over the file's.
  load_token_files(c);
  apply_flags(true);
  if (c.data_dir.empty()) fail("--data DIR is required (or data_dir in the config file)");
  c.validate();
  if (c.tls()) {
    check_readable(c.tls_cert_file, "tls_cert_file");
    check_readable(c.tls_key_file, "tls_key_file");
    if (!c.tls_client_ca_file.empty()) check_readable(c.tls_client_ca_file, "tls_client_ca_file");
  }
  return c;
}

}  // namespace hotkey::coordinator
