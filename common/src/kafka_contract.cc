#include "hotkey/kafka_contract.h"

#include <limits>

#include <nlohmann/json.hpp>

namespace hotkey {

std::string encode_owner_heartbeat(const OwnerHeartbeat& beat) {
  return nlohmann::json{{"v", 1},
                        {"owner", beat.owner},
                        {"member_id", beat.member_id},
                        {"partition", beat.partition},
                        {"epoch", beat.epoch},
                        {"at_ms", beat.at_ms},
                        {"interval_ms", beat.interval_ms}}
      .dump();
}

std::optional<OwnerHeartbeat> parse_owner_heartbeat(std::string_view value) {
  const nlohmann::json j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  const auto unsigned_at = [&](const char* name, uint64_t max) -> std::optional<uint64_t> {
    auto it = j.find(name);
    if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
    const uint64_t v = it->get<uint64_t>();
    return v <= max ? std::optional<uint64_t>(v) : std::nullopt;
  };
  const auto text_at = [&](const char* name) -> std::optional<std::string> {
    auto it = j.find(name);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  const auto v = unsigned_at("v", 1);
  const auto owner = text_at("owner");
  const auto partition = unsigned_at("partition", std::numeric_limits<int32_t>::max());
  const auto epoch = unsigned_at("epoch", std::numeric_limits<uint32_t>::max());
  const auto at_ms = unsigned_at("at_ms", std::numeric_limits<int64_t>::max());
  const auto interval = unsigned_at("interval_ms", std::numeric_limits<uint32_t>::max());
  if (v != 1u || !owner || owner->empty() || !partition || !epoch || !at_ms || !interval) {
    return std::nullopt;
  }
  OwnerHeartbeat beat;
  beat.owner = *owner;
  beat.member_id = text_at("member_id").value_or("");
  beat.partition = static_cast<int32_t>(*partition);
  beat.epoch = *epoch;
  beat.at_ms = static_cast<int64_t>(*at_ms);
  beat.interval_ms = static_cast<uint32_t>(*interval);
  return beat;
}

}  // namespace hotkey
