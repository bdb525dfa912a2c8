// The document `hotkeyctl import` applies (what `hotkeyctl export` writes), parsed and checked
// as a whole before anything is sent. Split from the HTTP side so it can be fuzzed (fuzz/).
// Pure functions, safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace hotkeyctl {

inline constexpr const char* kExportFormat = "hotkey-operator-state/1";

// One operator call the import makes: POST /v1/topics/<topic>/pins (what "pin") or /denies.
struct ImportOp {
  std::string topic;
  std::string what;   // "pin" or "deny"
  std::string label;  // the key, printable on one line
  nlohmann::json body;
};

// Every change in `text`, denies before pins per topic. Throws UsageError naming `source` and
// the first offending field when the document is not a valid export.
std::vector<ImportOp> parse_import_document(std::string_view text, const std::string& source);

}  // namespace hotkeyctl
