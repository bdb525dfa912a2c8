// The report model: JSON and binary round trips with binary-safe keys, and every validation
// rule with the message a producer's operator would read.
#include "hotkey/report.h"

#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace hotkey {
namespace {

using nlohmann::json;

std::string all_bytes() {
  std::string s;
  for (int b = 0; b < 256; ++b) s.push_back(static_cast<char>(b));
  return s;
}

// A full sketch (items == capacity) with text, empty, binary and invalid-UTF-8 keys.
Report sample_report() {
  Report r;
  r.producer = "checkout-7f9c";
  r.topic = "orders.v1";
  r.partitions = 4;
  r.hash = HashFamily::kCrc32;
  r.separator = "::";
  r.window_ms = 10000;
  r.sample_rate = 0.25;
  r.total = 4000;
  r.partition_counts = {1000, 2000, 0, 1000};
  r.seq = 42;
  r.sent_at_ms = 1764470000123;
  r.list_version = 7;
  r.sketch_capacity = 4;
  r.sketch_total = 1000;
  r.items = {{"tenant-1", 600, 0},
             {all_bytes(), 200, 10},
             {std::string("\xc3\x28", 2), 110, 100},
             {"", 90, 90}};
  r.sketch_min = 90;
  return r;
}

json sample_json() { return json::parse(report_to_json(sample_report())); }

// Decoding `doc` must fail with exactly `message`.
void expect_rejected(const json& doc, const std::string& message) {
  try {
    parse_report_json(doc.dump());
    ADD_FAILURE() << "accepted: " << doc.dump() << "\nexpected: " << message;
  } catch (const DecodeError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(Report, JsonRoundTripKeepsBinaryKeys) {
  Report r = sample_report();
  std::string text = report_to_json(r);
  EXPECT_EQ(parse_report_json(text), r);
  json doc = json::parse(text);
  const auto& items = doc["sketch"]["items"];
  EXPECT_EQ(items[0]["key"], "tenant-1");
  EXPECT_FALSE(items[1].contains("key"));
  EXPECT_EQ(items[1]["key_b64"].get<std::string>().size(), 344u);
  EXPECT_EQ(items[2]["key_b64"], "wyg=");
  EXPECT_EQ(items[3]["key"], "");
}

TEST(Report, JsonUsesTheDesignFieldNames) {
  json doc = sample_json();
  for (const char* field :
       {"producer", "topic", "partitions", "hash", "separator", "window_ms", "sample_rate", "total",
        "partition_counts", "seq", "sent_at_ms", "list_version", "sketch"}) {
    EXPECT_TRUE(doc.contains(field)) << field;
  }
  for (const char* field : {"capacity", "min", "total", "items"}) {
    EXPECT_TRUE(doc["sketch"].contains(field)) << field;
  }
  EXPECT_EQ(doc["hash"], "crc32");
  EXPECT_EQ(doc["sample_rate"], 0.25);
}

TEST(Report, JsonOptionalFieldsTakeDefaultsAndUnknownFieldsAreIgnored) {
  json doc = sample_json();
  doc.erase("separator");
  doc.erase("seq");
  doc.erase("sent_at_ms");
  doc.erase("list_version");
  doc["sketch"].erase("total");
  doc["future_field"] = {{"anything", 1}};
  doc["sample_rate"] = 1;  // an integer is a number too
  Report r = parse_report_json(doc.dump());
  EXPECT_EQ(r.separator, "#");
  EXPECT_EQ(r.seq, 0u);
  EXPECT_EQ(r.sent_at_ms, 0);
  EXPECT_EQ(r.list_version, 0u);
  EXPECT_EQ(r.sketch_total, 1000u);  // sum of the item counts
  EXPECT_EQ(r.sample_rate, 1.0);
}

TEST(Report, BinaryRoundTripKeepsBinaryKeys) {
  Report r = sample_report();
  std::string bin = encode_report_binary(r);
  EXPECT_EQ(bin.substr(0, 4), std::string("HKR\x01", 4));
  EXPECT_EQ(decode_report_binary(bin), r);
  // Extreme but valid values survive too.
  r.total = std::numeric_limits<uint64_t>::max();
  r.sent_at_ms = std::numeric_limits<int64_t>::max();
  r.sample_rate = kMinSampleRate;
  r.partition_counts[0] = std::numeric_limits<uint64_t>::max() - 3000;
  EXPECT_EQ(decode_report_binary(encode_report_binary(r)), r);
  EXPECT_EQ(parse_report_json(report_to_json(r)), r);
}

TEST(Report, BinaryRejectsEveryTruncation) {
  std::string bin = encode_report_binary(sample_report());
  for (size_t len = 0; len < bin.size(); ++len) {
    EXPECT_THROW(decode_report_binary(std::string_view(bin).substr(0, len)), DecodeError)
        << "prefix of " << len << " bytes";
  }
  try {
    decode_report_binary(std::string_view(bin).substr(0, bin.size() - 1));
    ADD_FAILURE();
  } catch (const DecodeError& e) {
    EXPECT_EQ(std::string(e.what()), "binary report truncated in sketch.items");
  }
}

TEST(Report, BinaryRejectsTrailingBytesBadMagicAndVersion) {
  std::string bin = encode_report_binary(sample_report());
  auto message = [](const std::string& b) {
    try {
      decode_report_binary(b);
    } catch (const DecodeError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(bin + "x"), "binary report: 1 trailing bytes after the last item");
  std::string bad = bin;
  bad[0] = 'X';
  EXPECT_EQ(message(bad), "binary report: bad magic (expected \"HKR\")");
  bad = bin;
  bad[3] = 2;
  EXPECT_EQ(message(bad),
            "binary report: unsupported format version 2 (this build reads version 1)");
}

// Lengths and counts are checked against the limits and the bytes left before anything is
// allocated, so a 20-byte message cannot ask for gigabytes.
TEST(Report, BinaryRejectsOutOfRangeLengthsBeforeAllocating) {
  Report r = sample_report();
  std::string bin = encode_report_binary(r);
  auto patch_u32 = [](std::string b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
    return b;
  };
  auto message = [](const std::string& b) {
    try {
      decode_report_binary(b);
    } catch (const DecodeError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // producer length prefix sits right after the 4-byte header.
  EXPECT_EQ(message(patch_u32(bin, 4, 0xFFFFFFFFu)),
            "producer: length 4294967295 exceeds the limit of 256 bytes");
  size_t topic_at = 4 + 4 + r.producer.size();
  EXPECT_EQ(message(patch_u32(bin, topic_at, 1000)),
            "topic: length 1000 exceeds the limit of 256 bytes");
  size_t partitions_at = topic_at + 4 + r.topic.size();
  EXPECT_EQ(message(patch_u32(bin, partitions_at, 0)), "partitions: must be in [1, 100000], got 0");
  size_t hash_at = partitions_at + 4;
  std::string bad_hash = bin;
  bad_hash[hash_at] = 9;
  EXPECT_EQ(message(bad_hash), "hash: unknown hash family code 9");
  size_t counts_at = hash_at + 1 + 4 + r.separator.size() + 4 + 8 * 5;
  EXPECT_EQ(message(patch_u32(bin, counts_at, 3)),
            "partition_counts: has 3 entries, must have one per partition (4)");
  size_t n_items_at = counts_at + 4 + 8 * 4 + 4 + 8 + 8;
  EXPECT_EQ(message(patch_u32(bin, n_items_at, 0xFFFFFFFFu)),
            "sketch.items: has 4294967295 elements, at most max_items=65536 allowed");
  EXPECT_EQ(message(patch_u32(bin, n_items_at, 60000)), "binary report truncated in sketch.items");
  size_t first_key_at = n_items_at + 4;
  EXPECT_EQ(message(patch_u32(bin, first_key_at, 5000)),
            "sketch.items[0].key: length 5000 exceeds the limit of 4096 bytes");
}

TEST(Report, BinaryDecodeValidatesLikeJson) {
  Report r = sample_report();
  r.items[1].error = 201;
  try {
    decode_report_binary(encode_report_binary(r));
    ADD_FAILURE();
  } catch (const DecodeError& e) {
    EXPECT_EQ(std::string(e.what()), "sketch.items[1].error: must not exceed count");
  }
  r = sample_report();
  r.sample_rate = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(decode_report_binary(encode_report_binary(r)), DecodeError);
}

struct Rule {
  const char* name;
  std::function<void(json&)> mutate;
  std::string message;
};

TEST(Report, JsonValidationRulesNameTheField) {
  const std::vector<Rule> rules = {
      {"producer missing", [](json& d) { d.erase("producer"); }, "producer: is required"},
      {"producer null", [](json& d) { d["producer"] = nullptr; }, "producer: is required"},
      {"producer type", [](json& d) { d["producer"] = 5; }, "producer: must be a string"},
      {"producer empty", [](json& d) { d["producer"] = ""; }, "producer: must not be empty"},
      {"producer long", [](json& d) { d["producer"] = std::string(257, 'p'); },
       "producer: longer than 256 bytes"},
      {"producer control", [](json& d) { d["producer"] = "a\nb"; },
       "producer: must not contain control characters"},
      {"topic bad", [](json& d) { d["topic"] = "orders/v1"; },
       "topic: must be 1-249 characters of [A-Za-z0-9._-]"},
      {"topic empty", [](json& d) { d["topic"] = ""; },
       "topic: must be 1-249 characters of [A-Za-z0-9._-]"},
      {"partitions zero", [](json& d) { d["partitions"] = 0; },
       "partitions: must be in [1, 100000], got 0"},
      {"partitions negative", [](json& d) { d["partitions"] = -4; },
       "partitions: must be a non-negative integer"},
      {"partitions big", [](json& d) { d["partitions"] = 100001; },
       "partitions: must be at most 100000"},
      {"partitions float", [](json& d) { d["partitions"] = 4.0; },
       "partitions: must be a non-negative integer"},
      {"hash unknown", [](json& d) { d["hash"] = "md5"; },
       "hash: unknown hash family 'md5' (murmur2, crc32 or fnv1a)"},
      {"separator digit", [](json& d) { d["separator"] = "#1"; },
       "separator: must be 1-8 bytes with no decimal digit"},
      {"separator empty", [](json& d) { d["separator"] = ""; },
       "separator: must be 1-8 bytes with no decimal digit"},
      {"window zero", [](json& d) { d["window_ms"] = 0; }, "window_ms: must be >= 1"},
      {"window huge", [](json& d) { d["window_ms"] = 4294967296ull; },
       "window_ms: must be at most 4294967295"},
      {"sample rate zero", [](json& d) { d["sample_rate"] = 0; },
       "sample_rate: must be in [1e-06, 1]"},
      {"sample rate above one", [](json& d) { d["sample_rate"] = 1.5; },
       "sample_rate: must be in [1e-06, 1]"},
      // Issue #17: a subnormal rate made an infinite 1/sample_rate (the coordinator aborted),
      // 1e-300 shares of 9e9 (persisted, and the restart refused its own data dir).
      {"sample rate subnormal", [](json& d) { d["sample_rate"] = 5e-324; },
       "sample_rate: must be in [1e-06, 1]"},
      {"sample rate tiny", [](json& d) { d["sample_rate"] = 1e-300; },
       "sample_rate: must be in [1e-06, 1]"},
      {"sample rate below the minimum", [](json& d) { d["sample_rate"] = 9.99e-7; },
       "sample_rate: must be in [1e-06, 1]"},
      {"sample rate string", [](json& d) { d["sample_rate"] = "0.5"; },
       "sample_rate: must be a number"},
      {"total negative", [](json& d) { d["total"] = -1; }, "total: must be a non-negative integer"},
      {"counts size", [](json& d) { d["partition_counts"].erase(0); },
       "partition_counts: has 3 entries, must have one per partition (4)"},
      {"counts type",
       [](json& d) {
         d["partition_counts"] = {{"0", 1}};
       },
       "partition_counts: must be an array"},
      {"counts element", [](json& d) { d["partition_counts"][2] = 0.5; },
       "partition_counts[2]: must be a non-negative integer"},
      {"counts overflow",
       [](json& d) {
         d["partition_counts"][0] = std::numeric_limits<uint64_t>::max();
         d["partition_counts"][1] = 1;
       },
       "partition_counts: sum exceeds total (4000)"},
      // Counts consistent with totals (API.md), issue #17 item 9.
      {"counts above total", [](json& d) { d["partition_counts"][2] = 1; },
       "partition_counts: sum exceeds total (4000)"},
      {"sketch total above total", [](json& d) { d["sketch"]["total"] = 4001; },
       "sketch.total: exceeds total (4000)"},
      {"seq negative", [](json& d) { d["seq"] = -2; }, "seq: must be a non-negative integer"},
      {"sent_at negative", [](json& d) { d["sent_at_ms"] = -2; },
       "sent_at_ms: must be a non-negative integer"},
      {"sent_at too big", [](json& d) { d["sent_at_ms"] = std::numeric_limits<uint64_t>::max(); },
       "sent_at_ms: must be at most 9223372036854775807"},
      {"sketch missing", [](json& d) { d.erase("sketch"); }, "sketch: is required"},
      {"sketch type", [](json& d) { d["sketch"] = json::array(); }, "sketch: must be an object"},
      {"capacity missing", [](json& d) { d["sketch"].erase("capacity"); },
       "sketch.capacity: is required"},
      {"capacity zero", [](json& d) { d["sketch"]["capacity"] = 0; },
       "sketch.capacity: must be in [1, 1048576]"},
      {"capacity huge", [](json& d) { d["sketch"]["capacity"] = 1u << 21; },
       "sketch.capacity: must be at most 1048576"},
      {"min missing", [](json& d) { d["sketch"].erase("min"); }, "sketch.min: is required"},
      {"min wrong when full", [](json& d) { d["sketch"]["min"] = 89; },
       "sketch.min: must equal the smallest item count (90) when the sketch is full"},
      {"min nonzero when not full", [](json& d) { d["sketch"]["capacity"] = 5; },
       "sketch.min: must be 0 while the sketch holds fewer items than its capacity"},
      {"items over capacity", [](json& d) { d["sketch"]["capacity"] = 3; },
       "sketch.items: has more items (4) than sketch.capacity (3)"},
      {"items type", [](json& d) { d["sketch"]["items"] = "none"; },
       "sketch.items: must be an array"},
      {"item type", [](json& d) { d["sketch"]["items"][3] = 7; },
       "sketch.items[3]: must be an object"},
      {"item count negative", [](json& d) { d["sketch"]["items"][3]["count"] = -90; },
       "sketch.items[3].count: must be a non-negative integer"},
      {"item count float", [](json& d) { d["sketch"]["items"][3]["count"] = 90.5; },
       "sketch.items[3].count: must be a non-negative integer"},
      {"item count beyond uint64", [](json& d) { d["sketch"]["items"][3]["count"] = 1e30; },
       "sketch.items[3].count: must be a non-negative integer"},
      {"item count zero",
       [](json& d) {
         d["sketch"]["items"][3]["count"] = 0;
         d["sketch"]["items"][3]["error"] = 0;
         d["sketch"]["min"] = 0;
       },
       "sketch.items[3].count: must be >= 1"},
      {"item count missing", [](json& d) { d["sketch"]["items"][0].erase("count"); },
       "sketch.items[0].count: is required"},
      {"item error missing", [](json& d) { d["sketch"]["items"][0].erase("error"); },
       "sketch.items[0].error: is required"},
      {"item error above count", [](json& d) { d["sketch"]["items"][0]["error"] = 601; },
       "sketch.items[0].error: must not exceed count"},
      {"item count above sketch total", [](json& d) { d["sketch"]["total"] = 500; },
       "sketch.items[0].count: exceeds sketch.total"},
      {"item both keys", [](json& d) { d["sketch"]["items"][0]["key_b64"] = "AA=="; },
       "sketch.items[0]: has both key and key_b64; give one"},
      {"item no key", [](json& d) { d["sketch"]["items"][0].erase("key"); },
       "sketch.items[0]: needs key or key_b64"},
      {"item key type", [](json& d) { d["sketch"]["items"][0]["key"] = 12; },
       "sketch.items[0].key: must be a string"},
      {"item bad base64", [](json& d) { d["sketch"]["items"][2]["key_b64"] = "wyg"; },
       "sketch.items[2].key_b64: invalid base64 (standard alphabet, padded, no whitespace)"},
      {"item key too long",
       [](json& d) { d["sketch"]["items"][0]["key"] = std::string(4097, 'k'); },
       "sketch.items[0].key: key longer than 4096 bytes"},
      {"item b64 key too long",
       [](json& d) { d["sketch"]["items"][2]["key_b64"] = std::string(5464, 'A'); },
       "sketch.items[2].key_b64: key longer than 4096 bytes"},
      {"duplicate key", [](json& d) { d["sketch"]["items"][3]["key"] = "tenant-1"; },
       "sketch.items[3].key: duplicate of sketch.items[0]"},
      {"duplicate key across encodings",
       [](json& d) {
         d["sketch"]["items"][3].erase("key");
         d["sketch"]["items"][3]["key_b64"] = "dGVuYW50LTE=";  // "tenant-1"
       },
       "sketch.items[3].key: duplicate of sketch.items[0]"},
  };
  for (const Rule& rule : rules) {
    SCOPED_TRACE(rule.name);
    json doc = sample_json();
    rule.mutate(doc);
    expect_rejected(doc, rule.message);
  }
}

TEST(Report, RejectsMalformedJsonGracefully) {
  auto message = [](std::string_view text) {
    try {
      parse_report_json(text);
    } catch (const DecodeError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("[1, 2]"), "report: must be a JSON object");
  EXPECT_EQ(message("\"report\""), "report: must be a JSON object");
  EXPECT_EQ(message("").rfind("report: invalid JSON: ", 0), 0u);
  EXPECT_EQ(message("{\"producer\": }").rfind("report: invalid JSON: parse error at line 1", 0),
            0u);
  // Deep nesting is cut off at a fixed depth instead of eating stack or memory.
  std::string deep(200000, '[');
  EXPECT_EQ(message(deep), "report: JSON nested deeper than 16 levels");
  std::string deep_in_field = "{\"producer\": " + std::string(1000, '[') + "}";
  EXPECT_EQ(message(deep_in_field), "report: JSON nested deeper than 16 levels");
  // A number too large for a double is rejected, not turned into infinity or a clamp.
  std::string inf = sample_json().dump();
  auto at = inf.find("\"sample_rate\":0.25");
  ASSERT_NE(at, std::string::npos);
  inf.replace(at, 18, "\"sample_rate\":1e400");
  EXPECT_EQ(message(inf), "report: invalid JSON: number overflow parsing '1e400'");
  EXPECT_EQ(message(std::string_view("{\"producer\":\"\xff\"}")).rfind("report: invalid JSON", 0),
            0u);
}

TEST(Report, LimitsAreConfigurable) {
  ReportLimits tight;
  tight.max_items = 3;
  EXPECT_THROW(parse_report_json(report_to_json(sample_report()), tight), DecodeError);
  tight = {};
  tight.max_key_bytes = 200;  // the 256-byte key no longer fits
  try {
    decode_report_binary(encode_report_binary(sample_report()), tight);
    ADD_FAILURE();
  } catch (const DecodeError& e) {
    EXPECT_EQ(std::string(e.what()),
              "sketch.items[1].key: length 256 exceeds the limit of 200 bytes");
  }
}

// Issue #17 item 13: the item count is checked while the items are read, so a report over
// max_items is refused (LimitError, HTTP 413) at its first extra item: whatever follows it is
// never parsed, built or validated.
TEST(Report, TooManyItemsIsRefusedBeforeTheRestIsParsed) {
  ReportLimits tight;
  tight.max_items = 3;
  const std::string text = report_to_json(sample_report());  // 4 items
  EXPECT_THROW(parse_report_json(text, tight), LimitError);
  // Everything after the 4th item's opening brace is garbage: still a LimitError, not a
  // syntax error, because parsing stops at that brace.
  const json doc = json::parse(text);
  const size_t at = text.rfind("{\"key");  // the 4th (last) item
  ASSERT_NE(at, std::string::npos);
  ASSERT_GT(at, text.find("\"items\""));
  const std::string cut = text.substr(0, at + 1) + "!! not json at all";
  try {
    parse_report_json(cut, tight);
    ADD_FAILURE() << "accepted";
  } catch (const LimitError& e) {
    EXPECT_EQ(std::string(e.what()),
              "sketch.items: more than 3 elements, at most max_items=3 allowed");
  }
  // Elements that are not objects count too; arrays named "items" elsewhere do not.
  json bad = doc;
  bad["sketch"]["items"] = json::array({1, 2, 3, 4});
  EXPECT_THROW(parse_report_json(bad.dump(), tight), LimitError);
  json other = json::parse(report_to_json(sample_report()));
  other["sketch"]["items"].erase(3);
  other["sketch"]["capacity"] = 3;
  other["sketch"]["min"] = 110;
  other["sketch"]["total"] = 910;
  other["items"] = json::array({1, 2, 3, 4, 5});
  other["extra"] = {{"items", json::array({1, 2, 3, 4, 5})}};
  EXPECT_EQ(parse_report_json(other.dump(), tight).items.size(), 3u);
  // Exactly at the limit is fine; the binary form refuses from its item count.
  tight.max_items = 4;
  EXPECT_EQ(parse_report_json(text, tight).items.size(), 4u);
  tight.max_items = 3;
  EXPECT_THROW(decode_report_binary(encode_report_binary(sample_report()), tight), LimitError);
}

// Issue #17 item 9: an older producer without sketch.total gets the items' count sum, capped
// at the report's total (merged summaries over-count), never a refusal for it.
TEST(Report, OmittedSketchTotalIsCappedAtTotal) {
  json doc = sample_json();
  doc["sketch"].erase("total");
  doc["total"] = 950;  // the items' counts sum to 1000
  doc["partition_counts"] = {950, 0, 0, 0};
  EXPECT_EQ(parse_report_json(doc.dump()).sketch_total, 950u);
}

TEST(Report, ValidTopicNames) {
  EXPECT_TRUE(valid_topic_name("orders.v1_EU-2"));
  EXPECT_TRUE(valid_topic_name(std::string(249, 't')));
  EXPECT_FALSE(valid_topic_name(std::string(250, 't')));
  EXPECT_FALSE(valid_topic_name(""));
  EXPECT_FALSE(valid_topic_name("a b"));
  EXPECT_FALSE(valid_topic_name("caf\xc3\xa9"));
}

TEST(Report, SketchOfAReport) {
  Report r = sample_report();
  SpaceSaving s = report_sketch(r);
  EXPECT_EQ(s.capacity(), 4u);
  EXPECT_EQ(s.size(), 4u);
  EXPECT_EQ(s.total(), 1000u);
  EXPECT_EQ(s.min_count(), 90u);
  auto item = s.find(all_bytes());
  ASSERT_TRUE(item.has_value());
  EXPECT_EQ(item->count, 200u);
  EXPECT_EQ(item->error, 10u);
  r.items[0].error = 700;
  EXPECT_THROW(report_sketch(r), DecodeError);
}

// Random corruption of both forms: every input either decodes to a report that validates or
// is rejected with DecodeError; nothing else escapes and nothing crashes (run under ASan).
TEST(Report, CorruptedInputIsRejectedCleanly) {
  std::mt19937_64 rng(7);
  const std::string bin = encode_report_binary(sample_report());
  const std::string text = report_to_json(sample_report());
  size_t accepted = 0;
  for (int round = 0; round < 1000; ++round) {
    std::string b = round % 2 == 0 ? bin : text;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      size_t at = rng() % b.size();
      switch (rng() % 3) {
        case 0:
          b[at] = static_cast<char>(rng() & 0xFF);
          break;
        case 1:
          b.erase(at, 1 + rng() % 8);
          break;
        default:
          b.insert(at, 1, static_cast<char>(rng() & 0xFF));
          break;
      }
      if (b.empty()) b = "x";
    }
    std::optional<Report> r;
    try {
      r = round % 2 == 0 ? decode_report_binary(b) : parse_report_json(b);
    } catch (const DecodeError&) {
      continue;
    }
    // Outside the try: a report the decoder accepted but that breaks an invariant must fail
    // the test, not count as a rejected input.
    EXPECT_NO_THROW(validate_report(*r)) << "accepted input of round " << round;
    ++accepted;
  }
  // Some mutations (inside a key or a count) leave a valid report; most do not.
  EXPECT_LT(accepted, 1000u);
}

}  // namespace
}  // namespace hotkey
