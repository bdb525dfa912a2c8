#include "hotkey/report.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "hotkey/key_codec.h"
#include "json_fields.h"

namespace hotkey {
namespace {

using json_fields::fail;
using json_fields::index;

constexpr std::string_view kBinaryMagic = "HKR";
constexpr uint8_t kBinaryVersion = 1;

void validate_id(const std::string& value, const std::string& path, size_t max_bytes) {
  if (value.empty()) fail(path, "must not be empty");
  if (value.size() > max_bytes) {
    fail(path, "longer than " + std::to_string(max_bytes) + " bytes");
  }
  if (!is_valid_utf8(value)) fail(path, "must be valid UTF-8");
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f) fail(path, "must not contain control characters");
  }
}

// ---- binary form helpers ----

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
  void bytes(std::string_view s, std::string_view what) {
    if (s.size() > std::numeric_limits<uint32_t>::max()) {
      throw std::invalid_argument(std::string(what) + ": too long for the binary report form");
    }
    u32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }

 private:
  std::string& out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  size_t remaining() const { return in_.size() - pos_; }
  uint8_t u8(const char* what) {
    need(1, what);
    return static_cast<uint8_t>(in_[pos_++]);
  }
  uint32_t u32(const char* what) {
    need(4, what);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(in_[pos_ + i])} << (8 * i);
    pos_ += 4;
    return v;
  }
  uint64_t u64(const char* what) {
    need(8, what);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(in_[pos_ + i])} << (8 * i);
    pos_ += 8;
    return v;
  }
  // A length-prefixed byte string of at most max_len bytes, checked before copying.
  // `what` (with `[item]` when item is not kNoItem) names the field only in messages: nothing
  // is formatted per call on the good path.
  static constexpr size_t kNoItem = std::numeric_limits<size_t>::max();
  std::string bytes(const char* what, uint64_t max_len, size_t item = kNoItem,
                    const char* member = "") {
    if (remaining() < 4) need(4, name(what, item, member).c_str());
    uint32_t len = u32(what);
    if (len > max_len) {
      fail(name(what, item, member), "length " + std::to_string(len) + " exceeds the limit of " +
                                         std::to_string(max_len) + " bytes");
    }
    if (remaining() < len) need(len, name(what, item, member).c_str());
    std::string s(in_.substr(pos_, len));
    pos_ += len;
    return s;
  }
  static std::string name(const char* what, size_t item, const char* member) {
    return item == kNoItem ? std::string(what) : index(what, item) + member;
  }
  // Checks that `count` elements of `elem_size` bytes each can still be present before the
  // caller reserves memory for them.
  void need_elements(uint64_t count, size_t elem_size, const char* what) {
    if (count > remaining() / elem_size) {
      throw DecodeError(std::string("binary report truncated in ") + what);
    }
  }
  void need(size_t n, const char* what) {
    if (remaining() < n) throw DecodeError(std::string("binary report truncated in ") + what);
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace

bool valid_topic_name(std::string_view topic) noexcept {
  if (topic.empty() || topic.size() > 249) return false;
  for (char c : topic) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Space-Saving's minimum is the bound for every unmonitored key: the smallest count once the
// summary is full, zero before. Anything else would make merges unsound.
static void check_sketch_min(const Report& report, uint64_t smallest) {
  const bool full = report.items.size() == report.sketch_capacity;
  if (full && report.sketch_min != smallest) {
    fail("sketch.min", "must equal the smallest item count (" + std::to_string(smallest) +
                           ") when the sketch is full");
  }
  if (!full && report.sketch_min != 0) {
    fail("sketch.min", "must be 0 while the sketch holds fewer items than its capacity");
  }
}

void validate_report(const Report& report, const ReportLimits& limits) {
  validate_id(report.producer, "producer", limits.max_id_bytes);
  if (report.topic.size() > limits.max_id_bytes || !valid_topic_name(report.topic)) {
    fail("topic", "must be 1-" + std::to_string(std::min<size_t>(249, limits.max_id_bytes)) +
                      " characters of [A-Za-z0-9._-]");
  }
  if (report.partitions < 1 || report.partitions > limits.max_partitions) {
    fail("partitions", "must be in [1, " + std::to_string(limits.max_partitions) + "], got " +
                           std::to_string(report.partitions));
  }
  if (to_string(report.hash) == "unknown") fail("hash", "unknown hash family");
  if (!valid_separator(report.separator)) {
    fail("separator",
         "must be 1-" + std::to_string(kMaxSeparatorBytes) + " bytes with no decimal digit");
  }
  if (report.window_ms == 0) fail("window_ms", "must be >= 1");
  if (!(report.sample_rate >= kMinSampleRate && report.sample_rate <= 1)) {
    fail("sample_rate", "must be in [1e-06, 1]");
  }
  if (report.partition_counts.size() != static_cast<size_t>(report.partitions)) {
    fail("partition_counts", "has " + std::to_string(report.partition_counts.size()) +
                                 " entries, must have one per partition (" +
                                 std::to_string(report.partitions) + ")");
  }
  // Counts consistent with totals: a record is counted on its partition at most once (one the
  // producer could not place yet counts in total only), and the sketch saw at most every record.
  uint64_t sum = 0;
  for (uint64_t c : report.partition_counts) {
    if (c > report.total - sum) {
      fail("partition_counts", "sum exceeds total (" + std::to_string(report.total) + ")");
    }
    sum += c;
  }
  if (report.sketch_total > report.total) {
    fail("sketch.total", "exceeds total (" + std::to_string(report.total) + ")");
  }
  if (report.sketch_capacity < 1 || report.sketch_capacity > SpaceSaving::kMaxCapacity) {
    fail("sketch.capacity", "must be in [1, " + std::to_string(SpaceSaving::kMaxCapacity) + "]");
  }
  if (report.items.size() > limits.max_items) {
    throw LimitError("sketch.items: has " + std::to_string(report.items.size()) +
                     " elements, at most max_items=" + std::to_string(limits.max_items) +
                     " allowed");
  }
  if (report.items.size() > report.sketch_capacity) {
    fail("sketch.items", "has more items (" + std::to_string(report.items.size()) +
                             ") than sketch.capacity (" + std::to_string(report.sketch_capacity) +
                             ")");
  }
  // Duplicate keys: an open-addressing table of item indexes (one allocation per report
  // instead of a node per key).
  size_t slots = 8;
  while (slots < 2 * report.items.size()) slots *= 2;
  constexpr uint32_t kFree = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> seen(slots, kFree);
  uint64_t smallest = std::numeric_limits<uint64_t>::max();
  for (size_t i = 0; i < report.items.size(); ++i) {
    const ReportItem& item = report.items[i];
    // The field path is formatted only for a failure (this loop runs for every entry ingested).
    auto path = [i](const char* member) { return index("sketch.items", i) + member; };
    if (item.key.size() > limits.max_key_bytes) {
      fail(path(".key"), "key longer than " + std::to_string(limits.max_key_bytes) + " bytes");
    }
    if (item.count == 0) fail(path(".count"), "must be >= 1");
    if (item.error > item.count) fail(path(".error"), "must not exceed count");
    if (item.count > report.sketch_total) fail(path(".count"), "exceeds sketch.total");
    for (size_t at = std::hash<std::string_view>{}(item.key) & (slots - 1);;
         at = (at + 1) & (slots - 1)) {
      if (seen[at] == kFree) {
        seen[at] = static_cast<uint32_t>(i);
        break;
      }
      if (report.items[seen[at]].key == item.key) {
        fail(path(".key"), "duplicate of " + index("sketch.items", seen[at]));
      }
    }
    smallest = std::min(smallest, item.count);
  }
  check_sketch_min(report, smallest);
}

std::string report_to_json(const Report& report) {
  nlohmann::ordered_json doc;
  doc["producer"] = report.producer;
  doc["topic"] = report.topic;
  doc["partitions"] = report.partitions;
  doc["hash"] = std::string(to_string(report.hash));
  doc["separator"] = report.separator;
  doc["window_ms"] = report.window_ms;
  doc["sample_rate"] = report.sample_rate;
  doc["total"] = report.total;
  doc["partition_counts"] = report.partition_counts;
  doc["seq"] = report.seq;
  doc["sent_at_ms"] = report.sent_at_ms;
  doc["list_version"] = report.list_version;
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  for (const ReportItem& item : report.items) {
    nlohmann::ordered_json j;
    json_fields::write_key(j, item.key);
    j["count"] = item.count;
    j["error"] = item.error;
    items.push_back(std::move(j));
  }
  auto& sketch = doc["sketch"];
  sketch["capacity"] = report.sketch_capacity;
  sketch["min"] = report.sketch_min;
  sketch["total"] = report.sketch_total;
  sketch["items"] = std::move(items);
  return json_fields::dump(doc, "report");
}

namespace {

// The common item shape, {"key": "<text>", "count": N, "error": N} (any member order, nothing
// else), read without formatting field paths: this runs for every entry ingested. False for
// anything else, which the caller re-reads with the checked, path-naming helpers.
bool fast_item(const json_fields::Json& j, size_t max_key_bytes, ReportItem& out) {
  if (!j.is_object() || j.size() != 3) return false;
  const json_fields::Json* key = nullptr;
  const json_fields::Json* count = nullptr;
  const json_fields::Json* error = nullptr;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    if (name == "key") {
      key = &it.value();
    } else if (name == "count") {
      count = &it.value();
    } else if (name == "error") {
      error = &it.value();
    }
  }
  if (!key || !count || !error || !key->is_string() || !count->is_number_unsigned() ||
      !error->is_number_unsigned()) {
    return false;
  }
  const auto& text = key->get_ref<const std::string&>();
  if (text.size() > max_key_bytes) return false;
  out.key = text;
  out.count = count->get<uint64_t>();
  out.error = error->get<uint64_t>();
  return true;
}

}  // namespace

Report parse_report_json(std::string_view text, const ReportLimits& limits) {
  using namespace json_fields;
  // Counts sketch.items while the parser reads them: a report over max_items is refused at its
  // first extra item, before the rest is parsed, built into a document and validated.
  std::array<std::string, kMaxDepth + 1> key_at{};
  uint64_t items_seen = 0;
  auto count_items = [&](int depth, Json::parse_event_t event, const Json& parsed) {
    if (depth < 1 || depth > kMaxDepth) return;
    const auto d = static_cast<size_t>(depth);
    if (event == Json::parse_event_t::key) {
      key_at[d] = parsed.is_string() ? parsed.get<std::string>() : std::string();
      return;
    }
    // An element of the array at depth 2 under "sketch"."items" starts at depth 3.
    const bool starts_element = event == Json::parse_event_t::object_start ||
                                event == Json::parse_event_t::array_start ||
                                event == Json::parse_event_t::value;
    if (depth == 3 && starts_element && key_at[1] == "sketch" && key_at[2] == "items" &&
        ++items_seen > limits.max_items) {
      throw LimitError("sketch.items: more than " + std::to_string(limits.max_items) +
                       " elements, at most max_items=" + std::to_string(limits.max_items) +
                       " allowed");
    }
  };
  const Json doc = parse_object(text, "report", count_items);
  Report r;
  r.producer = as_string(require(doc, "", "producer"), "producer");
  r.topic = as_string(require(doc, "", "topic"), "topic");
  r.partitions = static_cast<int32_t>(
      as_u64(require(doc, "", "partitions"), "partitions",
             static_cast<uint64_t>(std::max(limits.max_partitions, int32_t{1}))));
  r.hash = as_hash(require(doc, "", "hash"), "hash");
  if (const Json* v = find(doc, "separator")) r.separator = as_string(*v, "separator");
  r.window_ms = as_u32(require(doc, "", "window_ms"), "window_ms");
  r.sample_rate = as_double(require(doc, "", "sample_rate"), "sample_rate");
  r.total = as_u64(require(doc, "", "total"), "total");
  const Json& counts = as_array(require(doc, "", "partition_counts"), "partition_counts",
                                static_cast<size_t>(std::max(limits.max_partitions, 0)));
  r.partition_counts.reserve(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    r.partition_counts.push_back(as_u64(counts[i], index("partition_counts", i)));
  }
  if (const Json* v = find(doc, "seq")) r.seq = as_u64(*v, "seq");
  if (const Json* v = find(doc, "sent_at_ms")) r.sent_at_ms = as_nonneg_i64(*v, "sent_at_ms");
  if (const Json* v = find(doc, "list_version")) r.list_version = as_u64(*v, "list_version");

  const Json& sketch = as_object(require(doc, "", "sketch"), "sketch");
  r.sketch_capacity =
      as_u32(require(sketch, "sketch", "capacity"), "sketch.capacity", SpaceSaving::kMaxCapacity);
  r.sketch_min = as_u64(require(sketch, "sketch", "min"), "sketch.min");
  const Json& items =
      as_array(require(sketch, "sketch", "items"), "sketch.items", limits.max_items);
  r.items.reserve(items.size());
  uint64_t count_sum = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const Json& j = items[i];
    ReportItem item;
    if (!fast_item(j, limits.max_key_bytes, item)) {
      // Not the common shape: the checked path says exactly what is wrong.
      const std::string path = index("sketch.items", i);
      as_object(j, path);
      item.key = read_key(j, path, limits.max_key_bytes);
      item.count = as_u64(require(j, path, "count"), path + ".count");
      item.error = as_u64(require(j, path, "error"), path + ".error");
    }
    count_sum = count_sum > std::numeric_limits<uint64_t>::max() - item.count
                    ? std::numeric_limits<uint64_t>::max()
                    : count_sum + item.count;
    r.items.push_back(std::move(item));
  }
  // Older producers may omit the sketch's own total; the items' counts are then the weight
  // it has seen as far as the summary can tell.
  if (const Json* v = find(sketch, "total")) {
    r.sketch_total = as_u64(*v, "sketch.total");
  } else {
    r.sketch_total = std::min(count_sum, r.total);
  }
  validate_report(r, limits);
  return r;
}

