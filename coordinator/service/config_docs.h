// The settings tables rendered for people: --help-config and the generated tables of
// docs/CONFIGURATION.md (a test holds the page to them). Pure functions.
#pragma once

#include <string>

namespace hotkey::coordinator {

// Every config-file setting with its default, accepted range and meaning (--help-config);
// docs/CONFIGURATION.md lists the same (a test compares them).
std::string config_help_text();

// The setting tables of docs/CONFIGURATION.md (service, aggregation window, detection and
// planning, cluster mode) as Markdown, generated from config_settings() and
// cluster_settings(): `hotkey-coordinator --print-config-docs` prints it, and a test checks
// that the page holds exactly this text between its "generated" markers.
std::string config_docs_markdown();

}  // namespace hotkey::coordinator
