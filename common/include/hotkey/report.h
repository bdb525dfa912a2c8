// A producer's report for one topic and one window: the model, its JSON form (CONTRACTS.md) and
// a compact binary form of the same content. Value types; the codecs are pure functions.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/partitioner.h"
#include "hotkey/space_saving.h"

namespace hotkey {

// Thrown by every decoder in this project for input that must be rejected; what() says which
// field is wrong and why, in words fit for an HTTP 400 body.
class DecodeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A DecodeError for input over a size limit (too many sketch items): the HTTP layer answers it
// with 413. The JSON and binary report decoders raise it before decoding the items.
class LimitError : public DecodeError {
 public:
  using DecodeError::DecodeError;
};

// Bounds every decoder enforces. Defaults are the coordinator's defaults.
struct ReportLimits {
  uint32_t max_items = 65536;       // sketch items per report
  uint32_t max_key_bytes = 4096;    // one key
  int32_t max_partitions = 100000;  // partitions and partition_counts size
  size_t max_id_bytes = 256;        // producer id, topic name
};

// The smallest sample_rate a report may carry: one record in a million feeds the sketch. Below
// it the 1/sample_rate scale stops meaning anything (1e-300 made shares of 9e9, a subnormal
// rate an infinite scale), and a producer sampling that sparsely reports no usable sketch.
inline constexpr double kMinSampleRate = 1e-6;

struct ReportItem {
  std::string key;
  uint64_t count = 0;
  uint64_t error = 0;
  bool operator==(const ReportItem&) const = default;
};

struct Report {
  std::string producer;  // stable producer id
  std::string topic;
  int32_t partitions = 0;  // partition count the producer saw in metadata
  HashFamily hash = HashFamily::kMurmur2;
  std::string separator = std::string(kDefaultSeparator);
  uint32_t window_ms = 0;                  // length of the window this report covers
  double sample_rate = 1.0;                // fraction of records fed to the sketch, [1e-6, 1]
  uint64_t total = 0;                      // keyed records sent in the window (all, not sampled)
  std::vector<uint64_t> partition_counts;  // records sent per partition (size == partitions,
                                           // summing to at most total)
  uint64_t seq = 0;                        // per-producer sequence number, grows by one
  int64_t sent_at_ms = 0;                  // producer wall clock, informational
  uint64_t list_version = 0;               // hot-key list version the producer routes with
  // The sketch: capacity, min and items (count, error) over the sampled keys.
  uint32_t sketch_capacity = 0;
  uint64_t sketch_min = 0;
  uint64_t sketch_total = 0;  // weight fed to the sketch (sampled records, <= total)
  std::vector<ReportItem> items;
  bool operator==(const Report&) const = default;
};

// Valid topic names: Kafka's rule, [A-Za-z0-9._-]{1,249}.
bool valid_topic_name(std::string_view topic) noexcept;

// Checks every field against the limits and the invariants (partition_counts size and sum <=
// total, sketch.total <= total, counts, error <= count, no duplicate keys, sample rate in
// [kMinSampleRate, 1], topic name). Throws DecodeError.
void validate_report(const Report& report, const ReportLimits& limits = {});

// JSON form. Unknown fields are ignored; missing optional fields take defaults.
std::string report_to_json(const Report& report);
Report parse_report_json(std::string_view json, const ReportLimits& limits = {});

// Binary form (Content-Type application/x-hotkey-report): magic "HKR", version byte, then
// little-endian fields and length-prefixed bytes. Rejects truncation and trailing bytes.
inline constexpr std::string_view kReportBinaryContentType = "application/x-hotkey-report";
std::string encode_report_binary(const Report& report);
Report decode_report_binary(std::string_view bytes, const ReportLimits& limits = {});

// The report's sketch as a SpaceSaving value (validated).
SpaceSaving report_sketch(const Report& report);

}  // namespace hotkey