std::string encode_report_binary(const Report& report) {
  std::string out;
  out.reserve(96 + report.producer.size() + report.topic.size() +
              8 * report.partition_counts.size() + 24 * report.items.size());
  out.append(kBinaryMagic);
  Writer w(out);
  w.u8(kBinaryVersion);
  w.bytes(report.producer, "producer");
  w.bytes(report.topic, "topic");
  w.u32(static_cast<uint32_t>(report.partitions));
  w.u8(static_cast<uint8_t>(report.hash));
  w.bytes(report.separator, "separator");
  w.u32(report.window_ms);
  w.u64(std::bit_cast<uint64_t>(report.sample_rate));
  w.u64(report.total);
  w.u64(report.seq);
  w.u64(static_cast<uint64_t>(report.sent_at_ms));
  w.u64(report.list_version);
  w.u32(static_cast<uint32_t>(report.partition_counts.size()));
  for (uint64_t c : report.partition_counts) w.u64(c);
  w.u32(report.sketch_capacity);
  w.u64(report.sketch_min);
  w.u64(report.sketch_total);
  w.u32(static_cast<uint32_t>(report.items.size()));
  for (const ReportItem& item : report.items) {
    w.bytes(item.key, "sketch item key");
    w.u64(item.count);
    w.u64(item.error);
  }
  return out;
}

