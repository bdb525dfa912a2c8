// hotkeyctl's remote operator commands: HTTP calls to a running coordinator at --url, printed
// as tables or JSON. remote_client.h reaches the coordinator and reads its answers
// (hotkey/api_model.h), table.h prints; the commands live in groups: read_commands.cc (list,
// top, show, cluster), operator_commands.cc (pin, unpin, deny, allow,
// policy, delete-topic, audit) and
// transfer_commands.cc (export, import).
#pragma once

#include "command.h"

namespace hotkeyctl {

// Exit codes of the remote commands besides kExitOk / kExitFailure (the coordinator refused)
// and kExitUsage; documented in docs/CLI.md and stable for scripts.
inline constexpr int kExitUnreachable = 3;  // no answer from --url (refused, timeout, bad host)
inline constexpr int kExitAuth = 4;         // 401/403: missing or wrong operator token
inline constexpr int kExitNotFound = 5;     // unknown topic, or no such pin / deny

extern const Command kListCommand;
extern const Command kTopCommand;
extern const Command kShowCommand;
extern const Command kPinCommand;
extern const Command kUnpinCommand;
extern const Command kDenyCommand;
extern const Command kAllowCommand;
extern const Command kPolicyCommand;
extern const Command kDeleteTopicCommand;
extern const Command kAuditCommand;
extern const Command kClusterCommand;
extern const Command kExportCommand;
extern const Command kImportCommand;

}  // namespace hotkeyctl
