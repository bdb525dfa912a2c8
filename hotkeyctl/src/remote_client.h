// The remote commands' HTTP side: one coordinator reached at --url (with --token, --timeout,
// --cacert), its answers as hotkey/api_model.h values, and the mapping of every failure onto
// hotkeyctl's documented exit codes (remote_commands.h). Not thread-safe: one command at a time.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "command.h"
#include "flags.h"
#include "remote_commands.h"

namespace httplib {
class Client;
}  // namespace httplib

namespace hotkeyctl {

// A failed call that already knows its exit code and message.
struct CallFailure {
  int code;
  std::string message;
};

// A coordinator's answer with a 2xx status (a JSON object).
struct Reply {
  int status = 0;
  std::string body;
  nlohmann::json doc;  // null when the body is not JSON

  // The answer as an API value (hotkey/api_model.h); CallFailure when a field has the wrong
  // type (not a hotkey coordinator, or an incompatible version).
  template <typename T>
  T as() const {
    try {
      return doc.get<T>();
    } catch (const nlohmann::json::exception& e) {
      throw CallFailure{kExitFailure,
                        "the coordinator's answer does not have the documented "
                        "shape (is --url a hotkey coordinator?): " +
                            std::string(e.what())};
    }
  }
};

// One coordinator, reached over HTTP(S) at --url (env HOTKEY_URL).
class Remote {
 public:
  // Throws UsageError for a malformed --url, --timeout or --cacert.
  explicit Remote(const Flags& flags);
  ~Remote();
  Remote(const Remote&) = delete;
  Remote& operator=(const Remote&) = delete;

  // Sends the request; throws CallFailure for transport errors and error statuses.
  // `operator_call`: the call needs the operator token (exit 4 before sending when none).
  Reply call(const std::string& method, const std::string& path,
             const nlohmann::json* body = nullptr, bool operator_call = false);

  const std::string& url() const { return url_; }

 private:
  std::string url_;
  std::string token_;
  std::string prefix_;
  std::unique_ptr<httplib::Client> client_;
};

// Flags every remote command takes, followed by the command's own.
std::vector<FlagSpec> spec_with(std::initializer_list<FlagSpec> own);
// "90s", "30m", "2h", "1d", "1w" or plain seconds (--ttl); UsageError otherwise.
int64_t parse_duration_s(const std::string& text);
// The one KEY argument's bytes (--b64: the argument is base64).
std::string key_of(const Flags& flags, const std::string& arg);
// --reason TEXT, required and non-empty.
std::string reason_flag(const Flags& flags, const char* command);
// UsageError unless exactly `n` positional arguments were given.
void need_positional(const Flags& flags, size_t n, const char* usage);

std::string percent_encode(std::string_view s);
// ?key=... or ?key_b64=... for a key's bytes.
std::string key_query(std::string_view key);
// /v1/topics/TOPIC; UsageError (exit 2) when `topic` is not a Kafka topic name.
std::string topic_path(const std::string& topic);
// --url's authority: HOST, HOST:PORT or [IPv6]:PORT, with a port in 1-65535.
bool valid_authority(const std::string& authority);

// Parses the flags, reaches the coordinator and runs `body`; maps call failures onto the
// documented exit codes (usage errors go up to main, which prints them with exit code 2).
template <typename Body>
int remote_main(std::string_view name, std::span<const std::string> args, Io io,
                std::initializer_list<FlagSpec> own, Body body) {
  const std::vector<FlagSpec> spec = spec_with(own);
  Flags flags = Flags::parse(args, spec);
  Remote remote(flags);
  try {
    return body(flags, remote, io.out);
  } catch (const CallFailure& f) {
    io.err << "hotkeyctl " << name << ": " << f.message << '\n';
    return f.code;
  }
}

// The common flags' help, appended to every remote command's usage text.
#define HOTKEY_REMOTE_FLAGS                                                                  \
  "\n"                                                                                       \
  "  --url URL      coordinator address (env HOTKEY_URL, default http://127.0.0.1:8470)\n"   \
  "  --token TOKEN  operator token (env HOTKEY_TOKEN); needed to change or read the audit\n" \
  "                 (and for every read when the coordinator has a producer token)\n"        \
  "  --json         print the coordinator's JSON instead of a table\n"                       \
  "  --timeout S    seconds to wait for the coordinator (default 10)\n"                      \
  "  --cacert FILE  PEM CA certificate(s) to verify an https:// coordinator with\n"          \
  "                 (env HOTKEY_CACERT; default: the system trust store)\n"                  \
  "\n"                                                                                       \
  "Exit codes: 0 ok, 1 the coordinator refused, 2 usage, 3 coordinator unreachable,\n"       \
  "4 operator token missing or refused, 5 unknown topic or no such pin/deny.\n"

}  // namespace hotkeyctl
