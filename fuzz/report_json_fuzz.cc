// Fuzz target: the JSON report decoder the coordinator runs on every POST /v1/reports body.
// Any input either decodes to a report that survives validation and both encoders' round trips,
// or raises DecodeError; any other exception, crash or sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "hotkey/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  hotkey::Report report;
  try {
    report = hotkey::parse_report_json(input);
  } catch (const hotkey::DecodeError&) {
    return 0;
  }
  hotkey::validate_report(report);
  HOTKEY_FUZZ_CHECK(hotkey::parse_report_json(hotkey::report_to_json(report)) == report);
  HOTKEY_FUZZ_CHECK(hotkey::decode_report_binary(hotkey::encode_report_binary(report)) == report);
  (void)hotkey::report_sketch(report);
  return 0;
}
