// Fuzz target: the coordinator's JSON config file parser (apply_config_json, then the same
// validate() the command line runs). Any input is either applied and valid or rejected with
// std::invalid_argument naming the setting; anything else (a JSON library exception escaping,
// a crash, a sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "config.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  hotkey::coordinator::CoordinatorConfig config;
  config.data_dir = "/nonexistent-fuzz-data-dir";
  try {
    hotkey::coordinator::apply_config_json(config, input);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  // Every per-topic section was validated as it was applied; the result must agree.
  config.defaults.validate();
  for (const auto& [topic, settings] : config.topic_overrides) {
    settings.validate();
    HOTKEY_FUZZ_CHECK(&config.settings_for(topic) == &settings);
  }
  // Applying the same document to a fresh config gives the same answer (no hidden state).
  hotkey::coordinator::CoordinatorConfig again;
  hotkey::coordinator::apply_config_json(again, input);
  HOTKEY_FUZZ_CHECK(again.topic_overrides.size() == config.topic_overrides.size());
  HOTKEY_FUZZ_CHECK(again.operator_tokens == config.operator_tokens);
  try {
    config.validate();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
