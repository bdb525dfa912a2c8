#include "hotkey/report_batch.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "hotkey/report.h"

namespace hotkey {
namespace {

constexpr std::string_view kMagic = "HKB";
constexpr uint8_t kVersion = 1;

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint32_t get_u32(std::string_view in, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(in[at + static_cast<size_t>(i)]))
         << (8 * i);
  }
  return v;
}

void check_count(size_t n) {
  if (n > kMaxReportsPerBatch) {
    throw std::invalid_argument("a report batch holds at most " +
                                std::to_string(kMaxReportsPerBatch) + " reports");
  }
}

}  // namespace

std::string encode_report_batch_binary(std::span<const std::string_view> reports) {
  check_count(reports.size());
  size_t size = kMagic.size() + 1 + 4;
  for (auto r : reports) size += 4 + r.size();
  std::string out;
  out.reserve(size);
  out.append(kMagic);
  out.push_back(static_cast<char>(kVersion));
  put_u32(out, static_cast<uint32_t>(reports.size()));
  for (auto r : reports) {
    if (r.size() > std::numeric_limits<uint32_t>::max()) {
      throw std::invalid_argument("a report in a batch is larger than 4 GiB");
    }
    put_u32(out, static_cast<uint32_t>(r.size()));
    out.append(r);
  }
  return out;
}

std::vector<std::string_view> split_report_batch_binary(std::string_view body, size_t max_reports) {
  if (body.size() < kMagic.size() + 1 + 4) throw DecodeError("report batch truncated in header");
  if (body.substr(0, kMagic.size()) != kMagic) {
    throw DecodeError("report batch: bad magic (expected \"HKB\")");
  }
  const auto version = static_cast<uint8_t>(body[kMagic.size()]);
  if (version != kVersion) {
    throw DecodeError("report batch: unsupported format version " + std::to_string(version) +
                      " (this build reads version " + std::to_string(kVersion) + ")");
  }
  size_t at = kMagic.size() + 1;
  const uint32_t count = get_u32(body, at);
  at += 4;
  if (count > max_reports) {
    throw DecodeError("report batch holds " + std::to_string(count) + " reports, at most " +
                      std::to_string(max_reports) + " allowed");
  }
  std::vector<std::string_view> out;
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (body.size() - at < 4) {
      throw DecodeError("report batch truncated at report " + std::to_string(i));
    }
    const uint32_t len = get_u32(body, at);
    at += 4;
    if (body.size() - at < len) {
      throw DecodeError("report batch truncated in report " + std::to_string(i));
    }
    out.push_back(body.substr(at, len));
    at += len;
  }
  if (at != body.size()) throw DecodeError("report batch: trailing bytes after the last report");
  return out;
}

std::string encode_report_batch_json(std::span<const std::string_view> reports) {
  check_count(reports.size());
  std::string out = "{\"reports\":[";
  for (size_t i = 0; i < reports.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(reports[i]);
  }
  out.append("]}");
  return out;
}

std::vector<std::string> split_report_batch_json(std::string_view body, size_t max_reports) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    throw DecodeError(std::string("report batch is not valid JSON: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("reports") || !doc["reports"].is_array()) {
    throw DecodeError("report batch must be an object with a \"reports\" array");
  }
  const auto& reports = doc["reports"];
  if (reports.size() > max_reports) {
    throw DecodeError("report batch holds " + std::to_string(reports.size()) +
                      " reports, at most " + std::to_string(max_reports) + " allowed");
  }
  std::vector<std::string> out;
  out.reserve(reports.size());
  for (const auto& r : reports) out.push_back(r.dump());
  return out;
}

std::vector<int> parse_report_batch_statuses(std::string_view answer) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(answer);
  } catch (const nlohmann::json::exception& e) {
    throw DecodeError(std::string("report batch answer is not valid JSON: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("results") || !doc["results"].is_array()) {
    throw DecodeError("report batch answer must be an object with a \"results\" array");
  }
  std::vector<int> out;
  for (const auto& r : doc["results"]) {
    if (!r.is_object() || !r.contains("status") || !r["status"].is_number_integer()) {
      throw DecodeError("report batch answer: every result needs an integer \"status\"");
    }
    out.push_back(r["status"].get<int>());
  }
  return out;
}

}  // namespace hotkey
