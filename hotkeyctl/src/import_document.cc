#include "import_document.h"

#include "command.h"
#include "hotkey/key_codec.h"
#include "hotkey/report.h"

namespace hotkeyctl {
namespace {

using nlohmann::json;

std::string string_member(const json& j, const char* name) {
  if (!j.is_object()) return "";
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& array_member(const json& j, const char* name) {
  static const json empty = json::array();
  if (!j.is_object()) return empty;
  auto it = j.find(name);
  return it != j.end() && it->is_array() ? *it : empty;
}

// "key_b64" wins over "key"; "" when neither is usable.
std::string key_member(const json& j) {
  if (!j.is_object()) return "";
  if (auto it = j.find("key_b64"); it != j.end() && it->is_string()) {
    return hotkey::base64_decode(it->get<std::string>()).value_or("");
  }
  return string_member(j, "key");
}

}  // namespace

std::vector<ImportOp> parse_import_document(std::string_view text, const std::string& source) {
  const json doc = json::parse(text, nullptr, false);
  auto bad = [&](const std::string& why) {
    return UsageError("'" + source + "' is not a hotkeyctl export: " + why);
  };
  if (doc.is_discarded() || !doc.is_object()) throw bad("not a JSON object");
  if (string_member(doc, "format") != kExportFormat) {
    throw bad(std::string("\"format\" must be \"") + kExportFormat + "\"");
  }
  std::vector<ImportOp> ops;
  const json& topics = array_member(doc, "topics");
  for (size_t i = 0; i < topics.size(); ++i) {
    const json& tp = topics[i];
    const std::string where = "topics[" + std::to_string(i) + "]";
    const std::string topic = string_member(tp, "topic");
    if (!hotkey::valid_topic_name(topic)) throw bad(where + ".topic is not a valid topic name");
    for (const char* kind : {"denies", "pins"}) {
      const bool pin = std::string_view(kind) == "pins";
      const json& items = array_member(tp, kind);
      for (size_t j = 0; j < items.size(); ++j) {
        const json& it = items[j];
        const std::string at = where + "." + kind + "[" + std::to_string(j) + "]";
        if (!it.is_object()) throw bad(at + " is not an object");
        const std::string key = key_member(it);
        if (key.empty()) throw bad(at + " has no key, or an empty or invalid one");
        const hotkey::EncodedKey ek = hotkey::encode_key(key);
        std::string reason = string_member(it, "reason");
        if (reason.empty()) reason = "imported";
        json body{{std::string(ek.field), ek.value}, {"reason", reason}};
        if (pin && it.contains("salts")) {
          if (!it["salts"].is_number_unsigned()) throw bad(at + ".salts must be a whole number");
          body["salts"] = it["salts"];
        }
        if (pin && it.contains("ttl_s")) {
          if (!it["ttl_s"].is_number_unsigned() || it["ttl_s"].get<uint64_t>() == 0) {
            throw bad(at + ".ttl_s must be a positive whole number");
          }
          body["ttl_s"] = it["ttl_s"];
        }
        ops.push_back({topic, pin ? "pin" : "deny", hotkey::printable_key(key), std::move(body)});
      }
    }
  }
  return ops;
}

}  // namespace hotkeyctl
