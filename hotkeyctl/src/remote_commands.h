// hotkeyctl's remote operator commands (list, top, show, pin, unpin, deny, allow, audit,
// export, import): HTTP calls to a running coordinator at --url, printed as tables or JSON.
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
extern const Command kDeleteTopicCommand;
extern const Command kAuditCommand;
extern const Command kClusterCommand;
extern const Command kExportCommand;
extern const Command kImportCommand;

}  // namespace hotkeyctl
