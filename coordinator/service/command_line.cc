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

constexpr const char* kKafkaSetUsage =
    "  --kafka-set NAME=VALUE any librdkafka setting (repeatable), e.g.\n"
    "                         session.timeout.ms=6000\n";

void apply_cluster_env(ClusterConfig& c) {
  for (const ClusterSettingInfo& s : cluster_settings()) {
    if (s.env == nullptr) continue;
    if (const char* v = std::getenv(s.env); v && *v) s.set(c, s.name, v);
  }
}

bool is_cluster_flag(const std::string& flag) {
  if (flag == "--kafka-set") return true;
  for (const ClusterSettingInfo& s : cluster_settings()) {
    if (s.flag != nullptr && flag == s.flag) return true;
  }
  return false;
}

bool apply_cluster_flag(ClusterConfig& c, const std::string& flag, const std::string& value) {
  if (flag == "--kafka-set") {
    apply_cluster_setting(c, value);
    return true;
  }
  for (const ClusterSettingInfo& s : cluster_settings()) {
    if (s.flag != nullptr && flag == s.flag) {
      s.set(c, s.name, value);
      return true;
    }
  }
  return false;
}

std::string cluster_usage_text() {
  std::string out = "cluster mode (docs/CLUSTER.md):\n";
  for (const ClusterSettingInfo& s : cluster_settings()) {
    if (s.flag == nullptr) continue;
    std::string spec = std::string(s.flag) + " " + s.metavar;
    spec.resize(std::max<size_t>(spec.size(), 22), ' ');
    out += "  " + spec + " " + s.usage + "\n";
  }
  return out + kKafkaSetUsage;
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

namespace {

void apply_listen_flag(CoordinatorConfig& c, const std::string& v) { apply_listen(c, v); }
void apply_data_flag(CoordinatorConfig& c, const std::string& v) { c.data_dir = v; }
void apply_operator_token_flag(CoordinatorConfig& c, const std::string& v) {
  add_operator_token(c, v);
}
template <auto M>
void apply_string_flag(CoordinatorConfig& c, const std::string& v) {
  c.*M = v;
}

}  // namespace

const std::vector<FlagInfo>& command_line_flags() {
  static const std::vector<FlagInfo> all = {
      {"--listen", "HOST:PORT", "HOST:PORT", nullptr, &apply_listen_flag, false,
       "address to serve HTTP on (default 127.0.0.1:8470)",
       "address to serve HTTP (or HTTPS, with the TLS settings) on; default `127.0.0.1:8470`. "
       "Port `0` picks a free port (the `listening` log line says which). `[::1]:8470` for "
       "IPv6. A URL (`http://127.0.0.1:8470`) is refused as a usage error (exit 2). The binary "
       "does not read `HOTKEY_LISTEN`: the systemd unit and the container entrypoint pass it as "
       "this flag, which overrides `listen` in a config file ([OPERATIONS.md](OPERATIONS.md))."},
      {"--data", "DIR", "DIR", nullptr, &apply_data_flag, false,
       "RocksDB data directory (created when missing)",
       "RocksDB data directory, created when missing. **Required** (flag or `data_dir`). Like "
       "`HOTKEY_LISTEN`, `HOTKEY_DATA` is read only by the container entrypoint, which passes "
       "it as this flag."},
      {"--config", "FILE", "FILE", nullptr, nullptr, false,
       "JSON config file (docs/CONFIGURATION.md); flags win", "JSON config file (below)."},
      {"--operator-token", "SPEC", "[NAME=]TOKEN", "HOTKEY_OPERATOR_TOKEN",
       &apply_operator_token_flag, true,
       "operator bearer token, NAME=TOKEN (repeatable);\n"
       "                         env HOTKEY_OPERATOR_TOKEN works too",
       "an operator bearer token (≥ 8 bytes) and the name the audit log records (default name "
       "`operator`). Repeatable; the env var adds one more. Every configured token works, from "
       "every source (flags, env, `operator_tokens`, the token file): the name is only the "
       "audit label, so two tokens may share a name (rotation, [SECURITY.md](SECURITY.md)).",
       true},
      {"--producer-token", "TOK", "TOKEN", "HOTKEY_PRODUCER_TOKEN",
       &apply_string_flag<&CoordinatorConfig::producer_token>, true,
       "require this bearer token on reports and list reads;\n"
       "                         env HOTKEY_PRODUCER_TOKEN works too",
       "when set, reports and every `/v1` read need this bearer token (or an operator token)."},
      {"--operator-token-file", "FILE", "FILE", "HOTKEY_OPERATOR_TOKENS_FILE",
       &apply_string_flag<&CoordinatorConfig::operator_tokens_file>, false,
       "operator tokens, one NAME=TOKEN per line (mode 0600);\n"
       "                         env HOTKEY_OPERATOR_TOKENS_FILE",
       "operator tokens read from FILE at start: one `NAME=TOKEN` (or bare `TOKEN`, named "
       "`operator`) per line, `#` comments and blank lines ignored. Keeps tokens off the "
       "command line (`ps`). Refused unless only its owner (and at most its group, read-only) "
       "can access it: mode `0600` or `0640`."},
      {"--producer-token-file", "FILE", "FILE", "HOTKEY_PRODUCER_TOKEN_FILE",
       &apply_string_flag<&CoordinatorConfig::producer_token_file>, false,
       "the producer token (mode 0600); env HOTKEY_PRODUCER_TOKEN_FILE",
       "the producer token read from FILE (one token, one line); same mode rule. "
       "`--producer-token` wins when both are given."},
      {"--tls-cert", "FILE", "FILE", "HOTKEY_TLS_CERT",
       &apply_string_flag<&CoordinatorConfig::tls_cert_file>, false,
       "serve HTTPS with this PEM certificate chain (env HOTKEY_TLS_CERT)",
       "serve HTTPS with this PEM certificate (chain: leaf first). Needs `--tls-key`."},
      {"--tls-key", "FILE", "FILE", "HOTKEY_TLS_KEY",
       &apply_string_flag<&CoordinatorConfig::tls_key_file>, false,
       "... and this PEM private key (env HOTKEY_TLS_KEY)",
       "the certificate's PEM private key (unencrypted). Needs `--tls-cert`."},
      {"--tls-client-ca", "FILE", "FILE", "HOTKEY_TLS_CLIENT_CA",
       &apply_string_flag<&CoordinatorConfig::tls_client_ca_file>, false,
       "require client certificates signed by these CAs (mutual TLS;\n"
       "                         env HOTKEY_TLS_CLIENT_CA)",
       "mutual TLS: clients must present a certificate signed by a CA in this PEM file."},
      {"--help", nullptr, nullptr, nullptr, nullptr, false, "this text", "usage"},
      {"--help-config", nullptr, nullptr, nullptr, nullptr, false,
       "every config-file setting with its default and range",
       "every config-file setting with its default and accepted range"},
      {"--print-config-docs", nullptr, nullptr, nullptr, nullptr, false,
       "the setting tables of docs/CONFIGURATION.md (Markdown)",
       "the generated setting tables of this page (Markdown)"},
  };
  return all;
}

std::string usage_text() {
  std::string out =
      "usage: hotkey-coordinator --listen HOST:PORT --data DIR [--config FILE]\n"
      "                          [--operator-token [NAME=]TOKEN]... [--producer-token TOKEN]\n"
      "                          [--operator-token-file FILE] [--producer-token-file FILE]\n"
      "                          [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n"
      "\n";
  for (const FlagInfo& f : command_line_flags()) {
    std::string spec = f.flag;
    if (f.metavar != nullptr) spec += std::string(" ") + f.metavar;
    if (spec.size() > 22) {
      spec += "\n" + std::string(25, ' ');
    } else {
      spec.resize(23, ' ');
    }
    out += "  " + spec + f.usage + "\n";
  }
  return out + "\n" + cluster_usage_text();
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
