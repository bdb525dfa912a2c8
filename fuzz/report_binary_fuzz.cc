// Fuzz target: the binary report decoder (Content-Type application/x-hotkey-report). Any input
// either decodes to a report whose re-encoding is byte-identical (the format has one encoding
// per report) and whose JSON form decodes to the same report, or raises DecodeError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "hotkey/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  hotkey::Report report;
  try {
    report = hotkey::decode_report_binary(input);
  } catch (const hotkey::DecodeError&) {
    return 0;
  }
  hotkey::validate_report(report);
  const std::string again = hotkey::encode_report_binary(report);
  HOTKEY_FUZZ_CHECK(hotkey::decode_report_binary(again) == report);
  HOTKEY_FUZZ_CHECK(hotkey::parse_report_json(hotkey::report_to_json(report)) == report);
  (void)hotkey::report_sketch(report);
  return 0;
}
