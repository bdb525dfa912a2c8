// The service's side of the configuration (the core takes a CoordinatorConfig value, config.h):
// argv, the environment, the config file and the secret files, read into one. Throws
// std::invalid_argument with usage-quality messages.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config.h"

namespace hotkey::coordinator {

// One command-line flag (the cluster-mode ones: cluster_settings()). command_line_flags() drives
// parse_command_line, usage_text() (--help) and the command-line table of docs/CONFIGURATION.md
// (config_docs.h).
struct FlagInfo {
  const char* flag;
  const char* metavar;      // in the usage text; nullptr: the flag takes no value (--help ...)
  const char* doc_metavar;  // in docs/CONFIGURATION.md
  const char* env;          // the environment variable that sets the same, or nullptr
  // Applies one value (flag or environment); nullptr for --config and the help flags.
  void (*apply)(CoordinatorConfig&, const std::string& value);
  // Applied after the token files are read (the token flags win over the files' tokens); the
  // values of a repeatable flag are all applied, of the others the last one.
  bool after_token_files;
  const char* usage;  // --help text (continuation lines pre-indented)
  const char* doc;    // meaning, Markdown
  bool repeatable = false;
};
const std::vector<FlagInfo>& command_line_flags();

// The --help text, from command_line_flags() and cluster_settings().
std::string usage_text();

// Parses argv (flags override the file; the file is read first when --config is given) and
// the environment (HOTKEY_OPERATOR_TOKEN, HOTKEY_PRODUCER_TOKEN, HOTKEY_OPERATOR_TOKENS_FILE,
// HOTKEY_PRODUCER_TOKEN_FILE, HOTKEY_TLS_CERT, HOTKEY_TLS_KEY, HOTKEY_TLS_CLIENT_CA), then
// reads the token files and checks that the TLS files are readable. Returns std::nullopt for
// --help.
std::optional<CoordinatorConfig> parse_command_line(int argc, const char* const* argv);

// Reads the token files named in `config` into its token maps (see operator_tokens_file).
// Throws std::invalid_argument naming the file (never a token) when one is unreadable,
// malformed or accessible to other users.
void load_token_files(CoordinatorConfig& config);

}  // namespace hotkey::coordinator
