// hotkeyctl's remote operator commands (list, top, show, pin, unpin, deny, allow, audit,
// export, import): HTTP calls to a running coordinator, printed as tables or JSON.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace hotkey::ctl {

// Exit codes of the remote commands; documented in docs/CLI.md and stable for scripts.
enum RemoteExit : int {
  kExitOk = 0,
  kExitFailed = 1,       // the coordinator refused the request (4xx/5xx other than below)
  kExitUsage = 2,        // bad command line
  kExitUnreachable = 3,  // no answer from --url (connection refused, timeout, bad address)
  kExitAuth = 4,         // 401/403: missing or wrong operator token
  kExitNotFound = 5,     // unknown topic, or no such pin / deny
};

// The remote command names, in help order.
const std::vector<std::string_view>& remote_command_names();

// Runs one remote command. `args` are the words after the command name; options may appear
// anywhere among them. Reads HOTKEY_URL and HOTKEY_TOKEN from the environment. Returns a
// RemoteExit value. Safe to call from one thread at a time per stream pair.
int run_remote_command(std::string_view command, const std::vector<std::string>& args,
                       std::ostream& out, std::ostream& err);

// Usage text of the remote commands (for `hotkeyctl --help`).
std::string remote_usage();

}  // namespace hotkey::ctl
