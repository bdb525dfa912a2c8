// Fuzz target: the hot-key list decoder every client runs on GET /v1/hotkeys answers. A client
// must survive any coordinator (or man in the middle) answer: either a validated list that
// round-trips through list_to_json, or DecodeError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "hotkey/hotkey_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  hotkey::HotKeyList list;
  try {
    list = hotkey::parse_list_json(input);
  } catch (const hotkey::DecodeError&) {
    return 0;
  }
  hotkey::validate_list(list);
  HOTKEY_FUZZ_CHECK(hotkey::parse_list_json(hotkey::list_to_json(list)) == list);
  return 0;
}
