#include <array>

#include "command.h"
#include "remote_commands.h"

namespace hotkeyctl {

std::span<const Command> commands() {
  static const std::array kCommands = {
      &kPartitionCommand,
      &kSaltsCommand,
      &kAnalyzeCommand,
      // Remote operator commands (remote_commands.h).
      &kListCommand,
      &kTopCommand,
      &kShowCommand,
      &kPinCommand,
      &kUnpinCommand,
      &kDenyCommand,
      &kAllowCommand,
      &kPolicyCommand,
      &kDeleteTopicCommand,
      &kAuditCommand,
      &kClusterCommand,
      &kExportCommand,
      &kImportCommand,
  };
  // Pointers keep the table independent of the commands' static initialization order.
  static const auto kTable = [] {
    std::array<Command, kCommands.size()> table{};
    for (size_t i = 0; i < kCommands.size(); ++i) table[i] = *kCommands[i];
    return table;
  }();
  return kTable;
}

}  // namespace hotkeyctl
