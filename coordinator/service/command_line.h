// The service's side of the configuration (the core takes a CoordinatorConfig value, config.h):
// argv, the environment, the config file and the secret files, read into one. Throws
// std::invalid_argument with usage-quality messages.
#pragma once

#include <optional>

#include "config.h"

namespace hotkey::coordinator {

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