Report decode_report_binary(std::string_view bytes, const ReportLimits& limits) {
  if (bytes.size() < kBinaryMagic.size() + 1)
    throw DecodeError("binary report truncated in header");
  if (bytes.substr(0, kBinaryMagic.size()) != kBinaryMagic) {
    throw DecodeError("binary report: bad magic (expected \"HKR\")");
  }
  if (static_cast<uint8_t>(bytes[kBinaryMagic.size()]) != kBinaryVersion) {
    throw DecodeError("binary report: unsupported format version " +
                      std::to_string(static_cast<uint8_t>(bytes[kBinaryMagic.size()])) +
                      " (this build reads version " + std::to_string(kBinaryVersion) + ")");
  }
  Reader in(bytes.substr(kBinaryMagic.size() + 1));
  Report r;
  r.producer = in.bytes("producer", limits.max_id_bytes);
  r.topic = in.bytes("topic", limits.max_id_bytes);
  uint32_t partitions = in.u32("partitions");
  if (partitions < 1 || partitions > static_cast<uint32_t>(std::max(limits.max_partitions, 1))) {
    fail("partitions", "must be in [1, " + std::to_string(limits.max_partitions) + "], got " +
                           std::to_string(partitions));
  }
  r.partitions = static_cast<int32_t>(partitions);
  uint8_t hash = in.u8("hash");
  if (hash > static_cast<uint8_t>(HashFamily::kFnv1a)) {
    fail("hash", "unknown hash family code " + std::to_string(hash));
  }
  r.hash = static_cast<HashFamily>(hash);
  r.separator = in.bytes("separator", kMaxSeparatorBytes);
  r.window_ms = in.u32("window_ms");
  r.sample_rate = std::bit_cast<double>(in.u64("sample_rate"));
  r.total = in.u64("total");
  r.seq = in.u64("seq");
  uint64_t sent_at = in.u64("sent_at_ms");
  if (sent_at > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail("sent_at_ms", "must be a non-negative integer");
  }
  r.sent_at_ms = static_cast<int64_t>(sent_at);
  r.list_version = in.u64("list_version");
  uint32_t n_counts = in.u32("partition_counts");
  if (n_counts != partitions) {
    fail("partition_counts", "has " + std::to_string(n_counts) +
                                 " entries, must have one per partition (" +
                                 std::to_string(partitions) + ")");
  }
  in.need_elements(n_counts, 8, "partition_counts");
  r.partition_counts.reserve(n_counts);
  for (uint32_t i = 0; i < n_counts; ++i) r.partition_counts.push_back(in.u64("partition_counts"));
  r.sketch_capacity = in.u32("sketch.capacity");
  r.sketch_min = in.u64("sketch.min");
  r.sketch_total = in.u64("sketch.total");
  uint32_t n_items = in.u32("sketch.items");
  if (n_items > limits.max_items) {
    throw LimitError("sketch.items: has " + std::to_string(n_items) +
                     " elements, at most max_items=" + std::to_string(limits.max_items) +
                     " allowed");
  }
  // Each item takes at least 4 + 8 + 8 bytes.
  in.need_elements(n_items, 20, "sketch.items");
  r.items.reserve(n_items);
  for (uint32_t i = 0; i < n_items; ++i) {
    ReportItem item;
    item.key = in.bytes("sketch.items", limits.max_key_bytes, i, ".key");
    item.count = in.u64("sketch.items");
    item.error = in.u64("sketch.items");
    r.items.push_back(std::move(item));
  }
  if (in.remaining() != 0) {
    throw DecodeError("binary report: " + std::to_string(in.remaining()) +
                      " trailing bytes after the last item");
  }
  validate_report(r, limits);
  return r;
}

SpaceSaving report_sketch(const Report& report) {
  // The report was decoded (and validated) under the caller's limits, which may be wider than
  // the defaults. Only the sketch's own invariants are checked again here, once per item: the
  // per-item rules (count >= 1, error <= count, count <= total) and duplicate keys by
  // from_items, the capacity and minimum rules below.
  if (report.sketch_capacity < 1 || report.sketch_capacity > SpaceSaving::kMaxCapacity) {
    fail("sketch.capacity", "must be in [1, " + std::to_string(SpaceSaving::kMaxCapacity) + "]");
  }
  std::vector<SpaceSaving::ItemView> items;
  items.reserve(report.items.size());
  uint64_t smallest = std::numeric_limits<uint64_t>::max();
  for (const ReportItem& item : report.items) {
    items.push_back(SpaceSaving::ItemView{item.key, item.count, item.error});
    smallest = std::min(smallest, item.count);
  }
  check_sketch_min(report, smallest);
  try {
    return SpaceSaving::from_items(report.sketch_capacity, report.sketch_total, items);
  } catch (const DecodeError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw DecodeError(std::string("sketch: ") + e.what());
  }
}

}  // namespace hotkey
