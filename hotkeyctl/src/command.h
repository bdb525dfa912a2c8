// hotkeyctl's subcommand table. A command is a name, its help text and a run function; adding
// one is one source file plus one entry in commands.cc.
#pragma once

#include <iosfwd>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hotkeyctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the command ran and found a problem
inline constexpr int kExitUsage = 2;    // bad flags, missing values, unreadable input

// Thrown for anything the user must fix in the command line or its input files; main prints
// the message and exits with kExitUsage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The streams a command writes to (std::cout/std::cerr in the binary).
struct Io {
  std::ostream& out;
  std::ostream& err;
};

// One subcommand. `run` gets the arguments after the command name (never --help: main
// handles that with `usage`).
struct Command {
  std::string_view name;
  std::string_view summary;  // one line for `hotkeyctl --help`
  std::string_view usage;    // the full `hotkeyctl NAME --help` text
  int (*run)(std::span<const std::string> args, Io io);
};

// Every command, in the order `hotkeyctl --help` lists them.
std::span<const Command> commands();

// Offline commands (offline_commands.cc, analyze_command.cc).
extern const Command kPartitionCommand;
extern const Command kSaltsCommand;
extern const Command kAnalyzeCommand;

}  // namespace hotkeyctl
