// Several reports in one request body (POST /v1/reports/batch): one producer's round, every
// topic at once. The batch only frames already encoded reports, so each report keeps its own
// form and validation and a bad one does not spoil the others. Pure functions.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hotkey {

// Binary batch (Content-Type application/x-hotkey-report-batch): magic "HKB", version byte 1,
// u32 count, then count times (u32 length, one binary report as encode_report_binary writes
// it); integers little-endian. JSON batch (application/json): {"reports": [report, ...]}.
inline constexpr std::string_view kReportBatchBinaryContentType =
    "application/x-hotkey-report-batch";
// Reports per batch the coordinator accepts; clients split larger rounds.
inline constexpr size_t kMaxReportsPerBatch = 1024;

// Frames binary reports. std::invalid_argument for more than kMaxReportsPerBatch or a report
// over 4 GiB.
std::string encode_report_batch_binary(std::span<const std::string_view> reports);
// The framed reports, views into `body` (not decoded). DecodeError for a bad magic or
// version, truncation, trailing bytes or more than `max_reports`.
std::vector<std::string_view> split_report_batch_binary(std::string_view body,
                                                        size_t max_reports = kMaxReportsPerBatch);

// Joins JSON reports (each a JSON object, as report_to_json writes it) into a JSON batch.
std::string encode_report_batch_json(std::span<const std::string_view> reports);
// The reports of a JSON batch, each re-serialized as a JSON object for parse_report_json.
// DecodeError when the body is not {"reports": [...]} or holds more than `max_reports`.
std::vector<std::string> split_report_batch_json(std::string_view body,
                                                 size_t max_reports = kMaxReportsPerBatch);

// The per-report statuses of a batch answer ({"results": [{"status": N, ...}, ...]}), in
// order. DecodeError when the body is not such an answer.
std::vector<int> parse_report_batch_statuses(std::string_view answer);

}  // namespace hotkey
