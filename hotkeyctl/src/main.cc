// hotkeyctl: dispatches to the subcommand table (commands.cc).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "command.h"

namespace hotkeyctl {
namespace {

void print_overview(std::ostream& out) {
  out << "hotkeyctl: hot-key coordinator tool (partitions, salts, pre-launch analysis)\n\n"
         "usage: hotkeyctl COMMAND [FLAGS] [ARGS]\n"
         "       hotkeyctl COMMAND --help\n\ncommands:\n";
  for (const Command& c : commands()) {
    std::string name(c.name);
    name.resize(std::max<size_t>(name.size() + 2, 12), ' ');
    out << "  " << name << c.summary << "\n";
  }
  out << "\nExit codes: 0 success, 1 the command found a problem, 2 usage or input error;\n"
         "remote commands also 3 coordinator unreachable, 4 not authorized, 5 not found\n"
         "(docs/CLI.md).\n";
}

const Command* find_command(std::string_view name) {
  for (const Command& c : commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

bool wants_help(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_overview(std::cerr);
    return kExitUsage;
  }
  const std::string& first = args[0];
  if (first == "--help" || first == "-h") {
    print_overview(std::cout);
    return kExitOk;
  }
  if (first == "--version") {
    std::cout << "hotkeyctl " << HOTKEY_VERSION << "\n";
    return kExitOk;
  }
  if (first == "help") {
    if (args.size() == 1) {
      print_overview(std::cout);
      return kExitOk;
    }
    if (const Command* c = find_command(args[1])) {
      std::cout << c->usage;
      return kExitOk;
    }
    std::cerr << "hotkeyctl: unknown command '" << args[1] << "'; see 'hotkeyctl --help'\n";
    return kExitUsage;
  }
  const Command* command = find_command(first);
  if (command == nullptr) {
    std::cerr << "hotkeyctl: unknown command '" << first << "'; see 'hotkeyctl --help'\n";
    return kExitUsage;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (wants_help(rest)) {
    std::cout << command->usage;
    return kExitOk;
  }
  try {
    return command->run(rest, Io{std::cout, std::cerr});
  } catch (const UsageError& e) {
    std::cerr << "hotkeyctl " << command->name << ": " << e.what() << "\n"
              << "see 'hotkeyctl " << command->name << " --help'\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "hotkeyctl " << command->name << ": error: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace
}  // namespace hotkeyctl

int main(int argc, char** argv) {
  int rc = hotkeyctl::run(argc, argv);
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "hotkeyctl: cannot write output\n";
    return hotkeyctl::kExitFailure;
  }
  return rc;
}
