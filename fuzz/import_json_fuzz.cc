// Fuzz target: the document `hotkeyctl import` reads (an operator's export file, possibly
// edited by hand). Any input either yields changes that are each a well-formed pin or deny
// call, or raises UsageError; any other exception, crash or sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "command.h"
#include "fuzz_check.h"
#include "hotkey/key_codec.h"
#include "hotkey/report.h"
#include "import_document.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<hotkeyctl::ImportOp> ops;
  try {
    // A fixed "now" keeps runs reproducible.
    ops = hotkeyctl::parse_import_document(input, "fuzz.json", int64_t{1'800'000'000'000});
  } catch (const hotkeyctl::UsageError&) {
    return 0;
  }
  for (const auto& op : ops) {
    HOTKEY_FUZZ_CHECK(hotkey::valid_topic_name(op.topic));
    HOTKEY_FUZZ_CHECK(op.what == "pin" || op.what == "deny");
    HOTKEY_FUZZ_CHECK(op.body.is_object());
    HOTKEY_FUZZ_CHECK(op.body.contains("key") != op.body.contains("key_b64"));
    std::string key;
    if (op.body.contains("key")) {
      key = op.body["key"].get<std::string>();
      HOTKEY_FUZZ_CHECK(hotkey::is_valid_utf8(key));
    } else {
      auto decoded = hotkey::base64_decode(op.body["key_b64"].get<std::string>());
      HOTKEY_FUZZ_CHECK(decoded.has_value());
      key = *decoded;
    }
    HOTKEY_FUZZ_CHECK(!key.empty());
    HOTKEY_FUZZ_CHECK(op.label == hotkey::printable_key(key));
    HOTKEY_FUZZ_CHECK(op.key == key);
    // A pin that will be sent with a deadline has one of at least a second; an expired one is
    // never sent and carries none.
    if (op.body.contains("ttl_s")) {
      HOTKEY_FUZZ_CHECK(op.what == "pin" && !op.expired && op.body["ttl_s"].get<int64_t>() >= 1);
    }
    HOTKEY_FUZZ_CHECK(!op.expired || (op.what == "pin" && op.expires_at_ms > 0));
    HOTKEY_FUZZ_CHECK(op.body["reason"].is_string() &&
                      !op.body["reason"].get<std::string>().empty());
    // The body must be sendable: strict UTF-8 JSON.
    (void)op.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  }
  return 0;
}
