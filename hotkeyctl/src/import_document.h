// The document `hotkeyctl import` applies (what `hotkeyctl export` writes), parsed and checked
// as a whole before anything is sent. Split from the HTTP side so it can be fuzzed (fuzz/).
// Pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace hotkeyctl {

inline constexpr const char* kExportFormat = "hotkey-operator-state/1";

// One operator call the import makes: POST /v1/topics/<topic>/pins (what "pin"), /denies
// ("deny") or /policies ("policy").
struct ImportOp {
  std::string topic;
  std::string what;   // "pin", "deny" or "policy"
  std::string key;    // the key's bytes (a policy's prefix)
  std::string label;  // the key, printable on one line
  nlohmann::json body;
  // A pin's absolute deadline (ms since the epoch, from "expires_at_ms" or now + "ttl_s");
  // 0 for a pin without one and for denies.
  int64_t expires_at_ms = 0;
  // The pin's deadline had passed at `now_ms`: it is reported and not sent (re-importing an
  // old export must not bring back pins that expired since).
  bool expired = false;
};

// Every change in `text`, denies, then policies, then pins per topic; `now_ms` (wall clock, ms since the
// epoch) turns a pin's absolute "expires_at_ms" into the "ttl_s" the pin call takes. Throws
// UsageError naming `source` and the first offending field when the document is not a valid
// export.
std::vector<ImportOp> parse_import_document(std::string_view text, const std::string& source,
                                            int64_t now_ms);

}  // namespace hotkeyctl
